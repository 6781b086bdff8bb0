// The network block read through its key table (keys_network.cpp) and built into a topology; the resolved
// block echoed from the topology the run used.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <variant>

#include "scenarios/key_tables.hpp"
#include "scenarios/loader_detail.hpp"
#include "scenarios/schema_tables.hpp"

namespace ddlsim::scenario {

using N = NetworkBlock;

namespace detail {

// What a topology's builder sees: the block read through its table, and what the jobs need of it.
struct TopologyInput {
    const N& n;
    std::size_t hosts_needed;  ///< workers plus dedicated servers
    std::size_t gpus_hint;     ///< workers

    static std::string path(std::string_view key) { return fmt::format("$.network.{}", key); }
    /// "oversubscription" of leaves with `ports` host ports of `bw` and `spines` uplinks, each uplink getting
    /// ports x bw / (spines x oversubscription): kept finite.
    [[nodiscard]] double oversubscription(sim::Bandwidth bw, std::size_t ports, std::size_t spines) const {
        const double over = n.oversubscription.value_or(1.0);
        const double min_over = bw.bytes_per_s() * static_cast<double>(ports) / (static_cast<double>(spines) * 1e18);
        if (over < min_over)
            throw ScenarioError(path("oversubscription"),
                                fmt::format("expected at least {:.3g} (smaller values make the leaf uplinks faster "
                                            "than 8 Ebit/s), got {:g}",
                                            min_over, over));
        return over;
    }
    [[nodiscard]] std::optional<topo::NodeType> preset() const {
        if (!n.node) return std::nullopt;
        return *topo::find_node_preset(*n.node);
    }
    // The NIC bandwidth: network.bandwidth, or the preset's.
    [[nodiscard]] sim::Bandwidth nic_bandwidth(const std::optional<topo::NodeType>& p) const {
        return n.bandwidth ? *n.bandwidth : p->nic_bandwidth;
    }
    // Nodes enough for the workers unless num_nodes is given.
    [[nodiscard]] std::size_t node_count(std::size_t gpus_per_node) const {
        if (n.num_nodes) return *n.num_nodes;
        return std::max<std::size_t>(1, (gpus_hint + gpus_per_node - 1) / gpus_per_node);
    }
};

namespace {

// A custom topology kept in its own file: {"nodes": [...], "links": [...]}, errors naming the file.
topo::CustomSpec read_topology_file(const std::string& file, const std::string& base_dir, const std::string& path) {
    const std::filesystem::path p = std::filesystem::path(file).is_absolute() ? std::filesystem::path(file)
                                                                              : std::filesystem::path(base_dir) / file;
    try {
        const json j = read_json_file(p.string());
        ObjectReader r(j, "$", tables().topology_file);
        topo::CustomSpec c;
        topology_file_keys().read(r, c);
        r.finish();
        return c;
    } catch (const ScenarioError& e) {
        throw ScenarioError(path, fmt::format("in topology file {}: {}: {}", p.string(), e.path(), e.what()));
    }
}

// The summing switch's aggregation memory (network.aggregation_memory: given or defaulted only with sharp; 0 without).
double aggregation_memory(const N& n) {
    return n.aggregation_memory ? n.aggregation_memory->value() : 0.0;
}

// Each builder below has its echo (network_echo): the block of the topology it built, its keys at the values the run
// used.

// Every topology but custom: its links' bandwidth and latency.
template <class Spec>
void echo_links(const Spec& t, N& n) {
    n.bandwidth = t.bandwidth;
    n.latency = t.latency;
}

// A node preset by its name (the keys it fixes do not apply beside it), or the node's keys.
void echo_node(N& n, const std::string& preset, std::size_t gpus, std::size_t nics, sim::Bandwidth intra) {
    if (!preset.empty()) {
        n.node = preset;
        return;
    }
    n.gpus_per_node = gpus;
    n.nics_per_node = nics;
    n.intra_bandwidth = intra;
}

topo::TopologySpec build_star(const TopologyInput& in) {
    return topo::StarSpec{in.n.hosts.value_or(in.hosts_needed), *in.n.bandwidth, *in.n.latency,
                          in.n.sharp.value_or(false), aggregation_memory(in.n)};
}

void echo(const topo::StarSpec& t, N& n) {
    echo_links(t, n);
    n.hosts = t.hosts;
    if (t.sharp) n.sharp = true;
}

topo::TopologySpec build_ring(const TopologyInput& in) {
    return topo::RingSpec{in.n.hosts.value_or(in.hosts_needed), *in.n.bandwidth, *in.n.latency};
}

void echo(const topo::RingSpec& t, N& n) {
    echo_links(t, n);
    n.hosts = t.hosts;
}

topo::TopologySpec build_two_tier(const TopologyInput& in) {
    const N& n = in.n;
    topo::TwoTierSpec s;
    s.node = in.preset();
    s.bandwidth = in.nic_bandwidth(s.node);
    s.latency = *n.latency;
    s.intra_latency = *n.intra_latency;
    if (s.node) {
        s.gpus_per_node = s.node->gpus;
        s.nics_per_node = s.node->nics;
        s.intra_bandwidth = s.node->gpu_bandwidth;
    } else {
        s.gpus_per_node = *n.gpus_per_node;
        s.intra_bandwidth = *n.intra_bandwidth;
        s.nics_per_node = n.nics_per_node.value_or(1);
    }
    s.nodes = in.node_count(s.gpus_per_node);
    s.sites = n.sites.value_or(1);
    if (s.sites > 1) {
        s.wan_bandwidth = *n.wan_bandwidth;
        s.wan_latency = *n.wan_latency;
        if (!n.num_nodes) s.nodes = (s.nodes + s.sites - 1) / s.sites * s.sites;
        if (s.nodes % s.sites != 0)
            throw ScenarioError(
                TopologyInput::path("sites"),
                fmt::format("expected a number of sites that divides num_nodes = {}, got {}", s.nodes, s.sites));
    }
    s.extra_hosts = in.hosts_needed - in.gpus_hint;
    s.sharp = n.sharp.value_or(false);
    s.aggregation_memory = aggregation_memory(n);
    return s;
}

void echo(const topo::TwoTierSpec& t, N& n) {
    echo_links(t, n);
    echo_node(n, t.node ? t.node->preset : "", t.gpus_per_node, t.nics_per_node, t.intra_bandwidth);
    n.num_nodes = t.nodes;
    n.intra_latency = t.intra_latency;
    if (t.sites > 1) {  // one site: the plain two_tier, echoed as before
        n.sites = t.sites;
        n.wan_bandwidth = t.wan_bandwidth;
        n.wan_latency = t.wan_latency;
    }
    if (t.sharp) n.sharp = true;
}

topo::TopologySpec build_rail_optimized(const TopologyInput& in) {
    const N& n = in.n;
    topo::RailOptimizedSpec s;
    const std::optional<topo::NodeType> preset = in.preset();
    s.bandwidth = in.nic_bandwidth(preset);
    s.latency = *n.latency;
    s.intra_latency = *n.intra_latency;
    s.node = preset ? *preset
                    : topo::plain_node(*n.gpus_per_node, *n.intra_bandwidth, n.nics_per_node.value_or(1), s.bandwidth);
    s.nodes = in.node_count(s.node.gpus);
    s.spines = *n.spines;
    s.oversubscription = in.oversubscription(s.bandwidth, s.nodes, s.spines);
    s.sharp = n.sharp.value_or(false);
    s.aggregation_memory = aggregation_memory(n);
    if (in.hosts_needed > in.gpus_hint)
        throw ScenarioError(TopologyInput::path("topology"),
                            "rail_optimized has no host for dedicated servers; use colocated "
                            "servers (architecture.placement \"colocated\") or two_tier");
    return s;
}

void echo(const topo::RailOptimizedSpec& t, N& n) {
    echo_links(t, n);
    echo_node(n, t.node.preset, t.node.gpus, t.node.nics, t.node.gpu_bandwidth);
    n.num_nodes = t.nodes;
    n.intra_latency = t.intra_latency;
    n.spines = t.spines;
    n.oversubscription = t.oversubscription;
    if (t.sharp) n.sharp = true;
}

topo::TopologySpec build_fat_tree(const TopologyInput& in) {
    return topo::FatTreeSpec{*in.n.k, *in.n.bandwidth, *in.n.latency};
}

void echo(const topo::FatTreeSpec& t, N& n) {
    echo_links(t, n);
    n.k = t.k;
}

topo::TopologySpec build_leaf_spine(const TopologyInput& in) {
    const N& n = in.n;
    topo::LeafSpineSpec s;
    s.bandwidth = *n.bandwidth;
    s.latency = *n.latency;
    s.hosts_per_leaf = *n.hosts_per_leaf;
    s.spines = *n.spines;
    s.leaves =
        n.leaves ? *n.leaves : std::max<std::size_t>(1, (in.hosts_needed + s.hosts_per_leaf - 1) / s.hosts_per_leaf);
    s.oversubscription = in.oversubscription(s.bandwidth, s.hosts_per_leaf, s.spines);
    return s;
}

void echo(const topo::LeafSpineSpec& t, N& n) {
    echo_links(t, n);
    n.leaves = t.leaves;
    n.hosts_per_leaf = t.hosts_per_leaf;
    n.spines = t.spines;
    n.oversubscription = t.oversubscription;
}

topo::TopologySpec build_torus2d(const TopologyInput& in) {
    return topo::Torus2dSpec{in.n.dims[0], in.n.dims[1], *in.n.bandwidth, *in.n.latency};
}

void echo(const topo::Torus2dSpec& t, N& n) {
    echo_links(t, n);
    n.dims = {t.x, t.y};
}

topo::TopologySpec build_custom(const TopologyInput& in) {
    const N& n = in.n;
    if (!n.custom)
        throw ScenarioError(TopologyInput::path("topology"),
                            "custom: expected either \"nodes\" and \"links\", or a topology \"file\"");
    if (n.custom_inline && n.custom->nodes.empty())
        throw ScenarioError(TopologyInput::path("nodes"), "required by topology \"custom\"");
    if (n.custom_inline && n.custom->links.empty())
        throw ScenarioError(TopologyInput::path("links"), "required by topology \"custom\"");
    return *n.custom;
}

void echo(const topo::CustomSpec& t, N& n) {
    n.custom = t;
}

template <class Spec>
TopologyReader entry(topo::TopologySpec (*build)(const TopologyInput&)) {
    return {Spec::kName, Spec::kDescription, build};
}

// The transports echoed: the given ones, or what `auto` picks for the topology's link speeds. `auto` is written
// out as the pick only where every link between machines gets the same one (oversubscribed spine uplinks may be
// slow enough for tcp); custom topologies, whose links may differ, keep auto; with a node preset (whose links
// differ in medium) only a given intra-node transport is echoed.
void echo_transports(const Scenario& s, N& n) {
    const std::optional<topo::LinkSpeeds> links = topo::link_speeds(s.topology);
    if (!links) {
        n.transport = s.transports.inter;
        return;
    }
    const topo::TransportSpec host = topo::transport_for(s.transports, topo::LinkClass::inter, links->host);
    auto same_pick = [&](sim::Bandwidth bw) {
        return s.transports.inter.has_value() ||
               topo::transport_for(s.transports, topo::LinkClass::inter, bw).kind == host.kind;
    };
    bool uniform = true;
    for (const sim::Bandwidth bw : links->inter) uniform = uniform && same_pick(bw);
    // Host links capped by host_bandwidth are picked for by their own speed too.
    for (const auto& [name, bw] : s.host_bandwidth) uniform = uniform && same_pick(bw);
    if (uniform) n.transport = host;
    if (!links->intra) return;
    if (links->intra->preset)
        n.intra_transport = s.transports.intra;
    else
        n.intra_transport = topo::transport_for(s.transports, topo::LinkClass::intra, links->intra->bandwidth);
}

}  // namespace

const std::vector<TopologyReader>& topology_readers() {
    static const std::vector<TopologyReader> readers{
        entry<topo::StarSpec>(build_star),        entry<topo::TwoTierSpec>(build_two_tier),
        entry<topo::FatTreeSpec>(build_fat_tree), entry<topo::LeafSpineSpec>(build_leaf_spine),
        entry<topo::RingSpec>(build_ring),        entry<topo::Torus2dSpec>(build_torus2d),
        entry<topo::CustomSpec>(build_custom),    entry<topo::RailOptimizedSpec>(build_rail_optimized),
    };
    return readers;
}

NetworkSpec read_network(const json& j, const std::string& base_dir, std::size_t hosts_needed, std::size_t gpus_hint) {
    reject_planned_keys(j, "$.network", "network");
    ObjectReader r(j, "$.network", tables().network);
    N n;
    network_keys().read(r, n, {base_dir});
    r.finish();
    if (n.file) n.custom = read_topology_file(*n.file, base_dir, r.path("file"));

    NetworkSpec out;
    out.model = n.model;
    out.routing = n.routing;
    out.host_bandwidth = n.host_bandwidth;
    // The profile's transport unless the scenario gives one (the result echo's transport_source says which).
    if (n.profile) {
        if (n.transport)
            out.transport_source = fmt::format("scenario (overrides the transport of network.profile {})", *n.profile);
        else
            out.transport_source = fmt::format("calibration profile {}", *n.profile);
    }
    out.transports.inter = n.transport ? n.transport : n.profile_transport;
    if (n.intra_transport)
        out.transports.intra = n.intra_transport;
    else if (out.transports.inter && out.transports.inter->kind == topo::TransportKind::ideal)
        out.transports.intra = out.transports.inter;  // "ideal" asks for the nominal model everywhere
    const auto& readers = topology_readers();
    const TopologyReader& reader =
        *std::find_if(readers.begin(), readers.end(), [&](const TopologyReader& x) { return x.name == n.topology; });
    out.topology = reader.build({n, hosts_needed, gpus_hint});
    return out;
}

}  // namespace detail

json network_echo(const Scenario& s) {
    N n;
    n.topology = std::string(topo::topology_name(s.topology));
    std::visit([&n](const auto& t) { detail::echo(t, n); }, s.topology);
    detail::echo_transports(s, n);
    n.model = s.network_model;
    n.routing = s.routing;
    n.host_bandwidth = s.host_bandwidth;
    return network_keys().echo(n);
}

}  // namespace ddlsim::scenario
