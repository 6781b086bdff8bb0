// Context parallelism (the job key `parallelism.context`): each sequence split over c ranks (Megatron-Core's
// context parallelism with cp_comm_type "p2p": ring attention, Liu et al., "Ring Attention with Blockwise
// Transformers for Near-Infinite Context", arXiv 2310.01889; megatron/core/transformer/dot_product_attention.py and
// TransformerEngine's context_parallel.py):
//   - each rank holds s / c of every sequence's tokens (Megatron gives each 2 chunks of s / 2c, one from each end,
//     so that causal attention's work is even) and runs every GEMM, norm and element-wise kernel on them: 1/c of the
//     work, weights whole;
//   - attention needs every earlier token's keys and values: each attention layer passes the ranks' key/value blocks
//     around the ring of c ranks, c - 1 steps of s / c x 2 x kv_dim each (an all-gather's ring), overlapped with the
//     blockwise attention; backward passes the key/value blocks and their gradients, twice the bytes (and with full
//     recomputation the forward's once more);
//   - the weights are replicated over the context ranks, so their gradients are all-reduced over data x context
//     ranks (Megatron's data-parallel group with context parallelism).
#pragma once

#include <cstdint>

#include "models/workload.hpp"

namespace ddlsim::models {

/// One rank's share of `w` over `c` context ranks (c = 1: `w` itself): every part's per-sample work, traffic and
/// GEMM rows 1/c, the tokens of a sample 1/c, the weights whole.
[[nodiscard]] Workload context_shard(const Workload& w, std::uint32_t c);

/// Bytes per sample of one rank's key/value block: its tokens' keys and values (2 x kv_dim each) at
/// `element_bytes`; 0 for a model whose shape is not known.
[[nodiscard]] double context_block_bytes_per_sample(const Workload& w, double element_bytes);

/// Whether layer `l` of `w` runs attention (its key/value ring with context parallelism).
[[nodiscard]] bool attends(const Layer& l);

}  // namespace ddlsim::models
