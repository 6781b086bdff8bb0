// The one RNG (sim/rng.hpp): SplitMix64's reference outputs, named streams, counter-based draws, and
// the written-out distributions (range, bias and moments within generous statistical bounds; the
// seeds are fixed, so each check is deterministic).
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "sim/rng.hpp"

using namespace ddlsim::sim;

namespace {

// Chi-square statistic of observed counts against equal expected counts.
double chi_square(const std::vector<std::uint64_t>& counts) {
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    const double expected = total / static_cast<double>(counts.size());
    double chi2 = 0.0;
    for (auto c : counts) chi2 += (static_cast<double>(c) - expected) * (static_cast<double>(c) - expected) / expected;
    return chi2;
}

}  // namespace

TEST_CASE("rng: SplitMix64 gives the reference implementation's outputs") {
    // Vigna's splitmix64.c (and the Python transcription of it) with state 1234567.
    rng::SplitMix64 g(1234567);
    CHECK(g() == 6457827717110365317ULL);
    CHECK(g() == 3203168211198807973ULL);
    CHECK(g() == 9817491932198370423ULL);
    CHECK(g() == 4593380528125082431ULL);
    CHECK(g() == 16408922859458223821ULL);
    static_assert(rng::hash64(1234567) == 6457827717110365317ULL);  // usable at compile time
}

TEST_CASE("rng: the counter-based draws are the sequential engine's outputs") {
    const std::uint64_t key = rng::stream(42, "test");
    rng::SplitMix64 g(key);
    for (std::uint64_t n = 0; n < 100; ++n) {
        const std::uint64_t x = g();
        CHECK(rng::bits(key, n) == x);
        CHECK(rng::uniform01(key, n) == rng::to_unit(x));
    }
}

