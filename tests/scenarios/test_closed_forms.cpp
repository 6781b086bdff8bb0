// docs/CONTRACT.md §4 closed forms, through the whole stack (loader -> fabric -> trainer ->
// flow network), on an idle star with zero compute so iteration = communication.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/support.hpp"

using nlohmann::json;
using namespace ddlsim;

namespace {

constexpr double kL = 5e-6;  // per-link latency, s

// A one-layer model of S bytes of fp32 gradients with no compute, on a star.
json comm_only(int n, double S, double gbps, const json& arch, const char* model = "flow") {
    return testing::star_scenario({.workers = n,
                                   .model = testing::one_layer_model(S),
                                   .batch_size = 1,
                                   .iterations = 1,
                                   .bandwidth = fmt::format("{}Gbps", gbps),
                                   .network_model = model,
                                   .transport = "ideal",
                                   .architecture = arch});
}

scenario::RunResult run(const json& j) {
    return scenario::run_scenario(scenario::load_scenario(j));
}

void check_both_models(int n, double S, double gbps, const json& arch, double expected) {
    CAPTURE(n);
    CAPTURE(S);
    CAPTURE(gbps);
    CAPTURE(arch.dump());
    for (const char* model : {"flow", "analytic"}) {
        CAPTURE(model);
        const auto r = run(comm_only(n, S, gbps, arch, model));
        CHECK(r.jobs.front().iteration_time_s == ddlsim::testing::approx(expected).epsilon(1e-6));
        CHECK(r.jobs.front().communication_time_s == ddlsim::testing::approx(expected).epsilon(1e-6));
    }
}

const int kWorkers[] = {2, 4, 16, 64};
const double kSizes[] = {1e6, 100e6};
const double kGbps[] = {1, 10, 100};

}  // namespace

TEST_CASE("closed form: ring all-reduce T = 2(n-1)(2L + S/(nB)), bytes 2(n-1)S") {
    const json arch{{"kind", "allreduce"}, {"algorithm", "ring"}};
    for (int n : kWorkers)
        for (double S : kSizes)
            for (double g : kGbps) {
                const double B = g * 1e9 / 8;
                check_both_models(n, S, g, arch, 2.0 * (n - 1) * (2 * kL + S / (n * B)));
                const auto r = run(comm_only(n, S, g, arch));
                CHECK(r.jobs.front().bytes_on_wire_per_iteration ==
                      ddlsim::testing::approx(2.0 * (n - 1) * S).epsilon(1e-12));
            }
}

TEST_CASE("closed form: parameter server, one dedicated server T = 2(2L + nS/B)") {
    const json arch{{"kind", "ps"}, {"servers", 1}};
    for (int n : kWorkers)
        for (double S : kSizes)
            for (double g : kGbps) {
                const double B = g * 1e9 / 8;
                check_both_models(n, S, g, arch, 2.0 * (2 * kL + n * S / B));
                // Every worker pushes S and pulls S: 2nS bytes cross the wire.
                CHECK(run(comm_only(n, S, g, arch)).jobs.front().bytes_on_wire_per_iteration ==
                      ddlsim::testing::approx(2.0 * n * S));
            }
}

TEST_CASE("closed form: parameter server, k = 4 dedicated servers") {
    // n >= k: each server's downlink carries n shards of S/k: T = 2(2L + nS/(kB)).
    // n = 2 < k: a worker's uplink carries k shards of S/k = S and is the bottleneck
    // (its k flows get B/k each; a server's downlink has only n = 2 < k flows): T = 2(2L + S/B).
    const json arch{{"kind", "ps"}, {"servers", 4}};
    for (int n : kWorkers)
        for (double S : kSizes)
            for (double g : kGbps) {
                const double B = g * 1e9 / 8;
                const double serial = n >= 4 ? n * S / (4 * B) : S / B;
                check_both_models(n, S, g, arch, 2.0 * (2 * kL + serial));
            }
}

TEST_CASE("closed form: colocated parameter server on every worker") {
    // k = n servers, one per worker host; a worker's own shard stays local. Each uplink
    // carries n-1 shards of S/n, each server downlink n-1 shards: T = 2(2L + (n-1)S/(nB)),
    // and (n-1)S bytes go each way per worker: 2n(n-1)S/n = 2(n-1)S on the wire.
    const json arch{{"kind", "ps"}, {"placement", "colocated"}};
    for (int n : kWorkers)
        for (double S : kSizes)
            for (double g : kGbps) {
                const double B = g * 1e9 / 8;
                check_both_models(n, S, g, arch, 2.0 * (2 * kL + (n - 1) * S / (n * B)));
                CHECK(run(comm_only(n, S, g, arch)).jobs.front().bytes_on_wire_per_iteration ==
                      ddlsim::testing::approx(2.0 * (n - 1) * S));
            }
}

TEST_CASE("closed form: gossip on a ring graph T = 2L + dS/B") {
    // Ring graph degree d = 2 (d = 1 for n = 2: both neighbours are the same worker).
    const json arch{{"kind", "gossip"}, {"graph", "ring"}};
    for (int n : kWorkers)
        for (double S : kSizes)
            for (double g : kGbps) {
                const double B = g * 1e9 / 8;
                const int d = n == 2 ? 1 : 2;
                check_both_models(n, S, g, arch, 2 * kL + d * S / B);
            }
}

