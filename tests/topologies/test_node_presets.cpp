// Node presets (network.node) and the rail-optimized fabric, with hand-derived answers: the DGX-1V
// cube-mesh's links, routes inside and between nodes, all-reduce time against the NIC count, and the
// loader's refusals.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/scenario.hpp"
#include "sim/engine.hpp"
#include "sim/network.hpp"
#include "tests/support/collective_harness.hpp"
#include "tests/support/support.hpp"
#include "topologies/allreduce_algorithms.hpp"
#include "topologies/builders.hpp"
#include "topologies/node_type.hpp"
#include "topologies/transport.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

const sim::Time kL = sim::Time::seconds(2e-6);   // network links
const sim::Time kLi = sim::Time::seconds(1e-7);  // links inside a node

topo::Vertex v(const topo::Fabric& f, const std::string& name) {
    const auto x = f.find(name);
    REQUIRE_MESSAGE(x.has_value(), "no node " << name);
    return *x;
}

// The route from a to b as "x->y" link names.
std::vector<std::string> hops(const topo::Fabric& f, const std::string& a, const std::string& b,
                              std::uint64_t key = 0) {
    std::vector<std::string> out;
    for (sim::LinkIndex l : f.route(v(f, a), v(f, b), key)) out.push_back(f.directed_link_name(l));
    return out;
}

// One transfer of `bytes` from a to b on the idle fabric: its completion time.
double transfer_time(const topo::Fabric& f, const std::string& a, const std::string& b, double bytes) {
    sim::Engine engine;
    sim::Network net(engine);
    f.install(net);
    double done = -1;
    net.start(f.route(v(f, a), v(f, b)), sim::Bytes{bytes}, [&] { done = engine.now().seconds(); });
    engine.run();
    return done;
}

const topo::NodeType& preset(const char* name) {
    const topo::NodeType* t = topo::find_node_preset(name);
    REQUIRE(t != nullptr);
    return *t;
}

topo::Fabric two_tier(const topo::NodeType& node, std::size_t nodes) {
    topo::TwoTierSpec s;
    s.nodes = nodes;
    s.gpus_per_node = node.gpus;
    s.nics_per_node = node.nics;
    s.bandwidth = node.nic_bandwidth;
    s.latency = kL;
    s.intra_bandwidth = node.gpu_bandwidth;
    s.intra_latency = kLi;
    s.node = node;
    return topo::build_fabric(s);
}

topo::Fabric rail(const topo::NodeType& node, std::size_t nodes, std::size_t spines) {
    topo::RailOptimizedSpec s;
    s.nodes = nodes;
    s.node = node;
    s.bandwidth = node.nic_bandwidth;
    s.latency = kL;
    s.intra_latency = kLi;
    s.spines = spines;
    return topo::build_fabric(s);
}

json scenario_with(json network) {
    return {{"workers", 16},    {"model", "resnet50"}, {"batch_size", 32},
            {"device", "V100"}, {"iterations", 1},     {"network", std::move(network)}};
}

// Loading `j` fails with a ScenarioError at `path` whose message holds `words`.
void expect_error(const json& j, const std::string& path, std::initializer_list<std::string> words) {
    try {
        (void)scenario::load_scenario(j);
        FAIL_CHECK("loaded without error; expected a ScenarioError at " << path);
    } catch (const scenario::ScenarioError& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(e.path() == path);
        for (const auto& w : words) CHECK_MESSAGE(what.find(w) != std::string::npos, "message lacks \"" << w << "\"");
    }
}

}  // namespace

TEST_CASE("node presets: each has its GPUs, NICs and cited figures") {
    // [DGX1] 8 V100, 4 x 100 Gb/s; [A100] 300 GB/s per direction, 8 x 200 Gb/s; [H100] and [H200] 450 GB/s,
    // 8 x 400 Gb/s; pcie_8gpu PCIe Gen4 x16 = 16 GT/s x 16 x 128/130 / 8 = 31.5 GB/s, one 200 Gb/s NIC; [B200] and
    // [NVL72] 1.8 TB/s per GPU = 900 GB/s per direction, 400 Gb/s per GPU, 72 GPUs for NVL72; [MI300X] 7 links of
    // 128 GB/s both ways = 7 x 64 = 448 GB/s per direction; [MI355X] 7 x 153.6 / 2 = 537.6 GB/s.
    struct Want {
        const char* name;
        std::size_t nics;
        double nic_gbps;
        double gpu_gbyte_s;
        std::size_t gpus = 8;
    };
    for (const Want& w :
         {Want{"dgx1_v100", 4, 100, 150}, Want{"dgx_a100", 8, 200, 300}, Want{"dgx_h100", 8, 400, 450},
          Want{"hgx_h200", 8, 400, 450}, Want{"pcie_8gpu", 1, 200, 31.5076923}, Want{"dgx_b200", 8, 400, 900},
          Want{"gb200_nvl72", 72, 400, 900, 72}, Want{"amd_mi300x", 8, 400, 448}, Want{"amd_mi355x", 8, 400, 537.6}}) {
        CAPTURE(w.name);
        const topo::NodeType& t = preset(w.name);
        CHECK(t.gpus == w.gpus);
        CHECK(t.nics == w.nics);
        CHECK(t.nic_bandwidth.bits_per_s() == ddlsim::testing::approx(w.nic_gbps * 1e9));
        CHECK(t.gpu_bandwidth.bytes_per_s() == ddlsim::testing::approx(w.gpu_gbyte_s * 1e9));
    }
    CHECK(topo::node_presets().size() == 9);
    CHECK(topo::find_node_preset("dgx2") == nullptr);
}

