// Tensor parallelism (models/tensor_parallel.hpp, compiled by models/program/pipeline.hpp): Megatron-LM's split
// against hand-derived figures. Each rank's share of the GEMMs and of the weights is 1/t; a block costs 2 all-reduces
// of the b x s x h activations forward and 2 backward (Shoeybi et al., arXiv 1909.08053, §3), the same bytes as
// reduce-scatters and all-gathers with sequence parallelism (Korthikanti et al., arXiv 2205.05198, §4.2.2); on an
// idle fabric each is the ring's closed form; the splits that do not divide are refused at the key.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include <string>

#include "models/tensor_parallel.hpp"
#include "models/workload.hpp"
#include "scenarios/run.hpp"
#include "tests/support/scenario_harness.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

models::TransformerConfig small(models::TransformerStyle style, int layers) {
    models::TransformerConfig c;
    c.style = style;
    c.layers = layers;
    c.hidden = 1024;
    c.heads = 16;
    c.kv_heads = style == models::TransformerStyle::llama ? 8 : 0;
    c.seq_len = 1024;
    c.vocab = 32000;
    return c;
}

// Sums over a workload's parts of one kind, per sample.
double flops_of(const models::Workload& w, models::PartKind kind) {
    double f = 0.0;
    for (const auto& l : w.layers)
        for (const auto& p : l.parts)
            if (p.kind == kind) f += p.flops;
    return f;
}

// A Llama-style model of `layers` blocks split over `tensor` GPUs of one node (and `pipeline` stages, `data`
// replicas), links of 1 ns and no transport overheads: the collectives cost their bytes and nothing else.
json job(int layers, std::uint32_t tensor, bool sp, const std::string& intra = "450GBps", std::uint32_t pipeline = 1,
         std::uint32_t data = 1, std::int64_t hidden = 1024) {
    json j = {{"workers", tensor * pipeline * data},
              {"model",
               {{"transformer",
                 {{"layers", layers},
                  {"hidden", hidden},
                  {"heads", 16},
                  {"kv_heads", 8},
                  {"seq_len", hidden},
                  {"vocab", 32000}}},
                {"dtype", "bf16"}}},
              {"batch_size", 1},
              {"gradient_accumulation", 2},
              {"iterations", 1},
              {"device", {{"name", "H100"}, {"precision", "bf16"}}},
              {"network", testing::idle_node_network(intra)}};
    j["parallelism"] = {{"tensor", tensor}, {"pipeline", pipeline}};
    if (sp) j["parallelism"]["sequence_parallel"] = true;
    return j;
}

}  // namespace

TEST_CASE("tensor parallelism: each rank holds 1/t of the GEMMs, the heads and the weight matrices") {
    for (const auto style : {models::TransformerStyle::llama, models::TransformerStyle::gpt}) {
        CAPTURE(static_cast<int>(style));
        const models::Workload w = models::transformer(small(style, 2));
        const models::Workload s = models::tensor_shard(w, 4, false);
        CHECK(flops_of(s, models::PartKind::matmul) ==
              ddlsim::testing::approx(flops_of(w, models::PartKind::matmul) / 4));
        CHECK(flops_of(s, models::PartKind::attention) ==
              ddlsim::testing::approx(flops_of(w, models::PartKind::attention) / 4));
        CHECK(s.model_flops_per_token == w.model_flops_per_token);
        // Parameters: every matrix (the blocks', the embedding's, an untied head's) at 1/4, the vectors whole.
        double matrices = 0.0, vectors = 0.0;
        for (const auto& l : w.layers)
            for (const auto& t : l.tensors)
                (t.rows > 1 && t.cols > 1 ? matrices : vectors) += static_cast<double>(t.params);
        const bool positions = style == models::TransformerStyle::gpt;  // GPT's position table stays whole
        const double wpe = positions ? 1024.0 * 1024.0 : 0.0;
        CHECK(static_cast<double>(s.params()) == ddlsim::testing::approx((matrices - wpe) / 4 + wpe + vectors));
        // The norms and residual adds outside the regions run whole; with sequence parallelism on 1/4.
        const models::Workload q = models::tensor_shard(w, 4, true);
        CHECK(flops_of(q, models::PartKind::matmul) == flops_of(s, models::PartKind::matmul));
        double norm_w = 0.0, norm_s = 0.0, norm_q = 0.0;
        for (std::size_t l = 0; l < w.layers.size(); ++l)
            if (w.layers[l].block >= 0) {
                norm_w += w.layers[l].parts.front().activations;  // each block layer opens with its norm
                norm_s += s.layers[l].parts.front().activations;
                norm_q += q.layers[l].parts.front().activations;
            }
        CHECK(norm_s == norm_w);
        CHECK(norm_q == ddlsim::testing::approx(norm_w / 4));
    }
}

