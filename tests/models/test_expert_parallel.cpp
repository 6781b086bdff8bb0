// Mixture-of-experts models and expert parallelism (models/expert_parallel.hpp, compiled by
// models/program/pipeline.hpp) against hand-derived figures: the built-in MoE models' parameters from their papers'
// shapes, their active parameters (6 N_active per token) from top-k routing, the all-to-all's bytes from b x s x k x
// h per rank, the expert-data group's gradient sync, and the busiest rank's load under uneven routing.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include <string>

#include "models/expert_parallel.hpp"
#include "models/workload.hpp"
#include "scenarios/run.hpp"
#include "tests/support/scenario_harness.hpp"
#include "topologies/sharded_collectives.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

// A small Mixtral-shaped model: `layers` MoE blocks of 8 experts, top 2, on `workers` GPUs of one node, links of 1 ns
// and no transport overheads (the collectives cost their bytes and nothing else).
json job(std::uint32_t workers, std::uint32_t expert, double imbalance = 1.0, int layers = 2) {
    json j = {{"workers", workers},
              {"model",
               {{"transformer",
                 {{"layers", layers},
                  {"hidden", 1024},
                  {"heads", 16},
                  {"kv_heads", 8},
                  {"seq_len", 1024},
                  {"vocab", 32000},
                  {"experts", 8},
                  {"experts_per_token", 2},
                  {"expert_ffn_hidden", 2048}}},
                {"dtype", "bf16"}}},
              {"batch_size", 1},
              {"gradient_accumulation", 2},
              {"iterations", 1},
              {"device", {{"name", "H100"}, {"precision", "bf16"}}},
              {"network", testing::idle_node_network()}};
    j["parallelism"] = {{"expert", expert}};
    if (imbalance > 1.0) j["parallelism"]["expert_imbalance"] = imbalance;
    return j;
}

double d(std::int64_t x) {
    return static_cast<double>(x);
}

}  // namespace

