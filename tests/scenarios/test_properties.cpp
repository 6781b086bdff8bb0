// Random valid scenarios (seeded): every one must load, run, and give finite, positive,
// physically possible results. In Debug and sanitizer builds the network also checks its
// own invariants on every re-solve and completion (no link above capacity, every
// transfer delivered exactly once) and throws if one breaks.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/rng.hpp"
#include "sim/trace.hpp"
#include "tests/support/support.hpp"

using nlohmann::json;
using namespace ddlsim;

namespace {

json random_scenario(sim::rng::SplitMix64& rng) {
    auto pick = [&](std::initializer_list<const char*> v) { return *(v.begin() + sim::rng::below(rng, v.size())); };
    auto between = [&](int lo, int hi) {
        return lo + static_cast<int>(sim::rng::below(rng, static_cast<std::uint64_t>(hi - lo + 1)));
    };
    const int workers = between(1, 12);
    const std::string bw = fmt::format("{}Gbps", pick({"1", "10", "25", "100"}));
    json net;
    const std::string topology = pick({"star", "two_tier", "fat_tree", "leaf_spine", "ring", "torus2d"});
    if (topology == "star" || topology == "ring") {
        net = {{"topology", topology}, {"bandwidth", bw}, {"latency", "2us"}};
    } else if (topology == "two_tier") {
        net = {{"topology", "two_tier"},
               {"gpus_per_node", between(1, 4)},
               {"nics_per_node", between(1, 2)},
               {"bandwidth", bw},
               {"latency", "2us"},
               {"intra_bandwidth", "300Gbps"},
               {"intra_latency", "1us"}};
    } else if (topology == "fat_tree") {
        net = {{"topology", "fat_tree"}, {"k", 4}, {"bandwidth", bw}, {"latency", "1us"}};
    } else if (topology == "leaf_spine") {
        net = {{"topology", "leaf_spine"}, {"hosts_per_leaf", between(1, 4)},
               {"spines", between(1, 3)},  {"oversubscription", between(1, 4)},
               {"bandwidth", bw},          {"latency", "1us"}};
    } else {
        net = {{"topology", "torus2d"}, {"dims", {4, 4}}, {"bandwidth", bw}, {"latency", "1us"}};
    }
    net["routing"] = pick({"ecmp", "dmodk"});
    json arch;
    switch (rng() % 3) {
        case 0:
            arch = {
                {"kind", "allreduce"},
                {"algorithm", pick({"ring", "tree", "double_tree", "halving_doubling", "hierarchical", "torus2d"})}};
            if (rng() % 2) arch["segment_size"] = pick({"1MB", "8MB"});
            break;
        case 1:
            arch = {{"kind", "ps"},
                    {"sharding", pick({"bytes", "round_robin", "balanced"})},
                    {"per_tensor", rng() % 2 == 0}};
            if (rng() % 3 == 0)
                arch["placement"] = "colocated";
            else
                arch["servers"] = between(1, 3);
            if (rng() % 4 == 0) arch = {{"kind", "ps"}, {"style", "byteps"}, {"servers", between(0, 2)}};
            break;
        default: arch = {{"kind", "gossip"}, {"graph", pick({"ring", "torus", "exponential", "random_matching"})}};
    }
    json j{{"workers", workers},
           {"model", pick({"resnet50", "alexnet", "bert_base", "vgg16", "gpt2"})},
           {"batch_size", between(1, 64)},
           {"iterations", between(1, 3)},
           {"device", pick({"V100", "A100", "H100"})},
           {"network", net},
           {"architecture", arch},
           {"seed", rng() % 1000}};
    if (topology == "fat_tree" || topology == "torus2d") j["workers"] = std::min(workers, 16);
    if (rng() % 5 == 0) j["network"]["model"] = "analytic";
    // Sync, stragglers, compression and overlap dimensions, some of them invalid together on purpose (bad input must be
    // reported with a path; valid combinations must run).
    const std::string kind = arch["kind"];
    if (rng() % 3 == 0) {
        if (kind == "ps")
            j["sync"] = json::parse(pick({R"({"kind": "asp"})", R"({"kind": "ssp", "staleness": 1})",
                                          R"({"kind": "local_sgd", "period": 2})",
                                          R"({"kind": "fedavg", "clients_per_round": 1, "local_steps": 2})"}));
        else if (kind == "gossip")
            j["sync"] = {{"kind", "asp"}};
        else
            j["sync"] = {{"kind", "local_sgd"}, {"period", between(1, 3)}};
    }
    if (rng() % 3 == 0)
        j["compression"] = json::parse(pick({R"({"kind": "fp16"})", R"({"kind": "qsgd", "bits": 4})",
                                             R"({"kind": "topk", "density": 0.01, "error_feedback": true})",
                                             R"({"kind": "randomk", "density": 0.1})", R"({"kind": "terngrad"})",
                                             R"({"kind": "powersgd", "rank": 2})", R"({"kind": "gtopk"})",
                                             R"({"kind": "dgc", "density": 0.001})", R"({"kind": "signsgd"})"}));
    if (rng() % 3 == 0)
        j["overlap"] = json::parse(pick({R"({"wfbp": true})", R"({"fusion": "buffer", "bucket_size": "10MB"})",
                                         R"({"wfbp": true, "fusion": "buffer", "cycle_time": "2ms"})",
                                         R"({"fusion": "mgwfbp"})", R"({"priority": true, "partition_size": "2MB"})"}));
    if (rng() % 4 == 0)
        j["stragglers"] = json::parse(pick({R"({"fixed": {"0": 1.5}})", R"({"distribution": "lognormal"})",
                                            R"({"distribution": "exponential", "mean_delay": "1ms"})",
                                            R"({"distribution": "periodic", "every": 2})"}));
    // Drawn last, so that the dimensions above stay what they were for every seed: BytePS partitions, sharding
    // (ZeRO-1..3, FSDP, HSDP by node), gradient accumulation (some of them invalid together on purpose).
    if (arch.value("style", "") == "byteps" && rng() % 2 == 0)
        j["architecture"]["partition_size"] = pick({"512KiB", "4MB"});
    if (kind == "allreduce" && rng() % 4 == 0) {
        j["sharding"] = {{"stage", between(1, 3)}};
        if (rng() % 3 == 0) j["sharding"]["group"] = "node";
    }
    if (rng() % 6 == 0) j["gradient_accumulation"] = between(2, 4);
    return j;
}

}  // namespace

