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
//
// Each spec answers the questions asked of a topology (so that a new one is its spec, its builder and its keys,
// not a branch in every reader): kName and kDescription, kSizeKey and host_count() (what sizes its fabric),
// summary(); and, where it is not hosts of one GPU on links of one bandwidth and one latency, machine(),
// largest_latency(), smallest_bandwidth(), link_speeds() and kBytesPerHost. The free functions after
// TopologySpec give any spec's answer, the uniform one where a spec has none.
#pragma once

#include <cmath>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "topologies/fabric.hpp"
#include "topologies/node_type.hpp"

namespace ddlsim::topo {

/// A figure of a topology's links and the network key that gives it ("intra_latency", "links[2].bandwidth").
template <class T>
struct Keyed {
    T value;
    std::string key;
};

/// A machine of the topology (one host where a host is a machine): its GPUs, and the NICs its GPUs reach on routes
/// of their own: a node type's (a preset, rail_optimized); a plain two_tier node's NIC links hang off its node switch
/// and ECMP shares them among the GPUs (models/trainer.cpp's collective_context tests the routes themselves). The
/// limits' estimates of a round read it.
struct Machine {
    double gpus = 1.0, nics = 1.0;
};

/// The links inside a topology's machines: their bandwidth, and whether a node preset's parts make them (links
/// that differ in medium, NVLink and PCIe, which a transport `auto` picks for one by one).
struct IntraLinks {
    sim::Bandwidth bandwidth;
    bool preset = false;
};

/// The link speeds a transport `auto` picks by: the hosts' (NICs') links, the other links between machines
/// (uplinks, WAN links, a node type's links to its NICs), and the links inside machines where there are any.
struct LinkSpeeds {
    sim::Bandwidth host;
    std::vector<sim::Bandwidth> inter;
    std::optional<IntraLinks> intra;
};

/// How a summary writes a topology's figures (the tool's units): a bandwidth, a latency, a node type.
struct SummaryWords {
    std::function<std::string(sim::Bandwidth)> bandwidth;
    std::function<std::string(sim::Time)> latency;
    std::function<std::string(const NodeType&)> node;
};

/// Memory a preset fabric takes per host (GPU) once built: nodes, links, routes' tables. Measured with
/// /usr/bin/time on this project's machine (ddlsim check, 2026-12-03): a 4,000,000-host star 2.31 GB (580 B), a
/// two_tier of 1,000,000 nodes x 8 GPUs 5.40 GB (675 B); rounded up. A spec whose fabric takes more says so
/// (kBytesPerHost).
inline constexpr double kFabricBytesPerHost = 700.0;

/// Every host on its own full-duplex link to one non-blocking switch.
struct StarSpec {
    static constexpr std::string_view kName = "star";
    static constexpr std::string_view kDescription = "every host on its own link to one non-blocking switch";
    static constexpr std::string_view kSizeKey = "hosts";
    std::size_t hosts = 0;
    sim::Bandwidth bandwidth;
    sim::Time latency;
    /// The switch aggregates (network.sharp): parameter-server pushes sum in it (architecture.switch_aggregation).
    bool sharp = false;
    /// Bytes of aggregation state the summing switch holds in flight (network.aggregation_memory; 0: unbounded).
    double aggregation_memory = 0.0;

    [[nodiscard]] double host_count() const { return static_cast<double>(hosts); }
    [[nodiscard]] std::string summary(const SummaryWords& w) const;
};

/// Nodes of `gpus_per_node` GPUs on an intra-node fabric (a node switch, links of
/// intra_bandwidth / intra_latency); each node reaches the top switch through
/// `nics_per_node` parallel NIC links of bandwidth / latency (GPU r of m uses link r k / m: Fabric::nic_choice).
struct TwoTierSpec {
    static constexpr std::string_view kName = "two_tier";
    static constexpr std::string_view kDescription = "GPU nodes on an intra-node fabric, NICs to one top switch";
    static constexpr std::string_view kSizeKey = "num_nodes";
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

