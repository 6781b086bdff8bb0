// Flow classes against every transfer simulated (metamorphic: `--no-flow-classes` must change nothing but speed):
// seeded random symmetric jobs (rings, FSDP/HSDP, and hierarchical, which runs in full; stars, nodes on two tiers,
// rails) give the same iteration time (to 1e-9), transfers and busiest links either way, and most of them do run per
// class; jobs that are not symmetric (a straggler, hashed spines) run in full.
#include <doctest/doctest.h>

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/rng.hpp"

using nlohmann::json;
using namespace ddlsim;

namespace {

json symmetric_scenario(sim::rng::SplitMix64& rng) {
    auto below = [&](std::uint64_t k) { return static_cast<int>(sim::rng::below(rng, k)); };
    const int nodes = 2 << below(3);  // 2, 4, 8
    json j = {{"iterations", 2}, {"batch_size", 8}, {"device", {{"name", "H100"}, {"precision", "bf16"}}}};
    switch (below(3)) {
        case 0:
            j["network"] = {{"topology", "star"}, {"bandwidth", "25Gbps"}, {"latency", "3us"}};
            j["workers"] = nodes * 4;
            break;
        case 1:
            j["network"] = {{"topology", "two_tier"}, {"node", "dgx_h100"}, {"bandwidth", "100Gbps"}};
            j["workers"] = nodes * 8;
            break;
        default:
            j["network"] = {{"topology", "rail_optimized"}, {"node", "dgx_h100"}, {"spines", 2}, {"routing", "dmodk"}};
            j["workers"] = nodes * 8;
            break;
    }
    const int scheme = below(4);
    switch (scheme) {
        case 0: j["architecture"] = {{"kind", "allreduce"}, {"algorithm", "ring"}}; break;
        case 1: j["architecture"] = {{"kind", "allreduce"}, {"algorithm", "hierarchical"}}; break;
        case 2: j["sharding"] = {{"stage", 3}, {"group", "node"}}; break;
        default: j["sharding"] = {{"stage", 1 + below(2)}}; break;
    }
    j["model"] = below(2) == 0 ? json{{"name", "resnet50"}} : json{{"name", "gpt2"}, {"dtype", "bf16"}};
    if (scheme != 2 && below(2) == 0) j["overlap"] = {{"fusion", "buffer"}, {"bucket_size", "25MB"}};
    return j;
}

struct Both {
    scenario::RunResult classes, full;
};

Both run_both(const json& j) {
    scenario::Scenario s = scenario::load_scenario(j);
    Both b{scenario::run_scenario(s), {}};
    s.flow_classes = false;
    b.full = scenario::run_scenario(s);
    return b;
}

void check_same(const Both& b) {
    REQUIRE(b.classes.jobs.size() == 1);
    const double tc = b.classes.jobs[0].iteration_time_s, tf = b.full.jobs[0].iteration_time_s;
    CHECK(std::abs(tc - tf) <= 1e-9 * tf);
    CHECK(b.classes.transfers == b.full.transfers);
    CHECK(b.classes.jobs[0].bytes_on_wire_per_iteration == b.full.jobs[0].bytes_on_wire_per_iteration);
    REQUIRE(b.classes.busiest_links.size() == b.full.busiest_links.size());
    for (std::size_t i = 0; i < b.full.busiest_links.size(); ++i)
        CHECK(std::abs(b.classes.busiest_links[i].utilization - b.full.busiest_links[i].utilization) <= 1e-9);
    CHECK(b.full.flow_class_period == 0);
}

}  // namespace

TEST_CASE("flow classes: random symmetric jobs give what simulating every transfer gives") {
    sim::rng::SplitMix64 rng(20261204);
    int per_class = 0, expected = 0;
    constexpr int kCases = 14;
    for (int i = 0; i < kCases; ++i) {
        const json j = symmetric_scenario(rng);
        CAPTURE(j.dump());
        const Both b = run_both(j);
        check_same(b);
        // Hierarchical all-reduce is a transfer DAG, which has no class form yet: it runs in full.
        const bool hierarchical = j.contains("architecture") && j["architecture"]["algorithm"] == "hierarchical";
        if (hierarchical)
            CHECK(b.classes.flow_class_period == 0);
        else
            ++expected;
        if (b.classes.flow_class_period > 0) {
            ++per_class;
            // The period is a whole number of nodes and leaves at least two.
            const auto n = j["workers"].get<std::uint32_t>();
            CHECK(n % b.classes.flow_class_period == 0);
            CHECK(n / b.classes.flow_class_period >= 2);
            CHECK(b.classes.events < b.full.events);
        }
    }
    // These fabrics and placements are symmetric under a shift of whole nodes: every ring and sharded job runs per
    // class.
    CHECK(expected >= kCases / 2);
    CHECK(per_class == expected);
}