TEST_CASE("properties: a model with no compute has scaling efficiency 0 once it communicates (docs/CONTRACT.md)") {
    // A communication benchmark: one worker alone is unboundedly fast, so efficiency = compute / iteration -> 0.
    json j = testing::star_scenario({.workers = 4, .iterations = 2, .architecture = testing::ring_allreduce()});
    j["model"] = json::parse(
        R"({"layers": [{"name": "g", "params": 1000000, "fwd_time": "0s", "bwd_time": "0s", "update_time": "0s"}]})");
    const auto many = scenario::run_scenario(scenario::load_scenario(j)).jobs.at(0);
    CHECK(many.compute_time_s == 0.0);
    CHECK(many.iteration_time_s > 0.0);
    CHECK(many.scaling_efficiency == 0.0);
    j["workers"] = 1;
    const auto one = scenario::run_scenario(scenario::load_scenario(j)).jobs.at(0);
    CHECK(one.iteration_time_s == 0.0);
    CHECK(one.scaling_efficiency == 1.0);
    CHECK(one.throughput_samples_per_s == 0.0);
}

TEST_CASE("properties: random valid scenarios give finite, positive, possible results (300 seeds)") {
    int ran = 0;
    for (std::uint64_t seed = 1; seed <= 300; ++seed) {
        sim::rng::SplitMix64 rng(seed);
        const json j = random_scenario(rng);
        CAPTURE(seed);
        CAPTURE(j.dump());
        scenario::Scenario s;
        try {
            s = scenario::load_scenario(j);
        } catch (const scenario::ScenarioError& e) {
            // A random combination may be inconsistent (e.g. more workers than a fabric's hosts);
            // that must be reported as bad input, with a path, never anything else.
            CHECK_FALSE(e.path().empty());
            continue;
        }
        const auto r = scenario::run_scenario(s);
        ++ran;
        const auto& job = r.jobs.at(0);
        const bool fedavg = j.contains("sync") && j["sync"]["kind"] == "fedavg";
        CHECK(std::isfinite(job.iteration_time_s));
        CHECK(job.iteration_time_s > 0.0);
        if (!fedavg) CHECK(job.iteration_time_s >= job.compute_time_s * (1 - 1e-12));
        CHECK(job.exposed_communication_time_s <= job.iteration_time_s * (1 + 1e-12));
        CHECK(job.scaling_efficiency > 0.0);
        CHECK(job.scaling_efficiency <= 1.0);  // exactly: rounding is clamped (a third hostile corpus found 1 + 2e-16)
        CHECK(job.communication_time_s >= 0.0);
        CHECK(job.bytes_on_wire_per_iteration >= 0.0);
        CHECK(std::isfinite(job.throughput_samples_per_s));
        for (const auto& l : r.busiest_links) CHECK(l.utilization <= 1.0 + 1e-9);
        // The result contract (docs/CONTRACT.md): the breakdown's four parts sum to the iteration, MFU is a
        // fraction.
        auto a = scenario::result_json(s, r);
        const json& parts = a.at("time_breakdown_s");
        double sum = 0.0;
        for (const auto& [k, v] : parts.items()) {
            CHECK(v.get<double>() >= 0.0);
            sum += v.get<double>();
        }
        CHECK(sum == ddlsim::testing::approx(job.iteration_time_s).epsilon(1e-9));
        if (a.contains("mfu")) {
            CHECK(a["mfu"].get<double>() >= 0.0);
            CHECK(a["mfu"].get<double>() <= 1.0);
        }
        // Determinism: the same scenario again gives the same JSON but for wall time; recording a timeline
        // (--trace) changes nothing in the result (every third seed: it costs a run), not even how it was simulated
        // (its flow classes and events).
        sim::Trace trace;
        const bool traced = seed % 3 == 0;
        auto b = scenario::result_json(s, scenario::run_scenario(s, traced ? &trace : nullptr));
        a.erase("wall_time_s");
        b.erase("wall_time_s");
        CHECK(a == b);
    }
    CHECK(ran > 150);
}

