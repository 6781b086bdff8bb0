// Algorithm "auto" (topologies/allreduce_auto.hpp): per message the fastest of ring, double binary tree and, on
// multi-GPU nodes, the hierarchical rails, each predicted by running one round alone on the fabric. Checked here by
// running the simulator: auto is never slower than the better of ring and double_tree (2 % slack) over message
// sizes 1 KB .. 1 GB and 2 .. 128 workers on one-node and multi-node fabrics; the ring/tree crossover on a star
// lies where the alpha-beta formulas put it; the loader accepts "auto", echoes it and the result names the picks.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/collective_harness.hpp"
#include "topologies/allreduce_algorithms.hpp"
#include "topologies/allreduce_auto.hpp"
#include "topologies/allreduce_primitives.hpp"

using namespace ddlsim;

namespace {

constexpr double kB = 1.25e9;  // 10 Gbps in bytes/s
constexpr double kL = 5e-6;    // per-link latency, s: a host-to-host route on a star has alpha = 2L

/// A fabric, its hosts in worker order and each worker's node.
struct Placed {
    topo::Fabric fabric;
    std::vector<topo::Vertex> hosts;
    std::vector<std::uint32_t> node_of;
};

Placed place(topo::Fabric fabric, std::uint32_t n) {
    Placed p{std::move(fabric), {}, {}};
    for (topo::Vertex h : p.fabric.hosts()) {
        if (p.hosts.size() == n) break;
        p.hosts.push_back(h);
        p.node_of.push_back(p.fabric.node_of(h));
    }
    return p;
}

/// Every worker its own host on a star (one rank per node, as NCCL's tree assumes).
Placed star(std::uint32_t n) {
    return place(topo::build_fabric(topo::StarSpec{n, sim::Bandwidth::bytes_per_s(kB), sim::Time::seconds(kL)}), n);
}

/// `nodes` nodes of `g` GPUs on NVLink-like links (300 GB/s, 0.5 us), `nics` 10 Gbps NICs per node.
Placed two_tier(std::uint32_t nodes, std::uint32_t g, std::uint32_t nics = 1) {
    return place(
        topo::build_fabric(topo::TwoTierSpec{nodes, g, sim::Bandwidth::bytes_per_s(kB), sim::Time::seconds(kL),
                                             sim::Bandwidth::bytes_per_s(300e9), sim::Time::seconds(5e-7), nics, 0}),
        nodes * g);
}

double run(const topo::Collective& c, const Placed& p) {
    return testing::run_round(c, p.fabric, p.hosts).makespan;
}

/// The context of n workers on `p`, its round_time the simulated round (what models/ gives a job).
topo::CollectiveContext context(const Placed& p, double bytes) {
    auto ctx = testing::context(static_cast<std::uint32_t>(p.hosts.size()), bytes);
    ctx.node_of = p.node_of;
    ctx.round_time = [&p](const topo::Collective& c) { return sim::Time::seconds(run(c, p)); };
    return ctx;
}

double simulated(topo::AllreduceAlgorithm a, const Placed& p, double bytes) {
    topo::ArchitectureSpec spec;
    spec.algorithm = a;
    return run(*topo::make_allreduce(spec, context(p, bytes)), p);
}

topo::AllreduceAlgorithm pick(const Placed& p, double bytes) {
    topo::ArchitectureSpec spec;
    spec.algorithm = topo::AllreduceAlgorithm::automatic;
    return topo::pick_allreduce(spec, context(p, bytes));
}

}  // namespace

TEST_CASE("auto: candidates are ring and double_tree, plus hierarchical on equal multi-GPU nodes") {
    using A = topo::AllreduceAlgorithm;
    CHECK(topo::auto_candidates(context(star(8), 1e6)) == std::vector<A>{A::ring, A::double_tree});
    CHECK(topo::auto_candidates(context(two_tier(1, 8), 1e6)) == std::vector<A>{A::ring, A::double_tree});
    CHECK(topo::auto_candidates(context(two_tier(2, 4), 1e6)) ==
          std::vector<A>{A::ring, A::double_tree, A::hierarchical});
    // One worker: nothing moves, the ring (no transfer at all) without asking for a prediction.
    auto one = testing::context(1, 1e6);
    topo::ArchitectureSpec spec;
    spec.algorithm = A::automatic;
    CHECK(topo::pick_allreduce(spec, one) == A::ring);
    // Without a way to predict a round auto refuses rather than guess.
    CHECK_THROWS_AS((void)topo::pick_allreduce(spec, testing::context(4, 1e6)), std::invalid_argument);
    // "auto" is a name of the algorithm table, so the loader and the schema offer it.
    CHECK(sim::enum_name(A::automatic) == "auto");
}

