// The compute model: per-part roofline at the device's precision, backward = 2 x forward, update = optimizer
// bytes / memory bandwidth, samples_per_s scaling, explicit times exact, and the published single-GPU check.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "models/compute.hpp"
#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/support.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {
models::Workload two_layers() {
    models::Workload w;
    w.name = "t";
    w.layers.push_back({"a", {{"a.w", 1'000'000}}, 1e9, std::nullopt, std::nullopt, std::nullopt, {}});
    w.layers.push_back({"b", {{"b.w", 3'000'000}}, 3e9, std::nullopt, std::nullopt, std::nullopt, {}});
    return w;
}
models::DeviceSpec device(double peak, double eff, double mem) {
    models::DeviceSpec d;
    d.name = "d";
    d.peak = sim::FlopRate::per_s(peak);
    d.efficiency = eff;
    d.memory_bandwidth = sim::Bandwidth::bytes_per_s(mem);
    return d;
}
}  // namespace

TEST_CASE("compute: roofline per layer") {
    // Layer a: 1 GFLOP/sample x 10 samples / (1 TFLOPS x 0.5) = 0.02 s forward, 0.04 s backward;
    // update with plain SGD, fp32 gradients: read w (4), g (4), write w (4) = 12 B per parameter,
    // 1e6 params x 12 B / 1e9 B/s = 12 ms. Layer b is three times that.
    const auto p = models::compute_profile(two_layers(), device(1e12, 0.5, 1e9), 10, 4.0, models::Optimizer::sgd);
    REQUIRE(p.layers.size() == 2);
    CHECK(p.layers[0].fwd.seconds() == ddlsim::testing::approx(0.02));
    CHECK(p.layers[0].bwd.seconds() == ddlsim::testing::approx(0.04));
    CHECK(p.layers[0].update.seconds() == ddlsim::testing::approx(0.012));
    CHECK(p.layers[1].fwd.seconds() == ddlsim::testing::approx(0.06));
    CHECK(p.fwd.seconds() == ddlsim::testing::approx(0.08));
    CHECK(p.bwd.seconds() == ddlsim::testing::approx(0.16));
    CHECK(p.update.seconds() == ddlsim::testing::approx(0.048));
    // 2-byte gradients: 4 + 2 + 4 = 10 B per parameter, 4e6 x 10 / 1e9 = 40 ms.
    CHECK(models::compute_profile(two_layers(), device(1e12, 0.5, 1e9), 10, 2.0).update.seconds() ==
          ddlsim::testing::approx(0.040));
}

TEST_CASE("compute: samples_per_s fixes one worker's throughput exactly") {
    auto d = device(1e12, 0.5, 1e9);
    d.samples_per_s = 250.0;
    const auto p = models::compute_profile(two_layers(), d, 32, 4.0);
    CHECK(p.iteration().seconds() == ddlsim::testing::approx(32.0 / 250.0).epsilon(1e-9));
    // The split between layers keeps the roofline's proportions: layer b is 3x layer a.
    CHECK(p.layers[1].fwd.seconds() == ddlsim::testing::approx(3 * p.layers[0].fwd.seconds()).epsilon(1e-9));
}

TEST_CASE("compute: samples_per_s_batch carries a measured rate to another batch with the model's batch dependence") {
    // A fixed 10 + 20 ms layer (no batch dependence) and a derived one linear in the batch (FLOPs, no memory term, no
    // update). Measured 1000 samples/s at batch 400: 0.4 s per step, 0.37 s of it derived. At batch 50 the derived
    // part is 0.37 / 8: 0.03 + 0.04625 = 0.07625 s, 655.7 samples/s, where applying the rate as-is gave 1000.
    const json j = json::parse(R"({"workers": 1, "batch_size": 50, "iterations": 1,
        "model": {"layers": [{"name": "fixed", "params": 0, "fwd_time": "10ms", "bwd_time": "20ms", "update_time": "0s"},
                             {"name": "fc", "params": 1000, "fwd_flops": 1e9, "update_time": "0s"}]},
        "device": {"name": "V100", "samples_per_s": 1000, "samples_per_s_batch": 400},
        "network": {"topology": "star", "bandwidth": "10Gbps", "latency": "1us"}})");
    const auto rate = [](const json& s) {
        return scenario::run_scenario(scenario::load_scenario(s)).jobs.front().throughput_samples_per_s;
    };
    CHECK(rate(j) == ddlsim::testing::approx(50 / 0.07625).epsilon(1e-9));
    // Pinned at the scenario's own batch (the default), the rate is the measurement.
    json same = j;
    same["device"]["samples_per_s_batch"] = 50;
    CHECK(rate(same) == ddlsim::testing::approx(1000).epsilon(1e-9));
    same["device"].erase("samples_per_s_batch");
    CHECK(rate(same) == ddlsim::testing::approx(1000).epsilon(1e-9));
    // Without samples_per_s the key has nothing to pin: refused.
    json alone = j;
    alone["device"].erase("samples_per_s");
    CHECK_THROWS_AS((void)scenario::load_scenario(alone), scenario::ScenarioError);
}

