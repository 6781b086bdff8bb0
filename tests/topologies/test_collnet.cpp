// InfiniBand SHARP (algorithm collnet, topologies/in_network.*): its round derived by hand on idle rails, its closed
// form, its bytes between machines against the hierarchical all-reduce, its network-bound time against the
// hierarchical one's, auto's use of it, which switch each GPU's rail reaches, and the refusals at the key.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/support/collective_harness.hpp"
#include "tests/support/scenario_harness.hpp"
#include "tests/support/support.hpp"
#include "topologies/allreduce_algorithms.hpp"
#include "topologies/builders.hpp"
#include "topologies/in_network.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

constexpr double kBi = 200e9;  // bytes/s of a GPU's link to its node switch
constexpr double kBn = 25e9;   // bytes/s of a GPU's own link to its rail's switch
constexpr double kLi = 1e-6;   // latency of an intra-node link
constexpr double kLn = 3e-6;   // latency of a rail link

// m nodes of g GPUs: GPU j of node a ("a.j") on node switch "n<a>" and on rail switch "r<j>", links of latency
// li and ln. Endpoints: the workers node by node, then the g rail switches.
struct Rails {
    topo::Fabric fabric;
    std::vector<topo::Vertex> hosts;
    std::vector<std::uint32_t> node_of;
};
Rails rails(std::uint32_t m, std::uint32_t g, double li = kLi, double ln = kLn) {
    Rails r;
    for (std::uint32_t j = 0; j < g; ++j) r.fabric.add_node("r" + std::to_string(j), topo::NodeKind::switch_);
    for (std::uint32_t a = 0; a < m; ++a) {
        const std::string node = "n" + std::to_string(a);
        r.fabric.add_node(node, topo::NodeKind::switch_);
        for (std::uint32_t j = 0; j < g; ++j) {
            const std::string gpu = std::to_string(a) + "." + std::to_string(j);
            const topo::Vertex v = r.fabric.add_node(gpu, topo::NodeKind::host);
            r.fabric.set_node(v, a);
            r.fabric.set_transit(v, false);
            r.fabric.add_link(gpu, node, sim::Bandwidth::bytes_per_s(kBi), sim::Time::seconds(li));
            r.fabric.add_link(gpu, "r" + std::to_string(j), sim::Bandwidth::bytes_per_s(kBn), sim::Time::seconds(ln));
            r.hosts.push_back(v);
            r.node_of.push_back(a);
        }
    }
    for (std::uint32_t j = 0; j < g; ++j) r.hosts.push_back(*r.fabric.find("r" + std::to_string(j)));
    return r;
}

// A bare fp32 all-reduce of `bytes` on `nodes` rail-optimized nodes of `gpus` GPUs, each with its own NIC of
// `nic`, network.sharp on, an ideal transport.
json rail_allreduce(int nodes, int gpus, const std::string& algorithm, double bytes, const std::string& nic,
                    const std::string& intra) {
    return {{"workers", nodes * gpus},
            {"batch_size", 1},
            {"iterations", 2},
            {"model", testing::one_layer_model(bytes)},
            {"device", {{"name", "H100"}, {"precision", "fp32"}}},
            {"network",
             {{"topology", "rail_optimized"},
              {"gpus_per_node", gpus},
              {"nics_per_node", gpus},
              {"intra_bandwidth", intra},
              {"bandwidth", nic},
              {"latency", "0s"},
              {"intra_latency", "0s"},
              {"sharp", true},
              {"transport", "ideal"},
              {"intra_transport", "ideal"}}},
            {"architecture", {{"kind", "allreduce"}, {"algorithm", algorithm}}}};
}

using testing::refused_at;
using testing::run_first_job;

}  // namespace

TEST_CASE("collnet, one segment on idle rails: T = 4 Li + 2 Ln + 2 (g-1)/g S / Bi + 2 f S / (g Bn)") {
    // Scatter: every GPU sends g - 1 shares of S/g over its node link at once, and receives as many: (g-1)/g S at Bi
    // over two links. Up and down: f S/g at Bn over one link each. Gather: as the scatter.
    const double S = 48e6, eff = 0.8, f = 1.0 / eff;
    for (std::uint32_t m : {2U, 3U})
        for (std::uint32_t g : {1U, 2U, 4U}) {
            CAPTURE(m);
            CAPTURE(g);
            const Rails r = rails(m, g);
            const std::uint32_t n = m * g;
            const sim::Plan plan = topo::collnet_allreduce_plan(r.node_of, n, sim::Bytes{S}, sim::Bytes{S}, n, eff);
            CHECK(plan.endpoints == n + g);
            // Per node: g (g - 1) scatter and gather shares of S/g, g shares up and g down charged f S/g.
            CHECK(plan.transfer_bytes() ==
                  ddlsim::testing::approx(m * (2.0 * (g - 1.0) * S + 2.0 * f * S)).epsilon(1e-12));
            const auto round = testing::run_round(topo::PlanCollective(plan), r.fabric, r.hosts);
            const double intra = g > 1 ? 4.0 * kLi + 2.0 * (g - 1.0) / g * S / kBi : 0.0;
            CHECK(round.makespan == ddlsim::testing::approx(intra + 2.0 * kLn + 2.0 * f * S / (g * kBn)).epsilon(1e-9));
        }
}

