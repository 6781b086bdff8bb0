// Synchronisation schemes, heterogeneity and stragglers, each against a
// hand-derived invariant (see models/trainer.hpp for the semantics).
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/support.hpp"

using nlohmann::json;
using namespace ddlsim;

namespace {

constexpr double kL = 5e-6;  // per-link latency (s)

// One layer: S bytes of fp32 gradients, forward f, backward b, no update; a star of `gbps`.
json one_layer(int n, double S, double f, double b, double gbps, const json& arch) {
    return testing::star_scenario({.workers = n,
                                   .model = testing::one_layer_model(S, f, b),
                                   .batch_size = 1,
                                   .iterations = 10,
                                   .bandwidth = fmt::format("{}Gbps", gbps),
                                   .transport = "ideal",
                                   .architecture = arch});
}

const json kRing{{"kind", "allreduce"}, {"algorithm", "ring"}};
const json kPs{{"kind", "ps"}, {"servers", 1}};

models::JobResult run(const json& j) {
    return scenario::run_scenario(scenario::load_scenario(j)).jobs.front();
}

double ring_time(int n, double S, double gbps) {
    return 2.0 * (n - 1) * (2 * kL + S / (n * gbps * 1e9 / 8));
}

}  // namespace

TEST_CASE("bsp: a worker twice as slow sets the iteration: 2 x compute + communication") {
    const int n = 8;
    const double S = 40e6, f = 0.01, b = 0.02;
    for (const char* model : {"flow", "analytic"}) {
        CAPTURE(model);
        json j = one_layer(n, S, f, b, 10, kRing);
        j["network"]["model"] = model;
        j["stragglers"] = {{"fixed", {{"0", 2.0}}}};
        const auto r = run(j);
        CHECK(r.iteration_time_s == ddlsim::testing::approx(2 * (f + b) + ring_time(n, S, 10)).epsilon(1e-6));
        // The fast workers wait for the slow one: idle = (f + b) + communication per iteration.
        REQUIRE(r.workers.size() == static_cast<std::size_t>(n));
        CHECK(r.workers[1].idle_s == ddlsim::testing::approx(10 * ((f + b) + ring_time(n, S, 10))).epsilon(1e-6));
        CHECK(r.workers[0].idle_s == ddlsim::testing::approx(10 * ring_time(n, S, 10)).epsilon(1e-6));
    }
}

TEST_CASE("bsp: a heterogeneous cluster runs at the pace of its slowest device") {
    json j = one_layer(4, 8e6, 0.0, 0.0, 10, kRing);
    // Layers with FLOPs so the device matters: 1 GFLOP forward per sample.
    j["model"]["layers"][0].erase("fwd_time");
    j["model"]["layers"][0].erase("bwd_time");
    j["model"]["layers"][0]["fwd_flops"] = 1e9;
    j["batch_size"] = 64;
    const json v100 = {{"name", "V100"}, {"efficiency", 0.5}}, p100 = {{"name", "P100"}, {"efficiency", 0.5}};
    j["worker_devices"] = {v100, v100, p100, v100};
    const auto r = run(j);
    // P100 (SXM2) fp32 peak 10.6 TFLOPS at efficiency 0.5: 3 x 64 GFLOP / 5.3 TFLOP/s.
    const double slowest = 3 * 64e9 / (10.6e12 * 0.5);
    CHECK(r.iteration_time_s == ddlsim::testing::approx(slowest + ring_time(4, 8e6, 10)).epsilon(1e-6));
}

TEST_CASE("network.host_bandwidth: a slow host link bounds a ring: 2(n-1)(2L + S/(n B_slow))") {
    json j = one_layer(4, 8e6, 0.0, 0.0, 10, kRing);
    j["network"]["host_bandwidth"] = {{"h2", "1Gbps"}};
    CHECK(run(j).iteration_time_s == ddlsim::testing::approx(ring_time(4, 8e6, 1)).epsilon(1e-6));
}

