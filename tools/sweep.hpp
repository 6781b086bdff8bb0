// `ddlsim sweep`: the cartesian product of varied scenario keys, run in parallel (threads, and MPI ranks when
// built with DDLSIM_HAVE_MPI), one CSV row per point (or one JSON object per point), safe to interrupt and
// resume. The parsing helpers are exposed as testable units; run_sweep is what the CLI calls.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tools/output_file.hpp"

namespace ddlsim::tools {

// Bad command-line input or an output path (exit 2), and the safe output files: tools/output_file.hpp.
using sim::check_output_path;
using sim::CliError;
using sim::write_file_atomically;

/// Exit code of a sweep that ran to the end but where at least one point failed (its row holds `error`).
inline constexpr int kSweepSomePointsFailed = 3;

/// Bad sweep input (a --vary spec, an output path, a resume file, --plot); `what()` is the whole message.
class SweepError : public CliError {
public:
    using CliError::CliError;
};

enum class SweepFormat { csv, json };

struct SweepOptions {
    std::string scenario_file;
    std::vector<std::string> vary;      ///< "PATH=V1,V2,..." / "PATH=A..B:xF" / "PATH=A..B:+S" / "PATH=A..B"
    std::vector<std::string> variants;  ///< "NAME=JSON-PATCH": a "variant" column, outermost, one value per name
    std::vector<std::string> sets;      ///< "PATH=VALUE": applied to the scenario before any point, like run --set
    std::string out;                    ///< RESULTS.csv (or .json with format json)
    unsigned jobs = std::max(1U, std::thread::hardware_concurrency());  ///< worker threads (per MPI rank)
    bool resume = false;  ///< keep the finished, error-free points already in `out`
    SweepFormat format = SweepFormat::csv;
    std::string plot;  ///< FILE.png or FILE.svg: run tools/plot_sweep.py afterwards
    /// KEY=VALUE (with `plot`): draw every point divided by the point that differs only in KEY=VALUE.
    std::string relative_to;
    /// With `plot`: also write the plot's title, axes, labels and legend as JSON to this file (tests, scripts).
    std::string plot_describe;
    bool progress = true;         ///< progress line on stderr when it is a terminal
    bool force_progress = false;  ///< progress on stderr even when it is not a terminal: a line every 5 s (logs)
    /// More result keys per point, merged into its result (the CLI adds the convergence replay's; this library
    /// does not link it). May run on several threads at once.
    std::function<nlohmann::json(const scenario::Scenario&, const scenario::RunResult&)> extra_keys;
    /// The scalar keys extra_keys adds, as CSV columns known before the first point when the scenario has a
    /// "convergence" block (columns it adds otherwise still reach the final file).
    std::vector<std::string> extra_columns;
    /// A result column to rank the points by (lowest first; "max:NAME" highest first): the best point and its
    /// runner-up are printed to `report` when the sweep ends. Empty: no ranking.
    std::string objective;
    std::ostream* report = nullptr;  ///< where the ranking goes (null: std::cout)
    /// Files the caller writes when the sweep ends (`--report`, as {path, option}): checked with the sweep's own
    /// outputs before the first point, so that none is an input or another output.
    std::vector<std::pair<std::string, std::string>> more_outputs;
};

/// One varied key: its dotted path and its values as text (each applied like `--set PATH=VALUE`).
struct VarySpec {
    std::string path;
    std::vector<std::string> values;
    bool geometric = false;  ///< every item was a geometric range A..B:xF (a plot draws it on a log axis)
    /// The "variant" key of `--variant NAME=PATCH`: values[i] names patches[i], a JSON merge patch (RFC 7386) of
    /// the scenario, applied instead of a --set. Empty for a varied key.
    std::vector<nlohmann::json> patches;
};

/// A named JSON merge patch from `--variant NAME=PATCH` (PATCH a JSON object); throws CliError when malformed.
[[nodiscard]] std::pair<std::string, nlohmann::json> parse_variant(const std::string& spec);
/// The "variant" dimension of named variants (`--variant`), outermost in a sweep; CliError for a duplicate name.
[[nodiscard]] VarySpec variant_spec(const std::vector<std::string>& variants);
/// Applies the value of spec `s` to the scenario JSON `j`: its patch for a variant, else `--set PATH=VALUE`.
void apply_point_value(nlohmann::json& j, const VarySpec& s, const std::string& value);

/// One result row: the point index and its cells by column name (a multi-job point has one row per job).
struct SweepRow {
    std::size_t point = 0;
    std::map<std::string, std::string> cells;
};

/// Parses one --vary spec; throws SweepError. Items are separated by top-level commas; an item
/// NUMBER..NUMBER[:xF|:+S] expands to a range (inclusive of B when reached).
[[nodiscard]] VarySpec parse_vary(const std::string& spec);
/// Expands one range item "A..B", "A..B:+S" or "A..B:xF" into values; throws SweepError when malformed.
[[nodiscard]] std::vector<std::string> expand_range(std::string_view item);
/// The number of points of the cartesian product (throws SweepError above 10 million).
[[nodiscard]] std::size_t sweep_size(const std::vector<VarySpec>& specs);
/// The values of point `index`: the first spec is the outermost (slowest-changing) loop.
[[nodiscard]] std::vector<std::string> point_values(const std::vector<VarySpec>& specs, std::size_t index);
/// One CSV field quoted per RFC 4180 when it holds a comma, quote, CR or LF (or leading/trailing space).
[[nodiscard]] std::string csv_field(std::string_view s);
/// A whole CSV record with its trailing "\n".
[[nodiscard]] std::string csv_line(const std::vector<std::string>& fields);
/// Parses CSV text into records; a last record without its newline (a cut-off write) is dropped.
[[nodiscard]] std::vector<std::vector<std::string>> parse_csv(std::string_view text);
/// A JSON value as a CSV cell: strings raw, null empty, everything else as JSON text.
[[nodiscard]] std::string cell_text(const nlohmann::json& v);
/// `s` on one line: newlines, carriage returns, tabs and other control characters written as \n, \r, \t, \xHH
/// (every error message is one line, whatever a path or a value held).
[[nodiscard]] std::string one_line(std::string_view s);
/// Flattens a result object with dotted keys; arrays are dropped (and so is "jobs").
void flatten_json(const nlohmann::json& j, const std::string& prefix, std::map<std::string, nlohmann::json>& out);
/// The rows of one result: one, or one per job (with a "job" cell) when the result has a "jobs" list.
[[nodiscard]] std::vector<std::map<std::string, nlohmann::json>> flatten_result(const nlohmann::json& result);
/// The flattened result columns in their CSV order (derived from result_json itself).
[[nodiscard]] std::vector<std::string> result_columns();
/// Checks the varied keys against the scenario `base` before any point runs (ScenarioError at labels[k], e.g.
/// "--vary workers=4,8"): each
/// path can be set and is a key the schema declares, and no value is refused by the loader at that key itself.
void check_vary(const nlohmann::json& base, const std::string& base_dir, const std::vector<VarySpec>& specs,
                const std::vector<std::string>& labels);
/// Runs the sweep; writes messages to `err`; returns 0, kSweepSomePointsFailed, 2 (bad input) or 1 (internal).
[[nodiscard]] int run_sweep(const SweepOptions& opts, std::ostream& err);

}  // namespace ddlsim::tools
