// Datasheet figures (dense tensor throughput, no structured sparsity):
//  P100 SXM2  — NVIDIA Tesla P100 datasheet (2016): 10.6 TFLOPS FP32, 21.2 FP16, 732 GB/s HBM2.
//  V100 SXM2  — NVIDIA Tesla V100 datasheet (2017): 15.7 TFLOPS FP32, 125 tensor FP16, 900 GB/s.
//  A100 SXM4 80GB — NVIDIA A100 datasheet (2021): 19.5 FP32, 156 TF32, 312 FP16, 2,039 GB/s.
//  H100 SXM5  — NVIDIA H100 datasheet (2023): 67 FP32, 494.5 TF32, 989.5 FP16 (dense), 3.35 TB/s.
//  H200 SXM   — NVIDIA H200 datasheet (2024): compute as H100 SXM, 4.8 TB/s HBM3e.
#include "models/device.hpp"

namespace ddlsim::models {
namespace {

DeviceProfile make(std::string name, std::string description, double fp32_tf, double tf32_tf, double fp16_tf,
                   double mem_gbps) {
    return DeviceProfile{std::move(name),
                         std::move(description),
                         sim::FlopRate::per_s(fp32_tf * 1e12),
                         sim::FlopRate::per_s(tf32_tf * 1e12),
                         sim::FlopRate::per_s(fp16_tf * 1e12),
                         sim::Bandwidth::bytes_per_s(mem_gbps * 1e9)};
}

}  // namespace

sim::FlopRate DeviceProfile::peak(Precision p) const {
    switch (p) {
        case Precision::fp32: return fp32;
        case Precision::tf32: return tf32;
        case Precision::fp16: return fp16;
    }
    return fp32;
}

const std::vector<DeviceProfile>& builtin_devices() {
    static const std::vector<DeviceProfile> devices{
        make("P100", "NVIDIA Tesla P100 SXM2 16 GB", 10.6, 10.6, 21.2, 732),
        make("V100", "NVIDIA Tesla V100 SXM2", 15.7, 15.7, 125.0, 900),
        make("A100", "NVIDIA A100 SXM4 80 GB", 19.5, 156.0, 312.0, 2039),
        make("H100", "NVIDIA H100 SXM5 80 GB", 67.0, 494.5, 989.5, 3350),
        make("H200", "NVIDIA H200 SXM 141 GB", 67.0, 494.5, 989.5, 4800),
    };
    return devices;
}

std::optional<DeviceProfile> builtin_device(std::string_view name) {
    for (const auto& d : builtin_devices())
        if (d.name == name) return d;
    return std::nullopt;
}

}  // namespace ddlsim::models