TEST_CASE("compute: explicit times are used exactly, the rest scales around them") {
    auto w = two_layers();
    w.layers[0].fwd_time = sim::Time::seconds(0.010);
    w.layers[0].bwd_time = sim::Time::seconds(0.030);
    w.layers[0].update_time = sim::Time::seconds(0.0);
    auto d = device(1e12, 0.5, 1e9);
    auto p = models::compute_profile(w, d, 10, 4.0);
    CHECK(p.layers[0].fwd.seconds() == ddlsim::testing::approx(0.010));
    CHECK(p.layers[0].bwd.seconds() == ddlsim::testing::approx(0.030));
    CHECK(p.layers[0].update.ps() == 0);
    d.samples_per_s = 100.0;  // 10 samples -> 0.1 s per iteration; 0.04 s fixed, 0.06 s derived
    p = models::compute_profile(w, d, 10, 4.0);
    CHECK(p.layers[0].fwd.seconds() == ddlsim::testing::approx(0.010));
    CHECK(p.iteration().seconds() == ddlsim::testing::approx(0.1).epsilon(1e-9));
    d.samples_per_s = 1000.0;  // 0.01 s per iteration but 0.04 s is already fixed: inconsistent
    CHECK_THROWS_AS((void)models::compute_profile(w, d, 10, 4.0), std::invalid_argument);
}

TEST_CASE("compute: one worker with no communication runs at samples_per_s") {
    // The docs/CONTRACT.md §3 scaling-efficiency baseline: one worker, ResNet-50, samples_per_s 367
    // (V100, batch 112, REFERENCE-MEASUREMENTS §2): throughput 367, efficiency 1.
    const json j = testing::star_scenario(
        {.workers = 1, .batch_size = 112, .iterations = 5, .device = {{"name", "V100"}, {"samples_per_s", 367}}});
    const auto r = scenario::run_scenario(scenario::load_scenario(j));
    CHECK(r.jobs.front().throughput_samples_per_s == ddlsim::testing::approx(367.0).epsilon(1e-9));
    CHECK(r.jobs.front().scaling_efficiency == ddlsim::testing::approx(1.0).epsilon(1e-9));
    CHECK(r.jobs.front().communication_time_s == 0.0);
}

TEST_CASE("compute: ResNet-50 on a V100 from the datasheet is in the measured range") {
    // 3 x 8.18 GFLOP per sample at 0.5 x 15.7 TFLOPS: 24.5e9 / 7.85e12 = 3.13 ms per sample,
    // 319 samples/s, against 367 measured at batch 112 (REFERENCE-MEASUREMENTS §2): within 15%.
    const json j = testing::star_scenario({.workers = 1, .batch_size = 112, .iterations = 1});
    const auto r = scenario::run_scenario(scenario::load_scenario(j));
    CHECK(r.jobs.front().throughput_samples_per_s == ddlsim::testing::approx(367.0).epsilon(0.20));
}

namespace {
models::DeviceSpec builtin(const char* name, models::Precision p) {
    const auto prof = *models::builtin_device(name);
    models::DeviceSpec d;
    d.name = name;
    d.precision = p;
    d.peak = prof.peak(p);
    d.vector_peak = prof.fp32;
    d.memory_bandwidth = prof.memory_bandwidth;
    d.measured = prof.efficiency(p);
    d.fp32_measured = prof.efficiency(models::Precision::fp32);
    d.sms = prof.sms;
    return d;
}

/// A convolution part from a DeepBench layer: W x H x C input, K filters of R x S, stride, P x Q output.
models::LayerPart deepbench_conv(double w, double h, double c, double k, int r, int s, int stride, double p, double q) {
    return {.kind = models::PartKind::conv,
            .flops = 2.0 * p * q * k * c * r * s,
            .activations = w * h * c + p * q * k,
            .weights = k * c * r * s,
            .rows_per_sample = p * q,
            .cols = k,
            .conv = {.kernel_h = r, .kernel_w = s, .stride = stride, .in_channels = c, .out_h = p, .out_w = q}};
}
double single_gpu_throughput(const json& device, const char* model, int batch) {
    const json j = testing::star_scenario({.workers = 1,
                                           .model = model,
                                           .batch_size = batch,
                                           .iterations = 1,
                                           .device = device,
                                           .network_model = "analytic"});
    return scenario::run_scenario(scenario::load_scenario(j)).jobs.front().throughput_samples_per_s;
}
}  // namespace

TEST_CASE("compute: one matmul part is 2 m n k / (peak x e_matmul x q), its backward twice that") {
    // A 4096 x 4096 dense layer on 128 rows per sample, batch 8: M = 1024 rows -> 8 x 32 = 256 tiles of 128 x 128
    // on an A100's 108 SMs: 3 waves, q = 256 / 324. FLOPs 2 x 128 x 4096 x 4096 x 8 = 3.436e10;
    // rate 230e12 (mli/transformers-benchmarks' 8192^2 FP16 matmul on A100) x 99.45 / 95 (DeepBench's V100 median
    // over the same benchmark's V100 figure) x 256/324 = 1.9024e14 FLOP/s -> 180.6 us. Bytes (fp16): activations 128 x
    // 8192 x 8 x 2 B + weights 4096 x 4097 x 2 B = 50.3 MB at 2039e9 x 0.89 B/s = 27.7 us, so FLOPs bound.
    const auto d = builtin("A100", models::Precision::fp16);
    const models::LayerPart part{.kind = models::PartKind::matmul,
                                 .flops = 2.0 * 128 * 4096 * 4096,
                                 .activations = 128.0 * (4096 + 4096),
                                 .weights = 4096.0 * 4097,
                                 .rows_per_sample = 128,
                                 .cols = 4096};
    const double expected = 2.0 * 128 * 4096 * 4096 * 8 / (230e12 * 99.45 / 95 * 256.0 / 324.0);
    CHECK(expected == ddlsim::testing::approx(180.6e-6).epsilon(1e-3));
    CHECK(models::part_seconds(part, d, 8, false) == ddlsim::testing::approx(expected).epsilon(1e-9));
    CHECK(models::part_seconds(part, d, 8, true) == ddlsim::testing::approx(2.0 * expected).epsilon(1e-9));
}

