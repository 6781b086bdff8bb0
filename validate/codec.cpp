// CPU codecs; formats in codec.hpp. The CUDA codecs (nn_cuda.cu) write the same payloads.
#include "validate/codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "sim/rng.hpp"
#include "validate/nn_backends.hpp"

namespace ddlsim::validate {
namespace {

constexpr std::size_t kQsgdBucket = 512;
constexpr float kQsgdLevels = 127.0F;  // 8 bits: sign + 7-bit level

template <typename T>
void put(std::vector<std::uint8_t>& out, std::size_t at, T v) {
    std::memcpy(out.data() + at, &v, sizeof(T));
}
template <typename T>
T get(std::span<const std::uint8_t> in, std::size_t at) {
    T v;
    std::memcpy(&v, in.data() + at, sizeof(T));
    return v;
}

std::size_t topk_k(const CodecSpec& s, std::size_t n) {
    const auto k = static_cast<std::size_t>(std::llround(s.density * static_cast<double>(n)));
    return std::clamp<std::size_t>(k, 1, n);
}

class CpuCodec final : public Codec {
public:
    CpuCodec(CodecSpec spec, std::size_t n, std::uint64_t seed)
        : Codec(spec, n), residual_(spec.error_feedback ? n : 0, 0.0F), p_(n), seed_(seed) {}

    std::vector<std::uint8_t> encode(std::span<const float> g, const float* /*device_g*/) override {
        if (g.size() != n_) throw std::invalid_argument("codec: gradient size differs from the codec's");
        const bool ef = spec_.error_feedback;
        for (std::size_t i = 0; i < n_; ++i) p_[i] = ef ? g[i] + residual_[i] : g[i];
        std::vector<std::uint8_t> out(payload_bytes(spec_, n_));
        switch (spec_.kind) {
            case CodecKind::none: std::memcpy(out.data(), p_.data(), n_ * sizeof(float)); break;
            case CodecKind::fp16:
                out.clear();
                encode_fp16(p_, out);
                break;
            case CodecKind::qsgd: encode_qsgd(out); break;
            case CodecKind::signsgd: encode_sign(out); break;
            case CodecKind::topk: encode_topk(out); break;
        }
        if (ef) {  // e = p - D(C(p))
            std::fill(residual_.begin(), residual_.end(), 0.0F);
            decode_add(out, residual_, -1.0F);
            for (std::size_t i = 0; i < n_; ++i) residual_[i] += p_[i];
        }
        return out;
    }

    void decode_add(std::span<const std::uint8_t> in, std::span<float> acc, float scale) const override {
        if (in.size() != payload_bytes(spec_, n_) || acc.size() != n_)
            throw std::runtime_error(fmt::format("codec {}: payload of {} bytes, expected {}", codec_name(spec_.kind),
                                                 in.size(), payload_bytes(spec_, n_)));
        switch (spec_.kind) {
            case CodecKind::none:
                for (std::size_t i = 0; i < n_; ++i) acc[i] += scale * get<float>(in, 4 * i);
                break;
            case CodecKind::fp16: decode_add_fp16(in, acc, scale); break;
            case CodecKind::qsgd: {
                const std::size_t buckets = (n_ + kQsgdBucket - 1) / kQsgdBucket;
                const std::uint8_t* codes = in.data() + 4 * buckets;
                for (std::size_t b = 0; b < buckets; ++b) {
                    const float unit = scale * get<float>(in, 4 * b) / kQsgdLevels;
                    const std::size_t end = std::min(n_, (b + 1) * kQsgdBucket);
                    for (std::size_t i = b * kQsgdBucket; i < end; ++i) {
                        const float level = static_cast<float>(codes[i] & 0x7F);
                        acc[i] += (codes[i] & 0x80) ? -unit * level : unit * level;
                    }
                }
                break;
            }
            case CodecKind::signsgd: {
                const float v = scale * get<float>(in, 0);
                const std::uint8_t* bits = in.data() + 4;
                for (std::size_t i = 0; i < n_; ++i) acc[i] += ((bits[i >> 3] >> (i & 7)) & 1U) ? -v : v;
                break;
            }
            case CodecKind::topk: {
                const std::size_t k = topk_k(spec_, n_);
                for (std::size_t j = 0; j < k; ++j) {
                    const auto idx = get<std::uint32_t>(in, 4 * j);
                    if (idx >= n_) throw std::runtime_error("topk payload: index out of range");
                    acc[idx] += scale * get<float>(in, 4 * (k + j));
                }
                break;
            }
        }
    }

