#include "scenarios/resolved.hpp"

#include <type_traits>
#include <variant>

#include "models/compression.hpp"
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
    auto transport_json = [&](const topo::TransportSpec& t) {
        json o{{"kind", std::string(sim::enum_name(t.kind))},
               {"efficiency", t.efficiency},
               {"message_overhead", sim::format_time(t.message_overhead)},
               {"collective_overhead", sim::format_time(t.collective_overhead)},
               {"streams", t.streams}};
        if (t.stream_rate) o["stream_rate"] = sim::format_bandwidth(*t.stream_rate);
        return o;
    };
    std::visit(
        [&](const auto& t) {
            using T = std::decay_t<decltype(t)>;
            if constexpr (!std::is_same_v<T, topo::CustomSpec>) {
                n["transport"] = transport_json(topo::transport_for(s.transports, topo::LinkClass::inter, t.bandwidth));
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
        const models::TransformerConfig& c = *j.transformer;
        json t{{"style", std::string(sim::enum_name(c.style))},
               {"attention", std::string(sim::enum_name(c.attention))},
               {"layers", c.layers},
               {"hidden", c.hidden},
               {"heads", c.heads},
               {"seq_len", c.seq_len},
               {"vocab", c.vocab}};
        if (c.kv_heads > 0) t["kv_heads"] = c.kv_heads;
        if (c.ffn_hidden > 0) t["ffn_hidden"] = c.ffn_hidden;
        m["transformer"] = std::move(t);
    } else if (j.model_name != "custom") {
        m["name"] = j.model_name;
        if (j.seq_len > 0) m["seq_len"] = j.seq_len;
    } else {
        m["layers"] = json::array();
        for (const auto& l : j.workload.layers) {
            json layer{{"name", l.name}, {"params", l.params()}, {"fwd_flops", l.fwd_flops}};
            if (l.fwd_time) layer["fwd_time"] = sim::format_time(*l.fwd_time);
            if (l.bwd_time) layer["bwd_time"] = sim::format_time(*l.bwd_time);
            if (l.update_time) layer["update_time"] = sim::format_time(*l.update_time);
            m["layers"].push_back(std::move(layer));
        }
    }
    m["dtype"] = j.bytes_per_param == 4.0 ? "fp32" : "fp16";
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
    const auto& a = j.architecture;
    json out{{"kind", std::string(sim::enum_name(a.kind))}};
    switch (a.kind) {
        case topo::ArchKind::allreduce:
            out["algorithm"] = std::string(sim::enum_name(a.algorithm));
            if (a.segment_size.value() > 0.0) out["segment_size"] = sim::format_bytes(a.segment_size);
            break;
        case topo::ArchKind::gossip: out["graph"] = std::string(sim::enum_name(a.graph)); break;
        case topo::ArchKind::ps:
            out["style"] = std::string(sim::enum_name(a.style));
            // Colocated BytePS has no CPU server: one server process on every worker machine.
            if (!(a.style == topo::PsStyle::byteps && a.placement == topo::ServerPlacement::colocated))
                out["servers"] = a.servers;
            out["placement"] = std::string(sim::enum_name(a.placement));
            if (a.aggregation_rate) out["aggregation_rate"] = sim::format_bandwidth(*a.aggregation_rate);
            // Only a given server placement: default dedicated servers also size the network (two_tier).
            if (!a.server_placement.empty()) out["server_placement"] = a.server_placement;
            out["sharding"] = std::string(sim::enum_name(a.sharding));
            if (a.sharding != topo::PsSharding::bytes) out["split_size"] = sim::format_bytes(a.split_size);
            out["per_tensor"] = a.per_tensor;
            out["local_aggregation"] = a.local_aggregation;
            if (a.style == topo::PsStyle::byteps && a.per_tensor)
                out["partition_size"] = sim::format_bytes(a.partition_size);
            break;
    }
    return out;
}

json sync_json(const models::SyncSpec& y) {
    json out{{"kind", std::string(sim::enum_name(y.kind))}};
    switch (y.kind) {
        case models::SyncKind::ssp: out["staleness"] = y.staleness; break;
        case models::SyncKind::local_sgd: out["period"] = y.period; break;
        case models::SyncKind::fedavg:
            out["clients_per_round"] = y.clients_per_round;
            out["local_steps"] = y.local_steps;
            out["availability"] = y.availability;
            break;
        default: break;
    }
    return out;
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

json overlap_json(const models::OverlapSpec& o) {
    json out{{"wfbp", o.wfbp}, {"fusion", std::string(sim::enum_name(o.fusion))}, {"priority", o.priority}};
    if (o.fusion == models::Fusion::buffer) {
        out["bucket_size"] = sim::format_bytes(o.bucket_size);
        out["cycle_time"] = sim::format_time(o.cycle_time);
    }
    if (o.priority) {
        out["partition_size"] = sim::format_bytes(o.partition_size);
        out["credit"] = o.credit;
    }
    if (o.compute_slowdown) out["compute_slowdown"] = *o.compute_slowdown;
    return out;
}

json stragglers_json(const models::StragglerSpec& g) {
    json out = json::object();
    if (!g.fixed.empty()) {
        out["fixed"] = json::object();
        for (const auto& [w, f] : g.fixed) out["fixed"][std::to_string(w)] = f;
    }
    switch (g.distribution) {
        case models::StragglerDistribution::none: return out;
        case models::StragglerDistribution::lognormal: out["sigma"] = g.sigma; break;
        case models::StragglerDistribution::exponential: out["mean_delay"] = sim::format_time(g.mean_delay); break;
        case models::StragglerDistribution::periodic:
            out["every"] = g.every;
            out["slowdown"] = g.slowdown;
            break;
    }
    out["distribution"] = std::string(sim::enum_name(g.distribution));
    if (!g.workers.empty()) out["workers"] = g.workers;
    return out;
}

json convergence_json(const ConvergenceSpec& v) {
    json out{{"task", v.task},
             {"target_accuracy", v.target_accuracy},
             {"learning_rate", v.learning_rate},
             {"batch_size", v.batch_size},
             {"eval_every", v.eval_every},
             {"test_samples", v.test_samples},
             {"train_samples", v.train_samples}};
    if (v.max_iterations > 0) out["max_iterations"] = v.max_iterations;
    return out;
}

// The per-job keys (SPEC §2 `jobs`), one line each.
json job_keys(const JobSpec& j) {
    json out{{"workers", j.workers},
             {"model", model_json(j)},
             {"batch_size", j.batch_size},
             {"gradient_accumulation", j.gradient_accumulation},
             {"activation_checkpointing", j.activation_checkpointing ? "full" : "none"},
             {"device", device_json(j.device)},
             {"placement", j.placement},
             {"architecture", architecture_json(j)},
             {"sync", sync_json(j.sync)},
             {"compression", compression_json(j.compression)},
             {"overlap", overlap_json(j.overlap)}};
    if (j.sharding.any()) {
        out["sharding"] = {{"stage", j.sharding.stage}, {"group", std::string(sim::enum_name(j.sharding.group))}};
        if (j.sharding.stage >= 3) {
            out["sharding"]["prefetch"] = j.sharding.prefetch;
            out["sharding"]["wrap"] = j.sharding.wrap;
        }
    }
    if (j.stragglers.any()) out["stragglers"] = stragglers_json(j.stragglers);
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
        if (s.jobs.front().convergence) out["convergence"] = convergence_json(*s.jobs.front().convergence);
    }
    return out;
}

}  // namespace ddlsim::scenario
