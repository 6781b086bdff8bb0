// Kernels beyond the roofline (models/compute.cpp): every kernel of a built-in model pays a device gap of 0.875 us,
// the host launches each (eager 17.35 us: PyTorch's dispatch, autograd and launch; compiled 5 us: the launch alone)
// except under CUDA graphs (optimized), and compiled / optimized fuse element-wise chains.
// Each expectation is derived by hand from those two constants and the roofline.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include "models/compute.hpp"
#include "models/workload.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/scenario_harness.hpp"
#include "tests/support/support.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

constexpr double kGap = 70e-6 / 80.0;  // CUDA.jl's 80 kernels in one graph
constexpr double kHost = 17.35e-6;     // eager: measured per kernel of an eager step (validate/gpu_bench/)
constexpr double kLaunch = 5e-6;       // compiled: HTA's lower bound of a host launch

// A custom device: 1 TFLOPS at efficiency 1, 1 GB/s of memory taken as given (e_memory = 1), fp32 (4-byte elements).
models::DeviceSpec slow_device(models::Software software) {
    models::DeviceSpec d;
    d.name = "d";
    d.peak = sim::FlopRate::per_s(1e12);
    d.efficiency = 1.0;
    d.memory_bandwidth = sim::Bandwidth::bytes_per_s(1e9);
    d.software = software;
    return d;
}

// One layer of built-in-style parts: a matmul of `flops` per sample writing e elements, then a norm (3 passes over
// e) and an element-wise op (2 passes over e), as the CNN builders add conv, BatchNorm and ReLU.
models::Workload conv_bn_relu(double flops, double e) {
    models::Workload w;
    w.name = "t";
    models::Layer l{"l", {{"l.w", 10}}, flops, std::nullopt, std::nullopt, std::nullopt, {}};
    l.parts.push_back(models::LayerPart{.kind = models::PartKind::matmul, .flops = flops});
    l.parts.push_back(models::LayerPart{.kind = models::PartKind::norm, .activations = 3.0 * e, .elements = e});
    l.parts.push_back(models::LayerPart{.kind = models::PartKind::elementwise, .activations = 2.0 * e, .elements = e});
    w.layers.push_back(l);
    return w;
}

double fwd_s(const models::Workload& w, const models::DeviceSpec& d, std::uint32_t b) {
    return models::compute_profile(w, d, b, 4.0).layers.at(0).fwd.seconds();
}
double bwd_s(const models::Workload& w, const models::DeviceSpec& d, std::uint32_t b) {
    return models::compute_profile(w, d, b, 4.0).layers.at(0).bwd.seconds();
}

}  // namespace

TEST_CASE("kernels: eager pays a device gap per kernel, and the host's launches bound a small layer") {
    using S = models::Software;
    // Large: 1 GFLOP and 1e6 elements per sample at b = 10: matmul 10 ms, norm 3e6 x 4 x 10 / 1e9 = 120 ms, the
    // element-wise op 80 ms; three kernels forward (one gap each), four backward (the matmul's two gradients).
    const models::Workload big = conv_bn_relu(1e9, 1e6);
    // Eager's BatchNorm is 3 more kernels forward and 1 more backward (PyTorch's statistics, transform, running
    // stats and counter; models/compute.cpp), each a gap: 6 gaps forward, 5 backward.
    CHECK(fwd_s(big, slow_device(S::eager), 10) ==
          ddlsim::testing::approx(0.010 + 0.120 + 0.080 + 6 * kGap).epsilon(1e-12));
    CHECK(bwd_s(big, slow_device(S::eager), 10) == ddlsim::testing::approx(2 * (0.210) + 5 * kGap).epsilon(1e-12));
    // Tiny: 1 kFLOP and 10 elements per sample at b = 1 are nanoseconds of work; the host launches 6 kernels forward
    // and 5 backward, 17.35 us each, which the device's gaps (0.875 us) do not reach.
    const models::Workload tiny = conv_bn_relu(1e3, 10);
    CHECK(fwd_s(tiny, slow_device(S::eager), 1) == ddlsim::testing::approx(6 * kHost).epsilon(1e-12));
    CHECK(bwd_s(tiny, slow_device(S::eager), 1) == ddlsim::testing::approx(5 * kHost).epsilon(1e-12));
    // compiled fuses the norm and the element-wise op: 2 kernels forward, 3 backward, each launched in 5 us.
    CHECK(fwd_s(tiny, slow_device(S::compiled), 1) == ddlsim::testing::approx(2 * kLaunch).epsilon(1e-12));
    CHECK(bwd_s(tiny, slow_device(S::compiled), 1) == ddlsim::testing::approx(3 * kLaunch).epsilon(1e-12));
    // CUDA graphs (optimized): no host launches; the chain is one kernel, so two device gaps forward and three
    // backward plus the roofline of what is left (nanoseconds: the matmul's 1 ns, the chain's 3 x 10 x 4 B / 1 GB/s).
    CHECK(fwd_s(tiny, slow_device(S::optimized), 1) == ddlsim::testing::approx(2 * kGap + 1e-9 + 120e-9).epsilon(1e-9));
    CHECK(bwd_s(tiny, slow_device(S::optimized), 1) == ddlsim::testing::approx(3 * kGap + 2e-9 + 240e-9).epsilon(1e-9));
}