TEST_CASE("amd_mi300x: a full mesh, one 64 GB/s link per GPU pair, so a pair's transfer runs at 64 GB/s") {
    // 28 pairs, 7 links per GPU; 1 GB from g0 to g5 takes one hop over their own link: 1e9 / 64e9 s + latency.
    const auto f = two_tier(preset("amd_mi300x"), 1);
    CHECK(hops(f, "n0g0", "n0g5").size() == 1);
    CHECK(transfer_time(f, "n0g0", "n0g5", 1e9) == ddlsim::testing::approx(1e9 / 64e9 + kLi.seconds()).epsilon(1e-9));
}

TEST_CASE("dgx1_v100: the hybrid cube-mesh has 24 NVLink links, six per GPU, over 16 GPU pairs") {
    // Two fully connected quads (0-3, 4-7), GPU i joined to GPU i+4: 6 + 6 + 4 = 16 pairs; eight pairs are
    // doubled, so 16 + 8 = 24 links = 8 GPUs x 6 links / 2.
    const auto f = two_tier(preset("dgx1_v100"), 1);
    const auto& g = f.graph();
    std::size_t nvlinks = 0;
    for (std::size_t j = 0; j < 8; ++j) {
        const topo::Vertex gpu = v(f, "n0g" + std::to_string(j));
        std::size_t degree = 0;
        std::vector<std::string> peers;
        for (auto [e, end] = boost::out_edges(gpu, g); e != end; ++e) {
            const std::string& other = f.name(boost::target(*e, g));
            if (other.rfind("n0g", 0) != 0) continue;
            ++degree;
            CHECK(g[*e].medium == topo::Medium::nvlink);
            CHECK(g[*e].cls == topo::LinkClass::intra);
            CHECK(g[*e].bandwidth.bytes_per_s() == ddlsim::testing::approx(25e9));  // [V100] per direction
            if (std::find(peers.begin(), peers.end(), other) == peers.end()) peers.push_back(other);
        }
        CAPTURE(j);
        CHECK(degree == 6);
        CHECK(peers.size() == 4);  // three in its quad, one across
        nvlinks += degree;
    }
    CHECK(nvlinks / 2 == 24);
    // Every link: 24 NVLink + 8 GPU-CPU PCIe + 8 GPU-NIC PCIe + 4 NIC ports.
    CHECK(f.link_count() == 44);
    // Doubled pairs give two equal paths, single ones one.
    CHECK(f.path_count(v(f, "n0g0"), v(f, "n0g3")) == 2);
    CHECK(f.path_count(v(f, "n0g0"), v(f, "n0g1")) == 1);
    // The NVLink ring 0-4-7-6-5-1-2-3-0 uses only direct (double) links.
    const int ring[] = {0, 4, 7, 6, 5, 1, 2, 3};
    for (int i = 0; i < 8; ++i) {
        const std::string a = "n0g" + std::to_string(ring[i]), b = "n0g" + std::to_string(ring[(i + 1) % 8]);
        CAPTURE(a);
        CHECK(f.route(v(f, a), v(f, b)).size() == 1);
        CHECK(f.path_count(v(f, a), v(f, b)) == 2);
    }
}

