// The lower bound of a step read off the per-rank programs (models/program/step_bound.hpp), which `ddlsim plan`
// prunes with. Oracles: where a program holds only compute and tensor-parallel collectives inside one node, the bound
// is the step the simulator runs on an idle fabric (the ring's closed form for each collective, hand-derived as in
// test_tensor_parallel.cpp); everywhere else it stays at or below the simulated step (an invariant over schedules,
// sequence parallelism, tp_overlap, experts, data parallelism and tensor groups across machines).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "models/program/step_bound.hpp"
#include "scenarios/run.hpp"
#include "tests/support/approx.hpp"
#include "tests/support/scenario_harness.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

// testing::small_llama_job split over `tensor` x `pipeline` x `data` H100s on 8-GPU nodes with links of 1 ns and no
// transport overheads.
json job(int layers, std::uint32_t tensor, std::uint32_t pipeline = 1, std::uint32_t data = 1,
         const std::string& intra = "450GBps") {
    json j = testing::small_llama_job(layers, tensor * pipeline * data, intra);
    j["parallelism"] = {{"tensor", tensor}, {"pipeline", pipeline}};
    return j;
}

struct Bounded {
    double bound = 0.0, step = 0.0;
};

Bounded bound_and_step(const json& j) {
    const scenario::Scenario s = scenario::load_scenario(j);
    Bounded b;
    b.bound = models::program::step_lower_bound_s(s.resolved->jobs.front(), s.resolved->fabric);
    b.step = scenario::run_scenario(s).jobs.at(0).iteration_time_s;
    return b;
}

}  // namespace

TEST_CASE(
    "step bound: compute and tensor collectives in one node are the step itself, each at its ring's closed form") {
    // Tensor 4 alone: the ranks compute and wait for their all-reduces, nothing else, so the bound is the step; and
    // halving NVLink adds what it adds to the step, every all-reduce's 2 (t - 1) steps of B / t at the new rate (m
    // micro-batches x (4 per block x 2 blocks + 2: the embedding's and the head's), B = s h x 2 bytes).
    const double t = 4, m = 2, B = 1024.0 * 1024.0 * 2.0, fast = 450e9, slow = 225e9;
    const Bounded a = bound_and_step(job(2, 4, 1, 1, "450GBps"));
    const Bounded b = bound_and_step(job(2, 4, 1, 1, "225GBps"));
    // (The bound is a millionth lower, for the engine's rounding to the picosecond.)
    CHECK(a.bound <= a.step);
    CHECK(a.bound == testing::approx(a.step).epsilon(2e-6));
    CHECK(b.bound <= b.step);
    CHECK(b.bound == testing::approx(b.step).epsilon(2e-6));
    CHECK(b.bound - a.bound ==
          testing::approx(m * (4 * 2 + 2) * 2 * (t - 1) * B / t * (1 / slow - 1 / fast)).epsilon(1e-5));
}

TEST_CASE("step bound: a tensor group across machines counts its rings at their fastest hop") {
    // Tensor 16 over two 8-GPU nodes: two hops of each ring cross the NICs, the others NVLink. The bound takes each
    // collective at the least over the ranks (an NVLink hop's), so it stays below the step, and slower NICs lengthen
    // the step but not the bound.
    json j = job(2, 16);
    j["model"]["transformer"]["kv_heads"] = 16;
    const Bounded across = bound_and_step(j);
    CHECK(across.bound > 0.0);
    CHECK(across.bound < across.step);
    j["network"]["bandwidth"] = "100Gbps";  // slower NICs: the step grows, the bound does not move
    const Bounded slower = bound_and_step(j);
    CHECK(slower.bound == across.bound);
    CHECK(slower.step > across.step);
}

TEST_CASE("step bound: never above the simulated step, whatever the schedule and the dimensions") {
    // Tensor 2 x pipeline 2 x data 4 on two 8-GPU nodes (the data-parallel rings and the pipeline's sends cross the
    // NICs), 4 micro-batches, and the variants plan searches.
    const auto base = [] {
        json j = job(4, 2, 2, 4);
        j["gradient_accumulation"] = 4;
        return j;
    };
    std::vector<std::pair<std::string, json>> cases;
    cases.emplace_back("1f1b", base());
    {
        json j = base();
        j["parallelism"]["schedule"] = "gpipe";
        cases.emplace_back("gpipe", j);
    }
    {
        json j = base();
        j["parallelism"]["schedule"] = "interleaved_1f1b";
        j["parallelism"]["virtual_stages"] = 2;
        cases.emplace_back("interleaved", j);
    }
    {
        json j = base();
        j["parallelism"]["schedule"] = "zero_bubble";
        cases.emplace_back("zero bubble", j);
    }
    {
        json j = base();
        j["parallelism"]["sequence_parallel"] = true;
        j["parallelism"]["tp_overlap"] = true;
        cases.emplace_back("sequence parallel, tp_overlap", j);
    }
    {
        json j = base();
        j["activation_checkpointing"] = "full";
        j["sharding"] = {{"stage", 1}};
        cases.emplace_back("full recompute, distributed optimizer", j);
    }
    {
        json j = base();
        j["model"]["transformer"]["experts"] = 4;
        j["model"]["transformer"]["experts_per_token"] = 2;
        j["parallelism"]["expert"] = 2;
        j["parallelism"]["expert_imbalance"] = 2.0;
        cases.emplace_back("experts", j);
    }
    for (const auto& c : cases) {
        const std::string& name = c.first;  // not a structured binding: clang's CAPTURE cannot capture one
        CAPTURE(name);
        const Bounded b = bound_and_step(c.second);
        CHECK(b.bound > 0.0);
        CHECK(b.bound <= b.step);
    }
}

TEST_CASE("step bound: a pipeline's walks together are its simulated schedule, bubble and sends included") {
    // Four stages of one block each on one idle node, 8 micro-batches, no data or tensor parallelism: the walks of
    // the stages, each receive waiting for its send's arrival (latency and bytes at NVLink's rate), run the schedule
    // the simulator runs, so the bound is the step, with its (m + p - 1)(f + b)-shaped bubble, for each schedule.
    for (const std::string schedule : {"gpipe", "1f1b", "zero_bubble"}) {
        CAPTURE(schedule);
        json j = job(4, 1, 4);
        j["gradient_accumulation"] = 8;
        j["parallelism"]["schedule"] = schedule;
        const Bounded b = bound_and_step(j);
        CHECK(b.bound <= b.step);
        CHECK(b.bound == testing::approx(b.step).epsilon(2e-6));
    }
    // Interleaved: two stages of two chunks each.
    json j = job(4, 1, 2);
    j["gradient_accumulation"] = 8;
    j["parallelism"]["schedule"] = "interleaved_1f1b";
    j["parallelism"]["virtual_stages"] = 2;
    const Bounded b = bound_and_step(j);
    CHECK(b.bound <= b.step);
    CHECK(b.bound == testing::approx(b.step).epsilon(2e-6));
}