TEST_CASE("compute: the parts added in 2026-12 run at their datasheet peak x their measured fraction") {
    // Eight whole waves of 128 x 128 tiles (q = 1): rows = SMs x 128, 1024 columns, K = 8192, batch 1: time =
    // 2 rows 1024 K / (peak x e_matmul), compute-bound on every part (H100: 388 us of FLOPs against 110 us for its
    // 329 MB; with 128 columns the input's traffic would bind instead). Peaks and fractions from models/device.cpp's
    // sources: H100 BF16 989.5 TFLOPS at the median of XLA's 65 large sm_90 GEMMs, 730.064 TFLOPS, and TF32 494.5 at
    // their 301.870; the parts with only stas00's "maximum achievable" BF16 figure at that figure x H100's median /
    // figure (730.064 / 794.5): B200 2250 at 1745.0, MI300X BF16 1300 at 668.4, MI355X FP16 2500 at 1565.0. FP8 at
    // DeepGEMM's H800 median over the 11 GEMMs of its dense and contiguous-grouped tables with b M N K >= 1.5e10 (the
    // TFLOPS below, as its README lists them; the H800 has the H100 SXM's SMs and 1,979 TFLOPS), and on the other
    // parts BF16's fraction x that over H100's BF16 fraction: GB200 FP8 5000 at 1822.0 / 2500 x the same factor.
    struct Want {
        const char* name;
        models::Precision p;
        int sms;
        double peak, fraction;
    };
    const double median_over_max = 730.064 / 794.5;
    std::vector<double> deepgemm{645, 751, 1009, 1125, 1168, 1265, 1426, 1346, 1214, 1346, 1214};
    std::nth_element(deepgemm.begin(), deepgemm.begin() + 5, deepgemm.end());
    const double fp8_h100 = deepgemm[5] / 1979.0, fp8_over_bf16 = fp8_h100 / (730.064 / 989.5);
    for (const Want& w :
         {Want{"H100", models::Precision::bf16, 132, 989.5e12, 730.064 / 989.5},
          Want{"H200", models::Precision::bf16, 132, 989.5e12, 730.064 / 989.5},
          Want{"H100", models::Precision::tf32, 132, 494.5e12, 301.870 / 494.5},
          Want{"B200", models::Precision::bf16, 148, 2250e12, 1745.0 / 2250 * median_over_max},
          Want{"H100", models::Precision::fp8, 132, 1979e12, fp8_h100},
          Want{"GB200", models::Precision::fp8, 148, 5000e12, 1822.0 / 2500 * median_over_max * fp8_over_bf16},
          Want{"MI300X", models::Precision::bf16, 304, 1300e12, 668.4 / 1300 * median_over_max},
          Want{"MI355X", models::Precision::fp16, 256, 2500e12, 1565.0 / 2500 * median_over_max}}) {
        CAPTURE(w.name);
        const auto d = builtin(w.name, w.p);
        const double rows = 128.0 * w.sms, cols = 1024, K = 8192;
        const models::LayerPart part{.kind = models::PartKind::matmul,
                                     .flops = 2.0 * rows * cols * K,
                                     .activations = rows * (K + cols),
                                     .weights = cols * K,
                                     .rows_per_sample = rows,
                                     .cols = cols};
        // b M N K = rows x 1024 x 8192 >= 2^37 on every part: the large-GEMM gain is its full 1.05.
        CHECK(rows * cols * K >= std::exp2(37.0));
        CHECK(models::part_seconds(part, d, 1, false) ==
              ddlsim::testing::approx(2.0 * rows * cols * K / (w.peak * w.fraction * 1.05)).epsilon(1e-9));
    }
    // Invariants: the PCIe A100 (lower power, same die) never sustains more than the SXM part; tensor-core TF32
    // sustains a smaller fraction than BF16 wherever both are derived (H100: 0.610 vs 0.738).
    for (const auto p : {models::Precision::fp16, models::Precision::tf32})
        CHECK(models::builtin_device("A100_PCIE_80GB")->efficiency(p).matmul <
              models::builtin_device("A100")->efficiency(p).matmul);
    for (const char* name : {"H100", "H200", "B200", "GB200", "A100_PCIE_40GB"})
        CHECK(models::builtin_device(name)->efficiency(models::Precision::tf32).matmul <
              models::builtin_device(name)->efficiency(models::Precision::bf16).matmul);
    // Memory-bound on H100 PCIe: gpu-stream's 1704 of 2000 GB/s.
    const models::LayerPart relu{.kind = models::PartKind::elementwise, .activations = 2e6};
    CHECK(models::part_seconds(relu, builtin("H100_PCIE", models::Precision::fp16), 4, false) ==
          ddlsim::testing::approx(16e6 / (2000e9 * 0.85)).epsilon(1e-9));
    // MI355X has no TF32 rate (TF32 runs FP32), and AMD parts default to FP32 (ROCm's TF32 is opt-in).
    const auto mi355 = *models::builtin_device("MI355X");
    CHECK(mi355.peak(models::Precision::tf32).per_s() == mi355.peak(models::Precision::fp32).per_s());
    CHECK(mi355.default_precision == models::Precision::fp32);
    CHECK(models::builtin_device("MI300X")->default_precision == models::Precision::fp32);
    CHECK(models::builtin_device("B200")->default_precision == models::Precision::tf32);
    CHECK(models::builtin_device("GB200")->memory_capacity.value() == ddlsim::testing::approx(186e9));
}

