#include "scenarios/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "sim/unit_parse.hpp"

namespace ddlsim::scenario {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

// A name as people misspell it: case, '-' for '_', spaces and dots do not count ("H100-SXM", "llama3-8b").
std::string folded(std::string_view s) {
    std::string out;
    for (const char c : s)
        if (std::isalnum(static_cast<unsigned char>(c)) != 0)
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

template <typename Parse>
auto read_unit(const json& j, const std::string& path, Parse parse, std::string_view what) {
    if (j.is_string()) {
        try {
            return parse(j.get_ref<const std::string&>());
        } catch (const std::invalid_argument& e) {
            throw ScenarioError(path, e.what());
        }
    }
    throw ScenarioError(path, fmt::format("expected {}, got {}", what, describe(j)));
}

}  // namespace

const Field* ObjectSchema::find(std::string_view name) const {
    for (const auto& f : fields)
        if (f.name == name) return &f;
    return nullptr;
}

json ObjectSchema::to_json() const {
    json props = json::object();
    json required = json::array();
    for (const auto& f : fields) {
        props[f.name] = f.schema;
        if (f.required) required.push_back(f.name);
    }
    json out{{"type", "object"}, {"description", description}, {"properties", props}, {"additionalProperties", false}};
    if (!required.empty()) out["required"] = required;
    if (!one_of.is_null()) out["oneOf"] = one_of;
    return out;
}

std::string did_you_mean(std::string_view given, std::span<const std::string> choices) {
    const std::string g = folded(given);
    std::string best;
    std::size_t best_d = std::numeric_limits<std::size_t>::max();
    for (const auto& c : choices) {
        const std::string f = folded(c);
        // A folded prefix ("h100sxm" for "H100") is as near as a one-letter slip.
        const bool prefix = f.size() >= 3 && g.size() >= 3 && (g.rfind(f, 0) == 0 || f.rfind(g, 0) == 0);
        // The same name but for case and separators ("h100", "dgx-h100") is the nearest of all.
        const std::size_t d = std::min({edit_distance(given, c), edit_distance(g, f),
                                        prefix ? std::size_t{1} : std::numeric_limits<std::size_t>::max()});
        if (d < best_d) best_d = d, best = c;
    }
    if (best.empty() || best == given || best_d > std::max<std::size_t>(2, given.size() / 3)) return "";
    return fmt::format(" (did you mean \"{}\"?)", best);
}

ObjectReader::ObjectReader(const json& j, std::string path, const ObjectSchema& schema)
    : j_(j), path_(std::move(path)), schema_(schema) {
    if (!j.is_object())
        throw ScenarioError(path_, fmt::format("expected an object ({}), got {}", schema.description, describe(j)));
    for (const auto& [key, value] : j.items()) {
        if (schema.find(key)) continue;
        std::vector<std::string> names;
        for (const auto& f : schema.fields) names.push_back(f.name);
        const std::string hint = did_you_mean(key, names);
        throw ScenarioError(path_ + "." + key, fmt::format("unknown key{}; expected one of: {}", hint, join(names)));
    }
    for (const auto& f : schema.fields)
        if (f.required && !j.contains(f.name))
            throw ScenarioError(path_ + "." + f.name,
                                "required key is missing: " + f.schema.value("description", f.name));
}

const Field& ObjectReader::declared(std::string_view key) const {
    const Field* f = schema_.find(key);
    if (!f) throw std::logic_error(fmt::format("loader reads undeclared key {}.{}", path_, key));
    return *f;
}

bool ObjectReader::has(std::string_view key) const {
    (void)declared(key);
    return j_.contains(key);
}

const json& ObjectReader::at(std::string_view key) {
    (void)declared(key);
    read_.emplace(key);
    return j_.at(std::string(key));
}

std::string ObjectReader::path(std::string_view key) const {
    return path_ + "." + std::string(key);
}

void ObjectReader::forbid(std::string_view key, std::string_view why) const {
    if (has(key)) throw ScenarioError(path(key), std::string(why));
}

void ObjectReader::finish() const {
    for (const auto& [key, value] : j_.items())
        if (!read_.contains(key)) throw std::logic_error(fmt::format("loader ignored key {}.{}", path_, key));
}

std::string describe(const json& j) {
    switch (j.type()) {
        case json::value_t::null: return "null";
        case json::value_t::boolean: return j.get<bool>() ? "true" : "false";
        case json::value_t::string: return j.dump();
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
        case json::value_t::number_float: return j.dump();
        case json::value_t::object: return "an object";
        case json::value_t::array: return "an array";
        default: return "a value";
    }
}

std::uint64_t read_uint(const json& j, const std::string& path, std::uint64_t min, std::uint64_t max) {
    std::uint64_t v = 0;
    if (j.is_number_unsigned()) {
        v = j.get<std::uint64_t>();
    } else if (j.is_number_integer() && j.get<std::int64_t>() >= 0) {
        v = static_cast<std::uint64_t>(j.get<std::int64_t>());
    } else if (j.is_number_float() && std::isfinite(j.get<double>()) && j.get<double>() >= 0 &&
               j.get<double>() == std::floor(j.get<double>()) && j.get<double>() <= static_cast<double>(max) &&
               j.get<double>() < 0x1p64) {  // 2^64 itself rounds to UINT64_MAX's double and would wrap to 0
        v = static_cast<std::uint64_t>(j.get<double>());
    } else {
        throw ScenarioError(path, fmt::format("expected an integer in {} .. {}, got {}", min, max, describe(j)));
    }
    if (v < min || v > max)
        throw ScenarioError(path, fmt::format("expected an integer in {} .. {}, got {}", min, max, v));
    return v;
}

double read_number(const json& j, const std::string& path, double min, double max) {
    if (!j.is_number())
        throw ScenarioError(path, fmt::format("expected a number in [{}, {}], got {}", min, max, describe(j)));
    const double v = j.get<double>();
    if (!std::isfinite(v) || v < min || v > max)
        throw ScenarioError(path, fmt::format("expected a number in [{}, {}], got {}", min, max, describe(j)));
    return v;
}

double read_number_above(const json& j, const std::string& path, double min, double max) {
    if (!j.is_number() || !std::isfinite(j.get<double>()) || j.get<double>() <= min || j.get<double>() > max)
        throw ScenarioError(path, fmt::format("expected a number in ({:g}, {:g}], got {}", min, max, describe(j)));
    return j.get<double>();
}

bool read_bool(const json& j, const std::string& path) {
    if (!j.is_boolean()) throw ScenarioError(path, "expected true or false, got " + describe(j));
    return j.get<bool>();
}

std::string read_string(const json& j, const std::string& path) {
    if (!j.is_string() || j.get_ref<const std::string&>().empty())
        throw ScenarioError(path, "expected a non-empty string, got " + describe(j));
    return j.get<std::string>();
}

std::string read_choice(const json& j, const std::string& path, std::span<const std::string> choices) {
    std::vector<std::string> quoted;
    for (const auto& c : choices) quoted.push_back("\"" + c + "\"");
    if (j.is_string())
        for (const auto& c : choices)
            if (j.get_ref<const std::string&>() == c) return c;
    throw ScenarioError(path, fmt::format("expected one of {}, got {}{}", join(quoted), describe(j),
                                          j.is_string() ? did_you_mean(j.get_ref<const std::string&>(), choices) : ""));
}

sim::Bandwidth read_bandwidth(const json& j, const std::string& path) {
    constexpr std::string_view what = R"(a bandwidth such as "10Gbps" or "1.25GBps")";
    // A bare number is refused: bits or bytes per second is the classic confusion (10e9 read as bytes/s
    // would be 80 Gbit/s).
    if (j.is_number())
        throw ScenarioError(path, fmt::format("expected {} with its unit, got {} (a bare number is ambiguous: "
                                              "\"Gbps\" is bits per second, \"GBps\" bytes per second)",
                                              what, describe(j)));
    return read_unit(j, path, sim::parse_bandwidth, what);
}

sim::Time read_time(const json& j, const std::string& path) {
    if (j.is_number()) return sim::Time::seconds(read_number(j, path, 0.0, 9e6));
    return read_unit(j, path, sim::parse_time, R"(a time such as "5us" or "2ms")");
}

sim::Bytes read_bytes(const json& j, const std::string& path) {
    if (j.is_number()) return sim::Bytes{read_number(j, path, 0.0, 1e18)};
    return read_unit(j, path, sim::parse_bytes, R"(a size such as "25MB" or "25MiB")");
}

sim::FlopRate read_flop_rate(const json& j, const std::string& path) {
    constexpr std::string_view what = R"(a compute rate such as "125TFLOPS")";
    if (j.is_number()) {
        const double v = j.get<double>();
        if (!std::isfinite(v) || v <= 0.0 || v > 1e21)
            throw ScenarioError(path,
                                fmt::format("expected {} or a positive number of FLOP/s, got {}", what, describe(j)));
        return sim::FlopRate::per_s(v);
    }
    return read_unit(j, path, sim::parse_flop_rate, what);
}

const json& read_array(const json& j, const std::string& path, std::size_t min_size) {
    if (!j.is_array()) throw ScenarioError(path, "expected an array, got " + describe(j));
    if (j.size() < min_size)
        throw ScenarioError(path, fmt::format("expected at least {} element(s), got {}", min_size, j.size()));
    return j;
}

json bandwidth_schema(std::string description) {
    return {{"description",
             std::move(description) + R"( — "10Gbps" (bits/s) or "1.25GBps" (bytes/s); the unit is required)"},
            {"type", "string"},
            {"pattern", R"(^\s*[0-9.eE+-]+\s*[kMGT]?[bB]ps\s*$)"},
            {"examples", json::array({"10Gbps", "100Gbps", "12.5GBps"})}};
}

json time_schema(std::string description) {
    return {{"description", std::move(description) + R"( — "5us", "2ms", "1.5s" or a number of seconds)"},
            {"oneOf", json::array({{{"type", "string"}, {"pattern", R"(^\s*[0-9.eE+-]+\s*(ps|ns|us|ms|s|min|h)\s*$)"}},
                                   {{"type", "number"}, {"minimum", 0}}})},
            {"examples", json::array({"5us", "1ms"})}};
}

json str_schema(std::string description) {
    return {{"type", "string"}, {"description", std::move(description)}};
}

json ref_schema(const std::string& id, std::string description) {
    return {{"$ref", "#/$defs/" + id}, {"description", std::move(description)}};
}

json bytes_schema(std::string description) {
    return {{"description", std::move(description) + R"( — "25MB" (10^6), "25MiB" (2^20) or a number of bytes)"},
            {"oneOf", json::array({{{"type", "string"}, {"pattern", R"(^\s*[0-9.eE+-]+\s*([kKMGT]?B|[KMG]iB)\s*$)"}},
                                   {{"type", "number"}, {"minimum", 0}}})},
            {"examples", json::array({"25MB", "4MiB"})}};
}

json flop_rate_schema(std::string description) {
    return {{"description", std::move(description) + R"( — "125TFLOPS" or a number of FLOP/s)"},
            {"oneOf", json::array({{{"type", "string"}, {"pattern", R"(^\s*[0-9.eE+-]+\s*[MGTP]?FLOPS\s*$)"}},
                                   {{"type", "number"}, {"exclusiveMinimum", 0}}})},
            {"examples", json::array({"125TFLOPS", "19.5TFLOPS"})}};
}

json enum_schema(std::span<const std::string> choices, std::string description) {
    return {{"type", "string"},
            {"enum", json(std::vector<std::string>(choices.begin(), choices.end()))},
            {"description", std::move(description)}};
}

json parse_strict(std::string_view text) {
    struct Frame {
        bool array = false;
        std::size_t next_index = 0;
        std::set<std::string> keys;
        std::string current;
    };
    std::vector<Frame> frames;
    auto where = [&frames]() {
        std::string p = "$";
        for (std::size_t i = 0; i + 1 < frames.size(); ++i)
            p += frames[i].array ? fmt::format("[{}]", frames[i].next_index - 1) : "." + frames[i].current;
        return p;
    };
    auto element = [&frames]() {
        if (!frames.empty() && frames.back().array) ++frames.back().next_index;
    };
    json::parser_callback_t cb = [&](int, json::parse_event_t event, json& parsed) {
        switch (event) {
            case json::parse_event_t::object_start:
            case json::parse_event_t::array_start:
                element();
                frames.push_back(Frame{event == json::parse_event_t::array_start, 0, {}, {}});
                break;
            case json::parse_event_t::key: {
                Frame& top = frames.back();
                top.current = parsed.get<std::string>();
                if (!top.keys.insert(top.current).second)
                    throw ScenarioError(where() + "." + top.current, "duplicate key (each key may appear once)");
                break;
            }
            case json::parse_event_t::value: element(); break;
            case json::parse_event_t::object_end:
            case json::parse_event_t::array_end: frames.pop_back(); break;
        }
        return true;
    };
    // nlohmann's parser takes a NUL byte for the end of the text, so "{...}\0garbage" would parse: no JSON text
    // holds one (RFC 8259 allows it only escaped inside strings).
    if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
        const auto before = text.substr(0, nul);
        const std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
        const std::size_t col = nul - (before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1) + 1;
        throw ScenarioError("$", fmt::format("malformed JSON at line {}, column {}: a NUL byte (JSON text has none; "
                                             "expected the text to end after its value)",
                                             line, col));
    }
    try {
        return json::parse(text.begin(), text.end(), cb);
    } catch (const json::parse_error& e) {
        std::size_t line = 1, col = 1;
        for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
            if (text[i] == '\n')
                ++line, col = 1;
            else
                ++col;
        }
        // Drop nlohmann's "[json.exception.parse_error.101] parse error at line L, column C: " prefix: its position
        // counts a newline as column 0 of the next line and would contradict the one computed above.
        std::string msg = e.what();
        if (auto pos = msg.find(": "); pos != std::string::npos) msg = msg.substr(pos + 2);
        throw ScenarioError("$", fmt::format("malformed JSON at line {}, column {}: {}", line, col, msg));
    } catch (const json::out_of_range& e) {
        // Valid JSON syntax, but a number beyond the range of a double ("1e400"): name the value's path.
        std::string p = "$";
        if (!frames.empty())
            p = where() +
                (frames.back().array ? fmt::format("[{}]", frames.back().next_index) : "." + frames.back().current);
        std::string msg = e.what();
        std::string token;
        if (auto a = msg.find('\''), b = msg.rfind('\''); a != std::string::npos && b > a)
            token = msg.substr(a + 1, b - a - 1);
        throw ScenarioError(p, fmt::format("expected a number within the range of a double (magnitude below 1.8e308), "
                                           "got {}",
                                           token.empty() ? msg : token));
    }
}

}  // namespace ddlsim::scenario