TEST_CASE("auto: never slower than the better of ring and double_tree by more than 2 %") {
    // Sizes 1 KB .. 1 GB in factors of 32; 2 .. 128 workers as one rank per node (star), all on one node, and
    // nodes of 8 GPUs (the last also with 4 NICs per node, which only the hierarchical rails spread over).
    std::vector<double> sizes;
    for (double s = 1e3; s <= 1.1e9; s *= 32) sizes.push_back(s);
    sizes.push_back(1e9);
    struct Case {
        const char* fabric;
        Placed placed;
    };
    std::vector<Case> cases;
    for (std::uint32_t n : {2U, 8U, 32U, 128U}) cases.push_back({"star", star(n)});
    for (std::uint32_t n : {2U, 8U, 32U}) cases.push_back({"one node", two_tier(1, n)});
    for (std::uint32_t nodes : {2U, 4U, 16U}) cases.push_back({"nodes of 8", two_tier(nodes, 8)});
    cases.push_back({"nodes of 8, 4 NICs", two_tier(4, 8, 4)});
    for (const Case& c : cases)
        for (double s : sizes) {
            const std::string fabric = c.fabric;
            const std::size_t workers = c.placed.hosts.size();
            CAPTURE(fabric);
            CAPTURE(workers);
            CAPTURE(s);
            const double ring = simulated(topo::AllreduceAlgorithm::ring, c.placed, s);
            const double tree = simulated(topo::AllreduceAlgorithm::double_tree, c.placed, s);
            const double chosen = simulated(topo::AllreduceAlgorithm::automatic, c.placed, s);
            CAPTURE(ring);
            CAPTURE(tree);
            CHECK(chosen <= 1.02 * std::min(ring, tree));
        }
}

TEST_CASE("auto on a star: small messages on many workers pick the tree, large ones the ring") {
    // Star, one host per worker, alpha = 2L, B per link. Ring (allreduce_algorithms.hpp):
    //   T_ring = 2(n-1)(alpha + S/(nB)).
    // Double tree, k = 8 segments per tree, both trees of height H: latency-bound (B -> inf, checked in
    // test_allreduce_algorithms) T_tree -> (k - 1 + 2H) alpha. Bandwidth: for n >= 4 some rank is interior in one
    // tree (sends S/2 up and S/2 to each of two children) and a leaf in the other (sends S/2 up): 2S through its
    // uplink, so T_tree >= 2S/B.
    // Small S: the ring pays 2(n-1) alpha against the tree's (7 + 2H) alpha, so for 2(n-1) > 7 + 2H the tree wins.
    // Large S: T_ring < 2S/B <= T_tree once 2(n-1) alpha < 2S/(nB), i.e. S > n(n-1) alpha B: the crossover lies
    // below n(n-1) alpha B (n = 64, alpha = 10 us, 10 Gbps: 50.4 MB).
    const std::uint32_t n = 64;
    const Placed p = star(n);
    const double alpha = 2 * kL;
    const double H = topo::tree_height(topo::nccl_btree_parents(n));
    REQUIRE(2.0 * (n - 1) > 7.0 + 2.0 * H);
    CHECK(pick(p, 1e3) == topo::AllreduceAlgorithm::double_tree);
    // At 1 KB the tree is latency-bound: within 5 % of (7 + 2H) alpha, and far below the ring's 2(n-1) alpha.
    CHECK(simulated(topo::AllreduceAlgorithm::double_tree, p, 1e3) ==
          ddlsim::testing::approx((7.0 + 2.0 * H) * alpha).epsilon(0.05));
    const double bound = n * (n - 1.0) * alpha * kB;
    CHECK(pick(p, bound) == topo::AllreduceAlgorithm::ring);
    CHECK(pick(p, 1e9) == topo::AllreduceAlgorithm::ring);
    // The pick switches once: tree below the crossover, ring above, on a sweep in factors of two.
    int switches = 0;
    topo::AllreduceAlgorithm last = pick(p, 1e3);
    for (double s = 2e3; s <= bound; s *= 2) {
        const topo::AllreduceAlgorithm now = pick(p, s);
        if (now != last) ++switches;
        last = now;
    }
    CHECK(switches == 1);
    CHECK(last == topo::AllreduceAlgorithm::ring);
}

