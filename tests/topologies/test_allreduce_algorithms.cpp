// All-reduce algorithms and primitives (topologies/allreduce_*): closed forms on an idle star (and a
// two-tier fabric for hierarchical), bytes on the wire, the information-flow invariant (every worker's
// result depends on every worker's data) and the bandwidth lower bound 2(n-1)/n S/B.
//
// Star: one host per worker, links of bandwidth B and latency L, host-to-host route alpha = 2L.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

#include "tests/support/collective_harness.hpp"
#include "topologies/allreduce_algorithms.hpp"

using namespace ddlsim;

namespace {

constexpr double kB = 1.25e9;  // 10 Gbps in bytes/s
constexpr double kL = 5e-6;    // per-link latency, s
constexpr double kAlpha = 2 * kL;

testing::RoundResult on_star(sim::Plan plan, double B = kB, double L = kL) {
    return testing::run_on_star(topo::PlanCollective(std::move(plan)), B, L);
}

std::unique_ptr<topo::Collective> make(topo::AllreduceAlgorithm a, std::uint32_t n, double S, double segment = 0.0) {
    topo::ArchitectureSpec spec;
    spec.algorithm = a;
    spec.segment_size = sim::Bytes{segment};
    return topo::make_allreduce(spec, testing::context(n, S));
}

/// Information flow through the DAG: the set of workers whose data a step carries is what its sender
/// knows when it starts (its own data plus what it received, or sent, in the steps it waits for).
/// Returns, per endpoint, the workers whose data reached it by the end of the round.
std::vector<std::vector<bool>> knowledge(const sim::Plan& plan) {
    const std::uint32_t n = plan.endpoints;
    std::vector<std::vector<bool>> carried(plan.size(), std::vector<bool>(n, false));
    std::vector<std::vector<bool>> known(n, std::vector<bool>(n, false));
    for (std::uint32_t e = 0; e < n; ++e) known[e][e] = true;
    for (std::size_t s = 0; s < plan.size(); ++s) {
        const sim::PlanStep& step = plan.step(s);
        carried[s][step.src] = true;
        for (std::uint32_t d : plan.after(s)) {
            const sim::PlanStep& dep = plan.step(d);
            if (dep.dst != step.src && dep.src != step.src) continue;  // an ordering only: no data moved here
            for (std::uint32_t w = 0; w < n; ++w)
                if (carried[d][w]) carried[s][w] = true;
        }
        for (std::uint32_t w = 0; w < n; ++w)
            if (carried[s][w]) known[step.dst][w] = true;
    }
    return known;
}

bool everyone_knows_everything(const sim::Plan& plan) {
    for (const auto& row : knowledge(plan))
        for (bool b : row)
            if (!b) return false;
    return true;
}

void check_lower_bound(const testing::RoundResult& r, std::uint32_t n, double S) {
    if (n < 2) return;
    CHECK(r.makespan >= 2.0 * (n - 1) / n * S / kB * (1 - 1e-9));
}

sim::Bytes bytes(double b) {
    return sim::Bytes{b};
}

}  // namespace

TEST_CASE("allreduce: segment counts") {
    CHECK(topo::segment_count(bytes(100), bytes(0)) == 1);
    CHECK(topo::segment_count(bytes(100), bytes(100)) == 1);
    CHECK(topo::segment_count(bytes(100), bytes(30)) == 4);
    CHECK(topo::segment_count(bytes(100), bytes(1000)) == 1);
}

TEST_CASE("allreduce: the information-flow check catches a missing dependency") {
    // Ring all-reduce of 3 workers minus the receive dependencies: data no longer travels beyond one hop.
    sim::Plan plan;
    plan.endpoints = 3;
    for (std::uint32_t s = 0; s < 4; ++s)
        for (std::uint32_t i = 0; i < 3; ++i) plan.add(i, (i + 1) % 3, bytes(1));
    CHECK_FALSE(everyone_knows_everything(plan));
    CHECK(everyone_knows_everything(topo::ring_allreduce_plan(3, bytes(3))));
}