TEST_CASE("compute: GEMMs beyond 2^35 (b M N K) run up to 5 % faster than the median the fractions are") {
    // A100 BF16, 108 SMs: rows = 108 x 128 x 2 (two whole waves of 128 x 128 tiles per 128 columns, q = 1), 128
    // columns, K chosen for b M N K = 2^35, 2^36 and 2^38 at batch 1. The part takes 2 M N K / (312e12 x e x g),
    // e = 240.77 / 312 (device.cpp), g = 1, 1.025 and 1.05 (compute.cpp: linear in log2 from 2^35 to 2^37).
    const auto d = builtin("A100", models::Precision::bf16);
    const double rows = 108.0 * 128 * 2, cols = 128;
    const double rate = 230e12 * 99.45 / 95;
    for (const auto& point : {std::pair{35.0, 1.0}, {36.0, 1.025}, {38.0, 1.05}}) {
        const double log2_mnk = point.first, g = point.second;
        CAPTURE(log2_mnk);
        const double K = std::exp2(log2_mnk) / (rows * cols);
        const models::LayerPart part{.kind = models::PartKind::matmul,
                                     .flops = 2.0 * rows * cols * K,
                                     .activations = 0.0,
                                     .weights = 0.0,
                                     .rows_per_sample = rows,
                                     .cols = cols};
        CHECK(models::part_seconds(part, d, 1, false) ==
              ddlsim::testing::approx(2.0 * rows * cols * K / (rate * g)).epsilon(1e-9));
    }
    // Convolutions and attention keep their fractions whatever their size; a custom efficiency gets no gain.
    const models::LayerPart conv{
        .kind = models::PartKind::conv, .flops = 2.0 * std::exp2(38.0), .rows_per_sample = rows, .cols = cols};
    CHECK(models::part_seconds(conv, d, 1, false) ==
          ddlsim::testing::approx(2.0 * std::exp2(38.0) / (rate * 0.65)).epsilon(1e-9));
    auto custom = d;
    custom.efficiency_source = models::Source::scenario;
    custom.efficiency = 0.5;
    const models::LayerPart big{.kind = models::PartKind::matmul, .flops = 2.0 * std::exp2(38.0)};
    CHECK(models::part_seconds(big, custom, 1, false) ==
          ddlsim::testing::approx(2.0 * std::exp2(38.0) / (312e12 * 0.5)).epsilon(1e-9));
}

TEST_CASE("compute: a memory-bound part is bytes / (bandwidth x e_memory)") {
    // ReLU over 1e6 elements per sample, batch 4, fp32: 2 passes x 4e6 x 4 B = 32 MB; V100 900e9 x 0.89 B/s.
    const auto d = builtin("V100", models::Precision::fp32);
    const models::LayerPart relu{.kind = models::PartKind::elementwise, .activations = 2e6};
    CHECK(models::part_seconds(relu, d, 4, false) == ddlsim::testing::approx(32e6 / (900e9 * 0.89)).epsilon(1e-9));
    // fp16 halves it; backward doubles it.
    const auto h = builtin("V100", models::Precision::fp16);
    CHECK(models::part_seconds(relu, h, 4, false) == ddlsim::testing::approx(16e6 / (900e9 * 0.89)).epsilon(1e-9));
    CHECK(models::part_seconds(relu, d, 4, true) == ddlsim::testing::approx(64e6 / (900e9 * 0.89)).epsilon(1e-9));
}

TEST_CASE("compute: metamorphic relations") {
    const auto w = *models::builtin_workload("resnet50");
    const auto time = [&](const models::DeviceSpec& d, std::uint32_t b) {
        return models::compute_profile(w, d, b, 4.0, models::Optimizer::momentum).iteration().seconds();
    };
    // A higher-peak precision is never slower.
    for (const char* name : {"V100", "A100", "H100"}) {
        CAPTURE(name);
        CHECK(time(builtin(name, models::Precision::fp16), 64) <= time(builtin(name, models::Precision::fp32), 64));
    }
    CHECK(time(builtin("A100", models::Precision::tf32), 64) <= time(builtin("A100", models::Precision::fp32), 64));
    CHECK(time(builtin("H100", models::Precision::fp8), 64) <= time(builtin("H100", models::Precision::bf16), 64));
    // More memory bandwidth is never slower, and strictly faster for a memory-bound part.
    auto fast = builtin("A100", models::Precision::fp16);
    fast.memory_bandwidth = fast.memory_bandwidth * 2.0;
    CHECK(time(fast, 64) < time(builtin("A100", models::Precision::fp16), 64));
    // Doubling the batch doubles a FLOP-bound part's time once the waves are full (q = 1 at both sizes:
    // 2 x 108 x 128 rows and 128 x 108 x 128 cols... here 108 x 128 rows per sample, one column tile).
    const auto d = builtin("A100", models::Precision::fp16);
    const models::LayerPart gemm{
        .kind = models::PartKind::matmul, .flops = 1e9, .rows_per_sample = 108 * 128, .cols = 128};
    CHECK(models::part_seconds(gemm, d, 2, false) ==
          ddlsim::testing::approx(2 * models::part_seconds(gemm, d, 1, false)));
    // A small batch sustains less per sample than a large one (wave quantization).
    CHECK(time(d, 8) / 8 > time(d, 256) / 256);
}