TEST_CASE("dgx1_v100: GPUs without an NVLink talk over PCIe through the CPUs, never through a third GPU") {
    // GPU 0 and GPU 5 share no NVLink (nvidia-smi: SYS). GPUs do not forward, so the route is GPU0 -> CPU root ->
    // GPU5 over PCIe Gen3 x16 (8 GT/s x 16 x 128/130 / 8 = 15.754 GB/s): T = 2 Li + S / 15.754e9, with the
    // ideal transport (links at line rate). Over NVLink through GPU 1 or 4 it would take S / 25e9.
    const auto f = two_tier(preset("dgx1_v100"), 1);
    CHECK(hops(f, "n0g0", "n0g5") == std::vector<std::string>{"n0g0->n0", "n0->n0g5"});
    const double S = 100e6;
    const double pcie3 = 8e9 * 16 * 128.0 / 130.0 / 8.0;
    CHECK(transfer_time(f, "n0g0", "n0g5", S) == ddlsim::testing::approx(2 * kLi.seconds() + S / pcie3).epsilon(1e-9));
    // With an NVLink: one link at 25 GB/s.
    CHECK(transfer_time(f, "n0g0", "n0g1", S) == ddlsim::testing::approx(kLi.seconds() + S / 25e9).epsilon(1e-9));
    // GPU pairs share a NIC: GPU 2j and 2j+1 leave through NIC j, to the top switch.
    CHECK(hops(f, "n0g5", "switch") == std::vector<std::string>{"n0g5->n0nic2", "n0nic2->switch"});
}

TEST_CASE("dgx1_v100 two_tier: the time of a transfer between nodes is set by the EDR NIC") {
    // n0g0 -> n1g0: GPU -> NIC0 (PCIe 15.75 GB/s, Li) -> switch (100 Gb/s, L) -> NIC0 (L) -> GPU (Li):
    // T = 2 Li + 2 L + S / 12.5e9.
    const auto f = two_tier(preset("dgx1_v100"), 2);
    CHECK(hops(f, "n0g0", "n1g0").size() == 4);
    const double S = 50e6;
    CHECK(transfer_time(f, "n0g0", "n1g0", S) ==
          ddlsim::testing::approx(2 * kLi.seconds() + 2 * kL.seconds() + S / 12.5e9).epsilon(1e-9));
}

TEST_CASE("dgx_h100 rail_optimized: GPU 3 to GPU 3 of another node crosses its two NICs and rail leaf 3 only") {
    const auto f = rail(preset("dgx_h100"), 2, 2);
    CHECK(hops(f, "n0g3", "n1g3") ==
          std::vector<std::string>{"n0g3->n0nic3", "n0nic3->rail3", "rail3->n1nic3", "n1nic3->n1g3"});
    CHECK(f.path_count(v(f, "n0g3"), v(f, "n1g3")) == 1);
    // Inside a node: through the NVSwitch, never out through a NIC.
    CHECK(hops(f, "n0g3", "n0g5") == std::vector<std::string>{"n0g3->n0", "n0->n0g5"});
    // Across rails: NCCL's PXN relays over the NVSwitch to the GPU on the destination's rail, which sends by its NIC
    // (never a spine); the shortest paths (two spines: two) are what routes would take without the relay.
    CHECK(hops(f, "n0g3", "n1g5") == std::vector<std::string>{"n0g3->n0", "n0->n0g5", "n0g5->n0nic5", "n0nic5->rail5",
                                                              "rail5->n1nic5", "n1nic5->n1g5"});
    CHECK(f.path_count(v(f, "n0g3"), v(f, "n1g5")) == 2);
    // Across nodes on one rail: no relay.
    CHECK(hops(f, "n1g5", "n0g5").size() == 4);
    // node_of: the GPUs of one machine share a node, as the hierarchical all-reduce needs.
    CHECK(f.node_of(v(f, "n1g3")) == 1);
    CHECK(f.node_of(v(f, "n1g7")) == f.node_of(v(f, "n1g0")));
    CHECK(f.node_of(v(f, "n0g7")) != f.node_of(v(f, "n1g7")));
    CHECK(f.hosts().size() == 16);
    CHECK(f.name(f.hosts()[9]) == "n1g1");  // default placement: node by node, GPU by GPU
}

TEST_CASE("pcie_8gpu: GPU pairs share a PCIe switch, other pairs and the NIC go through the CPU root") {
    // GPU 0 and 1 behind switch p0: two links at 31.5 GB/s; GPU 0 to 2: p0 -> CPU root -> p1, four links; to
    // another node: p0 -> root -> the one NIC -> top switch, and back down.
    const auto f = two_tier(preset("pcie_8gpu"), 2);
    CHECK(hops(f, "n0g0", "n0g1") == std::vector<std::string>{"n0g0->n0p0", "n0p0->n0g1"});
    CHECK(hops(f, "n0g0", "n0g2") == std::vector<std::string>{"n0g0->n0p0", "n0p0->n0", "n0->n0p1", "n0p1->n0g2"});
    CHECK(hops(f, "n0g5", "n1g5") == std::vector<std::string>{"n0g5->n0p2", "n0p2->n0", "n0->n0nic0", "n0nic0->switch",
                                                              "switch->n1nic0", "n1nic0->n1", "n1->n1p2",
                                                              "n1p2->n1g5"});
    const double S = 31.5e6;
    const double pcie4 = 16e9 * 16 * 128.0 / 130.0 / 8.0;
    CHECK(transfer_time(f, "n0g0", "n0g1", S) == ddlsim::testing::approx(2 * kLi.seconds() + S / pcie4).epsilon(1e-9));
}