TEST_CASE("allreduce ring with segments: T = 2(n-1) k (alpha + S/(nkB)), bytes 2(n-1)S") {
    // Each S/n chunk is cut into k segments sent one after another (one in flight per sender); every
    // worker's (s, j) segment waits for its predecessor's (s-1, j), which finished k transfers earlier,
    // so all workers move in lockstep through 2(n-1)k transfers of alpha + S/(nkB).
    const double S = 12e6;
    for (std::uint32_t n : {2U, 3U, 5U, 8U})
        for (std::uint32_t k : {1U, 3U, 4U}) {
            CAPTURE(n);
            CAPTURE(k);
            const double seg = S / n / k * 1.0001;  // ceil(chunk / seg) = k
            REQUIRE(topo::segment_count(bytes(S / n), bytes(seg)) == k);
            const auto c = make(topo::AllreduceAlgorithm::ring, n, S, seg);
            const auto r = testing::run_on_star(*c, kB, kL);
            const double expected = 2.0 * (n - 1) * k * (kAlpha + S / (n * k * kB));
            CHECK(r.makespan == ddlsim::testing::approx(expected).epsilon(1e-6));
            CHECK(r.analytic == ddlsim::testing::approx(expected).epsilon(1e-6));
            CHECK(r.wire_bytes == ddlsim::testing::approx(2.0 * (n - 1) * S).epsilon(1e-12));
            CHECK(everyone_knows_everything(topo::segmented_ring_allreduce_plan(n, bytes(S), bytes(seg))));
            check_lower_bound(r, n, S);
        }
    // Without segments the plan is the reference ring DAG and make_allreduce gives the O(n) ring.
    const auto plain = on_star(topo::segmented_ring_allreduce_plan(6, bytes(S), bytes(0)));
    const auto ring = testing::run_on_star(*make(topo::AllreduceAlgorithm::ring, 6, S), kB, kL);
    CHECK(plain.makespan == ddlsim::testing::approx(2.0 * 5 * (kAlpha + S / (6 * kB))).epsilon(1e-9));
    CHECK(ring.makespan == ddlsim::testing::approx(plain.makespan).epsilon(1e-9));
}

TEST_CASE("allreduce halving_doubling, n = 2^m: T = 2m alpha + 2(n-1)/n S/B, bytes 2(n-1)S") {
    // Reduce-scatter: m exchanges of S/2, S/4, ..., S/n; all-gather the same in reverse. Every worker
    // sends one message and receives one per step (full duplex, no sharing): each step alpha + size/B.
    const double S = 16e6;
    for (std::uint32_t m = 1; m <= 5; ++m) {
        const std::uint32_t n = 1U << m;
        CAPTURE(n);
        const auto r = testing::run_on_star(*make(topo::AllreduceAlgorithm::halving_doubling, n, S), kB, kL);
        const double expected = 2.0 * m * kAlpha + 2.0 * (n - 1) / n * S / kB;
        CHECK(r.makespan == ddlsim::testing::approx(expected).epsilon(1e-6));
        CHECK(r.analytic == ddlsim::testing::approx(expected).epsilon(1e-6));
        CHECK(r.wire_bytes == ddlsim::testing::approx(2.0 * (n - 1) * S).epsilon(1e-12));
        CHECK(everyone_knows_everything(topo::halving_doubling_allreduce_plan(n, bytes(S), bytes(0))));
        check_lower_bound(r, n, S);
    }
    // Segments of 1 MB, n = 4, S = 4 MB: messages 2, 1 | 1, 2 MB are 2, 1, 1, 2 segments: 6 alpha + 1.5 S/B.
    const auto r = testing::run_on_star(*make(topo::AllreduceAlgorithm::halving_doubling, 4, 4e6, 1e6), kB, kL);
    CHECK(r.makespan == ddlsim::testing::approx(6 * kAlpha + 1.5 * 4e6 / kB).epsilon(1e-6));
}

