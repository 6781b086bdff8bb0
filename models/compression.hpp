// Gradient compressors as the simulator sees them (the survey's third dimension,
// Tang, Shi et al., arXiv 2003.06307, §5). For one tensor of n elements a compressor
// says what crosses the wire, how it can be aggregated (summed in flight by the
// configured all-reduce / PS, or gathered because payloads cannot be added), and
// what encoding and decoding cost as compute work. Each compressor lives in its own
// file models/compression/<kind>.cpp with its sources cited at the top.
//
// Cost model (calibratable): codec work is expressed as memory traffic (bytes read and
// written, at the device's memory bandwidth) plus arithmetic (FLOPs, at the device's
// sustained rate), both multiplied by CompressionSpec::cost_scale, which
// `ddlsim calibrate` fits from measured encode/decode times. The pass counts and
// wire-size formulas of every compressor are tabulated in models/compression/README.md.
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/device.hpp"
#include "models/workload.hpp"
#include "sim/units.hpp"

namespace ddlsim::models {

/// How the compressed payloads of the workers are combined.
enum class Aggregation {
    summable,   ///< payloads add element-wise: the configured architecture runs on the payload size
    allgather,  ///< payloads cannot be added (different indices): every worker gathers all n payloads
    gtopk,      ///< gTop-k tree / butterfly: merge and re-select k at every step (Shi et al., ICDCS 2019)
    lowrank     ///< PowerSGD: all-reduce P (rows x r), local work, all-reduce Q (cols x r)
};

/// The `compression` block of a scenario.
struct CompressionSpec {
    std::string kind = "none";  ///< a registered compressor's name (compressors())
    std::uint32_t bits = 8;     ///< qsgd: bits per element including the sign (2..16)
    double density = 0.01;      ///< topk, randomk, dgc, gtopk: fraction k/n of elements sent (0, 1]
    std::uint32_t rank = 4;     ///< powersgd: r
    /// Keep the compression error and add it to the next gradient (forced on for ef_signsgd, onebit, dgc, powersgd).
    bool error_feedback = false;
    std::uint32_t index_bits = 32;  ///< sparse payloads: bits per index
    std::uint32_t value_bits = 32;  ///< sparse payloads: bits per value
    double cost_scale = 1.0;        ///< multiplies all codec work (fitted by calibration)
};

/// A tensor as the compressor sees it: its element count and, for matrix-shaped
/// parameters (PowerSGD), the matrix view rows x cols (rows * cols == elements, or
/// slightly more for a zero-padded view, see tensor_shape(); vectors such as biases
/// have cols == 1 and are sent uncompressed by PowerSGD). rows == 0: unknown, and
/// PowerSGD derives the view from `elements` as tensor_shape() does.
struct TensorShape {
    std::uint64_t elements = 0;
    std::uint64_t rows = 0;
    std::uint64_t cols = 1;
};

/// Codec work, converted to time by codec_time().
struct CodecWork {
    double memory_bytes = 0.0;  ///< bytes read + written
    double flops = 0.0;         ///< arithmetic operations

