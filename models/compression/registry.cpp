// The compressor registry: scheme names, parameter validation and dispatch to the one-file-per-scheme factories,
// plus the two helpers every compressor user needs: the matrix view of a tensor (PowerSGD) and the time of codec
// work on a device (a roofline: memory traffic at the memory bandwidth plus arithmetic at the sustained rate).
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "models/compression/codec_detail.hpp"

namespace ddlsim::models {
namespace {

namespace detail = compression_detail;

}  // namespace

// The registry: one line per compressor. models/compression/<name>.cpp defines
// `const CompressorInfo& compression_detail::<name>_compressor()`, its descriptor (name, parameters with their
// ranges and defaults, properties, factory); everything else iterates compressors().
#define DDLSIM_COMPRESSORS(X) \
    X(none)                   \
    X(fp16)                   \
    X(qsgd)                   \
    X(terngrad)               \
    X(signsgd)                \
    X(ef_signsgd)             \
    X(onebit)                 \
    X(topk)                   \
    X(randomk)                \
    X(dgc)                    \
    X(gtopk)                  \
    X(powersgd)

namespace compression_detail {
#define DDLSIM_DECLARE_COMPRESSOR(name) const CompressorInfo& name##_compressor();
DDLSIM_COMPRESSORS(DDLSIM_DECLARE_COMPRESSOR)
#undef DDLSIM_DECLARE_COMPRESSOR
}  // namespace compression_detail

const std::vector<const CompressorInfo*>& compressors() {
#define DDLSIM_LIST_COMPRESSOR(name) &compression_detail::name##_compressor(),
    static const std::vector<const CompressorInfo*> all{DDLSIM_COMPRESSORS(DDLSIM_LIST_COMPRESSOR)};
#undef DDLSIM_LIST_COMPRESSOR
    return all;
}
#undef DDLSIM_COMPRESSORS

const CompressorParam* CompressorInfo::param(std::string_view key) const {
    for (const CompressorParam& p : params)
        if (p.key == key) return &p;
    return nullptr;
}

const CompressorInfo* find_compressor(std::string_view name) {
    for (const CompressorInfo* c : compressors())
        if (c->name == name) return c;
    return nullptr;
}

const CompressorInfo& compressor_info(const CompressionSpec& spec) {
    const CompressorInfo* c = find_compressor(spec.kind);
    if (c == nullptr) throw std::invalid_argument(fmt::format("compression kind: unknown kind \"{}\"", spec.kind));
    return *c;
}

CompressionSpec default_spec(const CompressorInfo& info) {
    CompressionSpec spec;
    spec.kind = std::string(info.name);
    for (const CompressorParam& p : info.params) {
        if (p.integer != nullptr) spec.*p.integer = static_cast<std::uint32_t>(p.default_value);
        if (p.number != nullptr) spec.*p.number = p.default_value;
        if (p.boolean != nullptr) spec.*p.boolean = p.default_value != 0.0;
    }
    return spec;
}

namespace {

/// Below this many elements an unshaped tensor is treated as a vector (PowerSGD sends it dense anyway).
constexpr std::uint64_t k_min_matrix_elements = 1024;

// Every parameter the compressor takes within its descriptor's range.
void validate(const CompressorInfo& info, const CompressionSpec& spec) {
    if (!std::isfinite(spec.cost_scale) || spec.cost_scale < 0.0)
        throw std::invalid_argument(
            fmt::format("compression cost_scale: expected a finite number >= 0, got {}", spec.cost_scale));
    for (const CompressorParam& p : info.params) {
        double v = 0.0;
        if (p.integer != nullptr)
            v = spec.*p.integer;
        else if (p.number != nullptr)
            v = spec.*p.number;
        else
            continue;
        if (p.key == "cost_scale") continue;  // checked above (0 allowed here: codec work switched off)
        const bool low = p.min_exclusive ? !(v > p.min) : !(v >= p.min);
        if (low || !(v <= p.max) || !std::isfinite(v))
            throw std::invalid_argument(fmt::format("compression {}: expected {}{} to {:g}{}, got {:g}", p.key,
                                                    p.min_exclusive ? "more than " : "", p.min, p.max,
                                                    p.unit.empty() ? "" : fmt::format(" {}", p.unit), v));
    }
    if (info.error_feedback == ErrorFeedbackRule::forced && !spec.error_feedback)
        throw std::invalid_argument(fmt::format("compression {}: error feedback is part of the method", info.name));
}

}  // namespace

std::unique_ptr<Compressor> make_compressor(const CompressionSpec& spec) {
    const CompressorInfo& info = compressor_info(spec);
    validate(info, spec);
    return info.make(spec);
}

TensorShape tensor_shape(const Tensor& t) {
    if (t.params < 0) throw std::invalid_argument(fmt::format("tensor {}: negative parameter count", t.name));
    if (t.rows == 0 || t.cols == 0) return detail::matrix_view(static_cast<std::uint64_t>(t.params));
    if (t.rows < 0 || t.cols < 0 || t.params % t.cols != 0 || t.params / t.cols != t.rows)
        throw std::invalid_argument(
            fmt::format("tensor {}: shape {} x {} does not hold its {} parameters", t.name, t.rows, t.cols, t.params));
    return {static_cast<std::uint64_t>(t.params), static_cast<std::uint64_t>(t.rows),
            static_cast<std::uint64_t>(t.cols)};
}

sim::Time codec_time(const CodecWork& w, const DeviceSpec& d, double cost_scale) {
    if (!std::isfinite(cost_scale) || cost_scale < 0.0)
        throw std::invalid_argument(fmt::format("codec cost_scale: expected a finite number >= 0, got {}", cost_scale));
    double seconds = 0.0;
    if (w.memory_bytes > 0.0) {
        if (!(d.memory_bandwidth.bytes_per_s() > 0.0))
            throw std::invalid_argument("codec time: the device has no memory bandwidth");
        seconds += w.memory_bytes / d.memory_bandwidth.bytes_per_s();
    }
    if (w.flops > 0.0) {
        if (!(d.sustained().per_s() > 0.0)) throw std::invalid_argument("codec time: the device has no FLOP rate");
        seconds += w.flops / d.sustained().per_s();
    }
    return sim::Time::seconds(cost_scale * seconds);
}

namespace compression_detail {

TensorShape matrix_view(std::uint64_t elements) {
    if (elements < k_min_matrix_elements) return {elements, elements, 1};
    auto root = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(elements)));
    while (root * root > elements) --root;
    while ((root + 1) * (root + 1) <= elements) ++root;
    // The largest divisor not above sqrt(n), if it is at least sqrt(n) / 4 (16 rows^2 >= n): an exact view.
    const std::uint64_t min_square = (elements + 15) / 16;
    for (std::uint64_t rows = root; rows * rows >= min_square; --rows) {
        if (elements % rows == 0) return {elements, rows, elements / rows};
    }
    return {elements, root, (elements + root - 1) / root};  // near-square, zero-padded by fewer than root elements
}

