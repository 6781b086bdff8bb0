// Physical topologies, routing and contention on them, with hand-derived answers.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/network.hpp"
#include "tests/support/support.hpp"
#include "topologies/builders.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

constexpr double kB = 1.25e9;  // 10 Gbit/s in bytes/s
const sim::Bandwidth k10G = sim::Bandwidth::bytes_per_s(kB);
const sim::Time kL = sim::Time::seconds(1e-6);

topo::Vertex host(const topo::Fabric& f, const std::string& name) {
    return *f.find(name);
}

// Starts one transfer of `bytes` per (src, dst) pair at time 0 (flow key = index) and returns the
// completion times.
std::vector<double> run_flows(const topo::Fabric& f, const std::vector<std::pair<std::string, std::string>>& pairs,
                              double bytes) {
    sim::Engine engine;
    sim::Network net(engine);
    f.install(net);
    std::vector<double> done(pairs.size(), -1);
    for (std::size_t i = 0; i < pairs.size(); ++i)
        net.start(f.route(host(f, pairs[i].first), host(f, pairs[i].second), i), sim::Bytes{bytes},
                  [&, i] { done[i] = engine.now().seconds(); });
    engine.run();
    return done;
}

}  // namespace

TEST_CASE("fat_tree: k-ary structure and path counts") {
    // k = 4: k^3/4 = 16 hosts, k pods x k switches + (k/2)^2 = 4 core = 20 switches, and
    // 16 host links + 16 edge-agg + 16 agg-core = 48 links. Shortest paths: same edge 1,
    // same pod other edge k/2 = 2, other pod (k/2)^2 = 4.
    const auto f = topo::build_fabric(topo::FatTreeSpec{4, k10G, kL});
    CHECK(f.hosts().size() == 16);
    CHECK(f.node_count() == 36);
    CHECK(f.link_count() == 48);
    CHECK(f.path_count(host(f, "h0"), host(f, "h1")) == 1);
    CHECK(f.path_count(host(f, "h0"), host(f, "h2")) == 2);
    CHECK(f.path_count(host(f, "h0"), host(f, "h4")) == 4);
    CHECK(f.route(host(f, "h0"), host(f, "h15")).size() == 6);
    // k = 8: 128 hosts, (k/2)^2 = 16 paths between pods.
    const auto g = topo::build_fabric(topo::FatTreeSpec{8, k10G, kL});
    CHECK(g.hosts().size() == 128);
    CHECK(g.path_count(host(g, "h0"), host(g, "h127")) == 16);
}

TEST_CASE("fat_tree: a shift permutation sees no slowdown under D-mod-k routing") {
    // Full bisection: every host i sends S to host i + 4 (the next pod) at once. D-mod-k picks
    // distinct up and down links for the flows of a shift, so each runs alone at B:
    // T = 6 hops x L + S/B, the time of a single flow.
    auto f = topo::build_fabric(topo::FatTreeSpec{4, k10G, kL});
    f.set_routing(topo::Routing::dmodk);
    std::vector<std::pair<std::string, std::string>> shift;
    for (int i = 0; i < 16; ++i) shift.emplace_back(fmt::format("h{}", i), fmt::format("h{}", (i + 4) % 16));
    const double S = 1e6;
    for (double t : run_flows(f, shift, S)) CHECK(t == ddlsim::testing::approx(6e-6 + S / kB).epsilon(1e-9));
    // So does a shift by 1 (mixing edge-local, pod-local and cross-pod flows).
    shift.clear();
    for (int i = 0; i < 16; ++i) shift.emplace_back(fmt::format("h{}", i), fmt::format("h{}", (i + 1) % 16));
    for (double t : run_flows(f, shift, S)) CHECK(t <= 6e-6 + S / kB * (1 + 1e-9));
}

