// Names of plain enums, held beside each enum in one table, so that nothing matches names to values by
// position. A header that declares an enum E declares its table in E's namespace:
//
//     enum class Colour { red, green };
//     inline constexpr sim::EnumEntry<Colour> k_colours[]{{Colour::red, "red", "the colour of fire"},
//                                                         {Colour::green, "green", "the colour of grass"}};
//     constexpr std::span<const sim::EnumEntry<Colour>> enum_entries(Colour) { return k_colours; }
//
// and every user reads it through enum_name(), enum_from_name() and enum_names() (found by argument-dependent
// lookup), in the table's order. Tables may list a subset of the values (a value absent from its table has no
// name and enum_name() throws std::logic_error); tests check that names are unique and round-trip.
#pragma once

#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ddlsim::sim {

/// One value of a plain enum: its name as files spell it and a one-line description.
template <typename E>
struct EnumEntry {
    E value;
    std::string_view name;
    std::string_view description;
};

/// The table of E, in declaration order of its entries.
template <typename E>
[[nodiscard]] constexpr std::span<const EnumEntry<E>> enum_table() {
    return enum_entries(E{});
}

/// The name of a value; throws std::logic_error for a value missing from its table (a programming error).
template <typename E>
[[nodiscard]] constexpr std::string_view enum_name(E value) {
    for (const EnumEntry<E>& e : enum_table<E>())
        if (e.value == value) return e.name;
    throw std::logic_error("enum value without a name in its table");
}

/// The description of a value (empty for a value missing from its table).
template <typename E>
[[nodiscard]] constexpr std::string_view enum_description(E value) {
    for (const EnumEntry<E>& e : enum_table<E>())
        if (e.value == value) return e.description;
    return {};
}

/// The value of that name, or nullopt.
template <typename E>
[[nodiscard]] constexpr std::optional<E> enum_from_name(std::string_view name) {
    for (const EnumEntry<E>& e : enum_table<E>())
        if (e.name == name) return e.value;
    return std::nullopt;
}

/// The value of a name already checked against enum_names(); throws std::logic_error otherwise.
template <typename E>
[[nodiscard]] constexpr E enum_value(std::string_view name) {
    if (auto v = enum_from_name<E>(name)) return *v;
    throw std::logic_error("enum name not in its table: " + std::string(name));
}

/// Every name, in table order.
template <typename E>
[[nodiscard]] std::vector<std::string> enum_names() {
    std::vector<std::string> out;
    for (const EnumEntry<E>& e : enum_table<E>()) out.emplace_back(e.name);
    return out;
}

/// "name: description; name: description" over the table (entries without a description give their name alone).
template <typename E>
[[nodiscard]] std::string enum_descriptions() {
    std::string out;
    for (const EnumEntry<E>& e : enum_table<E>()) {
        if (!out.empty()) out += "; ";
        out += e.name;
        if (!e.description.empty()) {
            out += ": ";
            out += e.description;
        }
    }
    return out;
}

}  // namespace ddlsim::sim
