// `ddlsim compare` and the Python module's compare(): several scenarios, or named variants of one (JSON merge
// patches, RFC 7386: `{"sharding": null}` removes sharding), run side by side into one table.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/scenario.hpp"
#include "tools/sweep.hpp"

namespace ddlsim::tools {

/// One column of the table: the row would be the case.
struct CompareCase {
    std::string name;            ///< the column header: the file's stem, or the variant's name
    std::string file;            ///< where it came from, for messages ("<dict>" for the Python module's dicts)
    nlohmann::json scenario;     ///< the scenario JSON with --set and the variant's patch applied
    std::string base_dir = ".";  ///< relative file names inside it resolve here
};

/// Bad input in one case: the file (and variant) it belongs to, the JSON path and what was expected.
class CompareInputError : public scenario::ScenarioError {
public:
    CompareInputError(std::string file, const scenario::ScenarioError& e)
        : scenario::ScenarioError(e.path(), e.what()), file_(std::move(file)) {}
    [[nodiscard]] const std::string& file() const { return file_; }

private:
    std::string file_;
};

/// The cases of a comparison: each source (a name, its scenario JSON, its file and base directory) with `sets`
/// applied (like --set), then, with variants, once per variant with its patch merged in (named "VARIANT", or
/// "SOURCE/VARIANT" with several sources). Throws CompareInputError for a bad --set, CliError for duplicate names.
[[nodiscard]] std::vector<CompareCase> compare_cases(
    const std::vector<CompareCase>& sources, const std::vector<std::string>& sets,
    const std::vector<std::pair<std::string, nlohmann::json>>& variants);

/// Loads every case (all before any runs, so bad input costs nothing: CompareInputError), runs them on `jobs`
/// threads and returns one row per case and job: "name" ("job" with a jobs list), "scheme", then the compared
/// figures (compare_columns), every figure a number, a bool or null where it does not apply. `loaded`, when given,
/// sees the loaded scenarios before anything runs (the CLI checks that no output is a file they read).
[[nodiscard]] std::vector<nlohmann::json> run_comparison(
    const std::vector<CompareCase>& cases, unsigned jobs,
    const std::function<void(const std::vector<scenario::Scenario>&)>& loaded = {});

/// The compared figures, in table order: iteration_time_s, throughput_samples_per_s, speedup (over the first row),
/// tokens_per_s, mfu, compute_time_s, exposed_communication_time_s, exposed_fraction, memory_per_gpu_bytes,
/// memory_fits, time_to_train_s, gpu_hours, cost.
[[nodiscard]] const std::vector<std::string>& compare_columns();

/// The side-by-side text table (one column per row of `rows`, units scaled), as `ddlsim compare` prints it.
[[nodiscard]] std::string compare_table(const std::vector<nlohmann::json>& rows);
/// The rows as CSV (header: name, job when present, scheme, compare_columns()).
[[nodiscard]] std::string compare_csv(const std::vector<nlohmann::json>& rows);

}  // namespace ddlsim::tools
