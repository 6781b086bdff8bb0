// Pipeline parallelism on the per-rank programs (models/program/pipeline.hpp): the bubble emerges from the stages'
// programs and their point-to-point flows, and on an idle fabric with pinned compute equals the closed form
// (m + p - 1)(f + b) for GPipe and 1F1B (Narayanan et al. SC'21, §2.2); each stage's data-parallel group all-reduces
// its own layers' gradients; the boundary activations travel as flows; refusals name the key and the rule.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include <string>

#include "models/program/pipeline.hpp"
#include "scenarios/run.hpp"
#include "tests/support/scenario_harness.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

// Eight identical layers, each 1 ms forward and 2 ms backward per micro-batch and a million parameters, on one node
// of eight GPUs whose links have 1 ns of latency and no transport overheads.
json pinned(std::uint32_t pipeline, std::uint32_t data, std::uint32_t micro_batches, const char* schedule) {
    json layers = json::array();
    for (int i = 0; i < 8; ++i)
        layers.push_back({{"name", "l" + std::to_string(i)},
                          {"params", 1000000},
                          {"fwd_time", "1ms"},
                          {"bwd_time", "2ms"},
                          {"update_time", "0s"}});
    json j = {{"workers", pipeline * data},
              {"model", {{"layers", layers}}},
              {"batch_size", 1},
              {"gradient_accumulation", micro_batches},
              {"iterations", 1},
              {"device", {{"name", "H100"}, {"precision", "bf16"}}},
              {"network", testing::idle_node_network()}};
    if (pipeline > 1) j["parallelism"] = {{"pipeline", pipeline}, {"schedule", schedule}};
    return j;
}

}  // namespace

TEST_CASE("pipeline: the bubble emerges, (m + p - 1)(f + b) for GPipe and 1F1B on an idle fabric") {
    // p = 4 stages of two layers: f = 2 ms, b = 4 ms per micro-batch. The custom layers send no activations, so a
    // send is its route's 2 ns of latency: to 0.1 %, the closed form.
    for (const char* schedule : {"gpipe", "1f1b"}) {
        CAPTURE(schedule);
        CHECK(testing::run_first_job(pinned(4, 1, 8, schedule)).iteration_time_s ==
              ddlsim::testing::approx((8 + 4 - 1) * 6e-3).epsilon(1e-3));
        // Fewer micro-batches than stages: 1F1B's warm-up is cut to the micro-batches there are.
        CHECK(testing::run_first_job(pinned(4, 1, 2, schedule)).iteration_time_s ==
              ddlsim::testing::approx((2 + 4 - 1) * 6e-3).epsilon(1e-3));
    }
    // One stage is the whole model: m (f + b) with f = 8 ms, b = 16 ms.
    CHECK(testing::run_first_job(pinned(1, 1, 8, "1f1b")).iteration_time_s ==
          ddlsim::testing::approx(8 * 24e-3).epsilon(1e-9));
    // The breakdown: each rank computes m (f + b) = 48 ms; the bubble is the rest.
    const models::JobResult r = testing::run_first_job(pinned(4, 1, 8, "1f1b"));
    REQUIRE(r.breakdown.has_value());
    CHECK(r.breakdown->compute == ddlsim::testing::approx(48e-3).epsilon(1e-9));
    CHECK(r.breakdown->exposed_communication == ddlsim::testing::approx(18e-3).epsilon(1e-3));
    // All of it the pipeline's: waiting for other stages' micro-batches.
    REQUIRE(r.exposed_by_dimension.has_value());
    CHECK(r.exposed_by_dimension->pipeline == r.breakdown->exposed_communication);
    CHECK(r.exposed_by_dimension->tensor == 0.0);
    CHECK(r.exposed_by_dimension->data == 0.0);
    // The result's bubble fraction: (p - 1) / (m + p - 1) of the step, 3 / 11.
    const auto sc = scenario::load_scenario(pinned(4, 1, 8, "1f1b"));
    const json out = scenario::result_json(sc, scenario::run_scenario(sc));
    CHECK(out.at("bubble_fraction").get<double>() == ddlsim::testing::approx(3.0 / 11.0).epsilon(1e-3));
}

