// Device profiles: datasheet peaks (dense tensor throughput, no structured sparsity), SM counts, and the
// sustained fractions of peak measured by others, per (generation, precision).
//
// Datasheets:
//  P100 SXM2  — NVIDIA Tesla P100 datasheet (2016): 10.6 TFLOPS FP32, 21.2 FP16, 732 GB/s HBM2, 56 SMs.
//               No tensor cores, no BF16.
//  V100 SXM2  — NVIDIA Tesla V100 datasheet (2017): 15.7 TFLOPS FP32, 125 tensor FP16, 900 GB/s, 80 SMs.
//               No BF16 math (BF16 arrives with Ampere: NVIDIA A100 Tensor Core GPU Architecture whitepaper).
//  A100 SXM4 80GB — NVIDIA A100 datasheet (2021): 19.5 FP32, 156 TF32, 312 FP16, 312 BF16, 2,039 GB/s, 108 SMs.
//  H100 SXM5  — NVIDIA H100 datasheet (2023): 67 FP32, 494.5 TF32, 989.5 FP16, 989.5 BF16, 1,979 FP8 (all
//               dense), 3.35 TB/s, 132 SMs.
//  H200 SXM   — NVIDIA H200 datasheet (2024): compute as H100 SXM, 4.8 TB/s HBM3e.
// Parts added 2026-12, dense figures (no structured sparsity) as collected with their vendor sources in
// stas00/ml-engineering compute/accelerator/README.md (commit 744d01e18b79512572f64a6bbd8b5f4a725203a7), "TFLOPS
// comparison table" (notes 3, 4, 6, 12, 17, 18, 20, 22, 23), "Accelerator memory size and speed" and "Power
// consumption"; SM / CU counts from the vendors' pages cited there:
//  A100 PCIe 40/80 GB — NVIDIA A100 datasheet: compute as the SXM4 part (19.5 / 156 / 312 / 312), 1,555 GB/s
//               (40 GB) and 1,935 GB/s (80 GB), 108 SMs, 250 W (40 GB) and 300 W (80 GB) maximum TDP.
//  H100 PCIe  — NVIDIA H100 datasheet: 51 FP32, 378 TF32, 756 FP16/BF16, 1,513 FP8, 80 GB, 2.0 TB/s, 114 SMs,
//               350 W maximum TDP (configurable 300-350 W).
//  H100 NVL   — NVIDIA H100 datasheet (NVL column, halved where it quotes sparsity): 60 FP32, 417.5 TF32, 835.5
//               FP16/BF16, 1,670.5 FP8, 94 GB, 3.9 TB/s, 132 SMs, 400 W maximum TDP (configurable 350-400 W).
//  L40S       — NVIDIA L40S datasheet: 91.6 FP32, 183 TF32, 362 FP16/BF16, 733 FP8, 48 GB GDDR6, 864 GB/s, 142 SMs,
//               350 W maximum power.
//  B200 SXM   — NVIDIA DGX B200 datasheet, per GPU: 80 FP32, 1,125 TF32, 2,250 FP16/BF16, 4,500 FP8, 180 GB HBM3e,
//               8 TB/s, 148 SMs, 1,000 W maximum TGP.
//  GB200      — NVIDIA GB200 NVL72 specifications, per GPU: 80 FP32, 1,250 TF32, 2,500 FP16/BF16, 5,000 FP8, 186 GB
//               HBM3e, 8 TB/s, 148 SMs, 1,200 W per-GPU maximum power.
//  MI300X     — AMD Instinct MI300X specifications: 163.4 FP32 (matrix), 653.7 TF32, 1,300 FP16/BF16, 2,610 FP8 (the
//               table's figures; AMD's page is said to give 1,307.4 and 2,614.9, not checked here),
//               192 GB HBM3, 5.3 TB/s, 304 CUs, 750 W typical board power (peak).
//  MI325X     — AMD Instinct MI325X specifications: MI300X's compute, 256 GB HBM3e, 6 TB/s, 304 CUs, 1,000 W.
//  MI355X     — AMD Instinct MI355X specifications: 157.3 FP32, no TF32 (CDNA 4 has no XF32 path: FP32 on the
//               matrix cores), 2,500 FP16/BF16, 5,000 FP8, 288 GB HBM3e, 8 TB/s, 256 CUs, 1,400 W.
// AMD parts default to FP32: PyTorch's ROCm build runs TF32 only on MI300-class parts and only with
// HIPBLASLT_ALLOW_TF32=1 set (pytorch/pytorch test/test_linalg.py, TestLinalg._hip_allow_tf32: "for HIP/AMDGPU, tf32
// is behind a flag because the TF32 support is new and only for MI300+").
// Board power (maximum TDP, the same datasheets): P100 SXM2 300 W, V100 SXM2 300 W, A100 SXM4 400 W, H100 SXM5
// up to 700 W, H200 SXM up to 700 W. Energy to train charges every GPU at it for the whole run: an upper bound
// on the GPUs' own draw, without host, network or cooling power.
//
// Default precision: what a user gets from PyTorch without asking. FP32 on P100/V100. On Ampere and later
// PyTorch runs cuDNN convolutions in TF32 (torch.backends.cudnn.allow_tf32 defaults to True) but matmuls in
// FP32 (torch.backends.cuda.matmul.allow_tf32 defaults to False since PyTorch 1.12) — PyTorch docs,
// notes/cuda.rst, "TensorFloat-32 (TF32) on Ampere (and later) devices", and the PyTorch 1.12 release notes
// (which changed the matmul default). So "tf32" is the default there, applied to convolutions only.
//
// Sustained fractions (achieved / datasheet), each from a published measurement:
//  matmul, CUDA-core FP32: 0.843 — baidu-research/DeepBench results/train/DeepBench_NV_V100.xlsx (commit
//        da81ba7820739e2e506dc27f382d15be5479f98f), sheet "Results FP32", section "Dense Matrix Multiplication": the
//        median of the 74 training GEMMs with M·N·K ≥ 1.5e10 is 13.24 TFLOPS of 15.7 (its "TERAFLOPS" column). Used
//        for every generation's FP32 CUDA-core path (same FMA datapath per SM; no newer measurement found).
//  matmul, P100 FP32/FP16: 0.836 — DeepBench results/train/DeepBench_NV_P100.xlsx, same selection: median
//        8.86 TFLOPS of 10.6 (the "Psuedo FP16" sheet runs FP32 multiplies, median 8.78; its FP16 rate is assumed
//        to be the same fraction of the 21.2 TFLOPS peak).
//  matmul, V100 FP16 tensor cores: 0.796 — DeepBench_NV_V100.xlsx sheet "Results - FP16 ip, Mixed math", same
//        selection: median 99.45 TFLOPS of 125. (Until 2026-12-05 these read 0.866, 0.84 and 0.725 — a 62-GEMM
//        median of 13.6 and 90.7 TFLOPS that the file does not give: recomputed, its 74 GEMMs of that size run at
//        89.4-112.3 TFLOPS in FP16.)
//  matmul on tensor cores: the median large training GEMM, as DeepBench's medians above, not the best shape found
//        by a search (the "maximum achievable" figures below are that, and on H100 the median is 0.92 of it):
//  matmul, A100 TF32 / FP16 / BF16: 0.779 / 0.772 — mli/transformers-benchmarks README.md (commit
//        3370b2b3a0ad915b827dd962ff68b2333f4da6a6), "Micro-Benchmarking Summary": PyTorch's 8192 x 8192 matmul on
//        A100 80 GB reaches 116 TFLOPS in its "FP32" column (of 156: TF32, which NGC's PyTorch containers enable for
//        matmuls; FP32 on CUDA cores peaks at 19.5) and 230 in FP16 (of 312). The same table reads V100's FP16 at 95,
//        where DeepBench's median above is 99.45: the A100 figures are taken to a median by that ratio (1.047):
//        116 x 1.047 / 156 = 0.779, 230 x 1.047 / 312 = 0.772.
//  matmul, H100 BF16 / TF32: 0.738 / 0.610 — openxla/xla xla/service/gpu/model/matmul_interpolator_data.h as in
//        tensorflow/tensorflow third_party/xla (commit 372d578bb861cc5804e56d37d93aec931a59762c), XLA's measured
//        table of cuBLAS GEMM rates on sm_90 (batch 1-4, M, N, K 256-4096): of its 65 GEMMs with b·M·N·K >= 1.5e10
//        (DeepBench's selection above) the median is 730.1 TFLOPS BF16 (of 989.5) and 301.9 "f32", which XLA runs
//        in TF32 on sm_90 (of 494.5); the table's largest BF16 rate, 808.7, is an SXM part's (that table has no
//        FP8 column for sm_90).
//  matmul, H100 FP8: 0.613 — deepseek-ai/DeepGEMM README.md (commit 55ab91f72f76e8a6db0e86282c3169a88d93df1b),
//        "Performance": FP8 GEMMs measured on H800 SXM5 (the H100 SXM's 132 SMs, clocks and 1,979 TFLOPS FP8; only
//        its NVLink is cut) with NVCC 12.8. Of its training-layout tables ("Normal GEMMs for dense models" and
//        "Grouped GEMMs for MoE models (contiguous layout)"; the masked layout is decoding's), the 11 GEMMs with
//        b·M·N·K >= 1.5e10 (DeepBench's selection above) run at 645-1,426 TFLOPS, median 1,214 (of 1,979). These
//        are block-scaled GEMMs, 1.1-1.4x the same shapes in the authors' CUTLASS 3.6 kernels (its "Speedup"
//        column); Transformer Engine's per-tensor-scaled cuBLAS GEMMs are taken to run as fast (an assumption: no
//        per-tensor sm_90 table found). FP8 so sustains 1.66x BF16's rate, not 2x (until 2026-12-07 FP8 took
//        BF16's fraction of its own peak: 2x).
//  attention under FP8: the attention core (scores and weighted values, FlashAttention or not) stays in BF16 —
//        Transformer Engine's recipes default to fp8_dpa = False (NVIDIA/TransformerEngine
//        transformer_engine/common/recipe/__init__.py, DelayedScaling, commit
//        799cf76be3c1bb0a9d7995614a1af5a2a77a9e10): only the Linear layers' GEMMs run in FP8. So does a language
//        model's output layer: Megatron-Core builds it from its own tensor_parallel.ColumnParallelLinear, a
//        Transformer Engine module only for MXFP8 with fp8_output_proj (NVIDIA/Megatron-LM
//        megatron/core/models/gpt/gpt_model.py, commit d98e8a64ddf34856e74b24714e3bedb2f5a39553). Both run at the
//        BF16 peak x the BF16 fraction (DeviceSpec::bf16_speed).
//  casts under FP8: Transformer Engine casts each FP8 GEMM's input to FP8 with its transpose for the weight
//        gradient (fp8_cast_transpose_fused: read 2 bytes, write 1 + 1 per element) and, in backward, the output
//        gradient the same way (grad_output_preprocess: cast, transpose and bias gradient) — NVIDIA/TransformerEngine
//        transformer_engine/pytorch/module/linear.py and base.py at v1.8 (3ec998e96c82bc30247560ced6170c4221ca2b5a),
//        the release NeMo 24.07 shipped around. models/compute.cpp charges one such kernel forward and one backward
//        per GEMM with weights, 4 bytes per element of its input and of its output gradient.
//  matmul, H200: H100's fractions — the same GH100 SMs and clocks (datasheets above); XLA's table keys on sm_90.
//  matmul, parts with only a "maximum achievable" figure: BF16 "Maximum Achievable Matmul FLOPS comparison table" of
//        stas00/ml-engineering compute/accelerator/README.md (commit 744d01e18b79512572f64a6bbd8b5f4a725203a7), taken
//        to its median as on the measured sibling: H100 SXM's median (730.1) is 0.919 of that table's H100 figure
//        (794.5), A100 SXM's (240.8) 0.888 of its A100 figure (271.2). A100 PCIe 252.9 of 312 x 0.888 = 0.720; B200
//        1745.0 of 2250 x 0.919 = 0.713; GB200 1822.0 of 2500 x 0.919 = 0.670; MI300X 668.4 of 1300 x 0.919 =
//        0.470; MI325X 784.9 of 1300 x 0.919 = 0.552; MI355X 1565.0 of 2500 x 0.919 = 0.575 (AMD parts take an
//        NVIDIA part's ratio: an assumption). No figure there for H100 PCIe, H100 NVL and L40S: H100 SXM's
//        fractions are assumed (the same GH100 die; the Ada part has Hopper-class tensor cores without TMA, an
//        assumption). TF32 takes BF16's fraction x H100's TF32/BF16 ratio (0.610 / 0.738), FP8 BF16's fraction x H100's
//        FP8/BF16 ratio (0.613 / 0.738).
//        Memory on the new parts: gpu-stream's "scale" kernel
//        (te42kyfo/gpu-benches, commit 1c36d509ee717dca9215c27135fa1e611bb03ed1): H100 PCIe 1704 of 2000 GB/s =
//        0.85 (h100_pcie.txt), L40 770 of 864 GB/s = 0.89 (l40.txt: the L40S has the L40's memory system); the
//        others have no measurement there and take kMemoryHbm.
//  conv: e_matmul x 0.65 on tensor cores, x 0.82 on CUDA cores — DeepBench's 16 ResNet convolution layers at
//        batch 16 (same files, section "Convolution", rows "Resnet", N = 16) take 2.427 ms in FP16 (implicit GEMM on
//        tensor cores) and 10.522 ms in FP32, forward and both backward passes together ("Total Time"); the compute
//        model gives those sums, within 0.5 %, with these fractions of the GEMM medians above (wave quantization and
//        Winograd included; tests/models/test_compute.cpp runs the 16 layers). cuDNN's implicit-GEMM convolutions
//        reach 0.65 (tensor cores) and 0.82 (CUDA cores) of what a GEMM does. Applied to every generation (no newer
//        layer benchmark found).
//  Winograd tile (3 x 3 stride-1 convolutions on CUDA cores): cuDNN computes them with Winograd's minimal
//        filtering F(m x m, 3 x 3) (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016,
//        arXiv:1509.09308, §4: (m+2)^2 multiplies per m x m outputs instead of 9 m^2, 2.25x fewer for m = 2 and 4x
//        for m = 4) when its autotuner finds it faster. DeepBench's "Forward Algorithm" column (same files) names
//        what cuDNN picked among the 3 x 3 stride-1 layers: P100 FP32 and pseudo-FP16 (CUDA 8.0, cuDNN 6.0): of the 27
//        with >= 64 input channels 22 WINOGRAD (the fused kernel), 2 FFT, 2 WINOGRAD_NONFUSED and 1 implicit GEMM,
//        implicit GEMM for the 5 with fewer; V100 FP32 (CUDA 10.1, cuDNN 7.6): of 32, 23 WINOGRAD_NONFUSED, 5
//        WINOGRAD and implicit GEMM for the 4 with 1-16 input channels;
//        V100 FP16 on tensor cores: IMPLICIT_PRECOMP_GEMM for every layer (no Winograd). The compute model's
//        Winograd cost (compute.cpp: its batched GEMMs at the GEMM median) with m = 2 on P100 gives DeepBench's P100
//        FP32 times of the 26 Winograd or FFT layers at median 1.08x (m = 4: 0.75x), and with m = 4 on V100 the 28
//        V100 FP32 layers at median 0.92x (m = 2: 1.38x) (tests/models/test_compute.cpp). cuDNN does not document
//        its tile sizes, so m is the one whose cost matches each generation's measured layers: m = 2 for Pascal,
//        m = 4 for Volta and later in FP32, and no Winograd on tensor cores (TF32, FP16, BF16, FP8), where the
//        DeepBench V100 FP16 selection is taken to hold for every generation.
//  memory: streaming "scale" kernel (read one array, write another) at full occupancy in te42kyfo/gpu-benches
//        gpu-stream: V100 802 of 900 GB/s = 0.89 (v100.txt, commit a7dc559cc5a1d09e62b6b0fbb99ee165039acba4);
//        A100-40GB 1381 of 1555 GB/s = 0.89 (a100_40.txt, same commit; used for the 80 GB part); H200 3165 of
//        4800 GB/s = 0.66 (h200.txt, commit fd7091fbb51772fb4401f4a14c80008424fd4ac4). P100 and H100 have no
//        measurement there: assumed 0.89 as their HBM2/HBM3 siblings.
#include "models/device.hpp"