TEST_CASE("collnet, pipelined: from the busier stage's streaming time to one segment of each stage more") {
    const std::uint32_t m = 3, g = 4, n = m * g;
    const double S = 256e6, eff = topo::kCollnetEfficiency, f = 1.0 / eff;
    // No latency: two segments in flight per GPU then keep every link busy (with latency each pair of segments waits
    // a round trip, the window's bandwidth-delay product).
    const Rails r = rails(m, g, 0.0, 0.0);
    topo::CollectiveContext ctx = testing::context(n, S);
    ctx.node_of = r.node_of;
    ctx.network_reduction = eff;
    ctx.network_switches = n;
    topo::ArchitectureSpec spec;
    spec.algorithm = topo::AllreduceAlgorithm::collnet;
    const auto c = topo::make_allreduce(spec, ctx);
    const auto round = testing::run_round(*c, r.fabric, r.hosts);
    // Default segments: NCCL's CollNetDirect loop of g heads x 512 KiB.
    const double k = std::ceil(S / (g * topo::kCollnetChunk));
    CHECK(k == 123.0);
    const double intra = 2.0 * (g - 1.0) / g * S / kBi, net = f * S / g / kBn;
    // The closed form: the longer stage plus one segment of the shorter.
    CHECK(round.analytic == ddlsim::testing::approx(std::max(intra, net) + std::min(intra, net) / k).epsilon(1e-9));
    // The run streams at the busier stage's rate; filling and draining cost at most a segment of every stage (two
    // in flight per GPU).
    CHECK(round.makespan >= std::max(intra, net));
    CHECK(round.makespan <= std::max(intra, net) + 3.0 * (intra + 2.0 * net) / k);
    // Moved once each: scatter and gather (g - 1)/g S per GPU, S/g up and down per GPU.
    CHECK(round.wire_bytes == ddlsim::testing::approx(n * (2.0 * (g - 1.0) / g * S + 2.0 * S / g)).epsilon(1e-12));
}

TEST_CASE("collnet on a network-bound fabric: S/g per NIC each way at 0.85 against the ring's 2(m-1)/m S/g") {
    // 8 nodes of 4 GPUs, each with a 100 Gbit/s NIC on its rail, 10 TB/s inside the node: the NICs bound both.
    const double S = 1073741824.0, g = 4.0, m = 8.0, nic = 100e9 / 8.0;
    json j = rail_allreduce(8, 4, "collnet", S, "100Gbps", "10TBps");
    const models::JobResult collnet = run_first_job(j);
    const double streaming = S / g / topo::kCollnetEfficiency / nic;
    const double k = S / (g * topo::kCollnetChunk);
    CHECK(collnet.iteration_time_s >= streaming);
    CHECK(collnet.iteration_time_s <= streaming * (1.0 + 3.0 / k));
    // Bytes between machines: every GPU's share up and back, 2 S/g each, against the rails' 2 (m - 1)/m S/g.
    CHECK(collnet.machine_bytes_per_iteration == ddlsim::testing::approx(m * g * 2.0 * S / g).epsilon(1e-12));
    j["architecture"]["algorithm"] = "hierarchical";
    const models::JobResult hier = run_first_job(j);
    CHECK(hier.machine_bytes_per_iteration ==
          ddlsim::testing::approx(m * g * 2.0 * (m - 1.0) / m * S / g).epsilon(1e-12));
    // Per NIC and direction collnet moves f S/g, the rails 2 (m-1)/m S/g: 1.176 against 1.75.
    CHECK(hier.iteration_time_s >= 2.0 * (m - 1.0) / m * S / g / nic);
    CHECK(collnet.iteration_time_s < hier.iteration_time_s * 0.70);
    // auto weighs collnet where the switches reduce, and takes it here.
    j["architecture"]["algorithm"] = "auto";
    const models::JobResult picked = run_first_job(j);
    CHECK(picked.iteration_time_s == ddlsim::testing::approx(collnet.iteration_time_s).epsilon(1e-12));
    REQUIRE(picked.algorithm_picks.size() == 1);
    CHECK(picked.algorithm_picks.front().algorithm == topo::AllreduceAlgorithm::collnet);
    // Without SHARP auto does not weigh it.
    j["network"].erase("sharp");
    CHECK(run_first_job(j).algorithm_picks.front().algorithm != topo::AllreduceAlgorithm::collnet);
}