    double residual_norm() const override {
        double s = 0.0;
        for (float e : residual_) s += double{e} * e;
        return std::sqrt(s);
    }

private:
    void encode_qsgd(std::vector<std::uint8_t>& out) {
        // Element i rounds up with the counter-based draw uniform01(key, i), key one per call: the
        // draws of the CUDA kernel (cuda_kernels.cu, uniform_hash), so both backends write one payload.
        const std::uint64_t key = sim::rng::substream(seed_, ++calls_);
        const std::size_t buckets = (n_ + kQsgdBucket - 1) / kQsgdBucket;
        for (std::size_t b = 0; b < buckets; ++b) {
            const std::size_t first = b * kQsgdBucket, end = std::min(n_, first + kQsgdBucket);
            double ss = 0.0;
            for (std::size_t i = first; i < end; ++i) ss += double{p_[i]} * p_[i];
            const auto norm = static_cast<float>(std::sqrt(ss));
            put(out, 4 * b, norm);
            for (std::size_t i = first; i < end; ++i) {
                std::uint8_t q = 0;
                if (norm > 0.0F) {
                    const float level = std::fabs(p_[i]) / norm * kQsgdLevels;
                    const float floor = std::floor(level);
                    q = static_cast<std::uint8_t>(
                        std::min(kQsgdLevels, floor + (sim::rng::uniform01(key, i) < level - floor ? 1.0F : 0.0F)));
                }
                out[4 * buckets + i] = static_cast<std::uint8_t>(q | (p_[i] < 0.0F ? 0x80 : 0));
            }
        }
    }
    void encode_sign(std::vector<std::uint8_t>& out) {
        double l1 = 0.0;
        for (float v : p_) l1 += std::fabs(v);
        put(out, 0, static_cast<float>(l1 / static_cast<double>(n_)));
        for (std::size_t i = 0; i < n_; ++i)
            if (p_[i] < 0.0F) out[4 + (i >> 3)] |= static_cast<std::uint8_t>(1U << (i & 7));
    }
    void encode_topk(std::vector<std::uint8_t>& out) {
        const std::size_t k = topk_k(spec_, n_);
        order_.resize(n_);
        std::iota(order_.begin(), order_.end(), 0U);
        std::nth_element(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k - 1), order_.end(),
                         [this](std::uint32_t a, std::uint32_t b) { return std::fabs(p_[a]) > std::fabs(p_[b]); });
        std::sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k));
        for (std::size_t j = 0; j < k; ++j) {
            put(out, 4 * j, order_[j]);
            put(out, 4 * (k + j), p_[order_[j]]);
        }
    }

    std::vector<float> residual_;
    std::vector<float> p_;
    std::vector<std::uint32_t> order_;
    std::uint64_t seed_;
    std::uint64_t calls_ = 0;
};

}  // namespace

std::optional<CodecKind> codec_kind(std::string_view compressor) {
    if (compressor == "ef_signsgd") return CodecKind::signsgd;
    for (CodecKind k : {CodecKind::none, CodecKind::fp16, CodecKind::qsgd, CodecKind::signsgd, CodecKind::topk})
        if (compressor == codec_name(k)) return k;
    return std::nullopt;
}

const char* codec_name(CodecKind k) {
    switch (k) {
        case CodecKind::none: return "none";
        case CodecKind::fp16: return "fp16";
        case CodecKind::qsgd: return "qsgd";
        case CodecKind::signsgd: return "signsgd";
        case CodecKind::topk: return "topk";
    }
    return "?";
}

