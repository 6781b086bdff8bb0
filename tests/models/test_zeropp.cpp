// ZeRO++ (Wang et al., "ZeRO++: Extremely Efficient Collective Communication for Giant Model Training", arXiv
// 2306.10209, 2023) in the `sharding` block: bytes derived by hand from the paper's three mechanisms as DeepSpeed
// implements them (int8 blocks of at most 8,000 elements with an fp32 scale each; backward's all-gathers inside the
// secondary partition; int4 gradients through a hierarchical all-to-all with max(rows, cols, world) scales per
// tensor), a step timed by hand on an idle star, memory, and the refusals.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "models/compression.hpp"
#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/scenario_harness.hpp"
#include "tests/support/support.hpp"

using nlohmann::json;
using namespace ddlsim;

namespace {

constexpr double kL = 5e-6;    // per-link latency of the star, s
constexpr double kB = 1.25e9;  // 10 Gbit/s in bytes/s

// `units` equal layers of S fp32 gradient bytes (S / 4 parameters) each, ZeRO-3, on the ideal transport.
json zero3(int n, int units, double S) {
    json layers = json::array();
    for (int u = 0; u < units; ++u)
        layers.push_back(testing::gradient_layer(fmt::format("l{}", u), S, "1ms", "2ms", "4ms"));
    json j = testing::star_scenario(
        {.workers = n, .model = {{"layers", layers}}, .batch_size = 1, .iterations = 3, .transport = "ideal"});
    j["sharding"] = {{"stage", 3}, {"prefetch", 0}};
    return j;
}

// Nodes of g GPUs joined by 100 Gbit/s NICs.
json on_nodes(json j, int g) {
    j["network"] = {{"topology", "two_tier"}, {"gpus_per_node", g},  {"nics_per_node", 2},
                    {"bandwidth", "100Gbps"}, {"latency", "2us"},    {"intra_bandwidth", "300GBps"},
                    {"intra_latency", "1us"}, {"transport", "ideal"}};
    return j;
}

models::JobResult run(const json& j) {
    return testing::run_first_job(j);
}

// qgZ's scales of one unit: max(rows, cols, world) fp32 per tensor (DeepSpeed's intra_quant_group).
double qgz_scales(const json& j, int n) {
    const auto s = scenario::load_scenario(j);
    double scales = 0.0;
    for (const auto& t : s.jobs.at(0).workload.layers.front().tensors) {
        const auto shape = models::tensor_shape(t);
        scales += 4.0 * static_cast<double>(std::max({shape.rows, shape.cols, static_cast<std::uint64_t>(n)}));
    }
    return scales;
}

using testing::refused_at;

}  // namespace

TEST_CASE("ZeRO++ qwZ: every all-gather carries int8 blocks and their scales, a quarter of fp32 (half of fp16)") {
    for (int n : {2, 4, 8}) {
        CAPTURE(n);
        const int units = 3;
        const double S = 8e6, P = S / 4;  // fp32: 4 bytes per parameter
        json j = zero3(n, units, S);
        const double plain = run(j).bytes_on_wire_per_iteration;
        // A ring phase over n workers puts (n - 1) x its bytes on the wire: per unit two gathers and a reduce.
        CHECK(plain == ddlsim::testing::approx(units * (n - 1) * 3.0 * S).epsilon(1e-12));
        j["sharding"]["quantized_weights"] = true;
        const double gathered = P + 4.0 * n * std::ceil(P / n / 8000.0);
        CHECK(run(j).bytes_on_wire_per_iteration ==
              ddlsim::testing::approx(units * (n - 1) * (2.0 * gathered + S)).epsilon(1e-12));
    }
}

TEST_CASE("ZeRO++ hpZ: backward's all-gathers stay inside the secondary partition, and its copy counts in memory") {
    for (int nodes : {2, 4}) {
        CAPTURE(nodes);
        const int g = 4, n = nodes * g, units = 2;
        const double S = 16e6;
        json j = on_nodes(zero3(n, units, S), g);
        const auto plain = run(j);
        j["sharding"]["hpz_partition_size"] = g;
        const auto hpz = run(j);
        // Rings over all n cross machines `nodes` times per step, n - 1 steps of S / n: without hpZ three phases per
        // unit do, with it the forward gather and the reduce-scatter only.
        CHECK(plain.machine_bytes_per_iteration ==
              ddlsim::testing::approx(units * 3.0 * nodes * (n - 1) * S / n).epsilon(1e-12));
        CHECK(hpz.machine_bytes_per_iteration ==
              ddlsim::testing::approx(units * 2.0 * nodes * (n - 1) * S / n).epsilon(1e-12));
        // Backward's gather: (g - 1) x S per node group of g.
        CHECK(hpz.bytes_on_wire_per_iteration ==
              ddlsim::testing::approx(units * (2.0 * (n - 1) * S + nodes * (g - 1.0) * S)).epsilon(1e-12));
        // The secondary copy: the weights at their width over g GPUs.
        const auto weights = [](const json& k) {
            return scenario::job_memory(scenario::load_scenario(k).jobs.at(0)).weights;
        };
        json off = j;
        off["sharding"].erase("hpz_partition_size");
        CHECK(weights(j) - weights(off) == ddlsim::testing::approx(units * S / g).epsilon(1e-12));
        CHECK(hpz.iteration_time_s < plain.iteration_time_s);
    }
}

