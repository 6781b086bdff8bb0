// SplitMix64's mixer and the counter-based draws built on it alone, the part of the one RNG (sim/rng.hpp, which
// includes this and documents the generator) that device code uses too: validate/cuda_kernels.cu draws the QSGD
// rounding with these functions, so the CUDA codecs' random numbers are the CPU codecs' by construction. Hence
// C++17 (nvcc compiles the kernels as C++17) and DDLSIM_HOST_DEVICE: __host__ __device__ under nvcc, nothing
// elsewhere.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DDLSIM_HOST_DEVICE __host__ __device__
#else
#define DDLSIM_HOST_DEVICE
#endif

namespace ddlsim::sim::rng {

/// SplitMix64's increment, 2^64 / φ rounded to odd (Steele et al. 2014; Vigna's splitmix64.c).
inline constexpr std::uint64_t kGamma = 0x9e3779b97f4a7c15ULL;

/// SplitMix64's output function (Stafford's Mix13, the constants of Vigna's splitmix64.c): a bijection
/// of 64-bit words with good avalanche.
[[nodiscard]] DDLSIM_HOST_DEVICE constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// The n-th (from 0) output of SplitMix64 seeded with `key`: the counter-based generator.
[[nodiscard]] DDLSIM_HOST_DEVICE constexpr std::uint64_t bits(std::uint64_t key, std::uint64_t n) noexcept {
    return mix64(key + (n + 1) * kGamma);
}

/// A double in [0, 1) from the top 53 bits of a word (every value a multiple of 2^-53).
[[nodiscard]] DDLSIM_HOST_DEVICE constexpr double to_unit(std::uint64_t x) noexcept {
    return static_cast<double>(x >> 11) * 0x1.0p-53;
}

/// Uniform in [0, 1): the n-th output of SplitMix64{key}, 53 bits.
[[nodiscard]] DDLSIM_HOST_DEVICE constexpr double uniform01(std::uint64_t key, std::uint64_t n) noexcept {
    return to_unit(bits(key, n));
}

}  // namespace ddlsim::sim::rng
