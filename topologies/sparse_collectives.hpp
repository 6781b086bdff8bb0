// Collective forms for compressed gradients, parameterised by payload sizes (the
// compressors that choose k or the rank come later). Each builder returns a transfer
// DAG (sim::Plan) for PlanCollective; α = route latency, B = bandwidth, p = payload.
//
//   sparse all-gather, ring      top-k payloads (k values + k indices) cannot be summed in
//                                flight, so every worker gathers all n of them: n-1 steps, in
//                                step s worker i forwards worker (i-s)'s payload to i+1.
//                                Idle star: T = (n-1)(α + p/B); wire n(n-1)p. Any n.
//   sparse all-gather, doubling  recursive doubling (Thakur, Rabenseifner & Gropp, IJHPCA
//                                2005): in step j worker i swaps everything it has (2^j
//                                payloads) with i XOR 2^j: T = α log2 n + (n-1)p/B; wire
//                                n(n-1)p. With p = 2k words this is the survey's top-k
//                                all-gather α log n + 2(n-1)kβ (Tang, Shi et al., arXiv
//                                2003.06307). n not a power of two: Bruck's dissemination
//                                all-gather (Bruck et al., IEEE TPDS 1997): in step j worker i
//                                sends min(2^j, n-2^j) payloads to i-2^j, ⌈log2 n⌉ steps,
//                                the same T with ⌈log2 n⌉ latencies.
//   gTop-k, butterfly            (Shi et al., ICDCS 2019) in each of log2 n steps worker i and
//                                i XOR 2^j swap their current k-sparse vectors (p = 2k words),
//                                merge and keep the top k, so every rank ends with the global
//                                top-k: T = log2 n (α + p/B) = α log n + 2k log n β; wire
//                                n log2 n p. n not a power of two: MPICH-style fold-in: with
//                                m = 2^⌊log2 n⌋, worker m+e first sends its payload to e, the
//                                first m run the butterfly, then e sends the result to m+e.
//   gTop-k, tree                 the paper's gTopKAllReduce: a binomial-tree reduce (step j:
//                                i ≡ 2^j mod 2^{j+1} sends to i-2^j, which merges) to rank 0,
//                                then a binomial broadcast of the top-k back down:
//                                T = 2 log2 n (α + p/B) = 2α log n + 4k log n β; wire 2(n-1)p.
//                                Any n (steps whose partner does not exist are left out).
//   PowerSGD                     (Vogels et al., NeurIPS 2019) rank-r compression of m×n'
//                                matrices: all-reduce P (m×r), then local work w (the caller's
//                                orthogonalisation and Q = MᵀP̂), then all-reduce Q (n'×r): two
//                                ring all-reduces in sequence. Idle star: T = 2(n-1)(α + P/(nB))
//                                + w + 2(n-1)(α + Q/(nB)); wire 2(n-1)(P+Q).
//
// Steps are data-driven: a send starts once its data is at the sender (and, where noted,
// the sender's previous send is out), not at a global step boundary.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sim/transfer_dag.hpp"
#include "sim/units.hpp"
#include "topologies/collectives.hpp"

namespace ddlsim::topo {

/// gTop-k variants: butterfly (every rank merges, log2 n steps) or tree (reduce to rank 0, then broadcast).
enum class GtopkForm { butterfly, tree };

/// Shape of one gradient tensor reshaped to a matrix for PowerSGD.
struct MatrixShape {
    std::uint64_t rows = 0;
    std::uint64_t cols = 0;
};

/// Bytes of PowerSGD's two factors for rank `rank`: first Σ rows·r (P), second Σ cols·r (Q), times `word_bytes`.
[[nodiscard]] std::pair<sim::Bytes, sim::Bytes> powersgd_factor_bytes(std::span<const MatrixShape> matrices,
                                                                      std::uint64_t rank, double word_bytes);

/// Ring all-gather of each worker's `payload` among n workers: n-1 steps, one payload per step.
[[nodiscard]] sim::Plan sparse_allgather_ring_plan(std::uint32_t n, sim::Bytes payload);
/// Recursive-doubling all-gather (Bruck's for n not a power of two): ⌈log2 n⌉ steps of growing size.
[[nodiscard]] sim::Plan sparse_allgather_doubling_plan(std::uint32_t n, sim::Bytes payload);
/// The all-gather of sparse payloads (Top-k, DGC) under all-reduce algorithm `a`: a ring under ring and auto (NCCL
/// runs all-gathers as rings: src/graph/tuning.cc admits no tree for ncclFuncAllGather), recursive doubling under
/// the others.
[[nodiscard]] sim::Plan sparse_allgather_plan(AllreduceAlgorithm a, std::uint32_t n, sim::Bytes payload);
/// The transfers of that all-gather (what the up-front plan-memory limit counts): n(n-1) on a ring, n⌈log2 n⌉
/// by doubling.
[[nodiscard]] double sparse_allgather_transfers(AllreduceAlgorithm a, std::uint32_t n);
/// gTop-k sparse all-reduce of k-sparse `payload`s; `merge` is the local merge + top-k time after each receive.
[[nodiscard]] sim::Plan gtopk_plan(std::uint32_t n, sim::Bytes payload, GtopkForm form = GtopkForm::butterfly,
                                   sim::Time merge = sim::Time::zero());

/// Appends a ring all-reduce of `bytes` over workers 0..n-1 (plan.endpoints >= n); worker i starts after
/// start_after[i] (empty: at once, else one step index or UINT32_MAX per worker, UINT32_MAX meaning none);
/// returns per worker a step after which its part is complete (a zero-time local step).
std::vector<std::uint32_t> append_ring_allreduce(sim::Plan& plan, std::uint32_t n, sim::Bytes bytes,
                                                 std::span<const std::uint32_t> start_after = {});
/// PowerSGD step: ring all-reduce of `p_bytes`, local work `local` at every worker, ring all-reduce of `q_bytes`.
[[nodiscard]] sim::Plan powersgd_plan(std::uint32_t n, sim::Bytes p_bytes, sim::Bytes q_bytes,
                                      sim::Time local = sim::Time::zero());

}  // namespace ddlsim::topo
