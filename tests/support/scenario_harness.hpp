// Test helpers on top of the scenario loader: run a scenario's first job, or name the key a scenario is refused at.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"

namespace ddlsim::testing {

/// The first job's result of running scenario `j`.
inline models::JobResult run_first_job(const nlohmann::json& j) {
    return scenario::run_scenario(scenario::load_scenario(j)).jobs.at(0);
}

/// The JSON path a scenario is refused at ("accepted" when it loads).
inline std::string refused_at(const nlohmann::json& j) {
    try {
        (void)scenario::load_scenario(j);
    } catch (const scenario::ScenarioError& e) {
        return e.path();
    }
    return "accepted";
}

}  // namespace ddlsim::testing
