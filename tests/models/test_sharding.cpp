// Sharded data parallelism (`sharding`: ZeRO stages 1-3, FSDP, hybrid sharding): hand-derived step times on an
// idle star, bytes on the wire against the ring all-reduce, memory per GPU against the ZeRO paper's formulas, the
// per-unit all-gathers overlapping compute in the trace, and the refusals.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <string>
#include <vector>

#include "models/workload.hpp"
#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/trace.hpp"
#include "tests/support/support.hpp"

using nlohmann::json;
using namespace ddlsim;

namespace {

constexpr double kL = 5e-6;    // per-link latency of the star, s
constexpr double kB = 1.25e9;  // 10 Gbit/s in bytes/s

// `units` equal layers of `bytes` fp32 gradient bytes each, explicit compute, on an idle star with the ideal
// transport (no per-message overheads, no compute slowdown beside communication).
json star(int n, int units, double bytes, const char* model = "flow") {
    json layers = json::array();
    for (int u = 0; u < units; ++u)
        layers.push_back(testing::gradient_layer(fmt::format("l{}", u), bytes, "1ms", "2ms", "4ms"));
    return testing::star_scenario({.workers = n,
                                   .model = {{"layers", layers}},
                                   .batch_size = 1,
                                   .iterations = 3,
                                   .network_model = model,
                                   .transport = "ideal"});
}

// One ring phase (reduce-scatter or all-gather) of S bytes among n workers on the star: n - 1 steps of S/n, each
// through the switch (two links).
double ring_phase(int n, double S) {
    return (n - 1) * (2 * kL + S / n / kB);
}

models::JobResult run(const json& j) {
    return scenario::run_scenario(scenario::load_scenario(j)).jobs.at(0);
}

}  // namespace

TEST_CASE("sharding: ZeRO-1 and ZeRO-2 on an idle star: compute, reduce-scatter, shard update, all-gather") {
    for (const char* model : {"flow", "analytic"}) {
        for (int n : {2, 4, 8}) {
            for (int stage : {1, 2}) {
                CAPTURE(model);
                CAPTURE(n);
                CAPTURE(stage);
                const double S = 40e6;
                json j = star(n, 1, S, model);
                j["sharding"] = {{"stage", stage}};
                const auto r = run(j);
                const double expected = 0.001 + 0.002 + ring_phase(n, S) + 0.004 / n + ring_phase(n, S);
                CHECK(r.iteration_time_s == ddlsim::testing::approx(expected).epsilon(1e-9));
                CHECK(r.update_time_s == ddlsim::testing::approx(0.004 / n).epsilon(1e-12));
            }
        }
    }
}

TEST_CASE("sharding: ZeRO-3 without prefetch runs every unit's three collectives in series") {
    // prefetch 0: unit u's forward waits for its all-gather, issued when u is reached; in backward, unit u's
    // all-gather queues behind unit u+1's reduce-scatter. Nothing overlaps: the step is the compute plus three ring
    // phases per unit.
    for (const char* model : {"flow", "analytic"}) {
        CAPTURE(model);
        const int n = 4, units = 3;
        const double S = 8e6;
        json j = star(n, units, S, model);
        j["sharding"] = {{"stage", 3}, {"prefetch", 0}};
        const auto r = run(j);
        // update_time is per layer: the shard update is units x 4 ms / n.
        const double expected = units * (0.001 + 0.002 + 0.004 / n) + 3 * units * ring_phase(n, S);
        CHECK(r.iteration_time_s == ddlsim::testing::approx(expected).epsilon(1e-9));
    }
}

TEST_CASE("sharding: prefetching hides all-gathers behind compute, never slower") {
    const int n = 8, units = 6;
    json j0 = star(n, units, 20e6), j1 = j0, j2 = j0;
    j0["sharding"] = {{"stage", 3}, {"prefetch", 0}};
    j1["sharding"] = {{"stage", 3}, {"prefetch", 1}};
    j2["sharding"] = {{"stage", 3}, {"prefetch", 2}};
    const auto a = run(j0), b = run(j1), c = run(j2);
    CHECK(b.iteration_time_s < a.iteration_time_s);
    CHECK(c.iteration_time_s <= b.iteration_time_s + 1e-12);
    // Whatever the schedule, the bytes are the same, and never below the compute plus the first, exposed gather.
    CHECK(a.bytes_on_wire_per_iteration == b.bytes_on_wire_per_iteration);
    CHECK(c.iteration_time_s >= units * (0.003 + 0.004 / n) + ring_phase(n, 20e6) - 1e-12);
}