TEST_CASE("allreduce halving_doubling, MPICH non-powers of two: two extra full-vector steps") {
    // p = 2^floor(log2 n), r = n - p. Ranks 0, 2, ..., 2r-2 send their S bytes to the next (odd) rank
    // (alpha + S/B), the p remaining ranks run halving-doubling (2 log2(p) alpha + 2(p-1)/p S/B; every
    // exchange waits for both partners, so nobody shares a link), then the odd ranks send the S-byte
    // result back (alpha + S/B): T = 2(alpha + S/B) + 2 log2(p) alpha + 2(p-1)/p S/B.
    // Wire: 2rS for the extra steps + 2(p-1)S inside the power of two.
    const double S = 12e6;
    for (std::uint32_t n : {3U, 5U, 6U, 7U, 12U}) {
        CAPTURE(n);
        std::uint32_t p = 1, m = 0;
        while (p * 2 <= n) p *= 2, ++m;
        const std::uint32_t rem = n - p;
        const auto r = testing::run_on_star(*make(topo::AllreduceAlgorithm::halving_doubling, n, S), kB, kL);
        const double expected = 2.0 * (kAlpha + S / kB) + 2.0 * m * kAlpha + 2.0 * (p - 1) / p * S / kB;
        CHECK(r.makespan == ddlsim::testing::approx(expected).epsilon(1e-6));
        CHECK(r.analytic <= r.makespan * (1 + 1e-9));
        CHECK(r.wire_bytes == ddlsim::testing::approx(2.0 * rem * S + 2.0 * (p - 1) * S).epsilon(1e-12));
        CHECK(everyone_knows_everything(topo::halving_doubling_allreduce_plan(n, bytes(S), bytes(0))));
        check_lower_bound(r, n, S);
    }
}

TEST_CASE("allreduce: n = 1 needs no transfer, n = 2 closed forms") {
    using A = topo::AllreduceAlgorithm;
    const double S = 8e6;
    for (A a : {A::ring, A::tree, A::double_tree, A::halving_doubling, A::hierarchical, A::torus2d}) {
        CAPTURE(static_cast<int>(a));
        const auto one = testing::run_on_star(*make(a, 1, S), kB, kL);
        CHECK(one.makespan == 0.0);
        CHECK(one.wire_bytes == 0.0);
        CHECK(one.done.at(0) == 0.0);
        const auto two = testing::run_on_star(*make(a, 2, S), kB, kL);
        check_lower_bound(two, 2, S);
        CHECK(two.wire_bytes == ddlsim::testing::approx(2 * S));
        // Ring, halving-doubling, hierarchical (one worker per node: a ring) and torus (1 x 2: a ring):
        // one exchange of S/2 each way per phase, T = 2(alpha + S/(2B)).
        if (a == A::ring || a == A::halving_doubling || a == A::hierarchical || a == A::torus2d)
            CHECK(two.makespan == ddlsim::testing::approx(2 * kAlpha + S / kB).epsilon(1e-6));
    }
}

