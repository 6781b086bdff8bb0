// Gradient accumulation (`gradient_accumulation`: k micro-batches per optimizer step, synchronised once, as DDP's
// no_sync): hand-derived step times and bytes, and the refusals.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/support.hpp"

using namespace ddlsim;

namespace {

nlohmann::json base(std::uint32_t k) {
    nlohmann::json j = testing::star_scenario({.workers = 8, .iterations = 4, .transport = "ideal"});
    j["gradient_accumulation"] = k;
    return j;
}

models::JobResult run(const nlohmann::json& j) {
    const auto sc = scenario::load_scenario(j);
    return scenario::run_scenario(sc).jobs.at(0);
}

}  // namespace

TEST_CASE("accumulation: k micro-batches add (k - 1)(fwd + bwd) per step and move the same bytes") {
    for (const char* model : {"flow", "analytic"}) {
        CAPTURE(model);
        auto j1 = base(1), j4 = base(4);
        j1["network"]["model"] = model;
        j4["network"]["model"] = model;
        const auto a = run(j1), b = run(j4);
        const double micro = a.forward_time_s + a.backward_time_s;
        CHECK(b.iteration_time_s == ddlsim::testing::approx(a.iteration_time_s + 3.0 * micro).epsilon(1e-9));
        CHECK(b.compute_time_s == ddlsim::testing::approx(a.compute_time_s + 3.0 * micro).epsilon(1e-9));
        CHECK(b.bytes_on_wire_per_iteration == a.bytes_on_wire_per_iteration);
        // Four times the samples per step: bytes per sample divided by four.
        CHECK(b.throughput_samples_per_s == ddlsim::testing::approx(8.0 * 32 * 4 / b.iteration_time_s).epsilon(1e-12));
        const double per_sample_1 = a.bytes_on_wire_per_iteration / (8.0 * 32);
        const double per_sample_4 = b.bytes_on_wire_per_iteration / (8.0 * 32 * 4);
        CHECK(per_sample_4 == ddlsim::testing::approx(per_sample_1 / 4.0));
        // Accumulation hides the same communication behind more compute: efficiency does not fall.
        CHECK(b.scaling_efficiency >= a.scaling_efficiency);
    }
}

TEST_CASE("accumulation: with DDP buckets only the last micro-batch overlaps, the rest shifts the step") {
    for (const char* transport : {"ideal", "tcp"}) {
        CAPTURE(transport);
        auto j1 = base(1), j3 = base(3);
        for (auto* j : {&j1, &j3}) {
            (*j)["network"]["transport"] = transport;
            (*j)["overlap"] = {{"fusion", "buffer"}};
        }
        const auto a = run(j1), b = run(j3);
        const double micro = a.forward_time_s + a.backward_time_s;
        CHECK(b.iteration_time_s == ddlsim::testing::approx(a.iteration_time_s + 2.0 * micro).epsilon(1e-9));
        CHECK(b.exposed_communication_time_s == ddlsim::testing::approx(a.exposed_communication_time_s).epsilon(1e-6));
    }
}

TEST_CASE("accumulation: refused where it is not modelled, naming the key") {
    auto asp = base(4);
    asp["architecture"] = {{"kind", "ps"}};
    asp["sync"] = {{"kind", "asp"}};
    auto priority = base(4);
    priority["overlap"] = {{"priority", true}};
    for (const auto& j : {asp, priority}) {
        try {
            (void)scenario::load_scenario(j);
            FAIL("accepted");
        } catch (const scenario::ScenarioError& e) {
            CHECK(e.path() == "$.gradient_accumulation");
        }
    }
    // A step longer than the event clock holds is refused at load (so `check` says so too), not an internal error.
    auto huge = base(1'000'000);
    huge["model"] = "llama2_70b";
    huge["batch_size"] = 8;
    try {
        (void)scenario::load_scenario(huge);
        FAIL("accepted");
    } catch (const scenario::ScenarioError& e) {
        CHECK(e.path() == "$.gradient_accumulation");
    }
    auto zero = base(0);
    CHECK_THROWS_AS((void)scenario::load_scenario(zero), scenario::ScenarioError);
}
