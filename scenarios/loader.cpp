// The strict scenario loader: JSON in, plain structs out, every error a
// ScenarioError naming the JSON path and what was expected (SPEC §1, §2).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "scenarios/json_reader.hpp"
#include "scenarios/scenario.hpp"
#include "scenarios/schema_tables.hpp"
#include "topologies/collectives.hpp"

namespace ddlsim::scenario {
namespace {

constexpr std::uint64_t kMaxWorkers = 1'000'000;
constexpr double kMaxEvents = 2e9;     // flow-mode refusal bound (about an hour of simulation)
constexpr double kMaxPlanSteps = 5e7;  // transfers in one round, bounds memory

std::string list(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "\"" : ", \"") + s + "\"";
    return out;
}

// Names defined by SPEC.md but not implemented yet get a message saying so.
void reject_planned_value(const json& j, const std::string& path, const std::string& what,
                          const std::vector<std::string>& implemented) {
    const auto& planned = tables().planned.values.at(what);
    if (j.is_string() && std::find(planned.begin(), planned.end(), j.get<std::string>()) != planned.end())
        throw ScenarioError(path, fmt::format("{} is part of the scenario format but not implemented in this version; "
                                              "available: {}",
                                              j.dump(), list(implemented)));
}

void reject_planned_keys(const json& j, const std::string& path, const std::string& object_id) {
    if (!j.is_object()) return;
    for (const auto& key : tables().planned.keys.at(object_id))
        if (j.contains(key))
            throw ScenarioError(path + "." + key,
                                "this key is part of the scenario format but not implemented in this version");
}

// A number in (0, max]: read_number's closed-interval message would wrongly offer 0.
double read_positive(const json& j, const std::string& path, double max) {
    if (!j.is_number() || !std::isfinite(j.get<double>()) || j.get<double>() <= 0.0 || j.get<double>() > max)
        throw ScenarioError(path, fmt::format("expected a number in (0, {:g}], got {}", max, describe(j)));
    return j.get<double>();
}

// A planned value of "kind" is reported before the object's keys are checked, so that a spec-conforming
// {"kind": "ssp", "staleness": 2} says "not implemented" rather than "unknown key staleness".
void reject_planned_kind(const json& j, const std::string& path, const std::string& key, const std::string& what,
                         const std::vector<std::string>& implemented) {
    if (j.is_object() && j.contains(key)) reject_planned_value(j.at(key), path + "." + key, what, implemented);
}

std::string read_kind(ObjectReader& r, const std::string& key, const std::string& planned,
                      const std::vector<std::string>& choices) {
    const json& v = r.at(key);
    if (!planned.empty()) reject_planned_value(v, r.path(key), planned, choices);
    return read_choice(v, r.path(key), choices);
}

models::Layer read_layer(const json& j, const std::string& path) {
    const Tables& t = tables();
    ObjectReader r(j, path, t.layer);
    models::Layer l;
    l.name = read_string(r.at("name"), r.path("name"));
    const auto params = static_cast<std::int64_t>(read_uint(r.at("params"), r.path("params"), 0, 10'000'000'000'000));
    l.tensors.push_back({l.name, params});
    if (r.has("fwd_flops")) l.fwd_flops = read_number(r.at("fwd_flops"), r.path("fwd_flops"), 0.0, 1e18);
    if (r.has("fwd_time")) l.fwd_time = read_time(r.at("fwd_time"), r.path("fwd_time"));
    if (r.has("bwd_time")) l.bwd_time = read_time(r.at("bwd_time"), r.path("bwd_time"));
    if (r.has("update_time")) l.update_time = read_time(r.at("update_time"), r.path("update_time"));
    r.finish();
    return l;
}

models::Workload builtin_or_throw(const json& j, const std::string& path) {
    const std::string name = read_string(j, path);
    auto w = models::builtin_workload(name);
    if (!w)
        throw ScenarioError(
            path, fmt::format("expected a built-in model ({}), got \"{}\"", list(tables().choices.models), name));
    return *w;
}

void read_model(const json& j, Scenario& s) {
    const Tables& t = tables();
    if (j.is_string()) {
        s.workload = builtin_or_throw(j, "$.model");
        s.model_name = s.workload.name;
        return;
    }
    ObjectReader r(j, "$.model", t.model);
    if (r.has("name") == r.has("layers"))
        throw ScenarioError("$.model", "expected exactly one of \"name\" (a built-in model) or \"layers\"");
    if (r.has("name")) {
        s.workload = builtin_or_throw(r.at("name"), r.path("name"));
        s.model_name = s.workload.name;
    } else {
        const json& layers = read_array(r.at("layers"), r.path("layers"), 1);
        s.workload.name = "custom";
        s.workload.input = "sample";
        for (std::size_t i = 0; i < layers.size(); ++i)
            s.workload.layers.push_back(read_layer(layers[i], fmt::format("{}[{}]", r.path("layers"), i)));
        s.model_name = "custom";
    }
    if (r.has("dtype")) {
        const std::string d = read_choice(r.at("dtype"), r.path("dtype"), t.choices.dtypes);
        s.bytes_per_param = d == "fp32" ? 4.0 : 2.0;
    }
    r.finish();
}

models::DeviceProfile profile_or_throw(const json& j, const std::string& path) {
    const std::string name = read_string(j, path);
    auto p = models::builtin_device(name);
    if (!p)
        throw ScenarioError(
            path, fmt::format("expected a built-in device ({}), got \"{}\"", list(tables().choices.devices), name));
    return *p;
}

models::DeviceSpec read_device(const json& j) {
    const Tables& t = tables();
    models::DeviceSpec d;
    if (j.is_string()) {
        const auto p = profile_or_throw(j, "$.device");
        return {p.name, p.fp32, models::kDefaultEfficiency, p.memory_bandwidth, std::nullopt};
    }
    reject_planned_keys(j, "$.device", "device");
    ObjectReader r(j, "$.device", t.device);
    const auto p = r.has("name") ? profile_or_throw(r.at("name"), r.path("name")) : *models::builtin_device("V100");
    const auto precision =
        r.has("precision") ? read_choice(r.at("precision"), r.path("precision"), t.choices.precisions) : "fp32";
    d.name = r.has("name") ? p.name : "custom";
    d.peak = p.peak(precision == "fp16"   ? models::Precision::fp16
                    : precision == "tf32" ? models::Precision::tf32
                                          : models::Precision::fp32);
    d.memory_bandwidth = p.memory_bandwidth;
    if (r.has("peak_flops")) d.peak = read_flop_rate(r.at("peak_flops"), r.path("peak_flops"));
    if (r.has("efficiency")) d.efficiency = read_positive(r.at("efficiency"), r.path("efficiency"), 1.0);
    if (r.has("memory_bandwidth"))
        d.memory_bandwidth = read_bandwidth(r.at("memory_bandwidth"), r.path("memory_bandwidth"));
    if (r.has("samples_per_s")) d.samples_per_s = read_positive(r.at("samples_per_s"), r.path("samples_per_s"), 1e12);
    r.finish();
    return d;
}

topo::ArchitectureSpec read_architecture(const json& j, std::uint32_t workers) {
    const Tables& t = tables();
    topo::ArchitectureSpec a;
    reject_planned_keys(j, "$.architecture", "architecture");
    ObjectReader r(j, "$.architecture", t.architecture);
    const std::string kind = read_choice(r.at("kind"), r.path("kind"), t.choices.arch_kinds);
    const std::vector<std::string> ps_keys{"servers", "placement", "aggregation_rate", "server_placement"};
    if (kind != "ps")
        for (const auto& k : ps_keys) r.forbid(k, fmt::format("applies to kind \"ps\" only, not \"{}\"", kind));
    if (kind != "allreduce") r.forbid("algorithm", fmt::format("applies to kind \"allreduce\" only, not \"{}\"", kind));
    if (kind != "gossip") r.forbid("graph", fmt::format("applies to kind \"gossip\" only, not \"{}\"", kind));
    if (kind == "allreduce") {
        a.kind = topo::ArchKind::allreduce;
        if (r.has("algorithm")) (void)read_kind(r, "algorithm", "algorithm", t.choices.algorithms);
    } else if (kind == "gossip") {
        a.kind = topo::ArchKind::gossip;
        if (r.has("graph")) (void)read_kind(r, "graph", "graph", t.choices.gossip_graphs);
    } else {
        a.kind = topo::ArchKind::ps;
        if (r.has("placement"))
            a.placement =
                read_choice(r.at("placement"), r.path("placement"), t.choices.server_placements) == "colocated"
                    ? topo::ServerPlacement::colocated
                    : topo::ServerPlacement::dedicated;
        a.servers = a.placement == topo::ServerPlacement::colocated ? workers : 1;
        if (r.has("servers")) a.servers = read_uint(r.at("servers"), r.path("servers"), 1, kMaxWorkers);
        if (a.placement == topo::ServerPlacement::colocated && a.servers > workers)
            throw ScenarioError(r.path("servers"),
                                fmt::format("colocated servers live on worker hosts: expected at most "
                                            "{} (the workers), got {}",
                                            workers, a.servers));
        if (r.has("aggregation_rate"))
            a.aggregation_rate = read_bandwidth(r.at("aggregation_rate"), r.path("aggregation_rate"));
        if (r.has("server_placement")) {
            const json& sp = read_array(r.at("server_placement"), r.path("server_placement"), 1);
            if (sp.size() != a.servers)
                throw ScenarioError(
                    r.path("server_placement"),
                    fmt::format("expected {} host names (one per server), got {}", a.servers, sp.size()));
            for (std::size_t i = 0; i < sp.size(); ++i)
                a.server_placement.push_back(read_string(sp[i], fmt::format("{}[{}]", r.path("server_placement"), i)));
        }
    }
    r.finish();
    return a;
}

void read_sync_compression_overlap(ObjectReader& root) {
    const Tables& t = tables();
    if (root.has("sync")) {
        reject_planned_kind(root.at("sync"), "$.sync", "kind", "sync", t.choices.sync_kinds);
        ObjectReader r(root.at("sync"), "$.sync", t.sync);
        (void)read_kind(r, "kind", "sync", t.choices.sync_kinds);
        r.finish();
    }
    if (root.has("compression")) {
        reject_planned_kind(root.at("compression"), "$.compression", "kind", "compression",
                            t.choices.compression_kinds);
        ObjectReader r(root.at("compression"), "$.compression", t.compression);
        (void)read_kind(r, "kind", "compression", t.choices.compression_kinds);
        r.finish();
    }
    if (root.has("overlap")) {
        reject_planned_keys(root.at("overlap"), "$.overlap", "overlap");
        ObjectReader r(root.at("overlap"), "$.overlap", t.overlap);
        for (const char* key : {"wfbp", "priority"})
            if (r.has(key) && read_bool(r.at(key), r.path(key)))
                throw ScenarioError(r.path(key), "overlap is not implemented in this version; expected false");
        if (r.has("fusion")) (void)read_kind(r, "fusion", "fusion", t.choices.fusions);
        r.finish();
    }
}

// Reads the network block. Star and two_tier sizes depend on how many hosts the
// job needs: `hosts_needed` workers plus `extra` dedicated servers.
void read_network(const json& j, Scenario& s, std::size_t extra) {
    const Tables& t = tables();
    reject_planned_kind(j, "$.network", "topology", "topology", t.choices.topologies);
    reject_planned_keys(j, "$.network", "network");
    ObjectReader r(j, "$.network", t.network);
    const json& topo_json = r.at("topology");
    reject_planned_value(topo_json, r.path("topology"), "topology", t.choices.topologies);
    const std::string topology = read_choice(topo_json, r.path("topology"), t.choices.topologies);
    const std::vector<std::string> all{"bandwidth",       "latency",       "hosts", "gpus_per_node", "num_nodes",
                                       "intra_bandwidth", "intra_latency", "nodes", "links"};
    std::vector<std::string> allowed;
    if (topology == "star") allowed = {"bandwidth", "latency", "hosts"};
    if (topology == "two_tier")
        allowed = {"bandwidth", "latency", "gpus_per_node", "num_nodes", "intra_bandwidth", "intra_latency"};
    if (topology == "custom") allowed = {"nodes", "links"};
    for (const auto& k : all) {
        if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
        r.forbid(k, fmt::format("not used by topology \"{}\" (it takes: {})", topology, list(allowed)));
    }
    auto need = [&](const char* key) -> const json& {
        if (!r.has(key)) throw ScenarioError(r.path(key), fmt::format("required by topology \"{}\"", topology));
        return r.at(key);
    };
    if (r.has("model"))
        s.network_model = read_choice(r.at("model"), r.path("model"), t.choices.network_models) == "analytic"
                              ? NetworkModel::analytic
                              : NetworkModel::flow;

    if (topology == "star") {
        topo::StarSpec star;
        star.bandwidth = read_bandwidth(need("bandwidth"), r.path("bandwidth"));
        star.latency = read_time(need("latency"), r.path("latency"));
        star.hosts = s.workers + extra;
        if (r.has("hosts")) star.hosts = read_uint(r.at("hosts"), r.path("hosts"), 1, 4 * kMaxWorkers);
        s.topology = star;
    } else if (topology == "two_tier") {
        topo::TwoTierSpec tt;
        tt.bandwidth = read_bandwidth(need("bandwidth"), r.path("bandwidth"));
        tt.latency = read_time(need("latency"), r.path("latency"));
        tt.gpus_per_node = read_uint(need("gpus_per_node"), r.path("gpus_per_node"), 1, 1024);
        tt.intra_bandwidth = read_bandwidth(need("intra_bandwidth"), r.path("intra_bandwidth"));
        tt.intra_latency = read_time(need("intra_latency"), r.path("intra_latency"));
        tt.nodes = (s.workers + tt.gpus_per_node - 1) / tt.gpus_per_node;
        if (r.has("num_nodes")) tt.nodes = read_uint(r.at("num_nodes"), r.path("num_nodes"), 1, kMaxWorkers);
        tt.extra_hosts = extra;
        s.topology = tt;
    } else {
        topo::CustomSpec c;
        const json& nodes = read_array(need("nodes"), r.path("nodes"), 1);
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            const std::string p = fmt::format("{}[{}]", r.path("nodes"), i);
            ObjectReader n(nodes[i], p, t.node);
            topo::CustomNode node{read_string(n.at("name"), n.path("name")),
                                  read_choice(n.at("kind"), n.path("kind"), t.choices.node_kinds) == "switch"
                                      ? topo::NodeKind::switch_
                                      : topo::NodeKind::host};
            for (const auto& prev : c.nodes)
                if (prev.name == node.name)
                    throw ScenarioError(n.path("name"), fmt::format("duplicate node name \"{}\"", node.name));
            n.finish();
            c.nodes.push_back(std::move(node));
        }
        const json& links = read_array(need("links"), r.path("links"), 1);
        for (std::size_t i = 0; i < links.size(); ++i) {
            const std::string p = fmt::format("{}[{}]", r.path("links"), i);
            ObjectReader l(links[i], p, t.link);
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
        s.topology = std::move(c);
    }
    r.finish();
}

double round_steps(const Scenario& s) {
    const double n = s.workers;
    switch (s.architecture.kind) {
        case topo::ArchKind::allreduce: return 2.0 * (n - 1) * n;
        case topo::ArchKind::ps:
            return 2.0 * n * static_cast<double>(s.architecture.servers) + static_cast<double>(s.architecture.servers);
        case topo::ArchKind::gossip: return 2.0 * n;
    }
    return 0.0;
}

// Places workers and servers on hosts, checking every name.
void resolve_placement(const json& root, Scenario& s) {
    std::vector<std::string> hosts;
    try {
        const topo::Fabric fabric = topo::build_fabric(s.topology);
        for (topo::Vertex v : fabric.hosts()) hosts.push_back(fabric.name(v));
    } catch (const std::invalid_argument& e) {
        throw ScenarioError("$.network", e.what());
    }
    auto check_host = [&](const std::string& name, const std::string& path) {
        if (std::find(hosts.begin(), hosts.end(), name) == hosts.end()) {
            const std::string range =
                hosts.size() <= 6 ? list(hosts) : fmt::format("\"{}\" .. \"{}\"", hosts.front(), hosts.back());
            throw ScenarioError(path, fmt::format("expected a host of the network ({}), got \"{}\"", range, name));
        }
    };
    if (root.contains("placement")) {
        const json& p = read_array(root.at("placement"), "$.placement", 1);
        if (p.size() != s.workers)
            throw ScenarioError("$.placement",
                                fmt::format("expected {} host names (one per worker), got {}", s.workers, p.size()));
        for (std::size_t i = 0; i < p.size(); ++i) {
            const std::string path = fmt::format("$.placement[{}]", i);
            s.placement.push_back(read_string(p[i], path));
            check_host(s.placement.back(), path);
        }
    } else {
        if (hosts.size() < s.workers)
            throw ScenarioError("$.network", fmt::format("the network has {} hosts but {} workers need one each "
                                                         "(or give a placement)",
                                                         hosts.size(), s.workers));
        s.placement.assign(hosts.begin(), hosts.begin() + s.workers);
    }
    const auto& a = s.architecture;
    if (a.kind != topo::ArchKind::ps) return;
    if (!a.server_placement.empty()) {
        for (std::size_t i = 0; i < a.server_placement.size(); ++i)
            check_host(a.server_placement[i], fmt::format("$.architecture.server_placement[{}]", i));
        s.server_placement = a.server_placement;
    } else if (a.placement == topo::ServerPlacement::colocated) {
        s.server_placement.assign(s.placement.begin(), s.placement.begin() + static_cast<std::ptrdiff_t>(a.servers));
    } else {
        // Dedicated: the first hosts no worker uses, in host order.
        for (const auto& h : hosts)
            if (s.server_placement.size() < a.servers &&
                std::find(s.placement.begin(), s.placement.end(), h) == s.placement.end())
                s.server_placement.push_back(h);
        if (s.server_placement.size() < a.servers)
            throw ScenarioError("$.architecture.servers",
                                fmt::format("{} dedicated servers need hosts no worker uses; the network has {} free",
                                            a.servers, s.server_placement.size()));
    }
}

}  // namespace

