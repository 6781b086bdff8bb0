// Gossip (D-PSGD, Lian et al., NeurIPS 2017) graphs, random matchings and mixing weights.
// Idle star with one host per worker: bandwidth B, per-link latency L, route latency 2L;
// a worker of out-degree d (and in-degree d) has d flows on its uplink and d on its
// downlink, each at B/d, so every exchange ends at T = 2L + dS/B.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "tests/support/collective_harness.hpp"
#include "topologies/gossip.hpp"

using namespace ddlsim;
using topo::GossipGraph;

namespace {

constexpr double kB = 1.25e9;  // 10 Gb/s
constexpr double kL = 5e-6;
constexpr double kS = 4e6;

topo::ArchitectureSpec gossip_spec(GossipGraph g) {
    topo::ArchitectureSpec spec;
    spec.kind = topo::ArchKind::gossip;
    spec.graph = g;
    return spec;
}

std::uint32_t floor_log2(std::uint32_t x) {
    std::uint32_t l = 0;
    while (x >>= 1) ++l;
    return l;
}

// Checks every worker of an idle-star round finished at 2L + dS/B and the wire carried n·d·S.
void check_regular_round(GossipGraph g, std::uint32_t n, std::size_t d) {
    CAPTURE(n);
    CAPTURE(d);
    const auto c = topo::make_gossip(gossip_spec(g), testing::context(n, kS));
    const auto r = testing::run_on_star(*c, kB, kL);
    const double expected = 2 * kL + static_cast<double>(d) * kS / kB;
    for (double t : r.done) CHECK(t == ddlsim::testing::approx(expected).epsilon(1e-9));
    CHECK(r.analytic == ddlsim::testing::approx(expected).epsilon(1e-9));
    CHECK(r.wire_bytes == ddlsim::testing::approx(static_cast<double>(n * d) * kS));
    CHECK(r.transfers == n * d);
}

}  // namespace

TEST_CASE("gossip torus shape: X the largest divisor of n not above sqrt(n), Y = n/X") {
    using P = std::pair<std::uint32_t, std::uint32_t>;
    CHECK(topo::gossip_torus_shape(16) == P{4, 4});
    CHECK(topo::gossip_torus_shape(12) == P{3, 4});
    CHECK(topo::gossip_torus_shape(8) == P{2, 4});
    CHECK(topo::gossip_torus_shape(6) == P{2, 3});
    CHECK(topo::gossip_torus_shape(7) == P{1, 7});
    CHECK(topo::gossip_torus_shape(1) == P{1, 1});
}

TEST_CASE("gossip torus neighbours: ±1 per dimension, deduplicated for sizes <= 2") {
    // 3×4 grid, worker 5 at row 1, column 1: rows 0 and 2 (workers 1, 9), columns 0 and 2 (4, 6).
    auto nb = topo::gossip_neighbours(GossipGraph::torus, 12);
    std::sort(nb[5].begin(), nb[5].end());
    CHECK(nb[5] == std::vector<std::uint32_t>{1, 4, 6, 9});
    // 2×4 grid: one row neighbour (size 2), two column neighbours: worker 0 -> 4; 1, 3.
    nb = topo::gossip_neighbours(GossipGraph::torus, 8);
    std::sort(nb[0].begin(), nb[0].end());
    CHECK(nb[0] == std::vector<std::uint32_t>{1, 3, 4});
    // 2×2: one neighbour per dimension.
    nb = topo::gossip_neighbours(GossipGraph::torus, 4);
    std::sort(nb[3].begin(), nb[3].end());
    CHECK(nb[3] == std::vector<std::uint32_t>{1, 2});
    // Undirected: j in N(i) iff i in N(j).
    for (std::uint32_t n : {4u, 6u, 7u, 8u, 9u, 12u, 16u}) {
        nb = topo::gossip_neighbours(GossipGraph::torus, n);
        for (std::uint32_t i = 0; i < n; ++i)
            for (std::uint32_t j : nb[i]) CHECK(std::count(nb[j].begin(), nb[j].end(), i) == 1);
    }
}

TEST_CASE("gossip exponential graph: directed, out-neighbours i + 2^k for 2^k <= n-1") {
    auto nb = topo::gossip_neighbours(GossipGraph::exponential, 8);
    CHECK(nb[0] == std::vector<std::uint32_t>{1, 2, 4});
    CHECK(nb[6] == std::vector<std::uint32_t>{7, 0, 2});
    nb = topo::gossip_neighbours(GossipGraph::exponential, 9);
    CHECK(nb[0] == std::vector<std::uint32_t>{1, 2, 4, 8});
    nb = topo::gossip_neighbours(GossipGraph::exponential, 6);
    CHECK(nb[5] == std::vector<std::uint32_t>{0, 1, 3});
    nb = topo::gossip_neighbours(GossipGraph::exponential, 2);
    CHECK(nb[1] == std::vector<std::uint32_t>{0});
    // Directed: 0 sends to 1 but not to 7 for n = 8 (7 sends to 0).
    nb = topo::gossip_neighbours(GossipGraph::exponential, 8);
    CHECK(std::count(nb[0].begin(), nb[0].end(), 7u) == 0);
}