TEST_CASE("kernels: eager autocast casts each GEMM weight down and its gradient back, one kernel each way") {
    using S = models::Software;
    // One layer: a matmul of 1 kFLOP with 10 weight elements and nothing else, at b = 1: host-bound. FP32: 1 kernel
    // forward, 2 backward. Under fp16 autocast one more each way (the weight's cast, the gradient's cast back); a
    // GEMM without weights (attention's products) casts nothing; compiled fuses the cast (no extra kernel).
    models::Workload w;
    w.name = "t";
    models::Layer l{"l", {{"l.w", 10}}, 1e3, std::nullopt, std::nullopt, std::nullopt, {}};
    l.parts.push_back(models::LayerPart{.kind = models::PartKind::matmul, .flops = 1e3, .weights = 10});
    w.layers.push_back(l);
    auto fp16 = [](models::Software software) {
        auto d = slow_device(software);
        d.precision = models::Precision::fp16;
        return d;
    };
    CHECK(fwd_s(w, slow_device(S::eager), 1) == ddlsim::testing::approx(1 * kHost).epsilon(1e-12));
    CHECK(bwd_s(w, slow_device(S::eager), 1) == ddlsim::testing::approx(2 * kHost).epsilon(1e-12));
    CHECK(fwd_s(w, fp16(S::eager), 1) == ddlsim::testing::approx(2 * kHost).epsilon(1e-12));
    CHECK(bwd_s(w, fp16(S::eager), 1) == ddlsim::testing::approx(3 * kHost).epsilon(1e-12));
    CHECK(fwd_s(w, fp16(S::compiled), 1) == ddlsim::testing::approx(1 * kLaunch).epsilon(1e-12));
    w.layers[0].parts[0].weights = 0.0;
    CHECK(fwd_s(w, fp16(S::eager), 1) == ddlsim::testing::approx(1 * kHost).epsilon(1e-12));
    // ResNet-50 in fp16 eager at batch 1: 53 convolutions and the classifier cast (54 each way) and 53 BatchNorms
    // (3 more forward, 1 more backward) beside one kernel per part forward and two per GEMM backward.
    const models::Workload rn50 = models::builtin_workload("resnet50").value();
    double parts_fwd = 0.0, parts_bwd = 0.0, gemms = 0.0, bns = 0.0, biased = 0.0;
    for (const models::Layer& layer : rn50.layers)
        for (const models::LayerPart& p : layer.parts) {
            const bool gemm = p.kind == models::PartKind::conv || p.kind == models::PartKind::matmul;
            parts_fwd += 1.0;
            parts_bwd += gemm ? 2.0 : 1.0;
            gemms += gemm && p.weights > 0.0 ? 1.0 : 0.0;
            bns += p.kind == models::PartKind::norm ? 1.0 : 0.0;
            biased += p.bias ? 1.0 : 0.0;
        }
    CHECK(gemms == 54);
    CHECK(bns == 53);
    CHECK(biased == 1);  // the classifier: its bias cast down and back, and its gradient's reduction
    const double kernels = parts_fwd + parts_bwd + 2 * gemms + 4 * bns + 3 * biased;
    json j = testing::star_scenario({.workers = 1, .model = "resnet50", .batch_size = 1, .iterations = 1});
    j["device"] = {{"name", "H100"}, {"precision", "fp16"}, {"software", "eager"}};
    const auto s = scenario::load_scenario(j);
    const auto& job = s.jobs.front();
    const auto p = models::compute_profile(job.workload, job.device, 1, job.bytes_per_param, job.optimizer);
    // Every layer is host-bound at batch 1 on an H100: forward and backward are the kernels x 17.35 us.
    CHECK(p.fwd.seconds() + p.bwd.seconds() == ddlsim::testing::approx(kernels * kHost).epsilon(1e-9));
}

