// The compute model: a roofline per kernel-sized part of each layer, at the device's precision.
//
// Per layer and per iteration (a local batch of b samples), each part p of the layer (models/workload.hpp)
// costs, forward,
//   GEMM parts (conv, matmul, attention):
//       t = max( F_p b / (peak[precision] x e x q),  B_p / (memory bandwidth x e_memory) )
//       (e = e_conv for convolutions, e_matmul for attention (under FP8 at BF16's rate, as Transformer Engine runs
//       it: device.cpp), e_matmul x g for matmul: g the large-GEMM gain below)
//   memory-bound parts (norm, elementwise, embedding, pooling):
//       t = B_p / (memory bandwidth x e_memory)
// with F_p the part's forward FLOPs per sample, B_p = activations_p x b x s + weights_p x s_w the bytes it moves
// (s = 4 bytes per element in fp32/tf32, 2 under AMP and fp8, 4 for parts autocast keeps in FP32; s_w the same
// for the weights), e_conv, e_matmul and e_memory the measured sustained fractions of the device's generation and
// precision (models/device.cpp, each cited), and q the wave-quantization factor below.
// Backward costs twice the forward for every part: a GEMM's backward is two GEMMs of the forward's size (the
// input gradient dX = dY W^T and the weight gradient dW = X^T dY: 2x the FLOPs, and each reads two operands of
// the forward's sizes and writes one, 2x the bytes); an element-wise backward reads the output gradient and the
// saved input and writes the input gradient (3 passes for the forward's 2), and training BatchNorm's backward
// makes a reduction pass and an element-wise pass over (dy, x) (5 for 3): about 1.5-1.7x, rounded up to 2x for
// the separate kernels autograd launches (e.g. ReLU's threshold_backward, dropout's mask multiply).
// A layer's time is the sum of its parts' times (kernels run one after another on one stream).
//
// Wave quantization (NVIDIA, "Matrix Multiplication Background User's Guide", sections "Tile quantization" and
// "Wave quantization"): a GEMM's output is split into tiles, one per thread block; the tiles run in waves of one
// per SM, and a partial last wave leaves SMs idle. With 128 x 128 output tiles (a common cuBLAS/cuDNN tile size in
// that guide) and T tiles on S SMs, q = T / (S ceil(T / S)). For a matmul T = ceil(rows x b / 128) ceil(cols /
// 128); attention runs one GEMM per head and sequence, T = heads x b x ceil(rows / 128) ceil(cols / 128). Small
// batches fill fewer tiles and so sustain less; the backward pass uses the forward's q.
//
// Winograd (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016, arXiv:1509.09308, §4-5):
// on CUDA cores cuDNN's autotuner (PyTorch cudnn.benchmark, TensorFlow's default autotuning) runs a 3 x 3 stride-1
// convolution as F(m x m, 3 x 3) when that is faster, so a convolution part costs the lesser of the direct cost
// above and the Winograd cost, in its non-fused form (input transform, (m+2)^2 batched GEMMs, output transform):
//       t_w = F_w b / (peak x e_matmul x q_w) + B_w / (memory bandwidth x e_memory)
//       F_w = 2 T (m+2)^2 C K per sample, T = ceil(H / m) ceil(W / m) output tiles of an H x W output,
//             C input and K output channels: 9 m^2 / (m+2)^2 fewer FLOPs than direct (2.25x for m = 2, 4x for m = 4;
//             fewer where the tiles overhang the map)
//       B_w = (activations_p + 2 T (m+2)^2 (C + K)) x b x s + weights_p x s_w: the convolution's own input and output
//             once, and the transformed input and output each written and read once
//       q_w = wave quantization of (m+2)^2 GEMMs of (T b) x K outputs
// The transformed tiles are multiplied as batched GEMMs, at the GEMM rate (e_matmul; e_conv is implicit-GEMM
// convolution's, calibrated on DeepBench's direct layers). m per (generation, precision) is in models/device.cpp
// (0: tensor cores, where cuDNN runs implicit GEMM); with it the model gives DeepBench's measured P100 and V100 FP32
// times of their Winograd-selected 3 x 3 layers at median 1.08x and 0.92x.
// The backward pass (data and filter gradients, both Winograd-able) costs twice the forward, as above.
//
// `device.efficiency`, when given, replaces e_matmul (and q is not applied); a custom device (no built-in profile)
// uses its `efficiency` (default 0.5) with e_memory = 1. Layers without parts (custom models) are one part of
// fwd_flops and fwd_bytes per sample, of their `kind` (default matmul); layers that give fwd_time/bwd_time/
// update_time keep them exactly.
//
// Update: parameters x bytes per parameter of the optimizer (optimizer_bytes_per_param) / (memory bandwidth x
// e_memory), per layer.
//
// With device.samples_per_s the derived times are scaled by one factor so that a single worker with no
// communication runs b / samples_per_s seconds per iteration.
#include "models/compute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

