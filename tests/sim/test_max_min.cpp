// The max-min solver against answers derived by hand (progressive filling).
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "sim/max_min.hpp"

using namespace ddlsim::sim;

namespace {
std::vector<double> solve(const std::vector<double>& caps, const std::vector<std::vector<std::uint32_t>>& routes,
                          const std::vector<double>& flow_caps = {}) {
    MaxMinProblem p;
    p.capacity = caps;
    for (std::size_t f = 0; f < routes.size(); ++f)
        p.add_flow(routes[f], f < flow_caps.size() ? flow_caps[f] : std::numeric_limits<double>::infinity());
    MaxMinSolver s;
    std::vector<double> rates;
    s.solve(p, rates);
    return rates;
}
}  // namespace

TEST_CASE("max-min: one link shared by k flows gives C/k each") {
    // Link capacity 12; k flows: each gets 12/k, the link is saturated.
    for (std::uint32_t k : {1u, 2u, 3u, 4u, 12u}) {
        const auto r = solve({12.0}, std::vector<std::vector<std::uint32_t>>(k, {0}));
        for (double x : r) CHECK(x == ddlsim::testing::approx(12.0 / k));
    }
}

TEST_CASE("max-min: two bottlenecks in series") {
    // Flow 0 crosses link 0 (cap 10) then link 1 (cap 4): its rate is the smaller, 4.
    CHECK(solve({10.0, 4.0}, {{0, 1}})[0] == ddlsim::testing::approx(4.0));
    // Add flow 1 on link 0 only. Link 1's share (4) < link 0's (5): flow 0 freezes at 4,
    // link 0 keeps 10 - 4 = 6 for flow 1.
    const auto r = solve({10.0, 4.0}, {{0, 1}, {0}});
    CHECK(r[0] == ddlsim::testing::approx(4.0));
    CHECK(r[1] == ddlsim::testing::approx(6.0));
}

TEST_CASE("max-min: the classic three flows on two links") {
    // Links 0 and 1 of capacity 1; flow 0 crosses both, flow 1 link 0, flow 2 link 1.
    // Both links have share 1/2: every flow gets 1/2.
    auto r = solve({1.0, 1.0}, {{0, 1}, {0}, {1}});
    CHECK(r[0] == ddlsim::testing::approx(0.5));
    CHECK(r[1] == ddlsim::testing::approx(0.5));
    CHECK(r[2] == ddlsim::testing::approx(0.5));
    // With link 1 of capacity 2: link 0's share 1/2 is the smallest, freezing flows 0 and 1
    // at 1/2; link 1 has 2 - 1/2 = 3/2 left for flow 2.
    r = solve({1.0, 2.0}, {{0, 1}, {0}, {1}});
    CHECK(r[0] == ddlsim::testing::approx(0.5));
    CHECK(r[1] == ddlsim::testing::approx(0.5));
    CHECK(r[2] == ddlsim::testing::approx(1.5));
}

TEST_CASE("max-min: a flow limited elsewhere frees capacity for the others") {
    // Link 0 (cap 10) carries flows 0, 1, 2; flow 0 also crosses link 1 (cap 1).
    // Link 1's share 1 < 10/3: flow 0 gets 1; link 0 has 9 left for two flows: 4.5 each.
    const auto r = solve({10.0, 1.0}, {{0, 1}, {0}, {0}});
    CHECK(r[0] == ddlsim::testing::approx(1.0));
    CHECK(r[1] == ddlsim::testing::approx(4.5));
    CHECK(r[2] == ddlsim::testing::approx(4.5));
}

TEST_CASE("max-min: a rate cap acts as a private link") {
    // Link cap 10, two flows, flow 0 capped at 2: flow 0 = 2, flow 1 = 8.
    const auto r = solve({10.0}, {{0}, {0}}, {2.0, std::numeric_limits<double>::infinity()});
    CHECK(r[0] == ddlsim::testing::approx(2.0));
    CHECK(r[1] == ddlsim::testing::approx(8.0));
}

TEST_CASE("max-min: a parking-lot chain") {
    // Links 0,1,2 of cap 1; a long flow crosses all three and one short flow per link.
    // Every link has share 1/2, so every flow gets 1/2.
    const auto r = solve({1.0, 1.0, 1.0}, {{0, 1, 2}, {0}, {1}, {2}});
    for (double x : r) CHECK(x == ddlsim::testing::approx(0.5));
    // Make link 2 cap 3: links 0 and 1 bind at 1/2 (long flow, short 0, short 1); link 2
    // has 3 - 1/2 = 5/2 for its short flow.
    const auto q = solve({1.0, 1.0, 3.0}, {{0, 1, 2}, {0}, {1}, {2}});
    CHECK(q[0] == ddlsim::testing::approx(0.5));
    CHECK(q[3] == ddlsim::testing::approx(2.5));
}

TEST_CASE("max-min: feasibility and bottleneck invariants on a random instance") {
    // Deterministic pseudo-random instance; check every link's load <= capacity and every
    // flow has a saturated link on its route where it has the largest rate.
    std::uint64_t x = 12345;
    auto next = [&] { return x = x * 6364136223846793005ULL + 1442695040888963407ULL, (x >> 33); };
    const std::size_t L = 20, F = 60;
    std::vector<double> caps(L);
    for (auto& c : caps) c = 1.0 + static_cast<double>(next() % 100);
    std::vector<std::vector<std::uint32_t>> routes(F);
    for (auto& r : routes) {
        const std::size_t len = 1 + next() % 4;
        while (r.size() < len) {
            const auto l = static_cast<std::uint32_t>(next() % L);
            if (std::find(r.begin(), r.end(), l) == r.end()) r.push_back(l);
        }
    }
    const auto rates = solve(caps, routes);
    std::vector<double> load(L, 0.0);
    for (std::size_t f = 0; f < F; ++f)
        for (auto l : routes[f]) load[l] += rates[f];
    for (std::size_t l = 0; l < L; ++l) CHECK(load[l] <= caps[l] * (1 + 1e-9));
    for (std::size_t f = 0; f < F; ++f) {
        bool has_bottleneck = false;
        for (auto l : routes[f]) {
            if (load[l] < caps[l] * (1 - 1e-9)) continue;
            double biggest = 0.0;
            for (std::size_t g = 0; g < F; ++g)
                if (std::find(routes[g].begin(), routes[g].end(), l) != routes[g].end())
                    biggest = std::max(biggest, rates[g]);
            if (rates[f] >= biggest * (1 - 1e-9)) has_bottleneck = true;
        }
        CHECK(has_bottleneck);
    }
}

TEST_CASE("max-min: a weighted crossing counts as that many flows at the flow's rate") {
    // One link of 300 B/s: flow 0 crosses it with weight 3 (three flows of a class), flow 1 once: four equal
    // shares of 75 B/s; flow 1 capped at 30 leaves 270 / 3 = 90 for flow 0.
    MaxMinProblem p;
    p.capacity = {300.0};
    const std::uint32_t link = 0;
    const double three = 3.0;
    p.add_flow({&link, 1}, std::numeric_limits<double>::infinity(), {&three, 1});
    p.add_flow({&link, 1});
    MaxMinSolver s;
    std::vector<double> r;
    s.solve(p, r);
    CHECK(r[0] == ddlsim::testing::approx(75.0));
    CHECK(r[1] == ddlsim::testing::approx(75.0));
    p.cap[1] = 30.0;
    s.solve(p, r);
    CHECK(r[0] == ddlsim::testing::approx(90.0));
    CHECK(r[1] == ddlsim::testing::approx(30.0));
}
