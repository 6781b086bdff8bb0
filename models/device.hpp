// Accelerator profiles (vendor datasheet peaks) and the device block of a scenario.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/units.hpp"

namespace ddlsim::models {

enum class Precision { fp32, tf32, fp16 };

/// Datasheet peaks of one accelerator (dense, no sparsity).
struct DeviceProfile {
    std::string name;
    std::string description;
    sim::FlopRate fp32;
    sim::FlopRate tf32;  ///< equals fp32 on parts without TF32 tensor cores
    sim::FlopRate fp16;  ///< tensor-core FP16 where present
    sim::Bandwidth memory_bandwidth;

    [[nodiscard]] sim::FlopRate peak(Precision p) const;
};

/// Built-in profiles in catalog order.
[[nodiscard]] const std::vector<DeviceProfile>& builtin_devices();
[[nodiscard]] std::optional<DeviceProfile> builtin_device(std::string_view name);

/// Default fraction of peak a training step sustains (ResNet-50 FP32 on V100 at
/// batch 112 reaches 367 img/s x 24.5 GFLOP = 9.0 TFLOPS = 0.57 of 15.7 TFLOPS).
inline constexpr double kDefaultEfficiency = 0.5;

/// The resolved `device` block: a compute rate, a memory bandwidth and, optionally,
/// a measured single-device throughput that fixes the compute scale.
struct DeviceSpec {
    std::string name;    ///< profile name, or "custom"
    sim::FlopRate peak;  ///< at the chosen precision
    double efficiency = kDefaultEfficiency;
    sim::Bandwidth memory_bandwidth;
    std::optional<double> samples_per_s;  ///< measured samples/s of this model at this batch size

    [[nodiscard]] sim::FlopRate sustained() const { return peak * efficiency; }
};

}  // namespace ddlsim::models
