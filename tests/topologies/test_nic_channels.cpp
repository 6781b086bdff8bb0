// A plain node's NICs (two_tier nics_per_node): GPU r of m uses NIC r k / m whatever the connection, and rings and
// NCCL's trees run one channel per NIC, so an all-reduce over k NICs takes 1/k of the one-NIC time, derived by hand.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "sim/transfer_dag.hpp"
#include "tests/support/scenario_harness.hpp"
#include "tests/support/support.hpp"
#include "topologies/allreduce_algorithms.hpp"
#include "topologies/builders.hpp"
#include "topologies/sharded_collectives.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

topo::Fabric plain_nodes(std::size_t nodes, std::size_t gpus, std::size_t nics) {
    topo::TwoTierSpec s;
    s.nodes = nodes;
    s.gpus_per_node = gpus;
    s.nics_per_node = nics;
    s.bandwidth = sim::Bandwidth::bytes_per_s(25e9);
    s.latency = sim::Time::zero();
    s.intra_bandwidth = sim::Bandwidth::bytes_per_s(300e9);
    s.intra_latency = sim::Time::zero();
    return topo::build_fabric(s);
}

// The NIC link index (0..k-1) within node `node` of fabric link `id`: the builder adds a node's k NIC links, then its
// m GPU links, node after node.
std::size_t nic_of(std::uint32_t directed, std::size_t node, std::size_t gpus, std::size_t nics) {
    return directed / 2 - node * (gpus + nics);
}

// A bare fp32 ring all-reduce of `bytes` on 2 plain nodes of 8 GPUs with `nics` NIC links of 25 GB/s, no latency, an
// ideal transport: only bandwidth counts.
json ring_on_plain_nodes(int nics, double bytes) {
    return {{"workers", 16},
            {"batch_size", 1},
            {"iterations", 2},
            {"model", testing::one_layer_model(bytes)},
            {"device", {{"name", "A100"}, {"precision", "fp32"}}},
            {"network",
             {{"topology", "two_tier"},
              {"gpus_per_node", 8},
              {"nics_per_node", nics},
              {"intra_bandwidth", "300GBps"},
              {"bandwidth", "25GBps"},
              {"latency", "0s"},
              {"intra_latency", "0s"},
              {"transport", "ideal"},
              {"intra_transport", "ideal"}}},
            {"architecture", {{"kind", "allreduce"}, {"algorithm", "ring"}}}};
}

}  // namespace

TEST_CASE("a plain node's NICs: GPU r of m leaves and enters through NIC r k / m, whatever the connection") {
    for (const std::size_t k : {2U, 4U, 8U}) {
        CAPTURE(k);
        constexpr std::size_t m = 8;
        const topo::Fabric f = plain_nodes(2, m, k);
        std::vector<std::size_t> per_nic(k, 0);
        for (std::size_t r = 0; r < m; ++r) {
            const topo::Vertex a = *f.find("n0g" + std::to_string(r));
            const topo::Vertex b = *f.find("n1g" + std::to_string(r));
            const sim::Route& route = f.route(a, b, 0);
            REQUIRE(route.size() == 4);  // GPU -> node switch -> top switch -> node switch -> GPU
            CHECK(nic_of(route[1], 0, m, k) == r * k / m);
            CHECK(nic_of(route[2], 1, m, k) == r * k / m);
            ++per_nic[nic_of(route[1], 0, m, k)];
            for (std::uint64_t key = 1; key < 32; ++key) CHECK(f.route(a, b, key) == route);
            // To another GPU of the peer node: leaves by its own NIC, enters by the peer's.
            const sim::Route& across = f.route(a, *f.find("n1g" + std::to_string((r + 3) % m)), 7);
            CHECK(nic_of(across[1], 0, m, k) == r * k / m);
            CHECK(nic_of(across[2], 1, m, k) == (r + 3) % m * k / m);
        }
        for (std::size_t n : per_nic) CHECK(n == m / k);
    }
    // Fewer GPUs than NICs: no NIC belongs to a GPU, so connections are hashed over them as before.
    const topo::Fabric f = plain_nodes(2, 2, 4);
    std::set<std::size_t> used;
    for (std::uint64_t key = 0; key < 32; ++key)
        used.insert(nic_of(f.route(*f.find("n0g0"), *f.find("n1g0"), key)[1], 0, 2, 4));
    CHECK(used.size() >= 2);
}