TEST_CASE("auto: with several NICs per node the pick spreads inter-node bytes over them") {
    // 4 nodes of 8 GPUs, 1 GB. The flat ring crosses each node boundary with one flow per direction, so it uses
    // one NIC whatever the count. The hierarchical rails send 8 flows per node (one per GPU index), which ECMP
    // spreads over the node's NICs: their bandwidth term 2(N-1)S/(NB) shrinks towards 1/k of it with k NICs.
    // auto picks the rails on both fabrics, and with 4 NICs it is at least 1.6 times faster than with one (the
    // ECMP hash of 8 flows over 4 NICs leaves some NIC with more than 2).
    const Placed one = two_tier(4, 8, 1), four = two_tier(4, 8, 4);
    CHECK(pick(one, 1e9) == topo::AllreduceAlgorithm::hierarchical);
    CHECK(pick(four, 1e9) == topo::AllreduceAlgorithm::hierarchical);
    const double t1 = simulated(topo::AllreduceAlgorithm::automatic, one, 1e9);
    const double t4 = simulated(topo::AllreduceAlgorithm::automatic, four, 1e9);
    CHECK(t4 * 1.6 < t1);
    // The ring's time does not change with the NIC count (within 1 %).
    CHECK(simulated(topo::AllreduceAlgorithm::ring, four, 1e9) ==
          ddlsim::testing::approx(simulated(topo::AllreduceAlgorithm::ring, one, 1e9)).epsilon(0.01));
}

TEST_CASE("auto: round_size bounds every candidate") {
    topo::ArchitectureSpec spec;
    spec.algorithm = topo::AllreduceAlgorithm::automatic;
    topo::RoundShape shape;
    shape.workers = 16;
    shape.bytes = sim::Bytes{4e6};
    const auto size = topo::round_size(spec, shape);
    for (topo::AllreduceAlgorithm a : topo::k_auto_pool) {
        topo::ArchitectureSpec one;
        one.algorithm = a;
        CHECK(size.transfers >= topo::round_size(one, shape).transfers);
    }
    CHECK(size.explicit_dag);
}

TEST_CASE("auto: the loader accepts it, the resolved scenario echoes it, the result names the picks") {
    const nlohmann::json j{{"workers", 16},
                           {"model", "resnet50"},
                           {"batch_size", 32},
                           {"iterations", 2},
                           {"device", "V100"},
                           {"overlap", {{"fusion", "buffer"}, {"bucket_size", "25MB"}}},
                           {"network",
                            {{"topology", "two_tier"},
                             {"gpus_per_node", 8},
                             {"bandwidth", "100Gbps"},
                             {"latency", "2us"},
                             {"intra_bandwidth", "150GBps"},
                             {"intra_latency", "1us"}}},
                           {"architecture", {{"kind", "allreduce"}, {"algorithm", "auto"}}}};
    const auto s = scenario::load_scenario(j);
    REQUIRE(s.jobs.at(0).architecture.algorithm == topo::AllreduceAlgorithm::automatic);
    const auto r = scenario::result_json(s, scenario::run_scenario(s));
    CHECK(r.at("resolved_scenario").at("architecture").at("algorithm") == "auto");
    REQUIRE(r.contains("algorithm_picks"));
    const auto& picks = r.at("algorithm_picks");
    REQUIRE(!picks.empty());
    double messages = 0;
    for (const auto& p : picks) {
        CHECK(p.at("min_bytes").get<double>() <= p.at("max_bytes").get<double>());
        CHECK(p.at("algorithm").get<std::string>() != "auto");
        messages += p.at("messages").get<double>();
    }
    // Every message's all-reduce is one collective with one pick.
    CHECK(messages == ddlsim::testing::approx(r.at("collectives_per_iteration").get<double>()));
    // Top-k's payloads are all-gathered, which NCCL runs as a ring: no all-reduce, so nothing to pick.
    nlohmann::json topk = j;
    topk["compression"] = {{"kind", "topk"}, {"density", 0.01}};
    const auto st = scenario::load_scenario(topk);
    const auto rt = scenario::result_json(st, scenario::run_scenario(st));
    CHECK(!rt.contains("algorithm_picks"));
    nlohmann::json ring = topk;
    ring["architecture"]["algorithm"] = "ring";
    const auto sr = scenario::load_scenario(ring);
    CHECK(scenario::result_json(sr, scenario::run_scenario(sr)).at("iteration_time_s") == rt.at("iteration_time_s"));
    // A parameter server has no algorithm: the loader refuses the key (exit 2 at the CLI), naming its path.
    nlohmann::json ps = j;
    ps["architecture"] = {{"kind", "ps"}, {"algorithm", "auto"}};
    std::string path;
    try {
        (void)scenario::load_scenario(ps);
    } catch (const scenario::ScenarioError& e) {
        path = e.path();
    }
    CHECK(path == "$.architecture.algorithm");
}