TEST_CASE("closed form: gossip rounds on an idle star T = 2L + dS/B per graph") {
    SUBCASE("ring: d = 2 (1 for n = 2)") {
        for (std::uint32_t n : {2u, 3u, 4u, 7u, 16u}) check_regular_round(GossipGraph::ring, n, n == 2 ? 1 : 2);
    }
    SUBCASE("torus: d = 4 on 3×3, 4×4, 3×4; 3 on 2×3, 2×4; 2 on 2×2 and 1×7; 1 on 1×2") {
        const std::pair<std::uint32_t, std::size_t> cases[] = {{9, 4}, {16, 4}, {12, 4}, {6, 3},
                                                               {8, 3}, {4, 2},  {7, 2},  {2, 1}};
        for (auto [n, d] : cases) check_regular_round(GossipGraph::torus, n, d);
    }
    SUBCASE("exponential: d = floor(log2(n-1)) + 1 out and in") {
        for (std::uint32_t n : {2u, 3u, 5u, 6u, 8u, 9u, 16u, 17u})
            check_regular_round(GossipGraph::exponential, n, floor_log2(n - 1) + 1);
    }
}

TEST_CASE("gossip random matching: a seeded perfect matching, reproducible, new every round") {
    for (std::uint32_t n : {2u, 5u, 8u, 16u, 17u}) {
        CAPTURE(n);
        const auto m = topo::gossip_matching(n, 42, 3);
        std::uint32_t idle = 0;
        for (std::uint32_t i = 0; i < n; ++i) {
            CHECK(m[m[i]] == i);
            idle += m[i] == i ? 1 : 0;
        }
        CHECK(idle == n % 2);
        CHECK(topo::gossip_matching(n, 42, 3) == m);  // same seed and round: same matching
    }
    // Different rounds (and seeds) give different matchings: 20 rounds of 16 workers are all distinct
    // (two equal ones would have probability about 190/15!! ≈ 1e-7 for a fair shuffle).
    std::set<std::vector<std::uint32_t>> seen;
    for (std::uint32_t round = 0; round < 20; ++round) seen.insert(topo::gossip_matching(16, 7, round));
    CHECK(seen.size() == 20);
    CHECK(topo::gossip_matching(16, 7, 0) != topo::gossip_matching(16, 8, 0));
    // Every worker meets many partners over rounds (the shuffle is not stuck).
    std::set<std::uint32_t> partners;
    for (std::uint32_t round = 0; round < 40; ++round) partners.insert(topo::gossip_matching(16, 7, round)[0]);
    CHECK(partners.size() >= 10);
}

TEST_CASE("closed form: gossip random matching on an idle star T = 2L + S/B, odd n leaves one idle") {
    const std::uint64_t seed = 11;
    for (std::uint32_t n : {2u, 6u, 7u, 16u, 17u})
        for (std::uint32_t round : {0u, 1u, 5u}) {
            CAPTURE(n);
            CAPTURE(round);
            auto ctx = testing::context(n, kS);
            ctx.seed = seed;
            const auto c = topo::make_gossip(gossip_spec(GossipGraph::random_matching), ctx);
            const auto r = testing::run_on_star(*c, kB, kL, round);
            const auto m = topo::gossip_matching(n, seed, round);
            for (std::uint32_t i = 0; i < n; ++i) {
                // A matched worker sends S to its partner and receives S from it: one flow each way.
                const double expected = m[i] == i ? 0.0 : 2 * kL + kS / kB;
                CHECK(r.done[i] == ddlsim::testing::approx(expected).epsilon(1e-9));
            }
            CHECK(r.transfers == n - n % 2);
            CHECK(r.makespan == ddlsim::testing::approx(2 * kL + kS / kB).epsilon(1e-9));
            CHECK(r.analytic == ddlsim::testing::approx(2 * kL + kS / kB).epsilon(1e-9));
            // The same every round for even n: n·S (odd: (n-1)·S).
            CHECK(r.wire_bytes == ddlsim::testing::approx((n - n % 2) * kS));
        }
}

