// The compute model: per-layer roofline at the device's precision, and the optimizer's memory traffic.
// The formulas and the sources of every constant are at the top of models/compute.cpp.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/device.hpp"
#include "models/workload.hpp"
#include "sim/units.hpp"

namespace ddlsim::models {

/// The optimizer's update, which streams its state through memory once per step.
enum class Optimizer { sgd, momentum, adam, adamw, lamb };

inline constexpr sim::EnumEntry<Optimizer> k_optimizers[]{
    {Optimizer::sgd, "sgd", "plain SGD: reads the gradient, updates the weights"},
    {Optimizer::momentum, "momentum", "SGD with momentum: one state tensor"},
    {Optimizer::adam, "adam", "Adam (Kingma & Ba, ICLR 2015): two state tensors"},
    {Optimizer::adamw, "adamw", "Adam with decoupled weight decay (Loshchilov & Hutter, ICLR 2019)"},
    {Optimizer::lamb, "lamb", "LAMB (You et al., ICLR 2020): Adam's state plus per-layer trust ratios"}};
constexpr std::span<const sim::EnumEntry<Optimizer>> enum_entries(Optimizer) {
    return k_optimizers;
}

/// "sgd", "momentum", ... (the scenario spelling), and all of them in table order.
[[nodiscard]] std::string_view optimizer_name(Optimizer o);
[[nodiscard]] const std::vector<std::string>& optimizer_names();
/// What the family usually trains with: SGD with momentum for CNNs, AdamW for transformers (compute.cpp).
[[nodiscard]] Optimizer default_optimizer(ModelFamily family);
/// Bytes read + written per parameter by one update, with `gradient_bytes` per gradient element.
[[nodiscard]] double optimizer_bytes_per_param(Optimizer o, Precision p, double gradient_bytes);
/// FP32 state tensors the optimizer keeps per parameter (momentum 1, Adam's moments 2; the memory estimate).
[[nodiscard]] double optimizer_state_tensors(Optimizer o);

struct LayerTimes {
    sim::Time fwd;
    sim::Time bwd;
    sim::Time update;
    /// Of bwd, the weight gradients' share (the zero-bubble schedules run it apart): each GEMM with weights computes
    /// its input gradient and its weight gradient in two kernels of its forward's FLOPs, the rest of a backward is
    /// input gradients; a custom layer's backward splits in even halves.
    sim::Time wgrad;
    /// Of fwd (and of bwd), the shares of the layer's leading and trailing GEMMs with weights (a transformer block's
    /// column- and row-parallel GEMMs, which tensor parallelism's overlapped collectives run beside; 0 where the
    /// layer's kernels are not known or it starts or ends otherwise).
    double head = 0.0, tail = 0.0;
};

/// What one kind of part costs per iteration (before samples_per_s scaling): for the visible assumptions.
struct KindTotals {
    double flops = 0.0;    ///< forward + backward FLOPs per iteration
    double seconds = 0.0;  ///< forward + backward seconds per iteration
};

/// Per-layer compute times of one iteration of one worker.
struct ComputeProfile {
    std::vector<LayerTimes> layers;  ///< forward order
    sim::Time fwd;                   ///< totals over layers
    sim::Time bwd;
    sim::Time update;
    std::array<KindTotals, 7> kinds{};  ///< by PartKind, derived parts only, unscaled
    double scale = 1.0;                 ///< the samples_per_s factor applied to derived times (1 without it)
    /// Gradient accumulation: the forward and backward passes of the k - 1 micro-batches before the last one of
    /// an optimizer step, (k - 1)(fwd + bwd), with no communication (DDP's no_sync); zero without accumulation.
    sim::Time accumulation;

    /// One optimizer step: every micro-batch's forward and backward, then the update.
    [[nodiscard]] sim::Time iteration() const { return accumulation + fwd + bwd + update; }
};

/// Derives the compute profile; throws std::invalid_argument when samples_per_s
/// cannot be met (all times explicit, explicit times already too long, or no work).
/// Compute profiles built so far in this process (every thread): a run builds each job's once, which a test counts.
[[nodiscard]] std::uint64_t compute_profiles_built();

[[nodiscard]] ComputeProfile compute_profile(const Workload& w, const DeviceSpec& d, std::uint32_t batch,
                                             double bytes_per_param, Optimizer optimizer = Optimizer::sgd);

/// Full activation checkpointing: every checkpointed layer (models/workload.hpp `checkpointed`) runs its forward
/// again in backward, so its backward time grows by its forward time; the totals follow.
void add_recomputation(ComputeProfile& p, const Workload& w);
/// Selective recomputation: each layer's backward reruns its attention core's forward (LayerPart::attention_core),
/// that part's share of the layer's forward time on `d` at `batch` samples.
void add_selective_recomputation(ComputeProfile& p, const Workload& w, const DeviceSpec& d, std::uint32_t batch);

/// Whether the model has BatchNorm layers (the built-in CNNs' norm parts; catalog_cnn.cpp).
[[nodiscard]] bool has_batchnorm(const Workload& w);

/// SyncBatchNorm (job key bn_group) as a closed form: each BatchNorm waits, forward and backward, for one all-reduce
/// among its group of the statistics (forward: each channel's mean and variance; backward: the two gradient sums
/// per channel; fp32, kBatchNormBytesPerChannel) on the critical path: `latency` + 8 C x `seconds_per_byte` each
/// way, C the channels of the convolution before it. The per-rank programs run these all-reduces as flows
/// (models/program/batchnorm.hpp), which this is the idle-fabric cost of; the priority driver, which is no program,
/// adds it to its compute.
void add_batchnorm_sync(ComputeProfile& p, const Workload& w, sim::Time latency, double seconds_per_byte);

/// The channels of each BatchNorm of layer `l` (the columns of the GEMM before it), in order; empty: none.
[[nodiscard]] std::vector<double> batchnorm_channels(const Workload& w, std::size_t l);

/// Bytes each rank all-reduces per channel of a BatchNorm, each way: two fp32 values (forward: mean and variance;
/// backward: the two gradient sums) — torch.nn.SyncBatchNorm's all-gather of count, mean and invstd per rank is a
/// different form of the same statistics; ddlsim models NVIDIA's group BatchNorm, which all-reduces sums.
inline constexpr double kBatchNormBytesPerChannel = 8.0;

/// Seconds of one part for a local batch of `batch` samples, forward (backward = false) or backward.
[[nodiscard]] double part_seconds(const LayerPart& part, const DeviceSpec& d, std::uint32_t batch, bool backward);

}  // namespace ddlsim::models