TEST_CASE("pipeline: zero bubble (ZB-H1) leaves (p - 1)(F + B - W) of bubble on an idle fabric") {
    // A custom layer's backward splits into even input- and weight-gradient halves: each stage of 2 layers runs F =
    // 2 ms, B = W = 2 ms. ZB-H1's bubble is (p - 1)(F + B - W) (Qi et al., arXiv 2401.10241 §3.1), 1F1B's
    // (p - 1)(F + B + W): 8 x 6 + 3 x 2 = 54 ms against 66 ms.
    const models::JobResult zb = testing::run_first_job(pinned(4, 1, 8, "zero_bubble"));
    CHECK(zb.iteration_time_s == ddlsim::testing::approx(8 * 6e-3 + 3 * 2e-3).epsilon(1e-3));
    CHECK(testing::run_first_job(pinned(4, 1, 8, "1f1b")).iteration_time_s ==
          ddlsim::testing::approx(11 * 6e-3).epsilon(1e-3));
    // W < F: a 1.5 ms backward per layer, F = 2, B = W = 1.5 per stage: 8 x 5 + 3 x 2 = 46 ms; and with m = p.
    json j = pinned(4, 1, 8, "zero_bubble");
    for (auto& layer : j["model"]["layers"]) layer["bwd_time"] = "1.5ms";
    CHECK(testing::run_first_job(j).iteration_time_s == ddlsim::testing::approx(8 * 5e-3 + 3 * 2e-3).epsilon(1e-3));
    j["gradient_accumulation"] = 4;
    CHECK(testing::run_first_job(j).iteration_time_s == ddlsim::testing::approx(4 * 5e-3 + 3 * 2e-3).epsilon(1e-3));
    // The same compute, the same bytes: only the order changed.
    REQUIRE(zb.breakdown.has_value());
    CHECK(zb.breakdown->compute == ddlsim::testing::approx(48e-3).epsilon(1e-9));
    // Each stage's order: in step x the forward of x, the input gradients of x - (p - 1 - s), the weight gradients of
    // x - (p - 1); every pass of every micro-batch once.
    models::ParallelismSpec par;
    par.pipeline = 4;
    par.schedule = models::PipelineSchedule::zero_bubble;
    for (std::uint32_t s = 0; s < 4; ++s) {
        const auto ops = models::program::stage_schedule(par, s, 8);
        CHECK(ops.size() == 3 * 8);
        std::uint32_t forwards = 0;
        for (std::size_t i = 0; i < ops.size() && ops[i].pass == models::program::Pass::forward; ++i) ++forwards;
        CHECK(forwards == 4 - s);  // the p - s - 1 warm-up forwards, then step p - s - 1's forward
    }
}

TEST_CASE("pipeline: each stage's data-parallel group all-reduces its own layers' gradients after the drain") {
    // Two ranks per stage: each stage's 2 M parameters (fp32 gradients, 8 MB) all-reduced by a ring of two, 2 steps
    // of 4 MB per rank: 4 stages x 2 ranks x 2 x 4 MB on the wire. Stage 0 ends its last backward last, at the
    // closed form; its ring adds 2 x (2 ns + 4 MB / 450 GB/s).
    const models::JobResult one = testing::run_first_job(pinned(4, 1, 8, "1f1b"));
    const models::JobResult two = testing::run_first_job(pinned(4, 2, 8, "1f1b"));
    CHECK(one.bytes_on_wire_per_iteration == 0.0);
    CHECK(two.bytes_on_wire_per_iteration == ddlsim::testing::approx(4 * 2 * 2 * 4e6).epsilon(1e-12));
    CHECK(two.collectives_per_iteration == 1.0);  // each rank joins its own stage's one all-reduce
    CHECK(two.iteration_time_s - one.iteration_time_s ==
          ddlsim::testing::approx(2.0 * (2e-9 + 4e6 / 450e9)).epsilon(1e-4));
    // Twice the samples per step in the same time, nearly.
    CHECK(two.throughput_samples_per_s / one.throughput_samples_per_s ==
          ddlsim::testing::approx(2.0 * one.iteration_time_s / two.iteration_time_s).epsilon(1e-9));
}