std::string describe(std::string_view name, std::string_view parts, bool error_feedback) {
    std::string inside(parts);
    if (error_feedback) inside += inside.empty() ? "error feedback" : ", error feedback";
    return inside.empty() ? std::string(name) : fmt::format("{} ({})", name, inside);
}

CompressorParam density_param() {
    CompressorParam p{"density",  CompressorParam::Type::number,
                      0.0,        true,
                      1.0,        0.01,
                      "fraction", "fraction of elements sent, k = max(1, ceil(density n))"};
    p.number = &CompressionSpec::density;
    return p;
}

std::vector<CompressorParam> sparse_width_params(bool with_index) {
    std::vector<CompressorParam> out;
    if (with_index) {
        CompressorParam i{"index_bits", CompressorParam::Type::integer, 1, false, 64, 32, "bits", "bits per index"};
        i.integer = &CompressionSpec::index_bits;
        out.push_back(i);
    }
    CompressorParam v{"value_bits", CompressorParam::Type::integer, 1, false, 64, 32, "bits", "bits per value"};
    v.integer = &CompressionSpec::value_bits;
    out.push_back(v);
    return out;
}

std::vector<CompressorParam> lossy_params(std::vector<CompressorParam> params, ErrorFeedbackRule rule) {
    CompressorParam ef{"error_feedback",
                       CompressorParam::Type::boolean,
                       0,
                       false,
                       1,
                       rule == ErrorFeedbackRule::on || rule == ErrorFeedbackRule::forced ? 1.0 : 0.0,
                       "",
                       rule == ErrorFeedbackRule::forced
                           ? "keep the compression error and add it to the next gradient (part of the method: true)"
                           : "keep the compression error and add it to the next gradient"};
    ef.boolean = &CompressionSpec::error_feedback;
    params.push_back(ef);
    CompressorParam cost{"cost_scale", CompressorParam::Type::number,
                         0.0,          true,
                         1e6,          1.0,
                         "",           "multiplies the encode/decode work (calibration)"};
    cost.number = &CompressionSpec::cost_scale;
    params.push_back(cost);
    return params;
}

std::string sparse_bits(const CompressionSpec& spec) {
    if (spec.value_bits == 32 && spec.index_bits == 32) return "";
    return fmt::format("{}-bit values, {}-bit indices, ", spec.value_bits, spec.index_bits);
}

}  // namespace compression_detail
}  // namespace ddlsim::models
