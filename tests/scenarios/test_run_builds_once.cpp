// A run builds its fabric and each job's compute profile once: load_scenario resolves them (scenario::ResolvedRun),
// and the trainer, the limits, the result's "compute_model" and the text summary read what it built
// (docs/DESIGN.md, "One resolved job"). Counted with topo::fabrics_built() and models::compute_profiles_built().
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "models/compute.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "topologies/builders.hpp"

using nlohmann::json;
using namespace ddlsim;

namespace {

json job(int workers, json device) {
    return {{"workers", workers}, {"model", "resnet50"}, {"batch_size", 32}, {"device", std::move(device)}};
}

struct Builds {
    std::uint64_t fabrics = 0, profiles = 0;
};

// What loading `j`, running it and writing its result build, together.
Builds builds_in_load_and_run(const json& j) {
    const std::uint64_t fabrics = topo::fabrics_built(), profiles = models::compute_profiles_built();
    const auto s = scenario::load_scenario(j);
    const auto r = scenario::run_scenario(s);
    const json out = scenario::result_json(s, r);
    CHECK(!out.dump().empty());
    return {topo::fabrics_built() - fabrics, models::compute_profiles_built() - profiles};
}

}  // namespace

TEST_CASE("one resolved job: a run builds its fabric and each job's compute profile once, and the result reads it") {
    const json net = {{"topology", "star"}, {"bandwidth", "10Gbps"}, {"latency", "5us"}};
    SUBCASE("one job") {
        json j = job(4, "V100");
        j["network"] = net;
        j["iterations"] = 2;
        const Builds b = builds_in_load_and_run(j);
        CHECK(b.fabrics == 1);
        CHECK(b.profiles == 1);
        // The result's compute model is the one compute_assumptions derives from a fresh profile.
        const auto s = scenario::load_scenario(j);
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
        const Builds b = builds_in_load_and_run(j);
        CHECK(b.fabrics == 1);
        // The first job's profile, the second's reference device and its two workers' devices.
        CHECK(b.profiles == 4);
    }
    SUBCASE("runs of one loaded scenario with other seeds build nothing") {
        json j = job(4, "V100");
        j["network"] = net;
        j["iterations"] = 2;
        j["stragglers"] = {{"distribution", "lognormal"}, {"sigma", 0.3}};
        auto s = scenario::load_scenario(j);
        const std::uint64_t fabrics = topo::fabrics_built(), profiles = models::compute_profiles_built();
        const double first = scenario::run_scenario(s).jobs.at(0).iteration_time_s;
        s.seed += 1;  // as `run --seeds` does: the run reads the seed, not the one resolved at load
        const double second = scenario::run_scenario(s).jobs.at(0).iteration_time_s;
        CHECK(first != second);
        CHECK(topo::fabrics_built() == fabrics);
        CHECK(models::compute_profiles_built() == profiles);
    }
}