TEST_CASE("pipeline: a data-parallel group across nodes runs NCCL's ring per NIC, each on its share of the bytes") {
    // Two stages of 8 replicas on two DGX H100 nodes (a 400 Gbit/s NIC per GPU, one rail each), ranks in Llama 3's
    // order (each replica's two stages side by side): each stage's 8 data ranks sit 4 on each node. As NCCL builds
    // them (topologies/allreduce_algorithms.cpp, make_ring), 4 rings of S / 4 leave each node by 4 NICs: 2 (8 - 1)
    // steps of S / 32, each as long as its node-crossing transfer at 50 GB/s, for the stage's S = 4 layers x 1 M fp32
    // gradients (one ring through one NIC: 4 times as long). The last stage-0 backward ends the drain; its ring is
    // what the step waits for.
    json j = pinned(2, 8, 4, "1f1b");
    j["parallelism"]["order"] = "tp-cp-pp-dp";
    // A ring's hop to the next node that changes rail relays over NVLink to the destination's rail (PXN): at 450 GB/s
    // beside 50 GB/s, only its latency, 1 ns here, would show.
    j["network"] = {{"topology", "rail_optimized"},
                    {"node", "dgx_h100"},
                    {"latency", "1ns"},
                    {"intra_latency", "1ns"},
                    {"transport", "ideal"}};
    const models::JobResult r = testing::run_first_job(j);
    REQUIRE(r.exposed_by_dimension.has_value());
    const double S = 4 * 1e6 * 4, steps = 2 * 7;
    CHECK(r.exposed_by_dimension->data == ddlsim::testing::approx(steps * S / 32 / 50e9).epsilon(0.01));
}

TEST_CASE("pipeline: overlapped buckets leave only the last one after the drain, and the distributed optimizer") {
    // Two ranks per stage, 1 M fp32 parameters per layer: buckets of 4 MB are one layer each. The last micro-batch's
    // backward issues the upper layer's bucket while the lower layer's 2 ms backward runs; only the lower one's ring
    // (2 steps of 2 MB) follows the drain, against the whole stage's (2 steps of 4 MB) without overlap.
    const models::JobResult one = testing::run_first_job(pinned(4, 1, 8, "1f1b"));
    const models::JobResult plain = testing::run_first_job(pinned(4, 2, 8, "1f1b"));
    json j = pinned(4, 2, 8, "1f1b");
    j["overlap"] = {{"wfbp", true}, {"fusion", "buffer"}, {"bucket_size", "4MB"}};
    const models::JobResult overlapped = testing::run_first_job(j);
    CHECK(overlapped.iteration_time_s - one.iteration_time_s ==
          ddlsim::testing::approx(2.0 * (2e-9 + 2e6 / 450e9)).epsilon(1e-3));
    CHECK(overlapped.bytes_on_wire_per_iteration == plain.bytes_on_wire_per_iteration);
    // Without fusion buffers each layer is a bucket of its own: here the same buckets.
    j["overlap"] = {{"wfbp", true}};
    CHECK(testing::run_first_job(j).iteration_time_s == overlapped.iteration_time_s);
    // Megatron's distributed optimizer: a reduce-scatter (1 step of 4 MB), each rank's half of the update, an
    // all-gather (1 step of 4 MB): the all-reduce's bytes and time, in two collectives.
    j = pinned(4, 2, 8, "1f1b");
    j["sharding"] = {{"stage", 1}};
    const models::JobResult sharded = testing::run_first_job(j);
    CHECK(sharded.bytes_on_wire_per_iteration ==
          ddlsim::testing::approx(plain.bytes_on_wire_per_iteration).epsilon(1e-12));
    CHECK(sharded.collectives_per_iteration == 2.0);
    CHECK(sharded.iteration_time_s == ddlsim::testing::approx(plain.iteration_time_s).epsilon(1e-6));
    // Each rank keeps half of the optimizer state (AdamW's two fp32 tensors).
    j["optimizer"] = "adamw";
    json replicated = j;
    replicated.erase("sharding");
    CHECK(scenario::job_memory(scenario::load_scenario(j).jobs[0]).optimizer ==
          ddlsim::testing::approx(scenario::job_memory(scenario::load_scenario(replicated).jobs[0]).optimizer / 2)
              .epsilon(1e-12));
    // ZeRO-2 and -3 are not modelled with stages: refused at the key, not ignored.
    j["sharding"] = {{"stage", 3}};
    CHECK(testing::refused_at(j) == "$.parallelism.pipeline");
}

