// Every key of a scenario block declared once: its name, type, unit, range, default, description, the member
// of the struct it fills, when it applies, and how it is echoed. The strict reader, the JSON Schema (and the key
// reference in docs/ generated from it), the resolved-scenario echo and `--set`/`--vary` validation all read
// these tables, so adding a key is one entry:
//
//     key("staleness", &SyncSpec::staleness, "ssp (required): iterations a worker may run ahead")
//         .range(0, 1e6).when(is(SyncKind::ssp), "applies to kind \"ssp\" only"),
//
// Rules that tie several keys together (a default that depends on another key, a bound set by the job) stay
// in the block's reader, after the table has read what it can.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "scenarios/json_reader.hpp"
#include "sim/unit_parse.hpp"

namespace ddlsim::scenario::keys {

/// A plain enum with a name table (sim/enum_info.hpp).
template <typename E>
concept NamedEnum = std::is_enum_v<E> && requires {
    enum_entries(E{});
};

template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {
    using value_type = T;
};

/// What a block's reader knows beyond the block itself.
struct ReadContext {
    std::string base_dir = ".";  ///< the directory relative file names (profiles, topology files) resolve against
};

/// The accepted values of a number: [min, max], or (min, max] when min_exclusive.
struct Range {
    double min = 0.0;
    double max = std::numeric_limits<double>::infinity();
    bool min_exclusive = false;
};

/// How one type of value is read, written and described (the JSON Schema fragment).
template <typename T>
struct Codec;

template <std::unsigned_integral T>
struct Codec<T> {
    static json schema(const Range& r) {
        json s{{"type", "integer"}, {"minimum", static_cast<std::uint64_t>(r.min)}};
        if (std::isfinite(r.max)) s["maximum"] = static_cast<std::uint64_t>(r.max);
        return s;
    }
    static T read(const json& j, const std::string& path, const Range& r) {
        // The bound in integers: the largest T need not survive a round trip through double.
        const std::uint64_t max =
            std::isfinite(r.max) ? static_cast<std::uint64_t>(r.max) : std::numeric_limits<T>::max();
        return static_cast<T>(read_uint(j, path, static_cast<std::uint64_t>(r.min), max));
    }
    static json write(T v) { return v; }
};

// Signed counts (model shapes) are read as non-negative integers within the range.
template <std::signed_integral T>
struct Codec<T> {
    static json schema(const Range& r) { return Codec<std::uint64_t>::schema(r); }
    static T read(const json& j, const std::string& path, const Range& r) {
        Range bounded = r;
        if (!std::isfinite(bounded.max)) bounded.max = static_cast<double>(std::numeric_limits<T>::max());
        return static_cast<T>(Codec<std::uint64_t>::read(j, path, bounded));
    }
    static json write(T v) { return v; }
};

template <>
struct Codec<double> {
    static json schema(const Range& r) {
        json s{{"type", "number"}, {r.min_exclusive ? "exclusiveMinimum" : "minimum", r.min}};
        if (std::isfinite(r.max)) s["maximum"] = r.max;
        return s;
    }
    static double read(const json& j, const std::string& path, const Range& r) {
        const double max = std::isfinite(r.max) ? r.max : std::numeric_limits<double>::max();
        return r.min_exclusive ? read_number_above(j, path, r.min, max) : read_number(j, path, r.min, max);
    }
    static json write(double v) { return v; }
};

template <>
struct Codec<bool> {
    static json schema(const Range&) { return {{"type", "boolean"}}; }
    static bool read(const json& j, const std::string& path, const Range&) { return read_bool(j, path); }
    static json write(bool v) { return v; }
};

template <>
struct Codec<std::string> {
    static json schema(const Range&) { return {{"type", "string"}}; }
    static std::string read(const json& j, const std::string& path, const Range&) { return read_string(j, path); }
    static json write(const std::string& v) { return v; }
};

template <NamedEnum E>
struct Codec<E> {
    static json schema(const Range&) { return {{"type", "string"}, {"enum", sim::enum_names<E>()}}; }
    static E read(const json& j, const std::string& path, const Range&) { return read_enum<E>(j, path); }
    static json write(E v) { return std::string(sim::enum_name(v)); }
};

// Quantities with units: a string with its unit ("25MB", "5us", "10Gbps"); a minimum in base units
// (bytes, seconds) is checked after the unit is applied.
template <typename Q, Q (*Read)(const json&, const std::string&), json (*Schema)(std::string), std::string (*Format)(Q),
          double (*Value)(const Q&), const char* Unit>
struct UnitCodec {
    // The description is the unit hint alone (" — "10Gbps" (bits/s) ..."): key() puts the key's own before it.
    static json schema(const Range&) { return Schema(""); }
    static Q read(const json& j, const std::string& path, const Range& r) {
        const Q q = Read(j, path);
        if (r.min > 0.0 && !(Value(q) >= r.min))
            throw ScenarioError(path, fmt::format("expected at least {:g} {}, got {} ({:g} {})", r.min, Unit,
                                                  describe(j), Value(q), Unit));
        return q;
    }
    static json write(const Q& v) { return Format(v); }
};

namespace detail {
inline double bytes_value(const sim::Bytes& b) {
    return b.value();
}
inline double seconds_value(const sim::Time& t) {
    return t.seconds();
}
inline double bps_value(const sim::Bandwidth& b) {
    return b.bits_per_s();
}
inline constexpr char kBytes[] = "bytes";
inline constexpr char kSeconds[] = "s";
inline constexpr char kBitsPerSecond[] = "bit/s";

inline double flops_value(const sim::FlopRate& f) {
    return f.per_s();
}
inline constexpr char kFlops[] = "FLOP/s";
}  // namespace detail

template <>
struct Codec<sim::FlopRate> : UnitCodec<sim::FlopRate, read_flop_rate, flop_rate_schema, sim::format_flop_rate,
                                        detail::flops_value, detail::kFlops> {};
template <>
struct Codec<sim::Bytes>
    : UnitCodec<sim::Bytes, read_bytes, bytes_schema, sim::format_bytes, detail::bytes_value, detail::kBytes> {};
template <>
struct Codec<sim::Time>
    : UnitCodec<sim::Time, read_time, time_schema, sim::format_time, detail::seconds_value, detail::kSeconds> {};
template <>
struct Codec<sim::Bandwidth> : UnitCodec<sim::Bandwidth, read_bandwidth, bandwidth_schema, sim::format_bandwidth,
                                         detail::bps_value, detail::kBitsPerSecond> {};

template <typename T>
struct Codec<std::optional<T>> {
    static json schema(const Range& r) { return Codec<T>::schema(r); }
    static std::optional<T> read(const json& j, const std::string& path, const Range& r) {
        return Codec<T>::read(j, path, r);
    }
    static json write(const std::optional<T>& v) { return v ? Codec<T>::write(*v) : json(nullptr); }
};

template <typename T>
struct Codec<std::vector<T>> {
    static json schema(const Range& r) { return {{"type", "array"}, {"items", Codec<T>::schema(r)}}; }
    static std::vector<T> read(const json& j, const std::string& path, const Range& r) {
        const json& a = read_array(j, path, 0);
        std::vector<T> out;
        for (std::size_t i = 0; i < a.size(); ++i)
            out.push_back(Codec<T>::read(a[i], fmt::format("{}[{}]", path, i), r));
        return out;
    }
    static json write(const std::vector<T>& v) {
        json out = json::array();
        for (const T& x : v) out.push_back(Codec<T>::write(x));
        return out;
    }
};

/// When a key applies, and the refusal where it does not.
template <typename S>
using Rule = std::pair<std::function<bool(const S&)>, std::function<std::string(const S&)>>;

/// One key of a block whose values land in the struct S.
template <typename S>
struct Key {
    std::string name;
    json schema;  ///< JSON Schema of the value, with its description (and default, where one constant)
    bool required = false;
    /// Whether the key applies, given what was read before it in the table (null: always). A key that is
    /// present where it does not apply is refused with `not_applicable`.
    std::function<bool(const S&)> applies;
    std::function<std::string(const S&)> not_applicable;
    /// Required where this holds (after the keys before it are read); `missing` is the message.
    std::function<bool(const S&)> required_if;
    std::function<std::string(const S&)> missing;
    /// Called where the key is absent: a default that depends on keys read before it.
    std::function<void(S&)> absent;
    /// Stores the value read at `path` into the struct.
    std::function<void(S&, const json&, const std::string&, const ReadContext&)> read;
    /// Runs after the value is read (null: nothing): checks it against keys read before it (throwing
    /// ScenarioError at `path`) or sets what follows from it.
    std::function<void(S&, const std::string& path)> then;
    /// The resolved value (null: not echoed). Keys that do not apply are not echoed.
    std::function<json(const S&)> echo;
    /// Whether the echo writes the key where it applies (null: always, when echo gives a value).
    std::function<bool(const S&)> echoed;