TEST_CASE("allreduce tree: NCCL binary tree shape and closed forms") {
    // Shape: root 0 with one child, at most two children each, leaves the odd ranks.
    for (std::uint32_t n = 2; n <= 40; ++n) {
        CAPTURE(n);
        const auto parents = topo::nccl_btree_parents(n);
        std::vector<int> kids(n, 0);
        for (std::uint32_t v = 1; v < n; ++v) ++kids.at(parents[v]);
        CHECK(parents[0] == topo::kNoParent);
        CHECK(kids[0] == 1);
        for (std::uint32_t v = 0; v < n; ++v) CHECK(kids[v] <= 2);
        for (std::uint32_t v = 1; v < n; ++v) CHECK((kids[v] == 0) == (v % 2 == 1));
        CHECK(topo::tree_height(parents) <= 1 + 2 * static_cast<std::uint32_t>(std::log2(n)));
    }
    // n = 2, k segments of S/k (default k = 8): reduce 1 -> 0 and broadcast 0 -> 1 use different uplinks
    // and downlinks; segment j arrives at 0 at (j+1)d, goes back by (j+2)d, d = alpha + S/(kB):
    // T = (k+1)(alpha + S/(kB)).
    const double S = 8e6;
    for (std::uint32_t k : {1U, 4U, 8U}) {
        CAPTURE(k);
        const double seg = k == 8 ? 0.0 : S / k;
        const auto r = testing::run_on_star(*make(topo::AllreduceAlgorithm::tree, 2, S, seg), kB, kL);
        CHECK(r.makespan == ddlsim::testing::approx((k + 1) * (kAlpha + S / (k * kB))).epsilon(1e-6));
    }
    // Latency-bound limit (B huge): a leaf's segment j leaves at j alpha, reaches the root after H hops
    // (H the tree height), and the deepest leaf after H more: T = (k - 1 + 2H) alpha.
    for (std::uint32_t n : {3U, 5U, 8U, 13U, 16U}) {
        CAPTURE(n);
        const std::uint32_t H = topo::tree_height(topo::nccl_btree_parents(n));
        const auto r = testing::run_on_star(*make(topo::AllreduceAlgorithm::tree, n, 1.0), 1e18, kL);
        CHECK(r.makespan == ddlsim::testing::approx((8 - 1 + 2.0 * H) * kAlpha).epsilon(1e-6));
    }
    // Every non-root sends S up and receives S down: 2(n-1)S; invariants for all n.
    for (std::uint32_t n = 2; n <= 12; ++n) {
        CAPTURE(n);
        const auto r = testing::run_on_star(*make(topo::AllreduceAlgorithm::tree, n, S), kB, kL);
        CHECK(r.wire_bytes == ddlsim::testing::approx(2.0 * (n - 1) * S).epsilon(1e-12));
        CHECK(everyone_knows_everything(topo::tree_allreduce_plan(n, bytes(S), bytes(0))));
        check_lower_bound(r, n, S);
    }
}

TEST_CASE("allreduce double_tree: complementary trees and closed forms") {
    // Sanders et al.: no rank is a leaf in both trees (mirror for n even, shift for n odd).
    for (std::uint32_t n = 2; n <= 40; ++n) {
        CAPTURE(n);
        const auto t1 = topo::nccl_btree_parents(n), t2 = topo::nccl_second_tree_parents(n);
        std::vector<int> k1(n, 0), k2(n, 0), roots(2, 0);
        for (std::uint32_t v = 0; v < n; ++v) {
            if (t1[v] == topo::kNoParent)
                ++roots[0];
            else
                ++k1.at(t1[v]);
            if (t2[v] == topo::kNoParent)
                ++roots[1];
            else
                ++k2.at(t2[v]);
        }
        CHECK(roots[0] == 1);
        CHECK(roots[1] == 1);
        for (std::uint32_t v = 0; v < n; ++v) {
            CHECK(k2[v] <= 2);
            CHECK((k1[v] > 0 || k2[v] > 0));
        }
    }
    // n = 2, k = 8 segments of c = S/16 per tree. Tree 1 reduces 1 -> 0 and broadcasts 0 -> 1, tree 2
    // the reverse. The first segments go alone (alpha + c/B); from then on each uplink carries one
    // reduce and one broadcast segment at a time, both started together (alpha + 2c/B), for k-1 rounds,
    // and the last broadcast segment goes alone: T = 2(alpha + c/B) + (k-1)(alpha + 2c/B) = (k+1) alpha + S/B.
    const double S = 8e6;
    const auto two = testing::run_on_star(*make(topo::AllreduceAlgorithm::double_tree, 2, S), kB, kL);
    CHECK(two.makespan == ddlsim::testing::approx(9 * kAlpha + S / kB).epsilon(1e-6));
    // Latency-bound limit: both trees have the same height H (mirror / shift): T = (k - 1 + 2H) alpha.
    for (std::uint32_t n : {3U, 6U, 9U, 16U}) {
        CAPTURE(n);
        const std::uint32_t H = topo::tree_height(topo::nccl_btree_parents(n));
        CHECK(topo::tree_height(topo::nccl_second_tree_parents(n)) == H);
        const auto r = testing::run_on_star(*make(topo::AllreduceAlgorithm::double_tree, n, 1.0), 1e18, kL);
        CHECK(r.makespan == ddlsim::testing::approx((8 - 1 + 2.0 * H) * kAlpha).epsilon(1e-6));
    }
    // Each tree moves 2(n-1) S/2 bytes: 2(n-1)S in all. With many segments the double tree is at most
    // ~2S/B (every rank sends and receives about 2S: the bandwidth of two half-size trees), below the
    // single tree, which pushes 3S through an interior node's link.
    for (std::uint32_t n = 2; n <= 12; ++n) {
        CAPTURE(n);
        const auto r = testing::run_on_star(*make(topo::AllreduceAlgorithm::double_tree, n, S), kB, kL);
        CHECK(r.wire_bytes == ddlsim::testing::approx(2.0 * (n - 1) * S).epsilon(1e-12));
        CHECK(everyone_knows_everything(topo::double_tree_allreduce_plan(n, bytes(S), bytes(0))));
        check_lower_bound(r, n, S);
        const auto single = testing::run_on_star(*make(topo::AllreduceAlgorithm::tree, n, S), kB, kL);
        if (n >= 4) CHECK(r.makespan < single.makespan);
    }
}