std::string describe(const CodecSpec& s) {
    std::string d = codec_name(s.kind);
    if (s.kind == CodecKind::qsgd) d += fmt::format(" ({} bits", s.bits);
    if (s.kind == CodecKind::topk) d += fmt::format(" (density {}", s.density);
    const bool open = s.kind == CodecKind::qsgd || s.kind == CodecKind::topk;
    if (s.error_feedback) d += open ? ", error feedback" : " (error feedback";
    if (open || s.error_feedback) d += ")";
    return d;
}

bool summable(CodecKind k) {
    return k == CodecKind::none || k == CodecKind::fp16;
}

std::size_t payload_bytes(const CodecSpec& s, std::size_t n) {
    switch (s.kind) {
        case CodecKind::none: return 4 * n;
        case CodecKind::fp16: return 2 * n;
        case CodecKind::qsgd: return 4 * ((n + kQsgdBucket - 1) / kQsgdBucket) + n;
        case CodecKind::signsgd: return 4 + (n + 7) / 8;
        case CodecKind::topk: return 8 * topk_k(s, n);
    }
    return 0;
}

std::uint16_t float_to_half(float f) {
    const auto x = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t sign = (x >> 16) & 0x8000U;
    std::uint32_t mant = x & 0x7FFFFFU;
    const int exp = static_cast<int>((x >> 23) & 0xFFU);
    if (exp == 255) return static_cast<std::uint16_t>(sign | 0x7C00U | (mant != 0 ? 0x200U : 0U));
    const int e = exp - 127 + 15;
    if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7C00U);
    if (e <= 0) {  // half subnormal: m x 2^-24 with m = (1.mant x 2^23) >> (14 - e)
        if (e < -10) return static_cast<std::uint16_t>(sign);
        mant |= 0x800000U;
        const int shift = 14 - e;
        std::uint32_t m = mant >> shift;
        const std::uint32_t rem = mant & ((1U << shift) - 1), half = 1U << (shift - 1);
        if (rem > half || (rem == half && (m & 1U))) ++m;
        return static_cast<std::uint16_t>(sign | m);
    }
    std::uint32_t h = sign | (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
    const std::uint32_t rem = mant & 0x1FFFU;
    if (rem > 0x1000U || (rem == 0x1000U && (h & 1U))) ++h;  // a carry rounds up into the exponent
    return static_cast<std::uint16_t>(h);
}

float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = (std::uint32_t{h} & 0x8000U) << 16;
    const std::uint32_t e = (h >> 10) & 0x1FU, m = h & 0x3FFU;
    if (e == 0) {
        const float v = std::ldexp(static_cast<float>(m), -24);
        return sign != 0 ? -v : v;
    }
    if (e == 31) return std::bit_cast<float>(sign | 0x7F800000U | (m << 13));
    return std::bit_cast<float>(sign | ((e + 112U) << 23) | (m << 13));
}

void encode_fp16(std::span<const float> v, std::vector<std::uint8_t>& out) {
    const std::size_t at = out.size();
    out.resize(at + 2 * v.size());
    for (std::size_t i = 0; i < v.size(); ++i) put(out, at + 2 * i, float_to_half(v[i]));
}

void decode_add_fp16(std::span<const std::uint8_t> payload, std::span<float> acc, float scale) {
    if (payload.size() != 2 * acc.size()) throw std::runtime_error("fp16 payload size differs from the tensor's");
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += scale * half_to_float(get<std::uint16_t>(payload, 2 * i));
}

std::unique_ptr<Codec> make_codec(const CodecSpec& spec, std::size_t n, Backend backend, std::uint64_t seed) {
    if (spec.kind == CodecKind::qsgd && spec.bits != 8)
        throw std::invalid_argument(fmt::format("qsgd: {} bits not supported; expected 8", spec.bits));
    if (spec.kind == CodecKind::topk && !(spec.density > 0.0 && spec.density <= 1.0))
        throw std::invalid_argument(fmt::format("topk: density {} outside (0, 1]", spec.density));
    if (n == 0) throw std::invalid_argument("codec: empty gradient");
    if (backend == Backend::cuda) return make_cuda_codec(spec, n, seed);
    return std::make_unique<CpuCodec>(spec, n, seed);
}

}  // namespace ddlsim::validate
