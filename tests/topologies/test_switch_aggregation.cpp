// Parameter servers summing in the switch (architecture.switch_aggregation, topologies/parameter_server.hpp): the
// pipelined time of the four legs derived by hand on an idle star, the bytes each link carries, the speed-up over the
// plain PS's incast, the switch's memory (a window of segments, shared between jobs), and the refusals at the key.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tests/support/scenario_harness.hpp"
#include "tests/support/support.hpp"
#include "topologies/builders.hpp"
#include "topologies/parameter_server.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

constexpr double kB = 1e9;  // bytes/s of every star link

// n workers and one dedicated server on a star whose switch sums (network.sharp), an fp32 buffer of `bytes`, no
// compute, an ideal transport, links of 1 GB/s and `latency`.
json star_ps(int n, double bytes, bool in_switch, const std::string& latency = "0s") {
    return {
        {"workers", n},
        {"batch_size", 1},
        {"iterations", 2},
        {"model", testing::one_layer_model(bytes)},
        {"device", {{"name", "A100"}, {"precision", "fp32"}}},
        {"network",
         {{"topology", "star"}, {"bandwidth", "1GBps"}, {"latency", latency}, {"transport", "ideal"}, {"sharp", true}}},
        {"architecture", {{"kind", "ps"}, {"servers", 1}, {"switch_aggregation", in_switch}}}};
}

}  // namespace

TEST_CASE("switch aggregation on an idle star: k segments of s through four pipelined legs, (k + 3) s / B") {
    const double seg = topo::switch_aggregation_segment();
    for (const int n : {2, 4, 8})
        for (const double k : {1.0, 3.0, 8.0}) {
            CAPTURE(n);
            CAPTURE(k);
            const double S = k * seg;
            // Push (each worker's own uplink), sum up (the server's downlink), reply (its uplink), multicast (each
            // worker's downlink): four legs on four sets of directed links, each segment alone on its stream.
            const models::JobResult r = testing::run_first_job(star_ps(n, S, true));
            CHECK(r.iteration_time_s == doctest::Approx((k + 3.0) * seg / kB).epsilon(1e-9));
            // Every worker pushes S and receives S; the server receives one sum and sends one reply.
            CHECK(r.machine_bytes_per_iteration == doctest::Approx(2.0 * (n + 1.0) * S).epsilon(1e-12));
            // The plain PS: n pushes of S into the server's link, then n pulls out of it.
            const models::JobResult plain = testing::run_first_job(star_ps(n, S, false));
            CHECK(plain.iteration_time_s == doctest::Approx(2.0 * n * S / kB).epsilon(1e-9));
            CHECK(plain.machine_bytes_per_iteration == doctest::Approx(2.0 * n * S).epsilon(1e-12));
        }
}

TEST_CASE("switch aggregation with latency: every leg pays its one link, (k + 3)(L + s / B)") {
    const double seg = topo::switch_aggregation_segment();
    constexpr double L = 5e-6;
    const models::JobResult r = testing::run_first_job(star_ps(4, 4.0 * seg, true, "5us"));
    // A leg's route is one link (host to switch or back), so each leg pays L: stages of L + s/B, 4 + 3 of them.
    CHECK(r.iteration_time_s == doctest::Approx(7.0 * (L + seg / kB)).epsilon(1e-9));
}

TEST_CASE("switch aggregation on a two_tier of multi-GPU nodes: local aggregation first, the top switch sums") {
    json j = star_ps(8, 8.0 * topo::switch_aggregation_segment(), true);
    j["network"] = {
        {"topology", "two_tier"}, {"gpus_per_node", 4},    {"intra_bandwidth", "10GBps"}, {"bandwidth", "1GBps"},
        {"latency", "0s"},        {"intra_latency", "0s"}, {"transport", "ideal"},        {"intra_transport", "ideal"},
        {"sharp", true}};
    const models::JobResult sw = testing::run_first_job(j);
    j["architecture"]["switch_aggregation"] = false;
    const models::JobResult plain = testing::run_first_job(j);
    // Each GPU pushes and receives a quarter of S through its node's one NIC: at least S / B each way on it.
    const double S = 8.0 * topo::switch_aggregation_segment();
    CHECK(sw.iteration_time_s >= S / kB);
    // The plain server's link carries both nodes' S each way (2 S / B per direction); the switch's sums halve it.
    CHECK(plain.iteration_time_s >= 2.0 * S / kB);
    CHECK(sw.iteration_time_s < plain.iteration_time_s);
}