TEST_CASE("allreduce torus2d: grid and T = 2(X-1)(alpha + S/(XB)) + 2(Y-1)(alpha + S/(nB))") {
    // Rows of X reduce-scatter ((X-1) steps of S/X), columns of Y ring-all-reduce the S/X shard
    // (2(Y-1) steps of S/(XY)), rows all-gather ((X-1) steps of S/X); on a star every worker sends one
    // and receives one flow in each step. Wire: 2Y(X-1)S + X 2(Y-1)Y S/(XY) = 2(n-1)S.
    CHECK(topo::torus2d_grid(12) == std::pair<std::uint32_t, std::uint32_t>{3, 4});
    CHECK(topo::torus2d_grid(16) == std::pair<std::uint32_t, std::uint32_t>{4, 4});
    CHECK(topo::torus2d_grid(8) == std::pair<std::uint32_t, std::uint32_t>{2, 4});
    CHECK(topo::torus2d_grid(7) == std::pair<std::uint32_t, std::uint32_t>{1, 7});
    const double S = 24e6;
    for (std::uint32_t n : {4U, 6U, 7U, 8U, 9U, 12U, 16U}) {
        CAPTURE(n);
        const auto [X, Y] = topo::torus2d_grid(n);
        const auto r = testing::run_on_star(*make(topo::AllreduceAlgorithm::torus2d, n, S), kB, kL);
        const double expected = 2.0 * (X - 1) * (kAlpha + S / (X * kB)) + 2.0 * (Y - 1) * (kAlpha + S / (n * kB));
        CHECK(r.makespan == ddlsim::testing::approx(expected).epsilon(1e-6));
        CHECK(r.analytic == ddlsim::testing::approx(expected).epsilon(1e-6));
        CHECK(r.wire_bytes == ddlsim::testing::approx(2.0 * (n - 1) * S).epsilon(1e-12));
        CHECK(everyone_knows_everything(topo::torus2d_allreduce_plan(n, bytes(S), bytes(0))));
        check_lower_bound(r, n, S);
    }
}