TEST_CASE("fat_tree: per-flow ECMP spreads but may collide, never faster than the fabric allows") {
    // Under hash ECMP some of the 16 cross-pod flows share a link: no flow beats S/B, and the
    // slowest is at most 4x (at most k/2 = 2 flows meet on an up link from an edge switch, and on
    // a down link at most 2 flows... a bound of 4 leaves room for both).
    const auto f = topo::build_fabric(topo::FatTreeSpec{4, k10G, kL});
    std::vector<std::pair<std::string, std::string>> shift;
    for (int i = 0; i < 16; ++i) shift.emplace_back(fmt::format("h{}", i), fmt::format("h{}", (i + 4) % 16));
    const double S = 1e6;
    double slowest = 0;
    for (double t : run_flows(f, shift, S)) {
        CHECK(t >= 6e-6 + S / kB * (1 - 1e-9));
        slowest = std::max(slowest, t);
    }
    CHECK(slowest <= 6e-6 + 4 * S / kB * (1 + 1e-9));
}

TEST_CASE("leaf_spine: cross-rack flows get exactly their max-min share at 4:1") {
    // 2 leaves x 4 hosts of B, 1 spine, oversubscription 4: the uplink is 4B/(1 x 4) = B. The 4 hosts
    // of leaf 0 each send S to a host of leaf 1: they share leaf0->spine (B/4 each), 4 hops of L:
    // T = 4L + 4S/B. A flow inside leaf 0 meanwhile runs at B: 2L + S/B.
    const topo::LeafSpineSpec spec{2, 4, 1, 4.0, k10G, kL};
    CHECK(topo::leaf_uplink_bandwidth(spec).bytes_per_s() == ddlsim::testing::approx(kB));
    const auto f = topo::build_fabric(spec);
    const double S = 1e6;
    const auto t = run_flows(f, {{"h0", "h4"}, {"h1", "h5"}, {"h2", "h6"}, {"h3", "h7"}}, S);
    for (double x : t) CHECK(x == ddlsim::testing::approx(4e-6 + 4 * S / kB).epsilon(1e-9));
    // With 2 spines and the same oversubscription each uplink is B/2; two flows, routed by
    // destination (dmodk) onto different spines, each get B/2: 4L + 2S/B.
    auto g = topo::build_fabric(topo::LeafSpineSpec{2, 4, 2, 4.0, k10G, kL});
    g.set_routing(topo::Routing::dmodk);
    for (double x : run_flows(g, {{"h0", "h4"}, {"h1", "h5"}}, S))
        CHECK(x == ddlsim::testing::approx(4e-6 + 2 * S / kB).epsilon(1e-9));
}

TEST_CASE("leaf_spine: ECMP spreads distinct flows across spines") {
    // 64 distinct connections between two leaves of an 8-spine fabric: by a hash of the flow key
    // each picks a spine; all 8 are used and none carries more than twice its fair share (16).
    const auto f = topo::build_fabric(topo::LeafSpineSpec{2, 8, 8, 1.0, k10G, kL});
    std::map<std::string, int> per_spine;
    for (std::uint64_t key = 0; key < 64; ++key) {
        const auto& r = f.route(host(f, "h0"), host(f, "h8"), key);
        REQUIRE(r.size() == 4);
        per_spine[f.directed_link_name(r[1])]++;                 // leaf0 -> spine<j>
        CHECK(f.route(host(f, "h0"), host(f, "h8"), key) == r);  // a connection keeps its path
    }
    CHECK(per_spine.size() == 8);
    for (const auto& [link, n] : per_spine) CHECK(n <= 16);
}

TEST_CASE("ring and torus2d: direct-connect shortest paths") {
    // Ring of 8: h0 -> h3 is 3 hops one way, h0 -> h4 is 4 hops either way (2 shortest paths).
    const auto r = topo::build_fabric(topo::RingSpec{8, k10G, kL});
    CHECK(r.route(host(r, "h0"), host(r, "h3")).size() == 3);
    CHECK(r.route(host(r, "h0"), host(r, "h6")).size() == 2);
    CHECK(r.path_count(host(r, "h0"), host(r, "h4")) == 2);
    // 4 x 4 torus: 16 hosts, 32 links, every host degree 4; h0_0 -> h2_2 takes 4 hops and there
    // are C(4,2) x 2 x 2 = 24 shortest paths (2 ways round in each dimension, 6 interleavings).
    const auto t = topo::build_fabric(topo::Torus2dSpec{4, 4, k10G, kL});
    CHECK(t.hosts().size() == 16);
    CHECK(t.link_count() == 32);
    CHECK(t.route(host(t, "h0_0"), host(t, "h2_2")).size() == 4);
    CHECK(t.path_count(host(t, "h0_0"), host(t, "h2_2")) == 24);
    CHECK(t.route(host(t, "h0_0"), host(t, "h3_0")).size() == 1);  // wrap-around link
}

