// `ddlsim sweep --resume`: the record beside RESULTS (.sweep.json), the row journal (.rows.jsonl), the reread.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "tools/sweep_detail.hpp"

namespace ddlsim::tools::sweep_detail {

namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw SweepError(fmt::format("{}: cannot open for reading (--resume)", path));
    std::ostringstream buf;
    buf << in.rdbuf();
    return buf.str();
}

}  // namespace

// What a results file was computed from, kept beside it in RESULTS.sweep.json: the varied keys with their
// values and a hash of the scenario's content. --resume refuses a file whose record differs.
std::string meta_path(const std::string& out) {
    return out + ".sweep.json";
}
// Each finished point's complete cells, one JSON line per point, while the sweep runs (RESULTS.rows.jsonl):
// the streamed CSV's header holds only the columns known up front, so rows kept by --resume come from here.
std::string journal_path(const std::string& out) {
    return out + ".rows.jsonl";
}

json sweep_identity(const Plan& plan) {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a 64 of the scenario as canonical JSON
    for (unsigned char c : plan.base.dump()) h = (h ^ c) * 1099511628211ULL;
    json vary = json::array();
    for (const auto& v : plan.specs) {
        vary.push_back({{"path", v.path}, {"values", v.values}});
        if (!v.patches.empty()) vary.back()["patches"] = v.patches;
    }
    return {{"format", "ddlsim-sweep-1"},
            {"scenario", plan.file},
            {"scenario_hash", fmt::format("{:016x}", h)},
            {"output", plan.format == SweepFormat::csv ? "csv" : "json"},
            {"vary", vary}};
}

// Throws SweepError (exit 2, nothing touched) unless `out` was written by this very sweep.
void check_resume_identity(const Plan& plan, const std::string& out) {
    const std::string meta = meta_path(out);
    std::error_code ec;
    if (!fs::exists(meta, ec))
        throw SweepError(
            fmt::format("{}: --resume: no record of the sweep that wrote it ({} is missing); use "
                        "another --out or drop --resume",
                        out, meta));
    const json was = json::parse(read_text(meta), nullptr, false);
    const json now = sweep_identity(plan);
    if (was.is_discarded() || !was.is_object())
        throw SweepError(fmt::format("{}: --resume: {} is not a sweep record", out, meta));
    auto paths = [](const json& j) {
        std::string p;
        for (const auto& v : j.value("vary", json::array())) p += (p.empty() ? "" : ", ") + v.value("path", "");
        return p;
    };
    if (paths(was) != paths(now))
        throw SweepError(
            fmt::format("{}: --resume: it was computed varying {}, this sweep varies {}; use another "
                        "--out or drop --resume",
                        out, paths(was), paths(now)));
    if (was.value("vary", json()) != now["vary"])
        throw SweepError(
            fmt::format("{}: --resume: the varied values differ from the ones it was computed with; "
                        "use another --out or drop --resume",
                        out));
    if (was.value("scenario_hash", "") != now["scenario_hash"])
        throw SweepError(
            fmt::format("{}: --resume: the scenario {} changed since it was computed (content hash "
                        "{} then, {} now); use another --out or drop --resume",
                        out, plan.file, was.value("scenario_hash", "?"), now["scenario_hash"].get<std::string>()));
    if (was.value("output", "") != now["output"])
        throw SweepError(fmt::format("{}: --resume: it was written with --format {}", out, was.value("output", "?")));
}

// The rows of each point in the journal (complete cells), by point.
std::map<std::size_t, std::vector<SweepRow>> read_journal(const std::string& out) {
    std::map<std::size_t, std::vector<SweepRow>> rows;
    std::error_code ec;
    if (!fs::exists(journal_path(out), ec)) return rows;
    std::istringstream in(read_text(journal_path(out)));
    for (std::string line; std::getline(in, line);) {
        const json j = json::parse(line, nullptr, false);  // a cut-off last line does not parse: dropped
        if (j.is_discarded() || !j.contains("point") || !j.contains("rows")) continue;
        const auto p = j["point"].get<std::size_t>();
        std::vector<SweepRow> point;
        for (const auto& r : j["rows"]) point.push_back({p, r.get<std::map<std::string, std::string>>()});
        rows[p] = std::move(point);
    }
    return rows;
}

