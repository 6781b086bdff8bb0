// Sparse all-gathers, gTop-k and PowerSGD plans against hand-derived closed forms on an
// idle star (one host per worker, bandwidth B, per-link latency L: route latency α = 2L,
// full duplex). A worker that sends one flow and receives one flow at a time gets B each
// way; f flows into one downlink get B/f each.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <cmath>

#include "tests/support/collective_harness.hpp"
#include "topologies/sparse_collectives.hpp"

using namespace ddlsim;

namespace {

constexpr double kB = 1.25e9;  // 10 Gb/s
constexpr double kL = 5e-6;
constexpr double kAlpha = 2 * kL;
constexpr double kWord = 4.0;  // bytes per value or index

double log2_of(std::uint32_t n) {
    return std::log2(static_cast<double>(n));
}

testing::RoundResult run_plan(sim::Plan plan) {
    const topo::PlanCollective c(std::move(plan));
    return testing::run_on_star(c, kB, kL);
}

void check_time(const testing::RoundResult& r, double expected) {
    CHECK(r.makespan == ddlsim::testing::approx(expected).epsilon(1e-9));
    CHECK(r.analytic == ddlsim::testing::approx(expected).epsilon(1e-9));
}

}  // namespace

TEST_CASE("closed form: sparse ring all-gather T = (n-1)(α + p/B), wire n(n-1)p") {
    // Every step each worker forwards one payload to its successor: one flow per uplink and downlink.
    const double p = 2 * 1000 * kWord;  // k = 1000 values + indices
    for (std::uint32_t n : {2u, 3u, 5u, 8u, 13u}) {
        CAPTURE(n);
        const auto r = run_plan(topo::sparse_allgather_ring_plan(n, sim::Bytes{p}));
        const double expected = (n - 1) * (kAlpha + p / kB);
        check_time(r, expected);
        for (double t : r.done) CHECK(t == ddlsim::testing::approx(expected).epsilon(1e-9));
        CHECK(r.wire_bytes == ddlsim::testing::approx(n * (n - 1) * p));
        CHECK(r.transfers == n * (n - 1));
    }
}

TEST_CASE("closed form: sparse recursive-doubling all-gather = survey's α log n + 2(n-1)kβ") {
    // Step j moves 2^j payloads each way between partners: Σ_j (α + 2^j p/B) = α log2 n + (n-1)p/B.
    // Survey (Tang, Shi et al. 2020): top-k all-gather α log n + 2(n-1)kβ, β = word/B, p = 2k words.
    const double k = 2500;
    const double p = 2 * k * kWord;
    const double beta = kWord / kB;
    for (std::uint32_t n : {2u, 4u, 8u, 16u, 32u}) {
        CAPTURE(n);
        const auto r = run_plan(topo::sparse_allgather_doubling_plan(n, sim::Bytes{p}));
        check_time(r, kAlpha * log2_of(n) + (n - 1) * p / kB);
        check_time(r, kAlpha * log2_of(n) + 2 * (n - 1) * k * beta);
        CHECK(r.wire_bytes == ddlsim::testing::approx(n * (n - 1) * p));
        CHECK(r.transfers == n * static_cast<std::uint64_t>(log2_of(n)));
    }
}

TEST_CASE("closed form: sparse all-gather for n not a power of two (Bruck) T = ⌈log2 n⌉α + (n-1)p/B") {
    // Step j sends min(2^j, n-2^j) payloads to i-2^j; the sizes add up to n-1 payloads.
    // n = 6: steps of 1, 2, 2 payloads: 3α + 5p/B.
    const double p = 8000;
    for (std::uint32_t n : {3u, 5u, 6u, 7u, 12u}) {
        CAPTURE(n);
        const auto r = run_plan(topo::sparse_allgather_doubling_plan(n, sim::Bytes{p}));
        check_time(r, std::ceil(log2_of(n)) * kAlpha + (n - 1) * p / kB);
        CHECK(r.wire_bytes == ddlsim::testing::approx(n * (n - 1) * p));
    }
    check_time(run_plan(topo::sparse_allgather_doubling_plan(6, sim::Bytes{p})), 3 * kAlpha + 5 * p / kB);
}