TEST_CASE("sharding: ZeRO-1/2 move a ring all-reduce's bytes, ZeRO-3 1.5 times that") {
    for (int n : {2, 5, 16}) {
        CAPTURE(n);
        const double S = 12e6;
        const json ddp = star(n, 4, S / 4);
        json z1 = ddp, z2 = ddp, z3 = ddp;
        z1["sharding"] = {{"stage", 1}};
        z2["sharding"] = {{"stage", 2}};
        z3["sharding"] = {{"stage", 3}};
        const double ring = run(ddp).bytes_on_wire_per_iteration;
        // Hand-derived: every worker sends 2(n-1)/n S.
        CHECK(ring == ddlsim::testing::approx(n * 2.0 * (n - 1) / n * S).epsilon(1e-12));
        CHECK(run(z1).bytes_on_wire_per_iteration == ddlsim::testing::approx(ring).epsilon(1e-12));
        CHECK(run(z2).bytes_on_wire_per_iteration == ddlsim::testing::approx(ring).epsilon(1e-12));
        CHECK(run(z3).bytes_on_wire_per_iteration == ddlsim::testing::approx(1.5 * ring).epsilon(1e-12));
    }
}

TEST_CASE("sharding: hybrid sharding sends between nodes only the replica all-reduce of S/g per GPU") {
    // R nodes of g GPUs: inside a node reduce-scatter and all-gather; across nodes rank j of every node all-reduces
    // its S/g shard: 2(R-1)/R x S/g per GPU between machines.
    for (int nodes : {2, 4}) {
        for (int stage : {2, 3}) {
            CAPTURE(nodes);
            CAPTURE(stage);
            const int g = 4, n = nodes * g;
            const double S = 32e6;
            json j = star(n, 2, S / 2);
            j["network"] = {{"topology", "two_tier"}, {"gpus_per_node", g},  {"nics_per_node", 2},
                            {"bandwidth", "100Gbps"}, {"latency", "2us"},    {"intra_bandwidth", "300GBps"},
                            {"intra_latency", "1us"}, {"transport", "ideal"}};
            j["sharding"] = {{"stage", stage}, {"group", "node"}};
            const auto r = run(j);
            const double inter = n * 2.0 * (nodes - 1) / nodes * S / g;
            CHECK(r.machine_bytes_per_iteration == ddlsim::testing::approx(inter).epsilon(1e-12));
            // Within nodes: each phase moves (g-1)/g S per GPU; stage 3 has three of them, stage 2 two.
            const double intra = n * (stage == 3 ? 3.0 : 2.0) * (g - 1) / g * S;
            CHECK(r.bytes_on_wire_per_iteration == ddlsim::testing::approx(inter + intra).epsilon(1e-12));
            // Full sharding runs rings over all n GPUs, node after node: `nodes` of its hops cross machines, each
            // carrying (n-1) chunks of S/n per phase.
            json full = j;
            full["sharding"] = {{"stage", stage}};
            const double phases = stage == 3 ? 3.0 : 2.0;
            CHECK(run(full).machine_bytes_per_iteration ==
                  ddlsim::testing::approx(phases * nodes * (n - 1) * S / n).epsilon(1e-12));
        }
    }
}