namespace ddlsim::models {
namespace {

constexpr double kCudaCoreFp32 = 13.24 / 15.7;  // DeepBench V100 SGEMM median (above)
constexpr double kP100 = 8.86 / 10.6;           // DeepBench P100 median (above)
constexpr double kV100Fp16 = 99.45 / 125.0;     // DeepBench V100 FP16 median (above)
// Median large GEMMs on tensor cores (above): A100 (mli/transformers-benchmarks, taken to DeepBench's V100 median
// by the ratio of the two on V100), H100 (XLA's sm_90 table).
constexpr double kMliToMedian = 99.45 / 95.0;
constexpr double kA100Fp16 = 230.0 * kMliToMedian / 312.0;
constexpr double kA100Tf32 = 116.0 * kMliToMedian / 156.0;
constexpr double kH100Bf16 = 730.064 / 989.5;
constexpr double kH100Tf32 = 301.870 / 494.5;
constexpr double kH100Fp8 = 1214.0 / 1979.0;  // DeepGEMM's H800 median (above)
// A "maximum achievable" figure (stas00's table, BF16 TFLOPS over the peak) taken to its median as on the measured
// sibling: H100's median over its figure (794.5), A100's over its figure (271.2).
constexpr double kMedianOverMaxH100 = 730.064 / 794.5;
constexpr double kMedianOverMaxA100 = 230.0 * kMliToMedian / 271.2;
constexpr double kTf32OverBf16 = kH100Tf32 / kH100Bf16;  // H100's, for parts without a TF32 measurement
constexpr double kFp8OverBf16 = kH100Fp8 / kH100Bf16;    // H100's, for every part's FP8 (the only FP8 measurement)
constexpr double kA100PcieBf16 = 252.9 / 312.0 * kMedianOverMaxA100;
constexpr double kB200Bf16 = 1745.0 / 2250.0 * kMedianOverMaxH100;
constexpr double kGb200Bf16 = 1822.0 / 2500.0 * kMedianOverMaxH100;
constexpr double kMi300xBf16 = 668.4 / 1300.0 * kMedianOverMaxH100;
constexpr double kMi325xBf16 = 784.9 / 1300.0 * kMedianOverMaxH100;
constexpr double kMi355xBf16 = 1565.0 / 2500.0 * kMedianOverMaxH100;
constexpr double kConvOnTensorCores = 0.65;  // DeepBench V100 ResNet convolutions vs GEMMs (above)
constexpr double kConvOnCudaCores = 0.82;
constexpr int kWinogradTilePascal = 2;  // DeepBench P100 FP32 conv times: m = 2 fits (above)
constexpr int kWinogradTileVolta = 4;   // DeepBench V100 FP32 conv times: m = 4 fits (above)
constexpr double kMemoryHbm = 0.89;     // gpu-stream V100 and A100 (above); assumed for P100 and H100

// One built-in device: its datasheet figures and the sustained fractions measured for it (cited above).
struct Row {
    const char* name;
    const char* description;
    double fp32, tf32, fp16, bf16, fp8;  // TFLOPS
    double mem_gbps;
    int sms;
    Precision default_precision;
    double memory_gb;  // datasheet HBM capacity
    bool tensor_cores;
    double matmul_cuda_cores, matmul_tensor, matmul_tf32, memory_efficiency;
    int winograd_tile;  // on CUDA cores
    double board_power_w;
};

DeviceProfile make(const Row& r) {
    const auto tf = [](double t) { return sim::FlopRate::per_s(t * 1e12); };
    return DeviceProfile{r.name,
                         r.description,
                         tf(r.fp32),
                         tf(r.tf32),
                         tf(r.fp16),
                         tf(r.bf16),
                         tf(r.fp8),
                         sim::Bandwidth::bytes_per_s(r.mem_gbps * 1e9),
                         r.sms,
                         r.default_precision,
                         sim::Bytes{r.memory_gb * 1e9},
                         r.tensor_cores,
                         r.matmul_cuda_cores,
                         r.matmul_tensor,
                         r.matmul_tf32,
                         r.memory_efficiency,
                         r.winograd_tile,
                         r.board_power_w};
}

}  // namespace

std::string_view precision_name(Precision p) {
    return sim::enum_name(p);
}

double activation_bytes(Precision p) {
    return p == Precision::fp32 || p == Precision::tf32 ? 4.0 : 2.0;
}

std::string_view source_name(Source s) {
    switch (s) {
        case Source::builtin_default: return "default";
        case Source::scenario: return "scenario";
        case Source::calibration_profile: return "calibration profile";
    }
    return "default";
}

sim::FlopRate DeviceProfile::peak(Precision p) const {
    switch (p) {
        case Precision::fp32: return fp32;
        case Precision::tf32: return tf32;
        case Precision::fp16: return fp16;
        case Precision::bf16: return bf16;
        case Precision::fp8: return fp8;
    }
    return fp32;
}

Efficiency DeviceProfile::efficiency(Precision p) const {
    // Tensor cores run everything but FP32, and TF32 only where the part has a TF32 rate above FP32's.
    const bool tensor = tensor_cores && p != Precision::fp32 && !(p == Precision::tf32 && tf32.per_s() == fp32.per_s());
    const double matmul = !tensor                ? matmul_cuda_cores
                          : p == Precision::tf32 ? matmul_tf32
                          : p == Precision::fp8  ? matmul_tensor * kFp8OverBf16
                                                 : matmul_tensor;
    return {matmul, memory_efficiency, matmul * (tensor ? kConvOnTensorCores : kConvOnCudaCores),
            tensor ? 0 : winograd_tile};
}

const std::vector<DeviceProfile>& builtin_devices() {
    // Columns: name, description, FP32 / TF32 / FP16 / BF16 / FP8 TFLOPS, GB/s, SMs, default precision, GB,
    // tensor cores, matmul fraction on CUDA cores / tensor cores / in TF32, memory fraction, Winograd tile, board W;
    // the comment at the top of this file cites every figure.
    static const std::vector<DeviceProfile> devices{
        make({"P100", "NVIDIA Tesla P100 SXM2 16 GB", 10.6, 10.6, 21.2, 0, 0, 732, 56, Precision::fp32, 16, false,
              kP100, kP100, kP100, kMemoryHbm, kWinogradTilePascal, 300}),
        make({"V100", "NVIDIA Tesla V100 SXM2", 15.7, 15.7, 125.0, 0, 0, 900, 80, Precision::fp32, 16, true,
              kCudaCoreFp32, kV100Fp16, kV100Fp16, kMemoryHbm, kWinogradTileVolta, 300}),
        make({"A100", "NVIDIA A100 SXM4 80 GB", 19.5, 156.0, 312.0, 312.0, 0, 2039, 108, Precision::tf32, 80, true,
              kCudaCoreFp32, kA100Fp16, kA100Tf32, kMemoryHbm, kWinogradTileVolta, 400}),
        make({"H100", "NVIDIA H100 SXM5 80 GB", 67.0, 494.5, 989.5, 989.5, 1979.0, 3350, 132, Precision::tf32, 80, true,
              kCudaCoreFp32, kH100Bf16, kH100Tf32, kMemoryHbm, kWinogradTileVolta, 700}),
        make({"H200", "NVIDIA H200 SXM 141 GB", 67.0, 494.5, 989.5, 989.5, 1979.0, 4800, 132, Precision::tf32, 141,
              true, kCudaCoreFp32, kH100Bf16, kH100Tf32, 0.66, kWinogradTileVolta, 700}),
        // Parts added 2026-12 (the top of this file cites every figure).
        make({"A100_PCIE_40GB", "NVIDIA A100 PCIe 40 GB", 19.5, 156.0, 312.0, 312.0, 0, 1555, 108, Precision::tf32, 40,
              true, kCudaCoreFp32, kA100PcieBf16, kA100PcieBf16 * kTf32OverBf16, kMemoryHbm, kWinogradTileVolta, 250}),
        make({"A100_PCIE_80GB", "NVIDIA A100 PCIe 80 GB", 19.5, 156.0, 312.0, 312.0, 0, 1935, 108, Precision::tf32, 80,
              true, kCudaCoreFp32, kA100PcieBf16, kA100PcieBf16 * kTf32OverBf16, kMemoryHbm, kWinogradTileVolta, 300}),
        make({"H100_PCIE", "NVIDIA H100 PCIe 80 GB", 51.0, 378.0, 756.0, 756.0, 1513.0, 2000, 114, Precision::tf32, 80,
              true, kCudaCoreFp32, kH100Bf16, kH100Tf32, 0.85, kWinogradTileVolta, 350}),
        make({"H100_NVL", "NVIDIA H100 NVL 94 GB", 60.0, 417.5, 835.5, 835.5, 1670.5, 3900, 132, Precision::tf32, 94,
              true, kCudaCoreFp32, kH100Bf16, kH100Tf32, kMemoryHbm, kWinogradTileVolta, 400}),
        make({"L40S", "NVIDIA L40S 48 GB GDDR6", 91.6, 183.0, 362.0, 362.0, 733.0, 864, 142, Precision::tf32, 48, true,
              kCudaCoreFp32, kH100Bf16, kH100Tf32, 0.89, kWinogradTileVolta, 350}),
        make({"B200", "NVIDIA B200 SXM 180 GB", 80.0, 1125.0, 2250.0, 2250.0, 4500.0, 8000, 148, Precision::tf32, 180,
              true, kCudaCoreFp32, kB200Bf16, kB200Bf16 * kTf32OverBf16, kMemoryHbm, kWinogradTileVolta, 1000}),
        make({"GB200", "NVIDIA GB200 (one Blackwell GPU of the superchip) 186 GB", 80.0, 1250.0, 2500.0, 2500.0, 5000.0,
              8000, 148, Precision::tf32, 186, true, kCudaCoreFp32, kGb200Bf16, kGb200Bf16 * kTf32OverBf16, kMemoryHbm,
              kWinogradTileVolta, 1200}),
        make({"MI300X", "AMD Instinct MI300X 192 GB", 163.4, 653.7, 1300.0, 1300.0, 2610.0, 5300, 304, Precision::fp32,
              192, true, kCudaCoreFp32, kMi300xBf16, kMi300xBf16 * kTf32OverBf16, kMemoryHbm, kWinogradTileVolta, 750}),
        make({"MI325X", "AMD Instinct MI325X 256 GB", 163.4, 653.7, 1300.0, 1300.0, 2610.0, 6000, 304, Precision::fp32,
              256, true, kCudaCoreFp32, kMi325xBf16, kMi325xBf16 * kTf32OverBf16, kMemoryHbm, kWinogradTileVolta,
              1000}),
        make({"MI355X", "AMD Instinct MI355X 288 GB", 157.3, 157.3, 2500.0, 2500.0, 5000.0, 8000, 256, Precision::fp32,
              288, true, kCudaCoreFp32, kMi355xBf16, kMi355xBf16 * kTf32OverBf16, kMemoryHbm, kWinogradTileVolta,
              1400}),
    };
    return devices;
}

std::optional<DeviceProfile> builtin_device(std::string_view name) {
    for (const auto& d : builtin_devices())
        if (d.name == name) return d;
    return std::nullopt;
}

}  // namespace ddlsim::models
