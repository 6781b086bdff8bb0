// `ddlsim sweep` helpers: --vary specs and ranges, the cartesian product, CSV reading and writing, and the
// flattening of result JSON into CSV columns.
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tools/sweep.hpp"

namespace ddlsim::tools {

namespace {

constexpr std::size_t kMaxPoints = 10'000'000;

// Parses the whole of `s` as a number (no sign other than a leading '-', no spaces).
bool parse_number(std::string_view s, double& out) {
    if (s.empty()) return false;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && ptr == s.data() + s.size() && std::isfinite(out);
}

bool is_integer_text(std::string_view s) {
    if (!s.empty() && s.front() == '-') s.remove_prefix(1);
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// Digits after the decimal point of a plain decimal ("0.25" -> 2); -1 when written with an exponent.
int decimals(std::string_view s) {
    if (s.find_first_of("eE") != std::string_view::npos) return -1;
    const auto dot = s.find('.');
    return dot == std::string_view::npos ? 0 : static_cast<int>(s.size() - dot - 1);
}

// Splits at commas outside JSON strings, arrays and objects.
std::vector<std::string> split_items(const std::string& s) {
    std::vector<std::string> items;
    std::string cur;
    int depth = 0;
    bool in_string = false, escaped = false;
    for (char c : s) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            ++depth;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        } else if (c == ',' && depth == 0) {
            items.push_back(cur);
            cur.clear();
            continue;
        }
        cur += c;
    }
    items.push_back(cur);
    return items;
}

// Splits "10Gbps" into "10" and "Gbps" (a unit is letters only; it may be empty).
bool split_unit(std::string_view s, std::string_view& number, std::string_view& unit) {
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || ptr == s.data() || !std::isfinite(v)) return false;
    number = s.substr(0, static_cast<std::size_t>(ptr - s.data()));
    unit = s.substr(number.size());
    for (char c : unit)
        if (!std::isalpha(static_cast<unsigned char>(c))) return false;
    return true;
}

// NUMBER[UNIT]..NUMBER[UNIT] with an optional ":..." suffix; anything else (e.g. "../file.json") is a plain
// value.
bool looks_like_range(std::string_view item) {
    const auto dots = item.find("..");
    if (dots == std::string_view::npos) return false;
    std::string_view na, ua, nb, ub;
    const std::string_view rest = item.substr(dots + 2);
    return split_unit(item.substr(0, dots), na, ua) && split_unit(rest.substr(0, rest.find(':')), nb, ub);
}

// A number (with its unit) followed by "..": the user meant a range ("8..64x2" for "8..64:x2").
bool starts_like_range(std::string_view item) {
    const auto dots = item.find("..");
    std::string_view n, u;
    return dots != std::string_view::npos && dots > 0 && split_unit(item.substr(0, dots), n, u);
}

std::vector<std::string> expand_numbers(std::string_view item);

}  // namespace

// A range whose ends carry a unit ("10Gbps..400Gbps:x2", "1ms..4ms:+1ms") expands the numbers and
// writes the unit after each value; both ends (and an arithmetic step, if it has one) use the same unit.
std::vector<std::string> expand_range(std::string_view item) {
    const std::string text(item);
    const auto dots = item.find("..");
    if (dots == std::string_view::npos) throw SweepError(fmt::format("\"{}\": expected a range A..B", text));
    std::string_view rest = item.substr(dots + 2), suffix;
    if (const auto colon = rest.find(':'); colon != std::string_view::npos) {
        suffix = rest.substr(colon);
        rest = rest.substr(0, colon);
    }
    std::string_view na, ua, nb, ub;
    if (!split_unit(item.substr(0, dots), na, ua) || !split_unit(rest, nb, ub))
        return expand_numbers(item);  // reports the malformed range
    if (ua.empty() && ub.empty()) return expand_numbers(item);
    if (ua != ub)
        throw SweepError(fmt::format("\"{}\": expected the same unit on both ends (\"{}\" and \"{}\")", text, ua, ub));
    std::string step(suffix);
    if (step.size() > 2 && step[1] == '+' && step.ends_with(ua)) step.resize(step.size() - ua.size());
    std::vector<std::string> values = expand_numbers(std::string(na) + ".." + std::string(nb) + step);
    for (auto& v : values) v += ua;
    return values;
}