TEST_CASE("two_tier: parallel NICs serve their GPUs and add capacity") {
    // 2 nodes x 4 GPUs, 2 NIC links per node: GPU r uses NIC r * 2 / 4 on both sides (Fabric::nic_choice), under
    // either routing. n0g0 -> n1g0 (NIC 0 out, NIC 0 in) and n0g2 -> n1g3 (NIC 1, NIC 1) get disjoint NICs, so each
    // flow runs alone at B; with one NIC per node they share it at B/2; n0g0 -> n1g0 and n0g1 -> n1g1 share NIC 0.
    // Route: intra (L) + NIC (L) + NIC (L) + intra (L) = 4L; intra links are 10x faster.
    topo::TwoTierSpec spec{2, 4, k10G, kL, sim::Bandwidth::bytes_per_s(10 * kB), kL, 2, 0};
    const double S = 1e6;
    for (const auto routing : {topo::Routing::ecmp, topo::Routing::dmodk}) {
        auto f = topo::build_fabric(spec);
        f.set_routing(routing);
        for (double t : run_flows(f, {{"n0g0", "n1g0"}, {"n0g2", "n1g3"}}, S))
            CHECK(t == ddlsim::testing::approx(4e-6 + S / kB).epsilon(1e-9));
        for (double t : run_flows(f, {{"n0g0", "n1g0"}, {"n0g1", "n1g1"}}, S))
            CHECK(t == ddlsim::testing::approx(4e-6 + 2 * S / kB).epsilon(1e-9));
    }
    spec.nics_per_node = 1;
    const auto g = topo::build_fabric(spec);
    for (double t : run_flows(g, {{"n0g0", "n1g0"}, {"n0g2", "n1g3"}}, S))
        CHECK(t == ddlsim::testing::approx(4e-6 + 2 * S / kB).epsilon(1e-9));
}

TEST_CASE("topologies: validation at load") {
    CHECK_THROWS_AS((void)topo::build_fabric(topo::FatTreeSpec{3, k10G, kL}), std::invalid_argument);
    topo::CustomSpec c;
    c.nodes = {{"a", topo::NodeKind::host}, {"b", topo::NodeKind::host}, {"s", topo::NodeKind::switch_}};
    c.links = {{"a", "s", k10G, kL}};
    CHECK_THROWS_WITH_AS((void)topo::build_fabric(c), doctest::Contains("not connected"), std::invalid_argument);
    c.links.push_back({"b", "s", sim::Bandwidth::bytes_per_s(0.0), kL});
    CHECK_THROWS_AS((void)topo::build_fabric(c), std::invalid_argument);
}

