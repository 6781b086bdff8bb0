// sim::Trace's compact mode: the first spans of a track kept as they are, later back-to-back spans of one
// category merged into one span covering them all, with their count; nothing merged across tracks or
// categories, or over a gap wider than the merge gap.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include "sim/trace.hpp"

using ddlsim::sim::Time;
using ddlsim::sim::Trace;
using nlohmann::json;

namespace {

json spans(const Trace& t) {
    json out = json::array();
    const json all = json::parse(t.json());
    for (const auto& e : all["traceEvents"])
        if (e["ph"] == "X") out.push_back(e);
    return out;
}

Time us(double v) {
    return Time::seconds(v * 1e-6);
}

}  // namespace

TEST_CASE("trace: without compaction every span is kept") {
    Trace t;
    for (int i = 0; i < 10; ++i) t.span(1, 0, "layer", "forward", us(i), us(i + 1));
    CHECK(spans(t).size() == 10);
    CHECK_FALSE(json::parse(t.json()).contains("otherData"));
}

TEST_CASE("trace: compaction keeps the first spans and merges later back-to-back spans of one category") {
    Trace t;
    t.set_compaction(3, us(5));
    // Track (1, 0): 10 contiguous forward spans of 1 us, then a backward span, then forward after a long gap.
    for (int i = 0; i < 10; ++i) t.span(1, 0, "layer " + std::to_string(i), "forward", us(i), us(i + 1));
    t.span(1, 0, "bwd", "backward", us(10), us(12));
    t.span(1, 0, "late", "forward", us(100), us(101));
    // Another track: its own budget of detailed spans.
    t.span(1, 1, "other", "forward", us(0), us(1));
    const json s = spans(t);
    // 3 detailed + 1 merged (spans 4..10) + backward + the late forward (gap 99 us > 5 us) + the other track.
    REQUIRE(s.size() == 7);
    CHECK(s[0]["name"] == "layer 0");
    CHECK(s[2]["name"] == "layer 2");
    CHECK(s[3]["name"] == "7 spans of forward");
    CHECK(s[3]["ts"].get<double>() == ddlsim::testing::approx(3.0));
    CHECK(s[3]["dur"].get<double>() == ddlsim::testing::approx(7.0));  // [3, 10) us: the union of the merged spans
    CHECK(s[4]["cat"] == "backward");
    CHECK(s[5]["name"] == "late");
    CHECK(s[6]["name"] == "other");
    const json other = json::parse(t.json())["otherData"]["compacted"];
    CHECK(other["detailed_spans_per_track"] == 3);
    CHECK(other["merge_gap_us"].get<double>() == ddlsim::testing::approx(5.0));
}

TEST_CASE("trace: overlapping spans on a track (concurrent transfers) merge into their union") {
    Trace t;
    t.set_compaction(1, us(0));
    t.span(7, 0, "a", "transfer", us(0), us(1));
    t.span(7, 0, "b", "transfer", us(2), us(6));
    t.span(7, 0, "c", "transfer", us(1.5), us(4));  // finished after b started, began before it
    t.span(7, 0, "d", "transfer", us(6), us(8));    // back to back with the aggregate
    const json s = spans(t);
    REQUIRE(s.size() == 2);
    CHECK(s[1]["name"] == "3 spans of transfer");
    CHECK(s[1]["ts"].get<double>() == ddlsim::testing::approx(1.5));
    CHECK(s[1]["dur"].get<double>() == ddlsim::testing::approx(6.5));
}