TEST_CASE("asp: n homogeneous workers see staleness n-1 (mean (n-1)(1 - 1/(2I)) over I iterations)") {
    for (int n : {2, 4, 8}) {
        CAPTURE(n);
        json j = one_layer(n, 4e6, 0.01, 0.02, 10, kPs);
        j["sync"] = {{"kind", "asp"}};
        j["iterations"] = 20;
        const auto r = run(j);
        REQUIRE(r.has_staleness);
        CHECK(r.staleness_max == static_cast<std::uint64_t>(n - 1));
        CHECK(r.staleness_mean == ddlsim::testing::approx((n - 1) * (1.0 - 1.0 / 40)).epsilon(1e-12));
        CHECK(r.model_versions == static_cast<std::uint64_t>(n * 20));
    }
}

TEST_CASE("ssp: never more than s iterations ahead, and its throughput lies between bsp and asp") {
    // Compute-bound (100 Gbps) with lognormal stragglers, where waiting is what differs.
    json j = one_layer(8, 4e6, 0.01, 0.02, 100, kPs);
    j["iterations"] = 60;
    j["stragglers"] = {{"distribution", "lognormal"}, {"sigma", 0.5}};
    j["sync"] = {{"kind", "bsp"}};
    const double bsp = run(j).throughput_samples_per_s;
    j["sync"] = {{"kind", "asp"}};
    const auto asp = run(j);
    double previous = bsp;
    for (int s : {0, 1, 3}) {
        CAPTURE(s);
        j["sync"] = {{"kind", "ssp"}, {"staleness", s}};
        const auto r = run(j);
        CHECK(r.max_lead <= static_cast<std::uint32_t>(s));
        // Between BSP and ASP. The flow model shares the server's links among whoever pushes at
        // the moment, so blocking can shift contention by a fraction of a percent either way.
        CHECK(r.throughput_samples_per_s >= bsp * 0.99);
        CHECK(r.throughput_samples_per_s <= asp.throughput_samples_per_s * 1.01);
        CHECK(r.throughput_samples_per_s >= previous * 0.99);  // a looser bound does not slow it down
        previous = r.throughput_samples_per_s;
    }
    CHECK(asp.throughput_samples_per_s > bsp * 1.05);
    CHECK(asp.max_lead > 3);
}

TEST_CASE("ssp: a permanent straggler holds the others exactly s iterations ahead") {
    json j = one_layer(4, 1e6, 0.01, 0.02, 100, kPs);
    j["iterations"] = 30;
    j["stragglers"] = {{"fixed", {{"3", 3.0}}}};
    j["sync"] = {{"kind", "ssp"}, {"staleness", 2}};
    const auto r = run(j);
    CHECK(r.max_lead == 2);
    // Fast workers wait: their idle time is far above zero.
    CHECK(r.workers[0].idle_s > 0.5 * 30 * 0.03);
}