    // Declaration helpers: each returns the key, so a table entry reads as one expression.
    Key&& when(std::function<bool(const S&)> pred, std::string message) && {
        applies = std::move(pred);
        not_applicable = [message = std::move(message)](const S&) { return message; };
        return std::move(*this);
    }
    Key&& when(Rule<S> rule) && {
        applies = std::move(rule.first);
        not_applicable = std::move(rule.second);
        return std::move(*this);
    }
    Key&& required_when(std::function<bool(const S&)> pred, std::string message) && {
        required_if = std::move(pred);
        missing = [message = std::move(message)](const S&) { return message; };
        return std::move(*this);
    }
    /// Required where `pred` holds, with a message that depends on what was read before.
    Key&& required_when(std::function<bool(const S&)> pred, std::function<std::string(const S&)> message) && {
        required_if = std::move(pred);
        missing = std::move(message);
        return std::move(*this);
    }
    Key&& when_absent(std::function<void(S&)> f) && {
        absent = std::move(f);
        return std::move(*this);
    }
    Key&& echo_when(std::function<bool(const S&)> pred) && {
        echoed = std::move(pred);
        return std::move(*this);
    }
    Key&& with_default(json value) && {
        schema["default"] = std::move(value);
        return std::move(*this);
    }
    Key&& and_then(std::function<void(S&, const std::string&)> f) && {
        then = std::move(f);
        return std::move(*this);
    }
    Key&& mandatory() && {
        required = true;
        return std::move(*this);
    }
    Key&& no_echo() && {
        echo = [](const S&) { return json(nullptr); };
        return std::move(*this);
    }
    Key&& echo_as(std::function<json(const S&)> f) && {
        echo = std::move(f);
        return std::move(*this);
    }
};

/// A key stored in the member `m` of S, of any type with a Codec, within `range` (numbers; minimum sizes).
template <typename S, typename T>
Key<S> key(std::string name, T S::*m, std::string description, Range range = {}) {
    Key<S> k;
    k.name = std::move(name);
    k.schema = Codec<T>::schema(range);
    k.schema["description"] = std::move(description) + k.schema.value("description", std::string());
    k.read = [m, range](S& s, const json& j, const std::string& path, const ReadContext&) {
        s.*m = Codec<T>::read(j, path, range);
    };
    k.echo = [m](const S& s) { return Codec<T>::write(s.*m); };
    return k;
}

/// The same for a member of a base B of S (the job's own keys, models::JobKeys, read into a JobSpec):
/// key<JobSpec>("workers", &JobSpec::workers, ...).
template <typename S, typename B, typename T>
requires(!std::is_same_v<S, B> && std::is_base_of_v<B, S>) Key<S> key(std::string name, T B::*m,
                                                                      std::string description, Range range = {}) {
    return key<S, T>(std::move(name), static_cast<T S::*>(m), std::move(description), range);
}

/// A string key that must be one of `choices`.
template <typename S>
Key<S> choice(std::string name, std::string S::*m, std::vector<std::string> choices, std::string description) {
    Key<S> k;
    k.name = std::move(name);
    k.schema = enum_schema(choices, std::move(description));
    k.read = [m, choices](S& s, const json& j, const std::string& path, const ReadContext&) {
        s.*m = read_choice(j, path, choices);
    };
    k.echo = [m](const S& s) { return json(s.*m); };
    return k;
}

/// A key with its own schema, reader and echo (objects, unions of a name and an object, maps). `read` takes
/// (S&, value, path) or (S&, value, path, ReadContext); nullptr leaves the value to the block's reader.
template <typename S, typename Read>
Key<S> custom(std::string name, json schema, Read read, std::function<json(const S&)> echo) {
    Key<S> k;
    k.name = std::move(name);
    k.schema = std::move(schema);
    if constexpr (std::is_invocable_v<Read, S&, const json&, const std::string&, const ReadContext&>)
        k.read = std::move(read);
    else if constexpr (!std::is_null_pointer_v<Read>)
        k.read = [read = std::move(read)](S& s, const json& j, const std::string& path, const ReadContext&) {
            read(s, j, path);
        };
    k.echo = std::move(echo);
    return k;
}

/// A key its block's reader reads itself (or that is merged before the block is read); the table declares it
/// and does not echo it.
template <typename S>
Key<S> external(std::string name, json schema) {
    return custom<S>(std::move(name), std::move(schema), nullptr, [](const S&) { return json(nullptr); });
}

/// "description": free text, checked to be a string, not interpreted and not echoed.
template <typename S>
Key<S> free_text(std::string description) {
    return custom<S>(
        "description", str_schema(std::move(description)),
        [](S&, const json& j, const std::string& path) { (void)read_string(j, path); },
        [](const S&) { return json(nullptr); });
}

/// Where a value of an enum member equals one of `values` (a `when` predicate).
template <typename S, NamedEnum E, typename... Es>
std::function<bool(const S&)> is(E S::*m, E value, Es... more) {
    return [m, value, more...](const S& s) { return s.*m == value || ((s.*m == more) || ...); };
}

/// `outer`, and then `pred` (refused with `message` where `outer` holds but `pred` does not).
template <typename S>
Rule<S> also(Rule<S> outer, std::function<bool(const S&)> pred, std::string message) {
    auto first = outer.first;
    auto both = [first, pred](const S& s) { return first(s) && pred(s); };
    auto text = [outer, message](const S& s) { return outer.first(s) ? message : outer.second(s); };
    return {both, text};
}

/// A key that applies where the enum member `m` (spelt `what` in messages, e.g. "kind") is one of `values`:
/// elsewhere it is refused with "applies to kind "ps" only, not "allreduce"".
template <typename S, NamedEnum E>
Rule<S> only(E S::*m, std::string what, std::vector<E> values) {
    auto pred = [m, values](const S& s) { return std::find(values.begin(), values.end(), s.*m) != values.end(); };
    auto message = [m, what = std::move(what), values](const S& s) {
        std::string owners;
        for (E v : values) owners += fmt::format("{}\"{}\"", owners.empty() ? "" : ", ", sim::enum_name(v));
        return fmt::format("applies to {} {} only, not \"{}\"", what, owners, sim::enum_name(s.*m));
    };
    return {pred, message};
}

template <typename S>
std::string description_of(const Key<S>& k) {
    return k.schema.value("description", k.name);
}

/// The keys of one block.
template <typename S>
struct KeyTable {
    std::string id;  ///< its name under the schema's $defs
    std::string description;
    std::vector<Key<S>> keys;
    json one_of = nullptr;

