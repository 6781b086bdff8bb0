#include "models/program/planner.hpp"

#include <stdexcept>
#include <utility>

#include "topologies/sharded_collectives.hpp"

namespace ddlsim::models::program {

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

std::uint32_t Planner::group_size(GroupId g) const {
    return static_cast<std::uint32_t>(groups_.at(g).parts.front().size());
}

Planner::Entry& Planner::entry(const CommOp& op) {
    auto it = cache_.find(op);
    if (it != cache_.end()) return it->second;
    const Group& g = groups_.at(op.group);
    const sim::Bytes bytes{op.bytes};
    std::unique_ptr<topo::Collective> c;
    switch (op.kind) {
        case CollectiveKind::reduce_scatter:
        case CollectiveKind::all_gather:
            c = topo::make_shard_collective(op.kind == CollectiveKind::all_gather
                                                ? topo::ShardCollective::all_gather
                                                : topo::ShardCollective::reduce_scatter,
                                            g.parts, ranks_, bytes, ctx_);
            break;
        case CollectiveKind::all_reduce:
            // The replica all-reduce of sharded_collectives.hpp runs over the transpose of the shard groups it is
            // given: it needs the group this one is across.
            if (g.across < 0)
                throw std::logic_error("planner: all_reduce over group " + g.name +
                                       " needs a group declared across another");
            c = topo::make_shard_collective(topo::ShardCollective::replica_allreduce,
                                            groups_[static_cast<std::size_t>(g.across)].parts, ranks_, bytes, ctx_);
            break;
        case CollectiveKind::hierarchical_all_to_all:
            c = topo::make_hierarchical_all_to_all(g.parts, ranks_, bytes, sim::Bytes{op.bytes2});
            break;
    }
    Entry e;
    e.wire = c->wire_bytes(remote_).value();
    e.machine = c->wire_bytes(machines_).value();
    e.collective = std::move(c);
    return cache_.emplace(op, std::move(e)).first->second;
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
