// Human-readable output of the CLI: the run summary and the model catalog.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"

namespace ddlsim::tools {

/// The summary table `ddlsim run` prints; its header lists the `--set` overrides applied to `file`.
[[nodiscard]] std::string run_summary(const std::string& file, const scenario::Scenario& s,
                                      const scenario::RunResult& r, const std::vector<std::string>& sets = {});
/// The listing `ddlsim models` prints.
[[nodiscard]] std::string catalog_listing();
/// The same catalog as data: {"models": {name: {...}}, "devices": {name: {...}}} (the Python module's models()).
[[nodiscard]] nlohmann::json catalog_json();

}  // namespace ddlsim::tools