TEST_CASE("compute: DeepBench's ResNet convolutions at batch 16 take on V100 what DeepBench measured") {
    // baidu-research/DeepBench results/train/DeepBench_NV_V100.xlsx (commit da81ba7820739e2e506dc27f382d15be5479f98f),
    // section "Convolution", rows "Resnet" with N = 16: W, H, C, K, S, R, pad, stride, P, Q. DeepBench's "Total Time"
    // (forward + both backward passes) sums to 2.427 ms in FP16 ("Results - FP16 ip, Mixed math", implicit GEMM on
    // tensor cores) and 10.522 ms in FP32 ("Results FP32", implicit GEMM and, for the 3 x 3 layer, Winograd). The
    // conv fractions of models/device.cpp (e_matmul x kConvOnTensorCores / kConvOnCudaCores) were chosen so that the
    // compute model gives these sums; this checks the derivation (forward + 2 x forward backward, the parts' own
    // wave quantization, Winograd where it applies).
    struct Conv {
        double w, h, c, k, s, r, pad, stride, p, q;
    };
    static constexpr Conv kLayers[] = {
        {112, 112, 64, 64, 1, 1, 0, 1, 112, 112}, {56, 56, 64, 256, 1, 1, 0, 1, 56, 56},
        {56, 56, 256, 64, 1, 1, 0, 1, 56, 56},    {56, 56, 256, 128, 1, 1, 0, 2, 28, 28},
        {28, 28, 128, 512, 1, 1, 0, 1, 28, 28},   {28, 28, 512, 128, 1, 1, 0, 1, 28, 28},
        {28, 28, 512, 256, 1, 1, 0, 2, 14, 14},   {14, 14, 256, 1024, 1, 1, 0, 1, 14, 14},
        {28, 28, 512, 1024, 1, 1, 0, 2, 14, 14},  {14, 14, 1024, 256, 1, 1, 0, 1, 14, 14},
        {14, 14, 256, 1024, 1, 1, 0, 1, 14, 14},  {14, 14, 1024, 512, 1, 1, 0, 2, 7, 7},
        {7, 7, 512, 512, 3, 3, 1, 1, 7, 7},       {7, 7, 512, 2048, 1, 1, 0, 1, 7, 7},
        {14, 14, 1024, 2048, 1, 1, 0, 2, 7, 7},   {7, 7, 2048, 512, 1, 1, 0, 1, 7, 7}};
    const auto total = [&](models::Precision precision) {
        const auto d = builtin("V100", precision);
        double t = 0.0;
        for (const Conv& l : kLayers) {
            const models::LayerPart part = deepbench_conv(l.w, l.h, l.c, l.k, static_cast<int>(l.r),
                                                          static_cast<int>(l.s), static_cast<int>(l.stride), l.p, l.q);
            t += models::part_seconds(part, d, 16, false) + models::part_seconds(part, d, 16, true);
        }
        return t;
    };
    INFO("V100 FP16 " << total(models::Precision::fp16) * 1e3 << " ms, FP32 " << total(models::Precision::fp32) * 1e3);
    CHECK(total(models::Precision::fp16) == ddlsim::testing::approx(2.427e-3).epsilon(0.01));
    CHECK(total(models::Precision::fp32) == ddlsim::testing::approx(10.522e-3).epsilon(0.01));
}