TEST_CASE("closed form: gTop-k butterfly T = log2 n (α + p/B) = α log n + 2k log n β") {
    // Each of log2 n steps swaps one k-sparse payload (p = 2k words) between partners, merged to k.
    // This is the survey's gTop-k form α log n + 2k log n β; the paper's tree (reduce to rank 0
    // then broadcast) costs twice that (next test).
    const double k = 1000;
    const double p = 2 * k * kWord;
    const double beta = kWord / kB;
    for (std::uint32_t n : {2u, 4u, 8u, 16u, 64u}) {
        CAPTURE(n);
        const auto r = run_plan(topo::gtopk_plan(n, sim::Bytes{p}));
        check_time(r, log2_of(n) * (kAlpha + p / kB));
        check_time(r, kAlpha * log2_of(n) + 2 * k * log2_of(n) * beta);
        for (double t : r.done) CHECK(t == ddlsim::testing::approx(r.makespan).epsilon(1e-9));
        CHECK(r.wire_bytes == ddlsim::testing::approx(n * log2_of(n) * p));
    }
    // A merge (+ top-k selection) of duration w after each receive: log2 n (α + p/B + w).
    const double w = 30e-6;
    const auto r = run_plan(topo::gtopk_plan(8, sim::Bytes{p}, topo::GtopkForm::butterfly, sim::Time::seconds(w)));
    check_time(r, 3 * (kAlpha + p / kB + w));
}

TEST_CASE("closed form: gTop-k butterfly for n = 6 with MPICH-style fold-in") {
    // m = 4: t=0 workers 4, 5 fold into 0, 1 while 2 <-> 3 already swap (no data to wait for): α + p/B.
    // Then 0 <-> 1 and 2 -> 0, 3 -> 1 (2 and 3 are one step ahead): downlinks of 0 and 1 carry two
    // flows each: α + 2p/B. Then 0 <-> 2, 1 <-> 3 remaining halves (0 -> 2, 1 -> 3): α + p/B, at
    // which 2 and 3 are done. Then fold-out 0 -> 4, 1 -> 5: α + p/B. T = 4α + 5p/B.
    // Wire: fold 2p + butterfly 4·2·p + fold-out 2p = 12p.
    const double p = 16000;
    const auto r = run_plan(topo::gtopk_plan(6, sim::Bytes{p}));
    check_time(r, 4 * kAlpha + 5 * p / kB);
    CHECK(r.done[2] == ddlsim::testing::approx(3 * kAlpha + 4 * p / kB).epsilon(1e-9));
    CHECK(r.done[3] == ddlsim::testing::approx(3 * kAlpha + 4 * p / kB).epsilon(1e-9));
    for (std::uint32_t i : {0u, 1u, 4u, 5u})
        CHECK(r.done[i] == ddlsim::testing::approx(4 * kAlpha + 5 * p / kB).epsilon(1e-9));
    CHECK(r.wire_bytes == ddlsim::testing::approx(12 * p));
    // n = 3, m = 2: the fold-in 2 -> 0 and 1's butterfly send 1 -> 0 (1 has nothing to wait for) share
    // 0's downlink (α + 2p/B); then 0 -> 1 (α + p/B); then fold-out 0 -> 2 (α + p/B): 3α + 4p/B; wire 4p.
    const auto r3 = run_plan(topo::gtopk_plan(3, sim::Bytes{p}));
    check_time(r3, 3 * kAlpha + 4 * p / kB);
    CHECK(r3.wire_bytes == ddlsim::testing::approx(4 * p));
}

TEST_CASE("closed form: gTop-k tree (Shi et al.) T = 2 log2 n (α + p/B) = 2α log n + 4k log n β") {
    // Binomial reduce: in step j one payload enters each receiver; then the binomial broadcast,
    // where a parent sends to its children one after another: log2 n steps each, α + p/B per step.
    // The paper's gTopKAllReduce cost 2α log P + 4kβ log P (p = 2k words). Wire: 2(n-1)p.
    const double k = 1000;
    const double p = 2 * k * kWord;
    const double beta = kWord / kB;
    for (std::uint32_t n : {2u, 4u, 8u, 16u, 32u}) {
        CAPTURE(n);
        const auto r = run_plan(topo::gtopk_plan(n, sim::Bytes{p}, topo::GtopkForm::tree));
        check_time(r, 2 * log2_of(n) * (kAlpha + p / kB));
        check_time(r, 2 * kAlpha * log2_of(n) + 4 * k * log2_of(n) * beta);
        CHECK(r.wire_bytes == ddlsim::testing::approx(2 * (n - 1) * p));
    }
}