TEST_CASE("tensor parallelism: the regions are Megatron's, column GEMMs open them and row GEMMs close them") {
    // Llama and GPT: each block's attention and MLP layers are one region each; the embedding closes one (the
    // vocabulary-parallel lookup's all-reduce), the head opens one.
    const models::Workload w = models::transformer(small(models::TransformerStyle::llama, 2));
    const auto r = models::tensor_regions(w);
    REQUIRE(r.size() == 6);
    CHECK((!r[0].starts && r[0].ends));
    for (std::size_t l = 1; l <= 4; ++l) CHECK((r[l].starts && r[l].ends));
    CHECK((r[5].starts && !r[5].ends));
    // BERT's post-norm blocks: the self-attention opens, its output closes; the intermediate opens, the output closes.
    const models::Workload bert = *models::builtin_workload("bert_base");
    const auto b = models::tensor_regions(bert);
    CHECK((b[1].starts && !b[1].ends));
    CHECK((!b[2].starts && b[2].ends));
    CHECK((b[3].starts && !b[3].ends));
    CHECK((!b[4].starts && b[4].ends));
}

TEST_CASE(
    "tensor parallelism: 2 all-reduces per block forward and 2 backward, the same bytes with sequence "
    "parallelism") {
    // One all-reduce of B = b s h x 2 bytes over a ring of t puts 2 (t - 1) B on the wire; per micro-batch the blocks
    // cost 4 L of them. Adding two blocks adds exactly 2 x 4 x 2 (t - 1) B per micro-batch, with and without
    // sequence parallelism (whose reduce-scatter and all-gather of (t - 1) B each replace each all-reduce).
    const double t = 4, m = 2, B = 1024.0 * 1024.0 * 2.0;
    for (const bool sp : {false, true}) {
        CAPTURE(sp);
        const models::JobResult two = testing::run_first_job(job(2, 4, sp));
        const models::JobResult four = testing::run_first_job(job(4, 4, sp));
        REQUIRE(two.bytes_by_dimension.has_value());
        REQUIRE(four.bytes_by_dimension.has_value());
        CHECK(four.bytes_by_dimension->tensor - two.bytes_by_dimension->tensor ==
              ddlsim::testing::approx(m * 2 * 4 * 2 * (t - 1) * B).epsilon(1e-12));
        CHECK(two.bytes_by_dimension->pipeline == 0.0);
        CHECK(two.bytes_by_dimension->data == 0.0);
        CHECK(two.bytes_on_wire_per_iteration == two.bytes_by_dimension->tensor);
        // And the embedding's and the head's: 2 all-reduces (the lookup's forward, the head's input gradient); with
        // sequence parallelism the lookup's reduce-scatter and, backward, its all-gather, the head's all-gather and,
        // backward, its reduce-scatter: the same bytes.
        CHECK(two.bytes_by_dimension->tensor ==
              ddlsim::testing::approx(m * (4 * 2 + 2) * 2 * (t - 1) * B).epsilon(1e-12));
        // Each rank joins them all: per micro-batch 4 L + 2 calls, or twice as many with sequence parallelism.
        CHECK(two.collectives_per_iteration == m * (4 * 2 + 2) * (sp ? 2 : 1));
    }
}

