// Units and the unit-string parser.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <stdexcept>
#include <string>

#include "sim/unit_parse.hpp"
#include "sim/units.hpp"

using namespace ddlsim::sim;

TEST_CASE("units: time is integer picoseconds with exact arithmetic") {
    CHECK(Time::seconds(1.0).ps() == 1'000'000'000'000);
    CHECK(Time::seconds(5e-6).ps() == 5'000'000);
    CHECK((Time::ps(3) + Time::ps(4)).ps() == 7);
    CHECK(Time::ps(1) < Time::ps(2));
    CHECK_THROWS_AS((void)Time::seconds(-1.0), std::out_of_range);
    CHECK_THROWS_AS((void)Time::seconds(1e300), std::out_of_range);
}

TEST_CASE("units: bandwidth strings distinguish bits and bytes") {
    CHECK(parse_bandwidth("10Gbps").bytes_per_s() == ddlsim::testing::approx(1.25e9));
    CHECK(parse_bandwidth("1.25GBps").bytes_per_s() == ddlsim::testing::approx(1.25e9));
    CHECK(parse_bandwidth("100 Mbps").bits_per_s() == ddlsim::testing::approx(1e8));
    CHECK(parse_bandwidth("400Gbps").bytes_per_s() == ddlsim::testing::approx(50e9));
    CHECK(parse_bandwidth("8bps").bytes_per_s() == ddlsim::testing::approx(1.0));
}

TEST_CASE("units: time, size and FLOP-rate strings") {
    CHECK(parse_time("5us").ps() == 5'000'000);
    CHECK(parse_time("2ms").seconds() == ddlsim::testing::approx(2e-3));
    CHECK(parse_time("1.5s").seconds() == ddlsim::testing::approx(1.5));
    CHECK(parse_time("100ns").ps() == 100'000);
    CHECK(parse_time("0s").ps() == 0);
    CHECK(parse_bytes("25MB").value() == 25e6);
    CHECK(parse_bytes("25MiB").value() == 25.0 * 1024 * 1024);
    CHECK(parse_bytes("4KiB").value() == 4096.0);
    CHECK(parse_flop_rate("125TFLOPS").per_s() == ddlsim::testing::approx(125e12));
    CHECK(parse_flop_rate("19.5 TFLOPS").per_s() == ddlsim::testing::approx(19.5e12));
}

namespace {
std::string error_of(auto parse, const char* text) {
    try {
        (void)parse(text);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}
}  // namespace

TEST_CASE("units: bad strings give a message with what was expected and a hint") {
    const std::string gigs = error_of(parse_bandwidth, "10 gigs");
    CHECK(gigs.find("expected a bandwidth") != std::string::npos);
    CHECK(gigs.find("\"10 gigs\"") != std::string::npos);
    CHECK(gigs.find("\"Gbps\" is bits per second, \"GBps\" bytes per second") != std::string::npos);
    CHECK(error_of(parse_bandwidth, "10Gb").find("bits per second") != std::string::npos);
    CHECK_FALSE(error_of(parse_bandwidth, "0Gbps").empty());
    CHECK_FALSE(error_of(parse_bandwidth, "-1Gbps").empty());
    CHECK_FALSE(error_of(parse_bandwidth, "inf Gbps").empty());
    CHECK_FALSE(error_of(parse_bandwidth, "nan Gbps").empty());
    CHECK_FALSE(error_of(parse_bandwidth, "Gbps").empty());
    CHECK_FALSE(error_of(parse_time, "5 parsecs").empty());
    CHECK_FALSE(error_of(parse_time, "1e20s").empty());
    CHECK(error_of(parse_bytes, "25Mb").find("bits are not a size unit") != std::string::npos);
    CHECK_FALSE(error_of(parse_flop_rate, "125 TOPS").empty());
}
