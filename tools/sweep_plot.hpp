// Drawing with the matplotlib scripts of tools/: plot_sweep.py (`ddlsim sweep --plot`) and
// plot_curve.py (`ddlsim run --plot`). A script runs as a child process of a python3 that can
// import matplotlib (Debian: python3-matplotlib). Part of the ddlsim_sweep library (hence the
// file name), which the ddlsim executable links.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/output_file.hpp"
#include "tools/sweep.hpp"

namespace ddlsim::tools {

/// A python interpreter and the script it runs.
struct Plotter {
    std::string python;
    std::string script;
};

/// Throws CliError unless `path` ends in .png or .svg and can be written (`flag` names the option).
void check_plot_path(const std::string& flag, const std::string& path);
/// tools/`script` of the source tree (or the file named by the environment variable `env`, when set)
/// and a python3 that imports matplotlib ($DDLSIM_PYTHON, python3, /usr/bin/python3); throws CliError
/// naming the package when there is none.
[[nodiscard]] Plotter find_plotter(const std::string& flag, const std::string& script, const char* env);
/// Runs the plotter with `args`; returns its exit status (-1 when it could not be started or was killed).
[[nodiscard]] int run_plotter(const Plotter& p, const std::vector<std::string>& args);

/// `--relative-to KEY=VALUE` checked against the sweep: KEY must be a varied key and VALUE one of its values (as
/// --vary wrote it, or the same JSON value); returns KEY=VALUE with the value spelled as --vary wrote it. Throws
/// CliError naming the varied keys or KEY's values.
[[nodiscard]] std::string resolve_relative_to(const std::vector<VarySpec>& specs, const std::string& relative_to);

/// The arguments of plot_sweep.py for the results of a sweep over `specs` (the first on the x axis; geometric
/// ranges on a log axis) of the scenario file `scenario_file` (the title) into `opts.plot`, with
/// `opts.relative_to` (resolved) and `opts.plot_describe` when set.
[[nodiscard]] std::vector<std::string> sweep_plot_args(const std::vector<VarySpec>& specs, const SweepOptions& opts);

/// Draws the accuracy and loss curve of a `ddlsim run` result with plot_curve.py into `plot`: the script reads
/// `result_file`, or, when that is empty, a temporary copy of `result`; throws std::runtime_error when it fails.
void plot_run_curve(const Plotter& p, const nlohmann::json& result, const std::string& result_file,
                    const std::string& plot, const std::string& title);

}  // namespace ddlsim::tools
