// Reading the network block: the topology, its parameters and the network model.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "scenarios/key_tables.hpp"
#include "scenarios/loader_detail.hpp"
#include "scenarios/schema_tables.hpp"

namespace ddlsim::scenario::detail {
namespace {

topo::CustomSpec read_custom(const json& nodes, const json& links, const std::string& nodes_path,
                             const std::string& links_path) {
    const Tables& t = tables();
    topo::CustomSpec c;
    (void)read_array(nodes, nodes_path, 1);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        ObjectReader n(nodes[i], fmt::format("{}[{}]", nodes_path, i), t.node);
        topo::CustomNode node{read_string(n.at("name"), n.path("name")),
                              read_enum<topo::NodeKind>(n.at("kind"), n.path("kind"))};
        for (const auto& prev : c.nodes)
            if (prev.name == node.name)
                throw ScenarioError(n.path("name"), fmt::format("duplicate node name \"{}\"", node.name));
        n.finish();
        c.nodes.push_back(std::move(node));
    }
    (void)read_array(links, links_path, 1);
    for (std::size_t i = 0; i < links.size(); ++i) {
        ObjectReader l(links[i], fmt::format("{}[{}]", links_path, i), t.link);
        topo::CustomLink link{read_string(l.at("from"), l.path("from")), read_string(l.at("to"), l.path("to")),
                              read_bandwidth(l.at("bandwidth"), l.path("bandwidth")),
                              read_time(l.at("latency"), l.path("latency"))};
        auto known = [&](const std::string& name) {
            return std::any_of(c.nodes.begin(), c.nodes.end(), [&](const auto& nd) { return nd.name == name; });
        };
        if (!known(link.from))
            throw ScenarioError(l.path("from"), fmt::format("expected a node name, got \"{}\"", link.from));
        if (!known(link.to))
            throw ScenarioError(l.path("to"), fmt::format("expected a node name, got \"{}\"", link.to));
        if (link.from == link.to) throw ScenarioError(l.path("to"), "a link must join two different nodes");
        l.finish();
        c.links.push_back(std::move(link));
    }
    return c;
}

// A transport: a preset name, or {"kind": preset, ...overrides} (topologies/transport.hpp).
topo::TransportSpec read_transport(const json& j, const std::string& path) {
    if (j.is_string()) return topo::transport_preset(read_enum<topo::TransportKind>(j, path));
    ObjectReader r(j, path, tables().transport);
    topo::TransportSpec tr;
    transport_keys().read(r, tr);
    r.finish();
    return tr;
}

// A custom topology kept in its own file: {"nodes": [...], "links": [...]}.
topo::CustomSpec read_topology_file(const std::string& file, const std::string& base_dir, const std::string& path) {
    const std::filesystem::path p = std::filesystem::path(file).is_absolute() ? std::filesystem::path(file)
                                                                              : std::filesystem::path(base_dir) / file;
    try {
        const json j = read_json_file(p.string());
        ObjectReader r(j, "$", tables().topology_file);
        if (r.has("description")) (void)read_string(r.at("description"), r.path("description"));
        topo::CustomSpec c = read_custom(r.at("nodes"), r.at("links"), r.path("nodes"), r.path("links"));
        r.finish();
        return c;
    } catch (const ScenarioError& e) {
        throw ScenarioError(path, fmt::format("in topology file {}: {}: {}", p.string(), e.path(), e.what()));
    }
}

}  // namespace

// What a topology's reader sees: the network block and what the jobs need of it.
struct TopologyInput {
    ObjectReader& r;
    const std::string& base_dir;
    std::size_t hosts_needed;  ///< workers plus dedicated servers
    std::size_t gpus_hint;     ///< workers

    static constexpr std::uint64_t kMaxHosts = 4 * kMaxWorkers;
    [[nodiscard]] sim::Bandwidth bandwidth() { return read_bandwidth(r.at("bandwidth"), r.path("bandwidth")); }
    [[nodiscard]] sim::Time latency() { return read_time(r.at("latency"), r.path("latency")); }
    [[nodiscard]] std::size_t count(const char* key, std::uint64_t min, std::uint64_t max) {
        return static_cast<std::size_t>(read_uint(r.at(key), r.path(key), min, max));
    }
    /// "oversubscription" (default 1) of leaves with `ports` host ports of `bw` and `spines` uplinks, each
    /// uplink getting ports x bw / (spines x oversubscription): kept finite.
    [[nodiscard]] double oversubscription(sim::Bandwidth bw, std::size_t ports, std::size_t spines) {
        if (!r.has("oversubscription")) return 1.0;
        const double over = read_positive(r.at("oversubscription"), r.path("oversubscription"), 1e6);
        const double min_over = bw.bytes_per_s() * static_cast<double>(ports) / (static_cast<double>(spines) * 1e18);
        if (over < min_over)
            throw ScenarioError(r.path("oversubscription"),
                                fmt::format("expected at least {:.3g} (smaller values make the leaf uplinks faster "
                                            "than 8 Ebit/s), got {:g}",
                                            min_over, over));
        return over;
    }
};

