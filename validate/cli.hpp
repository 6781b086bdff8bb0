// The `validate` and `calibrate` subcommands of the ddlsim command line (SPEC §1, §5).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>

namespace ddlsim::validate {

/// Registers `ddlsim validate` and `ddlsim calibrate` on `app`.
void add_validate_commands(CLI::App& app);

/// When one of those subcommands was parsed, runs it and returns its exit code: 0 success, 1 when
/// a validation check failed (the report is still written). Bad input throws
/// ddlsim::tools::CliError (exit 2 in main).
[[nodiscard]] std::optional<int> run_validate_commands(CLI::App& app);

}  // namespace ddlsim::validate