TEST_CASE("tensor parallelism: on an idle fabric each collective costs its ring's closed form") {
    // The compute does not depend on the links, so halving the NVLink bandwidth adds exactly the collectives' bytes
    // at the new rate: every all-reduce 2 (t - 1) steps of B / t, every reduce-scatter and all-gather t - 1 steps.
    const double t = 4, m = 2, B = 1024.0 * 1024.0 * 2.0, fast = 450e9, slow = 225e9;
    for (const bool sp : {false, true}) {
        CAPTURE(sp);
        const double all_reduces = m * (4 * 2 + 2);
        const models::JobResult a = testing::run_first_job(job(2, 4, sp, "450GBps"));
        const models::JobResult b = testing::run_first_job(job(2, 4, sp, "225GBps"));
        CHECK(b.compute_time_s == a.compute_time_s);
        CHECK(b.iteration_time_s - a.iteration_time_s ==
              ddlsim::testing::approx(all_reduces * 2 * (t - 1) * B / t * (1 / slow - 1 / fast)).epsilon(1e-6));
        // Without stages or replicas every exposed second is a wait for the tensor-parallel collectives, each its
        // ring's 2 (t - 1) steps of 2 ns and B / t at 450 GB/s.
        REQUIRE(a.exposed_by_dimension.has_value());
        CHECK(a.exposed_by_dimension->tensor ==
              ddlsim::testing::approx(all_reduces * 2 * (t - 1) * (2e-9 + B / t / fast)).epsilon(1e-6));
        CHECK(a.exposed_by_dimension->tensor + a.exposed_by_dimension->pipeline ==
              ddlsim::testing::approx(a.breakdown->exposed_communication).epsilon(1e-12));
        CHECK(a.exposed_by_dimension->data == 0.0);
        CHECK(a.exposed_by_dimension->expert == 0.0);  // a dense model has no expert communicator to wait for
    }
}

TEST_CASE(
    "tensor parallelism: tp_overlap hides each all-gather and reduce-scatter behind the GEMM it feeds or drains") {
    // Hidden 4096 over t = 4 ranks of one node at 900 GB/s: every collective (t - 1 steps of B / t, B = s h x 2
    // bytes) is shorter than the column or row GEMMs beside it, so with tp_overlap only the collectives with no GEMM
    // beside them stay exposed: the embedding lookup's reduce-scatter forward and its all-gather backward, 2 per
    // micro-batch. With compute_slowdown 0 the compute is unchanged; the collectives are the same bytes.
    const double t = 4, m = 2, B = 4096.0 * 4096.0 * 2.0, fast = 900e9;
    const double one = (t - 1) * (2e-9 + B / t / fast);  // one all-gather or reduce-scatter on the idle node
    json j = job(2, 4, true, "900GBps", 1, 1, 4096);
    j["overlap"] = {{"compute_slowdown", 0.0}};
    const models::JobResult plain = testing::run_first_job(j);
    j["parallelism"]["tp_overlap"] = true;
    const models::JobResult over = testing::run_first_job(j);
    REQUIRE(plain.exposed_by_dimension.has_value());
    REQUIRE(over.exposed_by_dimension.has_value());
    CHECK(over.bytes_by_dimension->tensor == plain.bytes_by_dimension->tensor);
    CHECK(over.collectives_per_iteration == plain.collectives_per_iteration);
    CHECK(over.breakdown->compute == ddlsim::testing::approx(plain.breakdown->compute).epsilon(1e-9));
    CHECK(plain.exposed_by_dimension->tensor ==
          ddlsim::testing::approx(plain.collectives_per_iteration * one).epsilon(1e-6));
    CHECK(over.exposed_by_dimension->tensor == ddlsim::testing::approx(m * 2 * one).epsilon(1e-6));
    CHECK(plain.iteration_time_s - over.iteration_time_s ==
          ddlsim::testing::approx((plain.collectives_per_iteration - m * 2) * one).epsilon(1e-6));
    // Beside its collective a GEMM runs 1 + sigma times slower, and at full speed once the collective is done: each
    // overlapped collective of C seconds adds C sigma / (1 + sigma) of compute (C / 6 for sigma = 0.2), the
    // embedding's two, waited for before anything runs, nothing.
    j["overlap"] = {{"compute_slowdown", 0.2}};
    const models::JobResult slowed = testing::run_first_job(j);
    CHECK(slowed.breakdown->compute - over.breakdown->compute ==
          ddlsim::testing::approx((plain.collectives_per_iteration - m * 2) * one * 0.2 / 1.2).epsilon(1e-6));
    // Megatron asserts sequence parallelism for --tp-comm-overlap: without it the key is refused, not ignored.
    j = job(2, 4, false);
    j["parallelism"]["tp_overlap"] = true;
    CHECK(testing::refused_at(j) == "$.parallelism.tp_overlap");
}

