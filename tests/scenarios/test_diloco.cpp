// DiLoCo (sync "diloco"): islands that all-reduce inside themselves every step, outer steps across them every
// period / fragments steps (models/diloco.hpp). Two sites of one DGX H100 node each, one island per site, ideal
// transport, so the times follow by hand from the WAN's latency and bandwidth.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include <string>

#include "tests/support/scenario_harness.hpp"
#include "tests/support/support.hpp"

using namespace ddlsim;
using nlohmann::json;
using testing::refused_at;
using testing::run_first_job;

namespace {

constexpr double kS = 100e6;  // gradient bytes per worker (fp32)

json network(const std::string& wan_bandwidth, const std::string& wan_latency) {
    return {{"topology", "two_tier"},         {"node", "dgx_h100"},        {"sites", 2}, {"transport", "ideal"},
            {"wan_bandwidth", wan_bandwidth}, {"wan_latency", wan_latency}};
}

// 16 workers on two sites, two islands of 8, a ring all-reduce inside each; `model` defaults to one layer of kS bytes
// that computes nothing, so an inner step is its all-reduce over NVLink.
json diloco(std::uint32_t period, std::uint32_t iterations, const std::string& wan_bandwidth = "10Gbps",
            json model = testing::one_layer_model(kS), const std::string& wan_latency = "30ms") {
    return {{"workers", 16},
            {"batch_size", 1},
            {"iterations", iterations},
            {"model", std::move(model)},
            {"device", {{"name", "H100"}, {"precision", "fp32"}}},
            {"network", network(wan_bandwidth, wan_latency)},
            {"architecture", testing::ring_allreduce()},
            {"sync", {{"kind", "diloco"}, {"period", period}, {"islands", 2}}}};
}

// The same inner steps with no outer step in the run (a period longer than the run).
double inner_only(json j) {
    j["sync"]["period"] = 1000;
    j["sync"].erase("fragments");
    j["sync"].erase("overlap_steps");
    return run_first_job(j).iteration_time_s * j["iterations"].get<double>();
}

}  // namespace

TEST_CASE("diloco: an inner step stays inside its island, as BSP on that island alone") {
    const models::JobResult d = run_first_job(diloco(1000, 3));
    // BSP of the 8 workers of one node: the island's ring, nothing else.
    json alone = diloco(1000, 3);
    alone["workers"] = 8;
    alone["network"] = {{"topology", "two_tier"}, {"node", "dgx_h100"}, {"num_nodes", 1}, {"transport", "ideal"}};
    alone["sync"] = {{"kind", "bsp"}};
    const models::JobResult b = run_first_job(alone);
    CHECK(d.iteration_time_s == ddlsim::testing::approx(b.iteration_time_s).epsilon(1e-9));
    CHECK(d.machine_bytes_per_iteration == 0.0);
    CHECK(d.rounds == 0);
    // BSP over both sites crosses the WAN every step.
    json across = diloco(1000, 3);
    across["sync"] = {{"kind", "bsp"}};
    CHECK(run_first_job(across).machine_bytes_per_iteration > 0.0);
}

TEST_CASE("diloco: a blocking outer step costs 2 L_wan + S / B_wan across the sites") {
    // Period 2 in 4 steps: two outer steps. Rank j of each island all-reduces its S/8 slice with its peer, a ring of
    // two: two steps of S/16 per GPU; the eight rails share the site's WAN link, so each step moves S/2 through it:
    // 2 (L_wan + S / (2 B)). The all-gather inside the node (7/8 S over NVLink at 450 GB/s, less) and the
    // sub-microsecond links add at most 2 S / 450 GB/s + 10 us; the outer update computes nothing here.
    const double B = 10e9 / 8.0, L = 0.03;
    const json j = diloco(2, 4);
    const models::JobResult r = run_first_job(j);
    const double outer = (r.iteration_time_s * 4 - inner_only(j)) / 2;
    CHECK(outer >= 2 * L + kS / B);
    CHECK(outer <= 2 * L + kS / B + 2 * kS / 450e9 + 10e-6);
    CHECK(r.rounds == 2);
    // Between machines: every GPU sends S/8 per outer step (two S/16 steps), 16 GPUs, two outer steps in four.
    CHECK(r.machine_bytes_per_iteration == ddlsim::testing::approx(16 * kS / 8 * 2 / 4).epsilon(1e-9));
    // Doubling the WAN removes S / (2 B) per outer step and nothing else.
    const double faster = run_first_job(diloco(2, 4, "20Gbps")).iteration_time_s * 4;
    CHECK(r.iteration_time_s * 4 - faster == ddlsim::testing::approx(2 * kS / (2 * B)).epsilon(1e-3));
}

