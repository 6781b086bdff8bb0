// Collective primitives as plan-building functions that append to an existing sim::Plan, so that
// algorithms compose them (hierarchical = intra reduce-scatter -> rail all-reduce -> intra all-gather).
//
// A primitive runs on a group: `members[i]` is the plan endpoint of group rank i. `start[i]` lists the
// steps rank i waits for before it takes part (an empty StepSets means none); the result lists, per
// rank, the steps after which that rank holds its result and is free again (its last receive and its
// last send; a rank with nothing to do passes its start set through).
//
// Segmentation: a message of m bytes with segment size s > 0 and m > s is cut into
// k = ceil(m/s) equal segments of m/k bytes, sent one after another by the same sender (each a
// transfer; one segment in flight per sender and hop). s = 0 means whole messages.
//
//   ring reduce-scatter / all-gather / all-reduce  Patarasuk & Yuan, JPDC 2009: g-1 (2(g-1)) steps of
//       S/g per rank to its successor; a step starts after the rank received the previous step's
//       segment and its own previous send is out (the semantics of ring_allreduce_plan).
//   tree reduce / broadcast (pipelined)  segment j goes up (down) an edge once every child's
//       segment j arrived (the parent's segment j arrived); by default a node sends to all its
//       children at once, one segment in flight per edge (NCCL's trees); `sequential` makes a node
//       receive from its children in turn (smallest subtree first) and send to them in turn (largest
//       first), one transfer at a time. reduce()/broadcast() are the binomial trees of MPICH (Thakur,
//       Rabenseifner & Gropp, IJHPCA 2005), sequential, pipelined by segments. Idle star, n = 2^m,
//       k segments: T = k m (2L + S/(kB)).
//   all-to-all (direct)  every ordered pair exchanges S/g at once (pairwise segments chained).
//   halving-doubling  Rabenseifner (ICCS 2004) / MPICH (Thakur et al. 2005): recursive-halving
//       reduce-scatter, recursive-doubling all-gather; for g not a power of two the first 2r ranks
//       (r = g - 2^floor(log2 g)) pair up, even ranks send their whole vector to the odd rank before
//       and receive the result from it after. Each exchange waits for both partners (rendezvous).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/transfer_dag.hpp"
#include "sim/units.hpp"

namespace ddlsim::topo {

/// Per group rank: plan step indices (dependencies to wait for, or the steps a primitive ended with).
using StepSets = std::vector<std::vector<std::uint32_t>>;

/// Marks the root in a parent array.
inline constexpr std::uint32_t kNoParent = 0xffffffffU;

/// Number of segments a message of `message` bytes is cut into (1 when segment is 0 or not smaller).
[[nodiscard]] std::uint32_t segment_count(sim::Bytes message, sim::Bytes segment);

/// `steps` ring steps of `chunk` bytes (rank i sends to rank i+1); the building block of the ring primitives.
StepSets ring_steps(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes chunk, std::uint32_t steps,
                    sim::Bytes segment, const StepSets& start);
/// Ring reduce-scatter of `bytes` per rank: g-1 steps of bytes/g; rank i ends with shard (i+1) mod g.
StepSets ring_reduce_scatter(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes,
                             sim::Bytes segment, const StepSets& start);
/// Ring all-gather of a `bytes` vector whose shards (bytes/g) are spread over the ranks: g-1 steps.
StepSets ring_all_gather(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes, sim::Bytes segment,
                         const StepSets& start);
/// Ring all-reduce of `bytes` per rank: reduce-scatter then all-gather, 2(g-1) steps of bytes/g.
StepSets ring_allreduce(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes, sim::Bytes segment,
                        const StepSets& start);

/// Parents of the binomial tree rooted at rank 0 (rank r's parent is r with its lowest set bit cleared).
[[nodiscard]] std::vector<std::uint32_t> binomial_parents(std::uint32_t g);
/// Parents of NCCL's binary tree (ncclGetBtree, NCCL 2.4; root 0 with one child); in-order, leaves odd ranks.
[[nodiscard]] std::vector<std::uint32_t> nccl_btree_parents(std::uint32_t g);
/// NCCL's second tree (ncclGetDtree): the first mirrored (g even) or shifted by one rank (g odd).
[[nodiscard]] std::vector<std::uint32_t> nccl_second_tree_parents(std::uint32_t g);
/// Height (edges from the root to the deepest leaf) of a tree given by its parent array.
[[nodiscard]] std::uint32_t tree_height(const std::vector<std::uint32_t>& parents);

/// Pipelined reduce of `bytes` along the tree `parents` to its root (sequential: receive children in turn).
StepSets tree_reduce(sim::Plan& plan, std::span<const std::uint32_t> members, const std::vector<std::uint32_t>& parents,
                     sim::Bytes bytes, sim::Bytes segment, const StepSets& start, bool sequential = false);
/// Pipelined broadcast of `bytes` from the root of the tree `parents` (sequential: send to children in turn).
StepSets tree_broadcast(sim::Plan& plan, std::span<const std::uint32_t> members,
                        const std::vector<std::uint32_t>& parents, sim::Bytes bytes, sim::Bytes segment,
                        const StepSets& start, bool sequential = false);
/// Pipelined reduce then broadcast along one tree; segment j goes down as soon as it is reduced at the root.
StepSets tree_allreduce(sim::Plan& plan, std::span<const std::uint32_t> members,
                        const std::vector<std::uint32_t>& parents, sim::Bytes bytes, sim::Bytes segment,
                        const StepSets& start);
/// Reduce to rank 0 along the binomial tree, pipelined by segments.
StepSets reduce(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes, sim::Bytes segment,
                const StepSets& start);
/// Broadcast from rank 0 along the binomial tree, pipelined by segments.
StepSets broadcast(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes, sim::Bytes segment,
                   const StepSets& start);
/// Direct all-to-all: every rank sends bytes/g to every other rank, all at once.
StepSets all_to_all(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes, sim::Bytes segment,
                    const StepSets& start);
/// Rabenseifner's halving-doubling all-reduce with MPICH's treatment of non-powers of two.
StepSets halving_doubling(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes, sim::Bytes segment,
                          const StepSets& start);

}  // namespace ddlsim::topo
