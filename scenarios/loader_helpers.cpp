// Helpers shared by the loader's files.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "scenarios/loader_detail.hpp"
#include "scenarios/schema_tables.hpp"
#include "topologies/node_type.hpp"

namespace ddlsim::scenario::detail {

std::string list(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "\"" : ", \"") + s + "\"";
    return out;
}

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

// read_number's closed-interval message would wrongly offer 0.
double read_positive(const json& j, const std::string& path, double max) {
    return read_number_above(j, path, 0.0, max);
}

void reject_planned_kind(const json& j, const std::string& path, const std::string& key, const std::string& what,
                         const std::vector<std::string>& implemented) {
    if (j.is_object() && j.contains(key)) reject_planned_value(j.at(key), path + "." + key, what, implemented);
}

json read_profile_member(const json& name, const std::string& path, const std::string& base_dir,
                         const std::string& member, std::string& file) {
    const std::string given = read_string(name, path);
    const std::filesystem::path fp = std::filesystem::path(given).is_absolute()
                                         ? std::filesystem::path(given)
                                         : std::filesystem::path(base_dir) / given;
    file = fp.string();
    json profile;
    try {
        profile = read_json_file(file);
    } catch (const ScenarioError& e) {
        throw ScenarioError(path, fmt::format("{}: {}", file, e.what()));
    }
    if (!profile.is_object() || !profile.contains(member) || !profile.at(member).is_object())
        throw ScenarioError(path, fmt::format("{}: expected a calibration profile with a \"{}\" object (as "
                                              "`ddlsim calibrate` writes)",
                                              file, member));
    return profile.at(member);
}

namespace {

// nvls: every node of the job reduces in its NVSwitch and holds the same number of workers, at least two.
void check_nvls(const JobSpec& job, const topo::Fabric& fabric, const std::string& path) {
    std::vector<std::string> presets;
    for (const topo::NodeType& t : topo::node_presets())
        if (t.switch_reduction > 0.0) presets.push_back(t.preset);
    std::map<std::uint32_t, std::size_t> per_node;
    for (const std::string& h : job.placement) {
        const std::uint32_t node = fabric.node_of(*fabric.find(h));
        if (fabric.reducing_switch(node) == nullptr)
            throw ScenarioError(path, fmt::format("\"nvls\" reduces inside the node's NVSwitch; worker host \"{}\" "
                                                  "is on a node whose switch cannot reduce (expected a node "
                                                  "preset with NVLink SHARP: {})",
                                                  h, list(presets)));
        ++per_node[node];
    }
    const std::size_t g = per_node.begin()->second;
    if (g < 2 || std::any_of(per_node.begin(), per_node.end(), [g](const auto& kv) { return kv.second != g; }))
        throw ScenarioError(path, fmt::format("\"nvls\" needs the same number of workers, at least two, on every "
                                              "node it uses; the {} workers sit {} on {} nodes",
                                              job.workers, g < 2 ? "one per node" : "unevenly", per_node.size()));
}

// collnet: the fabric's switches between nodes reduce; the workers sit on at least two nodes of equal size, and the
// j-th worker of every node reaches the same SHARP switch (its rail's).
void check_collnet(const JobSpec& job, const topo::Fabric& fabric, const std::string& path) {
    if (fabric.sharp_efficiency() <= 0.0)
        throw ScenarioError(path,
                            "\"collnet\" reduces in the switches between nodes (InfiniBand SHARP); expected "
                            "network.sharp true on a two_tier or rail_optimized fabric");
    std::map<std::uint32_t, std::vector<topo::Vertex>> per_node;
    std::vector<std::uint32_t> order;
    for (const std::string& h : job.placement) {
        const topo::Vertex v = *fabric.find(h);
        auto& hosts = per_node[fabric.node_of(v)];
        if (hosts.empty()) order.push_back(fabric.node_of(v));
        hosts.push_back(v);
    }
    const std::size_t g = per_node.begin()->second.size();
    if (per_node.size() < 2 ||
        std::any_of(per_node.begin(), per_node.end(), [g](const auto& kv) { return kv.second.size() != g; }))
        throw ScenarioError(path, fmt::format("\"collnet\" needs the same number of workers on at least two nodes; "
                                              "the {} workers sit on {} node{}{}",
                                              job.workers, per_node.size(), per_node.size() == 1 ? "" : "s",
                                              per_node.size() < 2 ? "" : ", unevenly"));
    const std::vector<topo::Vertex>& first = per_node[order.front()];
    for (std::uint32_t node : order)
        for (std::size_t j = 0; j < g; ++j)
            if (fabric.sharp_switch(per_node[node][j]) != fabric.sharp_switch(first[j]))
                throw ScenarioError(path, fmt::format("\"collnet\" sums rail by rail: worker {} of each node must "
                                                      "reach the same SHARP switch, but \"{}\" and \"{}\" reach "
                                                      "different rail leaves (place the same GPUs on every node)",
                                                      j, fabric.name(first[j]), fabric.name(per_node[node][j])));
}

// ps switch aggregation: one SHARP switch that every worker and server reaches sums dense gradients of a synchronous
// scheme.
void check_switch_aggregation(const JobSpec& job, const topo::Fabric& fabric, const std::string& path) {
    if (fabric.sharp_efficiency() <= 0.0)
        throw ScenarioError(path,
                            "switch aggregation sums in a switch that can reduce; expected network.sharp true on a "
                            "star, a one-site two_tier or a rail_optimized fabric");
    if (!models::sync_scheme(job.sync.kind).summed_rounds)
        throw ScenarioError(path, fmt::format("switch aggregation sums every worker's push of one round; expected "
                                              "sync {}, got \"{}\"",
                                              models::sync_kinds_where(&models::SyncSchemeInfo::summed_rounds),
                                              sim::enum_name(job.sync.kind)));
    if (job.compression.kind != "none")
        throw ScenarioError(path, fmt::format("switch aggregation sums dense gradients; expected compression "
                                              "\"none\", got \"{}\"",
                                              job.compression.kind));
    const std::optional<topo::Vertex> first = fabric.sharp_switch(*fabric.find(job.placement.front()));
    std::vector<std::string> hosts = job.placement;
    hosts.insert(hosts.end(), job.server_placement.begin(), job.server_placement.end());
    for (const std::string& h : hosts)
        if (fabric.sharp_switch(*fabric.find(h)) != first)
            throw ScenarioError(path, fmt::format("switch aggregation needs one switch that sums for every worker "
                                                  "and server, but \"{}\" and \"{}\" reach different SHARP "
                                                  "switches (rail leaves)",
                                                  job.placement.front(), h));
}

}  // namespace

void check_in_network(const Scenario& s, const topo::Fabric& fabric, const std::vector<std::string>& paths) {
    for (std::size_t i = 0; i < s.jobs.size(); ++i) {
        const JobSpec& job = s.jobs[i];
        if (job.architecture.kind == topo::ArchKind::ps && job.architecture.switch_aggregation)
            check_switch_aggregation(job, fabric, paths[i] + "architecture.switch_aggregation");
        if (job.architecture.kind != topo::ArchKind::allreduce) continue;
        const std::string path = paths[i] + "architecture.algorithm";
        if (job.architecture.algorithm == topo::AllreduceAlgorithm::nvls) check_nvls(job, fabric, path);
        if (job.architecture.algorithm == topo::AllreduceAlgorithm::collnet) check_collnet(job, fabric, path);
    }
}

}  // namespace ddlsim::scenario::detail
