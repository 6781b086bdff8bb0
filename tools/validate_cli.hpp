// The `validate` and `calibrate` subcommands of the ddlsim command line (docs/CONTRACT.md §1, §5): the options,
// their checks and the exit codes live here; validate/ runs the training and returns the results.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "validate/dataset.hpp"

namespace ddlsim::tools {

/// The parsed options of `ddlsim validate` / `ddlsim calibrate`, owned by the caller (main): filled by
/// the parser that add_validate_commands sets up, read by run_validate_commands.
struct ValidateCliOptions {
    std::string backend = "cpu";
    std::string model = "mlp";
    std::string rate = "100Mbps";
    std::string data = validate::kFashionMnistDir;
    std::string out;
    std::string profile;
    std::uint32_t batch = 32;
    bool quick = false;
    bool loopback = false;
    CLI::App* validate = nullptr;
    CLI::App* calibrate = nullptr;
};

/// Registers `ddlsim validate` and `ddlsim calibrate` on `app`; their options are written into `o`,
/// which must outlive the parse.
void add_validate_commands(CLI::App& app, ValidateCliOptions& o);

/// When one of those subcommands was parsed, runs it and returns its exit code: 0 success, 1 when
/// a validation check failed (the report is still written). Bad input throws
/// ddlsim::sim::CliError (exit 2 in main).
[[nodiscard]] std::optional<int> run_validate_commands(const ValidateCliOptions& o);

}  // namespace ddlsim::tools
