// validate/predict.cpp: the scenario a prediction runs is written from typed blocks by the key tables. Oracle: the
// same scenario written by hand in the contract's keys (docs/KEYS.md) predicts the same iteration time, and the
// written scenario is a fixed point of load + resolved_scenario.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <thread>

#include "scenarios/resolved.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/unit_parse.hpp"
#include "validate/predict.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

validate::Calibration calibration(bool measured_transport) {
    validate::Calibration cal;
    cal.layers = {{"fc1", 100'000, 2e5, 1.5e-3, 3.1e-3, 2.0e-4}, {"fc2", 5'000, 1e4, 2.5e-4, 4.0e-4, 1.0e-5}};
    cal.peak_flops = 2.0e11;
    cal.memory_bandwidth = 1.0e10;
    cal.sharing_slots = 2.0;
    cal.network.latency_s = 5e-5;
    cal.network.bandwidth_Bps = 1.1e8;
    cal.network.rate_bps = measured_transport ? 1e9 : 0.0;
    cal.network.goodput_fraction = 0.95;
    cal.codecs["qsgd"] = {2e-9, 1e-9};
    cal.codecs["topk"] = {5e-9, 3e-9};
    cal.transport.measured = measured_transport;
    cal.transport.efficiency = 0.93;
    cal.transport.message_overhead_s = 3.2e-5;
    cal.transport.collective_overhead_s = 1.1e-5;
    return cal;
}

// The scenario as the contract spells it, written by hand (what predict.cpp wrote before the key tables).
json by_hand(const validate::RunConfig& c, const validate::Calibration& cal) {
    const double slowdown = cal.slowdown(c.workers);
    json layers = json::array();
    for (const auto& l : cal.layers)
        layers.push_back({{"name", l.name},
                          {"params", l.params},
                          {"fwd_time", l.fwd_time * slowdown},
                          {"bwd_time", l.bwd_time * slowdown},
                          {"update_time", l.update_time * slowdown}});
    double bandwidth = cal.network.bandwidth_Bps;
    if (cal.network.rate_bps > 0 && c.rate_bps > 0) bandwidth = cal.network.goodput_fraction * c.rate_bps / 8.0;
    json network{{"topology", "star"},
                 {"bandwidth", sim::format_bandwidth(sim::Bandwidth::bytes_per_s(bandwidth))},
                 {"latency", cal.network.latency_s / 2.0},
                 {"transport", "ideal"}};
    if (cal.transport.measured && c.rate_bps > 0) {
        network["bandwidth"] = sim::format_bandwidth(sim::Bandwidth::bits_per_s(c.rate_bps));
        network["latency"] = cal.transport.link_latency_s;
        network["transport"] = {{"kind", "tcp"},
                                {"efficiency", cal.transport.efficiency},
                                {"message_overhead", cal.transport.message_overhead_s},
                                {"collective_overhead", cal.transport.collective_overhead_s}};
    }
    json arch;
    switch (c.architecture) {
        case topo::ArchKind::allreduce: arch = {{"kind", "allreduce"}, {"algorithm", "ring"}}; break;
        case topo::ArchKind::ps: arch = {{"kind", "ps"}, {"servers", 1}, {"placement", "dedicated"}}; break;
        case topo::ArchKind::gossip: arch = {{"kind", "gossip"}, {"graph", "ring"}}; break;
    }
    json j{{"workers", c.workers},
           {"batch_size", c.batch},
           {"iterations", c.sync == models::SyncKind::local_sgd ? 2 * c.period : 6},
           {"model", {{"layers", layers}}},
           {"device",
            {{"peak_flops", cal.peak_flops},
             {"efficiency", 1.0},
             {"memory_bandwidth", sim::format_bandwidth(sim::Bandwidth::bytes_per_s(cal.memory_bandwidth))}}},
           {"network", network},
           {"architecture", arch}};
    if (c.sync == models::SyncKind::local_sgd) j["sync"] = {{"kind", "local_sgd"}, {"period", c.period}};
    return j;
}

double iteration_time(const json& j) {
    const auto s = scenario::load_scenario(j, ".");
    return scenario::run_scenario(s).jobs.at(0).iteration_time_s;
}

}  // namespace

TEST_CASE("predict: the typed scenario predicts what the hand-written one does, and reruns to itself") {
    for (const bool measured : {false, true}) {
        const auto cal = calibration(measured);
        for (const auto arch : {topo::ArchKind::allreduce, topo::ArchKind::ps, topo::ArchKind::gossip})
            for (const auto sync : {models::SyncKind::bsp, models::SyncKind::local_sgd}) {
                if (arch == topo::ArchKind::gossip && sync != models::SyncKind::bsp) continue;  // D-PSGD is bsp/asp
                validate::RunConfig c;
                c.workers = 4;
                c.batch = 16;
                c.architecture = arch;
                c.sync = sync;
                c.period = 3;
                c.rate_bps = 1e9;
                CAPTURE(measured);
                CAPTURE(static_cast<int>(arch));
                CAPTURE(static_cast<int>(sync));
                const auto p = validate::predict(c, cal);
                CHECK(p.iteration_time_s == ddlsim::testing::approx(iteration_time(by_hand(c, cal))).epsilon(1e-12));
                // Written by the key tables, the file is what loading it and writing it back gives (plus the
                // placement the loader resolves).
                json back = scenario::resolved_scenario(scenario::load_scenario(p.scenario, "."));
                CHECK(back["placement"].size() == c.workers);
                back.erase("placement");
                CHECK(back == p.scenario);
            }
    }
}

// The codecs' cost scale: the measured encode and decode of the whole gradient (x n decodes for payloads that
// cannot be summed), each slowed by what runs it while every worker codes at once. On the CPU backend both share the
// cores: slowdown s = n / slots. On the CUDA backend the encode shares the GPU (s) and the decode runs on the host,
// slowed only beyond its cores: h = max(1, n / cores). The simulator's own codec model is the same for both, so the
// ratio of the two scales is (e s + n d h) / ((e + n d) s), derived by hand from the calibrated e and d.
TEST_CASE("predict: a CUDA worker's decode runs on the host, its encode shares the GPU") {
    auto cal = calibration(false);
    cal.sharing_slots = 1.0;  // one GPU (or one core): 4 workers take 4x as long
    validate::RunConfig c;
    c.workers = 4;
    c.codec.kind = validate::CodecKind::qsgd;  // not summable: the ring all-gathers, every worker decodes n payloads
    c.codec.bits = 8;
    const auto scale = [&](validate::Backend b) {
        cal.backend = b;
        return validate::scenario_for(c, cal)["compression"]["cost_scale"].get<double>();
    };
    const double cpu = scale(validate::Backend::cpu), cuda = scale(validate::Backend::cuda);
    const double e = 2e-9, d = 1e-9, n = 4.0, s = n / cal.sharing_slots;
    const double h = std::max(1.0, n / std::max(1U, std::thread::hardware_concurrency()));
    CHECK(cuda / cpu == ddlsim::testing::approx((e * s + n * d * h) / ((e + n * d) * s)).epsilon(1e-12));
    CHECK(cuda <= cpu);  // s = 4 >= h
    if (std::thread::hardware_concurrency() >= 2) CHECK(cuda < cpu);
}