TEST_CASE("allreduce hierarchical on a two-tier fabric: rails over the NIC") {
    // N nodes of g GPUs; intra route 2 links (2Li, Bi), inter route 4 links (2Li + 2L, bottleneck the
    // NIC B). Intra reduce-scatter: (g-1) steps of S/g at 2Li + S/(g Bi). Rails: g concurrent rings of N
    // workers (one per GPU index); in each of 2(N-1) steps each node's NIC carries g flows of S/(gN) each
    // way, so a step takes 2Li + 2L + S/(NB). Intra all-gather as the reduce-scatter. All in lockstep:
    // T = 2(g-1)(2Li + S/(g Bi)) + 2(N-1)(2L + 2Li + S/(NB)).
    // As Bi -> inf, Li -> 0 this tends to the inter-node ring among nodes, 2(N-1)(2L + S/(NB)); the gap is
    // exactly the intra terms, below 1% here.
    const double S = 64e6, B = 1.25e9, L = 5e-6, Bi = 300e9, Li = 1e-7;
    for (std::uint32_t N : {2U, 3U, 4U})
        for (std::uint32_t g : {1U, 2U, 4U}) {
            CAPTURE(N);
            CAPTURE(g);
            const auto fabric =
                topo::build_fabric(topo::TwoTierSpec{N, g, sim::Bandwidth::bytes_per_s(B), sim::Time::seconds(L),
                                                     sim::Bandwidth::bytes_per_s(Bi), sim::Time::seconds(Li), 1, 0});
            const std::vector<topo::Vertex> hosts(fabric.hosts().begin(), fabric.hosts().end());
            auto ctx = testing::context(N * g, S);
            for (std::uint32_t w = 0; w < N * g; ++w) ctx.node_of[w] = w / g;
            topo::ArchitectureSpec spec;
            spec.algorithm = topo::AllreduceAlgorithm::hierarchical;
            const auto c = topo::make_allreduce(spec, ctx);
            const auto r = testing::run_round(*c, fabric, hosts);
            const double intra = 2.0 * (g - 1) * (2 * Li + S / (g * Bi));
            const double rails = 2.0 * (N - 1) * (2 * L + 2 * Li + S / (N * B));
            CHECK(r.makespan == ddlsim::testing::approx(intra + rails).epsilon(1e-6));
            const double node_ring = 2.0 * (N - 1) * (2 * L + S / (N * B));
            CHECK(r.makespan == ddlsim::testing::approx(node_ring).epsilon(0.01));
            // Wire: intra (g-1)S per phase and node, rails 2(N-1)S/g per rail and node.
            CHECK(r.wire_bytes == ddlsim::testing::approx(N * 2.0 * (g - 1) * S + 2.0 * (N - 1) * S).epsilon(1e-12));
            CHECK(everyone_knows_everything(topo::hierarchical_allreduce_plan(ctx.node_of, N * g, bytes(S), bytes(0))));
        }
}

TEST_CASE("allreduce hierarchical: one node is a ring, uneven nodes fall back to leaders") {
    const double S = 6e6;
    // All workers on one node of a star: intra ring only, T = 2(n-1)(alpha + S/(nB)).
    auto ctx = testing::context(6, S);
    for (auto& node : ctx.node_of) node = 7;
    topo::ArchitectureSpec spec;
    spec.algorithm = topo::AllreduceAlgorithm::hierarchical;
    const auto one = testing::run_on_star(*topo::make_allreduce(spec, ctx), kB, kL);
    CHECK(one.makespan == ddlsim::testing::approx(10 * (kAlpha + S / (6 * kB))).epsilon(1e-6));
    // Nodes {0, 1, 2}, {3}, {4, 5}: binomial reduce to 0, 3, 4 (2S + 0 + S), ring among the three
    // leaders (2 * 2 * S), binomial broadcast back (2S + S): 10S on the wire.
    const std::vector<std::uint32_t> node_of{0, 0, 0, 1, 2, 2};
    const auto plan = topo::hierarchical_allreduce_plan(node_of, 6, bytes(S), bytes(0));
    CHECK(plan.transfer_bytes() == ddlsim::testing::approx(10 * S));
    CHECK(everyone_knows_everything(plan));
    check_lower_bound(on_star(plan), 6, S);
    CHECK_THROWS((void)topo::hierarchical_allreduce_plan({0, 1}, 3, bytes(S), bytes(0)));
}