TEST_CASE("node presets: link classes and the auto transport follow the medium") {
    // NVSwitch links are intra (NVLink transport under auto), GPU-NIC attachments and NIC ports inter (RDMA at
    // 400 Gb/s); a 25 GB/s NVLink 2 link still gets the NVLink transport, not PCIe's.
    auto f = rail(preset("dgx_h100"), 2, 1);
    for (const auto& l : f.links()) {
        if (l.medium == topo::Medium::nvlink) {
            CHECK(l.cls == topo::LinkClass::intra);
            CHECK(topo::auto_transport(l.cls, l.bandwidth, l.medium) == topo::TransportKind::nvlink);
        } else {
            CHECK(l.cls == topo::LinkClass::inter);
            CHECK(topo::auto_transport(l.cls, l.bandwidth, l.medium) == topo::TransportKind::rdma);
        }
    }
    CHECK(topo::auto_transport(topo::LinkClass::intra, sim::Bandwidth::bytes_per_s(25e9), topo::Medium::nvlink) ==
          topo::TransportKind::nvlink);
    CHECK(topo::auto_transport(topo::LinkClass::intra, sim::Bandwidth::bytes_per_s(25e9)) == topo::TransportKind::pcie);
}

TEST_CASE("rail_optimized: a hierarchical all-reduce between nodes scales with the NICs per node") {
    // N nodes of g = 8 GPUs, node-switch links Bi / Li, NICs B, network links L. Intra reduce-scatter and
    // all-gather: 2(g-1) steps of S/g at 2Li + S/(g Bi) (as on two_tier). Then g rings of N (GPU j of every
    // node), 2(N-1) steps of S/(gN):
    //  8 NICs: GPU j -> NIC j (B, Li) -> rail j (B, L) -> NIC j (L) -> GPU j (Li): each NIC carries one flow,
    //          a step takes 2Li + 2L + S/(gNB);
    //  1 NIC:  GPU -> node switch (Bi) -> NIC (B) -> rail 0 -> NIC -> node switch -> GPU, six links, and the
    //          g flows share the NIC at B/g each: 4Li + 2L + S/(NB).
    // So the inter-node part is g = 8 times faster with 8 NICs, up to the latency terms.
    const double S = 64e6, B = 50e9, Bi = 450e9;
    const double L = kL.seconds(), Li = kLi.seconds();
    const std::uint32_t N = 2, g = 8;
    const double intra = 2.0 * (g - 1) * (2 * Li + S / (g * Bi));
    double inter[2] = {0, 0};
    for (std::size_t nics : {std::size_t{8}, std::size_t{1}}) {
        CAPTURE(nics);
        const auto node = topo::plain_node(g, sim::Bandwidth::bytes_per_s(Bi), nics, sim::Bandwidth::bytes_per_s(B));
        const auto f = rail(node, N, 1);
        const std::vector<topo::Vertex> hosts(f.hosts().begin(), f.hosts().end());
        auto ctx = testing::context(N * g, S);
        for (std::uint32_t w = 0; w < N * g; ++w) ctx.node_of[w] = f.node_of(hosts[w]);
        topo::ArchitectureSpec spec;
        spec.algorithm = topo::AllreduceAlgorithm::hierarchical;
        const auto c = topo::make_allreduce(spec, ctx);
        const auto r = testing::run_round(*c, f, hosts);
        const double step = nics == 8 ? 2 * Li + 2 * L + S / (g * N * B) : 4 * Li + 2 * L + S / (N * B);
        CHECK(r.makespan == ddlsim::testing::approx(intra + 2.0 * (N - 1) * step).epsilon(1e-6));
        inter[nics == 8 ? 0 : 1] = r.makespan - intra;
    }
    // Here S/(gNB) = 80 us against 2Li + 2L = 4.2 us, and S/(NB) = 640 us against 4.4 us: (644.4) / (84.2) = 7.65.
    CHECK(inter[1] / inter[0] ==
          ddlsim::testing::approx((4 * Li + 2 * L + S / (N * B)) / (2 * Li + 2 * L + S / (g * N * B))));
    CHECK(inter[1] / inter[0] > 7.5);
}

