// Runs a loaded scenario and turns its result into the SPEC §3 result JSON.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "models/job.hpp"
#include "scenarios/scenario.hpp"

namespace ddlsim::scenario {

struct RunResult {
    models::JobResult job;
    std::uint64_t events = 0;
    double wall_time_s = 0.0;
};

/// Builds the fabric and the job, simulates it; throws ScenarioError for
/// inconsistent combinations found only once the pieces meet.
[[nodiscard]] RunResult run_scenario(const Scenario& s);

/// The result JSON (every SPEC §3 key that applies, plus a scenario echo).
[[nodiscard]] nlohmann::json result_json(const Scenario& s, const RunResult& r);

/// A one-line description of the architecture, e.g. "ps (4 dedicated servers)".
[[nodiscard]] std::string describe_architecture(const Scenario& s);

}  // namespace ddlsim::scenario
