// The compressor registry: scheme names, parameter validation and dispatch to the one-file-per-scheme factories,
// plus the two helpers every compressor user needs: the matrix view of a tensor (PowerSGD) and the time of codec
// work on a device (a roofline: memory traffic at the memory bandwidth plus arithmetic at the sustained rate).
#include <array>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "models/compression/codec_detail.hpp"

namespace ddlsim::models {
namespace {

namespace detail = compression_detail;

using Factory = std::unique_ptr<Compressor> (*)(const CompressionSpec&);

constexpr std::array<Factory, 12> k_factories{
    detail::make_none,    detail::make_fp16,       detail::make_qsgd,   detail::make_terngrad,
    detail::make_signsgd, detail::make_ef_signsgd, detail::make_onebit, detail::make_topk,
    detail::make_randomk, detail::make_dgc,        detail::make_gtopk,  detail::make_powersgd,
};

/// Below this many elements an unshaped tensor is treated as a vector (PowerSGD sends it dense anyway).
constexpr std::uint64_t k_min_matrix_elements = 1024;

[[nodiscard]] bool is_sparse(CompressionKind k) {
    return k == CompressionKind::topk || k == CompressionKind::randomk || k == CompressionKind::dgc ||
           k == CompressionKind::gtopk;
}

void check_bits(std::string_view what, std::uint32_t bits) {
    if (bits < 1 || bits > 64)
        throw std::invalid_argument(fmt::format("compression {}: expected 1 to 64 bits, got {}", what, bits));
}

void validate(const CompressionSpec& spec) {
    const auto index = static_cast<std::size_t>(spec.kind);
    if (index >= k_factories.size())
        throw std::invalid_argument(fmt::format("compression kind: unknown kind {}", index));
    if (!std::isfinite(spec.cost_scale) || spec.cost_scale < 0.0)
        throw std::invalid_argument(
            fmt::format("compression cost_scale: expected a finite number >= 0, got {}", spec.cost_scale));
    if (spec.kind == CompressionKind::qsgd && (spec.bits < 2 || spec.bits > 16))
        throw std::invalid_argument(fmt::format("compression bits: expected 2 to 16 for qsgd, got {}", spec.bits));
    if (is_sparse(spec.kind)) {
        if (!(spec.density > 0.0 && spec.density <= 1.0))
            throw std::invalid_argument(
                fmt::format("compression density: expected a fraction in (0, 1], got {}", spec.density));
        check_bits("value_bits", spec.value_bits);
        if (spec.kind != CompressionKind::randomk) check_bits("index_bits", spec.index_bits);
    }
    if (spec.kind == CompressionKind::powersgd && spec.rank == 0)
        throw std::invalid_argument("compression rank: expected a rank of at least 1, got 0");
}

}  // namespace

std::unique_ptr<Compressor> make_compressor(const CompressionSpec& spec) {
    validate(spec);
    return k_factories.at(static_cast<std::size_t>(spec.kind))(spec);
}

const std::vector<std::string_view>& compression_kind_names() {
    static const std::vector<std::string_view> names{"none",   "fp16", "qsgd",    "terngrad", "signsgd", "ef_signsgd",
                                                     "onebit", "topk", "randomk", "dgc",      "gtopk",   "powersgd"};
    return names;
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

std::string sparse_bits(const CompressionSpec& spec) {
    if (spec.value_bits == 32 && spec.index_bits == 32) return "";
    return fmt::format("{}-bit values, {}-bit indices, ", spec.value_bits, spec.index_bits);
}

}  // namespace compression_detail
}  // namespace ddlsim::models