TEST_CASE("jobs: two interleaved ring jobs share the rack uplinks fairly") {
    // Racks A and B (hosts on switches tA, tB at 100 Gbit/s), each rack switch on one 10 Gbit/s
    // uplink U to a core switch. Job 1 rings a0, b0, a1, b1 and job 2 rings a2, b2, a3, b3: every
    // hop crosses racks, two per direction per job. In each of the 2(n-1) = 6 steps, 4 chunks of
    // c = S/4 go A->B through tA->core (and 4 B->A through tB->core), sharing U: U/4 each.
    // Step = Λ + 4c/U with Λ = 2 L_host + 2 L_up; T = 6 (Λ + S/U). Alone, a job would see U/2:
    // T = 6 (Λ + S/(2U)).
    json custom = json::parse(R"({
      "topology": "custom", "transport": "ideal",
      "nodes": [{"name": "core", "kind": "switch"}, {"name": "tA", "kind": "switch"}, {"name": "tB", "kind": "switch"},
                {"name": "a0", "kind": "host"}, {"name": "a1", "kind": "host"}, {"name": "a2", "kind": "host"},
                {"name": "a3", "kind": "host"}, {"name": "b0", "kind": "host"}, {"name": "b1", "kind": "host"},
                {"name": "b2", "kind": "host"}, {"name": "b3", "kind": "host"}],
      "links": [{"from": "tA", "to": "core", "bandwidth": "10Gbps", "latency": "3us"},
                {"from": "tB", "to": "core", "bandwidth": "10Gbps", "latency": "3us"}]})");
    for (const char* h : {"a0", "a1", "a2", "a3"})
        custom["links"].push_back({{"from", h}, {"to", "tA"}, {"bandwidth", "100Gbps"}, {"latency", "1us"}});
    for (const char* h : {"b0", "b1", "b2", "b3"})
        custom["links"].push_back({{"from", h}, {"to", "tB"}, {"bandwidth", "100Gbps"}, {"latency", "1us"}});
    const double S = 40e6, U = 1.25e9, lambda = 2e-6 + 6e-6;
    const json layer = {{"name", "g"}, {"params", 10'000'000}, {"fwd_time", 0}, {"bwd_time", 0}, {"update_time", 0}};
    auto job = [&](const char* name, std::vector<std::string> hosts) {
        return json{{"name", name},    {"workers", 4},     {"model", {{"layers", {layer}}}},
                    {"batch_size", 1}, {"device", "V100"}, {"placement", hosts}};
    };
    json two{{"iterations", 3},
             {"network", custom},
             {"jobs", {job("first", {"a0", "b0", "a1", "b1"}), job("second", {"a2", "b2", "a3", "b3"})}}};
    const auto s = scenario::load_scenario(two);
    const auto r = scenario::run_scenario(s);
    REQUIRE(r.jobs.size() == 2);
    for (const auto& j : r.jobs)
        CHECK(j.iteration_time_s == ddlsim::testing::approx(6 * (lambda + S / U)).epsilon(1e-9));
    const json out = scenario::result_json(s, r);
    CHECK(out["jobs"].size() == 2);
    CHECK(out["jobs"][1]["scenario"]["name"] == "second");
    // Each uplink carries 2 jobs x 2 hops x 6 steps x S/4 = 6S per iteration and idles only
    // during the latency of each step: utilisation (S/U) / (Λ + S/U).
    CHECK(out["links"]["busiest"][0]["utilization"].get<double>() ==
          ddlsim::testing::approx((S / U) / (lambda + S / U)).epsilon(1e-9));

    json alone = two;
    alone["jobs"].erase(1);
    CHECK(scenario::run_scenario(scenario::load_scenario(alone)).jobs[0].iteration_time_s ==
          ddlsim::testing::approx(6 * (lambda + S / (2 * U))).epsilon(1e-9));
}

TEST_CASE("jobs: default placement gives each job the next unused hosts") {
    const json j{
        {"network", {{"topology", "star"}, {"bandwidth", "10Gbps"}, {"latency", "1us"}, {"transport", "ideal"}}},
        {"jobs",
         {{{"workers", 2}, {"model", "resnet50"}, {"batch_size", 8}, {"device", "V100"}},
          {{"workers", 3},
           {"model", "resnet50"},
           {"batch_size", 8},
           {"device", "V100"},
           {"architecture", {{"kind", "ps"}, {"servers", 1}}}}}}};
    const auto s = scenario::load_scenario(j);
    CHECK(s.jobs[0].placement == std::vector<std::string>{"h0", "h1"});
    CHECK(s.jobs[1].placement == std::vector<std::string>{"h2", "h3", "h4"});
    CHECK(s.jobs[1].server_placement == std::vector<std::string>{"h5"});
    CHECK(s.jobs[0].name == "job0");
}