    [[nodiscard]] const Key<S>* find(std::string_view name) const {
        for (const Key<S>& k : keys)
            if (k.name == name) return &k;
        return nullptr;
    }

    /// The JSON Schema of the block (what ObjectReader checks keys against, and `ddlsim schema` prints).
    [[nodiscard]] ObjectSchema schema() const {
        ObjectSchema o{id, description, {}, one_of};
        for (const Key<S>& k : keys) o.fields.push_back({k.name, k.schema, k.required});
        return o;
    }

    /// Reads every key of `r` in table order into `s`: a key that does not apply is refused, a key required
    /// here and missing is reported, the others are read. Keys whose reader is null are left to the caller.
    void read(ObjectReader& r, S& s, const ReadContext& ctx = {}) const {
        for (const Key<S>& k : keys) {
            if (!r.has(k.name)) {
                // Required keys the object's schema cannot require (the job keys at the root, where "jobs"
                // is the alternative) are reported here, in table order.
                if (k.required) throw ScenarioError(r.path(k.name), "required key is missing: " + description_of(k));
                if (k.absent) k.absent(s);
                if (k.required_if && k.required_if(s)) throw ScenarioError(r.path(k.name), k.missing(s));
                continue;
            }
            if (k.applies && !k.applies(s)) r.forbid(k.name, k.not_applicable(s));
            if (k.read) k.read(s, r.at(k.name), r.path(k.name), ctx);
            if (k.then) k.then(s, r.path(k.name));
        }
    }

    /// The resolved block: every key that applies to `s` at its value.
    [[nodiscard]] json echo(const S& s) const {
        json out = json::object();
        for (const Key<S>& k : keys) {
            if (!k.echo || (k.applies && !k.applies(s)) || (k.echoed && !k.echoed(s))) continue;
            json v = k.echo(s);
            if (!v.is_null()) out[k.name] = std::move(v);
        }
        return out;
    }
};

}  // namespace ddlsim::scenario::keys