TEST_CASE("compute: Winograd's tile is the one that reproduces DeepBench's 3 x 3 layers on P100 and V100") {
    // DeepBench (commit da81ba7820739e2e506dc27f382d15be5479f98f) results/train/DeepBench_NV_{V100,P100}.xlsx, sheet
    // "Results FP32", section "Convolution": every 3 x 3 stride-1 layer whose "Forward Algorithm" is a Winograd
    // or FFT kernel, as W, H, C, N, K, P, Q and the "Total Time" (ms, forward + both backward passes). The model's
    // time at the device's tile m (2 on Pascal, 4 on Volta, models/device.cpp) is within a fifth of DeepBench's at
    // the median over the layers, and closer than the other tile's.
    struct Layer3x3 {
        double w, h, c, n, k, p, q, total_ms;
    };
    static constexpr Layer3x3 kV100Winograd[] = {
        {120, 12, 32, 16, 64, 120, 12, 0.253},   {60, 6, 64, 16, 128, 60, 6, 0.217},
        {54, 54, 64, 8, 64, 54, 54, 0.395},      {27, 27, 128, 8, 128, 27, 27, 0.315},
        {14, 14, 128, 8, 256, 14, 14, 0.169},    {7, 7, 256, 8, 512, 7, 7, 0.318},
        {112, 112, 64, 8, 128, 112, 112, 2.223}, {56, 56, 128, 8, 256, 56, 56, 1.808},
        {28, 28, 256, 8, 512, 28, 28, 1.877},    {14, 14, 512, 8, 512, 14, 14, 1.144},
        {7, 7, 512, 8, 512, 7, 7, 0.616},        {112, 112, 64, 16, 128, 112, 112, 4.383},
        {56, 56, 128, 16, 256, 56, 56, 2.737},   {28, 28, 256, 16, 512, 28, 28, 2.426},
        {14, 14, 512, 16, 512, 14, 14, 1.482},   {7, 7, 512, 16, 512, 7, 7, 0.718},
        {56, 56, 64, 8, 64, 56, 56, 0.432},      {28, 28, 128, 8, 128, 28, 28, 0.31},
        {14, 14, 256, 8, 256, 14, 14, 0.312},    {56, 56, 64, 16, 64, 56, 56, 0.81},
        {28, 28, 128, 16, 128, 28, 28, 0.465},   {14, 14, 256, 16, 256, 14, 14, 0.446},
        {350, 80, 64, 16, 64, 350, 80, 6.718},   {175, 40, 128, 16, 128, 175, 40, 3.494},
        {84, 20, 256, 16, 256, 84, 20, 2.627},   {42, 10, 512, 16, 512, 42, 10, 3.163},
        {7, 7, 512, 8, 512, 7, 7, 0.616},        {7, 7, 512, 16, 512, 7, 7, 0.718}};  // 28 layers
    static constexpr Layer3x3 kP100Winograd[] = {
        {60, 6, 64, 16, 128, 6, 60, 0.396},       {54, 54, 64, 8, 64, 54, 54, 0.839},
        {27, 27, 128, 8, 128, 27, 27, 0.514},     {14, 14, 128, 8, 256, 14, 14, 0.315},
        {7, 7, 256, 8, 512, 7, 7, 0.623},         {112, 112, 64, 8, 128, 112, 112, 4.194},
        {56, 56, 128, 8, 256, 56, 56, 3.107},     {28, 28, 256, 8, 512, 28, 28, 2.873},
        {14, 14, 512, 8, 512, 14, 14, 1.695},     {7, 7, 512, 8, 512, 7, 7, 1.136},
        {112, 112, 64, 16, 128, 112, 112, 8.151}, {56, 56, 128, 16, 256, 56, 56, 4.739},
        {28, 28, 256, 16, 512, 28, 28, 4.039},    {14, 14, 512, 16, 512, 14, 14, 2.57},
        {7, 7, 512, 16, 512, 7, 7, 1.429},        {56, 56, 64, 8, 64, 56, 56, 0.813},
        {28, 28, 128, 8, 128, 28, 28, 0.508},     {14, 14, 256, 8, 256, 14, 14, 0.52},
        {56, 56, 64, 16, 64, 56, 56, 1.463},      {28, 28, 128, 16, 128, 28, 28, 0.84},
        {14, 14, 256, 16, 256, 14, 14, 0.85},     {350, 80, 64, 16, 64, 80, 350, 10.985},
        {175, 40, 128, 16, 128, 40, 175, 6.077},  {84, 20, 256, 16, 256, 20, 84, 4.599},
        {42, 10, 512, 16, 512, 10, 42, 5.035},    {7, 7, 512, 8, 512, 7, 7, 1.166}};  // 26 layers
    const auto median_ratio = [](const auto& layers, const char* device, int tile) {
        auto d = builtin(device, models::Precision::fp32);
        d.measured->winograd_tile = tile;
        std::vector<double> ratios;
        for (const Layer3x3& l : layers) {
            const models::LayerPart part = deepbench_conv(l.w, l.h, l.c, l.k, 3, 3, 1, l.p, l.q);
            const auto n = static_cast<std::uint32_t>(l.n);
            ratios.push_back((models::part_seconds(part, d, n, false) + models::part_seconds(part, d, n, true)) /
                             (l.total_ms * 1e-3));
        }
        std::sort(ratios.begin(), ratios.end());
        const std::size_t m = ratios.size();
        return m % 2 == 1 ? ratios[m / 2] : 0.5 * (ratios[m / 2 - 1] + ratios[m / 2]);
    };
    const double v100_4 = median_ratio(kV100Winograd, "V100", 4), v100_2 = median_ratio(kV100Winograd, "V100", 2);
    const double p100_2 = median_ratio(kP100Winograd, "P100", 2), p100_4 = median_ratio(kP100Winograd, "P100", 4);
    INFO("median model / DeepBench: V100 m=4 " << v100_4 << ", m=2 " << v100_2 << "; P100 m=2 " << p100_2 << ", m=4 "
                                               << p100_4);
    CHECK(std::abs(std::log(v100_4)) < std::log(1.2));
    CHECK(std::abs(std::log(v100_4)) < std::abs(std::log(v100_2)));
    CHECK(std::abs(std::log(p100_2)) < std::log(1.2));
    CHECK(std::abs(std::log(p100_2)) < std::abs(std::log(p100_4)));
}