TEST_CASE("ring channels: c rings rotated by m/c enter and leave every node through c distinct NICs") {
    std::vector<std::uint32_t> group, node_of;
    for (std::uint32_t w = 0; w < 24; ++w) {
        group.push_back(w);
        node_of.push_back(w / 8);
    }
    const auto rings = topo::ring_channels({group}, node_of, 4);
    REQUIRE(rings.size() == 4);
    std::set<std::uint32_t> entries, exits;
    for (std::size_t i = 0; i < rings.size(); ++i) {
        const auto& ring = rings[i].at(0);
        REQUIRE(ring.size() == 24);
        CHECK(ring[0] == 2 * i);              // node 0 entered through GPU i m / c
        entries.insert(ring[8] % 8 * 4 / 8);  // node 1's first GPU, its NIC
        exits.insert(ring[7] % 8 * 4 / 8);    // node 0's last GPU, its NIC
        CHECK(std::set<std::uint32_t>(ring.begin(), ring.end()).size() == 24);
    }
    CHECK(entries.size() == 4);
    CHECK(exits.size() == 4);
    CHECK(topo::ring_channels({group}, node_of, 3).size() == 8);  // 3 does not divide 8: a ring per GPU
    CHECK(topo::ring_channels({group}, node_of, 1).size() == 1);
}

TEST_CASE("a ring all-reduce over k NICs of a plain node: 2 (n-1) S / (n k B), k channels of one NIC each") {
    constexpr double S = 64e6;
    constexpr double n = 16.0;
    constexpr double B = 25e9;
    double bytes_between = -1.0;
    for (const int k : {1, 2, 4, 8}) {
        CAPTURE(k);
        const models::JobResult r = testing::run_first_job(ring_on_plain_nodes(k, S));
        // Each step a channel's exit GPU sends S / (k n) alone on its NIC; its other flows share the GPU's 300 GB/s
        // link (k of them at most, 37.5 GB/s each at k = 8, above the NIC's 25): the NIC bounds every step.
        CHECK(r.iteration_time_s == ddlsim::testing::approx(2.0 * (n - 1.0) * S / (n * k * B)).epsilon(1e-9));
        // Each of the k channels crosses both node boundaries once per step: 4 (n-1)/n S between machines, any k.
        CHECK(r.machine_bytes_per_iteration == ddlsim::testing::approx(4.0 * (n - 1.0) / n * S).epsilon(1e-12));
        if (bytes_between >= 0.0)
            CHECK(r.machine_bytes_per_iteration == ddlsim::testing::approx(bytes_between).epsilon(1e-12));
        bytes_between = r.machine_bytes_per_iteration;
    }
}