TEST_CASE("rng: FNV-1a 64 and named streams") {
    static_assert(rng::fnv1a64("") == 0xcbf29ce484222325ULL);
    static_assert(rng::fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
    static_assert(rng::fnv1a64("foobar") == 0x85944171f73967e8ULL);
    static_assert(rng::StreamName("stragglers").hash() == rng::fnv1a64("stragglers"));
    // The same (seed, name, counter) gives the same value; another name, seed or index another stream.
    CHECK(rng::uniform01(rng::stream(7, "alpha"), 3) == rng::uniform01(rng::stream(7, "alpha"), 3));
    CHECK(rng::stream(7, "alpha") != rng::stream(7, "beta"));
    CHECK(rng::stream(7, "alpha") != rng::stream(8, "alpha"));
    CHECK(rng::substream(rng::stream(7, "alpha"), 0) != rng::substream(rng::stream(7, "alpha"), 1));
    rng::SplitMix64 a(7, "alpha"), b(7, "beta"), a2(7, "alpha");
    int equal = 0;
    for (int i = 0; i < 1000; ++i) {
        const std::uint64_t x = a();
        CHECK(x == a2());
        equal += x == b() ? 1 : 0;
    }
    CHECK(equal == 0);
    // Names and indices are not interchangeable with seeds: stream(0, name) is not seed 0's stream.
    CHECK(rng::stream(0, "alpha") != 0);
}

TEST_CASE("rng: portable 128-bit product") {
    const std::array<std::uint64_t, 6> v{0, 1, 0xffffffffULL, 0x100000000ULL, 0x9e3779b97f4a7c15ULL, ~0ULL};
    for (auto a : v)
        for (auto b : v) {
            const auto [hi, lo] = rng::mul128(a, b);
            CHECK(lo == a * b);
#ifdef __SIZEOF_INT128__
            __extension__ using u128 = unsigned __int128;
            const u128 p = static_cast<u128>(a) * b;
            CHECK(hi == static_cast<std::uint64_t>(p >> 64));
#endif
        }
    CHECK(rng::mul128(~0ULL, ~0ULL).first == ~0ULL - 1);  // (2^64 - 1)^2 = 2^128 - 2^65 + 1
}

TEST_CASE("rng: uniform integers are in range and unbiased") {
    rng::SplitMix64 g(1);
    CHECK(rng::below(g, 0) == 0);
    for (int i = 0; i < 100; ++i) CHECK(rng::below(g, 1) == 0);
    for (std::uint64_t n : {2ULL, 3ULL, 7ULL, 1000ULL, (1ULL << 63) + 1, ~0ULL})
        for (int i = 0; i < 1000; ++i) CHECK(rng::below(g, n) < n);
    // 10 bins, 100,000 draws: chi-square with 9 degrees of freedom; P(> 40) is about 1e-5.
    std::vector<std::uint64_t> counts(10, 0);
    for (int i = 0; i < 100000; ++i) ++counts[rng::below(g, 10)];
    CHECK(chi_square(counts) < 40.0);
    // n = 3·2^62: a plain x % n would put half of the draws below 2^62; unbiased, a third.
    const std::uint64_t n = 3ULL << 62;
    int low = 0;
    for (int i = 0; i < 30000; ++i) low += rng::below(g, n) < (1ULL << 62) ? 1 : 0;
    CHECK(std::abs(low / 30000.0 - 1.0 / 3.0) < 0.02);
    // The counter-based form: in range, and a pure function of (key, counter).
    const std::uint64_t key = rng::stream(5, "pick");
    for (std::uint64_t c = 0; c < 100; ++c) {
        CHECK(rng::below(key, c, 6) < 6);
        CHECK(rng::below(key, c, 6) == rng::below(key, c, 6));
    }
}

TEST_CASE("rng: uniform doubles in 0 to 1 (1 excluded), normal and exponential moments") {
    rng::SplitMix64 g(rng::stream(2, "moments"));
    constexpr int kDraws = 100000;
    double sum = 0.0, lo = 1.0, hi = 0.0;
    for (int i = 0; i < kDraws; ++i) {
        const double u = rng::uniform01(g);
        sum += u;
        lo = std::min(lo, u);
        hi = std::max(hi, u);
    }
    CHECK(lo >= 0.0);
    CHECK(hi < 1.0);
    CHECK(sum / kDraws == ddlsim::testing::approx(0.5).epsilon(0.01));
    CHECK(rng::to_unit(~0ULL) < 1.0);
    CHECK(rng::to_unit(0) == 0.0);

    // N(0, 1): the standard error of the mean is 0.003 and of the variance 0.0045.
    double s1 = 0.0, s2 = 0.0, c1 = 0.0, c2 = 0.0;
    for (int i = 0; i < kDraws; ++i) {
        const double z = rng::normal(g);
        s1 += z;
        s2 += z * z;
        const double zc = rng::normal(rng::stream(3, "normal"), static_cast<std::uint64_t>(i));
        c1 += zc;
        c2 += zc * zc;
    }
    CHECK(std::abs(s1 / kDraws) < 0.02);
    CHECK(std::abs(s2 / kDraws - 1.0) < 0.03);
    CHECK(std::abs(c1 / kDraws) < 0.02);
    CHECK(std::abs(c2 / kDraws - 1.0) < 0.03);

    // Exp(1): mean 1, variance 1; never negative, never infinite.
    double e1 = 0.0, ec = 0.0;
    for (int i = 0; i < kDraws; ++i) {
        const double e = rng::exponential(g);
        CHECK(e >= 0.0);
        CHECK(std::isfinite(e));
        e1 += e;
        ec += rng::exponential(rng::stream(4, "exp"), static_cast<std::uint64_t>(i));
    }
    CHECK(std::abs(e1 / kDraws - 1.0) < 0.02);
    CHECK(std::abs(ec / kDraws - 1.0) < 0.02);
}

TEST_CASE("rng: Fisher-Yates shuffles are uniform permutations, partial shuffles uniform subsets") {
    rng::SplitMix64 g(rng::stream(9, "shuffle"));
    // All 6 permutations of 3 elements, 60,000 shuffles: chi-square, 5 degrees of freedom.
    std::vector<std::uint64_t> counts(6, 0);
    for (int i = 0; i < 60000; ++i) {
        std::array<int, 3> v{0, 1, 2};
        rng::shuffle(g, std::span(v));
        ++counts[static_cast<std::size_t>(v[0] * 2 + (v[1] > v[2] ? 1 : 0))];
    }
    CHECK(chi_square(counts) < 35.0);

    std::vector<int> v(50);
    std::iota(v.begin(), v.end(), 0);
    rng::shuffle(g, std::span(v));
    std::vector<int> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 50; ++i) CHECK(sorted[static_cast<std::size_t>(i)] == i);

    // k = 2 of 5: each element is chosen with probability 2/5.
    std::vector<std::uint64_t> chosen(5, 0);
    for (int i = 0; i < 50000; ++i) {
        std::array<int, 5> w{0, 1, 2, 3, 4};
        rng::partial_shuffle(g, std::span(w), 2);
        CHECK(w[0] != w[1]);
        ++chosen[static_cast<std::size_t>(w[0])];
        ++chosen[static_cast<std::size_t>(w[1])];
    }
    CHECK(chi_square(chosen) < 30.0);
    std::array<int, 3> all{0, 1, 2};
    rng::partial_shuffle(g, std::span(all), 10);  // k beyond the size: a full shuffle
    std::sort(all.begin(), all.end());
    CHECK(all == std::array<int, 3>{0, 1, 2});
}
