// Unit-string parsing. Each parser splits "<number><unit>" (spaces between them
// allowed), looks the unit up in a small table and reports a hint on mismatch.
#include "sim/unit_parse.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace ddlsim::sim {
namespace {

struct Unit {
    std::string_view name;
    double factor;
};

struct Split {
    double number;
    std::string_view unit;
};

std::string quoted(std::string_view s) {
    return "\"" + std::string(s) + "\"";
}

// Splits leading number and trailing unit; throws with `what` on failure.
Split split_quantity(std::string_view text, std::string_view what) {
    std::size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const char* first = text.data() + i;
    const char* last = text.data() + text.size();
    double value = 0.0;
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec != std::errc{} || ptr == first)
        throw std::invalid_argument("expected " + std::string(what) + ", got " + quoted(text));
    std::string_view unit(ptr, static_cast<std::size_t>(last - ptr));
    while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.remove_prefix(1);
    while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back()))) unit.remove_suffix(1);
    if (!std::isfinite(value) || value < 0.0)
        throw std::invalid_argument("expected " + std::string(what) + " (finite, non-negative), got " + quoted(text));
    return {value, unit};
}

template <std::size_t N>
double lookup(const std::array<Unit, N>& table, Split s, std::string_view text, std::string_view what,
              std::string_view hint) {
    for (const auto& u : table)
        if (u.name == s.unit) return s.number * u.factor;
    std::string msg = "expected " + std::string(what) + ", got " + quoted(text);
    if (!hint.empty()) msg += " (" + std::string(hint) + ")";
    throw std::invalid_argument(msg);
}

constexpr std::array<Unit, 10> kBandwidthUnits{{{"bps", 1.0 / 8},
                                                {"kbps", 1e3 / 8},
                                                {"Mbps", 1e6 / 8},
                                                {"Gbps", 1e9 / 8},
                                                {"Tbps", 1e12 / 8},
                                                {"Bps", 1.0},
                                                {"kBps", 1e3},
                                                {"MBps", 1e6},
                                                {"GBps", 1e9},
                                                {"TBps", 1e12}}};

constexpr std::array<Unit, 7> kTimeUnits{
    {{"ps", 1e-12}, {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}, {"min", 60.0}, {"h", 3600.0}}};

constexpr std::array<Unit, 9> kByteUnits{{{"B", 1.0},
                                          {"kB", 1e3},
                                          {"KB", 1e3},
                                          {"MB", 1e6},
                                          {"GB", 1e9},
                                          {"TB", 1e12},
                                          {"KiB", 1024.0},
                                          {"MiB", 1048576.0},
                                          {"GiB", 1073741824.0}}};

constexpr std::array<Unit, 5> kFlopUnits{
    {{"FLOPS", 1.0}, {"MFLOPS", 1e6}, {"GFLOPS", 1e9}, {"TFLOPS", 1e12}, {"PFLOPS", 1e15}}};

}  // namespace

Bandwidth parse_bandwidth(std::string_view text) {
    constexpr std::string_view what = R"(a bandwidth such as "10Gbps" or "1.25GBps")";
    const Split s = split_quantity(text, what);
    const double v = lookup(kBandwidthUnits, s, text, what, R"("Gbps" is bits per second, "GBps" bytes per second)");
    if (v <= 0.0) throw std::invalid_argument("expected a positive bandwidth, got " + quoted(text));
    return Bandwidth::bytes_per_s(v);
}

Time parse_time(std::string_view text) {
    constexpr std::string_view what = R"(a time such as "5us", "2ms" or "1.5s")";
    const Split s = split_quantity(text, what);
    const double v = lookup(kTimeUnits, s, text, what, "units: ps, ns, us, ms, s, min, h");
    try {
        return Time::seconds(v);
    } catch (const std::out_of_range&) {
        throw std::invalid_argument("expected a time below 9e6 s, got " + quoted(text));
    }
}

Bytes parse_bytes(std::string_view text) {
    constexpr std::string_view what = R"(a size such as "25MB" (10^6 bytes) or "25MiB" (2^20 bytes))";
    const Split s = split_quantity(text, what);
    return Bytes{lookup(kByteUnits, s, text, what, R"("B" is bytes; "Mb" bits are not a size unit)")};
}

FlopRate parse_flop_rate(std::string_view text) {
    constexpr std::string_view what = R"(a compute rate such as "125TFLOPS")";
    const Split s = split_quantity(text, what);
    const double v = lookup(kFlopUnits, s, text, what, "units: FLOPS, MFLOPS, GFLOPS, TFLOPS, PFLOPS");
    if (v <= 0.0) throw std::invalid_argument("expected a positive compute rate, got " + quoted(text));
    return FlopRate::per_s(v);
}

}  // namespace ddlsim::sim
