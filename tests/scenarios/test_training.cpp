// A scenario's `training` block end to end: the loader, the run, the result keys and the resolved echo. Oracles:
// the run's own simulated throughput and forward time (time to train = steps x global batch / throughput, an
// evaluation = its forward passes + the metric all-reduce), and metamorphic relations (twice the samples, twice
// the steps; the resolved scenario reruns to the same time).
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/support.hpp"

namespace scenario = ddlsim::scenario;
namespace testing = ddlsim::testing;
using nlohmann::json;

namespace {

// 4 ResNet-50 V100 workers, batch 32, on a 10 Gbit/s star: global batch 128.
json base(const json& training) {
    json j = testing::star_scenario({.iterations = 3, .architecture = testing::ring_allreduce()});
    j["training"] = training;
    return j;
}

}  // namespace

TEST_CASE("training: time to train is the steps at the simulated step time, plus evaluations and checkpoints") {
    const json j = base(json::parse(R"({
        "samples_to_target": 1000000,
        "evaluation": {"every_samples": 200000, "samples": 10000},
        "checkpoint": {"every_steps": 1000, "bytes": "1GB", "write_bandwidth": "1GBps"},
        "price_per_gpu_hour": 3
    })"));
    const scenario::Scenario s = scenario::load_scenario(j);
    const scenario::RunResult r = scenario::run_scenario(s);
    REQUIRE(r.time_to_train.size() == 1);
    REQUIRE(r.time_to_train[0]);
    const auto& t = *r.time_to_train[0];
    const auto& job = r.jobs[0];
    const double steps = std::ceil(1e6 / 128);  // 7813
    CHECK(t.optimizer_steps == steps);
    CHECK(t.training_s == ddlsim::testing::approx(steps * 128 / job.throughput_samples_per_s).epsilon(1e-12));
    CHECK(t.training_s ==
          ddlsim::testing::approx(steps * job.iteration_time_s).epsilon(1e-9));  // BSP: the step is the iteration
    // 5 evaluations (200k .. 1M); each worker's 2,500 samples in 79 forward passes of 32, plus the metric
    // all-reduce: a ring's 6 rounds on the star, each at least two 5 us hops.
    CHECK(t.evaluations == 5);
    const double allreduce = t.evaluation_each_s - 79 * job.forward_time_s;
    CHECK(allreduce > 6 * 2 * 5e-6);
    CHECK(allreduce < 1e-3);
    CHECK(t.checkpoints == 7);
    CHECK(t.checkpoint_s == ddlsim::testing::approx(7.0));
    CHECK(t.total_s == ddlsim::testing::approx(t.training_s + t.evaluation_s + t.checkpoint_s));
    CHECK(t.gpu_hours == ddlsim::testing::approx(t.total_s * 4 / 3600));
    CHECK(t.cost.value() == ddlsim::testing::approx(t.gpu_hours * 3));
    CHECK(t.energy_kwh.value() == ddlsim::testing::approx(t.gpu_hours * 0.300));  // V100 SXM2: 300 W
    CHECK(t.efficiency.factor == 1.0);
    CHECK_FALSE(t.efficiency.assumed);

    // The result keys, and the resolved scenario reruns to the same time.
    const json out = scenario::result_json(s, r);
    REQUIRE(out.contains("time_to_train"));
    CHECK(out["time_to_train_s"].get<double>() == t.total_s);
    CHECK(out["optimizer_steps"].get<double>() == steps);
    CHECK(out["time_to_train"]["global_batch"].get<double>() == 128);
    CHECK(out["cost"].get<double>() == *t.cost);
    CHECK(out["time_to_train"]["parts_s"]["evaluation"].get<double>() == t.evaluation_s);
    const json resolved = out["resolved_scenario"];
    CHECK(resolved["training"]["checkpoint"]["every_steps"] == 1000);
    const scenario::Scenario again = scenario::load_scenario(resolved);
    CHECK(scenario::run_scenario(again).time_to_train[0]->total_s == t.total_s);
}

TEST_CASE("training: twice the samples take twice the steps, builtin below the data's smallest batch") {
    const auto steps = [](const json& training) {
        const auto s = scenario::load_scenario(base(training));
        return scenario::run_scenario(s).time_to_train[0]->optimizer_steps;
    };
    CHECK(steps({{"samples_to_target", 1280000}}) * 2 == steps({{"samples_to_target", 2560000}}));
    // Global batch 128 is below MLPerf's smallest ResNet-50 reference batch (1,632): that point's samples.
    const auto s = scenario::load_scenario(base({{"samples_to_target", "builtin"}}));
    const auto t = *scenario::run_scenario(s).time_to_train[0];
    CHECK(t.samples.samples == ddlsim::testing::approx(35.0 * 1281167).epsilon(0.002));
    CHECK(t.epochs == ddlsim::testing::approx(35.0).epsilon(0.002));
    CHECK(t.fitted.has_value());
    CHECK(t.samples_source.find("mlcommons/logging") != std::string::npos);
}

TEST_CASE("training: a scheme without a published factor says it assumed 1, the scenario's factor overrides") {
    json j = base({{"samples_to_target", 1e6}});
    j["sync"] = {{"kind", "local_sgd"}, {"period", 4}};
    auto t = *scenario::run_scenario(scenario::load_scenario(j)).time_to_train[0];
    CHECK(t.efficiency.assumed);
    CHECK(t.efficiency.source.find("local_sgd") != std::string::npos);
    j["training"]["statistical_efficiency"] = 1.25;
    t = *scenario::run_scenario(scenario::load_scenario(j)).time_to_train[0];
    CHECK_FALSE(t.efficiency.assumed);
    CHECK(t.samples.samples == ddlsim::testing::approx(1.25e6));
}

TEST_CASE("training: inputs no run has are refused at their key once the step is known, never printed as inf") {
    const auto error_path = [](const json& training) {
        try {
            (void)scenario::run_scenario(scenario::load_scenario(base(training)));
        } catch (const scenario::ScenarioError& e) {
            return e.path();
        }
        return std::string("no error");
    };
    CHECK(error_path({{"samples_to_target", 1e18}}) == "$.training.samples_to_target");
    CHECK(error_path(json::parse(R"({"samples_to_target": 1e6, "evaluation": {"every_samples": 1e-300,
                                     "samples": 1000}})")) == "$.training.evaluation");
    CHECK(error_path(json::parse(R"({"samples_to_target": 1e6, "checkpoint": {"every_seconds": 0.001,
                                     "write_bandwidth": "1GBps", "bytes": "1B"}})")) == "no error");
    CHECK(error_path(json::parse(R"({"samples_to_target": 1e17, "checkpoint": {"every_steps": 1,
                                     "write_bandwidth": "1GBps", "bytes": "1B"}})")) == "$.training.checkpoint");
}
