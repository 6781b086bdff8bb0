// A training workload as frameworks see it: layers in forward order, each with
// its parameter tensors (one gradient tensor per parameter tensor) and its
// forward FLOPs per sample. Built-in workloads are derived from the published
// architectures in catalog.cpp; custom ones come from the scenario.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/enum_info.hpp"
#include "sim/units.hpp"

namespace ddlsim::models {

/// One parameter tensor (and so one gradient tensor), with its matrix view when known: a weight of `rows` x `cols`
/// (rows * cols == params; a convolution's out_channels x in_channels * kh * kw, a dense layer's out x in), a vector
/// (bias, norm scale) rows = params and cols = 1, and 0 x 0 when unknown (see models::tensor_shape).
struct Tensor {
    std::string name;
    std::int64_t params = 0;
    std::int64_t rows = 0;
    std::int64_t cols = 0;
};

/// What a piece of a layer computes; decides whether it runs at a tensor-core rate or at memory bandwidth.
enum class PartKind { matmul, conv, attention, norm, elementwise, embedding, pooling };

inline constexpr sim::EnumEntry<PartKind> k_part_kinds[]{
    {PartKind::matmul, "matmul", "dense matrix products at the tensor rate"},
    {PartKind::conv, "conv", "convolutions at the tensor rate (Winograd for 3x3 stride 1 on CUDA cores)"},
    {PartKind::attention, "attention", "attention scores and context at the tensor rate"},
    {PartKind::norm, "norm", "normalisation at memory bandwidth"},
    {PartKind::elementwise, "elementwise", "activations and additions at memory bandwidth"},
    {PartKind::embedding, "embedding", "table look-ups at memory bandwidth"},
    {PartKind::pooling, "pooling", "pooling at memory bandwidth"}};
constexpr std::span<const sim::EnumEntry<PartKind>> enum_entries(PartKind) { return k_part_kinds; }

/// The scenario spelling of `k` ("matmul", "conv", ...), and all of them in table order.
[[nodiscard]] std::string_view part_kind_name(PartKind k);
[[nodiscard]] const std::vector<std::string>& part_kind_names();

/// The geometry of a 2-D convolution part, for the choice of algorithm (models/compute.cpp: Winograd applies to
/// 3 x 3 stride-1 convolutions); all 0 when the part is not a convolution or its shape is unknown.
struct ConvGeometry {
    int kernel_h = 0;
    int kernel_w = 0;
    int stride = 0;
    double in_channels = 0.0;
    double out_h = 0.0;  ///< output height and width (per sample)
    double out_w = 0.0;
};

/// One kernel-sized piece of a layer, per sample, forward pass. matmul/conv/attention parts are GEMMs (FLOPs at
/// the tensor rate, bounded below by their own memory traffic); the others only move memory.
struct LayerPart {
    PartKind kind = PartKind::matmul;
    double flops = 0.0;           ///< forward FLOPs per sample (2 x MACs)
    double activations = 0.0;     ///< activation elements read + written per sample
    double weights = 0.0;         ///< weight elements read once per pass (not per sample)
    double bytes = 0.0;           ///< bytes per sample given as such (custom layers' fwd_bytes), any precision
    bool fp32_under_amp = false;  ///< autocast runs it in FP32 (layer_norm, softmax: 4-byte elements)
    // The GEMM's output shape for wave quantization: (rows_per_sample x batch) x cols, `gemms_per_sample` of them
    // (attention heads); 0 when unknown.
    double rows_per_sample = 0.0;
    double cols = 0.0;
    double gemms_per_sample = 0.0;
    ConvGeometry conv{};  ///< convolutions of the built-in CNNs; output channels are `cols`
};

/// One layer: its tensors, its forward FLOPs per sample, and optional exact times.
struct Layer {
    std::string name;
    std::vector<Tensor> tensors;
    double fwd_flops = 0.0;             ///< forward FLOPs per sample (2 x MACs)
    std::optional<sim::Time> fwd_time;  ///< per iteration (whole local batch), used exactly when set
    std::optional<sim::Time> bwd_time;
    std::optional<sim::Time> update_time;
    /// The kernels it runs (built-in models); empty means one matmul part of fwd_flops (custom layers), or
    /// one part of `kind` when a custom layer names it. Part FLOPs sum to fwd_flops.
    std::vector<LayerPart> parts;

    [[nodiscard]] std::int64_t params() const;
};

/// The optimizer family a model usually trains with, which sets the default optimizer (models/compute.hpp).
enum class ModelFamily { cnn, transformer, custom };

/// A model: its layers in forward order.
struct Workload {
    std::string name;
    std::string input;  ///< what one sample is, e.g. "224x224 RGB image"
    std::vector<Layer> layers;
    ModelFamily family = ModelFamily::custom;

    [[nodiscard]] std::int64_t params() const;
    [[nodiscard]] std::size_t tensor_count() const;
    [[nodiscard]] double fwd_flops() const;  ///< per sample, all layers
};

/// Names of the built-in workloads, in catalog order.
[[nodiscard]] const std::vector<std::string>& builtin_workload_names();
/// The built-in workload `name`, or nullopt when there is none.
[[nodiscard]] std::optional<Workload> builtin_workload(std::string_view name);

}  // namespace ddlsim::models
