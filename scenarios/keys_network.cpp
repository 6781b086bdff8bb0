// The network block's keys, each declared once in network_keys() (which topologies take it, its range,
// default and echo), and the custom topology's node, link and file tables. load_network.cpp builds the topology
// from the block and echoes the resolved block.
#include <fmt/format.h>

#include <algorithm>

#include "scenarios/key_tables.hpp"
#include "scenarios/loader_detail.hpp"
#include "scenarios/schema_tables.hpp"
#include "topologies/parameter_server.hpp"

namespace ddlsim::scenario {

using keys::key;
using keys::KeyTable;
using keys::Rule;
using N = NetworkBlock;

namespace {

constexpr std::uint64_t kMaxHosts = 4 * detail::kMaxWorkers;

// The topologies that build nodes of GPUs (a node preset, or gpus_per_node and intra_bandwidth).
const std::vector<std::string_view> kNodeTopologies{topo::TwoTierSpec::kName, topo::RailOptimizedSpec::kName};

// Link latencies of a node preset's fabric when the scenario gives none: a peer simulator's defaults for the
// same kind of cluster, aliyun/SimAI astra-sim-alibabacloud/inputs/topo/gen_Topo_Template.py @ 7608e1f3
// (analysis_template: 'nv_latency': '0.000025ms' for a GPU's NVSwitch link, 'latency': '0.0005ms' for a NIC's
// link and the switch-to-switch links). Software latency per message is the transport's, added on top
// (topologies/transport.cpp).
const sim::Time kPresetIntraLatency = sim::Time::seconds(25e-9);
const sim::Time kPresetLinkLatency = sim::Time::seconds(500e-9);

bool on(const N& n, const std::vector<std::string_view>& topologies) {
    return std::find(topologies.begin(), topologies.end(), n.topology) != topologies.end();
}

// The topology-specific keys that topology `name` takes (for the refusal of one it does not take).
std::string keys_taken_by(std::string_view name);

// A key of the topologies `topologies` only: elsewhere "not used by topology "star" (it takes: ...)".
Rule<N> of(std::vector<std::string_view> topologies) {
    auto pred = [topologies](const N& n) { return on(n, topologies); };
    auto message = [](const N& n) {
        return fmt::format("not used by topology \"{}\" (it takes: {})", n.topology, keys_taken_by(n.topology));
    };
    return {pred, message};
}

// A key a node preset fixes (gpus_per_node, nics_per_node, intra_bandwidth): given beside network.node it is
// refused, not merged.
Rule<N> fixed_by_preset() {
    auto pred = [](const N& n) { return on(n, kNodeTopologies) && !n.node; };
    auto message = [](const N& n) {
        if (!on(n, kNodeTopologies))
            return fmt::format("not used by topology \"{}\" (it takes: {})", n.topology, keys_taken_by(n.topology));
        const topo::NodeType& t = *topo::find_node_preset(*n.node);
        return fmt::format(
            "fixed by network.node \"{}\" ({} GPUs at {:.4g} GB/s each per direction, {} NICs of "
            "{:.4g} Gbit/s); give either the preset or the node's keys, not both",
            *n.node, t.gpus, t.gpu_bandwidth.bytes_per_s() / 1e9, t.nics, t.nic_bandwidth.bits_per_s() / 1e9);
    };
    return {pred, message};
}

// Several sites of a two_tier joined by a WAN.
bool is_multi_site(const N& n) {
    return n.topology == topo::TwoTierSpec::kName && n.sites.value_or(1) > 1;
}
Rule<N> multi_site() {
    return {is_multi_site, [](const N&) { return std::string("used only by topology \"two_tier\" with sites > 1"); }};
}

// The node topologies within one site and the star (SHARP's switches reduce inside one fabric).
Rule<N> single_site_nodes() {
    auto pred = [](const N& n) {
        return (on(n, kNodeTopologies) && !is_multi_site(n)) || n.topology == topo::StarSpec::kName;
    };
    auto message = [](const N& n) {
        if (is_multi_site(n))
            return std::string(
                "SHARP reduces inside one site's fabric, not across a WAN: expected a two_tier with "
                "sites = 1");
        return fmt::format("not used by topology \"{}\" (it takes: {})", n.topology, keys_taken_by(n.topology));
    };
    return {pred, message};
}

// Keys of a fabric whose switches reduce (network.sharp true).
Rule<N> sharp_on() {
    return {[](const N& n) { return n.sharp.value_or(false); },
            [](const N&) { return std::string("applies with network.sharp true only"); }};
}

// Required by the topologies `topologies` ("required by topology "fat_tree"").
std::function<std::string(const N&)> required_by_topology() {
    return [](const N& n) { return fmt::format("required by topology \"{}\"", n.topology); };
}
// Required by the node topologies where no preset names the node.
std::function<bool(const N&)> without_preset() {
    return [](const N& n) { return on(n, kNodeTopologies) && !n.node; };
}
std::function<std::string(const N&)> required_without_preset() {
    return [](const N& n) { return fmt::format("required by topology \"{}\" without network.node", n.topology); };
}

json transport_schema(std::string description) {
    return {{"description", std::move(description)},
            {"oneOf", json::array({enum_schema(topo::transport_names(), "preset"),
                                   ref_schema("transport", "transport object")})}};
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

// A list of objects read through `table` (each element at PATH[i]), `check` run on each before the next.
template <typename T, typename Check>
std::vector<T> read_list(const json& j, const std::string& path, const KeyTable<T>& table, const ObjectSchema& schema,
                         Check check) {
    std::vector<T> out;
    (void)read_array(j, path, 1);
    for (std::size_t i = 0; i < j.size(); ++i) {
        ObjectReader r(j[i], fmt::format("{}[{}]", path, i), schema);
        T item;
        table.read(r, item);
        check(r, item, out);
        r.finish();
        out.push_back(std::move(item));
    }
    return out;
}

template <typename T>
json echo_list(const std::vector<T>& items, const KeyTable<T>& table) {
    json out = json::array();
    for (const T& x : items) out.push_back(table.echo(x));
    return out;
}

void read_nodes(topo::CustomSpec& c, const json& j, const std::string& path) {
    c.nodes =
        read_list(j, path, custom_node_keys(), tables().node,
                  [](ObjectReader& r, const topo::CustomNode& node, const std::vector<topo::CustomNode>& prev) {
                      for (const auto& p : prev)
                          if (p.name == node.name)
                              throw ScenarioError(r.path("name"), fmt::format("duplicate node name \"{}\"", node.name));
                  });
}

void read_links(topo::CustomSpec& c, const json& j, const std::string& path) {
    auto known = [&](const std::string& name) {
        return std::any_of(c.nodes.begin(), c.nodes.end(), [&](const auto& nd) { return nd.name == name; });
    };
    c.links = read_list(
        j, path, custom_link_keys(), tables().link,
        [&](ObjectReader& r, const topo::CustomLink& link, const std::vector<topo::CustomLink>&) {
            if (!known(link.from))
                throw ScenarioError(r.path("from"), fmt::format("expected a node name, got \"{}\"", link.from));
            if (!known(link.to))
                throw ScenarioError(r.path("to"), fmt::format("expected a node name, got \"{}\"", link.to));
            if (link.from == link.to) throw ScenarioError(r.path("to"), "a link must join two different nodes");
        });
}

const json kNodeList{{"type", "array"}, {"items", ref_schema("node", "a node")}};
const json kLinkList{{"type", "array"}, {"items", ref_schema("link", "a link")}};

json described(json schema, std::string description) {
    schema["description"] = std::move(description);
    return schema;
}

std::string node_preset_descriptions() {
    std::string out =
        "two_tier, rail_optimized: a node preset, fixing gpus_per_node, nics_per_node and "
        "intra_bandwidth (bandwidth defaults to its NIC rate): ";
    for (const auto& n : topo::node_presets())
        out += fmt::format("{}{}: {} x GPU, {}, {:.4g} GB/s per GPU per direction, {} x {:.4g} Gbit/s NICs",
                           &n == &topo::node_presets().front() ? "" : "; ", n.preset, n.gpus, n.fabric,
                           n.gpu_bandwidth.bytes_per_s() / 1e9, n.nics, n.nic_bandwidth.bits_per_s() / 1e9);
    return out;
}

std::vector<std::string> node_preset_names() {
    std::vector<std::string> out;
    for (const auto& n : topo::node_presets()) out.push_back(n.preset);
    return out;
}

std::vector<std::string> topology_names() {
    std::vector<std::string> out;
    for (const auto& t : detail::topology_readers()) out.emplace_back(t.name);
    return out;
}

std::string topology_descriptions() {
    std::string out;
    for (const auto& t : detail::topology_readers())
        out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", t.name, t.description);
    return out;
}

}  // namespace

const KeyTable<topo::CustomNode>& custom_node_keys() {
    using C = topo::CustomNode;
    static const KeyTable<C> t{"node",
                               "a node of a custom topology",
                               {
                                   key("name", &C::name, "unique node name").mandatory(),
                                   key("kind", &C::kind, "host (runs workers or servers) or switch").mandatory(),
                               }};
    return t;
}

const KeyTable<topo::CustomLink>& custom_link_keys() {
    using L = topo::CustomLink;
    static const KeyTable<L> t{"link",
                               "a full-duplex link of a custom topology",
                               {
                                   key("from", &L::from, "node name").mandatory(),
                                   key("to", &L::to, "node name").mandatory(),
                                   key("bandwidth", &L::bandwidth, "capacity of each direction").mandatory(),
                                   key("latency", &L::latency, "one-way latency").mandatory(),
                               }};
    return t;
}

const KeyTable<topo::CustomSpec>& topology_file_keys() {
    using C = topo::CustomSpec;
    static const KeyTable<C> t{"topology_file",
                               "a custom topology kept in its own file",
                               {
                                   keys::free_text<C>("free text (not interpreted)"),
                                   keys::custom<C>("nodes", described(kNodeList, "the nodes"), read_nodes,
                                                   [](const C& c) { return echo_list(c.nodes, custom_node_keys()); })
                                       .mandatory(),
                                   keys::custom<C>("links", described(kLinkList, "full-duplex links"), read_links,
                                                   [](const C& c) { return echo_list(c.links, custom_link_keys()); })
                                       .mandatory(),
                               }};
    return t;
}

const KeyTable<N>& network_keys() {
    const std::string_view star = topo::StarSpec::kName, two_tier = topo::TwoTierSpec::kName,
                           fat_tree = topo::FatTreeSpec::kName, leaf_spine = topo::LeafSpineSpec::kName,
                           ring = topo::RingSpec::kName, torus2d = topo::Torus2dSpec::kName,
                           custom = topo::CustomSpec::kName, rail = topo::RailOptimizedSpec::kName;
    const std::vector<std::string_view> uniform{star, fat_tree, leaf_spine, ring, torus2d};
    auto needs = [](std::vector<std::string_view> topologies) {
        return [topologies](const N& n) { return on(n, topologies); };
    };
    // A custom topology's nodes or links given inline (the file is the alternative).
    auto read_inline = [](auto member_reader) {
        return [member_reader](N& n, const json& j, const std::string& path) {
            if (n.file)
                throw ScenarioError("$.network.topology",
                                    "custom: expected either \"nodes\" and \"links\", or a topology \"file\"");
            if (!n.custom) n.custom.emplace();
            n.custom_inline = true;
            member_reader(*n.custom, j, path);
        };
    };
    auto echo_inline = [](auto member_echo) {
        return [member_echo](const N& n) { return n.custom ? member_echo(*n.custom) : json(nullptr); };
    };
    static const KeyTable<N> t{
        "network",
        "the physical network",
        {
            keys::choice("topology", &N::topology, topology_names(), "fabric shape: " + topology_descriptions())
                .mandatory(),
            keys::custom<N>(
                "node", enum_schema(node_preset_names(), node_preset_descriptions()),
                [](N& n, const json& j, const std::string& path) {
                    n.node = read_choice(j, path, node_preset_names());
                },
                [](const N& n) { return n.node ? json(*n.node) : json(nullptr); })
                .when(of(kNodeTopologies)),
            key("bandwidth", &N::bandwidth,
                "host link bandwidth (each NIC for two_tier and rail_optimized, default there the node preset's NIC "
                "rate; every link of a fat_tree; leaf_spine host links)")
                .when(of({star, two_tier, fat_tree, leaf_spine, ring, torus2d, rail}))
                .required_when([needs, uniform](const N& n) { return needs(uniform)(n) || without_preset()(n); },
                               [uniform](const N& n) {
                                   return on(n, uniform) ? required_by_topology()(n) : required_without_preset()(n);
                               }),
            key("latency", &N::latency,
                "latency of every link but the intra-node ones of two_tier and rail_optimized (with network.node: "
                "default 500 ns, SimAI's NIC and switch link latency)")
                .when(of({star, two_tier, fat_tree, leaf_spine, ring, torus2d, rail}))
                .required_when([needs, uniform](const N& n) { return needs(uniform)(n) || without_preset()(n); },
                               [uniform](const N& n) {
                                   return on(n, uniform) ? required_by_topology()(n) : required_without_preset()(n);
                               })
                .when_absent([](N& n) {
                    if (on(n, kNodeTopologies) && n.node) n.latency = kPresetLinkLatency;
                }),
            key("hosts", &N::hosts, "star, ring: number of hosts (default: workers plus dedicated servers)",
                {1, static_cast<double>(kMaxHosts)})
                .when(of({star, ring})),
            key("gpus_per_node", &N::gpus_per_node, "two_tier, rail_optimized: GPUs per node (required without node)",
                {1, 1024})
                .when(fixed_by_preset())
                .required_when(without_preset(), required_without_preset()),
            key("num_nodes", &N::num_nodes,
                "two_tier, rail_optimized: number of nodes (default: enough for the workers)",
                {1, static_cast<double>(detail::kMaxWorkers)})
                .when(of(kNodeTopologies)),
            key("sites", &N::sites,
                "two_tier: datacenters the nodes are split into, evenly and in order (default 1); with several, each "
                "site's NICs reach their own top switch \"site<s>\" and the sites meet at a WAN core \"wan\" "
                "(wan_bandwidth, wan_latency); without num_nodes, enough nodes for the workers, rounded up to a "
                "multiple of the sites",
                {1, 1024})
                .when(of({two_tier})),
            key("wan_bandwidth", &N::wan_bandwidth,
                "two_tier with sites > 1: each site's link to the WAN core, per direction (required there)")
                .when(multi_site())
                .required_when(is_multi_site, "required by topology \"two_tier\" with sites > 1"),
            key("wan_latency", &N::wan_latency,
                "two_tier with sites > 1: one-way latency between two sites, half on each site's WAN link "
                "(required there; 10-100 ms between regions)")
                .when(multi_site())
                .required_when(is_multi_site, "required by topology \"two_tier\" with sites > 1"),
            key("sharp", &N::sharp,
                "two_tier (one site), rail_optimized, star: InfiniBand SHARP, the switches between nodes reduce (the "
                "top switch of a two_tier or star, each rail leaf of a rail_optimized; NCCL's CollNet): all-reduce "
                "algorithm \"collnet\" runs, auto weighs it, and parameter servers may sum in the switch "
                "(architecture.switch_aggregation) (default false)")
                .when(single_site_nodes()),
            // Default: topo::kSwitchAggregationMemory (SwitchML on a Tofino 1, cited there).
            key("aggregation_memory", &N::aggregation_memory,
                "with sharp: the aggregation state the summing switch holds in flight for parameter servers "
                "(architecture.switch_aggregation), shared equally by the jobs summing in it (SwitchML's pools, "
                "ATP's aggregators); a job's servers split its share, each stream holding share / 512 KiB segments "
                "plus the 4 its store-and-forward legs keep in flight, and a segment waits for a free slot (default "
                "2MiB, SwitchML's on a Tofino 1)",
                {1})
                .when(sharp_on())
                .when_absent([](N& n) {
                    if (n.sharp.value_or(false)) n.aggregation_memory = sim::Bytes{topo::kSwitchAggregationMemory};
                }),
            key("nics_per_node", &N::nics_per_node,
                "two_tier: parallel NIC links from each node to the switch (default 1; GPU r of m uses NIC r k / m, "
                "and rings run a "
                "channel per NIC); "
                "rail_optimized: 1 (a NIC on the node switch, rail 0) or gpus_per_node (NIC k beside GPU k, on rail "
                "k); fixed by node",
                {1, 64})
                .when(fixed_by_preset())
                .with_default(1)
                .and_then([rail](N& n, const std::string& path) {
                    const std::uint64_t gpus = n.gpus_per_node.value_or(1), nics = *n.nics_per_node;
                    if (n.topology == rail && nics != 1 && nics != gpus)
                        throw ScenarioError(path, fmt::format("expected 1 (one NIC on the node switch) or "
                                                              "gpus_per_node = {} (one NIC per GPU, on rail leaves 0 "
                                                              ".. {}), got {}; GPU pairs sharing a NIC come with "
                                                              "network.node \"dgx1_v100\"",
                                                              gpus, gpus - 1, nics));
                }),
            key("intra_bandwidth", &N::intra_bandwidth,
                "two_tier, rail_optimized: GPU link bandwidth to the node switch (required without node, fixed by it)")
                .when(fixed_by_preset())
                .required_when(without_preset(), required_without_preset()),
            key("intra_latency", &N::intra_latency,
                "two_tier, rail_optimized: latency of every link inside a node (with network.node: default 25 ns, "
                "SimAI's NVSwitch link latency)")
                .when(of(kNodeTopologies))
                .required_when(without_preset(), required_without_preset())
                .when_absent([](N& n) {
                    if (on(n, kNodeTopologies) && n.node) n.intra_latency = kPresetIntraLatency;
                }),
            key("k", &N::k, "fat_tree: switch radix k (even): k^3/4 hosts", {2, 64})
                .when(of({fat_tree}))
                .required_when(needs({fat_tree}), required_by_topology())
                .and_then([](N& n, const std::string& path) {
                    if (*n.k % 2 != 0) throw ScenarioError(path, fmt::format("expected an even k, got {}", *n.k));
                }),
            key("hosts_per_leaf", &N::hosts_per_leaf, "leaf_spine: hosts on each leaf", {1, 4096})
                .when(of({leaf_spine}))
                .required_when(needs({leaf_spine}), required_by_topology()),
            key("spines", &N::spines,
                "leaf_spine, rail_optimized: spine switches (each leaf links to every spine); rail_optimized default "
                "1, a non-blocking spine layer (its links carry a rail leaf's whole host bandwidth at "
                "oversubscription 1; more spines add ECMP collisions, for the traffic that crosses rails: a GPU's "
                "transfer to "
                "another node's GPU on another rail relays over NVLink to that rail first, NCCL's PXN)",
                {1, 4096})
                .when(of({leaf_spine, rail}))
                .required_when(needs({leaf_spine}), required_by_topology())
                .when_absent([rail](N& n) {
                    if (n.topology == rail) n.spines = 1;
                }),
            key("leaves", &N::leaves, "leaf_spine: leaf switches (default: enough for the workers)",
                {1, static_cast<double>(detail::kMaxWorkers)})
                .when(of({leaf_spine})),
            // Its lower bound depends on the ports and spines (the topology's builder checks it).
            key("oversubscription", &N::oversubscription,
                "leaf_spine: host bandwidth / uplink bandwidth of a leaf (default 1): each uplink gets hosts_per_leaf "
                "x bandwidth / (spines x oversubscription); rail_optimized: the same for a rail leaf, whose uplinks "
                "get num_nodes x bandwidth / (spines x oversubscription)",
                {0, 1e6, true})
                .when(of({leaf_spine, rail}))
                .with_default(1.0),
            keys::custom<N>(
                "dims",
                {{"type", "array"},
                 {"items", {{"type", "integer"}, {"minimum", 1}, {"maximum", 65536}}},
                 {"minItems", 2},
                 {"maxItems", 2},
                 {"description", "torus2d: [X, Y] hosts"}},
                [](N& n, const json& j, const std::string& path) {
                    const json& dims = read_array(j, path, 2);
                    if (dims.size() != 2)
                        throw ScenarioError(path, fmt::format("expected [X, Y], got {} numbers", dims.size()));
                    n.dims = {read_uint(dims[0], path + "[0]", 1, 65536), read_uint(dims[1], path + "[1]", 1, 65536)};
                    if (n.dims[0] * n.dims[1] > kMaxHosts)
                        throw ScenarioError(path, "expected at most 4,000,000 hosts");
                },
                [](const N& n) { return n.dims.empty() ? json(nullptr) : json(n.dims); })
                .when(of({torus2d}))
                .required_when(needs({torus2d}), required_by_topology()),
            // The file is loaded once the block is read (read_network); nodes and links beside it are refused.
            key("file", &N::file, "custom: a JSON file holding {\"nodes\", \"links\"}, relative to the scenario file")
                .when(of({custom}))
                .no_echo(),  // echoed as the nodes and links it holds
            keys::custom<N>(
                "nodes", described(kNodeList, "custom: the nodes"), read_inline(read_nodes),
                echo_inline([](const topo::CustomSpec& c) { return echo_list(c.nodes, custom_node_keys()); }))
                .when(of({custom})),
            keys::custom<N>(
                "links", described(kLinkList, "custom: full-duplex links"), read_inline(read_links),
                echo_inline([](const topo::CustomSpec& c) { return echo_list(c.links, custom_link_keys()); }))
                .when(of({custom})),
            key("model", &N::model, "flow: max-min fair sharing (default); analytic: closed-form alpha-beta")
                .with_default("flow"),
            keys::custom<N>(
                "host_bandwidth",
                {{"type", "object"},
                 {"additionalProperties", bandwidth_schema("bandwidth")},
                 {"description",
                  "per-host link speeds: host name -> bandwidth of every link attached to that host (e.g. a "
                  "straggling client on a slow uplink)"}},
                [](N& n, const json& hb, const std::string& path) {
                    if (!hb.is_object() || hb.empty())
                        throw ScenarioError(path, "expected an object mapping host names to bandwidths");
                    for (const auto& [host, bw] : hb.items())
                        n.host_bandwidth.emplace_back(host, read_bandwidth(bw, path + "." + host));
                },
                [](const N& n) {
                    if (n.host_bandwidth.empty()) return json(nullptr);
                    json out = json::object();
                    for (const auto& [host, bw] : n.host_bandwidth) out[host] = sim::format_bandwidth(bw);
                    return out;
                }),
            key("routing", &N::routing,
                "choice among equal-cost shortest paths: ecmp (per-connection hash of the seed, default) or dmodk (by "
                "destination index)")
                .with_default("ecmp"),
            // network.profile: a calibration profile (`ddlsim calibrate`); its "network"."transport" is the
            // transport between machines unless "transport" is given, which then wins (read_network).
            keys::custom<N>(
                "profile",
                str_schema("a calibration profile written by `ddlsim calibrate`, relative to the scenario: its "
                           "\"network\".\"transport\" (measured goodput, per-message and per-collective overheads) is "
                           "the transport between machines unless \"transport\" is given, which wins (the result's "
                           "transport_source says which)"),
                [](N& n, const json& j, const std::string& path, const keys::ReadContext& ctx) {
                    const json network = detail::read_profile_member(j, path, ctx.base_dir, "network", n.profile_file);
                    if (!network.contains("transport"))
                        throw ScenarioError(path, fmt::format("{}: expected a calibration profile with a \"network\": "
                                                              "{{\"transport\": ...}} member (as `ddlsim calibrate` "
                                                              "writes)",
                                                              n.profile_file));
                    n.profile = read_string(j, path);
                    try {
                        n.profile_transport = read_transport(network.at("transport"), "$.network.transport");
                    } catch (const ScenarioError& e) {
                        throw ScenarioError(path,
                                            fmt::format("in profile {}: {}: {}", n.profile_file, e.path(), e.what()));
                    }
                },
                [](const N&) { return json(nullptr); }),  // echoed as the transport it gives
            keys::custom<N>(
                "transport",
                transport_schema("the transport between machines: a preset (ideal, rdma, tcp, nvlink, pcie) or an "
                                 "object; default auto: rdma on links of 100 Gbit/s and more, tcp below"),
                [](N& n, const json& j, const std::string& path) { n.transport = read_transport(j, path); },
                [](const N& n) { return n.transport ? transport_keys().echo(*n.transport) : json(nullptr); }),
            keys::custom<N>(
                "intra_transport",
                transport_schema("two_tier, rail_optimized: the transport inside a machine (GPU links to the node "
                                 "switch, NVLink and PCIe links of a node preset); default auto: a preset's links by "
                                 "their medium, others nvlink above 64 GB/s, pcie otherwise"),
                [](N& n, const json& j, const std::string& path) { n.intra_transport = read_transport(j, path); },
                [](const N& n) {
                    return n.intra_transport ? transport_keys().echo(*n.intra_transport) : json(nullptr);
                })
                .when(of(kNodeTopologies)),
        }};
    return t;
}

namespace {

std::string keys_taken_by(std::string_view name) {
    N probe;
    probe.topology = std::string(name);
    std::vector<std::string> names;
    for (const auto& k : network_keys().keys)
        if (k.applies && k.applies(probe)) names.push_back(k.name);
    return detail::list(names);
}

}  // namespace

}  // namespace ddlsim::scenario
