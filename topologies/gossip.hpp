// Decentralised (gossip) architectures: D-PSGD (Lian et al., NeurIPS 2017): every worker
// exchanges its model with its neighbours in a communication graph each iteration.
#pragma once

#include <memory>
#include <vector>

#include "topologies/collectives.hpp"

namespace ddlsim::topo {

/// Neighbours of each worker in a gossip graph (deduplicated, no self).
[[nodiscard]] std::vector<std::vector<std::uint32_t>> gossip_neighbours(GossipGraph graph, std::uint32_t n);
/// One D-PSGD exchange: every worker sends `bytes` to each of its neighbours.
[[nodiscard]] sim::Plan gossip_exchange(const std::vector<std::vector<std::uint32_t>>& neighbours, sim::Bytes bytes);

/// The gossip collective of an `architecture` block of kind "gossip".
[[nodiscard]] std::unique_ptr<Collective> make_gossip(const ArchitectureSpec& spec, const CollectiveContext& ctx);

}  // namespace ddlsim::topo