// --resume on a CSV: keeps the rows of points that finished without error and whose varied values match.
// Returns the rows kept; `header` becomes the file's header. Rewrites the file without the rest.
std::vector<SweepRow> resume_csv(Plan& plan, const std::string& out, std::set<std::size_t>& done) {
    const auto records = parse_csv(read_text(out));
    if (records.empty()) return {};
    const auto& head = records.front();
    std::vector<std::string> want{"point"};
    if (plan.multi_job) want.emplace_back("job");
    for (const auto& s : plan.specs) want.push_back(s.path);
    if (head.size() < want.size() + 1 || !std::equal(want.begin(), want.end(), head.begin()) ||
        std::find(head.begin(), head.end(), "error") == head.end()) {
        std::string cols;
        for (const auto& w : want) cols += (cols.empty() ? "" : ", ") + w;
        throw SweepError(
            fmt::format("{}: --resume: the file's columns do not start with this sweep's ({}); use another "
                        "--out or drop --resume",
                        out, cols));
    }
    std::map<std::size_t, std::vector<SweepRow>> by_point;
    std::set<std::size_t> bad;
    for (std::size_t r = 1; r < records.size(); ++r) {
        const auto& rec = records[r];
        if (rec.size() != head.size()) continue;
        SweepRow row;
        for (std::size_t c = 0; c < head.size(); ++c) row.cells[head[c]] = rec[c];
        std::size_t p = 0;
        const std::string& ptext = rec[0];
        auto [ptr, ec] = std::from_chars(ptext.data(), ptext.data() + ptext.size(), p);
        if (ec != std::errc{} || ptr != ptext.data() + ptext.size() || p >= plan.total) continue;
        row.point = p;
        const auto values = point_values(plan.specs, p);
        bool ok = row.cells["error"].empty();
        for (std::size_t k = 0; k < plan.specs.size(); ++k) ok = ok && row.cells[plan.specs[k].path] == values[k];
        if (!ok) bad.insert(p);
        by_point[p].push_back(std::move(row));
    }
    // Rows streamed before a kill lack the columns found later: their complete cells are in the journal.
    const auto journal = read_journal(out);
    for (auto& [p, rows] : by_point)
        if (const auto it = journal.find(p); it != journal.end() && it->second.size() == rows.size()) rows = it->second;
    std::vector<SweepRow> kept;
    for (auto& [p, rows] : by_point) {
        if (bad.contains(p) || rows.size() != plan.rows_per_point) continue;
        std::set<std::string> jobs;
        for (const auto& r : rows) jobs.insert(plan.multi_job ? r.cells.at("job") : std::string());
        if (jobs.size() != rows.size()) continue;
        done.insert(p);
        for (auto& r : rows) kept.push_back(std::move(r));
    }
    plan.header = head;
    std::string text = csv_line(plan.header);
    for (const auto& r : kept) text += row_line(plan.header, r);
    write_file_atomically(out, text);
    return kept;
}

// --resume on a JSON array written by an earlier --format json sweep.
std::vector<json> resume_json(const Plan& plan, const std::string& out, std::set<std::size_t>& done) {
    const std::string text = read_text(out);
    const json arr = json::parse(text, nullptr, false);
    if (arr.is_discarded() || !arr.is_array())
        throw SweepError(fmt::format("{}: --resume: not a JSON array written by ddlsim sweep --format json", out));
    std::vector<json> kept;
    for (const auto& o : arr) {
        if (!o.is_object() || !o.contains("point") || !o["point"].is_number_unsigned() || !o.contains("values") ||
            !o.contains("error") || !o["error"].is_null())
            continue;
        const auto p = o["point"].get<std::size_t>();
        if (p >= plan.total || done.contains(p)) continue;
        const auto values = point_values(plan.specs, p);
        bool ok = o["values"].is_object() && o["values"].size() == plan.specs.size();
        for (std::size_t k = 0; ok && k < plan.specs.size(); ++k)
            ok = o["values"].contains(plan.specs[k].path) &&
                 o["values"][plan.specs[k].path] == override_value(values[k]);
        if (!ok) continue;
        done.insert(p);
        kept.push_back(o);
    }
    return kept;
}

}  // namespace ddlsim::tools::sweep_detail
