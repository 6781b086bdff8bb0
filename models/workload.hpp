// A training workload as frameworks see it: layers in forward order, each with
// its parameter tensors (one gradient tensor per parameter tensor) and its
// forward FLOPs per sample. Built-in workloads are derived from the published
// architectures in catalog.cpp; custom ones come from the scenario.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

/// One layer: its tensors, its forward FLOPs per sample, and optional exact times.
struct Layer {
    std::string name;
    std::vector<Tensor> tensors;
    double fwd_flops = 0.0;             ///< forward FLOPs per sample (2 x MACs)
    std::optional<sim::Time> fwd_time;  ///< per iteration (whole local batch), used exactly when set
    std::optional<sim::Time> bwd_time;
    std::optional<sim::Time> update_time;

    [[nodiscard]] std::int64_t params() const;
};

/// A model: its layers in forward order.
struct Workload {
    std::string name;
    std::string input;  ///< what one sample is, e.g. "224x224 RGB image"
    std::vector<Layer> layers;

    [[nodiscard]] std::int64_t params() const;
    [[nodiscard]] std::size_t tensor_count() const;
    [[nodiscard]] double fwd_flops() const;  ///< per sample, all layers
};

/// Names of the built-in workloads, in catalog order.
[[nodiscard]] const std::vector<std::string>& builtin_workload_names();
/// The built-in workload `name`, or nullopt when there is none.
[[nodiscard]] std::optional<Workload> builtin_workload(std::string_view name);

}  // namespace ddlsim::models