TEST_CASE("MoE models: parameters follow the papers' shapes, active parameters top-k routing") {
    // Mixtral 8x7B (arXiv 2401.04088, Table 1): per block q, o of 4096^2, k, v of 4096 x 1024, two norms, the router
    // (8 x 4096) and 8 SwiGLU experts of 3 x 4096 x 14336; embedding and head of 32000 x 4096, the final norm.
    const auto mixtral = models::builtin_workload("mixtral_8x7b");
    REQUIRE(mixtral.has_value());
    const double h = 4096, f = 14336, kv = 1024, V = 32000, L = 32, s = 4096;
    const double attention = 2 * h * h + 2 * h * kv, experts = 8 * 3 * h * f;
    CHECK(d(mixtral->params()) == 2 * V * h + L * (attention + 2 * h + 8 * h + experts) + h);
    CHECK(d(mixtral->params()) == 46'702'792'704.0);  // mistralai/Mixtral-8x7B-v0.1's safetensors: 46.7B
    // 6 N_active + 12 L d s (PaLM's count), N_active the matmul weights a token runs: attention, the router, 2 experts
    // and the head (12.9B with the embedding, the paper's "13B active parameters").
    const double active = L * (attention + 8 * h + 2 * 3 * h * f) + V * h;
    CHECK(mixtral->model_flops_per_token == ddlsim::testing::approx(6 * active + 12 * L * h * s).epsilon(1e-12));
    CHECK(active + V * h == ddlsim::testing::approx(12.9e9).epsilon(0.01));

    // DeepSeek-V3 (arXiv 2412.19437, §4.2): 671B parameters, 37B activated per token (its embedding included).
    const auto v3 = models::builtin_workload("deepseek_v3");
    REQUIRE(v3.has_value());
    CHECK(d(v3->params()) == ddlsim::testing::approx(671e9).epsilon(0.001));
    const double v3_attention = 12.0 * 61 * (128 * (128 + 64 + 128) / 2.0) * 4096;  // 12 L a s, a = (192 + 128) h / 2
    const double v3_active = (v3->model_flops_per_token - v3_attention) / 6.0 + 129280.0 * 7168.0;
    CHECK(v3_active == ddlsim::testing::approx(37e9).epsilon(0.02));
    // 58 MoE blocks of 256 experts, the first 3 dense: the routed experts hold 58 x 256 x 3 x 7168 x 2048 parameters.
    CHECK(models::expert_params(*v3) == 58.0 * 256 * 3 * 7168 * 2048);

    // Qwen3-30B-A3B (arXiv 2505.09388, Table 2; the model card: 30.5B total, 3.3B activated).
    const auto qwen = models::builtin_workload("qwen3_30b_a3b");
    REQUIRE(qwen.has_value());
    CHECK(d(qwen->params()) == ddlsim::testing::approx(30.5e9).epsilon(0.002));
    const double qwen_attention = 12.0 * 48 * (32 * 128) * 4096;
    CHECK((qwen->model_flops_per_token - qwen_attention) / 6.0 + 151936.0 * 2048 ==
          ddlsim::testing::approx(3.3e9).epsilon(0.02));
}

TEST_CASE("expert parallelism: the busiest rank's load from the busiest expert") {
    models::Workload w;
    w.experts = 8;
    w.experts_per_token = 2;
    // One expert per rank: the rank is the expert.
    CHECK(models::expert_rank_load(w, 8, 2.0) == 2.0);
    // Four experts per rank, one of them at 2 x the mean: (2 + 3) / 4.
    CHECK(models::expert_rank_load(w, 2, 2.0) == 1.25);
    CHECK(models::expert_rank_load(w, 8, 1.0) == 1.0);
    // Top 1 of 8 on 2 ranks, every token to one expert (imbalance 8): (8 + 3) / 4 would exceed the 2 ranks' tokens.
    w.experts_per_token = 1;
    CHECK(models::expert_rank_load(w, 2, 8.0) == 2.0);
    // A capacity factor drops what exceeds it: imbalance 3 at capacity 1.5 is 1.5.
    w.capacity_factor = 1.5;
    CHECK(models::expert_rank_load(w, 8, 3.0) == 1.5);
}

TEST_CASE("expert parallelism: an uneven all-to-all moves the same bytes, the hot rank more of them") {
    // 4 ranks, 4 bytes each, the first receiving 2 x its share: 3 senders x 1 x 2 into it, 9 other pairs x 2/3.
    const std::vector<std::vector<std::uint32_t>> group{{0, 1, 2, 3}};
    const auto everywhere = [](std::uint32_t a, std::uint32_t b) { return a != b; };
    const auto into_first = [](std::uint32_t, std::uint32_t b) { return b == 0; };
    const auto from_first = [](std::uint32_t a, std::uint32_t) { return a == 0; };
    const auto even = topo::make_all_to_all(group, 4, sim::Bytes{4.0}, 1.0, true);
    const auto dispatch = topo::make_all_to_all(group, 4, sim::Bytes{4.0}, 2.0, true);
    const auto combine = topo::make_all_to_all(group, 4, sim::Bytes{4.0}, 2.0, false);
    CHECK(even->wire_bytes(everywhere).value() == doctest::Approx(12.0));
    CHECK(dispatch->wire_bytes(everywhere).value() == doctest::Approx(12.0));
    CHECK(even->wire_bytes(into_first).value() == doctest::Approx(3.0));
    CHECK(dispatch->wire_bytes(into_first).value() == doctest::Approx(6.0));
    CHECK(combine->wire_bytes(from_first).value() == doctest::Approx(6.0));
    CHECK(combine->wire_bytes(everywhere).value() == doctest::Approx(12.0));
}

TEST_CASE("expert parallelism: 4 all-to-alls of b s k h per MoE block and micro-batch") {
    // Each rank dispatches its b s k h x 2 bytes (k = 2 copies of 1024 tokens of 1024 bf16 values) and keeps 1/e:
    // e ranks put (e - 1) B on the wire per all-to-all; forward dispatch and combine, backward their gradients.
    const double B = 1024.0 * 2 * 1024 * 2, m = 2;
    for (const std::uint32_t e : {2U, 4U}) {
        CAPTURE(e);
        const models::JobResult two = testing::run_first_job(job(e, e, 1.0, 2));
        const models::JobResult three = testing::run_first_job(job(e, e, 1.0, 3));
        REQUIRE(two.bytes_by_dimension.has_value());
        CHECK(two.bytes_by_dimension->expert == ddlsim::testing::approx(m * 2 * 4 * (e - 1) * B).epsilon(1e-12));
        CHECK(three.bytes_by_dimension->expert - two.bytes_by_dimension->expert ==
              ddlsim::testing::approx(m * 4 * (e - 1) * B).epsilon(1e-12));
        // Imbalance moves no more bytes.
        const models::JobResult skewed = testing::run_first_job(job(e, e, 2.0, 2));
        CHECK(skewed.bytes_by_dimension->expert ==
              ddlsim::testing::approx(two.bytes_by_dimension->expert).epsilon(1e-9));
        CHECK(two.bytes_on_wire_per_iteration ==
              ddlsim::testing::approx(two.bytes_by_dimension->expert + two.bytes_by_dimension->data).epsilon(1e-12));
    }
}

TEST_CASE("expert parallelism: the experts' gradients sync over the ranks holding the same experts") {
    // 4 data ranks. With e = 4 every rank holds its own experts: only the dense weights are all-reduced (a ring of 4:
    // 2 x 3 / 4 of their bytes from each rank). With e = 2 the experts' halves also ring over pairs (each rank
    // sends its half once).
    const auto w = models::transformer({.layers = 2,
                                        .hidden = 1024,
                                        .heads = 16,
                                        .kv_heads = 8,
                                        .seq_len = 1024,
                                        .vocab = 32000,
                                        .experts = 8,
                                        .experts_per_token = 2,
                                        .expert_ffn_hidden = 2048});
    const double experts = models::expert_params(w), dense = d(w.params()) - experts, bytes = 2;
    const models::JobResult four = testing::run_first_job(job(4, 4));
    const models::JobResult two = testing::run_first_job(job(4, 2));
    CHECK(four.bytes_by_dimension->data == ddlsim::testing::approx(4 * 2 * 3.0 / 4 * dense * bytes).epsilon(1e-12));
    CHECK(two.bytes_by_dimension->data - four.bytes_by_dimension->data ==
          ddlsim::testing::approx(4 * experts / 2 * bytes).epsilon(1e-12));
}

TEST_CASE("expert parallelism: uneven routing is slower, a capacity factor bounds it") {
    const models::JobResult even = testing::run_first_job(job(8, 8));
    const models::JobResult skewed = testing::run_first_job(job(8, 8, 2.0));
    // One expert per rank at 2 x the mean: the experts' layers run twice as long on it, and everyone waits: the step
    // grows by at least that compute.
    CHECK(skewed.compute_time_s > even.compute_time_s);
    CHECK(skewed.iteration_time_s - even.iteration_time_s >= skewed.compute_time_s - even.compute_time_s);
    CHECK(skewed.exposed_by_dimension->expert > even.exposed_by_dimension->expert);
    // Capacity 1.5 drops what the busiest expert gets beyond 1.5 x the mean: as imbalance 1.5.
    json capped = job(8, 8, 2.0);
    capped["model"]["transformer"]["capacity_factor"] = 1.5;
    CHECK(testing::run_first_job(capped).iteration_time_s ==
          ddlsim::testing::approx(testing::run_first_job(job(8, 8, 1.5)).iteration_time_s).epsilon(1e-12));
}

TEST_CASE("expert parallelism: refused where it does not divide or has nothing to split") {
    CHECK(testing::refused_at(job(8, 8)) == "accepted");
    // 8 experts over 16 ranks; 8 data ranks in groups of 3.
    CHECK(testing::refused_at(job(16, 16)) == "$.parallelism.expert");
    CHECK(testing::refused_at(job(8, 3)) == "$.parallelism.expert");
    // The busiest of 8 experts at top 2 gets at most every token: 4 x the mean.
    CHECK(testing::refused_at(job(8, 8, 4.5)) == "$.parallelism.expert_imbalance");
    // Imbalance without expert ranks would be silently nothing.
    json j = job(8, 1);
    j["parallelism"]["expert_imbalance"] = 2.0;
    CHECK(testing::refused_at(j) == "$.parallelism.expert_imbalance");
    // A dense model has no experts to split; MoE keys on a dense model are refused at the key.
    j = job(8, 8);
    j["model"]["transformer"].erase("experts");
    CHECK(testing::refused_at(j) == "$.model.transformer.experts_per_token");
    j["model"]["transformer"].erase("experts_per_token");
    j["model"]["transformer"].erase("expert_ffn_hidden");
    CHECK(testing::refused_at(j) == "$.parallelism.expert");
    j = job(8, 8);
    j["model"]["transformer"]["experts_per_token"] = 9;
    CHECK(testing::refused_at(j) == "$.model.transformer.experts_per_token");
    j = job(8, 8);
    j["model"]["transformer"]["capacity_factor"] = 0.5;
    CHECK(testing::refused_at(j) == "$.model.transformer.capacity_factor");
    // Latent-attention keys without the latent; llama keys on GPT blocks.
    j = job(8, 8);
    j["model"]["transformer"]["v_head_dim"] = 64;
    CHECK(testing::refused_at(j) == "$.model.transformer.v_head_dim");
    j = job(8, 1);
    j["model"]["transformer"]["style"] = "gpt";
    j["model"]["transformer"].erase("kv_heads");
    CHECK(testing::refused_at(j) == "$.model.transformer.experts");
}
