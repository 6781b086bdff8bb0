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

// The largest magnitudes accepted (SI base units): far beyond any real machine, small enough that sums and
// products of them stay finite.
constexpr double kMaxBandwidth = 1e18;  // bytes/s (8 Ebit/s)
constexpr double kMaxBytes = 1e18;
constexpr double kMaxFlopRate = 1e21;

template <std::size_t N>
double lookup(const std::array<Unit, N>& table, Split s, std::string_view text, std::string_view what,
              std::string_view hint) {
    for (const auto& u : table)
        if (u.name == s.unit) return s.number * u.factor;  // may be inf: callers bound the result
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

// `value` written in the first unit of `units` (largest first) that parses back to exactly `value`.
template <std::size_t N>
std::string format_exact(double value, const std::array<Unit, N>& table, std::initializer_list<std::string_view> units,
                         std::string_view fallback) {
    char buf[64];
    // First pass: a whole number of the unit; second: any number >= 1 of it.
    for (const bool whole : {true, false})
        for (std::string_view name : units)
            for (const auto& u : table)
                if (u.name == name) {
                    const double q = value / u.factor;
                    if (q < 1.0 || (whole && q != std::floor(q))) continue;
                    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, q);  // shortest round-trip text
                    double back = 0.0;
                    std::from_chars(buf, end, back);
                    if (ec == std::errc{} && back * u.factor == value) return std::string(buf, end) + std::string(name);
                }
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    (void)ec;
    return std::string(buf, end) + std::string(fallback);
}

}  // namespace

std::string format_bandwidth(Bandwidth b) {
    return format_exact(b.bytes_per_s(), kBandwidthUnits, {"Tbps", "Gbps", "Mbps", "kbps", "GBps", "MBps"}, "Bps");
}

std::string format_time(Time t) {
    constexpr std::array<std::pair<std::int64_t, std::string_view>, 4> units{
        {{1'000'000'000'000, "s"}, {1'000'000'000, "ms"}, {1'000'000, "us"}, {1'000, "ns"}}};
    for (const auto& [ps, name] : units)
        if (t.ps() % ps == 0) return std::to_string(t.ps() / ps) + std::string(name);
    return std::to_string(t.ps()) + "ps";
}

std::string format_bytes(Bytes b) {
    return format_exact(b.value(), kByteUnits, {"GB", "MB", "kB", "GiB", "MiB", "KiB"}, "B");
}

std::string format_flop_rate(FlopRate r) {
    return format_exact(r.per_s(), kFlopUnits, {"PFLOPS", "TFLOPS", "GFLOPS", "MFLOPS"}, "FLOPS");
}

Bandwidth parse_bandwidth(std::string_view text) {
    constexpr std::string_view what = R"(a bandwidth such as "10Gbps" or "1.25GBps")";
    const Split s = split_quantity(text, what);
    const double v = lookup(kBandwidthUnits, s, text, what, R"("Gbps" is bits per second, "GBps" bytes per second)");
    if (v <= 0.0) throw std::invalid_argument("expected a positive bandwidth, got " + quoted(text));
    if (!(v <= kMaxBandwidth))
        throw std::invalid_argument("expected a bandwidth up to 8Ebps (1e18 bytes/s), got " + quoted(text));
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
    const double v = lookup(kByteUnits, s, text, what, R"("B" is bytes; "Mb" bits are not a size unit)");
    if (!(v <= kMaxBytes)) throw std::invalid_argument("expected a size up to 1EB (1e18 bytes), got " + quoted(text));
    return Bytes{v};
}

FlopRate parse_flop_rate(std::string_view text) {
    constexpr std::string_view what = R"(a compute rate such as "125TFLOPS")";
    const Split s = split_quantity(text, what);
    const double v = lookup(kFlopUnits, s, text, what, "units: FLOPS, MFLOPS, GFLOPS, TFLOPS, PFLOPS");
    if (v <= 0.0) throw std::invalid_argument("expected a positive compute rate, got " + quoted(text));
    if (!(v <= kMaxFlopRate))
        throw std::invalid_argument("expected a compute rate up to 1e21 FLOPS, got " + quoted(text));
    return FlopRate::per_s(v);
}

}  // namespace ddlsim::sim