TEST_CASE("gossip random matching plans follow the round's matching") {
    // The round's transfers are exactly the matched pairs: run round r and compare which
    // worker idles (n odd) with gossip_matching(n, seed, r).
    const std::uint32_t n = 9;
    auto ctx = testing::context(n, kS);
    ctx.seed = 2024;
    const auto c = topo::make_gossip(gossip_spec(GossipGraph::random_matching), ctx);
    std::set<std::uint32_t> idle_workers;
    for (std::uint32_t round = 0; round < 12; ++round) {
        const auto r = testing::run_on_star(*c, kB, kL, round);
        const auto m = topo::gossip_matching(n, ctx.seed, round);
        for (std::uint32_t i = 0; i < n; ++i) {
            CHECK((r.done[i] == 0.0) == (m[i] == i));
            if (r.done[i] == 0.0) idle_workers.insert(i);
        }
    }
    CHECK(idle_workers.size() >= 3);  // the idle worker changes between rounds
}

TEST_CASE("gossip mixing weights: rows sum to 1, doubly stochastic, supported on the graph's edges") {
    for (GossipGraph g :
         {GossipGraph::ring, GossipGraph::torus, GossipGraph::exponential, GossipGraph::random_matching})
        for (std::uint32_t n : {1u, 2u, 3u, 5u, 8u, 12u, 16u}) {
            CAPTURE(static_cast<int>(g));
            CAPTURE(n);
            const auto rows = topo::gossip_mixing_weights(g, n, 5, 2);
            const auto out = topo::gossip_neighbours(g, n, 5, 2);
            REQUIRE(rows.size() == n);
            std::vector<std::vector<double>> w(n, std::vector<double>(n, 0.0));
            for (std::uint32_t i = 0; i < n; ++i) {
                double sum = 0.0;
                for (const auto& e : rows[i]) {
                    CHECK(e.weight > 0.0);
                    w[i][e.peer] = e.weight;
                    sum += e.weight;
                }
                CHECK(sum == ddlsim::testing::approx(1.0).epsilon(1e-12));
                CHECK(w[i][i] > 0.0);
            }
            for (std::uint32_t i = 0; i < n; ++i) {
                double col = 0.0;
                for (std::uint32_t j = 0; j < n; ++j) {
                    col += w[j][i];
                    // Row i weighs j != i exactly when j sends to i (an edge of the graph).
                    const bool edge = std::count(out[j].begin(), out[j].end(), i) == 1;
                    if (j != i) CHECK((w[i][j] > 0.0) == edge);
                    if (g != GossipGraph::exponential) CHECK(w[i][j] == ddlsim::testing::approx(w[j][i]));  // symmetric
                }
                CHECK(col == ddlsim::testing::approx(1.0).epsilon(1e-12));  // doubly stochastic
            }
            // Regular graphs: uniform 1/(d+1); a matched pair 1/2; an idle worker keeps 1.
            for (std::uint32_t i = 0; i < n; ++i) {
                const double d = static_cast<double>(rows[i].size() - 1);
                for (const auto& e : rows[i]) CHECK(e.weight == ddlsim::testing::approx(1.0 / (d + 1)));
                if (g == GossipGraph::random_matching) CHECK(rows[i].size() == (out[i].empty() ? 1u : 2u));
            }
        }
}

TEST_CASE("gossip mixing weights: Metropolis-Hastings on an irregular graph") {
    // Path 0 - 1 - 2 (degrees 1, 2, 1): w01 = w12 = 1/(1 + 2) = 1/3, w00 = w22 = 2/3, w11 = 1/3.
    // Star 0 - {1, 2, 3}: w0j = 1/4, w00 = 1/4, wjj = 3/4.
    const auto path = topo::metropolis_weights({{1}, {0, 2}, {1}});
    CHECK(path[0][0].weight == ddlsim::testing::approx(2.0 / 3));
    CHECK(path[0][1].weight == ddlsim::testing::approx(1.0 / 3));
    CHECK(path[1][0].weight == ddlsim::testing::approx(1.0 / 3));
    CHECK(path[1][1].weight == ddlsim::testing::approx(1.0 / 3));
    CHECK(path[1][2].weight == ddlsim::testing::approx(1.0 / 3));
    CHECK(path[2][0].peer == 1);
    CHECK(path[2][0].weight == ddlsim::testing::approx(1.0 / 3));
    CHECK(path[2][1].weight == ddlsim::testing::approx(2.0 / 3));
    const auto star = topo::metropolis_weights({{1, 2, 3}, {0}, {0}, {0}});
    CHECK(star[0].size() == 4);
    for (const auto& e : star[0]) CHECK(e.weight == ddlsim::testing::approx(0.25));
    CHECK(star[3][0].peer == 0);
    CHECK(star[3][0].weight == ddlsim::testing::approx(0.25));
    CHECK(star[3][1].peer == 3);
    CHECK(star[3][1].weight == ddlsim::testing::approx(0.75));
}