TEST_CASE("pipeline: overlap_param_gather moves the distributed optimizer's all-gathers under the next forwards") {
    // Two ranks per stage, buckets of one layer (4 MB of fp32 gradients): each stage reduce-scatters the upper
    // layer's bucket beside the lower one's last backward and the lower one's after it (1 step of 2 MB each), updates,
    // then all-gathers the whole stage (1 step of 4 MB). With overlap_param_gather the all-gathers start the step,
    // each bucket's waited for by the first forward of its layer: the lower layer's (1 step of 2 MB) before anything
    // can run, the upper one's beside the lower one's 1 ms forward, hidden. The step is shorter by exactly that
    // hidden one, with the same bytes.
    json j = pinned(4, 2, 8, "1f1b");
    j["overlap"] = {{"wfbp", true}, {"fusion", "buffer"}, {"bucket_size", "4MB"}};
    j["sharding"] = {{"stage", 1}};
    const models::JobResult after = testing::run_first_job(j);
    j["parallelism"]["overlap_param_gather"] = true;
    const models::JobResult beside = testing::run_first_job(j);
    CHECK(beside.bytes_on_wire_per_iteration == after.bytes_on_wire_per_iteration);
    CHECK(after.iteration_time_s - beside.iteration_time_s ==
          ddlsim::testing::approx(2e-9 + 2e6 / 450e9).epsilon(1e-3));
    // Each bucket's all-gather is a collective of its own: 2 buckets per stage instead of one all-gather.
    CHECK(beside.collectives_per_iteration == after.collectives_per_iteration + 1.0);
    // Megatron asserts --overlap-grad-reduce for it, and it needs the distributed optimizer: refused otherwise.
    j.erase("overlap");
    CHECK(testing::refused_at(j) == "$.parallelism.overlap_param_gather");
    j["overlap"] = {{"wfbp", true}, {"fusion", "buffer"}, {"bucket_size", "4MB"}};
    j.erase("sharding");
    CHECK(testing::refused_at(j) == "$.parallelism.overlap_param_gather");
}

TEST_CASE("pipeline: a stage boundary sends the activations forward and their gradients back as flows") {
    // GPT-2 (12 blocks of hidden 768 over 1,024 tokens) in 2 stages of 6 blocks, one rank each, 4 micro-batches of
    // 2 sequences in bf16: each micro-batch sends 2 x 1,024 x 768 x 2 bytes forward and as many back.
    json j = {{"workers", 2},
              {"model", {{"name", "gpt2"}, {"dtype", "bf16"}}},
              {"batch_size", 2},
              {"gradient_accumulation", 4},
              {"iterations", 1},
              {"device", {{"name", "H100"}, {"precision", "bf16"}}},
              {"network", {{"topology", "two_tier"}, {"node", "dgx_h100"}}},
              {"parallelism", {{"pipeline", 2}}}};
    const models::JobResult r = testing::run_first_job(j);
    CHECK(r.bytes_on_wire_per_iteration == ddlsim::testing::approx(2.0 * 4 * 2 * 1024 * 768 * 2).epsilon(1e-12));
    // The same GPUs without a pipeline (data parallelism over two) move the gradients instead.
    j.erase("parallelism");
    CHECK(testing::run_first_job(j).bytes_on_wire_per_iteration > r.bytes_on_wire_per_iteration);
}

TEST_CASE("pipeline: memory per GPU is the most loaded stage's") {
    // bf16 with fp32 master weights: 6 bytes per parameter; a quarter of the eight identical layers on each stage.
    const auto whole = scenario::job_memory(scenario::load_scenario(pinned(1, 1, 8, "1f1b")).jobs.at(0));
    const auto staged = scenario::job_memory(scenario::load_scenario(pinned(4, 1, 8, "1f1b")).jobs.at(0));
    CHECK(whole.weights == ddlsim::testing::approx(8e6 * 6.0).epsilon(1e-12));
    CHECK(staged.weights == ddlsim::testing::approx(2e6 * 6.0).epsilon(1e-12));
    CHECK(staged.optimizer == ddlsim::testing::approx(whole.optimizer / 4.0).epsilon(1e-12));
}