namespace ddlsim::models {
namespace {

constexpr double kTile = 128.0;  // output tile edge (Matrix Multiplication Background User's Guide)

bool is_gemm(PartKind k) {
    return k == PartKind::matmul || k == PartKind::conv || k == PartKind::attention;
}

/// Fraction of the last wave's SMs that have work: 1 when the tiles fill whole waves.
double wave_quantization(const LayerPart& p, const DeviceSpec& d, std::uint32_t batch) {
    if (!d.uses_measured() || d.sms <= 0 || p.rows_per_sample <= 0.0 || p.cols <= 0.0) return 1.0;
    const double b = batch;
    const double tiles = p.gemms_per_sample > 0.0
                             ? p.gemms_per_sample * b * std::ceil(p.rows_per_sample / kTile) * std::ceil(p.cols / kTile)
                             : std::ceil(p.rows_per_sample * b / kTile) * std::ceil(p.cols / kTile);
    const double waves = std::ceil(tiles / d.sms);
    return tiles / (waves * d.sms);
}

// Large GEMMs run faster than the median large GEMM the fractions are (models/device.cpp). Binned by log2 of
// M N K (b M N K), the median GEMM near 2^37, 2^38 and 2^39 in DeepBench's V100 FP16 results (da81ba78, "Results -
// FP16 ip, Mixed math") runs at 1.047, 1.028 and 1.057 x the median of all its GEMMs with M N K >= 1.5e10, and
// in XLA's measured sm_90 table (device.cpp) at 1.102 x near 2^37 and 1.086 x at 2^38; near 2^35 both sit at
// 0.99-1.00. A matmul part of a built-in model (its shape known), b M N K = F b / 2, therefore runs at the fraction
// x g, g = 1 up to 2^35 and rising linearly in log2 to 1.05 at 2^37 (the lesser of the two sources' rise), 1.05
// beyond: the GEMMs of billion-parameter transformers (2^38-2^42) sustain about 5 % more than BERT-large's
// (2^33-2^35).
constexpr double kLargeGemmGain = 0.05;

double large_gemm_factor(double mnk) {
    if (mnk <= 0.0) return 1.0;
    return 1.0 + kLargeGemmGain * std::clamp((std::log2(mnk) - 35.0) / 2.0, 0.0, 1.0);
}

/// The fraction of the last wave's SMs that have work when `gemms` GEMMs of rows x cols outputs are split into
/// kTile x kTile tiles.
double quantize(double gemms, double rows, double cols, int sms) {
    const double tiles = gemms * std::ceil(rows / kTile) * std::ceil(cols / kTile);
    return tiles / (std::ceil(tiles / sms) * sms);
}

/// Seconds of Winograd F(m x m, 3 x 3) for a 3 x 3 stride-1 convolution part (forward), or +inf where it does not
/// apply. `bandwidth` and `rate` are the device's sustained memory bandwidth and GEMM FLOP rate.
double winograd_seconds(const LayerPart& p, const DeviceSpec& d, std::uint32_t batch, double element, double bandwidth,
                        double rate) {
    const ConvGeometry& g = p.conv;
    const int m = d.uses_measured() ? d.measured->winograd_tile : 0;
    if (m <= 0 || p.kind != PartKind::conv || g.kernel_h != 3 || g.kernel_w != 3 || g.stride != 1 ||
        g.in_channels <= 0.0 || g.out_h <= 0.0 || g.out_w <= 0.0)
        return std::numeric_limits<double>::infinity();
    const double b = batch;
    const double tile_elems = (m + 2.0) * (m + 2.0);
    const double tiles = std::ceil(g.out_h / m) * std::ceil(g.out_w / m);
    const double flops = 2.0 * tiles * tile_elems * g.in_channels * p.cols * b;
    const double q = d.sms > 0 ? quantize(tile_elems, tiles * b, p.cols, d.sms) : 1.0;
    const double bytes =
        (p.activations + 2.0 * tiles * tile_elems * (g.in_channels + p.cols)) * b * element + p.weights * element;
    return flops / (rate * q) + bytes / bandwidth;
}

// Kernels beyond the roofline (device.software). Every kernel of a built-in model also pays
//   kDeviceGap    on the device between dependent kernels on one stream, even when the host is far ahead: CUDA.jl's
//                 measurement of 80 tiny broadcast kernels launched as one CUDA graph, 70 us (0.875 us each;
//                 JuliaGPU/CUDA.jl docs/src/usage/graphs.md @75e91794, which also gives 260 us launched one by one)
//   kHostLaunch   on the host per kernel it launches itself. `compiled`: 5 us, the runtime call alone (Inductor's
//                 wrapper calls the kernels' launchers directly): "usually, the launch time on the CPU side is between
//                 5-20 microseconds" in PyTorch training traces (facebookresearch/HolisticTraceAnalysis
//                 docs/source/features/cuda_kernel_launch_stats.rst @0c2146a8), its low end. `eager`: 17.35 us, what
//                 PyTorch 2.11's dispatcher, autograd and autocast take per kernel of an eager training step, measured
//                 on its own (validate/gpu_bench/torch_host_cost.py: chains of tiny element-wise ops, Linear(64, 64)
//                 and Conv2d + BatchNorm + ReLU modules) on two lent H200 machines: 14.6, 17.2 and 13.8 us per kernel
//                 on the first (h200_host_cost_2026-12-04.json), 17.5, 22.1 and 20.4 us on the second
//                 (h200_host_cost_2026-12-04_repeat.json); the median of the six, inside HTA's range. Hosts differ by
//                 about a fifth, so one machine's chains alone are not the typical host
// A layer's forward (backward) then takes max(sum over its kernels of (roofline + kDeviceGap), kernels x host
// launch): the host runs ahead of the device within a layer but cannot launch faster than one kernel per
// host launch (a launch-bound small batch). Kernels: one per part forward; backward two per GEMM part (input and
// weight gradients), one per memory-bound part. Fusion: `compiled` merges each chain of consecutive norm and
// element-wise parts of a layer into one kernel that keeps what the chain streams except, per boundary, the write of
// the intermediate tensor and its read back (2 x its elements x element size); `optimized` fuses the same chains
// -- NVIDIA's NGC layers fuse BatchNorm + ReLU and BatchNorm + add + ReLU into one kernel each, next to cuDNN's
// convolutions (fuse_bn_relu, fuse_bn_add_relu in HewlettPackard/dlcookbook-dlbs python/mxnet_benchmarks/models/
// resnet.py @ac368987, "optimizations ... taken from NVIDIA code from NGC containers") -- and launches nothing from
// the host (CUDA graphs: one launch per step).
// Custom layers (no parts) and layers with explicit times have no known kernels and pay none of this.
constexpr double kDeviceGap = 70e-6 / 80.0;
constexpr double kHostLaunchCompiled = 5e-6;
constexpr double kHostLaunchEager = 17.35e-6;

/// A BatchNorm part: a norm autocast does not keep in FP32 (the built-in CNNs' BatchNorms; LayerNorm and softmax are
/// kept in FP32, catalog_transformer.cpp).
bool is_batchnorm(const LayerPart& p) {
    return p.kind == PartKind::norm && !p.fp32_under_amp;
}

/// Bytes per activation element of `p` at the device's precision (4 for parts autocast keeps in FP32).
double element_bytes(const LayerPart& p, const DeviceSpec& d) {
    return p.fp32_under_amp ? 4.0 : activation_bytes(d.precision);
}

// PyTorch eager launches kernels beside those of the parts' own arithmetic (read off one profiled eager step per
// operator, validate/gpu_bench/h200_kernel_inventory_2026-12-04.json: PyTorch 2.11, ResNet-50, BERT-large, GPT-2):
//   autocast    under fp16/bf16/fp8 every GEMM weight is cast down once per forward (the cast cache lives only for
//               one `with autocast()` region: torch/amp/autocast_mode.py) and its gradient cast back in backward:
//               one kernel each way per GEMM part with weights (the inventory's copy_, 114 of ResNet-50's 784)
//   BatchNorm   training-mode batch_norm is three kernels forward (statistics, transform, running stats) and two
//               backward (reduce, element-wise), plus the add_ of its num_batches_tracked counter
//               (torch/nn/modules/batchnorm.py): 3 more forward and 1 more backward than the part's one each. The
//               built-in CNNs' norm parts are all BatchNorm (catalog_cnn.cpp); the transformers' are LayerNorm and
//               softmax (autocast keeps them in FP32), which get nothing extra here.
//   bias        a GEMM with a bias (nn.Linear, a biased Conv2d) adds it in its epilogue forward, but its gradient is
//               a reduction of the output gradient over the batch's rows, a kernel of its own backward (addmm's
//               backward sums the gradient to the bias's shape; convolution_backward's bias gradient): the inventory's
//               reduce_kernel, 146 of BERT-large's 149 biased GEMMs; under autocast the bias is cast down with its
//               weight and its gradient cast back (the casts' second half in the inventory: 847 copies for 149
//               biased GEMMs): 1 more forward under autocast, 1 more backward, 2 under autocast; the reduction
//               reads the output gradient once (rows x cols x b elements)
// Besides that read they are counted as launches and device gaps only: the casts' bytes (6 per weight) are small
// beside a step.
// Not counted: memsets (194 of BERT-large's kernels: cuBLAS and cuDNN workspaces, no rule per part found), the loss
// and the optimizer's kernels (docs/ACCURACY.md).
struct EagerExtra {
    double fwd = 0.0, bwd = 0.0;  ///< kernels
    double bwd_s = 0.0;           ///< the bias gradients' read of the output gradient
};

EagerExtra eager_extra_kernels(const std::vector<LayerPart>& parts, const DeviceSpec& d, std::uint32_t batch,
                               double bandwidth) {
    const bool autocast = activation_bytes(d.precision) < 4.0;
    EagerExtra out;
    for (const LayerPart& part : parts) {
        if (autocast && is_gemm(part.kind) && part.weights > 0.0) {
            out.fwd += 1.0;
            out.bwd += 1.0;
        }
        if (is_gemm(part.kind) && part.bias) {
            out.fwd += autocast ? 1.0 : 0.0;
            out.bwd += autocast ? 2.0 : 1.0;
            out.bwd_s += part.rows_per_sample * part.cols * batch * element_bytes(part, d) / bandwidth;
        }
        if (is_batchnorm(part)) {
            out.fwd += 3.0;
            out.bwd += 1.0;
        }
    }
    return out;
}

// Transformer Engine's FP8 casts (models/device.cpp cites the kernels): per GEMM with weights in FP8, one kernel
// forward casting its input to FP8 with its transpose (read 2 bytes, write 1 + 1 per element: rows x K, K =
// F / (2 rows cols)) and one backward doing the same to its output gradient (rows x cols). A GEMM of unknown shape
// (a custom layer's) pays nothing.
struct Fp8Casts {
    double kernels = 0.0;             ///< forward, and as many backward
    double fwd_s = 0.0, bwd_s = 0.0;  ///< the casts' memory traffic
};

Fp8Casts fp8_casts(const std::vector<LayerPart>& parts, std::uint32_t batch, double bandwidth) {
    constexpr double kCastBytes = 2.0 + 1.0 + 1.0;  // read BF16, write FP8 and its FP8 transpose
    Fp8Casts out;
    for (const LayerPart& part : parts) {
        if (part.kind != PartKind::matmul || part.weights <= 0.0 || part.bf16_under_fp8 ||
            part.rows_per_sample <= 0.0 || part.cols <= 0.0)
            continue;
        const double rows = part.rows_per_sample * batch, k = part.flops / (2.0 * part.rows_per_sample * part.cols);
        out.kernels += 1.0;
        out.fwd_s += kCastBytes * rows * k / bandwidth;
        out.bwd_s += kCastBytes * rows * part.cols / bandwidth;
    }
    return out;
}

bool fusible(const LayerPart& p) {
    return (p.kind == PartKind::norm || p.kind == PartKind::elementwise) && p.elements > 0.0 && p.bytes == 0.0 &&
           p.weights == 0.0;
}

/// The kernels one layer runs under `software`: its parts, with chains fused as described above.
std::vector<LayerPart> kernels_of(const std::vector<LayerPart>& parts, const DeviceSpec& d) {
    if (d.software == Software::eager) return parts;
    const auto tensor_bytes = [&](const LayerPart& p) { return p.elements * element_bytes(p, d); };
    std::vector<LayerPart> out;
    for (std::size_t i = 0; i < parts.size();) {
        if (!fusible(parts[i])) {
            out.push_back(parts[i++]);
            continue;
        }
        // A chain i .. j-1 of fusible parts: its bytes per sample less a write and a read per inner boundary.
        double bytes = 0.0;
        std::size_t j = i;
        for (; j < parts.size() && fusible(parts[j]); ++j) {
            bytes += parts[j].activations * element_bytes(parts[j], d);
            if (j > i) bytes -= 2.0 * std::min(tensor_bytes(parts[j - 1]), tensor_bytes(parts[j]));
        }
        out.push_back(LayerPart{.kind = PartKind::elementwise, .bytes = std::max(0.0, bytes)});
        i = j;
    }
    return out;
}

}  // namespace

std::string_view optimizer_name(Optimizer o) {
    return sim::enum_name(o);
}

const std::vector<std::string>& optimizer_names() {
    static const std::vector<std::string> names = sim::enum_names<Optimizer>();
    return names;
}

// CNNs: SGD with momentum 0.9 (He et al. 2015, arXiv:1512.03385 §3.4; torchvision's
// references/classification/train.py defaults to --opt sgd --momentum 0.9). Transformers: Adam with decoupled
// weight decay (BERT: Devlin et al. 2018, arXiv:1810.04805 §A.2, Adam with L2 weight decay 0.01; GPT-2 and the
// HuggingFace Trainer: AdamW, TrainingArguments.optim default "adamw_torch"). Custom models: SGD with momentum.
Optimizer default_optimizer(ModelFamily family) {
    return family == ModelFamily::transformer ? Optimizer::adamw : Optimizer::momentum;
}

// Per parameter, with FP32 weights and optimizer state (4 bytes each) and g-byte gradients, following the update
// rules in the PyTorch torch.optim documentation: the bytes one update streams besides the gradient (read + write)
// and the state tensors it keeps.
//   sgd       read w, g; write w                                        8 + g     no state
//   momentum  + read and write the momentum buffer                      16 + g    1 (the momentum buffer)
//   adam(w)   read w, g, m, v; write w, m, v                            24 + g    2 (m, v)
//   lamb      Adam's moments (read g, m, v; write m, v), write the update u, the norms ||w|| and ||u|| (read w, u),
//             then apply (read w, u; write w) (You et al. 2019, arXiv:1904.00962, Algorithm 2)   40 + g    2 (m, v)
namespace {

struct OptimizerCost {
    Optimizer optimizer;
    double streamed_bytes;  // besides the gradient
    double state_tensors;
};
constexpr OptimizerCost kOptimizerCosts[]{{Optimizer::sgd, 8.0, 0.0},
                                          {Optimizer::momentum, 16.0, 1.0},
                                          {Optimizer::adam, 24.0, 2.0},
                                          {Optimizer::adamw, 24.0, 2.0},
                                          {Optimizer::lamb, 40.0, 2.0}};
static_assert(std::size(kOptimizerCosts) == std::size(k_optimizers), "one cost entry per optimizer");

const OptimizerCost& cost_of(Optimizer o) {
    for (const OptimizerCost& c : kOptimizerCosts)
        if (c.optimizer == o) return c;
    throw std::logic_error("optimizer without a cost entry");
}

}  // namespace

// AMP (fp16, bf16, fp8) adds the half-precision weight copy autocast makes each step (read 4, write 2); fp16
// adds GradScaler's unscale and inf check (read and write g).
double optimizer_bytes_per_param(Optimizer o, Precision p, double g) {
    double bytes = cost_of(o).streamed_bytes + g;
    if (p == Precision::fp16 || p == Precision::bf16 || p == Precision::fp8) bytes += 6.0;
    if (p == Precision::fp16) bytes += 2.0 * g;
    return bytes;
}

double optimizer_state_tensors(Optimizer o) {
    return cost_of(o).state_tensors;
}

double part_seconds(const LayerPart& part, const DeviceSpec& d, std::uint32_t batch, bool backward) {
    const double mult = backward ? 2.0 : 1.0;
    const bool fp32_math = d.tf32_convolutions_only && part.kind != PartKind::conv;
    const double element = element_bytes(part, d);
    const double bytes = mult * ((part.activations * element + part.bytes) * batch + part.weights * element);
    const double bandwidth = d.memory_bandwidth.bytes_per_s() * d.memory_efficiency();
    const double memory_s = bytes > 0.0 ? bytes / bandwidth : 0.0;
    if (!is_gemm(part.kind)) return memory_s;
    double rate = 0.0;
    if (fp32_math && d.uses_measured()) {
        rate = d.vector_peak.per_s() * d.fp32_measured.value_or(Efficiency{}).matmul;
    } else {
        rate = d.peak.per_s() * (part.kind == PartKind::conv ? d.conv_efficiency() : d.matmul_efficiency());
        // Attention and the output layer in BF16 under FP8 (device.hpp).
        if (part.kind == PartKind::attention || part.bf16_under_fp8) rate *= d.bf16_speed;
    }
    if (part.kind == PartKind::matmul && d.uses_measured() && part.rows_per_sample > 0.0 && part.cols > 0.0)
        rate *= large_gemm_factor(part.flops * batch / 2.0);  // a GEMM of known shape (custom layers have none)
    const double direct = std::max(mult * part.flops * batch / (rate * wave_quantization(part, d, batch)), memory_s);
    return std::min(
        direct, mult * winograd_seconds(part, d, batch, element, bandwidth, d.peak.per_s() * d.matmul_efficiency()));
}

namespace {
std::atomic<std::uint64_t> g_profiles_built{0};
}  // namespace

std::uint64_t compute_profiles_built() {
    return g_profiles_built.load(std::memory_order_relaxed);
}

namespace {

// The shares of a layer's forward its first and last runs of GEMMs with weights take (part_seconds, as
// add_selective_recomputation weighs attention's core), a block's norm before and its residual add after them
// aside: attention's Q, K, V projections and its output projection, the MLP's first and second GEMMs. The last run
// is a run after the first one.
std::pair<double, double> gemm_shares(const Layer& l, const DeviceSpec& d, std::uint32_t batch) {
    const auto weighted = [](const LayerPart& p) { return p.kind == PartKind::matmul && p.weights > 0.0; };
    const std::size_t n = l.parts.size();
    std::vector<double> seconds(n);
    double all = 0.0;
    for (std::size_t i = 0; i < n; ++i) all += seconds[i] = part_seconds(l.parts[i], d, batch, false);
    if (all <= 0.0) return {0.0, 0.0};
    std::size_t a = 0;
    while (a < n && !weighted(l.parts[a])) ++a;
    double head = 0.0, tail = 0.0;
    for (; a < n && weighted(l.parts[a]); ++a) head += seconds[a];
    std::size_t b = n;
    while (b > a && !weighted(l.parts[b - 1])) --b;
    for (; b > a && weighted(l.parts[b - 1]); --b) tail += seconds[b - 1];
    return {head / all, tail / all};
}

}  // namespace

ComputeProfile compute_profile(const Workload& w, const DeviceSpec& d, std::uint32_t batch, double bytes_per_param,
                               Optimizer optimizer) {
    g_profiles_built.fetch_add(1, std::memory_order_relaxed);
    struct Seconds {
        double fwd, bwd, update;
        bool fwd_fixed, bwd_fixed, update_fixed;
        double wgrad_share;  ///< of bwd
        double head, tail;   ///< LayerTimes::head, tail
    };
    ComputeProfile p;
    const double update_bytes = optimizer_bytes_per_param(optimizer, d.precision, bytes_per_param);
    const double bandwidth = d.memory_bandwidth.bytes_per_s() * d.memory_efficiency();
    // Every layer's times at batch b; the fixed (explicit) and derived totals; the kinds' totals when asked.
    struct Tally {
        std::vector<Seconds> raw;
        double fixed = 0.0, derived = 0.0;
    };
    const auto tally = [&](std::uint32_t b, bool kinds) {
        Tally out;
        out.raw.reserve(w.layers.size());
        for (const Layer& l : w.layers) {
            double fwd = 0.0, bwd = 0.0, fwd_kernels = 0.0, bwd_kernels = 0.0, wgrad = 0.0;
            const bool launched = !l.parts.empty();  // built-in kernels (custom layers: unknown)
            const auto account = [&](const LayerPart& part) {
                const double gap = launched ? kDeviceGap : 0.0;
                const double backward_kernels = is_gemm(part.kind) ? 2.0 : 1.0;
                const double f = part_seconds(part, d, b, false) + gap;
                const double bk = part_seconds(part, d, b, true) + backward_kernels * gap;
                fwd += f;
                bwd += bk;
                // A GEMM with weights: its backward's second kernel, the weight gradient (of the same FLOPs).
                if ((part.kind == PartKind::matmul || part.kind == PartKind::conv) && (part.weights > 0.0 || !launched))
                    wgrad += bk / 2.0;
                fwd_kernels += 1.0;
                bwd_kernels += backward_kernels;
                if (!kinds) return;
                KindTotals& k = p.kinds[static_cast<std::size_t>(part.kind)];
                k.flops += 3.0 * part.flops * b;
                k.seconds += f + bk;
            };
            if (!launched) {
                account(LayerPart{.kind = PartKind::matmul, .flops = l.fwd_flops});
            } else {
                for (const LayerPart& part : kernels_of(l.parts, d)) account(part);
                if (d.software == Software::eager) {  // PyTorch eager's kernels beside the parts' own (see above)
                    const EagerExtra extra = eager_extra_kernels(l.parts, d, b, bandwidth);
                    fwd += extra.fwd * kDeviceGap;
                    bwd += extra.bwd * kDeviceGap + extra.bwd_s;
                    fwd_kernels += extra.fwd;
                    bwd_kernels += extra.bwd;
                }
                if (d.precision == Precision::fp8) {  // Transformer Engine's casts (above)
                    const Fp8Casts c = fp8_casts(l.parts, b, bandwidth);
                    fwd += c.fwd_s + c.kernels * kDeviceGap;
                    bwd += c.bwd_s + c.kernels * kDeviceGap;
                    fwd_kernels += c.kernels;
                    bwd_kernels += c.kernels;
                }
                // The host launches each kernel itself except under CUDA graphs; it cannot launch faster.
                const double host = d.software == Software::optimized  ? 0.0
                                    : d.software == Software::compiled ? kHostLaunchCompiled
                                                                       : kHostLaunchEager;
                fwd = std::max(fwd, fwd_kernels * host);
                bwd = std::max(bwd, bwd_kernels * host);
            }
            Seconds s{};
            std::tie(s.head, s.tail) = gemm_shares(l, d, b);
            s.fwd_fixed = l.fwd_time.has_value();
            s.fwd = s.fwd_fixed ? l.fwd_time->seconds() : fwd;
            s.bwd_fixed = l.bwd_time.has_value();
            s.bwd = s.bwd_fixed ? l.bwd_time->seconds() : (s.fwd_fixed ? 2.0 * s.fwd : bwd);
            s.wgrad_share = s.bwd_fixed || s.fwd_fixed || bwd <= 0.0 ? 0.5 : std::min(1.0, wgrad / bwd);
            s.update_fixed = l.update_time.has_value();
            s.update =
                s.update_fixed ? l.update_time->seconds() : static_cast<double>(l.params()) * update_bytes / bandwidth;
            for (auto [t, f] : {std::pair{s.fwd, s.fwd_fixed}, {s.bwd, s.bwd_fixed}, {s.update, s.update_fixed}})
                (f ? out.fixed : out.derived) += t;
            out.raw.push_back(s);
        }
        return out;
    };
    const Tally here = tally(batch, true);
    const std::vector<Seconds>& raw = here.raw;
    const double fixed = here.fixed, derived = here.derived;

    double scale = 1.0;
    if (d.samples_per_s) {
        // The measurement pins the derived times at the batch it was taken at; the model's own batch dependence
        // carries that factor to this batch (a launch-bound small batch stays as slow per sample as the model says).
        const std::uint32_t b0 = d.samples_per_s_batch.value_or(batch);
        const Tally pin = b0 == batch ? Tally{{}, fixed, derived} : tally(b0, false);
        const double target = b0 / *d.samples_per_s;
        if (pin.derived <= 0.0)
            throw std::invalid_argument(
                "device.samples_per_s needs layers whose times are derived (fwd_flops or parameters), not all fixed");
        if (pin.fixed >= target)
            throw std::invalid_argument(
                fmt::format("device.samples_per_s = {} means {:.6g} s per iteration, but explicit layer times already "
                            "take {:.6g} s",
                            *d.samples_per_s, target, pin.fixed));
        scale = (target - pin.fixed) / pin.derived;
    }

    if (!(fixed + derived * scale < 1e6))
        throw std::invalid_argument(
            fmt::format("one iteration would compute for {:.3g} s; expected under 1e6 s "
                        "(check batch_size, efficiency and peak_flops)",
                        fixed + derived * scale));
    p.scale = scale;
    for (const Seconds& s : raw) {
        const sim::Time bwd = sim::Time::seconds(s.bwd_fixed ? s.bwd : s.bwd * scale);
        const LayerTimes lt{sim::Time::seconds(s.fwd_fixed ? s.fwd : s.fwd * scale),
                            bwd,
                            sim::Time::seconds(s.update_fixed ? s.update : s.update * scale),
                            sim::Time::seconds(bwd.seconds() * s.wgrad_share),
                            s.head,
                            s.tail};
        p.fwd += lt.fwd;
        p.bwd += lt.bwd;
        p.update += lt.update;
        p.layers.push_back(lt);
    }
    return p;
}

void add_recomputation(ComputeProfile& p, const Workload& w) {
    const std::vector<bool> ckpt = checkpointed_layers(w);
    for (std::size_t l = 0; l < p.layers.size() && l < w.layers.size(); ++l)
        if (ckpt[l]) {
            p.layers[l].bwd += p.layers[l].fwd;
            p.bwd += p.layers[l].fwd;
        }
}

void add_selective_recomputation(ComputeProfile& p, const Workload& w, const DeviceSpec& d, std::uint32_t batch) {
    for (std::size_t l = 0; l < p.layers.size() && l < w.layers.size(); ++l) {
        double core = 0.0, all = 0.0;
        for (const LayerPart& part : w.layers[l].parts) {
            const double s = part_seconds(part, d, batch, false);
            all += s;
            if (part.attention_core) core += s;
        }
        if (core <= 0.0 || all <= 0.0) continue;
        const sim::Time again = sim::Time::seconds(p.layers[l].fwd.seconds() * core / all);
        p.layers[l].bwd += again;
        p.bwd += again;
    }
}

bool has_batchnorm(const Workload& w) {
    if (w.family != ModelFamily::cnn) return false;
    for (const Layer& l : w.layers)
        for (const LayerPart& p : l.parts)
            if (is_batchnorm(p)) return true;
    return false;
}

std::vector<double> batchnorm_channels(const Workload& w, std::size_t l) {
    std::vector<double> out;
    double channels = 0.0;
    for (const LayerPart& part : w.layers[l].parts) {
        if (is_gemm(part.kind)) channels = part.cols;
        if (is_batchnorm(part)) out.push_back(channels);
    }
    return out;
}

void add_batchnorm_sync(ComputeProfile& p, const Workload& w, sim::Time latency, double seconds_per_byte) {
    for (std::size_t i = 0; i < p.layers.size() && i < w.layers.size(); ++i) {
        double seconds = 0.0;
        for (const double channels : batchnorm_channels(w, i))
            seconds += latency.seconds() + kBatchNormBytesPerChannel * channels * seconds_per_byte;
        if (seconds <= 0.0) continue;
        const sim::Time t = sim::Time::seconds(seconds);
        p.layers[i].fwd += t;
        p.layers[i].bwd += t;
        p.fwd += t;
        p.bwd += t;
    }
}

}  // namespace ddlsim::models