TEST_CASE("closed form: gTop-k tree for n = 6") {
    // Reduce: 1 -> 0, 3 -> 2, 5 -> 4 at once (α + p/B); then 2 -> 0 and 4 -> 0 share 0's downlink
    // (α + 2p/B). Broadcast: 0 -> 4 (α + p/B); 0 -> 2 and 4 -> 5 (α + p/B); 0 -> 1 and 2 -> 3
    // (α + p/B). T = 5α + 6p/B; 4 and 5 are done at 4α + 5p/B. Wire 2(n-1)p = 10p.
    const double p = 16000;
    const auto r = run_plan(topo::gtopk_plan(6, sim::Bytes{p}, topo::GtopkForm::tree));
    check_time(r, 5 * kAlpha + 6 * p / kB);
    CHECK(r.done[4] == ddlsim::testing::approx(4 * kAlpha + 5 * p / kB).epsilon(1e-9));
    CHECK(r.done[5] == ddlsim::testing::approx(4 * kAlpha + 5 * p / kB).epsilon(1e-9));
    CHECK(r.done[3] == ddlsim::testing::approx(5 * kAlpha + 6 * p / kB).epsilon(1e-9));
    CHECK(r.wire_bytes == ddlsim::testing::approx(10 * p));
}

TEST_CASE("powersgd factor bytes: P = Σ m·r, Q = Σ n'·r words, rank capped by the matrix") {
    const topo::MatrixShape shapes[] = {{256, 128}, {64, 10}, {3, 100}};
    const auto [p, q] = topo::powersgd_factor_bytes(shapes, 4, kWord);
    CHECK(p.value() == ddlsim::testing::approx((256 * 4 + 64 * 4 + 3 * 3) * kWord));
    CHECK(q.value() == ddlsim::testing::approx((128 * 4 + 10 * 4 + 100 * 3) * kWord));
}

TEST_CASE("closed form: powersgd two ring all-reduces in sequence") {
    // All-reduce P: 2(n-1)(α + P/(nB)); local work w; all-reduce Q: 2(n-1)(α + Q/(nB)).
    // Wire: 2(n-1)(P + Q).
    const double P = 1.2e6, Q = 0.4e6, w = 50e-6;
    for (std::uint32_t n : {2u, 4u, 5u, 8u}) {
        CAPTURE(n);
        const double ar_p = 2 * (n - 1) * (kAlpha + P / (n * kB));
        const double ar_q = 2 * (n - 1) * (kAlpha + Q / (n * kB));
        const auto r = run_plan(topo::powersgd_plan(n, sim::Bytes{P}, sim::Bytes{Q}, sim::Time::seconds(w)));
        check_time(r, ar_p + w + ar_q);
        for (double t : r.done) CHECK(t == ddlsim::testing::approx(ar_p + w + ar_q).epsilon(1e-9));
        CHECK(r.wire_bytes == ddlsim::testing::approx(2 * (n - 1) * (P + Q)));
        const auto r0 = run_plan(topo::powersgd_plan(n, sim::Bytes{P}, sim::Bytes{Q}));
        check_time(r0, ar_p + ar_q);
    }
}

TEST_CASE("sparse forms degenerate to nothing for one worker") {
    CHECK(topo::sparse_allgather_ring_plan(1, sim::Bytes{10}).size() == 0);
    CHECK(topo::sparse_allgather_doubling_plan(1, sim::Bytes{10}).size() == 0);
    CHECK(topo::gtopk_plan(1, sim::Bytes{10}).size() == 0);
    CHECK(topo::gtopk_plan(1, sim::Bytes{10}, topo::GtopkForm::tree).size() == 0);
    CHECK(run_plan(topo::powersgd_plan(1, sim::Bytes{10}, sim::Bytes{10})).makespan == 0.0);
}