    [[nodiscard]] double host_count() const {
        return static_cast<double>(nodes) * static_cast<double>(gpus_per_node) + static_cast<double>(extra_hosts);
    }
    /// A node type's NICs, or the plain node's NIC links (each serving gpus_per_node / nics_per_node GPUs).
    [[nodiscard]] Machine machine() const {
        return {static_cast<double>(gpus_per_node), static_cast<double>(node ? node->nics : nics_per_node)};
    }
    /// The longest of the NIC, intra-node and (with several sites) WAN links.
    [[nodiscard]] Keyed<sim::Time> largest_latency() const {
        Keyed<sim::Time> out{latency, "latency"};
        if (intra_latency > out.value) out = {intra_latency, "intra_latency"};
        if (sites > 1 && wan_latency > out.value) out = {wan_latency, "wan_latency"};
        return out;
    }
    /// The slowest of the NIC, intra-node and (with several sites) WAN links.
    [[nodiscard]] Keyed<sim::Bandwidth> smallest_bandwidth() const {
        Keyed<sim::Bandwidth> out{bandwidth, "bandwidth"};
        if (intra_bandwidth < out.value) out = {intra_bandwidth, "intra_bandwidth"};
        if (sites > 1 && wan_bandwidth < out.value) out = {wan_bandwidth, "wan_bandwidth"};
        return out;
    }
    [[nodiscard]] std::optional<LinkSpeeds> link_speeds() const;
    [[nodiscard]] std::string summary(const SummaryWords& w) const;
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
    static constexpr std::string_view kSizeKey = "num_nodes";
    /// Measured as kFabricBytesPerHost's: 200,000 DGX H100 nodes 2.39 GB (1,490 B per GPU), rounded up.
    static constexpr double kBytesPerHost = 1600.0;
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

    [[nodiscard]] double host_count() const { return static_cast<double>(nodes) * static_cast<double>(node.gpus); }
    [[nodiscard]] Machine machine() const { return {static_cast<double>(node.gpus), static_cast<double>(node.nics)}; }
    /// The intra-node links' where longer than the rail links'.
    [[nodiscard]] Keyed<sim::Time> largest_latency() const {
        if (intra_latency > latency) return {intra_latency, "intra_latency"};
        return {latency, "latency"};
    }
    [[nodiscard]] std::optional<LinkSpeeds> link_speeds() const;
    [[nodiscard]] std::string summary(const SummaryWords& w) const;
};

/// k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2 edge and k/2
/// aggregation switches, (k/2)^2 core switches, k^3/4 hosts, every link alike:
/// full bisection bandwidth.
struct FatTreeSpec {
    static constexpr std::string_view kName = "fat_tree";
    static constexpr std::string_view kDescription =
        "k-ary fat-tree, full bisection bandwidth (Al-Fares et al., SIGCOMM 2008)";
    static constexpr std::string_view kSizeKey = "k";
    std::size_t k = 4;
    sim::Bandwidth bandwidth;
    sim::Time latency;

    [[nodiscard]] double host_count() const { return std::pow(static_cast<double>(k), 3) / 4.0; }
    [[nodiscard]] std::string summary(const SummaryWords& w) const;
};

/// Two-level Clos: `leaves` leaf switches of `hosts_per_leaf` hosts, each leaf
/// linked to every one of `spines` spines. Leaf uplinks get
/// hosts_per_leaf * bandwidth / (spines * oversubscription).
struct LeafSpineSpec {
    static constexpr std::string_view kName = "leaf_spine";
    static constexpr std::string_view kDescription = "two-level Clos with an oversubscription ratio";
    static constexpr std::string_view kSizeKey = "leaves";
    std::size_t leaves = 2;
    std::size_t hosts_per_leaf = 1;
    std::size_t spines = 1;
    double oversubscription = 1.0;
    sim::Bandwidth bandwidth;
    sim::Time latency;

    [[nodiscard]] double host_count() const {
        return static_cast<double>(leaves) * static_cast<double>(hosts_per_leaf);
    }
    /// The leaf uplinks' speed beside the hosts' (oversubscription may make it slow enough for another transport).
    [[nodiscard]] std::optional<LinkSpeeds> link_speeds() const;
    [[nodiscard]] std::string summary(const SummaryWords& w) const;
};

/// Hosts joined directly in a ring (each host to the next, full duplex).
struct RingSpec {
    static constexpr std::string_view kName = "ring";
    static constexpr std::string_view kDescription = "hosts joined directly in a ring";
    static constexpr std::string_view kSizeKey = "hosts";
    std::size_t hosts = 0;
    sim::Bandwidth bandwidth;
    sim::Time latency;

    [[nodiscard]] double host_count() const { return static_cast<double>(hosts); }
    [[nodiscard]] std::string summary(const SummaryWords& w) const;
};

/// Hosts on an X x Y grid with wrap-around links in both dimensions.
struct Torus2dSpec {
    static constexpr std::string_view kName = "torus2d";
    static constexpr std::string_view kDescription = "an X x Y grid with wrap-around links";
    static constexpr std::string_view kSizeKey = "dims";
    std::size_t x = 0;
    std::size_t y = 0;
    sim::Bandwidth bandwidth;
    sim::Time latency;