TEST_CASE("switch aggregation is refused at the key without a switch that sums, or for what it cannot sum") {
    const double S = topo::switch_aggregation_segment();
    json j = star_ps(4, S, true);
    CHECK(testing::refused_at(j) == "accepted");
    j["network"]["sharp"] = false;
    CHECK(testing::refused_at(j) == "$.architecture.switch_aggregation");
    j = star_ps(4, S, true);
    j["sync"] = {{"kind", "asp"}};
    CHECK(testing::refused_at(j) == "$.architecture.switch_aggregation");
    j = star_ps(4, S, true);
    j["compression"] = {{"kind", "topk"}, {"density", 0.01}};
    CHECK(testing::refused_at(j) == "$.architecture.switch_aggregation");
    j = star_ps(4, S, true);
    j["architecture"]["style"] = "byteps";
    CHECK(testing::refused_at(j) == "$.architecture.switch_aggregation");
    j = star_ps(4, S, true);
    j["architecture"] = {{"kind", "allreduce"}, {"switch_aggregation", true}};
    CHECK(testing::refused_at(j) == "$.architecture.switch_aggregation");
    j = star_ps(4, S, true);
    j["network"] = {{"topology", "fat_tree"}, {"k", 4}, {"bandwidth", "1GBps"}, {"latency", "0s"}, {"sharp", true}};
    CHECK(testing::refused_at(j) == "$.network.sharp");
    // On rails each GPU reaches its own rail's leaf: no one switch sums them all.
    j = star_ps(8, S, true);
    j["architecture"]["placement"] = "colocated";
    j["network"] = {{"topology", "rail_optimized"}, {"node", "dgx_h100"}, {"num_nodes", 1}, {"sharp", true}};
    CHECK(testing::refused_at(j) == "$.architecture.switch_aggregation");
}

TEST_CASE("switch memory: a window of w segments, (4k / w + w - 1) s / B on an idle star") {
    // With w slots a segment's pushes wait for the multicast of the segment w places earlier: w segments share one
    // round of the four legs (4 s / B) and the last group adds w - 1 stages. w = 4 (SwitchML's 2 MiB over 512 KiB
    // segments, the default) never waits on an idle star: (k + 3) s / B, as above.
    const double seg = topo::switch_aggregation_segment();
    constexpr double k = 8.0;
    for (const int w : {1, 2, 4}) {
        CAPTURE(w);
        json j = star_ps(4, k * seg, true);
        j["network"]["aggregation_memory"] = fmt::format("{}B", w * seg);
        const models::JobResult r = testing::run_first_job(j);
        CHECK(r.iteration_time_s == doctest::Approx((4.0 * k / w + w - 1.0) * seg / kB).epsilon(1e-9));
    }
    // Less than one segment still holds one.
    json j = star_ps(4, k * seg, true);
    j["network"]["aggregation_memory"] = "1KiB";
    CHECK(testing::run_first_job(j).iteration_time_s == doctest::Approx(4.0 * k * seg / kB).epsilon(1e-9));
}

TEST_CASE("switch memory shared between jobs (ATP's point): two jobs on one switch get half each") {
    // Two jobs of 4 workers and a server each, on disjoint hosts of one star: their legs share no link, only the
    // switch's memory. With 2 MiB (4 segments) each holds 2, and runs as alone with 1 MiB: (2k + 1) s / B; with
    // 4 MiB each holds 4: (k + 3) s / B, as one job alone with the default.
    const double seg = topo::switch_aggregation_segment();
    constexpr double k = 8.0;
    const auto two_jobs = [&](const std::string& memory) {
        json job = star_ps(4, k * seg, true);
        json a = {{"name", "a"},
                  {"workers", 4},
                  {"batch_size", 1},
                  {"model", job["model"]},
                  {"device", job["device"]},
                  {"architecture", job["architecture"]},
                  {"placement", {"h0", "h1", "h2", "h3"}}};
        a["architecture"]["server_placement"] = {"h4"};
        json b = a;
        b["name"] = "b";
        b["placement"] = {"h5", "h6", "h7", "h8"};
        b["architecture"]["server_placement"] = {"h9"};
        json network = job["network"];
        network["hosts"] = 10;
        network["aggregation_memory"] = memory;
        return json{{"iterations", 2}, {"network", network}, {"jobs", {a, b}}};
    };
    const std::vector<std::pair<std::string, double>> cases{{"2MiB", 2.0 * k + 1.0}, {"4MiB", k + 3.0}};
    for (const auto& c : cases) {
        const std::string& memory = c.first;  // a plain reference: clang 14 cannot capture structured bindings
        CAPTURE(memory);
        const auto r = scenario::run_scenario(scenario::load_scenario(two_jobs(memory)));
        REQUIRE(r.jobs.size() == 2);
        for (const auto& job : r.jobs)
            CHECK(job.iteration_time_s == doctest::Approx(c.second * seg / kB).epsilon(1e-9));
    }
}

TEST_CASE("switch memory: network.aggregation_memory applies with sharp, defaults to SwitchML's 2 MiB") {
    json j = star_ps(4, topo::switch_aggregation_segment(), true);
    const auto s = scenario::load_scenario(j);
    const auto& star = std::get<topo::StarSpec>(s.topology);
    CHECK(star.aggregation_memory == 2.0 * 1024 * 1024);
    j["network"]["sharp"] = false;
    j["architecture"]["switch_aggregation"] = false;
    j["network"]["aggregation_memory"] = "1MiB";
    CHECK(testing::refused_at(j) == "$.network.aggregation_memory");
    j["network"]["sharp"] = true;
    j["network"]["aggregation_memory"] = "0B";
    CHECK(testing::refused_at(j) == "$.network.aggregation_memory");
}