namespace {

std::vector<std::string> expand_numbers(std::string_view item) {
    const std::string text(item);
    const auto dots = item.find("..");
    if (dots == std::string_view::npos) throw SweepError(fmt::format("\"{}\": expected a range A..B", text));
    const std::string_view a_text = item.substr(0, dots);
    std::string_view rest = item.substr(dots + 2);
    std::string_view b_text = rest, step_text = "1";
    char kind = '+';
    if (const auto colon = rest.find(':'); colon != std::string_view::npos) {
        b_text = rest.substr(0, colon);
        const std::string_view suffix = rest.substr(colon + 1);
        if (suffix.size() < 2 || (suffix[0] != 'x' && suffix[0] != '+'))
            throw SweepError(
                fmt::format("\"{}\": expected A..B:xF (geometric) or A..B:+S (arithmetic) after the colon", text));
        kind = suffix[0];
        step_text = suffix.substr(1);
    }
    double a = 0, b = 0, step = 0;
    if (!parse_number(a_text, a) || !parse_number(b_text, b))
        throw SweepError(fmt::format("\"{}\": expected numbers A..B", text));
    if (!parse_number(step_text, step))
        throw SweepError(fmt::format("\"{}\": expected a number after \"{}\"", text, kind));
    if (a > b) throw SweepError(fmt::format("\"{}\": the range is empty (A > B)", text));
    std::vector<std::string> values;
    const double tol = 1e-9 * std::max({1.0, std::abs(a), std::abs(b)});
    auto add = [&](std::string v) {
        if (values.size() >= kMaxPoints) throw SweepError(fmt::format("\"{}\": more than {} values", text, kMaxPoints));
        values.push_back(std::move(v));
    };
    const bool integers = is_integer_text(a_text) && is_integer_text(b_text) && is_integer_text(step_text);
    if (kind == '+') {
        if (!(step > 0)) throw SweepError(fmt::format("\"{}\": the step must be positive", text));
        if ((b - a) / step >= static_cast<double>(kMaxPoints))
            throw SweepError(fmt::format("\"{}\": more than {} values", text, kMaxPoints));
        if (integers && std::abs(a) < 9e15 && std::abs(b) < 9e15 && step < 9e15) {
            const auto ia = static_cast<std::int64_t>(a), ib = static_cast<std::int64_t>(b),
                       is = static_cast<std::int64_t>(step);
            for (std::int64_t v = ia; v <= ib; v += is) add(std::to_string(v));
        } else {
            const int da = decimals(a_text), ds = decimals(step_text);
            const int digits = (da < 0 || ds < 0) ? -1 : std::max(da, ds);
            for (std::size_t i = 0;; ++i) {
                const double v = a + static_cast<double>(i) * step;
                if (v > b + tol) break;
                add(digits < 0 ? fmt::format("{:.12g}", v) : fmt::format("{:.{}f}", v, digits));
            }
        }
    } else {
        if (!(step > 1)) throw SweepError(fmt::format("\"{}\": the factor must be greater than 1", text));
        if (!(a > 0)) throw SweepError(fmt::format("\"{}\": a geometric range must start above 0", text));
        if (integers && b < 9e15) {
            const auto ib = static_cast<std::int64_t>(b), is = static_cast<std::int64_t>(step);
            for (auto v = static_cast<std::int64_t>(a); v <= ib; v *= is) {
                add(std::to_string(v));
                if (v > ib / is) break;
            }
        } else {
            for (double v = a; v <= b * (1 + 1e-12); v *= step) add(fmt::format("{:.12g}", v));
        }
    }
    return values;
}

}  // namespace

