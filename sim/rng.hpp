// The simulator's one random number generator. Every random choice in ddlsim (straggler slowdowns,
// gossip partners, federated client sampling, ECMP path hashing, the validation's data and
// initialisation) draws from here, so that the same scenario and seed give the same result with any
// compiler and standard library: the C++ standard fixes the engines' outputs but not those of
// std::uniform_int_distribution, std::normal_distribution and the like, so none of them is used.
//
//   mixer       SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
//               OOPSLA 2014), with the constants of Vigna's reference implementation
//               (https://prng.di.unimi.it/splitmix64.c): state += 0x9e3779b97f4a7c15, then the
//               output function (Stafford's "Mix13") on the new state. Its n-th output is a pure
//               function of (state, n), so the sequential engine and the counter-based draws agree:
//               bits(key, n) is the n-th output of SplitMix64{key}.
//   streams     stream(seed, "name"): a key from the scenario's seed and a stream name (FNV-1a 64 of
//               the name, at compile time), so that each use of randomness draws from its own
//               independent stream by name rather than by a hand-picked XOR constant; substream(key, i)
//               refines a key by an index (a worker, a round, ...).
//   counter     uniform01(key, n), normal(key, n), ...: pure functions of (key, n), so a draw does not
//               depend on the order in which events happen to run.
//   draws       written out here, the same on every platform: uniform double in [0, 1) from the top 53
//               bits; uniform integer in [0, n) by Lemire's multiply-shift with rejection (Lemire,
//               "Fast random integer generation in an interval", ACM TOMACS 2019), unbiased; standard
//               normal by Box–Muller; exponential as -ln(1 - u); Fisher–Yates shuffle and partial
//               shuffle (Knuth, TAOCP vol. 2, Algorithm P).
//
// The integer and uniform draws are exact integer or exactly rounded arithmetic, hence bit-identical
// everywhere; normal and exponential draws call std::log and std::cos, which IEEE 754 does not require
// to be correctly rounded, so another math library may differ from glibc's in their last bit.
// sim/ knows nothing of deep learning: stream names are chosen by the callers.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

#include "sim/rng_mix.hpp"  // kGamma, mix64, bits, to_unit, uniform01(key, n): shared with the CUDA kernels

namespace ddlsim::sim::rng {

/// A 64-bit hash of a word: the first output of SplitMix64 seeded with `x`.
[[nodiscard]] constexpr std::uint64_t hash64(std::uint64_t x) noexcept {
    return mix64(x + kGamma);
}

/// FNV-1a 64 (Fowler, Noll & Vo; offset basis 0xcbf29ce484222325, prime 0x100000001b3) of a string.
[[nodiscard]] constexpr std::uint64_t fnv1a64(std::string_view s) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (char c : s) {
        h ^= static_cast<std::uint8_t>(c);
        h *= 0x100000001b3ULL;
    }
    return h;
}

/// A stream's name, hashed at compile time: `stream(seed, "stragglers")`.
class StreamName {
public:
    // NOLINTNEXTLINE(google-explicit-constructor): a string literal is a stream name
    consteval StreamName(const char* name) noexcept : hash_(fnv1a64(name)) {}
    [[nodiscard]] constexpr std::uint64_t hash() const noexcept { return hash_; }

private:
    std::uint64_t hash_;
};

/// The key of the stream `name` under `seed`: different names give independent streams, and so do
/// different seeds.
[[nodiscard]] constexpr std::uint64_t stream(std::uint64_t seed, StreamName name) noexcept {
    return hash64(hash64(seed) ^ name.hash());
}

/// A key refined by an index (a worker, a round, a connection): independent keys for different indices.
[[nodiscard]] constexpr std::uint64_t substream(std::uint64_t key, std::uint64_t index) noexcept {
    return hash64(key ^ hash64(index));
}

/// The high and low words of the 128-bit product a * b, in portable 64-bit arithmetic.
[[nodiscard]] constexpr std::pair<std::uint64_t, std::uint64_t> mul128(std::uint64_t a, std::uint64_t b) noexcept {
    const std::uint64_t a_lo = a & 0xffffffffULL, a_hi = a >> 32;
    const std::uint64_t b_lo = b & 0xffffffffULL, b_hi = b >> 32;
    const std::uint64_t p0 = a_lo * b_lo, p1 = a_lo * b_hi, p2 = a_hi * b_lo, p3 = a_hi * b_hi;
    const std::uint64_t mid = (p0 >> 32) + (p1 & 0xffffffffULL) + (p2 & 0xffffffffULL);
    return {p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32), a * b};
}

