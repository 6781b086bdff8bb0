// Parameter servers summing in the switch (architecture.switch_aggregation, topologies/parameter_server.hpp): the
// pipelined time of the four legs derived by hand on an idle star, the bytes each link carries, the speed-up over the
// plain PS's incast, the switch's memory (segments in flight per stream, shared between jobs), and the refusals at the
// key.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include "tests/support/approx.hpp"

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
            CHECK(r.iteration_time_s == ddlsim::testing::approx((k + 3.0) * seg / kB).epsilon(1e-9));
            // Every worker pushes S and receives S; the server receives one sum and sends one reply.
            CHECK(r.machine_bytes_per_iteration == ddlsim::testing::approx(2.0 * (n + 1.0) * S).epsilon(1e-12));
            // The plain PS: n pushes of S into the server's link, then n pulls out of it.
            const models::JobResult plain = testing::run_first_job(star_ps(n, S, false));
            CHECK(plain.iteration_time_s == ddlsim::testing::approx(2.0 * n * S / kB).epsilon(1e-9));
            CHECK(plain.machine_bytes_per_iteration == ddlsim::testing::approx(2.0 * n * S).epsilon(1e-12));
        }
}

TEST_CASE("switch aggregation with latency: each leg's stream pays its link's latency once, 4 L + (k + 3) s / B") {
    const double seg = topo::switch_aggregation_segment();
    constexpr double L = 5e-6;
    const models::JobResult r = testing::run_first_job(star_ps(4, 4.0 * seg, true, "5us"));
    // A leg's route is one link (host to switch or back). Its segments go back to back (sim::Plan::set_follows):
    // segment i of a leg is ready a stage after it was on the leg before (s/B >> L), behind the previous segment on
    // its own stream, so it pays no second latency; the first segment pays L on each of the four legs. (Paying L per
    // segment, as before the streams, took (k + 3)(L + s/B).)
    CHECK(r.iteration_time_s == ddlsim::testing::approx(4.0 * L + 7.0 * seg / kB).epsilon(1e-9));
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

TEST_CASE("switch memory binds only below the legs' bandwidth-delay product: k L + (k + 3) s / B with no slot") {
    // A stream holds floor(memory / segment) + 4 segments in flight (PsLayout::memory: the four store-and-forward
    // legs' segments beside the memory's slots). With less than one segment of memory, 4: segment i's pushes wait
    // for the multicast of segment i - 4 and pay L again (nothing of theirs was on the wire). By hand, with M_i the
    // end of segment i's multicast: the first four pipeline, M_i = 4L + (i + 4) s/B; then each group of four starts
    // L after the group before ended, M_{i+4} = M_i + 4L + 4 s/B, so for k a multiple of 4, T = k L + (k + 3) s/B.
    // Without latency nothing is held up: (k + 3) s / B whatever the memory.
    const double seg = topo::switch_aggregation_segment();
    constexpr double k = 8.0;
    json j = star_ps(4, k * seg, true);
    j["network"]["aggregation_memory"] = "1KiB";
    CHECK(testing::run_first_job(j).iteration_time_s == ddlsim::testing::approx((k + 3.0) * seg / kB).epsilon(1e-9));
    for (const double L : {50e-6, 400e-6, 2e-3}) {
        CAPTURE(L);
        json tight = star_ps(4, k * seg, true, fmt::format("{}us", L * 1e6));
        tight["network"]["aggregation_memory"] = "1KiB";
        CHECK(testing::run_first_job(tight).iteration_time_s ==
              ddlsim::testing::approx(k * L + (k + 3.0) * seg / kB).epsilon(1e-9));
        // The default 2 MiB holds 4 slots + 4: k = 8 segments all fit, none waits, at any latency.
        const double t =
            testing::run_first_job(star_ps(4, k * seg, true, fmt::format("{}us", L * 1e6))).iteration_time_s;
        CHECK(t == ddlsim::testing::approx(4.0 * L + (k + 3.0) * seg / kB).epsilon(1e-9));
    }
}

TEST_CASE("switch memory shared between jobs (ATP's point): two jobs on one switch get half each") {
    // Two jobs of 4 workers and a server each, on disjoint hosts of one star: their legs share no link, only the
    // switch's memory. L = 400 us, s / B = 524 us. Alone with 2 MiB a job holds 4 + 4 segments: all k = 8 fit, none
    // waits (as above): 4L + (k + 3) s/B. Sharing 2 MiB each holds 2 + 4, which waits where 4L > 2 s/B: slower
    // than alone, and no slower than with no slot at all, k L + (k + 3) s/B. With 4 MiB each holds 4 + 4 again.
    const double seg = topo::switch_aggregation_segment();
    constexpr double k = 8.0, L = 400e-6;
    const auto two_jobs = [&](const std::string& memory) {
        json job = star_ps(4, k * seg, true, "400us");
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
    const double alone = 4.0 * L + (k + 3.0) * seg / kB;
    const auto shared = scenario::run_scenario(scenario::load_scenario(two_jobs("2MiB")));
    REQUIRE(shared.jobs.size() == 2);
    for (const auto& job : shared.jobs) {
        CHECK(job.iteration_time_s > alone * (1 + 1e-6));
        CHECK(job.iteration_time_s <= (k * L + (k + 3.0) * seg / kB) * (1 + 1e-9));
    }
    const auto roomy = scenario::run_scenario(scenario::load_scenario(two_jobs("4MiB")));
    REQUIRE(roomy.jobs.size() == 2);
    for (const auto& job : roomy.jobs) CHECK(job.iteration_time_s == ddlsim::testing::approx(alone).epsilon(1e-9));
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
