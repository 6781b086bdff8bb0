#include "scenarios/schema_tables.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>

#include "models/compression.hpp"
#include "models/device.hpp"
#include "models/workload.hpp"
#include "scenarios/key_tables.hpp"
#include "scenarios/loader_detail.hpp"
#include "scenarios/scenario.hpp"

namespace ddlsim::scenario {
namespace {

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
    t.network = network_keys().schema();
    t.transport = transport_keys().schema();
    t.topology_file = topology_file_keys().schema();
    t.node = custom_node_keys().schema();
    t.link = custom_link_keys().schema();
    t.model = model_keys().schema();
    t.transformer = transformer_keys().schema();
    t.layer = layer_keys().schema();
    t.device = device_keys().schema();
    t.architecture = architecture_keys().schema();
    t.sync = sync_keys().schema();
    t.compression = compression_schema(c);
    t.sharding = sharding_keys().schema();
    t.parallelism = parallelism_keys().schema();
    t.overlap = overlap_keys().schema();
    t.convergence = convergence_keys().schema();
    t.stragglers = straggler_keys().schema();
    t.training = training_keys().schema();
    t.evaluation = evaluation_keys().schema();
    t.checkpoint = checkpoint_keys().schema();
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
         {&t.job,         &t.network,     &t.transport,  &t.topology_file, &t.node,     &t.link,        &t.model,
          &t.transformer, &t.layer,       &t.device,     &t.architecture,  &t.sync,     &t.compression, &t.overlap,
          &t.sharding,    &t.parallelism, &t.stragglers, &t.convergence,   &t.training, &t.evaluation,  &t.checkpoint})
        out["$defs"][s->id] = s->to_json();
    return out;
}

namespace {

// The alternatives a value's schema allows, with $refs resolved (a oneOf of a name and an object gives both).
std::vector<const json*> alternatives(const json& schema, const json& defs) {
    std::vector<const json*> out;
    auto add = [&](const json& s) {
        if (s.contains("$ref")) {
            const std::string ref = s.at("$ref");
            out.push_back(&defs.at(ref.substr(ref.rfind('/') + 1)));
        } else {
            out.push_back(&s);
        }
    };
    add(schema);  // the object itself (the root's oneOf only states which keys are required)
    if (schema.contains("oneOf"))
        for (const json& alt : schema.at("oneOf")) add(alt);
    return out;
}

}  // namespace

void check_key_path(const std::string& path, const std::string& what) {
    static const json schema = scenario_schema();
    const json& defs = schema.at("$defs");
    const json* node = &schema;
    std::string where = "$";
    std::stringstream ss(path);
    for (std::string part; std::getline(ss, part, '.');) {
        const json* next = nullptr;
        std::vector<std::string> names;
        for (const json* alt : alternatives(*node, defs)) {
            if (alt->contains("properties")) {
                if (alt->at("properties").contains(part)) next = &alt->at("properties").at(part);
                for (const auto& item : alt->at("properties").items()) names.push_back(item.key());
            } else if (alt->contains("additionalProperties") && alt->at("additionalProperties").is_object()) {
                next = &alt->at("additionalProperties");  // a map: any key (host_bandwidth)
            } else if (alt->contains("items") && !part.empty() &&
                       std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
                next = &alt->at("items");
            }
            if (next) break;
        }
        if (!next) {
            if (names.empty())
                throw ScenarioError(what, fmt::format("{} takes no key \"{}\" (it is not an object)", where, part));
            throw ScenarioError(what, fmt::format("unknown key \"{}\" in {}{}; expected one of: {}", part, where,
                                                  did_you_mean(part, names), fmt::join(names, ", ")));
        }
        node = next;
        where += "." + part;
    }
}

}  // namespace ddlsim::scenario