TEST_CASE("sharding: memory per GPU follows ZeRO's (2 + 2 + K) psi / N with mixed-precision Adam") {
    // Rajbhandari et al., SC 2020, Figure 1: K = 12 (fp32 master weights, momentum, variance). Weights + gradients +
    // optimizer state: stage 1 4psi + 12psi/N, stage 2 2psi + 14psi/N, stage 3 16psi/N.
    const int n = 8;
    json j = testing::star_scenario({.workers = n,
                                     .model = {{"name", "gpt2_medium"}, {"dtype", "fp16"}},
                                     .batch_size = 1,
                                     .device = {{"name", "A100"}, {"precision", "fp16"}},
                                     .bandwidth = "100Gbps",
                                     .latency = "2us"});
    j["optimizer"] = "adam";
    const auto state = [&](int stage) {
        json k = j;
        if (stage > 0) k["sharding"] = {{"stage", stage}};
        const auto m = scenario::job_memory(scenario::load_scenario(k).jobs.at(0));
        return std::array<double, 4>{m.weights + m.gradients + m.optimizer, m.activations, m.buffers, m.total()};
    };
    const double psi = static_cast<double>(scenario::load_scenario(j).jobs.at(0).workload.params());
    CHECK(state(0)[0] == ddlsim::testing::approx(16.0 * psi));
    CHECK(state(1)[0] == ddlsim::testing::approx(4.0 * psi + 12.0 * psi / n));
    CHECK(state(2)[0] == ddlsim::testing::approx(2.0 * psi + 14.0 * psi / n));
    CHECK(state(3)[0] == ddlsim::testing::approx(16.0 * psi / n));
    // Activations are not sharded; each stage needs less in all.
    CHECK(state(3)[1] == state(0)[1]);
    CHECK(state(3)[3] < state(2)[3]);
    CHECK(state(2)[3] < state(1)[3]);
    CHECK(state(1)[3] < state(0)[3]);
}

TEST_CASE("sharding: accumulation reduce-scatters once per step, so bytes per sample fall by k") {
    for (int stage : {2, 3}) {
        CAPTURE(stage);
        json a = star(4, 3, 4e6), b = a;
        a["sharding"] = {{"stage", stage}};
        b["sharding"] = {{"stage", stage}};
        b["gradient_accumulation"] = 4;
        const auto ra = run(a), rb = run(b);
        if (stage == 2) {
            // Replicated parameters: the same bytes per step, four times the samples.
            CHECK(rb.bytes_on_wire_per_iteration == ddlsim::testing::approx(ra.bytes_on_wire_per_iteration));
            CHECK(rb.iteration_time_s == ddlsim::testing::approx(ra.iteration_time_s + 3 * 3 * 0.003).epsilon(1e-9));
        } else {
            // Stage 3 gathers the parameters for every micro-batch's forward and backward, but reduce-scatters once:
            // 2k + 1 phases of the gradient size instead of 3.
            CHECK(rb.bytes_on_wire_per_iteration ==
                  ddlsim::testing::approx(ra.bytes_on_wire_per_iteration * 9.0 / 3.0));
        }
        const double per_sample_a = ra.bytes_on_wire_per_iteration / 4.0;
        const double per_sample_b = rb.bytes_on_wire_per_iteration / 16.0;
        CHECK(per_sample_b < per_sample_a);
    }
}

