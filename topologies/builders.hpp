// Builders of physical fabrics from plain specs. Host naming:
//   star:     h0, h1, ...                 (switch "switch")
//   two_tier: n<i>g<j> for GPU j of node i (node switch "n<i>", top switch "switch"),
//             then extra hosts s0, s1, ... on the top switch (dedicated servers)
//   custom:   the names given.
#pragma once

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

#include "topologies/fabric.hpp"

namespace ddlsim::topo {

/// Every host on its own full-duplex link to one non-blocking switch.
struct StarSpec {
    std::size_t hosts = 0;
    sim::Bandwidth bandwidth;
    sim::Time latency;
};

/// Nodes of `gpus_per_node` GPUs on an intra-node fabric (a node switch, links of
/// intra_bandwidth / intra_latency), each node's NIC (bandwidth / latency) on one switch.
struct TwoTierSpec {
    std::size_t nodes = 0;
    std::size_t gpus_per_node = 0;
    sim::Bandwidth bandwidth;
    sim::Time latency;
    sim::Bandwidth intra_bandwidth;
    sim::Time intra_latency;
    std::size_t extra_hosts = 0;  ///< single-NIC hosts on the top switch (e.g. dedicated servers)
};

struct CustomNode {
    std::string name;
    NodeKind kind = NodeKind::host;
};

struct CustomLink {
    std::string from;
    std::string to;
    sim::Bandwidth bandwidth;
    sim::Time latency;
};

/// Explicit nodes and links.
struct CustomSpec {
    std::vector<CustomNode> nodes;
    std::vector<CustomLink> links;
};

using TopologySpec = std::variant<StarSpec, TwoTierSpec, CustomSpec>;

/// Builds and validates the fabric; throws std::invalid_argument on an invalid one.
[[nodiscard]] Fabric build_fabric(const TopologySpec& spec);

}  // namespace ddlsim::topo
