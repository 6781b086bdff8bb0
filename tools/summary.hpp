// Human-readable output of the CLI: the run summary and the model catalog.
#pragma once

#include <string>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"

namespace ddlsim::tools {

/// The summary table `ddlsim run` prints.
[[nodiscard]] std::string run_summary(const std::string& file, const scenario::Scenario& s,
                                      const scenario::RunResult& r);
/// The listing `ddlsim models` prints.
[[nodiscard]] std::string catalog_listing();

}  // namespace ddlsim::tools