TEST_CASE("ZeRO++ qgZ: int4 inside each node, the node's sums between nodes: (N - 1) P / 2 bytes per unit across") {
    for (int nodes : {2, 4}) {
        CAPTURE(nodes);
        const int g = 4, n = nodes * g, units = 2;
        const double S = 16e6, P = S / 4;
        json j = on_nodes(zero3(n, units, S), g);
        j["sharding"]["quantized_gradients"] = true;
        const auto r = run(j);
        const double scales = qgz_scales(j, n);
        const double intra = P / 2 + scales, inter = P / 2 / g + scales / g;
        // Inside each node every GPU sends (g - 1) / g of `intra`; between nodes rank j of each sends (N - 1) / N of
        // `inter`. The two all-gathers stay rings over all n.
        const double a2a_intra = nodes * (g - 1.0) * intra, a2a_inter = g * (nodes - 1.0) * inter;
        CHECK(r.bytes_on_wire_per_iteration ==
              ddlsim::testing::approx(units * (2.0 * (n - 1) * S + a2a_intra + a2a_inter)).epsilon(1e-12));
        CHECK(r.machine_bytes_per_iteration ==
              ddlsim::testing::approx(units * (2.0 * nodes * (n - 1) * S / n + (nodes - 1.0) * (P / 2 + scales)))
                  .epsilon(1e-12));
    }
}

TEST_CASE("ZeRO++ on an idle star: each unit's quantized collectives and their kernels in series (prefetch 0)") {
    // n workers, one per machine: qgZ's all-to-all is between machines only, every worker sending inter / n to each
    // of the other n - 1 at once through its one uplink (2 links of latency). Gathers: ring phases of the int8
    // payload. Kernels at the device's memory bandwidth.
    const int n = 4, units = 3;
    const double S = 8e6, P = S / 4;
    json j = zero3(n, units, S);
    j["sharding"]["quantized_weights"] = true;
    j["sharding"]["quantized_gradients"] = true;
    const auto s = scenario::load_scenario(j);
    const double bw = s.jobs.at(0).device.memory_bandwidth.bytes_per_s();
    const double G = P + 4.0 * n * std::ceil(P / n / 8000.0);
    const double gather = (n - 1) * (2 * kL + G / n / kB) + (P / n * 5.0 + P * 5.0) / bw;
    const double inter = P / 2 + qgz_scales(j, n);
    const double reduce =
        (P * 4.5 + (P * 0.5 + P * 0.5 + P * 0.5 + P / n * 4.0)) / bw + 2 * kL + (n - 1) * inter / n / kB;
    const double expected = units * (0.001 + 0.002 + 0.004 / n) + units * (2 * gather + reduce);
    CHECK(run(j).iteration_time_s == ddlsim::testing::approx(expected).epsilon(1e-9));
}

TEST_CASE("ZeRO++: refused where it does not apply, naming the key") {
    const json base = zero3(4, 2, 1e6);
    struct Case {
        json sharding;
        std::string path;
    };
    const std::vector<Case> cases{
        {{{"stage", 2}, {"quantized_weights", true}}, "$.sharding.quantized_weights"},
        {{{"stage", 2}, {"quantized_gradients", true}}, "$.sharding.quantized_gradients"},
        {{{"stage", 1}, {"hpz_partition_size", 2}}, "$.sharding.hpz_partition_size"},
        {{{"stage", 3}, {"group", "node"}, {"hpz_partition_size", 2}}, "$.sharding.hpz_partition_size"},
        {{{"stage", 3}, {"hpz_partition_size", 3}}, "$.sharding.hpz_partition_size"},
        {{{"stage", 3}, {"hpz_partition_size", 0}}, "$.sharding.hpz_partition_size"},
        {{{"stage", 3}, {"quantized_weights", "yes"}}, "$.sharding.quantized_weights"},
    };
    for (const Case& c : cases) {
        json j = base;
        j["sharding"] = c.sharding;
        CAPTURE(j.dump());
        CHECK(refused_at(j) == c.path);
    }
    // qgZ pairs rank j of every node: 6 workers on nodes of 4 leave 4 + 2.
    json uneven = on_nodes(base, 4);
    uneven["workers"] = 6;
    uneven["sharding"]["quantized_gradients"] = true;
    CHECK(refused_at(uneven) == "$.sharding.quantized_gradients");
}