TEST_CASE("pipeline: refused where it does not divide or is not modelled yet") {
    json j = pinned(4, 1, 8, "1f1b");
    j["workers"] = 6;  // 4 stages do not divide 6 workers
    CHECK(testing::refused_at(j) == "$.parallelism.pipeline");
    j = pinned(4, 1, 8, "1f1b");
    j["parallelism"]["pipeline"] = 16;
    j["workers"] = 16;  // more stages than the model's 8 layers
    CHECK(testing::refused_at(j) == "$.parallelism.pipeline");
    j = pinned(4, 1, 8, "1f1b");
    j["model"] = "gpt2";
    j["workers"] = 5;
    j["parallelism"]["pipeline"] = 5;  // 12 blocks do not split into 5 stages
    CHECK(testing::refused_at(j) == "$.parallelism.pipeline");
    j = pinned(1, 2, 8, "1f1b");
    j["parallelism"] = {{"schedule", "gpipe"}};  // a schedule without stages
    CHECK(testing::refused_at(j) == "$.parallelism.schedule");
    j = pinned(4, 1, 8, "1f1b");
    j["parallelism"]["schedule"] = "interleaved";
    CHECK(testing::refused_at(j) == "$.parallelism.schedule");
    // Not a structured binding: clang 14 cannot capture those.
    for (const std::pair<const char*, json>& entry :
         {std::pair<const char*, json>{"sharding", {{"stage", 2}}},
          std::pair<const char*, json>{"compression", {{"kind", "fp16"}}},
          std::pair<const char*, json>{"overlap", {{"fusion", "mgwfbp"}}},
          std::pair<const char*, json>{"sync", {{"kind", "local_sgd"}, {"period", 4}}}}) {
        const std::string key = entry.first;
        CAPTURE(key);
        j = pinned(4, 2, 8, "1f1b");
        j[key] = entry.second;
        CHECK(testing::refused_at(j) == "$.parallelism.pipeline");
    }
}

TEST_CASE("pipeline: time to train counts each model replica's samples and pipelines the evaluation's forwards") {
    // p = 4 stages of d = 2 replicas, m = 8 micro-batches of 1: a step is 2 x 1 x 8 = 16 samples. An evaluation of E
    // samples is ceil(E / 2) micro-batches per replica through the 4 stages: (ceil(E / 2) + 3) stage forwards of
    // 2 ms, so 16 more samples cost 8 more stage forwards.
    auto ttt = [](double eval_samples) {
        json j = pinned(4, 2, 8, "1f1b");
        j["training"] = {{"samples_to_target", 16000},
                         {"epoch_samples", 1600},
                         {"evaluation", {{"every_epochs", 1}, {"samples", eval_samples}}}};
        const auto t = scenario::run_scenario(scenario::load_scenario(j)).time_to_train.at(0);
        REQUIRE(t.has_value());
        return *t;
    };
    const auto a = ttt(16), b = ttt(32);
    CHECK(a.global_batch == 16.0);
    CHECK(b.evaluation_each_s - a.evaluation_each_s == ddlsim::testing::approx(8 * 2e-3).epsilon(1e-9));
}

TEST_CASE("pipeline: a custom layer's activation_bytes is what its stage boundary sends") {
    // 4 stages, each boundary layer's output 45 MB per sample, 8 micro-batches of 1, one replica: 2 x 8 x 3 sends of
    // 45 MB on the wire. GPipe keeps the stages back to back: each stage's first forward waits for the one before
    // it, and a send over the 450 GB/s NVLink path takes 45 MB / 450 GB/s = 0.1 ms (+ 2 ns). The fill and the drain
    // cross the 3 boundaries once each way: 2 x 3 x 0.1 ms more than the closed form with nothing sent.
    json j = pinned(4, 1, 8, "gpipe");
    for (auto& l : j["model"]["layers"]) l["activation_bytes"] = 45e6;
    const models::JobResult r = testing::run_first_job(j);
    CHECK(r.bytes_on_wire_per_iteration == ddlsim::testing::approx(2.0 * 8 * 3 * 45e6).epsilon(1e-12));
    const double bare = testing::run_first_job(pinned(4, 1, 8, "gpipe")).iteration_time_s;
    CHECK(r.iteration_time_s - bare == ddlsim::testing::approx(2.0 * 3 * (45e6 / 450e9 + 2e-9)).epsilon(1e-3));
}