TEST_CASE("tensor parallelism: a smaller share of the work per GPU and of its memory") {
    // Large enough for the GEMMs to outweigh eager PyTorch's kernel launches (4096 x 4096 activations).
    const models::JobResult one = testing::run_first_job(job(2, 1, false, "450GBps", 1, 1, 4096));
    const models::JobResult four = testing::run_first_job(job(2, 4, false, "450GBps", 1, 1, 4096));
    // The GEMMs at 1/4 (at the smaller GEMMs' own rates) and the norms whole: between 1/4 and 1/2 of the compute.
    CHECK(four.forward_time_s < one.forward_time_s / 2);
    CHECK(four.forward_time_s > one.forward_time_s / 4);
    // The weights per GPU follow the shard's parameters.
    const auto sc1 = scenario::load_scenario(job(2, 1, false));
    const auto sc4 = scenario::load_scenario(job(2, 4, false));
    const auto w1 = models::transformer(small(models::TransformerStyle::llama, 2));
    const double ratio =
        static_cast<double>(models::tensor_shard(w1, 4, false).params()) / static_cast<double>(w1.params());
    CHECK(scenario::job_memory(sc4.jobs[0]).weights ==
          ddlsim::testing::approx(scenario::job_memory(sc1.jobs[0]).weights * ratio).epsilon(1e-9));
}

TEST_CASE("tensor parallelism with pipeline stages: each tensor rank sends its own activations") {
    // t = 2, p = 2, d = 2 on 8 GPUs: every rank of stage 0 sends each micro-batch's b s h x 2 bytes and gets their
    // gradient back (1/t of them with sequence parallelism); each stage's data groups all-reduce its share.
    const double m = 2, B = 1024.0 * 1024.0 * 2.0;
    for (const bool sp : {false, true}) {
        CAPTURE(sp);
        const models::JobResult r = testing::run_first_job(job(2, 2, sp, "450GBps", 2, 2));
        REQUIRE(r.bytes_by_dimension.has_value());
        CHECK(r.bytes_by_dimension->pipeline == ddlsim::testing::approx(4 * m * 2 * B / (sp ? 2 : 1)).epsilon(1e-12));
        CHECK(r.bytes_by_dimension->data > 0.0);
        CHECK(r.bytes_on_wire_per_iteration ==
              ddlsim::testing::approx(r.bytes_by_dimension->tensor + r.bytes_by_dimension->pipeline +
                                      r.bytes_by_dimension->data)
                  .epsilon(1e-12));
    }
}

TEST_CASE("tensor parallelism: refused where it does not divide or has nothing to split") {
    CHECK(testing::refused_at(job(2, 4, false)) == "accepted");
    // 6 GPUs in 4 tensor ranks.
    json j = job(2, 4, false);
    j["workers"] = 6;
    CHECK(testing::refused_at(j) == "$.parallelism.tensor");
    // 16 heads and 8 key/value heads: t = 16 does not divide the key/value heads.
    j = job(2, 16, false);
    CHECK(testing::refused_at(j) == "$.parallelism.tensor");
    // A custom model has no heads to split.
    j = job(2, 2, false);
    j["model"] = {{"layers", json::array({{{"name", "a"}, {"params", 1000}, {"fwd_time", "1ms"}}})}};
    CHECK(testing::refused_at(j) == "$.parallelism.tensor");
    // Sequence parallelism without tensor ranks would be silently nothing.
    j = job(2, 1, true);
    CHECK(testing::refused_at(j) == "$.parallelism.sequence_parallel");
    // What is not modelled yet with model parallelism is refused at the block, not ignored.
    j = job(2, 2, false);
    j["sharding"] = {{"stage", 2}};
    CHECK(testing::refused_at(j) == "$.parallelism.tensor");
}