    CodecWork& operator+=(const CodecWork& o) {
        memory_bytes += o.memory_bytes;
        flops += o.flops;
        return *this;
    }
    friend auto operator<=>(const CodecWork&, const CodecWork&) = default;
};

/// What compressing one tensor of one worker produces.
struct CompressedTensor {
    Aggregation aggregation = Aggregation::summable;
    double payload_bytes = 0.0;  ///< one worker's message for this tensor (summable/allgather/gtopk; 0 for lowrank)
    double p_bytes = 0.0;        ///< lowrank: the P factor (rows x r) in bytes
    double q_bytes = 0.0;        ///< lowrank: the Q factor (cols x r) in bytes
    double dense_bytes = 0.0;    ///< lowrank: bytes of parts sent uncompressed (vectors), summable
    CodecWork encode;            ///< per worker, before sending (incl. error-feedback add/subtract)
    /// To decode and accumulate one received payload: allgather, once per gathered payload; gtopk, once per
    /// merge-and-reselect step; summable and lowrank, once on the reduced result.
    CodecWork decode_per_payload;
    CodecWork between;  ///< lowrank: local work between the P and Q all-reduces (orthogonalisation, Q = MᵀP)
    double error_feedback_bytes = 0.0;  ///< residual memory kept per worker for this tensor
};

class Compressor {
public:
    virtual ~Compressor() = default;
    /// Compresses one tensor of one worker (uncompressed element size `bytes_per_element`).
    [[nodiscard]] virtual CompressedTensor compress(const TensorShape& t, double bytes_per_element) const = 0;
    /// "topk (density 0.01, error feedback)"
    [[nodiscard]] virtual std::string describe() const = 0;
};

/// One parameter of a compressor as scenarios spell it: the loader reads it, the schema publishes it (with its
/// default), the resolved scenario echoes it. It sets exactly one CompressionSpec field.
struct CompressorParam {
    enum class Type { integer, number, boolean };
    std::string_view key;
    Type type = Type::number;
    double min = 0.0;            ///< smallest value (integer, number)
    bool min_exclusive = false;  ///< min itself is out of range
    double max = 0.0;            ///< largest value (integer, number)
    double default_value = 0.0;  ///< booleans: 0 or 1
    std::string_view unit;       ///< "bits", "fraction", ""
    std::string_view description;
    std::uint32_t CompressionSpec::*integer = nullptr;
    double CompressionSpec::*number = nullptr;
    bool CompressionSpec::*boolean = nullptr;
};

/// Error feedback (Stich et al., NeurIPS 2018; Karimireddy et al., ICML 2019) as a compressor's paper defines it.
enum class ErrorFeedbackRule {
    none,      ///< no compression error to keep (the key is refused)
    optional,  ///< off unless the scenario asks
    on,        ///< on unless the scenario says false (the paper's own setting)
    forced     ///< part of the method: false is refused
};

/// Everything the project knows about one compressor, in the compressor's own file; registry.cpp lists them.
/// The loader, the schema, the resolved scenario, the event and memory estimates and `validate` read these
/// instead of lists of names.
struct CompressorInfo {
    std::string_view name;                            ///< as scenarios spell it
    std::string_view description;                     ///< one line, with the paper
    Aggregation aggregation = Aggregation::summable;  ///< how the workers' payloads combine
    std::vector<CompressorParam> params;              ///< the keys it takes besides `kind`
    ErrorFeedbackRule error_feedback = ErrorFeedbackRule::optional;
    /// Architectures it runs on (empty: every one); BytePS servers need summable payloads.
    std::vector<std::string_view> architectures;
    bool byteps = true;
    /// Collectives per synchronisation (PowerSGD: P, Q and the dense parts).
    double collectives_per_sync = 1.0;
    /// `validate` has a real implementation to replay it (validate/codec.hpp, by this name).
    bool replayable = false;
    /// Parameters the replay runs at one value only (qsgd: 8 bits): other values are simulated, not replayed.
    std::vector<std::pair<std::string_view, double>> replay_fixed;
    std::unique_ptr<Compressor> (*make)(const CompressionSpec&) = nullptr;

    [[nodiscard]] const CompressorParam* param(std::string_view key) const;
};

/// Every compressor, in registry order ("none" first).
[[nodiscard]] const std::vector<const CompressorInfo*>& compressors();
/// The compressor of that name, or nullptr.
[[nodiscard]] const CompressorInfo* find_compressor(std::string_view name);
/// The compressor of a spec; throws std::invalid_argument for an unknown name.
[[nodiscard]] const CompressorInfo& compressor_info(const CompressionSpec& spec);
/// A spec of that compressor with every parameter at its default (error feedback by its rule).
[[nodiscard]] CompressionSpec default_spec(const CompressorInfo& info);

/// The compressor of a spec (kind none: dense, summable, no work). Throws std::invalid_argument on an unknown
/// kind or a parameter outside its descriptor's range (cost_scale negative or not finite).
[[nodiscard]] std::unique_ptr<Compressor> make_compressor(const CompressionSpec& spec);

/// The matrix view of a workload tensor: rows x cols as given when both are set (cols 1 for vectors);
/// otherwise a vector when params < 1024, else a near-square factorisation rows x params / rows with rows
/// the largest divisor of params not above sqrt(params), provided rows >= sqrt(params) / 4, else
/// floor(sqrt(params)) x ceil(params / rows), a view zero-padded by fewer than rows elements.
/// Throws std::invalid_argument when a given shape does not hold exactly the tensor's parameters.
[[nodiscard]] TensorShape tensor_shape(const Tensor& t);

/// Seconds of codec work on a device: cost_scale x (memory_bytes / memory bandwidth + flops / sustained rate).
[[nodiscard]] sim::Time codec_time(const CodecWork& w, const DeviceSpec& d, double cost_scale);

}  // namespace ddlsim::models
