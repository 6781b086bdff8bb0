// What tools/sweep.cpp (plan, points, driver) and tools/sweep_resume.cpp (--resume) share.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tools/sweep.hpp"

namespace ddlsim::tools::sweep_detail {

using nlohmann::json;

// Everything a point needs, fixed before the first point runs.
struct Plan {
    std::string file;
    std::string base_dir;
    json base;
    std::vector<VarySpec> specs;
    std::size_t total = 0;
    bool multi_job = false;
    std::size_t rows_per_point = 1;
    SweepFormat format = SweepFormat::csv;
    std::vector<std::string> header;  // CSV columns of the file being appended to
    std::vector<std::string> inputs;  // files the scenario reads (profiles, topology files), for the output checks
    std::function<json(const scenario::Scenario&, const scenario::RunResult&)> extra_keys;
};

/// The value an override "PATH=text" sets, exactly as apply_override reads it.
[[nodiscard]] json override_value(const std::string& text);
/// One CSV record of `row`, its cells in the order of `header` (a missing cell is empty).
[[nodiscard]] std::string row_line(const std::vector<std::string>& header, const SweepRow& row);

// The --resume side (tools/sweep_resume.cpp).
/// RESULTS.sweep.json: what a results file was computed from.
[[nodiscard]] std::string meta_path(const std::string& out);
/// RESULTS.rows.jsonl: each finished point's complete cells while the sweep runs.
[[nodiscard]] std::string journal_path(const std::string& out);
/// The record written to meta_path: the varied keys with their values and a hash of the scenario.
[[nodiscard]] json sweep_identity(const Plan& plan);
/// Throws SweepError (exit 2, nothing touched) unless `out` was written by this very sweep; returns its record.
[[nodiscard]] json check_resume_identity(const Plan& plan, const std::string& out);
/// The rows of each point in the journal (complete cells) that belong to the sweep, by point; SweepError naming the
/// file, line and field for a line ddlsim did not write (a cut-off last line is dropped).
[[nodiscard]] std::map<std::size_t, std::vector<SweepRow>> read_journal(const Plan& plan, const std::string& out);
/// The digest of one point's rows (their non-empty cells): what the journal and the record keep, so that --resume
/// keeps a row only as ddlsim wrote it (an integrity check against damage and hand edits, not a signature).
[[nodiscard]] std::string rows_digest(const std::vector<SweepRow>& rows);
/// The digest of one point's object in a --format json results file.
[[nodiscard]] std::string object_digest(const json& object);
/// {"POINT": digest} of every point that finished without error.
[[nodiscard]] json digests_of(const std::vector<SweepRow>& rows);
[[nodiscard]] json digests_of(const std::vector<json>& objects);
/// Writes the record beside `out` (atomically): sweep_identity plus the digests of the points the results hold.
void write_sweep_record(const Plan& plan, const std::string& out, json digests);
/// One journal line (no newline): the point, its rows' cells and their digest.
[[nodiscard]] std::string journal_line(std::size_t point, const std::vector<SweepRow>& rows);
/// The journal holding exactly `rows` (one line per point).
[[nodiscard]] std::string journal_text(const std::vector<SweepRow>& rows);
/// --resume on a CSV: the rows kept (points in `done`), those the journal or `record` (check_resume_identity's)
/// vouches for; `plan.header` becomes the file's header. Writes nothing.
[[nodiscard]] std::vector<SweepRow> resume_csv(Plan& plan, const std::string& out, const json& record,
                                               std::set<std::size_t>& done);
/// --resume on a JSON array: the objects kept (points in `done`), those whose digest `record` holds.
[[nodiscard]] std::vector<json> resume_json(const Plan& plan, const std::string& out, const json& record,
                                            std::set<std::size_t>& done);

// --objective (tools/sweep_objective.cpp).
struct Objective {
    std::string column;  ///< the flattened result column ranked
    bool maximise = false;
};
/// The column `given` names (a detail of a time to train also by its own name, "parts_s.evaluation" for
/// "time_to_train.parts_s.evaluation"; "max:NAME" ranks highest first); throws SweepError (exit 2) for a column results
/// do not have, with a did-you-mean, and for a time-to-train column when the scenario has no training block.
[[nodiscard]] Objective resolve_objective(const std::string& given, bool has_training);
/// "objective ...\n  best ...\n  runner-up ...\n": the rows ranked by the column (rows without a value skipped), each
/// named by its point and varied values.
[[nodiscard]] std::string rank_rows(const Objective& o, const std::vector<SweepRow>& rows,
                                    const std::vector<VarySpec>& specs);

}  // namespace ddlsim::tools::sweep_detail