VarySpec parse_vary(const std::string& spec) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
        throw SweepError("expected PATH=V1,V2,... or PATH=A..B[:xF|:+S], e.g. workers=4..64:x2");
    VarySpec v;
    v.path = spec.substr(0, eq);
    if (v.path.front() == '.' || v.path.back() == '.' || v.path.find("..") != std::string::npos ||
        v.path.find_first_of(" \t,\"") != std::string::npos)
        throw SweepError(fmt::format("\"{}\": expected a dotted key path such as network.bandwidth", v.path));
    const std::string rhs = spec.substr(eq + 1);
    if (rhs.empty()) throw SweepError(fmt::format("{}: no values after \"=\"", v.path));
    bool geometric = true;
    for (const auto& item : split_items(rhs)) {
        if (item.empty()) throw SweepError(fmt::format("{}: empty value in \"{}\"", v.path, rhs));
        if (starts_like_range(item) && !looks_like_range(item))
            throw SweepError(
                fmt::format("{}: \"{}\" is not a range; expected A..B, A..B:xF (geometric) or A..B:+S "
                            "(arithmetic), e.g. 8..64:x2",
                            v.path, item));
        if (looks_like_range(item)) {
            for (auto& x : expand_range(item)) v.values.push_back(std::move(x));
            geometric = geometric && item.find(":x") != std::string::npos;
        } else {
            v.values.push_back(item);
            geometric = false;
        }
        if (v.values.size() > kMaxPoints) throw SweepError(fmt::format("{}: more than {} values", v.path, kMaxPoints));
    }
    v.geometric = geometric;
    return v;
}

std::pair<std::string, nlohmann::json> parse_variant(const std::string& spec) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
        throw CliError(fmt::format("--variant {}: expected NAME=JSON-PATCH, e.g. 'ddp={{\"sharding\": null}}'", spec));
    std::string name = spec.substr(0, eq);
    nlohmann::json patch;
    try {
        patch = nlohmann::json::parse(spec.substr(eq + 1));
    } catch (const nlohmann::json::exception& e) {
        throw CliError(fmt::format("--variant {}: the patch is not JSON ({})", spec, e.what()));
    }
    if (!patch.is_object())
        throw CliError(fmt::format("--variant {}: expected a JSON object (a merge patch of the scenario), got {}", spec,
                                   patch.type_name()));
    // A null removes a key: it must name one the scenario format declares, or a misspelled key would be removed
    // from nowhere and the variant silently run as the base.
    const std::function<void(const nlohmann::json&, const std::string&)> check_nulls = [&](const nlohmann::json& j,
                                                                                           const std::string& at) {
        for (const auto& [k, v] : j.items()) {
            const std::string path = at.empty() ? k : at + "." + k;
            if (v.is_object()) check_nulls(v, path);
            if (!v.is_null()) continue;
            try {
                ddlsim::scenario::check_key_path(path, "--variant " + spec);
            } catch (const ddlsim::scenario::ScenarioError& e) {
                throw CliError(one_line(fmt::format("{}: {}", e.path(), e.what())));
            }
        }
    };
    check_nulls(patch, "");
    return {std::move(name), std::move(patch)};
}

VarySpec variant_spec(const std::vector<std::string>& variants) {
    VarySpec v;
    v.path = "variant";
    for (const auto& text : variants) {
        auto [name, patch] = parse_variant(text);
        if (std::find(v.values.begin(), v.values.end(), name) != v.values.end())
            throw SweepError(fmt::format("--variant {}: a variant \"{}\" is already named", text, name));
        v.values.push_back(std::move(name));
        v.patches.push_back(std::move(patch));
    }
    return v;
}

void apply_point_value(nlohmann::json& j, const VarySpec& s, const std::string& value) {
    if (s.patches.empty()) {
        scenario::apply_override(j, s.path + "=" + value);
        return;
    }
    const auto it = std::find(s.values.begin(), s.values.end(), value);
    j.merge_patch(s.patches.at(static_cast<std::size_t>(it - s.values.begin())));
}

std::size_t sweep_size(const std::vector<VarySpec>& specs) {
    std::size_t n = 1;
    for (const auto& s : specs) {
        if (s.values.empty()) return 0;
        if (n > kMaxPoints / s.values.size())
            throw SweepError(fmt::format("the sweep has more than {} points", kMaxPoints));
        n *= s.values.size();
    }
    return n;
}

std::vector<std::string> point_values(const std::vector<VarySpec>& specs, std::size_t index) {
    std::vector<std::string> out(specs.size());
    for (std::size_t k = specs.size(); k-- > 0;) {
        const std::size_t m = specs[k].values.size();
        out[k] = specs[k].values[index % m];
        index /= m;
    }
    return out;
}