namespace {

topo::TopologySpec read_star(TopologyInput& in) {
    topo::StarSpec s{in.hosts_needed, in.bandwidth(), in.latency()};
    if (in.r.has("hosts")) s.hosts = in.count("hosts", 1, TopologyInput::kMaxHosts);
    return s;
}

topo::TopologySpec read_ring(TopologyInput& in) {
    topo::RingSpec s{in.hosts_needed, in.bandwidth(), in.latency()};
    if (in.r.has("hosts")) s.hosts = in.count("hosts", 1, TopologyInput::kMaxHosts);
    return s;
}

// The node keys that a preset (network.node) fixes: giving one beside the preset is refused, not merged.
constexpr const char* kPresetFixed[] = {"gpus_per_node", "nics_per_node", "intra_bandwidth"};

// network.node: a preset's name, or nullopt when absent. Keys the preset fixes must not be given too.
std::optional<topo::NodeType> read_node_preset(ObjectReader& r) {
    if (!r.has("node")) return std::nullopt;
    const std::string name = read_choice(r.at("node"), r.path("node"), tables().choices.node_presets);
    const topo::NodeType& t = *topo::find_node_preset(name);
    for (const char* key : kPresetFixed)
        r.forbid(key, fmt::format("fixed by network.node \"{}\" ({} GPUs at {:.4g} GB/s each per direction, {} NICs "
                                  "of {:.4g} Gbit/s); give either the preset or the node's keys, not both",
                                  name, t.gpus, t.gpu_bandwidth.bytes_per_s() / 1e9, t.nics,
                                  t.nic_bandwidth.bits_per_s() / 1e9));
    return t;
}

// The keys a node takes when no preset names it; `what` is the topology.
void require_node_keys(ObjectReader& r, std::string_view what) {
    for (const char* key : {"gpus_per_node", "intra_bandwidth", "bandwidth"})
        if (!r.has(key))
            throw ScenarioError(r.path(key), fmt::format("required by topology \"{}\" without network.node", what));
}

// The NIC bandwidth: network.bandwidth, or the preset's.
sim::Bandwidth nic_bandwidth(TopologyInput& in, const std::optional<topo::NodeType>& preset) {
    return in.r.has("bandwidth") || !preset ? in.bandwidth() : preset->nic_bandwidth;
}

// Nodes enough for the workers unless num_nodes is given.
std::size_t node_count(TopologyInput& in, std::size_t gpus_per_node) {
    if (in.r.has("num_nodes")) return in.count("num_nodes", 1, kMaxWorkers);
    return std::max<std::size_t>(1, (in.gpus_hint + gpus_per_node - 1) / gpus_per_node);
}

topo::TopologySpec read_two_tier(TopologyInput& in) {
    ObjectReader& r = in.r;
    topo::TwoTierSpec s;
    s.node = read_node_preset(r);
    if (!s.node) require_node_keys(r, topo::TwoTierSpec::kName);
    s.bandwidth = nic_bandwidth(in, s.node);
    s.latency = in.latency();
    s.intra_latency = read_time(r.at("intra_latency"), r.path("intra_latency"));
    if (s.node) {
        s.gpus_per_node = s.node->gpus;
        s.nics_per_node = s.node->nics;
        s.intra_bandwidth = s.node->gpu_bandwidth;
    } else {
        s.gpus_per_node = in.count("gpus_per_node", 1, 1024);
        s.intra_bandwidth = read_bandwidth(r.at("intra_bandwidth"), r.path("intra_bandwidth"));
        if (r.has("nics_per_node")) s.nics_per_node = in.count("nics_per_node", 1, 64);
    }
    s.nodes = node_count(in, s.gpus_per_node);
    s.extra_hosts = in.hosts_needed - in.gpus_hint;
    return s;
}

topo::TopologySpec read_rail_optimized(TopologyInput& in) {
    ObjectReader& r = in.r;
    topo::RailOptimizedSpec s;
    const std::optional<topo::NodeType> preset = read_node_preset(r);
    if (!preset) require_node_keys(r, topo::RailOptimizedSpec::kName);
    s.bandwidth = nic_bandwidth(in, preset);
    s.latency = in.latency();
    s.intra_latency = read_time(r.at("intra_latency"), r.path("intra_latency"));
    if (preset) {
        s.node = *preset;
    } else {
        const std::size_t gpus = in.count("gpus_per_node", 1, 1024);
        const std::size_t nics = r.has("nics_per_node") ? in.count("nics_per_node", 1, 64) : 1;
        if (nics != 1 && nics != gpus)
            throw ScenarioError(r.path("nics_per_node"),
                                fmt::format("expected 1 (one NIC on the node switch) or gpus_per_node = {} (one NIC "
                                            "per GPU, on rail leaves 0 .. {}), got {}; GPU pairs sharing a NIC "
                                            "come with network.node \"dgx1_v100\"",
                                            gpus, gpus - 1, nics));
        s.node = topo::plain_node(gpus, read_bandwidth(r.at("intra_bandwidth"), r.path("intra_bandwidth")), nics,
                                  s.bandwidth);
    }
    s.nodes = node_count(in, s.node.gpus);
    s.spines = in.count("spines", 1, 4096);
    s.oversubscription = in.oversubscription(s.bandwidth, s.nodes, s.spines);
    if (in.hosts_needed > in.gpus_hint)
        throw ScenarioError(r.path("topology"),
                            "rail_optimized has no host for dedicated servers; use colocated "
                            "servers (architecture.placement \"colocated\") or two_tier");
    return s;
}

topo::TopologySpec read_fat_tree(TopologyInput& in) {
    topo::FatTreeSpec s{in.count("k", 2, 64), in.bandwidth(), in.latency()};
    if (s.k % 2 != 0) throw ScenarioError(in.r.path("k"), fmt::format("expected an even k, got {}", s.k));
    return s;
}

topo::TopologySpec read_leaf_spine(TopologyInput& in) {
    ObjectReader& r = in.r;
    topo::LeafSpineSpec s;
    s.bandwidth = in.bandwidth();
    s.latency = in.latency();
    s.hosts_per_leaf = in.count("hosts_per_leaf", 1, 4096);
    s.spines = in.count("spines", 1, 4096);
    s.leaves = std::max<std::size_t>(1, (in.hosts_needed + s.hosts_per_leaf - 1) / s.hosts_per_leaf);
    if (r.has("leaves")) s.leaves = in.count("leaves", 1, kMaxWorkers);
    s.oversubscription = in.oversubscription(s.bandwidth, s.hosts_per_leaf, s.spines);
    return s;
}

topo::TopologySpec read_torus2d(TopologyInput& in) {
    ObjectReader& r = in.r;
    const json& dims = read_array(r.at("dims"), r.path("dims"), 2);
    if (dims.size() != 2)
        throw ScenarioError(r.path("dims"), fmt::format("expected [X, Y], got {} numbers", dims.size()));
    topo::Torus2dSpec s{static_cast<std::size_t>(read_uint(dims[0], r.path("dims") + "[0]", 1, 65536)),
                        static_cast<std::size_t>(read_uint(dims[1], r.path("dims") + "[1]", 1, 65536)), in.bandwidth(),
                        in.latency()};
    if (s.x * s.y > TopologyInput::kMaxHosts) throw ScenarioError(r.path("dims"), "expected at most 4,000,000 hosts");
    return s;
}

topo::TopologySpec read_custom_topology(TopologyInput& in) {
    ObjectReader& r = in.r;
    if (r.has("file") == (r.has("nodes") || r.has("links")))
        throw ScenarioError(r.path("topology"),
                            "custom: expected either \"nodes\" and \"links\", or a topology \"file\"");
    if (r.has("file"))
        return read_topology_file(read_string(r.at("file"), r.path("file")), in.base_dir, r.path("file"));
    if (!r.has("nodes")) throw ScenarioError(r.path("nodes"), "required by topology \"custom\"");
    if (!r.has("links")) throw ScenarioError(r.path("links"), "required by topology \"custom\"");
    return read_custom(r.at("nodes"), r.at("links"), r.path("nodes"), r.path("links"));
}

template <class Spec>
TopologyReader entry(std::vector<std::string_view> keys, topo::TopologySpec (*read)(TopologyInput&)) {
    return {Spec::kName, Spec::kDescription, std::move(keys), read};
}

}  // namespace