TEST_CASE("ssp / asp / fedavg / ad-psgd: time held back by peers is waiting, not communication") {
    auto sums = [](const models::JobResult& r) {
        REQUIRE(r.breakdown);
        const auto& b = *r.breakdown;
        CHECK(b.compute >= 0.0);
        CHECK(b.codec >= 0.0);
        CHECK(b.exposed_communication >= 0.0);
        CHECK(b.waiting >= 0.0);
        CHECK(b.compute + b.codec + b.exposed_communication + b.waiting ==
              ddlsim::testing::approx(r.iteration_time_s).epsilon(1e-9));
        return b;
    };
    // Workers on their own clocks train at their own rates (docs/MODEL.md): the iteration is n / sum(1 / T_w), T_w
    // = a worker's finish time over its I iterations, and the breakdown weights each worker by its share of steps.
    // Worker 3 three times slower (f + b = 0.03 s, 0.09 s for it), a fast network (a step's push and pull of 1 MB
    // take ~0.2 ms: 5 % tolerance).
    const double fast = 0.03, slow = 0.09, I = 40;
    auto expect = [&](const models::JobResult::Breakdown& b, double iteration, double T_fast) {
        const double rf = 1 / T_fast, rs = 1 / slow, R = 3 * rf + rs;
        CHECK(iteration == ddlsim::testing::approx(4 / R).epsilon(0.05));
        CHECK(b.compute == ddlsim::testing::approx((3 * rf * fast + rs * slow) / R).epsilon(0.05));
        CHECK(b.waiting == ddlsim::testing::approx(3 * rf * (T_fast - fast) / R).epsilon(0.05));
    };
    // SSP with bound 2: the three others are held back to the straggler's pace and end when it has done I - 2
    // iterations, T_fast = (I - 2) 0.09 / I.
    json j = one_layer(4, 1e6, 0.01, 0.02, 100, kPs);
    j["iterations"] = I;
    j["stragglers"] = {{"fixed", {{"3", 3.0}}}};
    j["sync"] = {{"kind", "ssp"}, {"staleness", 2}};
    const auto sr = run(j);
    const auto ssp = sums(sr);
    expect(ssp, sr.iteration_time_s, (I - 2) * slow / I);
    CHECK(ssp.exposed_communication < 0.005);
    // ASP has no bound: the fast workers run at 0.03 s per step and never wait; their idle tail after their last
    // step is no time of the job (it counted as waiting before, so colocated ASP looked slower than BSP):
    // iteration 4 / (3 / 0.03 + 1 / 0.09) = 0.036 s, against BSP's 0.09 s.
    j["sync"] = {{"kind", "asp"}};
    const auto ar = run(j);
    const auto asp = sums(ar);
    expect(asp, ar.iteration_time_s, fast);
    CHECK(asp.waiting < 0.001);
    j["sync"] = {{"kind", "bsp"}};
    CHECK(run(j).iteration_time_s == ddlsim::testing::approx(slow).epsilon(0.05));
    j["architecture"] = {{"kind", "ps"}, {"placement", "colocated"}, {"servers", 4}};
    const double bsp_colocated = run(j).iteration_time_s;
    j["sync"] = {{"kind", "asp"}};
    CHECK(run(j).iteration_time_s < 0.5 * bsp_colocated);
    // AD-PSGD: the same tail, no barrier.
    json g = one_layer(4, 1e6, 0.01, 0.02, 100, json{{"kind", "gossip"}, {"graph", "ring"}});
    g["iterations"] = 40;
    g["stragglers"] = j["stragglers"];
    g["sync"] = {{"kind", "asp"}};
    (void)sums(run(g));
    // FedAvg, four clients per round, 5 local steps, client 3 three times slower: every round waits for it, so
    // the fast clients wait 5 (0.09 - 0.03) = 0.3 s each, 0.225 s on average over the four participants.
    json f = one_layer(4, 1e6, 0.01, 0.02, 100, kPs);
    f["stragglers"] = {{"fixed", {{"3", 3.0}}}};
    f["sync"] = {{"kind", "fedavg"}, {"local_steps", 5}};
    const auto fr = run(f);
    const auto fed = sums(fr);
    CHECK(fed.compute == ddlsim::testing::approx(5 * 0.045).epsilon(1e-6));
    CHECK(fed.waiting == ddlsim::testing::approx(0.225).epsilon(0.05));
    CHECK(fed.exposed_communication == ddlsim::testing::approx(fr.communication_time_s).epsilon(1e-9));
}

TEST_CASE("local sgd: bytes per iteration are bsp's divided by H, iteration = compute + comm / H") {
    const int n = 8;
    const double S = 40e6, f = 0.01, b = 0.02;
    json j = one_layer(n, S, f, b, 10, kRing);
    j["iterations"] = 12;
    const auto bsp = run(j);
    for (int H : {1, 2, 4, 6}) {
        CAPTURE(H);
        j["sync"] = {{"kind", "local_sgd"}, {"period", H}};
        const auto r = run(j);
        CHECK(r.bytes_on_wire_per_iteration ==
              ddlsim::testing::approx(bsp.bytes_on_wire_per_iteration / H).epsilon(1e-12));
        CHECK(r.iteration_time_s == ddlsim::testing::approx(f + b + ring_time(n, S, 10) / H).epsilon(1e-6));
        CHECK(r.rounds == static_cast<std::uint64_t>(12 / H));
    }
}

