// Real gradient compressors with optional error feedback, applied to the flat gradient of a
// worker (the survey's compression dimension, Tang, Shi et al., arXiv 2003.06307, §5):
//   fp16     IEEE half precision, round to nearest even                      2 bytes per element
//   qsgd     stochastic quantisation to b = 8 bits (sign + 7-bit level) per element, with one fp32
//            norm per bucket of 512 elements (Alistarh et al., NeurIPS 2017)      ~1 byte per element
//   signsgd  the sign of every element (1 bit) times one fp32 scale = mean |p| (scaled sign of
//            Karimireddy et al., ICML 2019; Bernstein et al., ICML 2018 without the scale)
//   topk     the k = density * n largest |p| as (uint32 index, fp32 value) pairs (Aji & Heafield 2017)
// Error feedback (Seide et al. 2014; Stich et al., NeurIPS 2018): p = g + e, send C(p), keep
// e = p - D(C(p)). Without it p = g and nothing is kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "validate/nn.hpp"

namespace ddlsim::validate {

enum class CodecKind { none, fp16, qsgd, signsgd, topk };

struct CodecSpec {
    CodecKind kind = CodecKind::none;
    std::uint32_t bits = 8;  ///< qsgd: bits per element including the sign (8 only)
    double density = 0.01;   ///< topk: k / n
    bool error_feedback = false;
};

/// The scheme's name as scenarios spell it ("none", "fp16", "qsgd", "signsgd", "topk").
[[nodiscard]] const char* codec_name(CodecKind k);
/// The real codec of a compressor name (models/compression descriptors spell it the same), if there is one;
/// "ef_signsgd" is signsgd with error feedback.
[[nodiscard]] std::optional<CodecKind> codec_kind(std::string_view compressor);
/// "topk (density 0.01, error feedback)".
[[nodiscard]] std::string describe(const CodecSpec& s);
/// Whether payloads of this scheme are summed in flight by a ring all-reduce or a server (decode,
/// add, re-encode: fp16, qsgd, signsgd, as the simulator models them); top-k payloads are all-gathered.
[[nodiscard]] bool summable(CodecKind k);
/// Bytes of one payload for a gradient of `n` elements.
[[nodiscard]] std::size_t payload_bytes(const CodecSpec& s, std::size_t n);

/// One worker's compressor and its error-feedback residual.
class Codec {
public:
    Codec(CodecSpec spec, std::size_t n) : spec_(spec), n_(n) {}
    virtual ~Codec() = default;
    Codec(const Codec&) = delete;
    Codec& operator=(const Codec&) = delete;

    /// Compresses the gradient `g` (n floats in host memory; `device_g`, when not null, is the
    /// same gradient in device memory, which a CUDA codec reads instead).
    [[nodiscard]] virtual std::vector<std::uint8_t> encode(std::span<const float> g,
                                                           const float* device_g = nullptr) = 0;
    /// acc += scale * decode(payload); acc has n floats in host memory.
    virtual void decode_add(std::span<const std::uint8_t> payload, std::span<float> acc, float scale) const = 0;
    /// ||e||_2 of the error-feedback residual (0 without error feedback).
    [[nodiscard]] virtual double residual_norm() const = 0;

    [[nodiscard]] const CodecSpec& spec() const { return spec_; }
    [[nodiscard]] std::size_t size() const { return n_; }

protected:
    CodecSpec spec_;
    std::size_t n_;
};

/// A codec for gradients of `n` elements on `backend`; `seed` drives qsgd's stochastic rounding.
[[nodiscard]] std::unique_ptr<Codec> make_codec(const CodecSpec& spec, std::size_t n, Backend backend,
                                                std::uint64_t seed);

/// fp16 helpers for summable payloads: float -> IEEE half (round to nearest even) and back.
[[nodiscard]] std::uint16_t float_to_half(float f);
[[nodiscard]] float half_to_float(std::uint16_t h);
/// Appends `v` as fp16 to `out`.
void encode_fp16(std::span<const float> v, std::vector<std::uint8_t>& out);
/// acc[i] += scale * half(payload[i]).
void decode_add_fp16(std::span<const std::uint8_t> payload, std::span<float> acc, float scale);

}  // namespace ddlsim::validate
