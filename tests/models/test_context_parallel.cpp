// Context parallelism (models/context_parallel.hpp, compiled by models/program/pipeline.hpp) against hand-derived
// figures: each rank runs 1/c of every kernel with the weights whole; each attention layer passes the key/value
// blocks around the ring of c ranks (c - 1 blocks sent per rank forward, twice that backward: ring attention, Liu et
// al., arXiv 2310.01889); the weights' gradients are all-reduced over data x context ranks; what does not divide is
// refused at the key.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"
#include "tests/support/scenario_harness.hpp"

#include <nlohmann/json.hpp>

#include "models/context_parallel.hpp"
#include "models/workload.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

// A Llama-style model of `layers` blocks (hidden 1024, 16 heads, 8 key/value heads of 64: kv_dim 512) over 1,024
// tokens, each sequence split over `context` GPUs of one node (with `data` replicas), links of 1 ns.
json job(int layers, std::uint32_t context, std::uint32_t data = 1) {
    json j = testing::small_llama_job(layers, context * data);
    j["parallelism"] = {{"context", context}};
    return j;
}

}  // namespace

TEST_CASE("context parallelism: each rank runs 1/c of every kernel, the weights whole") {
    const auto w =
        models::transformer({.layers = 2, .hidden = 1024, .heads = 16, .kv_heads = 8, .seq_len = 1024, .vocab = 32000});
    const auto shard = models::context_shard(w, 4);
    CHECK(shard.tokens_per_sample == 256);
    CHECK(shard.params() == w.params());
    CHECK(shard.fwd_flops() == ddlsim::testing::approx(w.fwd_flops() / 4).epsilon(1e-12));
    CHECK(shard.model_flops_per_token == w.model_flops_per_token);
    // A rank's key/value block: its 256 tokens' keys and values, 2 x 512 bf16 values each.
    CHECK(models::context_block_bytes_per_sample(shard, 2.0) == 256.0 * 2 * 512 * 2);
}

TEST_CASE("context parallelism: each attention layer rings c - 1 blocks forward and twice that backward") {
    // c = 4 ranks, block B = 256 x 2 x 512 x 2 bytes: forward each rank sends c - 1 blocks, backward 2 (c - 1) (the
    // blocks and their gradients); m = 2 micro-batches, one attention layer per block.
    const double B = 256.0 * 2 * 512 * 2, m = 2, c = 4;
    const models::JobResult two = testing::run_first_job(job(2, 4));
    const models::JobResult three = testing::run_first_job(job(3, 4));
    REQUIRE(two.bytes_by_dimension.has_value());
    CHECK(two.bytes_by_dimension->context == ddlsim::testing::approx(m * 2 * 3 * (c - 1) * B * c).epsilon(1e-12));
    CHECK(three.bytes_by_dimension->context - two.bytes_by_dimension->context ==
          ddlsim::testing::approx(m * 3 * (c - 1) * B * c).epsilon(1e-12));
    // The weights are replicated over the context ranks: their gradients (bf16) ring-all-reduced over the 4, each
    // rank sending 2 x 3/4 of them.
    const auto w =
        models::transformer({.layers = 2, .hidden = 1024, .heads = 16, .kv_heads = 8, .seq_len = 1024, .vocab = 32000});
    CHECK(two.bytes_by_dimension->data ==
          ddlsim::testing::approx(c * 2 * 3.0 / 4 * static_cast<double>(w.params()) * 2).epsilon(1e-12));
    CHECK(two.bytes_on_wire_per_iteration ==
          ddlsim::testing::approx(two.bytes_by_dimension->context + two.bytes_by_dimension->data).epsilon(1e-12));
    // On NVLink the ring hides under the attention it feeds.
    REQUIRE(two.exposed_by_dimension.has_value());
    CHECK(two.exposed_by_dimension->context == doctest::Approx(0.0));
}