namespace {
json star_base() {
    return testing::star_scenario({.batch_size = 8, .latency = "1us", .transport = "ideal"});
}
std::string error_of(const json& j, const std::string& base_dir = ".") {
    try {
        (void)scenario::load_scenario(j, base_dir);
    } catch (const scenario::ScenarioError& e) {
        return e.path() + ": " + e.what();
    }
    return "no error";
}
}  // namespace

TEST_CASE("loader: topology keys, sizes and routing") {
    json j = star_base();
    j["network"] = {
        {"topology", "fat_tree"}, {"k", 4}, {"bandwidth", "10Gbps"}, {"latency", "1us"}, {"routing", "dmodk"}};
    const auto s = scenario::load_scenario(j);
    CHECK(s.routing == topo::Routing::dmodk);
    CHECK(std::get<topo::FatTreeSpec>(s.topology).k == 4);
    j["network"]["k"] = 5;
    CHECK(error_of(j).rfind("$.network.k: expected an even k", 0) == 0);
    j["network"]["k"] = 2;  // 2 hosts < 4 workers
    CHECK(error_of(j).find("the network has 2 hosts but 4 workers") != std::string::npos);
    j["network"] = {
        {"topology", "leaf_spine"}, {"hosts_per_leaf", 3}, {"spines", 2}, {"bandwidth", "10Gbps"}, {"latency", "1us"}};
    CHECK(std::get<topo::LeafSpineSpec>(scenario::load_scenario(j).topology).leaves == 2);  // ceil(4 / 3)
    j["network"]["oversubscription"] = 0;
    CHECK(error_of(j).rfind("$.network.oversubscription: expected a number in (0,", 0) == 0);
    j["network"] = {{"topology", "torus2d"}, {"dims", {2, 3}}, {"bandwidth", "10Gbps"}, {"latency", "1us"}};
    CHECK(scenario::load_scenario(j).jobs[0].placement[3] == "h1_1");
    j["network"]["dims"] = {2};
    CHECK(error_of(j).rfind("$.network.dims: expected at least 2", 0) == 0);
    j["network"] = {{"topology", "ring"}, {"bandwidth", "10Gbps"}, {"latency", "1us"}, {"k", 4}};
    CHECK(error_of(j).rfind("$.network.k: not used by topology \"ring\"", 0) == 0);
    j["network"] = {{"topology", "star"}, {"bandwidth", "10Gbps"}, {"latency", "1us"}, {"routing", "spray"}};
    CHECK(error_of(j).rfind("$.network.routing: expected one of \"ecmp\", \"dmodk\"", 0) == 0);
}

TEST_CASE("loader: a custom topology from its own file") {
    const std::string dir = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/examples";
    json j = star_base();
    j["network"] = {{"topology", "custom"}, {"file", "../topologies/two_racks.json"}};
    const auto s = scenario::load_scenario(j, dir);
    CHECK(std::get<topo::CustomSpec>(s.topology).nodes.size() == 19);
    CHECK(s.jobs[0].placement == std::vector<std::string>{"a0", "a1", "a2", "a3"});
    j["network"]["file"] = "../topologies/none.json";
    CHECK(error_of(j, dir).find("$.network.file: in topology file") == 0);
    CHECK(error_of(j, dir).find("no such file") != std::string::npos);
    j["network"]["nodes"] = json::array();
    CHECK(error_of(j, dir).find("either \"nodes\" and \"links\", or a topology \"file\"") != std::string::npos);
    // An error inside the file names the file and the path within it.
    const std::string bad = (std::filesystem::temp_directory_path() / "ddlsim_bad_topology.json").string();
    {
        std::ofstream out(bad);
        out << R"({"nodes": [{"name": "a", "kind": "host"}], "links": [{"from": "a", "to": "a", "bandwidth": "1Gbps", "latency": "1us", "colour": "red"}]})";
    }
    json k = star_base();
    k["network"] = {{"topology", "custom"}, {"file", bad}};
    const std::string e = error_of(k);
    CHECK(e.find("$.network.file: in topology file " + bad + ": $.links[0].colour: unknown key") == 0);
    std::filesystem::remove(bad);
}
