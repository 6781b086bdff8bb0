// All-reduce algorithms as transfer DAGs built from the primitives of allreduce_primitives.hpp
// (the plain unsegmented ring is the O(n)-state RingAllreduce of ring_allreduce.*):
//   ring              Patarasuk & Yuan, JPDC 2009; with segment_size > 0 each S/n chunk is cut into
//                     k segments, one in flight per sender. Idle star: T = 2(n-1)k(2L + S/(nkB)).
//   tree              NCCL 2.4's binary tree (ncclGetBtree), pipelined reduce to rank 0 and broadcast
//                     back; segment_size 0 means 8 segments.
//   double_tree       NCCL 2.4 double binary tree (Sanders, Speck & Traeff, Parallel Computing 2009,
//                     "Two-tree algorithms for full bandwidth broadcast, reduction and scan"): two
//                     complementary trees (mirror for n even, shift by one for n odd) each all-reduce
//                     S/2, pipelined (segment_size 0 means 8 segments per tree).
//   tree, double_tree on two or more nodes with several workers each: NCCL's form (src/graph/connect.cc,
//                     connectTrees, NVIDIA/nccl @5067397c): per channel the workers of each node form a chain
//                     whose head joins the tree(s) among nodes (ncclGetBtree / ncclGetDtree over node indices);
//                     C channels (CollectiveContext::ring_channels, one per NIC) start node a's chain at its
//                     worker c m / C, and each of the C x trees trees all-reduces S / (C trees).
//   halving_doubling  Rabenseifner (ICCS 2004) with MPICH's non-power-of-two steps (Thakur,
//                     Rabenseifner & Gropp, IJHPCA 2005). Idle star, n = 2^m: T = 2 m 2L + 2(n-1)S/(nB).
//   hierarchical      ring reduce-scatter within each node, ring all-reduce of each S/g shard along
//                     rails (worker j of every node), ring all-gather within the node; nodes with
//                     different worker counts fall back to leaders (binomial reduce to the node's first
//                     worker, ring all-reduce among leaders, binomial broadcast).
//   torus2d           the 2D form on a logical X x Y grid (X the largest divisor of n not above sqrt(n),
//                     row y = workers yX .. yX+X-1): reduce-scatter in rows, ring all-reduce of the S/X
//                     shards along columns, all-gather in rows (Mikami et al. 2018, "2D-Torus all-reduce";
//                     Ying et al. 2018). Idle star: T = 2(X-1)(2L + S/(XB)) + 2(Y-1)(2L + S/(nB)).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "topologies/allreduce_primitives.hpp"
#include "topologies/collectives.hpp"

namespace ddlsim::topo {

/// Segments a tree algorithm uses per tree when segment_size is 0.
inline constexpr std::uint32_t kDefaultTreeSegments = 8;

/// Ring all-reduce cut into segments of at most `segment` bytes (equals ring_allreduce_plan when segment is 0).
[[nodiscard]] sim::Plan segmented_ring_allreduce_plan(std::uint32_t n, sim::Bytes bytes, sim::Bytes segment);
/// Pipelined binary-tree all-reduce (NCCL's tree); a zero segment means kDefaultTreeSegments segments.
[[nodiscard]] sim::Plan tree_allreduce_plan(std::uint32_t n, sim::Bytes bytes, sim::Bytes segment);
/// NCCL's double binary tree: each tree all-reduces half the bytes.
[[nodiscard]] sim::Plan double_tree_allreduce_plan(std::uint32_t n, sim::Bytes bytes, sim::Bytes segment);
/// The workers 0..n-1 grouped by node_of (empty or short: a worker is its own node), nodes in order of their first
/// worker, each node's workers in id order.
[[nodiscard]] std::vector<std::vector<std::uint32_t>> nodes_of(const std::vector<std::uint32_t>& node_of,
                                                               std::uint32_t n);
/// NCCL's trees on nodes: `channels` channels, each running `trees` (1: ncclGetBtree, 2: with ncclGetDtree's second)
/// trees among the nodes, whose heads are the first workers of the nodes' chains rotated by c m / channels.
[[nodiscard]] sim::Plan node_tree_allreduce_plan(const std::vector<std::vector<std::uint32_t>>& nodes, std::uint32_t n,
                                                 std::uint32_t channels, std::uint32_t trees, sim::Bytes bytes,
                                                 sim::Bytes segment);
/// Rabenseifner's halving-doubling all-reduce (MPICH treatment of non-powers of two).
[[nodiscard]] sim::Plan halving_doubling_allreduce_plan(std::uint32_t n, sim::Bytes bytes, sim::Bytes segment);
/// Hierarchical all-reduce over the nodes given by node_of (empty: every worker its own node).
[[nodiscard]] sim::Plan hierarchical_allreduce_plan(const std::vector<std::uint32_t>& node_of, std::uint32_t n,
                                                    sim::Bytes bytes, sim::Bytes segment);
/// The logical grid of torus2d: {X, Y} with X the largest divisor of n not above sqrt(n).
[[nodiscard]] std::pair<std::uint32_t, std::uint32_t> torus2d_grid(std::uint32_t n);
/// 2D-torus all-reduce on the grid of torus2d_grid.
[[nodiscard]] sim::Plan torus2d_allreduce_plan(std::uint32_t n, sim::Bytes bytes, sim::Bytes segment);

/// The all-reduce collective for `spec.algorithm` (any algorithm; ring with segments too).
[[nodiscard]] std::unique_ptr<Collective> make_allreduce(const ArchitectureSpec& spec, const CollectiveContext& ctx);

/// What the project knows about one all-reduce algorithm besides its name (k_allreduce_algorithms in
/// collectives.hpp): how to build it and how large one round is. allreduce_algorithms.cpp lists them.
struct AllreduceAlgorithmInfo {
    AllreduceAlgorithm algorithm;
    std::unique_ptr<Collective> (*make)(const ArchitectureSpec& spec, const CollectiveContext& ctx);
    /// Transfers in one round of `bytes` per worker among n workers with segments of `segment` bytes (0: none);
    /// an upper estimate, for the up-front limits.
    double (*transfers)(double n, double bytes, double segment);
    /// Whether rounds are held as explicit DAGs (the plain ring is a state machine).
    bool (*explicit_dag)(double segment);
};

/// Every algorithm's descriptor.
[[nodiscard]] std::span<const AllreduceAlgorithmInfo> allreduce_algorithms();
[[nodiscard]] const AllreduceAlgorithmInfo& allreduce_algorithm(AllreduceAlgorithm a);
/// round_size for an all-reduce (collectives.hpp).
[[nodiscard]] RoundSize allreduce_round_size(const ArchitectureSpec& spec, const RoundShape& shape);

}  // namespace ddlsim::topo