TEST_CASE("sharding: the trace shows each unit's all-gather beside the previous unit's compute") {
    // Units of 1 MB: each ring phase (~0.6 ms) is shorter than a unit's forward (1 ms) or backward (2 ms).
    json j = star(4, 4, 1e6);
    j["iterations"] = 1;
    j["sharding"] = {{"stage", 3}};
    sim::Trace trace;
    (void)scenario::run_scenario(scenario::load_scenario(j), &trace);
    const json t = json::parse(trace.json());
    const json& events = t.is_object() ? t.at("traceEvents") : t;
    // Worker 0: compute track 0, communication track 1 (of job 0, process 1).
    std::vector<std::pair<double, double>> fwd, gathers, bwd, bgathers;
    for (const json& e : events) {
        if (e.value("ph", "") != "X" || e.value("pid", -1) != 1) continue;
        const std::string name = e.value("name", "");
        const double a = e.at("ts").get<double>(), b = a + e.at("dur").get<double>();
        if (e.value("tid", -1) == 0 && name.rfind("fwd ", 0) == 0) fwd.emplace_back(a, b);
        if (e.value("tid", -1) == 1 && name.find("all-gather") != std::string::npos &&
            name.find("(forward)") != std::string::npos)
            gathers.emplace_back(a, b);
        if (e.value("tid", -1) == 0 && name.rfind("bwd ", 0) == 0) bwd.emplace_back(a, b);
        if (e.value("tid", -1) == 1 && name.find("(backward)") != std::string::npos) bgathers.emplace_back(a, b);
    }
    // Backward runs units 3, 2, 1, 0: the gather of the next unit down overlaps the current unit's backward.
    REQUIRE(bwd.size() == 4);
    REQUIRE(bgathers.size() == 4);
    for (std::size_t k = 1; k < 4; ++k) {
        CAPTURE(k);
        CHECK(bgathers[k].first < bwd[k - 1].second);
        CHECK(bgathers[k].second > bwd[k - 1].first);
    }
    REQUIRE(fwd.size() == 4);
    REQUIRE(gathers.size() == 4);
    // The first gather is exposed; gather u (u >= 1) starts when forward u-1 starts (prefetch 1) and so overlaps it.
    CHECK(gathers[0].second <= fwd[0].first + 1e-6);
    for (std::size_t u = 1; u < 4; ++u) {
        CAPTURE(u);
        CHECK(gathers[u].first < fwd[u - 1].second);
        CHECK(gathers[u].second > fwd[u - 1].first);
    }
}

TEST_CASE("sharding: refused where it does not apply, naming the key") {
    const json base = star(4, 2, 1e6);
    struct Case {
        json patch;
        std::string path;
    };
    std::vector<Case> cases{
        {{{"sharding", {{"stage", 4}}}}, "$.sharding.stage"},
        {{{"sharding", {{"stage", 0}}}}, "$.sharding.stage"},
        {{{"sharding", {{"group", "node"}}}}, "$.sharding.stage"},
        {{{"sharding", {{"stage", 2}, {"prefetch", 2}}}}, "$.sharding.prefetch"},
        {{{"sharding", {{"stage", 1}, {"wrap", 2}}}}, "$.sharding.wrap"},
        {{{"sharding", {{"stage", 3}, {"wrap", 3}}}}, "$.sharding.wrap"},
        {{{"sharding", {{"stage", 3}, {"group", "rack"}}}}, "$.sharding.group"},
        {{{"sharding", {{"stage", 3}, {"bogus", 1}}}}, "$.sharding.bogus"},
        {{{"sharding", {{"stage", 2}}}, {"sync", {{"kind", "local_sgd"}, {"period", 2}}}}, "$.sharding"},
        {{{"sharding", {{"stage", 2}}}, {"architecture", {{"kind", "ps"}}}}, "$.sharding"},
        {{{"sharding", {{"stage", 2}}}, {"architecture", {{"kind", "allreduce"}, {"algorithm", "tree"}}}},
         "$.architecture.algorithm"},
        {{{"sharding", {{"stage", 2}}}, {"compression", {{"kind", "fp16"}}}}, "$.sharding"},
        {{{"sharding", {{"stage", 2}}}, {"overlap", {{"priority", true}}}}, "$.sharding"},
        {{{"sharding", {{"stage", 3}}}, {"overlap", {{"fusion", "buffer"}}}}, "$.sharding"},
    };
    for (const Case& c : cases) {
        json j = base;
        j.merge_patch(c.patch);
        CAPTURE(j.dump());
        try {
            (void)scenario::load_scenario(j);
            FAIL("accepted");
        } catch (const scenario::ScenarioError& e) {
            CHECK(e.path() == c.path);
        }
    }
    // Hybrid sharding with uneven nodes: 6 workers on nodes of 4 leave 4 + 2.
    json uneven = base;
    uneven["workers"] = 6;
    uneven["network"] = {{"topology", "two_tier"}, {"gpus_per_node", 4},           {"bandwidth", "100Gbps"},
                         {"latency", "2us"},       {"intra_bandwidth", "300GBps"}, {"intra_latency", "1us"}};
    uneven["sharding"] = {{"stage", 3}, {"group", "node"}};
    try {
        (void)scenario::load_scenario(uneven);
        FAIL("accepted");
    } catch (const scenario::ScenarioError& e) {
        CHECK(e.path() == "$.sharding.group");
        CHECK(std::string(e.what()).find("4 and 2") != std::string::npos);
    }
}

