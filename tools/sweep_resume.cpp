// `ddlsim sweep --resume`: the record beside RESULTS (.sweep.json), the row journal (.rows.jsonl), the reread.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "sim/rng.hpp"
#include "tools/output_file.hpp"
#include "tools/sweep_detail.hpp"

namespace ddlsim::tools::sweep_detail {

namespace {

namespace fs = std::filesystem;

// A resume file's text. Opened without blocking and refused unless a regular file, so that a FIFO or a device
// in its place is an error rather than a wait.
std::string read_text(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw SweepError(fmt::format("{}: --resume: cannot open for reading: {}", path, std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw SweepError(
            fmt::format("{}: --resume: not a regular file; expected the file an earlier sweep wrote", path));
    }
    std::string text;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int saved = errno;
            ::close(fd);
            throw SweepError(fmt::format("{}: --resume: cannot read: {}", path, std::strerror(saved)));
        }
        if (n == 0) break;
        text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return text;
}

// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). ddlsim
// writes nothing else, and a string that is not cannot become JSON text (the journal, the MPI broadcast).
bool valid_utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t len = 0;
        std::uint32_t cp = 0, min = 0;
        if (c < 0x80) {
            ++i;
            continue;
        }
        if ((c & 0xE0U) == 0xC0U) {
            len = 2, cp = c & 0x1FU, min = 0x80;
        } else if ((c & 0xF0U) == 0xE0U) {
            len = 3, cp = c & 0x0FU, min = 0x800;
        } else if ((c & 0xF8U) == 0xF0U) {
            len = 4, cp = c & 0x07U, min = 0x10000;
        } else {
            return false;
        }
        if (i + len > s.size()) return false;
        for (std::size_t k = 1; k < len; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xC0U) != 0x80U) return false;
            cp = (cp << 6U) | (d & 0x3FU);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

// A field of a resume file that is not what ddlsim wrote: the file, where, and what was expected.
[[noreturn]] void bad_field(const std::string& file, const std::string& where, const std::string& expected) {
    throw SweepError(
        fmt::format("{}: --resume: {}: expected {} (as ddlsim sweep writes it); use another --out or "
                    "drop --resume",
                    file, where, expected));
}

// A sweep record (RESULTS.sweep.json) checked field by field.
void check_record_shape(const json& was, const std::string& file) {
    if (!was.is_object()) bad_field(file, "$", "a sweep record object");
    for (const char* key : {"format", "scenario", "scenario_hash", "output"})
        if (!was.contains(key) || !was[key].is_string()) bad_field(file, fmt::format("$.{}", key), "a string");
    if (was["format"] != "ddlsim-sweep-1") bad_field(file, "$.format", "\"ddlsim-sweep-1\"");
    if (!was.contains("vary") || !was["vary"].is_array()) bad_field(file, "$.vary", "an array of varied keys");
    for (std::size_t i = 0; i < was["vary"].size(); ++i) {
        const json& v = was["vary"][i];
        const std::string at = fmt::format("$.vary[{}]", i);
        if (!v.is_object()) bad_field(file, at, "an object with \"path\" and \"values\"");
        if (!v.contains("path") || !v["path"].is_string()) bad_field(file, at + ".path", "a string");
        if (!v.contains("values") || !v["values"].is_array()) bad_field(file, at + ".values", "an array of strings");
        for (std::size_t k = 0; k < v["values"].size(); ++k)
            if (!v["values"][k].is_string()) bad_field(file, fmt::format("{}.values[{}]", at, k), "a string");
        if (v.contains("patches") && !v["patches"].is_array()) bad_field(file, at + ".patches", "an array");
    }
    if (was.contains("digests")) {
        if (!was["digests"].is_object()) bad_field(file, "$.digests", "an object of point digests");
        for (const auto& [k, v] : was["digests"].items())
            if (!v.is_string() || v.get<std::string>().size() != 16)
                bad_field(file, fmt::format("$.digests.{}", k), "a digest of 16 hexadecimal digits");
    }
}

// The digest the record keeps for point `p`, or "" when it keeps none (an older record, a point never finished).
std::string recorded_digest(const json& record, std::size_t p) {
    if (!record.contains("digests")) return {};
    const auto it = record["digests"].find(std::to_string(p));
    return it == record["digests"].end() ? std::string() : it->get<std::string>();
}

// Whether a row's cells belong to this sweep's point `p`: its point, job and varied values are the point's, no
// error, and every key is a column of the sweep or a result key's name.
bool row_belongs(const Plan& plan, std::size_t p, const std::map<std::string, std::string>& cells) {
    const auto values = point_values(plan.specs, p);
    auto cell = [&](const std::string& k) -> const std::string* {
        const auto it = cells.find(k);
        return it == cells.end() ? nullptr : &it->second;
    };
    if (const auto* c = cell("point"); c == nullptr || *c != std::to_string(p)) return false;
    if (const auto* e = cell("error"); e != nullptr && !e->empty()) return false;
    for (std::size_t k = 0; k < plan.specs.size(); ++k)
        if (const auto* c = cell(plan.specs[k].path); c == nullptr || *c != values[k]) return false;
    if (plan.multi_job) {  // one of the point's jobs (named, or "jobN" by position as the loader names them)
        const auto* name = cell("job");
        if (name == nullptr) return false;
        json j = plan.base;
        for (std::size_t k = 0; k < plan.specs.size(); ++k) apply_point_value(j, plan.specs[k], values[k]);
        bool found = false;
        if (j.contains("jobs") && j["jobs"].is_array())
            for (std::size_t i = 0; i < j["jobs"].size() && !found; ++i) {
                const json& job = j["jobs"][i];
                found = job.is_object() && job.contains("name") && job["name"].is_string()
                            ? job["name"].get<std::string>() == *name
                            : fmt::format("job{}", i) == *name;
            }
        if (!found) return false;
    }
    const std::set<std::string> columns(plan.header.begin(), plan.header.end());
    return std::all_of(cells.begin(), cells.end(), [&](const auto& kv) {
        const std::string& k = kv.first;
        return columns.contains(k) || (!k.empty() && std::all_of(k.begin(), k.end(), [](char ch) {
                   return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
               }));
    });
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

namespace {

// A row's cells as its digest sees them: the non-empty ones (a CSV writes an absent cell as an empty one).
json digested_cells(const SweepRow& r) {
    json o = json::object();
    for (const auto& [k, v] : r.cells)
        if (!v.empty()) o[k] = v;
    return o;
}

}  // namespace

std::string object_digest(const json& object) {
    return fmt::format("{:016x}", sim::rng::fnv1a64(object.dump(-1, ' ', false, json::error_handler_t::replace)));
}

std::string rows_digest(const std::vector<SweepRow>& rows) {
    json cells = json::array();
    for (const SweepRow& r : rows) cells.push_back(digested_cells(r));
    return object_digest(cells);
}

json digests_of(const std::vector<SweepRow>& rows) {
    std::map<std::size_t, json> cells;  // per point, as rows_digest builds them
    std::set<std::size_t> failed;
    for (const SweepRow& r : rows) {
        cells[r.point].push_back(digested_cells(r));
        if (const auto e = r.cells.find("error"); e != r.cells.end() && !e->second.empty()) failed.insert(r.point);
    }
    json out = json::object();
    for (const auto& [p, point_cells] : cells)
        if (!failed.contains(p)) out[std::to_string(p)] = object_digest(point_cells);
    return out;
}

json digests_of(const std::vector<json>& objects) {
    json out = json::object();
    for (const json& o : objects)
        if (o.contains("error") && o["error"].is_null())
            out[std::to_string(o["point"].get<std::size_t>())] = object_digest(o);
    return out;
}

void write_sweep_record(const Plan& plan, const std::string& out, json digests) {
    json record = sweep_identity(plan);
    record["digests"] = std::move(digests);
    write_file_atomically(meta_path(out), record.dump(2) + "\n");
}

json sweep_identity(const Plan& plan) {
    // FNV-1a 64 of the scenario as canonical JSON, with the offset basis the first versions wrote (a digit short of
    // FNV's; sim::rng::fnv1a64 has the standard one), kept so that their records stay resumable.
    std::uint64_t h = 1469598103934665603ULL;
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
json check_resume_identity(const Plan& plan, const std::string& out) {
    const std::string meta = meta_path(out);
    std::error_code ec;
    if (!fs::exists(meta, ec))
        throw SweepError(
            fmt::format("{}: --resume: no record of the sweep that wrote it ({} is missing); use "
                        "another --out or drop --resume",
                        out, meta));
    const json was = json::parse(read_text(meta), nullptr, false);
    const json now = sweep_identity(plan);
    if (was.is_discarded()) bad_field(meta, "$", "a sweep record (the file is not JSON)");
    check_record_shape(was, meta);
    auto paths = [](const json& j) {
        std::string p;
        for (const auto& v : j["vary"]) p += (p.empty() ? "" : ", ") + v["path"].get<std::string>();
        return p;
    };
    if (paths(was) != paths(now))
        throw SweepError(
            fmt::format("{}: --resume: it was computed varying {}, this sweep varies {}; use another "
                        "--out or drop --resume",
                        out, paths(was), paths(now)));
    if (was["vary"] != now["vary"])
        throw SweepError(
            fmt::format("{}: --resume: the varied values differ from the ones it was computed with; "
                        "use another --out or drop --resume",
                        out));
    if (was["scenario_hash"] != now["scenario_hash"])
        throw SweepError(fmt::format(
            "{}: --resume: the scenario {} changed since it was computed (content hash "
            "{} then, {} now); use another --out or drop --resume",
            out, plan.file, was["scenario_hash"].get<std::string>(), now["scenario_hash"].get<std::string>()));
    if (was["output"] != now["output"])
        throw SweepError(
            fmt::format("{}: --resume: it was written with --format {}", out, was["output"].get<std::string>()));
    return was;
}

// The rows of each point in the journal (complete cells), by point: only rows that belong to the sweep. A line
// that is not what ddlsim writes is refused (file, line, field); a cut-off last line (a kill mid-write) is dropped.
std::map<std::size_t, std::vector<SweepRow>> read_journal(const Plan& plan, const std::string& out) {
    std::map<std::size_t, std::vector<SweepRow>> rows;
    const std::string file = journal_path(out);
    std::error_code ec;
    if (fs::symlink_status(file, ec).type() == fs::file_type::not_found) return rows;
    const std::string text = read_text(file);
    std::size_t start = 0;
    for (std::size_t line = 1; start < text.size(); ++line) {
        const std::size_t nl = text.find('\n', start);
        if (nl == std::string::npos) break;  // cut off by a kill: not a committed row
        const std::string_view body(text.data() + start, nl - start);
        start = nl + 1;
        const std::string where = fmt::format("line {}", line);
        const json j = json::parse(body, nullptr, false);
        if (j.is_discarded() || !j.is_object()) bad_field(file, where, "one JSON object per line");
        if (!j.contains("point") || !j["point"].is_number_unsigned() || j["point"].get<std::size_t>() >= plan.total)
            bad_field(file, where + ": $.point", fmt::format("a point number below {}", plan.total));
        if (!j.contains("rows") || !j["rows"].is_array() || j["rows"].size() != plan.rows_per_point)
            bad_field(file, where + ": $.rows", fmt::format("an array of {} row object(s)", plan.rows_per_point));
        const auto p = j["point"].get<std::size_t>();
        std::vector<SweepRow> point;
        bool belongs = true;
        for (std::size_t r = 0; r < j["rows"].size(); ++r) {
            const json& o = j["rows"][r];
            if (!o.is_object()) bad_field(file, fmt::format("{}: $.rows[{}]", where, r), "an object of cells");
            SweepRow row{p, {}};
            for (const auto& [k, v] : o.items()) {
                if (!v.is_string()) bad_field(file, fmt::format("{}: $.rows[{}].{}", where, r, k), "a string cell");
                row.cells[k] = v.get<std::string>();
            }
            belongs = belongs && row_belongs(plan, p, row.cells);
            point.push_back(std::move(row));
        }
        // The digest ddlsim wrote with the line: a cell changed or added by hand (a result made up, a foreign
        // column) does not match it, and the point is recomputed.
        belongs = belongs && j.contains("digest") && j["digest"].is_string() && j["digest"] == rows_digest(point);
        if (belongs)
            rows[p] = std::move(point);
        else
            rows.erase(p);  // a later line for the point that does not belong: recompute it
    }
    return rows;
}

std::string journal_line(std::size_t point, const std::vector<SweepRow>& rows) {
    json cells = json::array();
    for (const auto& r : rows) cells.push_back(r.cells);
    // (replace: a cell holding bytes that are not UTF-8, e.g. from a --vary value, cannot throw here)
    return json{{"point", point}, {"rows", cells}, {"digest", rows_digest(rows)}}.dump(-1, ' ', false,
                                                                                       json::error_handler_t::replace);
}

std::string journal_text(const std::vector<SweepRow>& rows) {
    std::map<std::size_t, std::vector<SweepRow>> by_point;
    for (const auto& r : rows) by_point[r.point].push_back(r);
    std::string text;
    for (const auto& [p, point_rows] : by_point) text += journal_line(p, point_rows) + "\n";
    return text;
}

// --resume on a CSV: keeps the rows of points that finished without error and whose varied values match.
// Returns the rows kept; `header` becomes the file's header. Writes nothing (the caller does, once every check passed).
std::vector<SweepRow> resume_csv(Plan& plan, const std::string& out, const json& record, std::set<std::size_t>& done) {
    const auto records = parse_csv(read_text(out));
    if (records.empty()) return {};
    const auto& head = records.front();
    std::vector<std::string> want{"point"};
    if (plan.multi_job) want.emplace_back("job");
    for (const auto& s : plan.specs) want.push_back(s.path);
    for (std::size_t c = 0; c < head.size(); ++c)
        if (!valid_utf8(head[c])) bad_field(out, fmt::format("line 1, column {}", c + 1), "a column name in UTF-8");
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
        // A record of another shape, or with bytes ddlsim never writes: not a row of this sweep (recomputed).
        if (rec.size() != head.size() || !std::all_of(rec.begin(), rec.end(), valid_utf8)) continue;
        SweepRow row;
        for (std::size_t c = 0; c < head.size(); ++c) row.cells[head[c]] = rec[c];
        std::size_t p = 0;
        const std::string& ptext = rec[0];
        auto [ptr, ec] = std::from_chars(ptext.data(), ptext.data() + ptext.size(), p);
        if (ec != std::errc{} || ptr != ptext.data() + ptext.size() || p >= plan.total) continue;
        row.point = p;
        if (!row_belongs(plan, p, row.cells)) bad.insert(p);
        by_point[p].push_back(std::move(row));
    }
    // Rows streamed before a kill lack the columns found later: their complete cells are in the journal, whose
    // lines carry their digest. Rows of a finished sweep carry theirs in the record. A point with neither, or whose
    // cells were changed since ddlsim wrote them, is recomputed.
    const auto journal = read_journal(plan, out);
    std::vector<SweepRow> kept;
    for (auto& [p, rows] : by_point) {
        if (bad.contains(p) || rows.size() != plan.rows_per_point) continue;
        if (const auto it = journal.find(p); it != journal.end() && it->second.size() == rows.size())
            rows = it->second;
        else if (const std::string d = recorded_digest(record, p); d.empty() || d != rows_digest(rows))
            continue;
        std::set<std::string> jobs;
        for (const auto& r : rows) jobs.insert(plan.multi_job ? r.cells.at("job") : std::string());
        if (jobs.size() != rows.size()) continue;
        done.insert(p);
        for (auto& r : rows) kept.push_back(std::move(r));
    }
    // The file's columns, less any that neither this sweep writes up front nor a kept row fills (a column added by
    // hand: the rows that had it filled were recomputed above).
    const std::set<std::string> known(plan.header.begin(), plan.header.end());
    std::vector<std::string> header;
    for (const std::string& c : head)
        if (known.contains(c) || std::any_of(kept.begin(), kept.end(), [&](const SweepRow& r) {
                const auto it = r.cells.find(c);
                return it != r.cells.end() && !it->second.empty();
            }))
            header.push_back(c);
    plan.header = std::move(header);
    return kept;
}

// --resume on a JSON array written by an earlier --format json sweep.
std::vector<json> resume_json(const Plan& plan, const std::string& out, const json& record,
                              std::set<std::size_t>& done) {
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
        if (const std::string d = recorded_digest(record, p); d.empty() || d != object_digest(o)) continue;
        done.insert(p);
        kept.push_back(o);
    }
    return kept;
}

}  // namespace ddlsim::tools::sweep_detail