TEST_CASE("diloco: sharded islands train as FSDP on one island, and their outer step gathers nothing") {
    json fsdp = diloco(1000, 3);
    fsdp["sharding"] = {{"stage", 3}};
    const models::JobResult d = run_first_job(fsdp);
    json alone = fsdp;
    alone["workers"] = 8;
    alone["network"] = {{"topology", "two_tier"}, {"node", "dgx_h100"}, {"num_nodes", 1}, {"transport", "ideal"}};
    alone["sync"] = {{"kind", "bsp"}};
    CHECK(d.iteration_time_s == ddlsim::testing::approx(run_first_job(alone).iteration_time_s).epsilon(1e-9));
    CHECK(d.machine_bytes_per_iteration == 0.0);
    // Each GPU holds its slice already: the outer step is the WAN's all-reduce alone, 2 L_wan + S / B_wan (plus the
    // sub-microsecond links), and no all-gather inside the node follows it.
    const double B = 10e9 / 8.0, L = 0.03;
    json with_outer = fsdp;
    with_outer["sync"]["period"] = 2;
    with_outer["iterations"] = 4;
    const double outer = (run_first_job(with_outer).iteration_time_s * 4 - inner_only(with_outer)) / 2;
    CHECK(outer >= 2 * L + kS / B);
    CHECK(outer <= 2 * L + kS / B + 10e-6);
}

TEST_CASE("diloco: streaming fragments move the same bytes and hide their outer steps behind inner steps") {
    // Two layers of S/2 whose backward takes 40 ms each: an inner step is 80 ms plus the island's ring. A fragment's
    // outer step is 2 L_wan + (S/2) / B_wan = 2 ms + 40 ms, shorter than one inner step.
    const json two_layers{{"layers", json::array({testing::gradient_layer("a", kS / 2, 0, "40ms"),
                                                  testing::gradient_layer("b", kS / 2, 0, "40ms")})}};
    const double B = 10e9 / 8.0, L = 0.001, fragment = 2 * L + kS / 2 / B;
    json whole = diloco(4, 8, "10Gbps", two_layers, "1ms");
    json streaming = whole;
    streaming["sync"]["fragments"] = 2;
    const models::JobResult w = run_first_job(whole), s = run_first_job(streaming);
    // The fragments together are the model: the same bytes per period.
    CHECK(s.machine_bytes_per_iteration == ddlsim::testing::approx(w.machine_bytes_per_iteration).epsilon(1e-12));
    CHECK(s.rounds == 4);
    // Waiting for each fragment: four outer steps of at least `fragment` each on top of the inner steps.
    const double inner = inner_only(streaming);
    CHECK(s.iteration_time_s * 8 >= inner + 4 * fragment);
    // With one inner step of overlap only the last fragment, which the run's end waits for, is exposed; its
    // all-gather shares NVLink with an inner ring (1 ms of slack for that).
    streaming["sync"]["overlap_steps"] = 1;
    const double overlapped = run_first_job(streaming).iteration_time_s * 8;
    CHECK(overlapped >= inner + fragment);
    CHECK(overlapped <= inner + fragment + 1e-3);
}