TEST_CASE("context parallelism: Ulysses all-to-alls queries, keys and values to heads and the output back") {
    // c = 4 ranks of 256 tokens each: before each attention a rank sends (c - 1) / c of its queries, keys and values
    // (256 x (1024 + 2 x 512) bf16 values) and after it (c - 1) / c of the output (256 x 1024); backward the same
    // bytes as gradients. m = 2 micro-batches, one attention layer per block, 4 ranks.
    const double m = 2, c = 4, in = 256.0 * (1024 + 2 * 512) * 2, out = 256.0 * 1024 * 2;
    json j = job(2, 4);
    j["parallelism"]["context_algorithm"] = "all_to_all";
    const models::JobResult two = testing::run_first_job(j);
    j["model"]["transformer"]["layers"] = 3;
    const models::JobResult three = testing::run_first_job(j);
    REQUIRE(two.bytes_by_dimension.has_value());
    CHECK(three.bytes_by_dimension->context - two.bytes_by_dimension->context ==
          ddlsim::testing::approx(m * 2 * (in + out) * (c - 1) / c * c).epsilon(1e-12));
    // The same compute as the ring (1/c of every kernel), the weights' gradients over the same ranks.
    const models::JobResult ring = testing::run_first_job(job(2, 4));
    CHECK(two.compute_time_s == ddlsim::testing::approx(ring.compute_time_s).epsilon(1e-9));
    CHECK(two.bytes_by_dimension->data == ring.bytes_by_dimension->data);
    // The compute stream waits for each all-to-all: on the idle node a rank's c - 1 transfers of in / c (out / c)
    // share its 450 GB/s link, behind 2 links of 1 ns; per block and micro-batch both forward and both backward.
    REQUIRE(two.exposed_by_dimension.has_value());
    CHECK(two.exposed_by_dimension->context ==
          ddlsim::testing::approx(m * 2 * 2 * ((c - 1) / c * (in + out) / 450e9 + 2 * 2e-9)).epsilon(1e-3));
    // The heads split over tensor x context: 16 heads and 8 key/value heads do not split over 16 ranks.
    j = job(2, 16);
    j["parallelism"]["context_algorithm"] = "all_to_all";
    CHECK(testing::refused_at(j) == "$.parallelism.context_algorithm");
    j = job(2, 1);
    j["parallelism"]["context_algorithm"] = "all_to_all";  // no context parallelism to choose for
    CHECK(testing::refused_at(j) == "$.parallelism.context_algorithm");
}

TEST_CASE("context parallelism: 1/c of the compute per rank, the same samples per step") {
    // Large enough for the GEMMs to outweigh the kernels' launches: 8 layers of hidden 4096 over 8,192 tokens.
    auto big = [](std::uint32_t c) {
        json j = job(8, c);
        j["model"]["transformer"]["hidden"] = 4096;
        j["model"]["transformer"]["heads"] = 32;
        j["model"]["transformer"]["seq_len"] = 8192;
        return j;
    };
    const models::JobResult one = testing::run_first_job(big(1));
    const models::JobResult four = testing::run_first_job(big(4));
    CHECK(four.forward_time_s < one.forward_time_s / 3);
    CHECK(four.forward_time_s > one.forward_time_s / 4.5);
    CHECK(four.throughput_samples_per_s > 3 * one.throughput_samples_per_s);
}

TEST_CASE("context parallelism: refused where it does not divide or has nothing to split") {
    CHECK(testing::refused_at(job(2, 4)) == "accepted");
    json j = job(2, 4);
    j["workers"] = 6;
    CHECK(testing::refused_at(j) == "$.parallelism.context");
    // 1,024 tokens do not split into 2 x 1024 chunks.
    j = job(2, 1024);
    CHECK(testing::refused_at(j) == "$.parallelism.context");
    j = job(2, 2);
    j["model"] = {{"layers", json::array({{{"name", "a"}, {"params", 1000}, {"fwd_time", "1ms"}}})}};
    CHECK(testing::refused_at(j) == "$.parallelism.context");
}