TEST_CASE("allreduce primitives: binomial broadcast / reduce, all-to-all, composition") {
    // Binomial broadcast, n = 2^m, k segments, sends in turn (largest subtree first): the root sends
    // k m transfers back to back, every subtree keeps up: T = k m (alpha + S/(kB)). Reduce is its mirror.
    const double S = 8e6;
    for (std::uint32_t m : {1U, 2U, 3U})
        for (std::uint32_t k : {1U, 4U}) {
            const std::uint32_t n = 1U << m;
            CAPTURE(n);
            CAPTURE(k);
            std::vector<std::uint32_t> members(n);
            for (std::uint32_t i = 0; i < n; ++i) members[i] = i;
            const double expected = k * m * (kAlpha + S / (k * kB));
            for (bool bcast : {true, false}) {
                CAPTURE(bcast);
                sim::Plan plan;
                plan.endpoints = n;
                if (bcast)
                    (void)topo::broadcast(plan, members, bytes(S), bytes(k == 1 ? 0 : S / k), {});
                else
                    (void)topo::reduce(plan, members, bytes(S), bytes(k == 1 ? 0 : S / k), {});
                CHECK(plan.transfer_bytes() == ddlsim::testing::approx((n - 1) * S));
                CHECK(on_star(std::move(plan)).makespan == ddlsim::testing::approx(expected).epsilon(1e-6));
            }
        }
    // Direct all-to-all: every uplink and downlink carries n-1 flows of S/n at once: T = alpha + (n-1)S/(nB).
    for (std::uint32_t n : {2U, 3U, 5U}) {
        CAPTURE(n);
        sim::Plan plan;
        plan.endpoints = n;
        std::vector<std::uint32_t> members(n);
        for (std::uint32_t i = 0; i < n; ++i) members[i] = i;
        (void)topo::all_to_all(plan, members, bytes(S), bytes(0), {});
        CHECK(plan.transfer_bytes() == ddlsim::testing::approx((n - 1) * S));
        CHECK(on_star(std::move(plan)).makespan ==
              ddlsim::testing::approx(kAlpha + (n - 1) * S / (n * kB)).epsilon(1e-6));
    }
    // Composition: reduce-scatter then all-gather on a subgroup {4, 1, 3} of 5 endpoints, appended after a
    // start step, equals a ring all-reduce of 3 started when that step is done: 1 + 4 (alpha + S/(3B)).
    sim::Plan plan;
    plan.endpoints = 5;
    const std::uint32_t warmup = plan.add(0, 2, bytes(kB * 1.0 - kAlpha * kB));  // takes exactly 1 s
    const std::vector<std::uint32_t> group{4, 1, 3};
    const topo::StepSets start{{warmup}, {warmup}, {warmup}};
    const auto rs = topo::ring_reduce_scatter(plan, group, bytes(S), bytes(0), start);
    (void)topo::ring_all_gather(plan, group, bytes(S), bytes(0), rs);
    const auto r = on_star(std::move(plan));
    CHECK(r.done[4] == ddlsim::testing::approx(1.0 + 4 * (kAlpha + S / (3 * kB))).epsilon(1e-9));
    CHECK(r.done[0] == ddlsim::testing::approx(1.0).epsilon(1e-9));
}

TEST_CASE("allreduce: every algorithm meets the invariants on random sizes") {
    using A = topo::AllreduceAlgorithm;
    for (A a : {A::ring, A::tree, A::double_tree, A::halving_doubling, A::hierarchical, A::torus2d})
        for (std::uint32_t n : {3U, 10U, 17U})
            for (double seg : {0.0, 0.3e6}) {
                CAPTURE(static_cast<int>(a));
                CAPTURE(n);
                CAPTURE(seg);
                const double S = 3e6;
                const auto c = make(a, n, S, seg);
                const auto r = testing::run_on_star(*c, kB, kL);
                for (double d : r.done) CHECK(d > 0.0);
                check_lower_bound(r, n, S);
                if (const auto* pc = dynamic_cast<const topo::PlanCollective*>(c.get()))
                    CHECK(everyone_knows_everything(pc->plan()));
            }
}