TEST_CASE("sharding: units are transformer blocks (wrap blocks each), layers outside blocks on their own") {
    const auto w = *models::builtin_workload("llama2_7b");  // embeddings, 32 blocks of attention + MLP, head
    for (std::uint32_t wrap : {1U, 2U, 3U, 32U}) {
        CAPTURE(wrap);
        const auto units = models::shard_units(w, wrap);
        const std::uint32_t blocks = (32 + wrap - 1) / wrap;
        REQUIRE(units.size() == blocks + 2);
        CHECK(units.front() == std::make_pair(0U, 0U));
        CHECK(units.back() == std::make_pair(65U, 65U));
        // Every layer in exactly one unit, in order; a block unit holds 2 x wrap layers (the last may hold fewer).
        std::uint32_t next = 0;
        for (const auto& u : units) {
            CHECK(u.first == next);
            next = u.second + 1;
        }
        CHECK(next == 66);
        CHECK(units[1].second - units[1].first + 1 == std::min(2 * wrap, 64U));
    }
    // A model without blocks: wrap consecutive layers.
    models::Workload plain;
    plain.layers.resize(5);
    CHECK(models::shard_units(plain, 2).size() == 3);
    CHECK(models::shard_units(plain, 1).size() == 5);
}

TEST_CASE("sharding: a run too large for the flow model is refused up front, not left to run for hours") {
    json j = star(4, 2, 1e6);
    j["sharding"] = {{"stage", 3}};
    j["workers"] = 20000;  // 3 rings of 20000 x 19999 transfers per unit and iteration
    j["iterations"] = 100;
    // Per flow class (every worker alike on a star: one class) the rings are 20,000 times smaller: accepted. A
    // straggler breaks the symmetry, and every transfer would be simulated: refused.
    CHECK_NOTHROW((void)scenario::load_scenario(j));
    j["stragglers"] = {{"distribution", "periodic"}, {"every", 2}, {"workers", {3}}};
    try {
        (void)scenario::load_scenario(j);
        FAIL("accepted");
    } catch (const scenario::ScenarioError& e) {
        CHECK(std::string(e.what()).find("events") != std::string::npos);
    }
    // The analytic model runs each round as its closed form: accepted.
    j["network"]["model"] = "analytic";
    CHECK_NOTHROW((void)scenario::load_scenario(j));
}

TEST_CASE("sharding: rings across nodes run as channels, one per GPU, so every NIC carries a share") {
    // 2 DGX H100-class nodes, one 400 Gbit/s NIC per GPU: 8 channels of S/8, each leaving and entering a node through
    // a different GPU's NIC. A reduce-scatter or all-gather of S among n = 16 takes about (n - 1) steps of
    // S / (8 n) over one NIC, 8 times less than one ring through a single NIC per node.
    const int n = 16;
    const double S = 1.6e9, nic = 400e9 / 8;
    json j = star(n, 1, S);
    j["model"]["layers"][0]["fwd_time"] = "0s";
    j["model"]["layers"][0]["bwd_time"] = "0s";
    j["model"]["layers"][0]["update_time"] = "0s";
    j["network"] = {{"topology", "two_tier"},
                    {"node", "dgx_h100"},
                    {"latency", "2us"},
                    {"intra_latency", "1us"},
                    {"transport", "ideal"}};
    j["sharding"] = {{"stage", 1}};
    const auto r = run(j);
    const double phase = (n - 1) * S / (8.0 * n) / nic;
    CHECK(r.iteration_time_s == ddlsim::testing::approx(2 * phase).epsilon(0.05));
    // The bytes between machines are the single ring's: each channel crosses 2 node boundaries with (n-1) S/(8n).
    CHECK(r.machine_bytes_per_iteration ==
          ddlsim::testing::approx(2.0 * 8 * 2 * (n - 1) * S / (8.0 * n)).epsilon(1e-12));
}
