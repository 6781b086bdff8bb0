// Expert parallelism (the job key `parallelism.expert`): the routed experts of each mixture-of-experts block split
// over e ranks of the data-parallel dimension (Megatron-Core's expert-parallel group, carved out of the data ranks:
// megatron/core/parallel_state.py, order "tp-cp-ep-dp-pp"; GShard, Lepikhin et al. 2020, arXiv 2006.16668 §2.2):
//   - each rank holds experts / e of the experts' weights, and its own data ranks' copies of the other weights;
//   - before the routed experts a rank sends each of its tokens' k copies (b x s x k x h activations) to the rank
//     holding the chosen expert, and after them gets the outputs back: an all-to-all over the expert group to
//     dispatch and one to combine in forward, and the same two in backward (their gradients);
//   - the experts' gradients sync over the ranks holding the same experts (the expert-data group, data / e ranks),
//     the other weights' over the whole data-parallel group.
// Routing is rarely even. `parallelism.expert_imbalance` is the busiest expert's tokens over the mean (1: balanced,
// as every peer assumes; at most experts / experts_per_token, a token choosing an expert once; capped by the
// model's capacity_factor, beyond which tokens are dropped). The busiest expert sits on one rank of each expert group
// beside experts / e - 1 experts at the mean, so that rank runs rho = (imbalance + experts/e - 1) / (experts/e) x
// the mean's expert work and receives rho x the mean's tokens in the dispatch (sends them back in the combine): an
// uneven all-to-all (NCCL's alltoallv), and every rank of the group waits for it at the combine.
#pragma once

#include <cstdint>

#include "models/workload.hpp"

namespace ddlsim::models {

/// The busiest rank's routed-expert work over the mean's (rho above), for `w` split over `e` expert ranks with
/// the busiest expert at `imbalance` x the mean (capped by w.capacity_factor when set).
[[nodiscard]] double expert_rank_load(const Workload& w, std::uint32_t e, double imbalance);

/// One rank's share of `w`'s routed experts over `e` ranks (e = 1 and load 1: `w` itself): the experts' weights
/// 1/e, each local expert receiving tokens from e ranks, and the busiest rank's work (`load` x the mean; every
/// rank waits for it at the combine).
[[nodiscard]] Workload expert_shard(const Workload& w, std::uint32_t e, double load);

/// Bytes per sample a rank dispatches to the routed experts of one block (and gets back in the combine): its tokens'
/// experts_per_token copies of the hidden state, at `element_bytes` each; 0 for a dense model.
[[nodiscard]] double expert_all_to_all_bytes_per_sample(const Workload& w, double element_bytes);

/// The expert weights' parameters of `w` (Tensor::expert), and the rest.
[[nodiscard]] double expert_params(const Workload& w);

}  // namespace ddlsim::models
