// Internal to the compressors (models/compression/*.cpp): the factories registry.cpp dispatches to and the cost
// pieces several codecs share. Use models/compression.hpp from outside.
//
// Conventions of every codec file: n elements of B bytes (bytes_per_element), payload P bytes; a "pass" reads
// and/or writes the n-element tensor once, streaming; memory traffic counts bytes read plus bytes written.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "models/compression.hpp"

namespace ddlsim::models::compression_detail {

/// Whole bytes of a bit-packed payload of `bits` bits.
[[nodiscard]] inline double packed_bytes(double bits) {
    return std::ceil(bits / 8.0);
}

/// Work of `read` plus `written` bytes of memory traffic and `flops` operations.
[[nodiscard]] inline CodecWork work(double read, double written, double flops) {
    return {read + written, flops};
}

/// Error feedback, first half (Stich et al. 2018; Karimireddy et al. 2019): p = g + e before compressing.
/// Reads g and e, writes p: 3Bn bytes, n flops.
[[nodiscard]] inline CodecWork error_feedback_add(double n, double b) {
    return work(2.0 * b * n, b * n, n);
}

/// Error feedback, second half: e = p - D(C(p)) after compressing. Reads p, writes e (the decoded value is
/// recomputed in registers from the payload just written): 2Bn bytes, n flops.
[[nodiscard]] inline CodecWork error_feedback_store(double n, double b) {
    return work(b * n, b * n, n);
}

/// Adds both halves of error feedback to `c`'s encode work and its residual (n x B bytes) to its memory.
inline void add_error_feedback(CompressedTensor& c, double n, double b) {
    c.encode += error_feedback_add(n, b);
    c.encode += error_feedback_store(n, b);
    c.error_feedback_bytes = n * b;
}

/// Elements a sparsifier keeps: k = max(1, ceil(density x n)), where a product within rounding error of an integer
/// counts as that integer (0.07 x 100 is 7.000000000000001 in floating point, and k is 7).
[[nodiscard]] inline double sparse_k(double n, double density) {
    const double x = density * n;
    const double nearest = std::round(x);
    const double k = std::abs(x - nearest) <= 1e-9 * std::max(1.0, x) ? nearest : std::ceil(x);
    return std::max(1.0, k);
}

/// Histogram passes of a radix select over keys of `key_bytes` bytes with 8-bit digits (Alabi et al., "Fast
/// k-selection algorithms for graphics processing units", ACM JEA 2012): one pass per key byte, at least one.
[[nodiscard]] inline double radix_passes(double key_bytes) {
    return std::max(1.0, std::ceil(key_bytes));
}

/// Top-k of `count` keys of `key_bytes` bytes by radix select: each histogram pass reads every key (3 flops: |x|,
/// digit, histogram increment), then one pass reads them again and compacts the k winners (2 flops: compare,
/// compact) into `out_bytes`.
///
/// Real GPU top-k kernels move their passes far below memory bandwidth: each radix pass builds per-block
/// histograms, reduces them in global memory and synchronises before the next digit. PyTorch's torch.topk on an
/// NVIDIA H20 (4.0 TB/s HBM3) takes 3.56 ms for the top values of 100 M fp32 keys (torch 2.6.0; 2.54 ms with the
/// later fix), pytorch/pytorch PR #164459 (commit 3cc8af2d67) table: the 5 passes this model counts (2.0 GB) would
/// take 0.50 ms at full bandwidth, so the kernels run at 0.50 / 3.56 = 0.14 of it. The passes' bytes are charged
/// at that rate (as bytes / 0.14 at the device's sustained memory bandwidth).
inline constexpr double kRadixSelectBandwidthFraction = 0.50 / 3.56;

[[nodiscard]] inline CodecWork radix_select(double count, double key_bytes, double out_bytes) {
    const double passes = radix_passes(key_bytes);
    return work((passes + 1.0) * count * key_bytes / kRadixSelectBandwidthFraction, out_bytes,
                (3.0 * passes + 2.0) * count);
}

/// The matrix view tensor_shape() gives a tensor of `elements` elements whose shape is unknown.
[[nodiscard]] TensorShape matrix_view(std::uint64_t elements);

/// "name (part, part, error feedback)", or just "name" when there is nothing to add.
[[nodiscard]] std::string describe(std::string_view name, std::string_view parts, bool error_feedback);

/// "8-bit values, 16-bit indices, " when either differs from 32, else "".
[[nodiscard]] std::string sparse_bits(const CompressionSpec& spec);

// Parameters several compressors share (descriptors: models/compression.hpp).
/// `density`: the fraction of elements a sparsifier sends (default 0.01, the papers' common setting).
[[nodiscard]] CompressorParam density_param();
/// `index_bits` and `value_bits` of sparse payloads (default 32 each).
[[nodiscard]] std::vector<CompressorParam> sparse_width_params(bool with_index);
/// `params` followed by `error_feedback` (default by `rule`) and `cost_scale`: what every lossy compressor takes.
[[nodiscard]] std::vector<CompressorParam> lossy_params(std::vector<CompressorParam> params, ErrorFeedbackRule rule);

/// The signSGD family (signsgd.cpp): 1 bit per element plus `scales` 4-byte reconstruction values.
[[nodiscard]] CompressedTensor sign_compress(double n, double b, double scales, bool error_feedback);

/// The Top-k family (topk.cpp): encode and per-payload decode of k (value, index) pairs selected by radix select.
[[nodiscard]] CompressedTensor topk_compress(const CompressionSpec& spec, double n, double b);

}  // namespace ddlsim::models::compression_detail
