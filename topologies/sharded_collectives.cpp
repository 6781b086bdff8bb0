#include "topologies/sharded_collectives.hpp"

#include <fmt/format.h>

#include <map>
#include <stdexcept>

#include "topologies/ring_allreduce.hpp"

namespace ddlsim::topo {

std::vector<std::vector<std::uint32_t>> shard_groups(const std::vector<std::uint32_t>& node_of, std::uint32_t n,
                                                     bool by_node) {
    std::vector<std::vector<std::uint32_t>> groups;
    if (!by_node) {
        groups.emplace_back();
        for (std::uint32_t w = 0; w < n; ++w) groups.front().push_back(w);
        return groups;
    }
    std::map<std::uint32_t, std::size_t> index;  // node -> group, in order of the node's first worker
    for (std::uint32_t w = 0; w < n; ++w) {
        const std::uint32_t node = w < node_of.size() ? node_of[w] : w;
        const auto it = index.try_emplace(node, groups.size()).first;
        if (it->second == groups.size()) groups.emplace_back();
        groups[it->second].push_back(w);
    }
    for (const auto& g : groups)
        if (g.size() != groups.front().size())
            throw std::invalid_argument(
                fmt::format("hybrid sharding needs the same number of workers on every node, got {} and {} (place "
                            "the workers evenly, or shard over \"all\")",
                            groups.front().size(), g.size()));
    return groups;
}

std::unique_ptr<Collective> make_shard_collective(ShardCollective op,
                                                  const std::vector<std::vector<std::uint32_t>>& groups,
                                                  std::uint32_t n, sim::Bytes bytes) {
    const auto g = static_cast<std::uint32_t>(groups.empty() ? 1 : groups.front().size());
    if (op != ShardCollective::replica_allreduce) return std::make_unique<RingCollective>(n, groups, bytes / g, g - 1);
    // Rails: rank j of every group.
    const auto r = static_cast<std::uint32_t>(groups.size());
    std::vector<std::vector<std::uint32_t>> rails(g);
    for (const auto& group : groups)
        for (std::uint32_t j = 0; j < g; ++j) rails[j].push_back(group[j]);
    return std::make_unique<RingCollective>(n, std::move(rails), bytes / g / r, r < 2 ? 0 : 2 * (r - 1));
}

}  // namespace ddlsim::topo