TEST_CASE("fedavg: per-round traffic scales with clients_per_round, not with the population") {
    const double S = 8e6;
    auto bytes = [&](int population, int c) {
        json j = one_layer(population, S, 0.001, 0.002, 10, kPs);
        j["sync"] = {{"kind", "fedavg"}, {"clients_per_round", c}, {"local_steps", 3}};
        const auto r = run(j);
        CHECK(r.clients_per_round_mean == ddlsim::testing::approx(c));
        CHECK(r.workers.size() == static_cast<std::size_t>(population));
        return r.bytes_on_wire_per_iteration;
    };
    // Every sampled client downloads and uploads S bytes through the dedicated server.
    CHECK(bytes(16, 4) == ddlsim::testing::approx(2 * 4 * S));
    CHECK(bytes(64, 4) == ddlsim::testing::approx(2 * 4 * S));
    CHECK(bytes(64, 8) == ddlsim::testing::approx(2 * 8 * S));
}

TEST_CASE("fedavg: round time = download + E local steps + upload (one client, idle star)") {
    const double S = 8e6, f = 0.01, b = 0.02;
    json j = one_layer(4, S, f, b, 10, kPs);
    j["sync"] = {{"kind", "fedavg"}, {"clients_per_round", 1}, {"local_steps", 5}};
    const double transfer = 2 * kL + S / (10e9 / 8);
    const auto r = run(j);
    CHECK(r.iteration_time_s == ddlsim::testing::approx(2 * transfer + 5 * (f + b)).epsilon(1e-6));
    // Availability: on average c * availability ... at least one client takes part every round.
    j["sync"] = {{"kind", "fedavg"}, {"clients_per_round", 4}, {"availability", 0.25}};
    const auto sparse = run(j);
    CHECK(sparse.clients_per_round_mean >= 1.0);
    CHECK(sparse.clients_per_round_mean < 4.0);
}

TEST_CASE("asp gossip (AD-PSGD): no barrier, so fast workers do not wait for a straggler") {
    json j = one_layer(8, 4e6, 0.01, 0.02, 10, json{{"kind", "gossip"}, {"graph", "ring"}});
    j["stragglers"] = {{"fixed", {{"0", 3.0}}}};
    const auto bsp = run(j);
    j["sync"] = {{"kind", "asp"}};
    const auto ad = run(j);
    REQUIRE(ad.has_staleness);
    // A fast worker far from worker 0 idles only while its own averaging is in flight.
    const double exchange = 2 * kL + 4e6 / (10e9 / 8);
    CHECK(ad.workers[4].idle_s < 10 * 4 * exchange);
    // Under BSP D-PSGD the straggler's lag reaches worker 4 (4 hops away) after 4 rounds and
    // then holds it back 0.06 s per iteration.
    CHECK(bsp.workers[4].idle_s > 5 * 0.06);
    CHECK(bsp.workers[4].idle_s > 4 * ad.workers[4].idle_s);
}

TEST_CASE("stragglers: seeded distributions are deterministic and depend on the seed") {
    json j = one_layer(8, 4e6, 0.01, 0.02, 10, kPs);
    j["stragglers"] = {{"distribution", "lognormal"}, {"sigma", 0.5}};
    j["sync"] = {{"kind", "ssp"}, {"staleness", 1}};
    auto result = [&](std::uint64_t seed) {
        j["seed"] = seed;
        const auto s = scenario::load_scenario(j);
        json out = scenario::result_json(s, scenario::run_scenario(s));
        out.erase("wall_time_s");
        return out.dump();
    };
    CHECK(result(1) == result(1));
    CHECK(result(1) != result(2));
    for (const char* dist : {"exponential", "periodic"}) {
        CAPTURE(dist);
        j["stragglers"] = dist == std::string("exponential")
                              ? json{{"distribution", dist}, {"mean_delay", "5ms"}}
                              : json{{"distribution", dist}, {"every", 4}, {"slowdown", 3.0}};
        CHECK(result(3) == result(3));
    }
}

TEST_CASE("stragglers: periodic slowdown adds (slowdown-1) x compute once every k iterations under bsp") {
    const double f = 0.01, b = 0.02;
    json j = one_layer(4, 1e6, f, b, 100, kRing);
    j["iterations"] = 8;
    j["stragglers"] = {{"distribution", "periodic"}, {"every", 4}, {"slowdown", 3.0}};
    // Iteration i: worker i % 4 is slow, so every iteration has one slow worker: 3 (f + b) + comm.
    CHECK(run(j).iteration_time_s == ddlsim::testing::approx(3 * (f + b) + ring_time(4, 1e6, 100)).epsilon(1e-6));
}