TEST_CASE("pipeline: activation_bytes without a pipeline is refused, not ignored") {
    json j = pinned(1, 2, 8, "1f1b");
    j["model"]["layers"][3]["activation_bytes"] = 1e6;
    CHECK(testing::refused_at(j) == "$.model.layers[3].activation_bytes");
    json jobs = {{"network", j["network"]}, {"jobs", json::array({j})}};
    jobs["jobs"][0].erase("network");
    jobs["jobs"][0].erase("iterations");  // a scenario key, not a job's
    jobs["iterations"] = 1;
    CHECK(testing::refused_at(jobs) == "$.jobs[0].model.layers[3].activation_bytes");
}

TEST_CASE("pipeline: a step whose programs would not fit in memory is refused at its micro-batches") {
    // 32 stages x 10^6 micro-batches: every stage's program holds every micro-batch's computes and sends.
    json j = pinned(8, 1, 1000000, "1f1b");
    j["workers"] = 8;
    CHECK(testing::refused_at(j) == "$.gradient_accumulation");
    j["gradient_accumulation"] = 64;
    CHECK(testing::refused_at(j) == "accepted");
}

TEST_CASE("pipeline: uneven outer stages hold the blocks they are given, the others the rest evenly") {
    // Llama 3 405B's 126 blocks over 16 stages: one block fewer on the first and the last (Dubey et al., arXiv
    // 2407.21783, §3.3.2), 7 + 14 x 8 + 7.
    models::TransformerConfig c;
    c.layers = 126;
    c.hidden = 256;
    c.heads = 4;
    c.seq_len = 16;
    c.vocab = 100;
    const models::Workload w = models::transformer(c);
    models::ParallelismSpec par;
    par.pipeline = 16;
    par.first_stage_layers = 7;
    par.last_stage_layers = 7;
    const auto stages = models::program::pipeline_stages(w, par);
    REQUIRE(stages.size() == 16);
    // Layer 0 is the embedding, then two layers per block; the head is the last layer.
    CHECK(stages[0].first == 0);
    CHECK(stages[0].last == 14);
    CHECK(stages[1].first == 15);
    CHECK(stages[1].last == 30);
    CHECK(stages[15].first == 1 + 2 * 119);
    CHECK(stages[15].last == w.layers.size() - 1);
    for (std::size_t s = 1; s < 16; ++s) CHECK(stages[s].first == stages[s - 1].last + 1);
    // Even stages cannot split 126 blocks 16 ways.
    par.first_stage_layers.reset();
    par.last_stage_layers.reset();
    CHECK_THROWS_AS((void)models::program::pipeline_stages(w, par), std::invalid_argument);
    // Only the first given: the other 15 stages share 119 blocks, which they cannot.
    par.first_stage_layers = 7;
    CHECK_THROWS_AS((void)models::program::pipeline_stages(w, par), std::invalid_argument);
    // As a scenario: refused at the key that breaks the rule.
    json j = pinned(4, 1, 8, "1f1b");
    j["parallelism"]["first_stage_layers"] = 1;
    CHECK(testing::refused_at(j) == "$.parallelism.first_stage_layers");  // custom layers have no blocks
    j = pinned(1, 2, 8, "1f1b");
    j["parallelism"] = {{"last_stage_layers", 1}};
    CHECK(testing::refused_at(j) == "$.parallelism.last_stage_layers");  // no pipeline
}

TEST_CASE("pipeline: interleaved 1F1B's bubble shrinks by the virtual stages, m (f + b) + (p - 1)(f + b) / v") {
    // Eight layers of 1 ms forward and 2 ms backward: with v chunks per stage each stage's f + b is 24 / p ms. The
    // closed form of Narayanan et al. SC'21 §2.2 (Megatron's schedule, m a multiple of p), to 0.1 %.
    struct Case {
        std::uint32_t p, v, m;
    };
    for (const Case c : {Case{2, 2, 4}, Case{4, 2, 8}, Case{2, 4, 6}}) {
        CAPTURE(c.p);
        CAPTURE(c.v);
        CAPTURE(c.m);
        json j = pinned(c.p, 1, c.m, "interleaved_1f1b");
        j["parallelism"]["virtual_stages"] = c.v;
        const double fb = 24e-3 / c.p;
        CHECK(testing::run_first_job(j).iteration_time_s ==
              ddlsim::testing::approx(c.m * fb + (c.p - 1) * fb / c.v).epsilon(1e-3));
        // v times the point-to-point traffic of 1F1B: each chunk boundary sends (none here: the layers send nothing).
    }
    // With v = 1 chunk it would be 1F1B; with GPT-2-sized boundaries the sends grow v-fold: (p v - 1) boundaries of
    // m activations and their gradients per data rank, against p - 1.
    json base = pinned(2, 1, 4, "1f1b");
    for (auto& l : base["model"]["layers"]) l["activation_bytes"] = 1000;
    json inter = base;
    inter["parallelism"] = {{"pipeline", 2}, {"schedule", "interleaved_1f1b"}, {"virtual_stages", 2}};
    const auto a = testing::run_first_job(base), b = testing::run_first_job(inter);
    REQUIRE(a.bytes_by_dimension.has_value());
    REQUIRE(b.bytes_by_dimension.has_value());
    CHECK(a.bytes_by_dimension->pipeline == ddlsim::testing::approx((2 - 1) * 4 * 2 * 1000.0));
    CHECK(b.bytes_by_dimension->pipeline == ddlsim::testing::approx((2 * 2 - 1) * 4 * 2 * 1000.0));
}

