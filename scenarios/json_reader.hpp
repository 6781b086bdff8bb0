// Strict reading of JSON into plain values, with JSON paths in every error.
// Each object kind is described once by an ObjectSchema (its keys, their JSON
// Schema fragments and descriptions); the loader reads through it, so a key the
// loader reads is a key the schema documents, and a key in the file that the
// schema does not list is an error naming the key and suggesting the nearest one.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/enum_info.hpp"
#include "sim/units.hpp"

namespace ddlsim::scenario {

using nlohmann::json;

/// Bad input: `path` is the JSON path ("$.network.bandwidth"), `what()` what was expected.
class ScenarioError : public std::runtime_error {
public:
    ScenarioError(std::string path, const std::string& message) : std::runtime_error(message), path_(std::move(path)) {}
    [[nodiscard]] const std::string& path() const { return path_; }

private:
    std::string path_;
};

struct Field {
    std::string name;
    json schema;  ///< JSON Schema of the value, with a "description"
    bool required = false;
};

/// The keys one kind of object may hold.
struct ObjectSchema {
    std::string id;  ///< name under $defs
    std::string description;
    std::vector<Field> fields;
    json one_of = nullptr;  ///< optional JSON Schema "oneOf" over the whole object (e.g. alternative required sets)

    [[nodiscard]] const Field* find(std::string_view name) const;
    [[nodiscard]] json to_json() const;
};

/// Reads one JSON object: rejects unknown and missing required keys on
/// construction, and checks on finish() that every present key was read.
class ObjectReader {
public:
    ObjectReader(const json& j, std::string path, const ObjectSchema& schema);

    [[nodiscard]] bool has(std::string_view key) const;
    /// The value of a present key (marks it read).
    [[nodiscard]] const json& at(std::string_view key);
    [[nodiscard]] std::string path(std::string_view key) const;
    [[nodiscard]] const std::string& path() const { return path_; }
    /// Throws ScenarioError at `key` if it is present (keys that do not apply to this kind).
    void forbid(std::string_view key, std::string_view why) const;
    /// Internal check: every key present was consumed by the loader.
    void finish() const;

private:
    const Field& declared(std::string_view key) const;

    const json& j_;
    std::string path_;
    const ObjectSchema& schema_;
    std::set<std::string, std::less<>> read_;
};

[[nodiscard]] std::string describe(const json& j);
/// " (did you mean "X"?)" for the choice nearest `given` (ignoring case and separators), or "" when none is near.
[[nodiscard]] std::string did_you_mean(std::string_view given, std::span<const std::string> choices);
[[nodiscard]] std::uint64_t read_uint(const json& j, const std::string& path, std::uint64_t min, std::uint64_t max);
[[nodiscard]] double read_number(const json& j, const std::string& path, double min, double max);
/// A number in (min, max].
[[nodiscard]] double read_number_above(const json& j, const std::string& path, double min, double max);
[[nodiscard]] bool read_bool(const json& j, const std::string& path);
[[nodiscard]] std::string read_string(const json& j, const std::string& path);
/// A string that must be one of `choices`.
[[nodiscard]] std::string read_choice(const json& j, const std::string& path, std::span<const std::string> choices);
[[nodiscard]] sim::Bandwidth read_bandwidth(const json& j, const std::string& path);
[[nodiscard]] sim::Time read_time(const json& j, const std::string& path);
[[nodiscard]] sim::Bytes read_bytes(const json& j, const std::string& path);
[[nodiscard]] sim::FlopRate read_flop_rate(const json& j, const std::string& path);
[[nodiscard]] const json& read_array(const json& j, const std::string& path, std::size_t min_size);

/// A string naming a value of the plain enum E (its table, sim/enum_info.hpp).
template <typename E>
[[nodiscard]] E read_enum(const json& j, const std::string& path) {
    static const std::vector<std::string> names = sim::enum_names<E>();
    return sim::enum_value<E>(read_choice(j, path, names));
}

/// JSON Schema fragments for the unit strings, shared by the schema and the docs.
[[nodiscard]] json bandwidth_schema(std::string description);
[[nodiscard]] json time_schema(std::string description);
[[nodiscard]] json bytes_schema(std::string description);
[[nodiscard]] json flop_rate_schema(std::string description);
[[nodiscard]] json enum_schema(std::span<const std::string> choices, std::string description);
[[nodiscard]] json str_schema(std::string description);
/// A reference to the object `id` under the schema's $defs.
[[nodiscard]] json ref_schema(const std::string& id, std::string description);

/// Parses JSON text strictly: malformed text or duplicate keys throw ScenarioError
/// with the line and column.
[[nodiscard]] json parse_strict(std::string_view text);

}  // namespace ddlsim::scenario