TEST_CASE("diloco: outer gradients at 4 bits cross the WAN in an eighth of fp32's bytes and time") {
    // fp32 gradients (kS bytes), 4-bit outer gradients: the WAN all-reduce moves kS / 8, so the blocking outer step
    // of the test above becomes 2 L_wan + (kS / 8) / B_wan. The all-gather inside the node (parameters, not outer
    // gradients) keeps its width: at most 2 kS / 450 GB/s over NVLink, plus the sub-microsecond links.
    const double B = 10e9 / 8.0, L = 0.03;
    json j = diloco(2, 4);
    j["sync"]["outer_bits"] = 4;
    const models::JobResult r = run_first_job(j);
    const double outer = (r.iteration_time_s * 4 - inner_only(j)) / 2;
    CHECK(outer >= 2 * L + kS / 8 / B);
    CHECK(outer <= 2 * L + kS / 8 / B + 2 * kS / 450e9 + 10e-6);
    // Between machines: every GPU sends (S/8) / 8 per outer step, 16 GPUs, two outer steps in four.
    CHECK(r.machine_bytes_per_iteration == ddlsim::testing::approx(16 * kS / 8 / 8 * 2 / 4).epsilon(1e-9));
    // At the gradients' own width (32 bits here) it is the default exactly.
    json same = diloco(2, 4);
    same["sync"]["outer_bits"] = 32;
    CHECK(run_first_job(same).iteration_time_s == run_first_job(diloco(2, 4)).iteration_time_s);
    // The key belongs to diloco, in its range.
    json bsp = diloco(2, 4);
    bsp["sync"] = {{"kind", "bsp"}, {"outer_bits", 4}};
    CHECK(refused_at(bsp) == "$.sync.outer_bits");
    json zero = diloco(2, 4);
    zero["sync"]["outer_bits"] = 0;
    CHECK(refused_at(zero) == "$.sync.outer_bits");
}

TEST_CASE("diloco: refused at the key where its islands, fragments or overlap cannot be") {
    json uneven = diloco(4, 8);
    uneven["sync"]["islands"] = 3;
    CHECK(refused_at(uneven) == "$.sync.islands");
    json no_islands = diloco(4, 8);
    no_islands["sync"].erase("islands");
    CHECK(refused_at(no_islands) == "$.sync.islands");
    json no_period = diloco(4, 8);
    no_period["sync"].erase("period");
    CHECK(refused_at(no_period) == "$.sync.period");
    json fragments = diloco(4, 8);
    fragments["sync"]["fragments"] = 3;  // does not divide the period
    CHECK(refused_at(fragments) == "$.sync.fragments");
    json more_fragments_than_layers = diloco(4, 8);
    more_fragments_than_layers["sync"]["fragments"] = 2;  // one layer
    CHECK(refused_at(more_fragments_than_layers) == "$.sync.fragments");
    json overlap = diloco(4, 8);
    overlap["sync"]["overlap_steps"] = 4;
    CHECK(refused_at(overlap) == "$.sync.overlap_steps");
    json bsp_islands = diloco(4, 8);
    bsp_islands["sync"] = {{"kind", "bsp"}, {"islands", 2}};
    CHECK(refused_at(bsp_islands) == "$.sync.islands");
    json hybrid = diloco(4, 8);
    hybrid["sharding"] = {{"stage", 3}, {"group", "node"}};
    CHECK(refused_at(hybrid) == "$.sharding.group");
    json zero_pp = diloco(4, 8);
    zero_pp["sharding"] = {{"stage", 3}, {"quantized_weights", true}};
    CHECK(refused_at(zero_pp) == "$.sharding");
    json compressed = diloco(4, 8);
    compressed["compression"] = {{"kind", "fp16"}};
    CHECK(refused_at(compressed) == "$.compression.kind");
    json priority = diloco(4, 8);
    priority["overlap"] = {{"priority", true}};
    CHECK(refused_at(priority) == "$.overlap.priority");
    json ps = diloco(4, 8);
    ps["architecture"] = {{"kind", "ps"}, {"servers", 2}};
    CHECK(refused_at(ps) == "$.sync.kind");
    json nvls = diloco(4, 8);
    nvls["architecture"]["algorithm"] = "nvls";
    CHECK(refused_at(nvls) == "$.sync.kind");
    // Buckets overlapping backward run inside the islands as under BSP.
    json buckets = diloco(4, 8);
    buckets["overlap"] = {{"fusion", "buffer"}};
    CHECK(refused_at(buckets) == "accepted");
}