std::string csv_field(std::string_view s) {
    const bool quote =
        s.find_first_of(",\"\r\n") != std::string_view::npos || (!s.empty() && (s.front() == ' ' || s.back() == ' '));
    if (!quote) return std::string(s);
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

std::string csv_line(const std::vector<std::string>& fields) {
    std::string out;
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i) out += ',';
        out += csv_field(fields[i]);
    }
    return out + "\n";
}

std::vector<std::vector<std::string>> parse_csv(std::string_view text) {
    std::vector<std::vector<std::string>> records;
    std::vector<std::string> rec;
    std::string field;
    bool in_quotes = false, quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_quotes) {
            if (c == '"') {
                if (i + 1 < text.size() && text[i + 1] == '"') {
                    field += '"';
                    ++i;
                } else {
                    in_quotes = false;
                }
            } else {
                field += c;
            }
        } else if (c == '"' && field.empty() && !quoted) {
            in_quotes = quoted = true;
        } else if (c == ',') {
            rec.push_back(std::move(field));
            field.clear();
            quoted = false;
        } else if (c == '\n' || c == '\r') {
            if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
            rec.push_back(std::move(field));
            field.clear();
            quoted = false;
            records.push_back(std::move(rec));
            rec.clear();
        } else {
            field += c;
        }
    }
    return records;  // a record without its final newline was cut off: dropped
}

std::string one_line(std::string_view s) {
    std::string out;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\n')
            out += "\\n";
        else if (c == '\r')
            out += "\\r";
        else if (c == '\t')
            out += "\\t";
        else if (u < 0x20 || u == 0x7f)
            out += fmt::format("\\x{:02x}", u);
        else
            out += c;
    }
    return out;
}

std::string cell_text(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_null()) return "";
    return v.dump();
}

void flatten_json(const nlohmann::json& j, const std::string& prefix, std::map<std::string, nlohmann::json>& out) {
    for (const auto& [key, value] : j.items()) {
        const std::string name = prefix.empty() ? key : prefix + "." + key;
        if (value.is_object())
            flatten_json(value, name, out);
        else if (!value.is_array())
            out[name] = value;
    }
}

std::vector<std::map<std::string, nlohmann::json>> flatten_result(const nlohmann::json& result) {
    std::map<std::string, nlohmann::json> top;
    nlohmann::json scalars = result;
    scalars.erase("resolved_scenario");  // the row's varied values already say what differs
    flatten_json(scalars, "", top);
    if (!result.contains("jobs") || !result["jobs"].is_array()) return {top};
    std::vector<std::map<std::string, nlohmann::json>> rows;
    for (const auto& job : result["jobs"]) {
        auto row = top;
        flatten_json(job, "", row);
        if (job.contains("scenario") && job["scenario"].contains("name")) row["job"] = job["scenario"]["name"];
        rows.push_back(std::move(row));
    }
    return rows;
}

std::vector<std::string> result_columns() {
    // A probe result through result_json itself, so new result keys become columns without touching this file.
    scenario::Scenario s;
    s.jobs.emplace_back();
    s.network_model = scenario::NetworkModel::flow;
    scenario::RunResult r;
    r.jobs.emplace_back();
    const nlohmann::json probe = scenario::result_json(s, r);
    std::vector<std::string> cols;
    std::set<std::string> seen;
    // Keep result_json's key order for the docs/CONTRACT.md §3 keys (nlohmann sorts objects; so list them first).
    for (const char* k : {"iteration_time_s", "throughput_samples_per_s", "scaling_efficiency", "compute_time_s",
                          "communication_time_s", "exposed_communication_time_s", "bytes_on_wire_per_iteration"})
        if (probe.contains(k) && seen.insert(k).second) cols.emplace_back(k);
    std::map<std::string, nlohmann::json> flat;
    for (const auto& row : flatten_result(probe)) flat.insert(row.begin(), row.end());
    for (const auto& [k, v] : flat)
        if (seen.insert(k).second) cols.push_back(k);
    return cols;
}

}  // namespace ddlsim::tools
