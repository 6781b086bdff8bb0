// Tensor parallelism (the job key `parallelism.tensor`): Megatron-LM's split of each transformer block over t GPUs
// (Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism", arXiv
// 1909.08053, §3, Figures 3 and 4):
//   - the first GEMMs of attention and of the MLP (Q, K, V; fc1 / gate and up) split by columns, the last (the output
//     projection; fc2 / down) by rows, so each rank runs 1/t of every GEMM and of the attention heads, and the
//     element-wise work between them on its 1/t of the heads or of the MLP's width;
//   - the region between the two needs one all-reduce of the b x s x h activations at its end in forward (the row
//     GEMM's partial sums, Megatron's `g`) and one at its start in backward (the column GEMM's input gradient, `f`):
//     2 all-reduces per block in forward and 2 in backward;
//   - the embedding split by vocabulary (VocabParallelEmbedding: a masked lookup, then the all-reduce of its output)
//     and the LM head by vocabulary (a column GEMM, the loss on 1/t of the logits; its input gradient all-reduced);
//   - what lies outside the regions (the norms, dropout and residual adds of b x s x h) runs on every rank in full;
//     with sequence parallelism (Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
//     arXiv 2205.05198, §4.2.2) it runs on 1/t of the sequence, and each all-reduce becomes a reduce-scatter at the
//     region's end and an all-gather at the next one's start: the same bytes.
// This file makes a workload into one rank's share (its compute profile and memory follow from it) and marks where
// the regions start and end (the programs' collectives, models/program/pipeline.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "models/workload.hpp"

namespace ddlsim::models {

/// Where a layer's tensor-parallel collectives go.
struct TensorRegion {
    bool starts = false;  ///< its first GEMM is column-parallel: backward ends with the input gradient's all-reduce
                          ///< (with sequence parallelism: forward starts with an all-gather, backward ends with a
                          ///< reduce-scatter)
    bool ends = false;    ///< its last GEMM is row-parallel (or it is the vocabulary-parallel embedding): forward ends
                          ///< with the all-reduce of its output (sequence parallelism: a reduce-scatter; backward
                          ///< then starts with an all-gather)
};

/// Per layer of `w`, its regions (all false for a model without transformer blocks). A block's GEMM is column-parallel
/// when it follows the previous region's end or another GEMM directly, row-parallel when attention or element-wise
/// work lies between it and the column GEMMs before it; the layer before the first block holding the token embedding
/// ends a region (the vocabulary-parallel lookup), the layer after the last block holding a GEMM (the head) starts one.
[[nodiscard]] std::vector<TensorRegion> tensor_regions(const Workload& w);

/// One rank's share of `w` split over `t` ranks (t = 1: `w` itself): inside each region the GEMMs, the attention and
/// the element-wise work between them at 1/t (FLOPs, memory traffic, weights, a column GEMM's output columns and the
/// attention's heads), the token embedding's and the head's vocabulary at 1/t, weight matrices' parameters at 1/t
/// (rounded up: Megatron pads the vocabulary), vectors (norm scales, biases) whole; outside the regions everything
/// whole, or at 1/t with `sequence_parallel`. The model-FLOPs count stays the whole model's (MFU's convention).
[[nodiscard]] Workload tensor_shard(const Workload& w, std::uint32_t t, bool sequence_parallel);

/// Bytes per sample of one tensor-parallel collective: the b x s x h activations at `element_bytes` each (the
/// hidden size times the tokens of a sample); 0 for a model whose shape is not known.
[[nodiscard]] double tensor_collective_bytes_per_sample(const Workload& w, double element_bytes);

}  // namespace ddlsim::models
