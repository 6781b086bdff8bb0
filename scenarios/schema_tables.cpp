#include "scenarios/schema_tables.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "models/compression.hpp"
#include "models/device.hpp"
#include "models/workload.hpp"
#include "scenarios/key_tables.hpp"
#include "scenarios/loader_detail.hpp"
#include "scenarios/scenario.hpp"

namespace ddlsim::scenario {
namespace {

json integer(std::string description, std::int64_t min) {
    return {{"type", "integer"}, {"minimum", min}, {"description", std::move(description)}};
}
// A key's schema with the value the loader uses when the key is absent (a JSON Schema "default"). Only keys whose
// default is one constant carry it; those whose default depends on other keys say so in their description.
// tests/scenarios/test_schema.cpp checks each: writing the default out changes nothing in the resolved scenario.
json with_default(json schema, json value) {
    schema["default"] = std::move(value);
    return schema;
}

// The compression object: `kind` plus the union of every compressor's parameters, each with its range, unit,
// the kinds that take it and its default, all from the descriptors (models/compression/<kind>.cpp).
ObjectSchema compression_schema(const Choices& c) {
    std::string kinds;
    for (const models::CompressorInfo* k : models::compressors())
        kinds += fmt::format("{}{}: {}", kinds.empty() ? "" : "; ", k->name, k->description);
    ObjectSchema o{"compression", "gradient compression (models/compression/README.md lists the formulas)", {}};
    o.fields.push_back({"kind", enum_schema(c.compression_kinds, kinds), true});
    for (const models::CompressorInfo* k : models::compressors()) {
        for (const models::CompressorParam& p : k->params) {
            if (o.find(p.key) != nullptr) continue;
            std::vector<std::string> owners;
            std::vector<double> defaults;
            std::string per_kind;
            for (const models::CompressorInfo* other : models::compressors())
                if (const models::CompressorParam* q = other->param(p.key)) {
                    owners.emplace_back(other->name);
                    if (std::find(defaults.begin(), defaults.end(), q->default_value) == defaults.end())
                        defaults.push_back(q->default_value);
                }
            auto value = [&](double v) -> json {
                if (p.type == models::CompressorParam::Type::boolean) return v != 0.0;
                if (p.type == models::CompressorParam::Type::integer) return static_cast<std::int64_t>(v);
                return v;
            };
            json schema{{"type", p.type == models::CompressorParam::Type::boolean   ? "boolean"
                                 : p.type == models::CompressorParam::Type::integer ? "integer"
                                                                                    : "number"}};
            if (p.type != models::CompressorParam::Type::boolean) {
                schema[p.min_exclusive ? "exclusiveMinimum" : "minimum"] = value(p.min);
                schema["maximum"] = value(p.max);
            }
            std::string text = fmt::format("{}: {}{}", fmt::join(owners, ", "), p.description,
                                           p.unit.empty() ? "" : fmt::format(" ({})", p.unit));
            if (defaults.size() == 1) {
                schema["default"] = value(defaults.front());
            } else {
                std::vector<std::string> parts;
                for (const models::CompressorInfo* other : models::compressors())
                    if (const models::CompressorParam* q = other->param(p.key))
                        parts.push_back(fmt::format("{} {}", other->name, value(q->default_value).dump()));
                text += fmt::format("; default: {}", fmt::join(parts, ", "));
            }
            schema["description"] = text;
            o.fields.push_back({std::string(p.key), schema, false});
        }
    }
    return o;
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

std::string topology_descriptions() {
    std::string out;
    for (const auto& t : detail::topology_readers())
        out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", t.name, t.description);
    return out;
}

Tables build() {
    Tables t;
    Choices& c = t.choices;
    c.models = models::builtin_workload_names();
    c.devices = device_names();
    for (const models::CompressorInfo* k : models::compressors()) c.compression_kinds.emplace_back(k->name);
    c.transports = topo::transport_names();
    for (const auto& n : topo::node_presets()) c.node_presets.push_back(n.preset);
    for (const auto& topology : detail::topology_readers()) c.topologies.emplace_back(topology.name);
    c.network_models = sim::enum_names<NetworkModel>();
    c.routings = sim::enum_names<topo::Routing>();
    c.node_kinds = sim::enum_names<topo::NodeKind>();
    c.precisions = sim::enum_names<models::Precision>();
    c.arch_kinds = sim::enum_names<topo::ArchKind>();
    c.algorithms = sim::enum_names<topo::AllreduceAlgorithm>();
    c.server_placements = sim::enum_names<topo::ServerPlacement>();
    c.gossip_graphs = sim::enum_names<topo::GossipGraph>();
    c.ps_shardings = sim::enum_names<topo::PsSharding>();
    c.ps_styles = sim::enum_names<topo::PsStyle>();
    c.sync_kinds = sim::enum_names<models::SyncKind>();
    c.fusions = sim::enum_names<models::Fusion>();
    c.convergence_tasks = convergence_tasks();
    c.straggler_distributions = sim::enum_names<models::StragglerDistribution>();

    // The root: the scenario's own keys and, for one job, the per-job keys (required unless "jobs" is given).
    t.root = root_keys().schema();
    json job_required = json::array();
    for (const auto& k : job_keys().keys) {
        t.root.fields.push_back({k.name, k.schema, false});
        if (k.required) job_required.push_back(k.name);
    }
    t.root.one_of = json::array({{{"required", job_required}}, {{"required", json::array({"jobs"})}}});
    t.job = job_object_keys().schema();
    t.network = {
        "network",
        "the physical network",
        {
            {"topology", enum_schema(c.topologies, "fabric shape: " + topology_descriptions()), true},
            {"bandwidth", bandwidth_schema("host link bandwidth (each NIC for two_tier and rail_optimized, default "
                                           "there the node preset's NIC rate; every link of a fat_tree; leaf_spine "
                                           "host links)")},
            {"latency", time_schema("latency of every link but the intra-node ones of two_tier and rail_optimized")},
            {"hosts", integer("star, ring: number of hosts (default: workers plus dedicated servers)", 1)},
            {"node", enum_schema(c.node_presets, node_preset_descriptions())},
            {"gpus_per_node", integer("two_tier, rail_optimized: GPUs per node (required without node)", 1)},
            {"num_nodes", integer("two_tier, rail_optimized: number of nodes (default: enough for the workers)", 1)},
            {"nics_per_node",
             with_default(integer("two_tier: parallel NIC links from each node to the switch (default 1; ECMP "
                                  "spreads flows); rail_optimized: 1 (a NIC on the node switch, rail 0) or "
                                  "gpus_per_node (NIC k beside GPU k, on rail k); fixed by node",
                                  1),
                          1)},
            {"intra_bandwidth", bandwidth_schema("two_tier, rail_optimized: GPU link bandwidth to the node switch "
                                                 "(required without node, fixed by it)")},
            {"intra_latency", time_schema("two_tier, rail_optimized: latency of every link inside a node")},
            {"k", integer("fat_tree: switch radix k (even): k^3/4 hosts", 2)},
            {"hosts_per_leaf", integer("leaf_spine: hosts on each leaf", 1)},
            {"spines", integer("leaf_spine, rail_optimized: spine switches (each leaf links to every spine)", 1)},
            {"leaves", integer("leaf_spine: leaf switches (default: enough for the workers)", 1)},
            {"oversubscription",
             {{"type", "number"},
              {"exclusiveMinimum", 0},
              {"default", 1.0},
              {"description",
               "leaf_spine: host bandwidth / uplink bandwidth of a leaf (default 1): each uplink gets "
               "hosts_per_leaf x bandwidth / (spines x oversubscription); rail_optimized: the same for a rail "
               "leaf, whose uplinks get num_nodes x bandwidth / (spines x oversubscription)"}}},
            {"dims",
             {{"type", "array"},
              {"items", {{"type", "integer"}, {"minimum", 1}}},
              {"minItems", 2},
              {"maxItems", 2},
              {"description", "torus2d: [X, Y] hosts"}}},
            {"nodes",
             {{"type", "array"}, {"items", ref_schema("node", "a node")}, {"description", "custom: the nodes"}}},
            {"links",
             {{"type", "array"},
              {"items", ref_schema("link", "a link")},
              {"description", "custom: full-duplex links"}}},
            {"file", str_schema("custom: a JSON file holding {\"nodes\", \"links\"}, relative to the scenario file")},
            {"model",
             with_default(enum_schema(c.network_models,
                                      "flow: max-min fair sharing (default); analytic: closed-form alpha-beta"),
                          "flow")},
            {"host_bandwidth",
             {{"type", "object"},
              {"additionalProperties", bandwidth_schema("bandwidth")},
              {"description",
               "per-host link speeds: host name -> bandwidth of every link attached to that host (e.g. a "
               "straggling client on a slow uplink)"}}},
            {"routing", with_default(enum_schema(c.routings,
                                                 "choice among equal-cost shortest paths: ecmp (per-connection "
                                                 "hash of the seed, default) or dmodk (by destination index)"),
                                     "ecmp")},
            {"transport",
             {{"description",
               "the transport between machines: a preset (ideal, rdma, tcp, nvlink, pcie) or an object; default "
               "auto: rdma on links of 100 Gbit/s and more, tcp below"},
              {"oneOf",
               json::array({enum_schema(c.transports, "preset"), ref_schema("transport", "transport object")})}}},
            {"profile",
             str_schema("a calibration profile written by `ddlsim calibrate`, relative to the scenario: its "
                        "\"network\".\"transport\" (measured goodput, per-message and per-collective overheads) is "
                        "the transport between machines unless \"transport\" is given, which wins (the result's "
                        "transport_source says which)")},
            {"intra_transport",
             {{"description",
               "two_tier, rail_optimized: the transport inside a machine (GPU links to the node switch, NVLink "
               "and PCIe links of a node preset); default auto: a preset's links by their medium, others nvlink "
               "above 64 GB/s, pcie otherwise"},
              {"oneOf",
               json::array({enum_schema(c.transports, "preset"), ref_schema("transport", "transport object")})}}},
        }};
    t.transport = transport_keys().schema();
    t.topology_file = {
        "topology_file",
        "a custom topology kept in its own file",
        {
            {"description", str_schema("free text (not interpreted)")},
            {"nodes", {{"type", "array"}, {"items", ref_schema("node", "a node")}, {"description", "the nodes"}}, true},
            {"links",
             {{"type", "array"}, {"items", ref_schema("link", "a link")}, {"description", "full-duplex links"}},
             true},
        }};
    t.node = {"node",
              "a node of a custom topology",
              {
                  {"name", str_schema("unique node name"), true},
                  {"kind", enum_schema(c.node_kinds, "host (runs workers or servers) or switch"), true},
              }};
    t.link = {"link",
              "a full-duplex link of a custom topology",
              {
                  {"from", str_schema("node name"), true},
                  {"to", str_schema("node name"), true},
                  {"bandwidth", bandwidth_schema("capacity of each direction"), true},
                  {"latency", time_schema("one-way latency"), true},
              }};
    t.model = model_keys().schema();
    t.transformer = transformer_keys().schema();
    t.layer = layer_keys().schema();
    t.device = device_keys().schema();
    t.architecture = architecture_keys().schema();
    t.sync = sync_keys().schema();
    t.compression = compression_schema(c);
    t.sharding = sharding_keys().schema();
    t.overlap = overlap_keys().schema();
    t.convergence = convergence_keys().schema();
    t.stragglers = straggler_keys().schema();
    return t;
}

}  // namespace

const Tables& tables() {
    static const Tables t = build();
    return t;
}

json scenario_schema() {
    const Tables& t = tables();
    json out = t.root.to_json();
    out["$schema"] = "https://json-schema.org/draft/2020-12/schema";
    out["title"] = "ddlsim scenario";
    for (const ObjectSchema* s :
         {&t.job, &t.network, &t.transport, &t.topology_file, &t.node, &t.link, &t.model, &t.transformer, &t.layer,
          &t.device, &t.architecture, &t.sync, &t.compression, &t.overlap, &t.sharding, &t.stragglers, &t.convergence})
        out["$defs"][s->id] = s->to_json();
    return out;
}

}  // namespace ddlsim::scenario
