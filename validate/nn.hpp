// A small neural-network library for real-training validation, independent of any transport:
// a Model owns a flat parameter vector and a flat gradient vector (layer after layer, weights
// then bias), computes the mean softmax cross-entropy loss and its gradient on a batch, applies
// an SGD step, measures accuracy, and times every layer's forward, backward and update.
//
// Two models of Fashion-MNIST (28x28 grey images, 10 classes):
//   mlp  784-256-128-10, ReLU                      235,146 parameters
//   cnn  conv3x3(1->16)-ReLU-maxpool2, conv3x3(16->32)-ReLU-maxpool2, linear 1568->10
//                                                   20,490 parameters
// Convolutions are stride 1 with padding 1, computed as im2col + GEMM (Chellapilla et al. 2006).
// Two backends share this interface: CPU (Eigen) and CUDA (cuBLAS + own kernels, when built).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "validate/dataset.hpp"

namespace ddlsim::validate {

enum class ModelKind { mlp, cnn };
enum class Backend { cpu, cuda };

[[nodiscard]] const char* model_name(ModelKind k);
[[nodiscard]] const char* backend_name(Backend b);

enum class OpKind { linear, conv, relu, maxpool };

/// One operation; shapes are per sample (channels x height x width; a linear layer's input is
/// flattened). Parametric ops own [offset, offset + weights + bias) of the flat vectors.
struct OpSpec {
    OpKind kind = OpKind::relu;
    std::uint32_t in_c = 0, in_h = 1, in_w = 1;
    std::uint32_t out_c = 0, out_h = 1, out_w = 1;
    std::size_t offset = 0;
    std::size_t weights = 0;
    std::size_t bias = 0;
    std::uint32_t layer = 0;  ///< the parametric layer this op is timed with

    [[nodiscard]] std::size_t in_size() const { return std::size_t{in_c} * in_h * in_w; }
    [[nodiscard]] std::size_t out_size() const { return std::size_t{out_c} * out_h * out_w; }
};

/// A parametric layer with the activation and pooling that follow it, as the simulator sees it.
struct LayerInfo {
    std::string name;
    std::size_t params = 0;
    std::size_t offset = 0;
    double fwd_flops = 0.0;  ///< per sample (multiply-add = 2 FLOPs); backward does twice this
};

struct ModelSpec {
    ModelKind kind = ModelKind::mlp;
    std::vector<OpSpec> ops;
    std::vector<LayerInfo> layers;
    std::size_t params = 0;
    std::size_t input = 0;  ///< floats per sample
    std::uint32_t classes = 10;
};

[[nodiscard]] ModelSpec model_spec(ModelKind k);

/// He-uniform weights (He et al., ICCV 2015), zero biases; deterministic in `seed`.
[[nodiscard]] std::vector<float> initial_params(const ModelSpec& spec, std::uint64_t seed);

/// Accumulated seconds per layer since the last reset.
struct LayerTiming {
    double fwd_s = 0.0;
    double bwd_s = 0.0;
    double update_s = 0.0;
};

class Model {
public:
    explicit Model(ModelSpec spec) : spec_(std::move(spec)), timings_(spec_.layers.size()) {}
    virtual ~Model() = default;
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    [[nodiscard]] const ModelSpec& spec() const { return spec_; }
    [[nodiscard]] std::size_t size() const { return spec_.params; }
    [[nodiscard]] virtual Backend backend() const = 0;

    /// Replaces the parameters (size() floats).
    virtual void set_params(std::span<const float> p) = 0;
    /// Copies the parameters into `out` (size() floats).
    virtual void get_params(std::span<float> out) const = 0;
    /// Forward and backward pass on `b`: returns the mean cross-entropy loss and leaves
    /// d loss / d parameters in gradient().
    virtual double forward_backward(const Batch& b) = 0;
    /// The gradient of the last forward_backward, in host memory.
    [[nodiscard]] virtual std::span<const float> gradient() = 0;
    /// The same gradient in device memory (CUDA), or nullptr (CPU).
    [[nodiscard]] virtual const float* device_gradient() const { return nullptr; }
    /// params -= lr * g, where g has size() floats (the averaged or decompressed gradient).
    virtual void apply_gradient(std::span<const float> g, float lr) = 0;
    /// Fraction of `d` classified correctly.
    [[nodiscard]] virtual double evaluate(const Dataset& d) = 0;
    /// Mean cross-entropy of `b` without touching the gradient.
    [[nodiscard]] virtual double loss(const Batch& b) = 0;

    /// With timing on, every layer's forward, backward and update is timed (CUDA: synchronising).
    void set_timing(bool on) { timing_ = on; }
    [[nodiscard]] const std::vector<LayerTiming>& timings() const { return timings_; }
    void reset_timings() { timings_.assign(spec_.layers.size(), LayerTiming{}); }

protected:
    ModelSpec spec_;
    bool timing_ = false;
    std::vector<LayerTiming> timings_;
};

/// A model of `kind` on `backend` with initial_params(seed). Throws std::runtime_error when the
/// backend is not available (CUDA not built, or no usable GPU), with the reason.
[[nodiscard]] std::unique_ptr<Model> make_model(ModelKind kind, Backend backend, std::uint64_t seed);

/// Whether `backend` can run here; when not, `why` says why.
[[nodiscard]] bool backend_available(Backend backend, std::string* why = nullptr);

/// Seconds since an arbitrary epoch (steady clock).
[[nodiscard]] double now_s();

}  // namespace ddlsim::validate