const std::vector<TopologyReader>& topology_readers() {
    static const std::vector<TopologyReader> readers{
        entry<topo::StarSpec>({"bandwidth*", "latency*", "hosts"}, read_star),
        entry<topo::TwoTierSpec>({"bandwidth", "latency*", "gpus_per_node", "intra_bandwidth", "intra_latency*",
                                  "num_nodes", "nics_per_node", "intra_transport", "node"},
                                 read_two_tier),
        entry<topo::FatTreeSpec>({"bandwidth*", "latency*", "k*"}, read_fat_tree),
        entry<topo::LeafSpineSpec>(
            {"bandwidth*", "latency*", "hosts_per_leaf*", "spines*", "leaves", "oversubscription"}, read_leaf_spine),
        entry<topo::RingSpec>({"bandwidth*", "latency*", "hosts"}, read_ring),
        entry<topo::Torus2dSpec>({"bandwidth*", "latency*", "dims*"}, read_torus2d),
        entry<topo::CustomSpec>({"nodes", "links", "file"}, read_custom_topology),
        entry<topo::RailOptimizedSpec>(
            {"bandwidth", "latency*", "gpus_per_node", "intra_bandwidth", "intra_latency*", "num_nodes",
             "nics_per_node", "intra_transport", "node", "spines*", "oversubscription"},
            read_rail_optimized),
    };
    return readers;
}