    [[nodiscard]] double host_count() const { return static_cast<double>(x) * static_cast<double>(y); }
    [[nodiscard]] std::string summary(const SummaryWords& w) const;
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
    static constexpr std::string_view kSizeKey = "";  // its nodes are already in memory as JSON
    std::vector<CustomNode> nodes;
    std::vector<CustomLink> links;

    /// Every node, switches too (the estimate of the fabric's memory counts them all).
    [[nodiscard]] double host_count() const { return static_cast<double>(nodes.size()); }
    /// The first longest link's (0 at network.latency where every link's is 0).
    [[nodiscard]] Keyed<sim::Time> largest_latency() const;
    /// The first slowest link's.
    [[nodiscard]] Keyed<sim::Bandwidth> smallest_bandwidth() const;
    /// None: links of their own speeds each get their own pick.
    [[nodiscard]] std::optional<LinkSpeeds> link_speeds() const { return std::nullopt; }
    [[nodiscard]] std::string summary(const SummaryWords& w) const;
};

using TopologySpec = std::variant<StarSpec, TwoTierSpec, FatTreeSpec, LeafSpineSpec, RingSpec, Torus2dSpec, CustomSpec,
                                  RailOptimizedSpec>;

/// The scenario name of a topology ("star", ...): each spec's kName.
[[nodiscard]] inline std::string_view topology_name(const TopologySpec& t) {
    return std::visit([](const auto& s) { return std::decay_t<decltype(s)>::kName; }, t);
}

/// How large a spec's fabric is before it is built: its hosts (host_count), the memory they take once built, and
/// the network key that sets their number ("" where none does).
struct FabricSize {
    double hosts = 0.0;
    double bytes = 0.0;
    std::string_view key;
};
[[nodiscard]] inline FabricSize fabric_size(const TopologySpec& t) {
    return std::visit(
        [](const auto& s) {
            using T = std::decay_t<decltype(s)>;
            double per_host = kFabricBytesPerHost;
            if constexpr (requires { T::kBytesPerHost; }) per_host = T::kBytesPerHost;
            const double hosts = s.host_count();
            return FabricSize{hosts, hosts * per_host, T::kSizeKey};
        },
        t);
}

namespace detail {
/// The answer of the spec in `t`: `own` where the spec has the member it calls (`own` names it in its return type,
/// so that a spec without it is not a match), else `uniform`.
template <class Own, class Uniform>
[[nodiscard]] auto answer(const TopologySpec& t, Own own, Uniform uniform) {
    return std::visit(
        [&](const auto& s) {
            if constexpr (std::is_invocable_v<Own, decltype(s)>)
                return own(s);
            else
                return uniform(s);
        },
        t);
}
}  // namespace detail

/// A machine of the topology: hosts of one GPU and one NIC unless the spec says otherwise.
[[nodiscard]] inline Machine machine(const TopologySpec& t) {
    return detail::answer(
        t, [](const auto& s) -> decltype(s.machine()) { return s.machine(); }, [](const auto&) { return Machine{}; });
}

/// The largest link latency and the key that gives it: network.latency unless the spec says otherwise.
[[nodiscard]] inline Keyed<sim::Time> largest_latency(const TopologySpec& t) {
    return detail::answer(
        t, [](const auto& s) -> decltype(s.largest_latency()) { return s.largest_latency(); },
        [](const auto& s) {
            return Keyed<sim::Time>{s.latency, "latency"};
        });
}

/// The smallest link bandwidth and the key that gives it: network.bandwidth unless the spec says otherwise.
[[nodiscard]] inline Keyed<sim::Bandwidth> smallest_bandwidth(const TopologySpec& t) {
    return detail::answer(
        t, [](const auto& s) -> decltype(s.smallest_bandwidth()) { return s.smallest_bandwidth(); },
        [](const auto& s) {
            return Keyed<sim::Bandwidth>{s.bandwidth, "bandwidth"};
        });
}

/// The link speeds a transport `auto` picks by: every link between machines at `bandwidth` and none inside them,
/// unless the spec says otherwise; none where the links each have their own speed (custom).
[[nodiscard]] inline std::optional<LinkSpeeds> link_speeds(const TopologySpec& t) {
    return detail::answer(
        t, [](const auto& s) -> decltype(s.link_speeds()) { return s.link_speeds(); },
        [](const auto& s) {
            return std::optional<LinkSpeeds>{LinkSpeeds{s.bandwidth, {}, std::nullopt}};
        });
}

/// The summary's line on the topology ("star, 16 hosts, 10 Gbit/s links, 5 us latency").
[[nodiscard]] inline std::string summary(const TopologySpec& t, const SummaryWords& w) {
    return std::visit([&w](const auto& s) { return s.summary(w); }, t);
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