Scenario load_scenario(const json& j) {
    const Tables& t = tables();
    reject_planned_keys(j, "$", "scenario");
    ObjectReader root(j, "$", t.root);
    Scenario s;
    s.workers = static_cast<std::uint32_t>(read_uint(root.at("workers"), root.path("workers"), 1, kMaxWorkers));
    read_model(root.at("model"), s);
    s.batch_size =
        static_cast<std::uint32_t>(read_uint(root.at("batch_size"), root.path("batch_size"), 1, 100'000'000));
    if (root.has("iterations"))
        s.iterations =
            static_cast<std::uint32_t>(read_uint(root.at("iterations"), root.path("iterations"), 1, 1'000'000'000));
    if (root.has("seed")) s.seed = read_uint(root.at("seed"), root.path("seed"), 0, UINT64_MAX);
    if (root.has("description")) (void)read_string(root.at("description"), root.path("description"));
    s.device = read_device(root.at("device"));
    if (s.device.samples_per_s && s.workload.fwd_flops() <= 0.0 && s.workload.params() == 0)
        throw ScenarioError("$.device.samples_per_s",
                            "the model has no FLOPs and no parameters to scale to a throughput");
    if (root.has("architecture")) s.architecture = read_architecture(root.at("architecture"), s.workers);
    read_sync_compression_overlap(root);
    const bool default_servers = s.architecture.kind == topo::ArchKind::ps &&
                                 s.architecture.placement == topo::ServerPlacement::dedicated &&
                                 s.architecture.server_placement.empty();
    read_network(root.at("network"), s, default_servers ? s.architecture.servers : 0);
    // Refuse oversized runs before building anything large.
    const double steps = round_steps(s);
    if (steps > kMaxPlanSteps)
        throw ScenarioError("$.workers",
                            fmt::format("one synchronisation round would hold {:.3g} transfers (limit {:.0e}); "
                                        "use fewer workers or servers",
                                        steps, kMaxPlanSteps));
    const double events = s.iterations * (4.0 * steps + 4.0 * s.workers);
    if (s.network_model == NetworkModel::flow && events > kMaxEvents)
        throw ScenarioError("$.iterations",
                            fmt::format("the flow model would process about {:.3g} events (limit {:.0e}); "
                                        "use fewer iterations or \"network\": {{\"model\": \"analytic\"}}",
                                        events, kMaxEvents));
    if (root.has("placement")) (void)root.at("placement");
    resolve_placement(j, s);
    root.finish();

    return s;
}

void apply_override(json& j, const std::string& assignment) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
        throw ScenarioError("--set " + assignment, "expected PATH=VALUE, e.g. network.bandwidth=25Gbps");
    const std::string path = assignment.substr(0, eq);
    const std::string value = assignment.substr(eq + 1);
    std::vector<std::string> parts;
    std::stringstream ss(path);
    for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
    if (parts.empty() || path.back() == '.' ||
        std::any_of(parts.begin(), parts.end(), [](auto& p) { return p.empty(); }))
        throw ScenarioError("--set " + assignment, "expected a dotted key path such as network.bandwidth");
    json* node = &j;
    std::string where = "$";
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const std::string& key = parts[i];
        const bool last = i + 1 == parts.size();
        if (node->is_array()) {
            std::size_t idx = 0;
            auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), idx);
            if (ec != std::errc{} || ptr != key.data() + key.size() || idx >= node->size())
                throw ScenarioError(where,
                                    fmt::format("--set: expected an index below {}, got \"{}\"", node->size(), key));
            node = &(*node)[idx];
            where += fmt::format("[{}]", idx);
        } else {
            if (!node->is_object()) {
                if (!node->is_null()) throw ScenarioError(where, "--set: cannot set a key inside " + describe(*node));
                *node = json::object();
            }
            node = &(*node)[key];
            where += "." + key;
        }
        if (last) {
            try {
                *node = parse_strict(value);
            } catch (const ScenarioError&) {
                *node = value;
            }
        }
    }
}

Scenario load_scenario_file(const std::string& file, const std::vector<std::string>& overrides) {
    std::error_code ec;
    const auto type = std::filesystem::status(file, ec).type();
    if (type == std::filesystem::file_type::not_found) throw ScenarioError("$", "cannot read the file: no such file");
    if (type == std::filesystem::file_type::directory)
        throw ScenarioError("$", "cannot read the file: it is a directory");
    if (type != std::filesystem::file_type::regular)
        throw ScenarioError("$", "cannot read the file (not a regular file)");
    std::ifstream in(file, std::ios::binary);
    if (!in) throw ScenarioError("$", "cannot open the file for reading");
    std::ostringstream buf;
    buf << in.rdbuf();
    if (!in && !in.eof()) throw ScenarioError("$", "cannot read the file");
    json j = parse_strict(buf.str());
    for (const auto& o : overrides) apply_override(j, o);
    return load_scenario(j);
}

}  // namespace ddlsim::scenario