NetworkSpec read_network(const json& j, const std::string& base_dir, std::size_t hosts_needed, std::size_t gpus_hint) {
    const Tables& t = tables();
    reject_planned_keys(j, "$.network", "network");
    ObjectReader r(j, "$.network", t.network);
    const std::string topology = read_choice(r.at("topology"), r.path("topology"), t.choices.topologies);

    const auto& readers = topology_readers();
    const TopologyReader& reader =
        *std::find_if(readers.begin(), readers.end(), [&](const TopologyReader& x) { return x.name == topology; });
    // Every key must belong to this topology; required ones must be there.
    std::vector<std::string> keys, names;
    for (const auto k : reader.keys) keys.emplace_back(k);
    for (const auto& k : keys) names.push_back(k.back() == '*' ? k.substr(0, k.size() - 1) : k);
    for (const auto& field : t.network.fields) {
        if (field.name == "topology" || field.name == "model" || field.name == "routing" ||
            field.name == "host_bandwidth" || field.name == "transport" || field.name == "profile")
            continue;
        if (std::find(names.begin(), names.end(), field.name) == names.end())
            r.forbid(field.name, fmt::format("not used by topology \"{}\" (it takes: {})", topology, list(names)));
    }
    for (const auto& k : keys)
        if (k.back() == '*' && !r.has(k.substr(0, k.size() - 1)))
            throw ScenarioError(r.path(k.substr(0, k.size() - 1)),
                                fmt::format("required by topology \"{}\"", topology));

    NetworkSpec out;
    if (r.has("model")) out.model = read_enum<NetworkModel>(r.at("model"), r.path("model"));
    if (r.has("routing")) out.routing = read_enum<topo::Routing>(r.at("routing"), r.path("routing"));
    if (r.has("host_bandwidth")) {
        const json& hb = r.at("host_bandwidth");
        if (!hb.is_object() || hb.empty())
            throw ScenarioError(r.path("host_bandwidth"), "expected an object mapping host names to bandwidths");
        for (const auto& [host, bw] : hb.items())
            out.host_bandwidth.emplace_back(host, read_bandwidth(bw, r.path("host_bandwidth") + "." + host));
    }
    // network.profile: a calibration profile (`ddlsim calibrate`); its "network"."transport" is the transport
    // between machines unless the scenario gives "transport" itself, which then wins (the result echo's
    // transport_source says which was used).
    if (r.has("profile")) {
        const std::string ppath = r.path("profile");
        std::string fp;
        const json network = read_profile_member(r.at("profile"), ppath, base_dir, "network", fp);
        if (!network.contains("transport"))
            throw ScenarioError(ppath, fmt::format("{}: expected a calibration profile with a \"network\": "
                                                   "{{\"transport\": ...}} member (as `ddlsim calibrate` writes)",
                                                   fp));
        const std::string file = read_string(r.at("profile"), ppath);
        topo::TransportSpec tr;
        try {
            tr = read_transport(network.at("transport"), "$.network.transport");
        } catch (const ScenarioError& e) {
            throw ScenarioError(ppath, fmt::format("in profile {}: {}: {}", fp, e.path(), e.what()));
        }
        if (r.has("transport")) {
            out.transport_source = fmt::format("scenario (overrides the transport of network.profile {})", file);
        } else {
            out.transports.inter = tr;
            out.transport_source = fmt::format("calibration profile {}", file);
        }
    }
    if (r.has("transport")) out.transports.inter = read_transport(r.at("transport"), r.path("transport"));
    if (r.has("intra_transport")) {
        out.transports.intra = read_transport(r.at("intra_transport"), r.path("intra_transport"));
    } else if (out.transports.inter && out.transports.inter->kind == topo::TransportKind::ideal) {
        out.transports.intra = out.transports.inter;  // "ideal" asks for the nominal model everywhere
    }
    TopologyInput in{r, base_dir, hosts_needed, gpus_hint};
    out.topology = reader.read(in);
    r.finish();
    return out;
}

}  // namespace ddlsim::scenario::detail
