#include "scenarios/resolved.hpp"

#include <type_traits>
#include <variant>

#include "models/compression.hpp"
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

json model_json(const JobSpec& j) {
    json m = json::object();
    if (j.transformer) {
        m["transformer"] = transformer_keys().echo(*j.transformer);
    } else if (j.model_name != "custom") {
        m["name"] = j.model_name;
        if (j.seq_len > 0) m["seq_len"] = j.seq_len;
    } else {
        m["layers"] = json::array();
        for (const auto& l : j.workload.layers) m["layers"].push_back(layer_keys().echo(l));
    }
    m["dtype"] = j.dtype;
    return m;
}

json device_json(const models::DeviceSpec& d) {
    json out = json::object();
    if (d.name != "custom" && d.name != "calibrated") out["name"] = d.name;
    // A100-class defaults run convolutions in TF32 and matmuls in FP32 (PyTorch's default), which no
    // precision value spells: the key is left out then, so the default applies again.
    if (!d.tf32_convolutions_only) out["precision"] = std::string(models::precision_name(d.precision));
    out["peak_flops"] = sim::format_flop_rate(d.peak);
    // A built-in profile's measured per-operation fractions apply unless an efficiency overrides them; the
    // scalar is written only when it is what the run used (the fractions are in the result's "scenario").
    if (!d.uses_measured()) out["efficiency"] = d.efficiency;
    out["memory_bandwidth"] = sim::format_bandwidth(d.memory_bandwidth);
    if (d.samples_per_s) out["samples_per_s"] = *d.samples_per_s;
    if (d.memory_capacity) out["memory"] = sim::format_bytes(sim::Bytes{*d.memory_capacity});
    if (d.overlap_slowdown) out["overlap_slowdown"] = *d.overlap_slowdown;
    return out;
}

json architecture_json(const JobSpec& j) {
    return architecture_keys().echo(j.architecture);
}

json compression_json(const models::CompressionSpec& k) {
    // Every parameter the compressor's descriptor lists, at its resolved value.
    const models::CompressorInfo& info = models::compressor_info(k);
    json out{{"kind", k.kind}};
    for (const models::CompressorParam& p : info.params) {
        const std::string key(p.key);
        if (p.integer != nullptr) out[key] = k.*p.integer;
        if (p.number != nullptr) out[key] = k.*p.number;
        if (p.boolean != nullptr) out[key] = k.*p.boolean;
    }
    return out;
}

// The per-job keys (docs/CONTRACT.md §2 `jobs`), one line each.
json job_keys(const JobSpec& j) {
    json out{{"workers", j.workers},
             {"model", model_json(j)},
             {"batch_size", j.batch_size},
             {"gradient_accumulation", j.gradient_accumulation},
             {"activation_checkpointing", j.activation_checkpointing ? "full" : "none"},
             {"device", device_json(j.device)},
             {"placement", j.placement},
             {"architecture", architecture_json(j)},
             {"sync", sync_keys().echo(j.sync)},
             {"compression", compression_json(j.compression)},
             {"overlap", overlap_keys().echo(j.overlap)},
             {"optimizer", std::string(sim::enum_name(j.optimizer))}};
    if (j.sharding.any()) out["sharding"] = sharding_keys().echo(j.sharding);
    if (j.stragglers.any()) out["stragglers"] = straggler_keys().echo(j.stragglers);
    if (!j.worker_devices.empty()) {
        out["worker_devices"] = json::array();
        for (const auto& d : j.worker_devices) out["worker_devices"].push_back(device_json(d));
    }
    return out;
}

}  // namespace

nlohmann::json resolved_scenario(const Scenario& s) {
    json out{{"iterations", s.iterations}, {"seed", s.seed}, {"network", network_json(s)}};
    if (s.has_jobs_list) {
        out["jobs"] = json::array();
        for (const auto& j : s.jobs) {
            json job = job_keys(j);
            job["name"] = j.name;
            out["jobs"].push_back(std::move(job));
        }
    } else if (!s.jobs.empty()) {
        out.update(job_keys(s.jobs.front()));
        if (s.jobs.front().convergence) out["convergence"] = convergence_keys().echo(*s.jobs.front().convergence);
    }
    return out;
}

}  // namespace ddlsim::scenario
