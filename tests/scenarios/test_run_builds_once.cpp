// A run builds each job's compute profile once: the trainer, the result's "compute_model" and the text summary read
// the one the run built (docs/DESIGN.md, "One resolved job"). Counted with models::compute_profiles_built().
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "models/compute.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"

using nlohmann::json;
using namespace ddlsim;

namespace {

json job(int workers, json device) {
    return {{"workers", workers}, {"model", "resnet50"}, {"batch_size", 32}, {"device", std::move(device)}};
}

// Profiles built by run_scenario and result_json together.
std::uint64_t builds_in_run(const scenario::Scenario& s) {
    const std::uint64_t before = models::compute_profiles_built();
    const auto r = scenario::run_scenario(s);
    const json out = scenario::result_json(s, r);
    CHECK(!out.dump().empty());
    return models::compute_profiles_built() - before;
}

}  // namespace

TEST_CASE("one resolved job: a run builds each job's compute profile once, and the result reads it") {
    const json net = {{"topology", "star"}, {"bandwidth", "10Gbps"}, {"latency", "5us"}};
    SUBCASE("one job") {
        json j = job(4, "V100");
        j["network"] = net;
        j["iterations"] = 2;
        const auto s = scenario::load_scenario(j);
        CHECK(builds_in_run(s) == 1);
        // The result's compute model is the one compute_assumptions derives from a fresh profile.
        const auto r = scenario::run_scenario(s);
        REQUIRE(r.compute.size() == 1);
        CHECK(scenario::result_json(s, r)["scenario"]["compute_model"] ==
              scenario::compute_assumptions(s.jobs[0]).to_json());
    }
    SUBCASE("two jobs, one with a device per worker") {
        json j = {{"network", net}, {"iterations", 2}, {"jobs", json::array()}};
        j["jobs"].push_back(job(2, "V100"));
        json hetero = job(2, "V100");
        hetero["worker_devices"] = {"V100", "A100"};
        j["jobs"].push_back(hetero);
        const auto s = scenario::load_scenario(j);
        // The first job's profile, the second's reference device and its two workers' devices.
        CHECK(builds_in_run(s) == 4);
    }
}
