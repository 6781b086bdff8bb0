// Parameter-server architectures (Li et al., "Scaling Distributed Machine Learning with the
// Parameter Server", OSDI 2014): workers push gradient shards to servers, servers aggregate,
// workers pull the updated shards. Endpoints 0..n-1 are workers, n..n+k-1 servers.
#pragma once

#include <memory>
#include <optional>

#include "topologies/collectives.hpp"

namespace ddlsim::topo {

/// Sharded parameter server: n workers, k servers (endpoints n..n+k-1), even shards.
[[nodiscard]] sim::Plan parameter_server(std::uint32_t n, std::uint32_t k, sim::Bytes bytes,
                                         std::optional<sim::Bandwidth> aggregation_rate);

/// The PS collective of an `architecture` block of kind "ps".
[[nodiscard]] std::unique_ptr<Collective> make_parameter_server(const ArchitectureSpec& spec,
                                                                const CollectiveContext& ctx);

}  // namespace ddlsim::topo
