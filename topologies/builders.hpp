// Builders of physical fabrics from plain specs. Host naming (the default
// placement takes hosts in this order):
//   star:       h0, h1, ...                        (switch "switch")
//   two_tier:   n<i>g<j> for GPU j of node i (node switch "n<i>", top switch "switch"),
//               then extra hosts s0, s1, ... on the top switch (dedicated servers); with a
//               node type, its parts as node_type.hpp names them, NICs n<i>nic<k> on "switch"
//   rail_optimized: n<i>g<j> as two_tier with a node type; NIC k of every node on rail leaf
//               "rail<k>", every rail leaf on every "spine<j>"
//   fat_tree:   h0 .. h(k^3/4 - 1), edge switch by edge switch
//               (switches e<pod>_<i>, a<pod>_<i>, c<i>)
//   leaf_spine: h0, h1, ... leaf by leaf (switches leaf<i>, spine<j>)
//   ring:       h0 .. h(n-1), each joined to the next (no switch)
//   torus2d:    h<x>_<y> on an X x Y wrap-around grid (no switch)
//   custom:     the names given.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "topologies/fabric.hpp"
#include "topologies/node_type.hpp"

namespace ddlsim::topo {

/// Every host on its own full-duplex link to one non-blocking switch.
struct StarSpec {
    static constexpr std::string_view kName = "star";
    static constexpr std::string_view kDescription = "every host on its own link to one non-blocking switch";
    std::size_t hosts = 0;
    sim::Bandwidth bandwidth;
    sim::Time latency;
    /// The switch aggregates (network.sharp): parameter-server pushes sum in it (architecture.switch_aggregation).
    bool sharp = false;
    /// Bytes of aggregation state the summing switch holds in flight (network.aggregation_memory; 0: unbounded).
    double aggregation_memory = 0.0;
};

/// Nodes of `gpus_per_node` GPUs on an intra-node fabric (a node switch, links of
/// intra_bandwidth / intra_latency); each node reaches the top switch through
/// `nics_per_node` parallel NIC links of bandwidth / latency (GPU r of m uses link r k / m: Fabric::nic_choice).
struct TwoTierSpec {
    static constexpr std::string_view kName = "two_tier";
    static constexpr std::string_view kDescription = "GPU nodes on an intra-node fabric, NICs to one top switch";
    std::size_t nodes = 0;
    std::size_t gpus_per_node = 0;
    sim::Bandwidth bandwidth;
    sim::Time latency;
    sim::Bandwidth intra_bandwidth;
    sim::Time intra_latency;
    std::size_t nics_per_node = 1;
    std::size_t extra_hosts = 0;  ///< single-NIC hosts on the top switch (e.g. dedicated servers)
    /// A node type (network.node): its parts replace the node switch, intra links and parallel NIC links
    /// above; gpus_per_node, nics_per_node and intra_bandwidth then repeat the type's figures.
    std::optional<NodeType> node = std::nullopt;
    /// Sites (datacenters) the nodes are split into, evenly and in order: site s has its own top switch
    /// "site<s>", joined to the others through one WAN core "wan" by a link of wan_bandwidth and wan_latency / 2
    /// per site (so two sites are wan_latency apart). 1: one site, the top switch "switch".
    std::size_t sites = 1;
    sim::Bandwidth wan_bandwidth{};
    sim::Time wan_latency{};
    /// InfiniBand SHARP: the top switch reduces (algorithm collnet); one site only.
    bool sharp = false;
    double aggregation_memory = 0.0;  ///< as StarSpec's
};

/// Rail-optimized leaf-spine (NVIDIA's DGX SuperPOD compute fabric): NIC k of every node on rail
/// leaf k, so GPU k of one node reaches GPU k of another through its NIC, the rail leaf and the
/// peer's NIC. The rail leaves join through `spines` spines, each leaf uplink carrying
/// nodes * bandwidth / (spines * oversubscription). GPUs do not forward, so traffic between rails
/// (GPU 3 to GPU 5 of another node) crosses a spine; NCCL's PXN, which moves it over NVLink to the
/// GPU on the destination's rail first, is a choice of the collective, not of the routes.
struct RailOptimizedSpec {
    static constexpr std::string_view kName = "rail_optimized";
    static constexpr std::string_view kDescription =
        "nodes whose NIC k sits on rail leaf k, rail leaves joined by spines (DGX SuperPOD style)";
    std::size_t nodes = 0;
    NodeType node;
    sim::Bandwidth bandwidth;  ///< each NIC port and rail-leaf port
    sim::Time latency;         ///< every link outside the nodes
    sim::Time intra_latency;   ///< every link inside a node
    std::size_t spines = 1;
    double oversubscription = 1.0;
    /// InfiniBand SHARP: every rail leaf reduces its rail (algorithm collnet).
    bool sharp = false;
    double aggregation_memory = 0.0;  ///< as StarSpec's
};

/// k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2 edge and k/2
/// aggregation switches, (k/2)^2 core switches, k^3/4 hosts, every link alike:
/// full bisection bandwidth.
struct FatTreeSpec {
    static constexpr std::string_view kName = "fat_tree";
    static constexpr std::string_view kDescription =
        "k-ary fat-tree, full bisection bandwidth (Al-Fares et al., SIGCOMM 2008)";
    std::size_t k = 4;
    sim::Bandwidth bandwidth;
    sim::Time latency;
};

/// Two-level Clos: `leaves` leaf switches of `hosts_per_leaf` hosts, each leaf
/// linked to every one of `spines` spines. Leaf uplinks get
/// hosts_per_leaf * bandwidth / (spines * oversubscription).
struct LeafSpineSpec {
    static constexpr std::string_view kName = "leaf_spine";
    static constexpr std::string_view kDescription = "two-level Clos with an oversubscription ratio";
    std::size_t leaves = 2;
    std::size_t hosts_per_leaf = 1;
    std::size_t spines = 1;
    double oversubscription = 1.0;
    sim::Bandwidth bandwidth;
    sim::Time latency;
};

/// Hosts joined directly in a ring (each host to the next, full duplex).
struct RingSpec {
    static constexpr std::string_view kName = "ring";
    static constexpr std::string_view kDescription = "hosts joined directly in a ring";
    std::size_t hosts = 0;
    sim::Bandwidth bandwidth;
    sim::Time latency;
};

/// Hosts on an X x Y grid with wrap-around links in both dimensions.
struct Torus2dSpec {
    static constexpr std::string_view kName = "torus2d";
    static constexpr std::string_view kDescription = "an X x Y grid with wrap-around links";
    std::size_t x = 0;
    std::size_t y = 0;
    sim::Bandwidth bandwidth;
    sim::Time latency;
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
    static constexpr std::string_view kName = "custom";
    static constexpr std::string_view kDescription = "explicit nodes and links, inline or in a file";
    std::vector<CustomNode> nodes;
    std::vector<CustomLink> links;
};

using TopologySpec = std::variant<StarSpec, TwoTierSpec, FatTreeSpec, LeafSpineSpec, RingSpec, Torus2dSpec, CustomSpec,
                                  RailOptimizedSpec>;

/// The scenario name of a topology ("star", ...): each spec's kName.
[[nodiscard]] inline std::string_view topology_name(const TopologySpec& t) {
    return std::visit([](const auto& s) { return std::decay_t<decltype(s)>::kName; }, t);
}

/// Builds and validates the fabric; throws std::invalid_argument on an invalid one.
[[nodiscard]] Fabric build_fabric(const TopologySpec& spec);
/// Fabrics build_fabric has built so far in this process (every thread): a run builds its one, which a test counts.
[[nodiscard]] std::uint64_t fabrics_built();

/// Leaf uplink bandwidth of a leaf-spine spec.
[[nodiscard]] sim::Bandwidth leaf_uplink_bandwidth(const LeafSpineSpec& s);
/// Rail-leaf uplink bandwidth (to each spine) of a rail-optimized spec.
[[nodiscard]] sim::Bandwidth rail_uplink_bandwidth(const RailOptimizedSpec& s);

}  // namespace ddlsim::topo