TEST_CASE("loader: network.node with two_tier and rail_optimized, echoed in the resolved scenario") {
    const json rail_net{{"topology", "rail_optimized"},
                        {"node", "dgx_h100"},
                        {"latency", "2us"},
                        {"intra_latency", "1us"},
                        {"spines", 2}};
    const auto s = scenario::load_scenario(scenario_with(rail_net));
    const auto& r = std::get<topo::RailOptimizedSpec>(s.topology);
    CHECK(r.nodes == 2);  // 16 workers / 8 GPUs
    CHECK(r.node.preset == "dgx_h100");
    CHECK(r.bandwidth.bits_per_s() == ddlsim::testing::approx(400e9));  // the preset's NIC rate by default
    const json echo = scenario::resolved_scenario(s).at("network");
    CHECK(echo.at("node") == "dgx_h100");
    CHECK_FALSE(echo.contains("gpus_per_node"));
    CHECK(echo.at("num_nodes") == 2);
    // The resolved network loads again to the same thing.
    CHECK(scenario::resolved_scenario(scenario::load_scenario(scenario_with(echo))).at("network") == echo);
    // bandwidth overrides the NIC rate, and the echo says so.
    json slow = rail_net;
    slow["bandwidth"] = "200Gbps";
    CHECK(scenario::resolved_scenario(scenario::load_scenario(scenario_with(slow))).at("network").at("bandwidth") ==
          "200Gbps");
    // two_tier with a preset.
    const json tt{{"topology", "two_tier"}, {"node", "dgx1_v100"}, {"latency", "2us"}, {"intra_latency", "1us"}};
    const auto t = scenario::load_scenario(scenario_with(tt));
    const auto& two = std::get<topo::TwoTierSpec>(t.topology);
    CHECK(two.node.has_value());
    CHECK(two.gpus_per_node == 8);
    CHECK(two.nics_per_node == 4);
}

TEST_CASE("loader: bad node input names the JSON path and what was expected") {
    const json base{{"topology", "rail_optimized"},
                    {"node", "dgx_h100"},
                    {"latency", "2us"},
                    {"intra_latency", "1us"},
                    {"spines", 1}};
    json unknown = base;
    unknown["node"] = "dgx2";
    expect_error(scenario_with(unknown), "$.network.node",
                 {"expected one of", "\"dgx_h100\"", "\"dgx1_v100\"", "dgx2"});
    for (const char* key : {"gpus_per_node", "nics_per_node", "intra_bandwidth"}) {
        CAPTURE(key);
        json conflict = base;
        conflict[key] = std::string(key) == "intra_bandwidth" ? json("100GBps") : json(4);
        expect_error(scenario_with(conflict), std::string("$.network.") + key, {"fixed by network.node \"dgx_h100\""});
    }
    json star{{"topology", "star"}, {"node", "dgx_h100"}, {"bandwidth", "10Gbps"}, {"latency", "1us"}};
    expect_error(scenario_with(star), "$.network.node", {"not used by topology \"star\""});
    json plain{{"topology", "rail_optimized"}, {"gpus_per_node", 8}, {"nics_per_node", 3},     {"bandwidth", "200Gbps"},
               {"intra_bandwidth", "300GBps"}, {"latency", "2us"},   {"intra_latency", "1us"}, {"spines", 1}};
    expect_error(scenario_with(plain), "$.network.nics_per_node", {"expected 1", "gpus_per_node = 8", "got 3"});
    json missing = plain;
    missing.erase("nics_per_node");
    missing.erase("gpus_per_node");
    expect_error(scenario_with(missing), "$.network.gpus_per_node", {"required", "without network.node"});
}

TEST_CASE("cli: an unknown node preset exits 2 with one line naming the file, the path and the presets") {
    const ddlsim::testing::TempDir dir("ddlsim_node_presets");
    const std::string file = dir.file("bad.json");
    json net{{"topology", "two_tier"}, {"node", "dgx3"}, {"latency", "2us"}, {"intra_latency", "1us"}};
    std::ofstream(file) << scenario_with(net).dump();
    const auto r = ddlsim::testing::run_ddlsim({"run", file});
    const std::string& text = r.err;
    INFO(text);
    CHECK(r.code == 2);
    CHECK(std::count(text.begin(), text.end(), '\n') == 1);
    CHECK(text.rfind("error: " + file + ": $.network.node: expected one of", 0) == 0);
    CHECK(text.find("\"pcie_8gpu\"") != std::string::npos);
}
