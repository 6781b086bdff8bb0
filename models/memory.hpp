// Memory per GPU of data-parallel training (every worker holds a full replica):
//   weights      fp32 / tf32: 4 bytes per parameter; AMP (fp16, bf16, fp8): 2 (the half-precision copy) + 4 (the
//                fp32 master weights)
//   gradients    the gradient element size (model.dtype) per parameter
//   optimizer    state per parameter: sgd 0, momentum 4 (velocity), adam / adamw / lamb 8 (first and second
//                moments) — Rajbhandari et al., "ZeRO", SC 2020, §3.1: mixed-precision Adam holds
//                2Ψ + 2Ψ + KΨ with K = 12 (master weights, momentum, variance), as here with 2-byte gradients
//   activations  the outputs of convolutions, matmuls, attention, normalisation, embedding and pooling kernels
//                are kept for backward (autograd saves the inputs of the next op); element-wise ops (ReLU in
//                place, residual adds) keep nothing new: per sample, half of those parts' read + written
//                elements, at the precision's activation size, times the batch. A check, not a fit: NVIDIA's
//                DeepLearningExamples train ResNet-50 at batch 112 in fp32 on 16 GB V100s, which must fit
//                With full activation checkpointing (`checkpointed` layers, models/workload.hpp) only each
//                checkpointed segment's input is kept (a transformer block's; its first kernel's read half) plus,
//                during backward, the activations of the one segment being recomputed (Chen et al., arXiv
//                1604.06174: O(sqrt n) memory for O(n) segments; Korthikanti et al., arXiv 2205.05198, §4: 2sbh
//                bytes per layer in 16-bit)
//   buffers      DDP / Horovod fusion buffers (a flattened copy of the gradients: PyTorch DDP's buckets with
//                gradient_as_bucket_view=False, the default) and compression's error-feedback residuals
//   sharding     (models/job.hpp ShardingSpec) with shard groups of g workers: stage 1 keeps 1/g of the optimizer
//                state (the fp32 master weights with it under AMP), stage 2 also 1/g of the gradients, stage 3 also
//                1/g of the weights: mixed-precision Adam needs 2Ψ + 2Ψ + 12Ψ/g, 2Ψ + 14Ψ/g and 16Ψ/g, ZeRO's
//                (2 + 2 + K)Ψ/N_d at stage 3 (Rajbhandari et al., SC 2020, §5 and Figure 1). With gradient
//                accumulation the unsharded gradients are kept between micro-batches (FSDP's no_sync), so stage 2
//                and 3 then hold full gradients. Stage 3's buffers hold the gathered parameters of the unit computing
//                and of the `prefetch` units ahead, plus one unit's unsharded gradients before its reduce-scatter;
//                stages 1 and 2 reduce from one bucket (bucket_size with fusion buffers) instead of a flat copy.
// The CUDA context, the allocator's fragmentation and framework workspaces (cuDNN, cuBLAS) are not counted: the
// estimate is a lower bound, and `fits` compares it with the device's datasheet memory.
#pragma once

#include <optional>

#include "models/job.hpp"

namespace ddlsim::models {

struct MemoryEstimate {
    double weights = 0.0;
    double gradients = 0.0;
    double optimizer = 0.0;
    double activations = 0.0;
    double buffers = 0.0;
    std::optional<double> capacity;  ///< the device's memory, when known

    [[nodiscard]] double total() const { return weights + gradients + optimizer + activations + buffers; }
    [[nodiscard]] std::optional<bool> fits() const {
        if (!capacity) return std::nullopt;
        return total() <= *capacity;
    }
};

/// The memory one worker (worker `w`'s device) needs for `job` with `optimizer` (with pipeline stages, w's stage's).
[[nodiscard]] MemoryEstimate memory_per_gpu(const TrainingJob& job, Optimizer optimizer, std::uint32_t w = 0);

}  // namespace ddlsim::models