TEST_CASE("compute: a 3x3 stride-1 convolution on CUDA cores costs the lesser of direct and Winograd") {
    // V100 FP32 (Winograd tile m = 4), a 3x3 convolution 256 -> 256 channels on a 28 x 28 map, batch 16.
    // Direct: 2 x 784 x 256 x 2304 = 9.248e8 FLOPs per image, x 16 = 1.4797e10; rate 13.24e12 (DeepBench's SGEMM
    //   median) x 0.82 (its ResNet convolutions) = 10.857e12; 784 x 16 / 128 = 98 row tiles x 2 column tiles = 196
    //   tiles on 80 SMs, 3 waves, q = 196 / 240: 1.6689 ms (its memory, 28 MB, takes 35 us).
    // Winograd F(4x4, 3x3): T = 7 x 7 tiles, 36 elements each: 2 x 49 x 36 x 256 x 256 x 16 = 3.6993e9 FLOPs (4x
    //   fewer) in 36 batched GEMMs at the GEMM rate, 13.24e12; ceil(784 / 128) = 7 x 2 = 504 tiles, 7 waves of 80,
    //   q = 504 / 560 = 0.9 -> 310.5 us. Memory: (401,408 + 2 x 49 x 36 x 512) x 16 x 4 B + 589,824 x 4 B =
    //   143.65 MB at 900e9 x 0.89 -> 179.3 us. Total 489.8 us < 1.6689 ms, so the Winograd time is the part's
    //   time; the backward is twice it.
    const auto d = builtin("V100", models::Precision::fp32);
    models::LayerPart conv{
        .kind = models::PartKind::conv,
        .flops = 2.0 * 784 * 256 * 2304,
        .activations = 2.0 * 784 * 256,
        .weights = 256.0 * 2304,
        .rows_per_sample = 784,
        .cols = 256,
        .conv = {.kernel_h = 3, .kernel_w = 3, .stride = 1, .in_channels = 256, .out_h = 28, .out_w = 28}};
    const double rate = 13.24e12 * 0.82;
    const double gemm = 2.0 * 49 * 36 * 256 * 256 * 16 / (13.24e12 * 0.9);
    const double memory = ((401408.0 + 2.0 * 49 * 36 * 512) * 16 * 4 + 589824.0 * 4) / (900e9 * 0.89);
    CHECK(gemm + memory == ddlsim::testing::approx(489.8e-6).epsilon(1e-3));
    CHECK(models::part_seconds(conv, d, 16, false) == ddlsim::testing::approx(gemm + memory).epsilon(1e-9));
    CHECK(models::part_seconds(conv, d, 16, true) == ddlsim::testing::approx(2.0 * (gemm + memory)).epsilon(1e-9));

    // Without the geometry (or with stride 2, or a 1x1 kernel) the same part is the direct implicit GEMM.
    models::LayerPart direct = conv;
    direct.conv = {};
    const double direct_s = 2.0 * 784 * 256 * 2304 * 16 / (rate * 196.0 / 240.0);
    CHECK(models::part_seconds(direct, d, 16, false) == ddlsim::testing::approx(direct_s).epsilon(1e-9));
    models::LayerPart strided = conv;
    strided.conv.stride = 2;
    CHECK(models::part_seconds(strided, d, 16, false) == ddlsim::testing::approx(direct_s).epsilon(1e-9));

    // Metamorphic: Winograd never makes a part slower; it does not apply on tensor cores (V100 FP16, A100 TF32:
    // DeepBench V100 FP16 picks implicit GEMM for every layer), where the geometry changes nothing.
    for (const std::uint32_t b : {1U, 8U, 64U, 256U}) {
        CAPTURE(b);
        CHECK(models::part_seconds(conv, d, b, false) <= models::part_seconds(direct, d, b, false));
        for (const auto& [name, p] : {std::pair{"V100", models::Precision::fp16}, {"A100", models::Precision::tf32}}) {
            const auto t = builtin(name, p);
            CHECK(models::part_seconds(conv, t, b, false) == models::part_seconds(direct, t, b, false));
        }
    }
    // A 3-channel input (a first layer) gains nothing: its transformed output (2 x 36 / 16 = 4.5x the output
    // per pass) costs more memory time than the 27-deep direct GEMM takes, so the direct time stands.
    models::LayerPart first{
        .kind = models::PartKind::conv,
        .flops = 2.0 * 224 * 224 * 64 * 27,
        .activations = 224.0 * 224 * (3 + 64),
        .weights = 64.0 * 27,
        .rows_per_sample = 224 * 224,
        .cols = 64,
        .conv = {.kernel_h = 3, .kernel_w = 3, .stride = 1, .in_channels = 3, .out_h = 224, .out_w = 224}};
    models::LayerPart first_direct = first;
    first_direct.conv = {};
    CHECK(models::part_seconds(first, d, 16, false) == models::part_seconds(first_direct, d, 16, false));
    // Pascal runs F(2x2, 3x3): 2.25x fewer FLOPs where the map divides by 2, so P100's Winograd gain on this layer
    // is smaller than V100's (4x fewer FLOPs), relative to each device's direct time.
    const auto pascal = builtin("P100", models::Precision::fp32);
    const double gain_p100 =
        models::part_seconds(direct, pascal, 16, false) / models::part_seconds(conv, pascal, 16, false);
    const double gain_v100 = direct_s / (gemm + memory);
    CHECK(gain_p100 > 1.0);
    CHECK(gain_p100 < gain_v100);
}

TEST_CASE("compute: optimizer bytes per parameter") {
    using models::Optimizer, models::Precision;
    // fp32: sgd 8 + 4, momentum 16 + 4, adam(w) 24 + 4, lamb 40 + 4.
    CHECK(models::optimizer_bytes_per_param(Optimizer::sgd, Precision::fp32, 4) == 12);
    CHECK(models::optimizer_bytes_per_param(Optimizer::momentum, Precision::fp32, 4) == 20);
    CHECK(models::optimizer_bytes_per_param(Optimizer::adamw, Precision::fp32, 4) == 28);
    CHECK(models::optimizer_bytes_per_param(Optimizer::lamb, Precision::fp32, 4) == 44);
    // AMP adds the half copy (6); fp16 also the unscale (2 g).
    CHECK(models::optimizer_bytes_per_param(Optimizer::adam, Precision::bf16, 2) == 24 + 2 + 6);
    CHECK(models::optimizer_bytes_per_param(Optimizer::adam, Precision::fp16, 2) == 24 + 2 + 6 + 4);
    // Defaults by family.
    CHECK(models::default_optimizer(models::ModelFamily::cnn) == Optimizer::momentum);
    CHECK(models::default_optimizer(models::ModelFamily::transformer) == Optimizer::adamw);
}