/// The sequential engine: SplitMix64 with its 64-bit state. Also a UniformRandomBitGenerator, but
/// pass it to the draws below, never to a std::*_distribution.
class SplitMix64 {
public:
    using result_type = std::uint64_t;
    constexpr explicit SplitMix64(std::uint64_t state) noexcept : state_(state) {}
    /// The stream `name` under `seed`.
    constexpr SplitMix64(std::uint64_t seed, StreamName name) noexcept : state_(stream(seed, name)) {}

    constexpr std::uint64_t operator()() noexcept { return mix64(state_ += kGamma); }
    [[nodiscard]] static constexpr std::uint64_t min() noexcept { return 0; }
    [[nodiscard]] static constexpr std::uint64_t max() noexcept { return ~std::uint64_t{0}; }
    [[nodiscard]] constexpr std::uint64_t state() const noexcept { return state_; }

private:
    std::uint64_t state_;
};

// --- Draws from a generator `g` (anything with std::uint64_t g()) -------------------------------------

/// Uniform in [0, 1), 53 bits.
template <typename G>
[[nodiscard]] constexpr double uniform01(G& g) {
    return to_unit(g());
}

/// Uniform integer in [0, n) (0 when n is 0): Lemire's multiply-shift with rejection, unbiased.
template <typename G>
[[nodiscard]] constexpr std::uint64_t below(G& g, std::uint64_t n) {
    auto [hi, lo] = mul128(g(), n);
    if (lo < n) {
        const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
        while (lo < threshold) std::tie(hi, lo) = mul128(g(), n);
    }
    return hi;
}

/// Standard normal N(0, 1) by Box–Muller (Box & Muller 1958) from two uniforms (the cosine branch).
template <typename G>
[[nodiscard]] double normal(G& g) {
    double u1 = uniform01(g);
    const double u2 = uniform01(g);
    if (u1 <= 0.0) u1 = 0x1.0p-54;  // log(0); probability 2^-53
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

/// Exponential with mean 1: -ln(1 - u), finite since u < 1.
template <typename G>
[[nodiscard]] double exponential(G& g) {
    return -std::log(1.0 - uniform01(g));
}

/// Fisher–Yates: a uniformly random permutation of `v` (Knuth's Algorithm P).
template <typename G, typename T, std::size_t Extent>
constexpr void shuffle(G& g, std::span<T, Extent> v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(g, i)]);
}

/// A partial Fisher–Yates: afterwards v[0, k) is a uniformly random k-subset of `v` in random order
/// (k is clamped to v.size()).
template <typename G, typename T, std::size_t Extent>
constexpr void partial_shuffle(G& g, std::span<T, Extent> v, std::size_t k) {
    if (k > v.size()) k = v.size();
    for (std::size_t i = 0; i < k && i + 1 < v.size(); ++i) std::swap(v[i], v[i + below(g, v.size() - i)]);
}

// --- Counter-based draws: pure functions of (key, n) --------------------------------------------------

/// Standard normal from the counters 2n and 2n + 1.
[[nodiscard]] inline double normal(std::uint64_t key, std::uint64_t n) {
    SplitMix64 g(key + 2 * n * kGamma);  // its outputs are bits(key, 2n), bits(key, 2n + 1)
    return normal(g);
}

/// Exponential with mean 1 from the counter n.
[[nodiscard]] inline double exponential(std::uint64_t key, std::uint64_t n) {
    return -std::log(1.0 - uniform01(key, n));
}

/// Uniform integer in [0, n) from the counter `counter` (rejections draw from substream(key, counter)).
[[nodiscard]] constexpr std::uint64_t below(std::uint64_t key, std::uint64_t counter, std::uint64_t n) noexcept {
    SplitMix64 g(substream(key, counter));
    return below(g, n);
}

}  // namespace ddlsim::sim::rng