TEST_CASE("closed form: BSP iteration = forward + backward + communication + update") {
    // One layer with explicit times 10/20/1 ms and 4 workers ring on 10 Gbps:
    // iteration = 31 ms + 2*3*(2L + S/(4B)).
    json j = comm_only(4, 40e6, 10, {{"kind", "allreduce"}});
    j["model"]["layers"][0]["fwd_time"] = "10ms";
    j["model"]["layers"][0]["bwd_time"] = "20ms";
    j["model"]["layers"][0]["update_time"] = "1ms";
    j["iterations"] = 7;
    const double B = 1.25e9;
    const double comm = 6 * (2 * kL + 40e6 / (4 * B));
    const auto r = run(j);
    CHECK(r.jobs.front().iteration_time_s == ddlsim::testing::approx(0.031 + comm).epsilon(1e-9));
    CHECK(r.jobs.front().compute_time_s == ddlsim::testing::approx(0.031).epsilon(1e-12));
    CHECK(r.jobs.front().scaling_efficiency == ddlsim::testing::approx(0.031 / (0.031 + comm)).epsilon(1e-9));
    CHECK(r.jobs.front().throughput_samples_per_s == ddlsim::testing::approx(4 / (0.031 + comm)).epsilon(1e-9));
}

TEST_CASE("two_tier: ring all-reduce is bound by the NIC that carries every chunk") {
    // 2 nodes x 2 GPUs; ring hops 0->1 and 2->3 stay inside a node (2 Li + c/Bi), hops
    // 1->2 and 3->0 cross the NICs (2 Li + 2 L + c/B, "slow"). A worker's step s waits only
    // for its predecessor's step s-1, so fast hops run ahead and the sender of a slow hop
    // has several chunks in flight on its NIC: that uplink carries all 2(n-1) = 6 chunks.
    // Lower bound: first byte after the slow hop's latency, then 6 c / B of serialisation.
    // Upper bound: the lockstep schedule, 6 slow hops (which the analytic model computes).
    const double S = 80e6, c = S / 4, B = 100e9 / 8, L = 2e-6, Li = 1e-6;
    json j = comm_only(4, S, 1, {{"kind", "allreduce"}});
    j["network"] = {{"topology", "two_tier"}, {"gpus_per_node", 2},           {"bandwidth", "100Gbps"},
                    {"latency", "2us"},       {"intra_bandwidth", "300Gbps"}, {"intra_latency", "1us"},
                    {"transport", "ideal"}};
    const double slow = 2 * Li + 2 * L + c / B;
    const double t = run(j).jobs.front().iteration_time_s;
    CHECK(t >= 2 * Li + 2 * L + 6 * c / B);
    CHECK(t <= 6 * slow * (1 + 1e-12));
    j["network"]["model"] = "analytic";
    CHECK(run(j).jobs.front().iteration_time_s == ddlsim::testing::approx(6 * slow).epsilon(1e-9));
}

TEST_CASE("two_tier: parameter server on the top switch") {
    // Server s0 hangs off the top switch; 4 GPUs on 2 nodes push S each. Route GPU -> node
    // switch -> top switch -> s0: Λ = Li + 2L. The server's downlink carries 4 flows (B/4
    // each; a node NIC carries only 2), so a push takes Λ + 4S/B; pulls mirror it:
    // T = 2 (Li + 2L + 4S/B).
    const double S = 10e6, B = 25e9 / 8, L = 3e-6, Li = 1e-6;
    json j = comm_only(4, S, 1, {{"kind", "ps"}, {"servers", 1}, {"local_aggregation", false}});
    j["network"] = {{"topology", "two_tier"}, {"gpus_per_node", 2},           {"bandwidth", "25Gbps"},
                    {"latency", "3us"},       {"intra_bandwidth", "300Gbps"}, {"intra_latency", "1us"},
                    {"transport", "ideal"}};
    CHECK(run(j).jobs.front().iteration_time_s == ddlsim::testing::approx(2 * (Li + 2 * L + 4 * S / B)).epsilon(1e-9));
}

TEST_CASE("contention: workers sharing a host share its NIC") {
    // PS with both workers on h0 and the server on h2: the two pushes share h0's uplink and
    // the two pulls h0's downlink (B/2 each): T = 2 (2L + 2S/B).
    const double S = 8e6, B = 1.25e9;
    // Without local aggregation (the default would sum the two GPUs of h0 inside the machine first).
    json ps = comm_only(2, S, 10, {{"kind", "ps"}, {"server_placement", {"h2"}}, {"local_aggregation", false}});
    ps["network"]["hosts"] = 3;
    ps["placement"] = {"h0", "h0"};
    CHECK(run(ps).jobs.front().iteration_time_s == ddlsim::testing::approx(2 * (2 * kL + 2 * S / B)).epsilon(1e-9));
    // 3 workers on h0 and 1 on h1, server on h2:
    // the server downlink (4 flows) and h0's uplink (3 flows) both bind; max-min gives each
    // push B/4 (the server downlink is the tighter): T = 2 (2L + 4S/B).
    json four = comm_only(4, S, 10, {{"kind", "ps"}, {"server_placement", {"h2"}}, {"local_aggregation", false}});
    four["network"]["hosts"] = 3;
    four["placement"] = {"h0", "h0", "h0", "h1"};
    CHECK(run(four).jobs.front().iteration_time_s == ddlsim::testing::approx(2 * (2 * kL + 4 * S / B)).epsilon(1e-9));
}
