// Accelerator profiles (vendor datasheet peaks, SM counts, measured sustained fractions) and the device block
// of a scenario. The sustained fractions and their sources are in models/device.cpp.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/enum_info.hpp"
#include "sim/units.hpp"

namespace ddlsim::models {

/// The arithmetic a training step runs in. fp16 and bf16 are automatic mixed precision (half-precision math,
/// fp32 master weights); fp8 is Transformer-Engine FP8 GEMMs with bf16 elsewhere (Hopper only).
enum class Precision { fp32, tf32, fp16, bf16, fp8 };

inline constexpr sim::EnumEntry<Precision> k_precisions[]{
    {Precision::fp32, "fp32", "IEEE single precision on CUDA cores"},
    {Precision::tf32, "tf32", "TF32 tensor cores for convolutions and matmuls (A100 and later)"},
    {Precision::fp16, "fp16", "automatic mixed precision, fp16 tensor cores"},
    {Precision::bf16, "bf16", "automatic mixed precision, bf16 tensor cores"},
    {Precision::fp8, "fp8", "Transformer Engine FP8 GEMMs, bf16 elsewhere (H100/H200)"}};
constexpr std::span<const sim::EnumEntry<Precision>> enum_entries(Precision) {
    return k_precisions;
}

/// "fp32", "tf32", ... (the scenario spelling).
[[nodiscard]] std::string_view precision_name(Precision p);

/// How the framework runs a built-in model's kernels (models/compute.cpp, "Kernels beyond the roofline").
enum class Software { eager, compiled, optimized };
inline constexpr sim::EnumEntry<Software> k_softwares[]{
    {Software::eager, "eager",
     "PyTorch/TensorFlow eager: every part its own kernel, each launched by the host (the default)"},
    {Software::compiled, "compiled",
     "torch.compile / XLA: chains of element-wise and normalisation kernels fused, still launched one by one"},
    {Software::optimized, "optimized",
     "MLPerf-class: CUDA graphs (no host launches) and compiled's fused chains (BatchNorm + add + ReLU)"}};
constexpr std::span<const sim::EnumEntry<Software>> enum_entries(Software) {
    return k_softwares;
}

/// Bytes of one activation element moved by memory-bound kernels at this precision (fp32/tf32: 4; AMP: 2;
/// fp8: 2, since Transformer Engine keeps activations between GEMMs in bf16).
[[nodiscard]] double activation_bytes(Precision p);

/// Sustained fractions of one device generation at one precision, from published measurements (device.cpp).
struct Efficiency {
    double matmul = 0.0;  ///< large GEMMs: achieved / datasheet peak
    double memory = 0.0;  ///< streaming read+write kernels: achieved / datasheet bandwidth
    double conv = 0.0;    ///< cuDNN convolutions: achieved / datasheet peak
    /// Output tile m of the Winograd F(m x m, 3 x 3) convolutions cuDNN's autotuner finds at this precision
    /// (device.cpp cites each); 0 where 3 x 3 convolutions run as implicit GEMM (tensor cores).
    int winograd_tile = 0;
};

/// Datasheet peaks of one accelerator (dense, no sparsity). A peak of 0 means the part has no such math.
struct DeviceProfile {
    std::string name;
    std::string description;
    sim::FlopRate fp32;
    sim::FlopRate tf32;  ///< equals fp32 on parts without TF32 tensor cores
    sim::FlopRate fp16;  ///< tensor-core FP16 where present
    sim::FlopRate bf16;  ///< 0 where the part has no BF16 math (P100, V100)
    sim::FlopRate fp8;   ///< 0 before Hopper
    sim::Bandwidth memory_bandwidth;
    int sms = 0;                                    ///< streaming multiprocessors (wave quantization)
    Precision default_precision = Precision::fp32;  ///< what PyTorch gives by default (device.cpp)
    sim::Bytes memory_capacity;  ///< datasheet HBM: P100 16 GB, V100 16 GB (the 2017 datasheet's SXM2), A100 80 GB,
                                 ///< H100 80 GB, H200 141 GB (the datasheets cited in device.cpp)
    /// Sustained fractions of peak (device.cpp cites each): matmul on CUDA cores, on tensor cores (FP16, BF16,
    /// FP8) and in TF32 on tensor cores; streaming memory; the Winograd tile cuDNN's 3 x 3 convolutions use on
    /// CUDA cores. A part without tensor cores runs every precision on CUDA cores.
    bool tensor_cores = true;
    double matmul_cuda_cores = 0.0;
    double matmul_tensor = 0.0;
    double matmul_tf32 = 0.0;
    double memory_efficiency = 0.0;
    int winograd_tile = 0;
    double board_power_w = 0.0;  ///< datasheet maximum board power (TDP), for energy to train (device.cpp cites it)