TEST_CASE("flow classes: a straggler keeps every transfer, spines picked by hash and rails relayed by PXN need not") {
    json j = {{"workers", 32},
              {"iterations", 2},
              {"batch_size", 8},
              {"model", {{"name", "resnet50"}}},
              {"device", {{"name", "H100"}}},
              {"network", {{"topology", "two_tier"}, {"node", "dgx_h100"}, {"bandwidth", "100Gbps"}}},
              {"architecture", {{"kind", "allreduce"}, {"algorithm", "ring"}}}};
    const Both sym = run_both(j);
    check_same(sym);
    CHECK(sym.classes.flow_class_period == 8);  // one node's GPUs: a shift of one node maps the fabric onto itself
    j["stragglers"] = {{"distribution", "periodic"}, {"every", 1}, {"slowdown", 1.5}, {"workers", {5}}};
    const Both slow = run_both(j);
    check_same(slow);
    CHECK(slow.classes.flow_class_period == 0);
    // The run says why (the summary prints it): here before any shift was tried; with classes, nothing to say.
    CHECK(slow.classes.flow_class_reason == "stragglers make the workers unlike");
    CHECK(sym.classes.flow_class_reason.empty());
    CHECK(slow.classes.jobs[0].iteration_time_s > sym.classes.jobs[0].iteration_time_s);
    // A ring's one hop up from each leaf picks its spine by a hash of the connection: each uplink carries one of them,
    // so a shift of one leaf maps them onto each other all the same (sim/symmetry.hpp checks it while running).
    json spread = j;
    spread.erase("stragglers");
    spread["network"] = {{"topology", "leaf_spine"}, {"leaves", 4},     {"hosts_per_leaf", 8}, {"spines", 4},
                         {"bandwidth", "100Gbps"},   {"latency", "1us"}};
    const Both hashed = run_both(spread);
    check_same(hashed);
    CHECK(hashed.classes.flow_class_period == 8);
    // On a rail-optimized fabric the rings' hops between nodes that change rail relay over NVLink to the
    // destination's rail first (NCCL's PXN): no spine, no hash, one node's shift is a symmetry again.
    json rails = spread;
    rails["network"] = {{"topology", "rail_optimized"}, {"node", "dgx_h100"}, {"spines", 4}};
    const Both relayed = run_both(rails);
    check_same(relayed);
    CHECK(relayed.classes.flow_class_period == 8);
}

TEST_CASE("flow classes: a model-parallel job's first replicas run for all of them") {
    // Replica j + 1 of a model-parallel job is replica j shifted (ParallelismSpec::rank), so its first replicas (those
    // of one expert group with experts) run for all. Tensor and pipeline with data, the distributed optimizer with
    // overlapped buckets, context rings, Llama 3's order, experts' all-to-alls: the same result as every rank and
    // transfer simulated, with fewer events, and the period a whole number of replicas.
    const json base = {{"model", {{"name", "llama3_8b"}, {"dtype", "bf16"}}},
                       {"batch_size", 1},
                       {"gradient_accumulation", 8},
                       {"iterations", 2},
                       {"device", {{"name", "H100"}, {"precision", "bf16"}}},
                       {"network", {{"topology", "rail_optimized"}, {"node", "dgx_h100"}, {"spines", 4}}}};
    struct Case {
        const char* name;
        json patch;
        std::uint32_t replica;  // ranks of the shift's unit: pipeline x context x tensor (x expert)
    };
    const Case cases[] = {
        {"tp8 pp2 dp2, distributed optimizer, overlap",
         {{"workers", 32},
          {"parallelism", {{"tensor", 8}, {"pipeline", 2}, {"sequence_parallel", true}}},
          {"sharding", {{"stage", 1}}},
          {"overlap", {{"wfbp", true}}}},
         16},
        {"tp8 cp2 pp2 dp2",
         {{"workers", 64},
          {"model", {{"name", "llama3_8b"}, {"dtype", "bf16"}, {"seq_len", 8192}}},
          {"parallelism", {{"tensor", 8}, {"context", 2}, {"pipeline", 2}}}},
         32},
        {"tp8 pp2 dp4 in Llama 3's order",
         {{"workers", 64}, {"parallelism", {{"tensor", 8}, {"pipeline", 2}, {"order", "tp-cp-pp-dp"}}}},
         16},
        {"pp4 dp8 gpipe", {{"workers", 32}, {"parallelism", {{"pipeline", 4}, {"schedule", "gpipe"}}}}, 4},
        {"qwen3 30b ep8 pp2 dp16",
         {{"workers", 32},
          {"model", {{"name", "qwen3_30b_a3b"}, {"dtype", "bf16"}}},
          {"parallelism", {{"pipeline", 2}, {"expert", 8}, {"expert_imbalance", 2}}},
          {"network", {{"topology", "rail_optimized"}, {"node", "dgx_h100"}, {"spines", 4}, {"routing", "dmodk"}}}},
         16},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        json j = base;
        j.merge_patch(c.patch);
        const Both b = run_both(j);
        check_same(b);
        REQUIRE(b.classes.flow_class_period > 0);
        CHECK(b.classes.flow_class_period % c.replica == 0);
        CHECK(b.classes.events < b.full.events);
        // Every worker's result is its representative's (the images ran what it ran).
        const auto& wc = b.classes.jobs[0].workers;
        const auto& wf = b.full.jobs[0].workers;
        REQUIRE(wc.size() == wf.size());
        for (std::size_t w = 0; w < wc.size(); ++w) {
            CHECK(std::abs(wc[w].idle_s - wf[w].idle_s) <= 1e-9);
            CHECK(wc[w].iterations == wf[w].iterations);
        }
    }
}
