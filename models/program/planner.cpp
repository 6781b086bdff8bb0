#include "models/program/planner.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "topologies/allreduce_auto.hpp"
#include "topologies/grouped_collective.hpp"
#include "topologies/parameter_server.hpp"
#include "topologies/ring_allreduce.hpp"
#include "topologies/sharded_collectives.hpp"
#include "topologies/sparse_collectives.hpp"

namespace ddlsim::models::program {
namespace {

// One island's view of the job's context: its workers renumbered from 0, their nodes renumbered densely, and algorithm
// auto's timing run on the island's own hosts.
topo::CollectiveContext island_context(const topo::CollectiveContext& ctx, const std::vector<std::uint32_t>& members) {
    topo::CollectiveContext c = ctx;
    c.workers = static_cast<std::uint32_t>(members.size());
    c.tensor_server.clear();
    c.switch_reduction = 0.0;  // the loader refuses nvls and collnet with islands
    c.network_reduction = 0.0;
    if (!ctx.node_of.empty()) {
        std::map<std::uint32_t, std::uint32_t> dense;
        c.node_of.clear();
        for (std::uint32_t w : members)
            c.node_of.push_back(
                dense.try_emplace(ctx.node_of[w], static_cast<std::uint32_t>(dense.size())).first->second);
    }
    if (ctx.round_time)
        c.round_time = [time = ctx.round_time, members, n = ctx.workers](const topo::Collective& island) {
            return time(*topo::view_over(island, members, n));
        };
    return c;
}

}  // namespace

Planner::Planner(std::uint32_t ranks, const topo::CollectiveContext* ctx, topo::RemoteTest remote,
                 topo::RemoteTest machines)
    : ranks_(ranks), ctx_(ctx), remote_(std::move(remote)), machines_(std::move(machines)) {}

GroupId Planner::add_group(std::string name, Partition parts) {
    if (parts.empty() || parts.front().empty()) throw std::invalid_argument("group " + name + " has no ranks");
    groups_.push_back({std::move(name), std::move(parts), -1});
    return static_cast<GroupId>(groups_.size() - 1);
}

GroupId Planner::add_group_across(std::string name, GroupId of) {
    const Partition& base = groups_.at(of).parts;
    Partition parts(base.front().size());  // part j: rank j of every part of `of`
    for (const auto& p : base)
        for (std::size_t j = 0; j < p.size() && j < parts.size(); ++j) parts[j].push_back(p[j]);
    groups_.push_back({std::move(name), std::move(parts), static_cast<int>(of)});
    return static_cast<GroupId>(groups_.size() - 1);
}

void Planner::serve_data_parallel(const TrainingJob& job, Picks* picks) {
    if (ctx_ == nullptr) throw std::logic_error("planner: a data-parallel job needs the job's collective context");
    job_ = &job;
    if (picks != nullptr) picks_ = picks;
}

bool Planner::islands() const {
    return job_->sync.kind == SyncKind::diloco && job_->sync.islands > 1;
}

std::unique_ptr<topo::Collective> Planner::make_summable(const topo::ArchitectureSpec& arch,
                                                         const topo::CollectiveContext& ctx) const {
    if (!islands()) return topo::make_collective(arch, ctx);
    auto groups = job_->sync.island_groups(job_->workers);
    std::vector<std::unique_ptr<topo::Collective>> parts;
    for (const auto& members : groups) parts.push_back(topo::make_collective(arch, island_context(ctx, members)));
    return std::make_unique<topo::GroupedCollective>(std::move(groups), std::move(parts), job_->workers);
}

const std::pair<topo::AllreduceAlgorithm, double>* Planner::pick_of(const topo::Collective* c) const {
    const auto it = picked_.find(c);
    return it == picked_.end() ? nullptr : &it->second;
}

// The data-parallel kinds: the job's architecture over every worker (or each island).
std::unique_ptr<topo::Collective> Planner::data_parallel(const CommOp& op) {
    if (job_ == nullptr) throw std::logic_error("planner: no data-parallel job to plan for");
    const std::uint32_t n = job_->workers;
    const double bytes = op.bytes;
    const auto& arch = job_->architecture;
    if (op.kind == CollectiveKind::summable || arch.kind == topo::ArchKind::gossip) {
        topo::CollectiveContext ctx = *ctx_;
        ctx.bytes = sim::Bytes{bytes};
        ctx.tensor_bytes = op.tensors.empty() ? std::vector<double>{bytes} : op.tensors;
        ctx.tensor_server = op.servers;
        if (arch.kind == topo::ArchKind::allreduce && arch.algorithm == topo::AllreduceAlgorithm::automatic) {
            // auto: one pick per message size (topologies/allreduce_auto.hpp), the collective of that algorithm.
            const auto [pick, fresh] = picks_->try_emplace(bytes);
            if (fresh)
                pick->second =
                    islands() ? topo::pick_allreduce(arch, island_context(ctx, job_->sync.island_groups(n).front()))
                              : topo::pick_allreduce(arch, ctx);
            topo::ArchitectureSpec concrete = arch;
            concrete.algorithm = pick->second;
            auto c = make_summable(concrete, ctx);
            picked_[c.get()] = {pick->second, bytes};
            return c;
        }
        return make_summable(arch, ctx);
    }
    if (arch.kind == topo::ArchKind::ps) {
        if (op.kind == CollectiveKind::gtopk) throw std::invalid_argument("gtopk needs architecture \"allreduce\"");
        if (arch.style == topo::PsStyle::byteps)
            throw std::invalid_argument("sparse payloads need a standard parameter server, not BytePS");
        const auto k = static_cast<std::uint32_t>(arch.servers);
        // The aggregate of n sparse payloads has at most n times the entries, never more than dense.
        const double pull = std::min(n * bytes, ctx_->bytes.value());
        return std::make_unique<topo::PlanCollective>(
            topo::parameter_server(n, k, sim::Bytes{bytes}, sim::Bytes{pull}, arch.aggregation_rate));
    }
    if (op.kind == CollectiveKind::gtopk)
        return std::make_unique<topo::PlanCollective>(topo::gtopk_plan(n, sim::Bytes{bytes}, topo::GtopkForm::tree));
    return std::make_unique<topo::PlanCollective>(topo::sparse_allgather_plan(arch.algorithm, n, sim::Bytes{bytes}));
}

std::uint32_t Planner::group_size(GroupId g) const {
    return static_cast<std::uint32_t>(groups_.at(g).parts.front().size());
}

Planner::Entry& Planner::entry(const CommOp& op) {
    if (last_ != cache_.end() && last_->first == op) return last_->second;
    last_ = cache_.find(op);
    if (last_ != cache_.end()) return last_->second;
    Entry e;
    e.collective = build(op);
    e.wire = e.collective->wire_bytes(remote_).value();
    e.machine = e.collective->wire_bytes(machines_).value();
    last_ = cache_.emplace(op, std::move(e)).first;
    return last_->second;
}

std::unique_ptr<topo::Collective> Planner::build(const CommOp& op) {
    const sim::Bytes bytes{op.bytes};
    switch (op.kind) {
        case CollectiveKind::reduce_scatter:
        case CollectiveKind::all_gather:
            return topo::make_shard_collective(op.kind == CollectiveKind::all_gather
                                                   ? topo::ShardCollective::all_gather
                                                   : topo::ShardCollective::reduce_scatter,
                                               groups_.at(op.group).parts, ranks_, bytes, ctx_);
        case CollectiveKind::all_reduce: {
            // Over a group across another: the replica all-reduce of sharded_collectives.hpp, which runs over the
            // transpose of the shard groups it is given (each rank all-reduces its shard). Over a group of its own:
            // a ring all-reduce of the whole `bytes` in each part (RingCollective: 2(g - 1) steps of bytes / g).
            const Group& g = groups_.at(op.group);
            if (g.across >= 0)
                return topo::make_shard_collective(topo::ShardCollective::replica_allreduce,
                                                   groups_[static_cast<std::size_t>(g.across)].parts, ranks_, bytes,
                                                   ctx_);
            // As NCCL runs it (topologies/allreduce_algorithms.cpp, make_ring): a part spread over several
            // nodes runs one ring per NIC its node's ranks use (topo::ring_channels), each on a share of the bytes.
            const auto size = static_cast<std::uint32_t>(g.parts.front().size());
            const std::uint32_t steps = size < 2 ? 0 : 2 * (size - 1);
            auto rings = ctx_ == nullptr ? std::vector<Partition>{g.parts}
                                         : topo::ring_channels(g.parts, ctx_->node_of, ctx_->ring_channels);
            if (rings.size() == 1)
                return std::make_unique<topo::RingCollective>(ranks_, g.parts, bytes / std::max(size, 1U), steps);
            const double c = static_cast<double>(rings.size());
            std::vector<std::unique_ptr<topo::Collective>> parts;
            for (auto& channel : rings)
                parts.push_back(
                    std::make_unique<topo::RingCollective>(ranks_, std::move(channel), bytes / c / size, steps));
            return std::make_unique<topo::ParallelCollective>(std::move(parts));
        }
        case CollectiveKind::hierarchical_all_to_all:
            return topo::make_hierarchical_all_to_all(groups_.at(op.group).parts, ranks_, bytes, sim::Bytes{op.bytes2});
        case CollectiveKind::dispatch:
        case CollectiveKind::combine:
            return topo::make_all_to_all(groups_.at(op.group).parts, ranks_, bytes, std::max(op.bytes2, 1.0),
                                         op.kind == CollectiveKind::dispatch);
        case CollectiveKind::summable:
        case CollectiveKind::sparse_all_gather:
        case CollectiveKind::gtopk: return data_parallel(op);
    }
    throw std::logic_error("planner: unknown collective kind");
}

const topo::Collective& Planner::collective(const CommOp& op) {
    return *entry(op).collective;
}

double Planner::wire_bytes(const CommOp& op) {
    return entry(op).wire;
}

double Planner::machine_bytes(const CommOp& op) {
    return entry(op).machine;
}

}  // namespace ddlsim::models::program