TEST_CASE("kernels: eager reduces a bias's gradient in a kernel of its own, and autocast casts the bias both ways") {
    using S = models::Software;
    // One biased matmul of 1 kFLOP with 10 weight elements and a 1 x 1000 output per sample.
    models::Workload w;
    w.name = "t";
    models::Layer l{"l", {{"l.w", 10}}, 1e3, std::nullopt, std::nullopt, std::nullopt, {}};
    l.parts.push_back(models::LayerPart{.kind = models::PartKind::matmul,
                                        .flops = 1e3,
                                        .weights = 10,
                                        .bias = true,
                                        .rows_per_sample = 1,
                                        .cols = 1000});
    w.layers.push_back(l);
    auto fp16 = slow_device(S::eager);
    fp16.precision = models::Precision::fp16;
    // At b = 1 the host binds. FP32: 1 kernel forward; backward the GEMM's 2 and the bias gradient's reduction (3).
    // fp16 autocast: the weight's and the bias's casts forward (3); backward 2 GEMMs, 2 casts back, 1 reduction (5).
    CHECK(fwd_s(w, slow_device(S::eager), 1) == ddlsim::testing::approx(1 * kHost).epsilon(1e-12));
    CHECK(bwd_s(w, slow_device(S::eager), 1) == ddlsim::testing::approx(3 * kHost).epsilon(1e-12));
    CHECK(fwd_s(w, fp16, 1) == ddlsim::testing::approx(3 * kHost).epsilon(1e-12));
    CHECK(bwd_s(w, fp16, 1) == ddlsim::testing::approx(5 * kHost).epsilon(1e-12));
    // (At b = 1 the reduction's read, 1000 x 4 B / 1 GB/s = 4 us, and the gaps stay below the host's 3 x 17.35 us.)
    // At b = 100 (FP32) the reduction reads the output gradient, 1 x 1000 x 100 elements x 4 B / 1 GB/s = 0.4 ms,
    // beside the GEMM's backward (2 x 1e3 x 100 FLOPs / 1 TFLOPS = 0.2 us; 2 x 10 x 4 B / 1 GB/s = 80 ns: the FLOPs
    // bind) and three device gaps; the host's 3 x 17.35 us stays below.
    CHECK(bwd_s(w, slow_device(S::eager), 100) == ddlsim::testing::approx(4e-4 + 2e-7 + 3 * kGap).epsilon(1e-9));
    // Without the bias: no reduction, no read.
    w.layers[0].parts[0].bias = false;
    CHECK(bwd_s(w, slow_device(S::eager), 100) == ddlsim::testing::approx(2 * kHost).epsilon(1e-12));
}

TEST_CASE("kernels: compiled and optimized fuse BatchNorm and ReLU into one kernel") {
    using S = models::Software;
    const models::Workload big = conv_bn_relu(1e9, 1e6);
    // compiled: the chain streams 3e + 2e passes less the intermediate's write and read, 3e: 3e6 x 4 B x 10 / 1e9 =
    // 120 ms, one kernel; the matmul stays 10 ms.
    CHECK(fwd_s(big, slow_device(S::compiled), 10) == ddlsim::testing::approx(0.010 + 0.120 + 2 * kGap).epsilon(1e-12));
    // Backward twice the bytes, the matmul's two kernels and the chain's one.
    CHECK(bwd_s(big, slow_device(S::compiled), 10) == ddlsim::testing::approx(2 * 0.130 + 3 * kGap).epsilon(1e-12));
    // optimized: the same kernels, launched by a CUDA graph: equal to compiled once the host is not the bound.
    CHECK(fwd_s(big, slow_device(S::optimized), 10) ==
          ddlsim::testing::approx(0.010 + 0.120 + 2 * kGap).epsilon(1e-12));
    // Metamorphic: each step of the software ladder is no slower, on a built-in model at any batch.
    for (const std::uint32_t b : {1U, 16U, 256U}) {
        CAPTURE(b);
        const json base = testing::star_scenario(
            {.workers = 1, .model = "resnet50", .batch_size = static_cast<int>(b), .iterations = 1});
        double previous = 1e9;
        for (const char* software : {"eager", "compiled", "optimized"}) {
            json j = base;
            j["device"] = {{"name", "A100"}, {"precision", "fp16"}, {"software", software}};
            const double t = scenario::run_scenario(scenario::load_scenario(j)).jobs.front().iteration_time_s;
            CHECK(t <= previous);
            previous = t;
        }
    }
}