    /// The datasheet peak at `p`; 0 when the part has none.
    [[nodiscard]] sim::FlopRate peak(Precision p) const;
    /// The sustained fractions at `p` (device.cpp cites each).
    [[nodiscard]] Efficiency efficiency(Precision p) const;
};

/// Built-in profiles in catalog order.
[[nodiscard]] const std::vector<DeviceProfile>& builtin_devices();
[[nodiscard]] std::optional<DeviceProfile> builtin_device(std::string_view name);

/// The fraction of peak used for FLOP work when a device has no built-in profile (a custom device, a
/// calibration profile without "efficiency") and for codec work (ResNet-50 FP32 on V100 at batch 112 reaches
/// 367 img/s x 24.5 GFLOP = 9.0 TFLOPS = 0.57 of 15.7 TFLOPS).
inline constexpr double kDefaultEfficiency = 0.5;

/// Where a resolved setting came from, for the summary and the result echo.
enum class Source { builtin_default, scenario, calibration_profile };
[[nodiscard]] std::string_view source_name(Source s);  ///< "default", "scenario", "calibration profile"

/// The resolved `device` block: a compute rate, a memory bandwidth and, optionally, a measured single-device
/// throughput that fixes the compute scale.
struct DeviceSpec {
    std::string name;                        ///< profile name, or "custom" / "calibrated"
    sim::FlopRate peak;                      ///< matmul/conv peak at the chosen precision (peak_flops overrides)
    double efficiency = kDefaultEfficiency;  ///< the scalar fraction (explicit, or the default for custom devices)
    sim::Bandwidth memory_bandwidth;
    std::optional<double> samples_per_s;  ///< measured samples/s of this model at this batch size
    /// The per-device batch samples_per_s was measured at (none: the scenario's batch_size).
    std::optional<std::uint32_t> samples_per_s_batch;

    Precision precision = Precision::fp32;
    Source precision_source = Source::builtin_default;
    /// PyTorch's default on Ampere and later: TF32 in cuDNN convolutions, FP32 in matmuls (device.cpp). Then
    /// matmul and attention parts run at `vector_peak` x `fp32_measured.matmul`.
    bool tf32_convolutions_only = false;
    /// The profile's sustained fractions at `precision` (device.cpp cites each); empty for custom devices.
    std::optional<Efficiency> measured;
    std::optional<Efficiency> fp32_measured;             ///< the profile's FP32 fractions (tf32_convolutions_only)
    Source efficiency_source = Source::builtin_default;  ///< scenario / calibration profile: `efficiency` rules
    int sms = 0;                                         ///< streaming multiprocessors; 0: no wave quantization
    /// The FLOP rate of what FP8 training keeps in BF16 over the GEMMs' rate (attention parts and a language model's
    /// output layer run at peak x fraction x this): under FP8 a built-in profile's BF16 rate over its FP8 rate, since
    /// Transformer Engine keeps dot-product attention in BF16 and Megatron's output layer is no Transformer Engine
    /// module (models/device.cpp); 1 otherwise.
    double bf16_speed = 1.0;
    sim::FlopRate vector_peak;  ///< CUDA-core FP32 peak (codec kernels, FP32 matmuls); 0: use `peak`
    /// Measured compute slowdown beside communication (`ddlsim calibrate`); the default of
    /// overlap.compute_slowdown for jobs on this device.
    std::optional<double> overlap_slowdown;
    std::optional<double> memory_capacity;  ///< bytes of device memory, when known (built-in profiles, `memory`)
    Software software = Software::eager;    ///< how the framework runs the kernels (launches, fusion)

    /// Whether the per-(generation, precision) fractions apply (a built-in profile and no explicit efficiency).
    [[nodiscard]] bool uses_measured() const {
        return measured.has_value() && efficiency_source == Source::builtin_default;
    }
    /// Rate of generic FLOP work (codec kernels): the CUDA-core peak x efficiency.
    [[nodiscard]] sim::FlopRate sustained() const {
        return (vector_peak.per_s() > 0.0 ? vector_peak : peak) * efficiency;
    }
    /// The fraction of peak large GEMMs and convolutions sustain: measured, or `efficiency`.
    [[nodiscard]] double matmul_efficiency() const { return uses_measured() ? measured->matmul : efficiency; }
    /// The fraction convolutions sustain: measured, or `efficiency`.
    [[nodiscard]] double conv_efficiency() const { return uses_measured() ? measured->conv : efficiency; }
    /// The achievable fraction of memory bandwidth (1 for custom devices: their bandwidth is taken as given).
    [[nodiscard]] double memory_efficiency() const { return measured ? measured->memory : 1.0; }
};

}  // namespace ddlsim::models
