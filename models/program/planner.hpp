// One communication op and the planner every program's collectives go through.
//
// A CommOp names a collective by what it does, not how it is built: its kind, the group of ranks it runs over, its
// bytes and the codec work around it. Its ordering (operator<=>) is the planner's cache key: a program that issues the
// same op twice (every step, every micro-batch) shares one built collective, and a new scheme adds kinds or groups
// here, not a cache of its own.
//
// Groups are named partitions of the job's ranks, registered with the planner (`shard`: the workers that split the
// model state; `hpz`: ZeRO++'s secondary partitions; `node`: the workers of each machine). A group may be declared
// `across` another: rank j of every part of that one (hybrid sharding's replicas).
//
// The kinds and what the planner builds for them (topologies/sharded_collectives.hpp):
//   reduce_scatter, all_gather   over a group: a ring per part (with the context's channels)
//   all_reduce                   over a group across another: the replica all-reduce of rank j of every part (of
//                                its shard, bytes / part size); over a group of its own: a ring in each part
//   hierarchical_all_to_all      over a group (one part per node): ZeRO++ qgZ's two-level all-to-all, `bytes` inside
//                                each part, `bytes2` between them
//   dispatch, combine            over a group: an all-to-all in each part of `bytes` per rank, uneven when `bytes2`
//                                (the hot factor) > 1: the part's first rank receives (dispatch) or sends (combine)
//                                bytes2 x its share (expert parallelism's token all-to-alls,
//                                models/expert_parallel.hpp)
// and, for a data-parallel job the planner serves (serve_data_parallel), the collectives of its architecture over
// every worker (or inside each DiLoCo island), `tensors` its tensors' bytes and `servers` their parameter servers:
//   summable                     the architecture's collective (an all-reduce algorithm, `auto`'s pick per size, a
//                                parameter server's push and pull, gossip's mixing; topo::make_collective)
//   sparse_all_gather            sparse payloads: all-gathered by the all-reduce algorithm's pattern, or pushed and
//                                pulled through the servers
//   gtopk                        gTop-k's tree (Shi et al., ICDCS 2019)
// ZeRO++'s quantisation is codec work on these ops (`before`, `after`: models/compression.hpp codec_time).
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/compression.hpp"
#include "models/job.hpp"
#include "topologies/collectives.hpp"

namespace ddlsim::models::program {

enum class CollectiveKind : std::uint8_t {
    reduce_scatter,
    all_gather,
    all_reduce,
    hierarchical_all_to_all,
    dispatch,
    combine,
    summable,
    sparse_all_gather,
    gtopk,
};

using GroupId = std::uint32_t;
using Partition = std::vector<std::vector<std::uint32_t>>;
/// Algorithm auto's pick per message size; one map may serve every plan of one job on one fabric.
using Picks = std::map<double, topo::AllreduceAlgorithm>;

struct CommOp {
    CollectiveKind kind = CollectiveKind::all_reduce;
    GroupId group = 0;
    double bytes = 0.0;   ///< per rank: the full tensor (reduce_scatter, all_gather, all_reduce); the first part's
    double bytes2 = 0.0;  ///< hierarchical_all_to_all: the second part's; dispatch, combine: the hot factor
    std::vector<double> tensors;         ///< summable: the tensors' bytes (one: `bytes`)
    std::vector<std::uint32_t> servers;  ///< summable on a parameter server: each tensor's server (empty: its own rule)
    CodecWork before;                    ///< on the rank's device before the collective starts
    CodecWork after;                     ///< after it ends

    /// The op without codec work.
    [[nodiscard]] static CommOp of(CollectiveKind kind, GroupId group, double bytes, double bytes2 = 0.0) {
        CommOp op;
        op.kind = kind;
        op.group = group;
        op.bytes = bytes;
        op.bytes2 = bytes2;
        return op;
    }

    friend auto operator<=>(const CommOp&, const CommOp&) = default;
};

/// Builds and keeps the collectives of one job's programs, and counts their bytes.
class Planner {
public:
    /// `ranks`: the job's workers; `ctx` (may be null): ring channels; `remote`, `machines`: whether two ranks are on
    /// different hosts, on different machines (bytes on the wire, bytes through NICs).
    Planner(std::uint32_t ranks, const topo::CollectiveContext* ctx, topo::RemoteTest remote,
            topo::RemoteTest machines);
    Planner(const Planner&) = delete;  // last_ points into cache_
    Planner& operator=(const Planner&) = delete;

    /// Registers a group; `across` (optional): the group it is the transpose of (rank j of every part of that one).
    GroupId add_group(std::string name, Partition parts);
    GroupId add_group_across(std::string name, GroupId of);
    /// Plans `job`'s data-parallel collectives (summable, sparse_all_gather, gtopk) over the context given at
    /// construction; `picks`: algorithm auto's picks kept across runs (else the planner's own).
    void serve_data_parallel(const TrainingJob& job, Picks* picks = nullptr);
    /// The summable collective of `arch` over `ctx`, built and not kept (over every worker, or in each island).
    [[nodiscard]] std::unique_ptr<topo::Collective> make_summable(const topo::ArchitectureSpec& arch,
                                                                  const topo::CollectiveContext& ctx) const;
    /// Algorithm auto: the algorithm it picked for `c` and the bytes it picked for (none: not an auto pick).
    [[nodiscard]] const std::pair<topo::AllreduceAlgorithm, double>* pick_of(const topo::Collective* c) const;
    [[nodiscard]] const Partition& parts(GroupId g) const { return groups_.at(g).parts; }
    /// The ranks in each part of group g (the first part's size).
    [[nodiscard]] std::uint32_t group_size(GroupId g) const;

    /// The collective of `op`, built on first use.
    [[nodiscard]] const topo::Collective& collective(const CommOp& op);
    /// Bytes of one round of `op` between different hosts, and between different machines.
    [[nodiscard]] double wire_bytes(const CommOp& op);
    [[nodiscard]] double machine_bytes(const CommOp& op);
    /// Collectives built so far (distinct ops).
    [[nodiscard]] std::size_t built() const { return cache_.size(); }

private:
    struct Group {
        std::string name;
        Partition parts;
        int across = -1;  ///< the group whose transpose this is
    };
    struct Entry {
        std::unique_ptr<topo::Collective> collective;
        double wire = 0.0, machine = 0.0;
    };
    Entry& entry(const CommOp& op);
    [[nodiscard]] std::unique_ptr<topo::Collective> build(const CommOp& op);
    [[nodiscard]] std::unique_ptr<topo::Collective> data_parallel(const CommOp& op);
    [[nodiscard]] bool islands() const;

    std::uint32_t ranks_;
    const topo::CollectiveContext* ctx_;
    topo::RemoteTest remote_, machines_;
    std::vector<Group> groups_;
    std::map<CommOp, Entry> cache_;
    /// The entry found last (programs issue the same op over and over: every micro-batch's tensor collectives).
    std::map<CommOp, Entry>::iterator last_ = cache_.end();
    const TrainingJob* job_ = nullptr;  ///< the data-parallel job served (serve_data_parallel)
    Picks own_picks_;
    Picks* picks_ = &own_picks_;
    std::map<const topo::Collective*, std::pair<topo::AllreduceAlgorithm, double>> picked_;
};

}  // namespace ddlsim::models::program