namespace {

// Every link of the scenario's network twice as fast (host, NIC, intra-node and custom links).
json faster(json j) {
    auto twice = [](const json& bw) {
        const std::string s = bw.get<std::string>();
        const auto unit = s.find_first_not_of("0123456789.e+-");
        return fmt::format("{}{}", 2.0 * std::stod(s.substr(0, unit)), s.substr(unit));
    };
    auto& n = j["network"];
    for (const char* k : {"bandwidth", "intra_bandwidth"})
        if (n.contains(k)) n[k] = twice(n[k]);
    return j;
}

}  // namespace

TEST_CASE("properties: metamorphic relations across architecture x sync x overlap x compression (200 seeds)") {
    // For every random scenario that loads and runs on the flow network:
    //  1. raising every link's bandwidth never slows an iteration (schemes that re-plan their messages for the
    //     network, Horovod cycles and MG-WFBP, by at most 2 %: their grouping heuristic may pick more, smaller
    //     messages on the faster network);
    //  2. with no overheads (ideal transport, zero latency, no compute slowdown), sending gradients while
    //     backward runs (wfbp, buckets, mgwfbp) is never slower than sending them after it (priority
    //     scheduling is left out: its credit bounds the partitions in flight by design);
    //  3. local aggregation never adds bytes between machines;
    //  4. the loader's up-front event estimate is within 10x of the events processed (MG-WFBP: at most 10x
    //     below; the estimate takes one message per layer, and merging sends fewer).
    int checked = 0;
    for (std::uint64_t seed = 1001; seed <= 1200; ++seed) {
        sim::rng::SplitMix64 rng(seed);
        json j = random_scenario(rng);
        if (j["network"].value("model", "flow") != "flow") continue;
        CAPTURE(seed);
        CAPTURE(j.dump());
        scenario::Scenario s;
        try {
            s = scenario::load_scenario(j);
        } catch (const scenario::ScenarioError&) {
            continue;
        }
        const auto r = scenario::run_scenario(s);
        const double t = r.jobs.at(0).iteration_time_s;
        ++checked;
        // 4. Event estimate.
        const double estimate = scenario::estimated_events(s);
        // (a run of a few hundred events is dominated by fixed per-iteration events: 1000 events of slack)
        const bool replans = j.contains("overlap") &&
                             (j["overlap"].contains("cycle_time") || j["overlap"].value("fusion", "") == "mgwfbp");
        CHECK(estimate >= static_cast<double>(r.events) / 10.0 - 1000.0);
        if (!(j.contains("overlap") && j["overlap"].value("fusion", "") == "mgwfbp"))
            CHECK(estimate <= static_cast<double>(r.events) * 10.0 + 1000.0);
        // 1. Faster links.
        const auto fast = scenario::run_scenario(scenario::load_scenario(faster(j)));
        CHECK(fast.jobs.at(0).iteration_time_s <= t * (replans ? 1.02 : 1 + 1e-9) + 1e-12);
        // 2. Overlap without overheads.
        if (j.contains("overlap") && !j["overlap"].value("priority", false) &&
            (!j.contains("sync") || j["sync"]["kind"] == "bsp")) {
            json ideal = j;
            ideal["network"]["transport"] = "ideal";
            ideal["network"]["latency"] = "0us";
            if (ideal["network"].contains("intra_latency")) ideal["network"]["intra_latency"] = "0us";
            json none = ideal;
            none.erase("overlap");
            const double with = scenario::run_scenario(scenario::load_scenario(ideal)).jobs.at(0).iteration_time_s;
            const double without = scenario::run_scenario(scenario::load_scenario(none)).jobs.at(0).iteration_time_s;
            // BytePS overlapped: the messages run as concurrent rounds that share each link evenly, so their pulls
            // wait for pushes that one pipelined round (no overlap) would have finished; where communication dominates,
            // that costs up to a few percent (docs/ACCURACY.md, BytePS).
            const bool byteps = j["architecture"].value("style", "") == "byteps";
            CHECK(with <= without * (byteps ? 1.06 : 1 + 1e-9) + 1e-12);
        }
        // 3. Local aggregation.
        if (j["architecture"]["kind"] == "ps" && (!j.contains("sync") || j["sync"]["kind"] == "bsp")) {
            json flat = j;
            flat["architecture"]["local_aggregation"] = false;
            const auto f = scenario::run_scenario(scenario::load_scenario(flat)).jobs.at(0);
            const auto& a = r.jobs.at(0);
            if (a.machine_bytes_per_iteration >= 0.0 && f.machine_bytes_per_iteration >= 0.0)
                CHECK(a.machine_bytes_per_iteration <= f.machine_bytes_per_iteration * (1 + 1e-9));
        }
    }
    CHECK(checked > 80);
}

