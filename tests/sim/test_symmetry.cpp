// Flow classes (sim/symmetry.hpp): the quotient's routes and weights on hand-built networks, and the weighted
// solve against every transfer simulated, to hand-derived times.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/network.hpp"
#include "sim/symmetry.hpp"

using namespace ddlsim::sim;

namespace {

// A star of n hosts: host i's uplink is link 2i, its downlink 2i + 1; optionally every route also crosses one
// shared "core" link (index 2n), of capacity `core` bytes/s.
struct Star {
    Engine engine;
    Network net{engine};
    std::uint32_t n;
    std::vector<Route> routes;  // per (a, b): a * n + b

    Star(std::uint32_t hosts, double up, double core = 0.0) : n(hosts) {
        for (std::uint32_t i = 0; i < n; ++i) {
            net.add_link({Bandwidth::bytes_per_s(up), Time::seconds(1e-3)});
            net.add_link({Bandwidth::bytes_per_s(up), Time::seconds(1e-3)});
        }
        if (core > 0.0) net.add_link({Bandwidth::bytes_per_s(core), Time::seconds(2e-3)});
        routes.resize(static_cast<std::size_t>(n) * n);
        for (std::uint32_t a = 0; a < n; ++a)
            for (std::uint32_t b = 0; b < n; ++b) {
                if (a == b) continue;
                Route& r = routes[a * n + b];
                r.push_back(2 * a);
                if (core > 0.0) r.push_back(2 * n);
                r.push_back(2 * b + 1);
            }
    }
    RouteLookup lookup() {
        return [this](std::uint32_t a, std::uint32_t b) -> const Route& { return routes[a * n + b]; };
    }
};

}  // namespace

TEST_CASE("flow classes: a ring's transfers on a star map onto the first period's links") {
    Star star(8, 100.0);
    ShiftQuotient q(star.net, 8, 2, star.lookup());
    CHECK(q.multiplicity() == 4);
    // Class 1 sends to 2 (in the next period): uplink of 1, downlink of 2, whose cycle {5, 9, 13, 1} has 1 smallest.
    const Route& r = q.route(1, 2);
    CHECK(r == Route{2, 1});
    CHECK(q.representative(2 + 4) == 2);  // host 3's uplink stands with host 1's
    CHECK(q.representative(13) == 1);
    CHECK(q.representative(0) == 0);  // no class crossed it yet
    CHECK(&q.route(1, 2) == &r);      // cached at a stable address
}

TEST_CASE("flow classes: a link every member crosses carries the representative with weight m, latency once") {
    Star star(6, 100.0, 300.0);
    ShiftQuotient q(star.net, 6, 2, star.lookup());
    const Route& r = q.route(0, 1);
    // uplink 0, the core link (index 12) with weight 3 (a cycle of length 1: the shift fixes it), downlink 1.
    CHECK(r == Route{0, 12, Network::kWeight + 3, 3});
    CHECK(star.net.latency(r) == Time::seconds(4e-3));
}

TEST_CASE("flow classes: the weighted solve gives every member the rate of the full solve") {
    // Six hosts, transfers i -> i+1 (mod 6) of 600 B through a 300 B/s core; uplinks 100 B/s. Every transfer gets
    // min(100, 300 / 6) = 50 B/s: done at 4 ms latency + 12 s. Simulated in full and per class (P = 2, m = 3).
    double full = 0.0, classes = 0.0;
    {
        Star star(6, 100.0, 300.0);
        for (std::uint32_t i = 0; i < 6; ++i)
            star.net.start(star.routes[i * 6 + (i + 1) % 6], Bytes{600.0},
                           [&] { full = std::max(full, star.engine.now().seconds()); });
        star.engine.run();
    }
    {
        Star star(6, 100.0, 300.0);
        ShiftQuotient q(star.net, 6, 2, star.lookup());
        for (std::uint32_t c = 0; c < 2; ++c)
            star.net.start(q.route(c, c + 1), Bytes{600.0},
                           [&] { classes = std::max(classes, star.engine.now().seconds()); });
        star.engine.run();
        CHECK(star.net.stats(12).bytes == 6 * 600.0);  // the core carried all six members
    }
    CHECK(full == ddlsim::testing::approx(12.004).epsilon(1e-12));
    CHECK(classes == full);
}

TEST_CASE("flow classes: routes that the shift does not map onto each other break the symmetry") {
    Star star(8, 100.0);
    // Host 4's route to 5 ends on host 6's downlink (13): consistent for the orbit of 0 -> 1 (3 -> 7 -> 13 -> 15),
    // but the orbit of 1 -> 2 sends 13 to 1: one link, two images.
    star.routes[4 * 8 + 5] = Route{8, 13};
    ShiftQuotient q(star.net, 8, 2, star.lookup());
    CHECK_NOTHROW((void)q.route(0, 1));
    CHECK_THROWS_AS((void)q.route(1, 2), SymmetryBroken);
    // Different lengths within one orbit.
    Star other(8, 100.0);
    other.routes[2 * 8 + 3] = Route{4};
    ShiftQuotient q2(other.net, 8, 2, other.lookup());
    CHECK_THROWS_AS((void)q2.route(0, 1), SymmetryBroken);
    // Links of one cycle with different capacities.
    Star fast(4, 100.0);
    fast.net.add_link({Bandwidth::bytes_per_s(200.0), Time::seconds(1e-3)});  // link 8: a faster uplink for host 2
    fast.routes[2 * 4 + 3] = Route{8, 7};
    ShiftQuotient q3(fast.net, 4, 2, fast.lookup());
    CHECK_THROWS_AS((void)q3.route(0, 1), SymmetryBroken);
}

TEST_CASE("flow classes: a class round opens when all its members have, and reports each of them") {
    Engine e;
    std::vector<std::uint32_t> done;
    ClassRound round(e, 6, 2, [&](std::uint32_t w) { done.push_back(w); });
    struct Inner : Round {
        std::vector<std::uint32_t> opened;
        void open(std::uint32_t c) override { opened.push_back(c); }
    };
    auto inner = std::make_unique<Inner>();
    Inner* in = inner.get();
    round.set_inner(std::move(inner));
    for (std::uint32_t w : {0U, 2U, 1U, 3U, 5U}) round.open(w);
    CHECK(in->opened == std::vector<std::uint32_t>{1});  // class 1 = {1, 3, 5} complete, class 0 lacks 4
    round.open(4);
    CHECK(in->opened == std::vector<std::uint32_t>{1, 0});
    round.class_done(1);
    CHECK(done == std::vector<std::uint32_t>{1, 3, 5});
    // A member joining later than its class's first breaks the symmetry.
    ClassRound late(e, 4, 2, [](std::uint32_t) {});
    late.set_inner(std::make_unique<Inner>());
    late.open(0);
    e.after(Time::seconds(1.0), [&] { late.open(2); });
    CHECK_THROWS_AS(e.run(), SymmetryBroken);
}
