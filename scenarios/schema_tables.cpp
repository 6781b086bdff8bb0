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
json ref(const std::string& id, std::string description) {
    return {{"$ref", "#/$defs/" + id}, {"description", std::move(description)}};
}
json str(std::string description) {
    return {{"type", "string"}, {"description", std::move(description)}};
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
    for (const auto& d : models::builtin_devices()) c.devices.push_back(d.name);
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

    // The per-job keys: at the root for one job, inside each element of "jobs" for several.
    const std::vector<Field> job_fields{
        {"workers", integer("number of data-parallel workers (GPUs)", 1)},
        {"model",
         {{"description", "a built-in workload name or a model object"},
          {"oneOf", json::array({enum_schema(c.models, "built-in workload"), ref("model", "model object")})}}},
        {"batch_size", integer("samples per worker per micro-batch (per iteration without gradient_accumulation)", 1)},
        {"activation_checkpointing",
         with_default(enum_schema(sim::enum_names<models::Checkpointing>(),
                                  "full: keep only each transformer block's input (every layer's, for models without "
                                  "blocks) and recompute its forward in backward; none (default): keep every "
                                  "activation"),
                      "none")},
        {"gradient_accumulation",
         with_default(integer("micro-batches of batch_size per optimizer step, synchronised once (DDP no_sync); an "
                              "iteration is then one step; bsp and local_sgd",
                              1),
                      1)},
        {"optimizer",
         enum_schema(models::optimizer_names(),
                     "optimizer whose update streams its state through memory (default: momentum for CNNs and "
                     "custom models, adamw for transformers)")},
        {"device",
         {{"description", "a built-in device profile name or a device object"},
          {"oneOf", json::array({enum_schema(c.devices, "built-in profile"), ref("device", "device object")})}}},
        {"placement",
         {{"type", "array"},
          {"items", {{"type", "string"}}},
          {"description", "the host each worker runs on (default: the next unused hosts in order)"}}},
        {"architecture", ref("architecture", "how gradients are aggregated (default: ring all-reduce)")},
        {"sync", ref("sync", "synchronisation scheme (default: bsp)")},
        {"compression", ref("compression", "gradient compression (default: none)")},
        {"overlap", ref("overlap", "compute/communication overlap (default: none)")},
        {"sharding", ref("sharding",
                         "sharded data parallelism: ZeRO stages 1-3, FSDP, hybrid sharding (default: "
                         "none, every worker holds a replica)")},
        {"stragglers", ref("stragglers", "per-worker compute slowdowns (default: none)")},
        {"worker_devices",
         {{"type", "array"},
          {"items",
           {{"oneOf", json::array({enum_schema(c.devices, "built-in profile"), ref("device", "device object")})}}},
          {"description",
           "heterogeneous clusters: one device per worker (name or object), overriding `device` for compute; "
           "`device` stays the reference for scaling efficiency"}}},
    };
    const json job_required = json::array({"workers", "model", "batch_size", "device"});
    t.root = {"scenario",
              "a ddlsim scenario: one training job (its keys at the root) or several sharing a network (jobs)",
              {
                  {"description", str("free text describing the scenario (not interpreted)")},
                  {"iterations", with_default(integer("iterations to simulate, per job (default 10)", 1), 10)},
                  {"network", ref("network", "the physical network"), true},
                  {"seed",
                   with_default(integer("seed of every random choice, ECMP path hashing included (default 0)", 0), 0)},
                  {"convergence", ref("convergence",
                                      "train a proxy task for real under the simulated schedule and "
                                      "report time to accuracy (one job only)")},
                  {"jobs",
                   {{"type", "array"},
                    {"items", ref("job", "a job")},
                    {"minItems", 1},
                    {"description", "several training jobs sharing the network; per-job keys go inside each"}}},
              }};
    t.root.fields.insert(t.root.fields.end(), job_fields.begin(), job_fields.end());
    t.root.one_of = json::array({{{"required", job_required}}, {{"required", json::array({"jobs"})}}});
    t.job = {"job",
             "one training job sharing the network with the others",
             {
                 {"name", str("job name in results (default job0, job1, ...)")},
                 {"description", str("free text (not interpreted)")},
             }};
    t.job.fields.insert(t.job.fields.end(), job_fields.begin(), job_fields.end());
    for (auto& f : t.job.fields)
        if (std::find(job_required.begin(), job_required.end(), f.name) != job_required.end()) f.required = true;
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
            {"nodes", {{"type", "array"}, {"items", ref("node", "a node")}, {"description", "custom: the nodes"}}},
            {"links",
             {{"type", "array"}, {"items", ref("link", "a link")}, {"description", "custom: full-duplex links"}}},
            {"file", str("custom: a JSON file holding {\"nodes\", \"links\"}, relative to the scenario file")},
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
              {"oneOf", json::array({enum_schema(c.transports, "preset"), ref("transport", "transport object")})}}},
            {"profile", str("a calibration profile written by `ddlsim calibrate`, relative to the scenario: its "
                            "\"network\".\"transport\" (measured goodput, per-message and per-collective overheads) is "
                            "the transport between machines unless \"transport\" is given, which wins (the result's "
                            "transport_source says which)")},
            {"intra_transport",
             {{"description",
               "two_tier, rail_optimized: the transport inside a machine (GPU links to the node switch, NVLink "
               "and PCIe links of a node preset); default auto: a preset's links by their medium, others nvlink "
               "above 64 GB/s, pcie otherwise"},
              {"oneOf", json::array({enum_schema(c.transports, "preset"), ref("transport", "transport object")})}}},
        }};
    t.transport = transport_keys().schema();
    t.topology_file = {
        "topology_file",
        "a custom topology kept in its own file",
        {
            {"description", str("free text (not interpreted)")},
            {"nodes", {{"type", "array"}, {"items", ref("node", "a node")}, {"description", "the nodes"}}, true},
            {"links",
             {{"type", "array"}, {"items", ref("link", "a link")}, {"description", "full-duplex links"}},
             true},
        }};
    t.node = {"node",
              "a node of a custom topology",
              {
                  {"name", str("unique node name"), true},
                  {"kind", enum_schema(c.node_kinds, "host (runs workers or servers) or switch"), true},
              }};
    t.link = {"link",
              "a full-duplex link of a custom topology",
              {
                  {"from", str("node name"), true},
                  {"to", str("node name"), true},
                  {"bandwidth", bandwidth_schema("capacity of each direction"), true},
                  {"latency", time_schema("one-way latency"), true},
              }};
    t.model = {
        "model",
        "a built-in model by name with options, or explicit layers",
        {
            {"name", enum_schema(c.models, "built-in workload (exclusive with layers and transformer)")},
            {"layers",
             {{"type", "array"}, {"items", ref("layer", "a layer")}, {"description", "layers in forward order"}}},
            {"transformer", ref("transformer", "a decoder-only transformer by its shape (Llama or GPT style)")},
            {"seq_len", integer("with name: the sequence a built-in transformer trains on (default its own: BERT "
                                "128, GPT-2 1024, GPT-3 2048, Llama 2 4096, Llama 3 8192; at most the learned "
                                "position table: BERT 512, GPT-2 1024, GPT-3 2048)",
                                1)},
            {"dtype", with_default(enum_schema(c.dtypes, "gradient element type (default fp32: 4 bytes per parameter)"),
                                   "fp32")},
        }};
    t.transformer = transformer_keys().schema();
    t.layer = layer_keys().schema();
    t.device = {
        "device",
        "a device: a profile with overrides, explicit peaks, or a measured throughput",
        {
            {"name", enum_schema(c.devices, "built-in profile the other keys override (default V100)")},
            {"precision",
             enum_schema(c.precisions,
                         "arithmetic: fp32, tf32, fp16/bf16 (AMP), fp8 (H100/H200); default fp32 on P100/V100, "
                         "tf32 convolutions with fp32 matmuls on A100/H100/H200 (PyTorch's default)")},
            {"peak_flops", flop_rate_schema("peak compute rate (overrides the profile)")},
            {"efficiency",
             {{"type", "number"},
              {"exclusiveMinimum", 0},
              {"maximum", 1},
              {"description",
               "sustained fraction of peak for convolutions and matmuls; replaces the built-in profile's "
               "measured fractions (default: measured per generation and precision; 0.5 for custom devices)"}}},
            {"memory_bandwidth", bandwidth_schema("device memory bandwidth (update time)")},
            {"memory", bytes_schema("device memory for the memory-per-GPU check (default: the profile's datasheet "
                                    "HBM; unknown for custom devices)")},
            {"samples_per_s",
             {{"type", "number"},
              {"exclusiveMinimum", 0},
              {"description",
               "measured single-device samples/s of this model at this batch size; fixes the compute scale"}}},
            {"overlap_slowdown",
             {{"type", "number"},
              {"minimum", 0},
              {"maximum", 10},
              {"description",
               "measured fraction by which compute slows while communication runs beside it (`ddlsim "
               "calibrate` writes it); the default of overlap.compute_slowdown for jobs on this device, "
               "which wins when given"}}},
            {"profile", str("a calibration profile written by `ddlsim calibrate` (its \"device\" member is "
                            "read as this object; keys given here override it); relative to the scenario")},
        }};
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
