// The one parser for quantities written as strings: "10Gbps" / "1.25GBps",
// "5us" / "2ms", "25MB" / "25MiB", "125TFLOPS". Plain numbers are SI base units.
// Errors are std::invalid_argument whose message says what was expected.
#pragma once

#include <string>
#include <string_view>

#include "sim/units.hpp"

namespace ddlsim::sim {

/// "10Gbps" (bits/s), "1.25GBps" (bytes/s), also "bps"/"Bps" with k, M, G, T prefixes.
[[nodiscard]] Bandwidth parse_bandwidth(std::string_view text);
/// "5us", "2ms", "1.5s", "100ns", "3ps", "1min".
[[nodiscard]] Time parse_time(std::string_view text);
/// "25MB" (10^6), "25MiB" (2^20), "1GB", "512B", "4KiB".
[[nodiscard]] Bytes parse_bytes(std::string_view text);
/// "125TFLOPS", "19.5 TFLOPS", "900GFLOPS".
[[nodiscard]] FlopRate parse_flop_rate(std::string_view text);

/// The inverse of the parsers: a unit string that parses back to exactly the same value, in the
/// largest unit that keeps it exact ("100Gbps", "5us", "25MB"; "12345.5Bps" when none does).
[[nodiscard]] std::string format_bandwidth(Bandwidth b);
[[nodiscard]] std::string format_time(Time t);
[[nodiscard]] std::string format_bytes(Bytes b);
[[nodiscard]] std::string format_flop_rate(FlopRate r);

}  // namespace ddlsim::sim