TEST_CASE("a GPU's SHARP switch is the first it reaches: the top switch of a two_tier, its NIC's rail leaf") {
    topo::TwoTierSpec two;
    two.nodes = 2;
    two.node = *topo::find_node_preset("dgx_h100");
    two.gpus_per_node = 8;
    two.nics_per_node = 8;
    two.bandwidth = sim::Bandwidth::bits_per_s(400e9);
    two.intra_bandwidth = two.node->gpu_bandwidth;
    two.sharp = true;
    const topo::Fabric t = topo::build_fabric(two);
    CHECK(t.sharp_efficiency() == topo::kCollnetEfficiency);
    CHECK(t.name(*t.sharp_switch(*t.find("n1g5"))) == "switch");
    for (const char* preset : {"dgx_h100", "dgx1_v100"}) {
        topo::RailOptimizedSpec rail;
        rail.nodes = 2;
        rail.node = *topo::find_node_preset(preset);
        rail.bandwidth = rail.node.nic_bandwidth;
        rail.sharp = true;
        const topo::Fabric f = topo::build_fabric(rail);
        for (std::size_t j = 0; j < rail.node.gpus; ++j) {
            CAPTURE(j);
            // One NIC per GPU: rail j; DGX-1's four NICs serve GPU pairs on a PCIe switch: rail j/2.
            const std::size_t expected = rail.node.nics == rail.node.gpus ? j : j / 2;
            CHECK(f.name(*f.sharp_switch(*f.find("n1g" + std::to_string(j)))) == "rail" + std::to_string(expected));
        }
    }
    two.sharp = false;
    CHECK(topo::build_fabric(two).sharp_efficiency() == 0.0);
    CHECK_FALSE(topo::build_fabric(two).sharp_switch(0).has_value());
}

TEST_CASE("collnet and network.sharp are refused at the key where no switch between nodes reduces or rails differ") {
    const json ok = rail_allreduce(2, 4, "collnet", 64e6, "100Gbps", "300GBps");
    CHECK(refused_at(ok) == "accepted");
    json plain = ok;
    plain["network"].erase("sharp");
    CHECK(refused_at(plain) == "$.architecture.algorithm");
    json one_node = ok;
    one_node["workers"] = 4;
    one_node["network"]["num_nodes"] = 1;
    CHECK(refused_at(one_node) == "$.architecture.algorithm");
    json uneven = ok;
    uneven["workers"] = 3;
    uneven["placement"] = {"n0g0", "n0g1", "n1g0"};
    uneven["network"]["num_nodes"] = 2;
    CHECK(refused_at(uneven) == "$.architecture.algorithm");
    json crossed = ok;  // GPU 0 and 1 of node 0, GPU 2 and 3 of node 1: rails 0, 1 against 2, 3
    crossed["workers"] = 4;
    crossed["placement"] = {"n0g0", "n0g1", "n1g2", "n1g3"};
    crossed["network"]["num_nodes"] = 2;
    CHECK(refused_at(crossed) == "$.architecture.algorithm");
    json star = ok;  // a star's switch sums too: every host is its own head
    star["network"] = {{"topology", "star"}, {"bandwidth", "100Gbps"}, {"latency", "1us"}, {"sharp", true}};
    CHECK(refused_at(star) == "accepted");
    json tree = ok;
    tree["network"] = {
        {"topology", "fat_tree"}, {"k", 4}, {"bandwidth", "100Gbps"}, {"latency", "1us"}, {"sharp", true}};
    CHECK(refused_at(tree) == "$.network.sharp");
    json sites = ok;
    sites["network"] = {{"topology", "two_tier"},     {"node", "dgx_h100"},    {"sites", 2},
                        {"wan_bandwidth", "100Gbps"}, {"wan_latency", "10ms"}, {"sharp", true}};
    sites["workers"] = 16;
    CHECK(refused_at(sites) == "$.network.sharp");
    json diloco = rail_allreduce(2, 4, "collnet", 64e6, "100Gbps", "300GBps");
    diloco["sync"] = {{"kind", "diloco"}, {"period", 10}, {"islands", 2}};
    CHECK(refused_at(diloco) == "$.sync.kind");
    CHECK_THROWS_AS((void)topo::collnet_allreduce_plan({0, 0, 1}, 3, sim::Bytes{1e6}, sim::Bytes{0.0}, 3, 0.85),
                    std::invalid_argument);
}