TEST_CASE("kernels: launch costs matter at small batches only, and custom layers pay none") {
    // ResNet-50 (fp16, A100): the per-sample time at batch 2 exceeds that at 256 by more than the roofline alone
    // makes it, because ~450 kernels x (17.35 us of launch or 0.875 us of gap) weigh on a 2-sample step.
    const auto per_sample = [](std::uint32_t b, const char* software) {
        json j = testing::star_scenario(
            {.workers = 1, .model = "resnet50", .batch_size = static_cast<int>(b), .iterations = 1});
        j["device"] = {{"name", "A100"}, {"precision", "fp16"}, {"software", software}};
        return scenario::run_scenario(scenario::load_scenario(j)).jobs.front().iteration_time_s / b;
    };
    // Eager at batch 2 is launch-bound: every layer's forward and backward takes at least its kernels x 17.35 us, so
    // the step is at least that sum over the model (ResNet-50's parts: one kernel forward each, two backward per GEMM).
    const models::Workload rn50 = models::builtin_workload("resnet50").value();
    double floor = 0.0;
    for (const models::Layer& l : rn50.layers) {
        double fwd = 0.0, bwd = 0.0;
        for (const models::LayerPart& p : l.parts) {
            fwd += 1.0;
            bwd += p.kind == models::PartKind::conv || p.kind == models::PartKind::matmul ? 2.0 : 1.0;
        }
        floor += (fwd + bwd) * kHost;
    }
    CHECK(per_sample(2, "eager") * 2 >= floor);
    CHECK(per_sample(2, "eager") > per_sample(256, "eager"));
    // A custom layer (one matmul part of fwd_flops) has no known kernels: exactly its roofline, whatever software.
    models::Workload w;
    w.name = "c";
    w.layers.push_back({"a", {{"a.w", 1000}}, 1e6, std::nullopt, std::nullopt, std::nullopt, {}});
    for (const auto s : {models::Software::eager, models::Software::optimized})
        CHECK(fwd_s(w, slow_device(s), 1) == ddlsim::testing::approx(1e6 / 1e12).epsilon(1e-12));
}

TEST_CASE("kernels: device.software is read, echoed and refused at its path") {
    json j = testing::star_scenario({.workers = 1, .iterations = 1});
    j["device"] = {{"name", "V100"}, {"software", "optimized"}};
    CHECK(scenario::load_scenario(j).jobs.front().device.software == models::Software::optimized);
    j["device"]["software"] = "graphs";
    CHECK(testing::refused_at(j) == "$.device.software");
}

TEST_CASE("kernels: under FP8 each GEMM with weights pays Transformer Engine's casts, the output layer none") {
    // A custom fp8 device (1 TFLOPS, 1 GB/s, no host launches): a GEMM of 64 rows x 32 columns x K = 128 per sample
    // pays, beside its own kernel and gap, one cast forward of its input (64 x 128 elements, 4 bytes each: read BF16,
    // write FP8 and its transpose) and one backward of its output gradient (64 x 32 elements), each with a gap. The
    // same GEMM marked as a language model's output layer (BF16 under FP8) pays neither.
    auto d = slow_device(models::Software::optimized);
    d.precision = models::Precision::fp8;
    const auto layer = [](bool output_layer) {
        models::Workload w;
        w.name = "t";
        models::Layer l{"l", {{"l.w", 4096}}, 2.0 * 64 * 32 * 128, std::nullopt, std::nullopt, std::nullopt, {}};
        l.parts.push_back(models::LayerPart{.kind = models::PartKind::matmul,
                                            .flops = 2.0 * 64 * 32 * 128,
                                            .activations = 64.0 * (128 + 32),
                                            .weights = 32.0 * 128,
                                            .rows_per_sample = 64,
                                            .cols = 32,
                                            .bf16_under_fp8 = output_layer});
        w.layers.push_back(l);
        return w;
    };
    const std::uint32_t b = 8;
    const double gemm_fwd = models::part_seconds(layer(false).layers[0].parts[0], d, b, false);
    const double gemm_bwd = models::part_seconds(layer(false).layers[0].parts[0], d, b, true);
    CHECK(fwd_s(layer(false), d, b) == ddlsim::testing::approx(gemm_fwd + kGap + 4.0 * 64 * 128 * b / 1e9 + kGap));
    CHECK(bwd_s(layer(false), d, b) == ddlsim::testing::approx(gemm_bwd + 2 * kGap + 4.0 * 64 * 32 * b / 1e9 + kGap));
    CHECK(fwd_s(layer(true), d, b) == ddlsim::testing::approx(gemm_fwd + kGap));
    CHECK(bwd_s(layer(true), d, b) == ddlsim::testing::approx(gemm_bwd + 2 * kGap));
    // In BF16 nobody casts.
    d.precision = models::Precision::bf16;
    CHECK(fwd_s(layer(false), d, b) == ddlsim::testing::approx(gemm_fwd + kGap));
}