namespace {

// A result without what may differ between two runs of the same prediction: wall times, and where each value
// came from (a rerun states every value, so its sources read "scenario").
json comparable(json v) {
    if (v.is_object()) {
        json out = json::object();
        for (auto& [k, x] : v.items())
            if (k != "wall_time_s" && !(k.size() > 7 && k.ends_with("_source"))) out[k] = comparable(x);
        return out;
    }
    if (v.is_array())
        for (auto& x : v) x = comparable(x);
    return v;
}

// Runs `j`, then its resolved scenario, and checks both give the same result.
void check_rerun(const json& j, const std::string& base_dir) {
    const scenario::Scenario s = scenario::load_scenario(j, base_dir);
    const json first = scenario::result_json(s, scenario::run_scenario(s));
    const json resolved = first.at("resolved_scenario");
    CAPTURE(resolved.dump());
    const scenario::Scenario again = scenario::load_scenario(resolved, base_dir);
    const json second = scenario::result_json(again, scenario::run_scenario(again));
    CHECK(comparable(second) == comparable(first));
    // The echo is a fixed point: the resolved scenario of the resolved scenario is itself.
    CHECK(second.at("resolved_scenario") == resolved);
}

}  // namespace

// Random scenarios rerun: 150 seeds, 40 under the sanitizers (there each costs about 2.5 s).
#ifdef DDLSIM_SANITIZED
constexpr std::uint64_t kRerunSeeds = 40;
#else
constexpr std::uint64_t kRerunSeeds = 150;
#endif

TEST_CASE("properties: the resolved scenario reruns to the identical result (every example, random seeds)") {
    namespace fs = std::filesystem;
    const fs::path examples = fs::path(DDLSIM_SOURCE_DIR) / "scenarios" / "examples";
    int files = 0;
    for (const auto& e : fs::directory_iterator(examples)) {
        if (e.path().extension() != ".json") continue;
        CAPTURE(e.path().string());
        check_rerun(scenario::read_json_file(e.path().string()), examples.string());
        ++files;
    }
    CHECK(files >= 40);
    int ran = 0;
    for (std::uint64_t seed = 1; seed <= kRerunSeeds; ++seed) {
        sim::rng::SplitMix64 rng(seed);
        const json j = random_scenario(rng);
        CAPTURE(seed);
        try {
            (void)scenario::load_scenario(j);
        } catch (const scenario::ScenarioError&) {
            continue;  // an inconsistent random combination (the test above checks how it is reported)
        }
        check_rerun(j, ".");
        ++ran;
    }
    CHECK(ran >= static_cast<int>(kRerunSeeds * 2 / 5));
}
