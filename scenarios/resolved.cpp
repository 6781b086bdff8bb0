#include "scenarios/resolved.hpp"

#include <type_traits>
#include <variant>

#include "scenarios/key_tables.hpp"
#include "scenarios/schema_tables.hpp"
#include "sim/unit_parse.hpp"

namespace ddlsim::scenario {
namespace {

using nlohmann::json;

// A node preset by its name (the keys it fixes are not echoed: giving them beside it is refused), or the
// node's keys.
void node_json(json& n, const std::string& preset, std::size_t gpus, std::size_t nics, sim::Bandwidth intra) {
    if (!preset.empty()) {
        n["node"] = preset;
        return;
    }
    n["gpus_per_node"] = gpus;
    n["nics_per_node"] = nics;
    n["intra_bandwidth"] = sim::format_bandwidth(intra);
}

// The intra-node transport: what `auto` picks for the GPU links, or with a node preset (whose links differ in
// medium) only the one given.
template <class F>
void intra_transport_json(json& n, const Scenario& s, bool preset, sim::Bandwidth intra, const F& transport_json) {
    if (!preset)
        n["intra_transport"] = transport_json(topo::transport_for(s.transports, topo::LinkClass::intra, intra));
    else if (s.transports.intra)
        n["intra_transport"] = transport_json(*s.transports.intra);
}

json network_json(const Scenario& s) {
    json n = json::object();
    n["topology"] = std::string(topo::topology_name(s.topology));
    std::visit(
        [&](const auto& t) {
            using T = std::decay_t<decltype(t)>;
            if constexpr (std::is_same_v<T, topo::CustomSpec>) {
                n["nodes"] = json::array();
                for (const auto& node : t.nodes)
                    n["nodes"].push_back({{"name", node.name}, {"kind", std::string(sim::enum_name(node.kind))}});
                n["links"] = json::array();
                for (const auto& l : t.links)
                    n["links"].push_back({{"from", l.from},
                                          {"to", l.to},
                                          {"bandwidth", sim::format_bandwidth(l.bandwidth)},
                                          {"latency", sim::format_time(l.latency)}});
            } else {
                n["bandwidth"] = sim::format_bandwidth(t.bandwidth);
                n["latency"] = sim::format_time(t.latency);
                if constexpr (std::is_same_v<T, topo::StarSpec> || std::is_same_v<T, topo::RingSpec>) {
                    n["hosts"] = t.hosts;
                } else if constexpr (std::is_same_v<T, topo::TwoTierSpec>) {
                    node_json(n, t.node ? t.node->preset : "", t.gpus_per_node, t.nics_per_node, t.intra_bandwidth);
                    n["num_nodes"] = t.nodes;
                    n["intra_latency"] = sim::format_time(t.intra_latency);
                } else if constexpr (std::is_same_v<T, topo::RailOptimizedSpec>) {
                    node_json(n, t.node.preset, t.node.gpus, t.node.nics, t.node.gpu_bandwidth);
                    n["num_nodes"] = t.nodes;
                    n["intra_latency"] = sim::format_time(t.intra_latency);
                    n["spines"] = t.spines;
                    n["oversubscription"] = t.oversubscription;
                } else if constexpr (std::is_same_v<T, topo::FatTreeSpec>) {
                    n["k"] = t.k;
                } else if constexpr (std::is_same_v<T, topo::LeafSpineSpec>) {
                    n["leaves"] = t.leaves;
                    n["hosts_per_leaf"] = t.hosts_per_leaf;
                    n["spines"] = t.spines;
                    n["oversubscription"] = t.oversubscription;
                } else if constexpr (std::is_same_v<T, topo::Torus2dSpec>) {
                    n["dims"] = {t.x, t.y};
                }
            }
        },
        s.topology);
    n["model"] = std::string(sim::enum_name(s.network_model));
    n["routing"] = std::string(sim::enum_name(s.routing));
    // Transports: the given ones, or what `auto` picks for the topology's link speeds (custom topologies,
    // whose links may differ, keep auto).
    auto transport_json = [&](const topo::TransportSpec& t) { return transport_keys().echo(t); };
    std::visit(
        [&](const auto& t) {
            using T = std::decay_t<decltype(t)>;
            if constexpr (!std::is_same_v<T, topo::CustomSpec>) {
                // `auto` picks per link by its rate: it is written out as the pick only where every link between
                // machines gets the same one (oversubscribed spine uplinks may be slow enough for tcp).
                const topo::TransportSpec host = topo::transport_for(s.transports, topo::LinkClass::inter, t.bandwidth);
                bool uniform = true;
                auto same_pick = [&](sim::Bandwidth uplink) {
                    return s.transports.inter.has_value() ||
                           topo::transport_for(s.transports, topo::LinkClass::inter, uplink).kind == host.kind;
                };
                if constexpr (std::is_same_v<T, topo::LeafSpineSpec>)
                    uniform = same_pick(topo::leaf_uplink_bandwidth(t));
                if constexpr (std::is_same_v<T, topo::RailOptimizedSpec>)
                    uniform = same_pick(topo::rail_uplink_bandwidth(t));
                if (uniform) n["transport"] = transport_json(host);
                if constexpr (std::is_same_v<T, topo::TwoTierSpec>)
                    intra_transport_json(n, s, t.node.has_value(), t.intra_bandwidth, transport_json);
                if constexpr (std::is_same_v<T, topo::RailOptimizedSpec>)
                    intra_transport_json(n, s, !t.node.preset.empty(), t.node.gpu_bandwidth, transport_json);
            } else {
                if (s.transports.inter) n["transport"] = transport_json(*s.transports.inter);
            }
        },
        s.topology);
    if (!s.host_bandwidth.empty()) {
        n["host_bandwidth"] = json::object();
        for (const auto& [host, bw] : s.host_bandwidth) n["host_bandwidth"][host] = sim::format_bandwidth(bw);
    }
    return n;
}

}  // namespace

nlohmann::json resolved_scenario(const Scenario& s) {
    json out = root_keys().echo(s);
    out["network"] = network_json(s);
    if (s.has_jobs_list) {
        out["jobs"] = json::array();
        for (const auto& j : s.jobs) out["jobs"].push_back(job_object_keys().echo(j));
    } else if (!s.jobs.empty()) {
        out.update(job_keys().echo(s.jobs.front()));
        if (s.jobs.front().convergence) out["convergence"] = convergence_keys().echo(*s.jobs.front().convergence);
    }
    return out;
}

}  // namespace ddlsim::scenario