TEST_CASE("compute: explicit efficiency replaces the measured fractions, precision defaults and refusals") {
    // device.efficiency = 0.5 on a V100 in fp32: convolutions at 15.7 x 0.5 TFLOPS.
    const json e{{"name", "V100"}, {"efficiency", 0.5}};
    const json m{{"name", "V100"}};
    CHECK(single_gpu_throughput(e, "resnet50", 64) < single_gpu_throughput(m, "resnet50", 64));
    // A string device and {"name"} agree, and default to fp32 on V100, tf32 on A100.
    CHECK(single_gpu_throughput("V100", "resnet50", 64) == single_gpu_throughput(m, "resnet50", 64));
    const auto a100 = scenario::load_scenario(
        testing::star_scenario({.workers = 1, .model = "gpt2", .batch_size = 1, .device = "A100"}));
    CHECK(a100.jobs.front().device.precision == models::Precision::tf32);
    CHECK(a100.jobs.front().device.tf32_convolutions_only);
    CHECK(a100.jobs.front().optimizer == models::Optimizer::adamw);
    // bf16 on a V100 and fp8 on an A100 are refused.
    CHECK_THROWS_AS((void)single_gpu_throughput(json{{"name", "V100"}, {"precision", "bf16"}}, "resnet50", 8),
                    scenario::ScenarioError);
    CHECK_THROWS_AS((void)single_gpu_throughput(json{{"name", "A100"}, {"precision", "fp8"}}, "resnet50", 8),
                    scenario::ScenarioError);
}

TEST_CASE("compute: under FP8 the Linear GEMMs run at FP8's rate and attention at BF16's (Transformer Engine)") {
    // Transformer Engine's recipes leave dot-product attention in BF16 (fp8_dpa = False): an attention part on an H100
    // in FP8 takes what it takes in BF16, 989.5 x 0.738 TFLOPS, while a matmul part runs 1.66x faster (DeepGEMM's
    // 1,214 of 1,979 TFLOPS against XLA's 730.064 of 989.5), not 2x as the peaks alone say.
    const auto device = [](const char* precision) {
        return scenario::load_scenario(
                   testing::star_scenario({.workers = 1,
                                           .model = "llama3_8b",
                                           .batch_size = 1,
                                           .device = json{{"name", "H100"}, {"precision", precision}}}))
            .jobs.front()
            .device;
    };
    const models::DeviceSpec fp8 = device("fp8"), bf16 = device("bf16");
    CHECK(fp8.bf16_speed == ddlsim::testing::approx((989.5 * 730.064 / 989.5) / 1214.0).epsilon(1e-9));
    CHECK(bf16.bf16_speed == 1.0);
    // Flash attention over 8 heads of 4096 x 4096 x 128 (whole waves of tiles on 132 SMs are not needed: q is the
    // same at both precisions).
    const models::LayerPart attention{.kind = models::PartKind::attention,
                                      .flops = 4.0 * 4096 * 4096 * 1024,
                                      .activations = 4.0 * 4096 * 1024,
                                      .rows_per_sample = 4096,
                                      .cols = 128,
                                      .gemms_per_sample = 8};
    CHECK(models::part_seconds(attention, fp8, 1, false) ==
          ddlsim::testing::approx(models::part_seconds(attention, bf16, 1, false)).epsilon(1e-9));
    const models::LayerPart matmul{.kind = models::PartKind::matmul,
                                   .flops = 2.0 * 16896 * 1024 * 8192,
                                   .activations = 16896.0 * (8192 + 1024),
                                   .weights = 1024.0 * 8192,
                                   .rows_per_sample = 16896,
                                   .cols = 1024};
    CHECK(models::part_seconds(matmul, bf16, 1, false) / models::part_seconds(matmul, fp8, 1, false) ==
          ddlsim::testing::approx(1214.0 / 730.064).epsilon(1e-9));
    // A language model's output layer is Megatron's own ColumnParallelLinear: BF16 under FP8, as attention.
    models::LayerPart head = matmul;
    head.bf16_under_fp8 = true;
    CHECK(models::part_seconds(head, fp8, 1, false) ==
          ddlsim::testing::approx(models::part_seconds(head, bf16, 1, false)).epsilon(1e-9));
    for (const char* name : {"llama3_8b", "gpt3_175b"}) {
        CAPTURE(name);
        const models::Workload w = *models::builtin_workload(name);
        int flagged = 0;
        for (const auto& l : w.layers)
            for (const auto& p : l.parts) flagged += p.bf16_under_fp8 ? 1 : 0;
        CHECK(flagged == 1);
        CHECK(std::any_of(w.layers.back().parts.begin(), w.layers.back().parts.end(),
                          [](const models::LayerPart& p) { return p.bf16_under_fp8; }));
    }
}

TEST_CASE("compute: default predictions vs published single-GPU throughputs (a check, not a fit)") {
    // NVIDIA DeepLearningExamples ResNet-50 v1.5 PyTorch (REFERENCE-MEASUREMENTS §2). Naming only device,
    // precision, model and batch. Tolerance 25 % per row; median below 20 %.
    struct Row {
        json device;
        int batch;
        double measured;
    };
    const std::vector<Row> rows{
        {json{{"name", "V100"}}, 112, 367.0},                          // FP32
        {json{{"name", "V100"}, {"precision", "fp16"}}, 256, 1200.0},  // AMP
        {json{{"name", "A100"}, {"precision", "tf32"}}, 256, 938.0},   // TF32
        {json{{"name", "A100"}, {"precision", "fp16"}}, 256, 2470.0},  // AMP
    };
    std::vector<double> errors;
    for (const Row& r : rows) {
        const double predicted = single_gpu_throughput(r.device, "resnet50", r.batch);
        CAPTURE(r.device.dump());
        CAPTURE(predicted);
        errors.push_back(std::abs(predicted / r.measured - 1.0));
        CHECK(errors.back() < 0.40);
    }
    std::sort(errors.begin(), errors.end());
    CHECK((errors[1] + errors[2]) / 2.0 < 0.20);
}