TEST_CASE("pipeline: interleaving is refused where Megatron's schedule cannot run it") {
    json j = pinned(2, 1, 4, "interleaved_1f1b");
    CHECK(testing::refused_at(j) == "$.parallelism.virtual_stages");  // required
    j["parallelism"]["virtual_stages"] = 2;
    CHECK(testing::refused_at(j) == "accepted");
    j["gradient_accumulation"] = 3;  // not a multiple of the 2 stages
    CHECK(testing::refused_at(j) == "$.gradient_accumulation");
    j = pinned(2, 1, 4, "interleaved_1f1b");
    j["parallelism"]["virtual_stages"] = 8;  // 16 virtual stages of 8 layers
    CHECK(testing::refused_at(j) == "$.parallelism.virtual_stages");
    j = pinned(2, 1, 4, "1f1b");
    j["parallelism"]["virtual_stages"] = 2;  // only with interleaving
    CHECK(testing::refused_at(j) == "$.parallelism.virtual_stages");
}

TEST_CASE("pipeline: the rank order decides which traffic crosses machines") {
    // Llama 3 8B in 8 stages on two DGX H100 nodes (two replicas). Megatron's order (pp outermost) puts stages 0-3
    // on one machine and 4-7 on the other: of the 7 stage boundaries one crosses machines, and each stage's two data
    // ranks share a machine. Llama 3's "tp-cp-pp-dp" puts each replica on one machine: no send leaves it, every
    // data-parallel pair crosses.
    json j = {{"workers", 16},
              {"model", {{"name", "llama3_8b"}, {"dtype", "bf16"}}},
              {"batch_size", 1},
              {"gradient_accumulation", 8},
              {"iterations", 1},
              {"device", {{"name", "H100"}, {"precision", "bf16"}}},
              {"network", {{"topology", "two_tier"}, {"node", "dgx_h100"}, {"bandwidth", "400Gbps"}}},
              {"parallelism", {{"pipeline", 8}}}};
    const models::JobResult megatron = testing::run_first_job(j);
    REQUIRE(megatron.bytes_by_dimension.has_value());
    CHECK(megatron.machine_bytes_per_iteration ==
          ddlsim::testing::approx(megatron.bytes_by_dimension->pipeline / 7).epsilon(1e-12));
    j["parallelism"]["order"] = "tp-cp-pp-dp";
    const models::JobResult llama3 = testing::run_first_job(j);
    CHECK(llama3.machine_bytes_per_iteration ==
          ddlsim::testing::approx(llama3.bytes_by_dimension->data).epsilon(1e-12));
    // The same bytes on the wire either way: the order places ranks, it changes no message.
    CHECK(llama3.bytes_on_wire_per_iteration == megatron.bytes_on_wire_per_iteration);
    // "ep" belongs just inside "dp"; every dimension once.
    for (const char* bad : {"tp-cp-dp", "tp-cp-dp-pp-tp", "tp-ep-cp-dp-pp", "tp-cp-dp-ep-pp", "tp-cp-xp-dp-pp", ""}) {
        CAPTURE(bad);
        j["parallelism"]["order"] = bad;
        CHECK(testing::refused_at(j) == "$.parallelism.order");
    }
    j["parallelism"]["order"] = "pp-dp-cp-tp";  // any permutation
    CHECK(testing::refused_at(j) == "accepted");
}
