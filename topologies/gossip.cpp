#include "topologies/gossip.hpp"

#include <algorithm>
#include <stdexcept>

namespace ddlsim::topo {

std::vector<std::vector<std::uint32_t>> gossip_neighbours(GossipGraph graph, std::uint32_t n) {
    std::vector<std::vector<std::uint32_t>> out(n);
    if (graph != GossipGraph::ring) throw std::logic_error("gossip graph not implemented");
    for (std::uint32_t i = 0; i < n; ++i) {
        for (std::uint32_t j : {(i + n - 1) % n, (i + 1) % n})
            if (j != i && std::find(out[i].begin(), out[i].end(), j) == out[i].end()) out[i].push_back(j);
    }
    return out;
}

sim::Plan gossip_exchange(const std::vector<std::vector<std::uint32_t>>& neighbours, sim::Bytes bytes) {
    sim::Plan plan;
    plan.endpoints = static_cast<std::uint32_t>(neighbours.size());
    for (std::uint32_t i = 0; i < neighbours.size(); ++i)
        for (std::uint32_t j : neighbours[i]) plan.add(i, j, bytes);
    return plan;
}

std::unique_ptr<Collective> make_gossip(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    return std::make_unique<PlanCollective>(gossip_exchange(gossip_neighbours(spec.graph, ctx.workers), ctx.bytes));
}

}  // namespace ddlsim::topo
