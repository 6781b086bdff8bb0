// Predicting a validation run with the simulator from a calibration: the run becomes a scenario
// held in memory and simulated by ddlsim::scenario::run_scenario.
//   model     a custom model whose layers carry the measured forward / backward / update seconds,
//             multiplied by the sharing slowdown of n workers computing at once on this machine
//   network   a star whose links have the run's line rate and the configured latency (none), under the
//             measured transport (goodput fraction, per-message and per-collective overheads; see
//             calibrate.hpp); on loopback the fitted beta and alpha / 2 per link under "ideal"
//   scheme    the run's architecture, sync scheme and compressor
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "validate/calibrate.hpp"
#include "validate/trainer.hpp"

namespace ddlsim::validate {

struct Prediction {
    double iteration_time_s = 0.0;
    nlohmann::json scenario;
};

/// The scenario of run `c` under calibration `cal`.
[[nodiscard]] nlohmann::json scenario_for(const RunConfig& c, const Calibration& cal);

/// Simulates `c` (the scenario of scenario_for).
[[nodiscard]] Prediction predict(const RunConfig& c, const Calibration& cal);

}  // namespace ddlsim::validate
