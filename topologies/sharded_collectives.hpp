// The collectives of sharded data parallelism: ZeRO (Rajbhandari et al., "ZeRO: Memory Optimizations Toward
// Training Trillion Parameter Models", SC 2020, §5 and §7) and PyTorch FSDP / HSDP (Zhao et al., "PyTorch FSDP:
// Experiences on Scaling Fully Sharded Data Parallel", VLDB 2023, §3.2 and §4.2).
//
// A shard group is the set of workers that split the model state among themselves: every worker (group "all")
// or the workers of one node (group "node": hybrid sharding, each node holding a full replica). With shard
// groups of g workers and S bytes:
//   reduce_scatter      every group reduce-scatters S: ring, g-1 steps of S/g per worker
//   all_gather          every group all-gathers S from its S/g shards: ring, g-1 steps of S/g per worker
//   replica_allreduce   (hybrid only) rank j of every group all-reduces its S/g shard with rank j of the other
//                       groups: rings across the groups, 2(R-1) steps of S/(gR) for R groups
// Channels: where a group spans several nodes with m >= 2 of its workers on each, the reduce-scatter and all-gather
// run as m rings at once, each carrying 1/m of the bytes, ring k visiting every node's workers rotated by k so that
// each ring leaves and enters a node through a different GPU (and so a different NIC with one NIC per GPU): NCCL's
// channels, which spread a ring collective over a node's NICs (NCCL user guide, "NCCL_MIN_NCHANNELS"; the ring
// search of src/graph/search.cc of NVIDIA/nccl builds one ring per channel). The rails of the replica all-reduce
// already leave every node through each of its GPUs.
// All are rings (RingCollective: O(n) state): NCCL runs reduce-scatter and all-gather on rings (NCCL user guide,
// "Collective Operations"; src/device/reduce_scatter.h and all_gather.h of NVIDIA/nccl implement only the ring
// algorithm for them outside NVLS/CollNet), and PyTorch's HSDP all-reduces the replicas with NCCL's default.
// On the wire per worker: reduce_scatter + all_gather = 2(g-1)/g S, a ring all-reduce's; replica_allreduce
// 2(R-1)/R S/g.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "topologies/collectives.hpp"

namespace ddlsim::topo {

enum class ShardCollective { reduce_scatter, all_gather, replica_allreduce };

/// The shard groups of n workers: all of them (by_node false) or one per node of `node_of` (dense node ids per
/// worker, collective_context's). Hybrid groups must be of equal size (each rank j has a peer in every group);
/// throws std::invalid_argument naming the sizes otherwise.
[[nodiscard]] std::vector<std::vector<std::uint32_t>> shard_groups(const std::vector<std::uint32_t>& node_of,
                                                                   std::uint32_t n, bool by_node);

/// The collective `op` of `bytes` (S, the full tensor size per worker) over `groups` among n endpoints; `ctx` (may be
/// null: one ring per group) sets the channels (ring_channels with its node_of and ring_channels).
[[nodiscard]] std::unique_ptr<Collective> make_shard_collective(ShardCollective op,
                                                                const std::vector<std::vector<std::uint32_t>>& groups,
                                                                std::uint32_t n, sim::Bytes bytes,
                                                                const CollectiveContext* ctx = nullptr);

/// An all-to-all in each group of `groups` (equal sizes g): every member sends `bytes` / g to each other member
/// (NCCL's all-to-all of send/recv pairs), or, with `hot` > 1, unevenly (alltoallv): the first member of each group
/// receives hot x bytes / g from every other and the others (g - hot) / (g - 1) x (`into_first`), or sends them
/// (otherwise), so each member still sends (receives) `bytes` in all. hot is clamped to [1, g]. One transfer per
/// ordered pair.
[[nodiscard]] std::unique_ptr<Collective> make_all_to_all(const std::vector<std::vector<std::uint32_t>>& groups,
                                                          std::uint32_t n, sim::Bytes bytes, double hot,
                                                          bool into_first);

/// ZeRO++ qgZ's gradient reduction (Wang et al., arXiv 2306.10209, §3.3; DeepSpeed's all_to_all_quant_reduce in
/// deepspeed/runtime/comm/coalesced_collectives.py at 38327e07f6cd39b63418f60cedd1651b0be3e7c3): a direct all-to-all
/// inside each node of `nodes` (m workers each, equal sizes) in which every worker sends `intra` / m bytes to each
/// of its m - 1 peers, then one among rank j of every node (N nodes) in which each sends `inter` / N bytes to each
/// of the other N - 1, a worker's second part starting once its first is done. An explicit DAG of n (m + N - 2)
/// transfers.
[[nodiscard]] std::unique_ptr<Collective> make_hierarchical_all_to_all(
    const std::vector<std::vector<std::uint32_t>>& nodes, std::uint32_t n, sim::Bytes intra, sim::Bytes inter);

/// The channels of a ring over `groups`: one ring order per channel. Where every group spans several nodes with the
/// same number m >= 2 of its workers on each (`node_of`: per worker) and `channels` >= 2 divides m, `channels` rings,
/// ring i visiting each node's workers rotated by i m / channels (so each ring enters a node through a GPU m / channels
/// places after the previous ring's, on a different NIC where GPU r of m uses NIC r k / m); `channels` >= 2 not
/// dividing m: m rings, rotated by 1. Else (one channel, one node, unequal nodes) the groups themselves.
[[nodiscard]] std::vector<std::vector<std::vector<std::uint32_t>>> ring_channels(
    const std::vector<std::vector<std::uint32_t>>& groups, const std::vector<std::uint32_t>& node_of,
    std::uint32_t channels);

/// Several collectives over the same endpoints run at once as one (channels): an endpoint is done once it is done
/// in every part; bytes on the wire add up, the closed form is the slowest part's.
class ParallelCollective final : public Collective {
public:
    explicit ParallelCollective(std::vector<std::unique_ptr<Collective>> parts);
    [[nodiscard]] std::uint32_t endpoints() const override { return parts_.front()->endpoints(); }
    [[nodiscard]] std::unique_ptr<sim::Round> start_round(sim::Engine& engine, sim::Network& network,
                                                          sim::RouteLookup routes, sim::EndpointDone on_done,
                                                          std::uint32_t round) const override;
    [[nodiscard]] std::unique_ptr<sim::Round> start_class_round(sim::Engine& engine, sim::Network& network,
                                                                sim::ShiftQuotient& q, sim::EndpointDone on_done,
                                                                std::uint32_t round) const override;
    [[nodiscard]] bool has_class_form() const override {
        return std::all_of(parts_.begin(), parts_.end(), [](const auto& p) { return p->has_class_form(); });
    }
    [[nodiscard]] sim::Bytes wire_bytes(const RemoteTest& remote) const override;
    [[nodiscard]] sim::Time alpha_beta(const sim::PathCostLookup& cost) const override;
    /// An endpoint is done when each part is: the longest of its parts' least times.
    [[nodiscard]] sim::Time least_time(const sim::PathCostLookup& cost, std::uint32_t e) const override;

private:
    std::vector<std::unique_ptr<Collective>> parts_;
};

}  // namespace ddlsim::topo