TEST_CASE(
    "NCCL's trees on nodes: per channel a chain in each node, its head (worker c m / C) in the trees among nodes") {
    // 3 nodes of 4 workers, node a = workers 4a .. 4a+3; C = 2 channels, both trees (NCCL's double tree).
    constexpr std::uint32_t N = 3, m = 4, C = 2;
    std::vector<std::uint32_t> node_of;
    for (std::uint32_t w = 0; w < N * m; ++w) node_of.push_back(w / m);
    const auto nodes = topo::nodes_of(node_of, N * m);
    REQUIRE(nodes.size() == N);
    constexpr double S = 96e6;
    for (const std::uint32_t trees : {1U, 2U}) {
        CAPTURE(trees);
        const sim::Plan plan = topo::node_tree_allreduce_plan(nodes, N * m, C, trees, sim::Bytes(S), sim::Bytes(0.0));
        double across = 0.0, within = 0.0;
        std::set<std::uint32_t> heads;
        for (std::size_t s = 0; s < plan.size(); ++s) {
            const sim::PlanStep& st = plan.step(s);
            if (st.src == st.dst) continue;
            if (node_of[st.src] == node_of[st.dst]) {
                within += st.bytes.value();
                // Chain hops only: neighbours in the channel's rotated order.
                const std::uint32_t a = st.src % m, b = st.dst % m;
                CHECK(((a + 1) % m == b || (b + 1) % m == a));
                continue;
            }
            across += st.bytes.value();
            // Between nodes only the heads talk: worker c m / C of a node, in the same channel (same local rank).
            CHECK(st.src % m == st.dst % m);
            CHECK(st.src % (m / C) == 0);
            heads.insert(st.src % m);
        }
        CHECK(heads == std::set<std::uint32_t>{0, m / C});
        // Every tree (C x trees of them, S / (C trees) each) sends each non-root node's sum up and its result down:
        // 2 (N - 1) S between nodes whatever the number of trees and channels.
        CHECK(across == ddlsim::testing::approx(2.0 * (N - 1) * S).epsilon(1e-12));
        // And inside each node a chain of m - 1 hops, up and down: 2 N (m - 1) S.
        CHECK(within == ddlsim::testing::approx(2.0 * N * (m - 1) * S).epsilon(1e-12));
    }
}

TEST_CASE("NCCL's trees over k NICs of a plain node: a NIC per channel, S / (k B) per direction, 2 (N-1) S between") {
    // Two nodes of 8 GPUs, NICs of B = 25 GB/s, NVLink-class links 100x faster, no latency, ideal transport.
    // Double tree: per channel, node 1 is tree 0's child and tree 1's root, so each direction of channel c's NIC
    // carries one tree's up-pass and the other's down-pass, S / (2k) each: S / k, at least S / (k B) seconds. The
    // pipeline of s segments per tree adds at most the fill of one segment per hop that waits on it.
    constexpr double S = 64e6;
    constexpr double B = 25e9;
    constexpr double segments = 64.0;
    for (const char* algorithm : {"double_tree", "tree"}) {
        for (const int k : {1, 2, 4, 8}) {
            CAPTURE(algorithm);
            CAPTURE(k);
            json sc = ring_on_plain_nodes(k, S);
            sc["network"]["intra_bandwidth"] = "2500GBps";
            const double trees = std::string(algorithm) == "double_tree" ? 2.0 : 1.0;
            sc["architecture"] = {{"kind", "allreduce"},
                                  {"algorithm", algorithm},
                                  {"segment_size", fmt::format("{}B", S / (k * trees) / segments)}};
            const models::JobResult r = testing::run_first_job(sc);
            // Single tree: node 1 sends S / k up and receives S / k down on each of k NICs, the two directions at once.
            const double bound = S / (k * B);
            CHECK(r.iteration_time_s >= bound * (1.0 - 1e-9));
            CHECK(r.iteration_time_s <= bound * (1.0 + 4.0 / segments));
            CHECK(r.machine_bytes_per_iteration == ddlsim::testing::approx(2.0 * S).epsilon(1e-9));
        }
    }
}

TEST_CASE("a ring cut into segments runs the same channels: 2 (n-1) S / (n k B) over k NICs") {
    constexpr double S = 64e6, n = 16.0, B = 25e9;
    for (const int k : {1, 4}) {
        CAPTURE(k);
        json sc = ring_on_plain_nodes(k, S);
        sc["architecture"]["segment_size"] = "100000B";
        const models::JobResult r = testing::run_first_job(sc);
        CHECK(r.iteration_time_s == ddlsim::testing::approx(2.0 * (n - 1.0) * S / (n * k * B)).epsilon(1e-6));
    }
}
