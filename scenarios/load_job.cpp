// Reading the per-job keys: model, device, architecture, sync, compression, overlap.
#include <fmt/format.h>

#include <algorithm>

#include "scenarios/loader_detail.hpp"
#include "scenarios/schema_tables.hpp"

namespace ddlsim::scenario::detail {
namespace {

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

void read_model(const json& j, const std::string& path, JobSpec& s) {
    const Tables& t = tables();
    if (j.is_string()) {
        s.workload = builtin_or_throw(j, path);
        s.model_name = s.workload.name;
        return;
    }
    ObjectReader r(j, path, t.model);
    if (r.has("name") == r.has("layers"))
        throw ScenarioError(path, "expected exactly one of \"name\" (a built-in model) or \"layers\"");
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

models::DeviceSpec read_device(const json& j, const std::string& path) {
    const Tables& t = tables();
    models::DeviceSpec d;
    if (j.is_string()) {
        const auto p = profile_or_throw(j, path);
        return {p.name, p.fp32, models::kDefaultEfficiency, p.memory_bandwidth, std::nullopt};
    }
    reject_planned_keys(j, path, "device");
    ObjectReader r(j, path, t.device);
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

topo::ArchitectureSpec read_architecture(const json& j, const std::string& path, std::uint32_t workers) {
    const Tables& t = tables();
    topo::ArchitectureSpec a;
    reject_planned_keys(j, path, "architecture");
    ObjectReader r(j, path, t.architecture);
    const std::string kind = read_choice(r.at("kind"), r.path("kind"), t.choices.arch_kinds);
    // Keys that belong to one kind only.
    const std::vector<std::pair<std::string, std::vector<std::string>>> kind_keys{
        {"ps",
         {"servers", "placement", "aggregation_rate", "server_placement", "sharding", "split_size", "per_tensor",
          "style"}},
        {"allreduce", {"algorithm", "segment_size"}},
        {"gossip", {"graph"}},
    };
    for (const auto& [owner, keys] : kind_keys)
        if (owner != kind)
            for (const auto& k : keys) r.forbid(k, fmt::format("applies to kind \"{}\" only, not \"{}\"", owner, kind));
    auto index_of = [](const std::vector<std::string>& v, const std::string& x) {
        return static_cast<std::size_t>(std::find(v.begin(), v.end(), x) - v.begin());
    };
    if (kind == "allreduce") {
        a.kind = topo::ArchKind::allreduce;
        if (r.has("algorithm"))
            a.algorithm = static_cast<topo::AllreduceAlgorithm>(
                index_of(t.choices.algorithms, read_kind(r, "algorithm", "algorithm", t.choices.algorithms)));
        if (r.has("segment_size")) a.segment_size = read_bytes(r.at("segment_size"), r.path("segment_size"));
    } else if (kind == "gossip") {
        a.kind = topo::ArchKind::gossip;
        if (r.has("graph"))
            a.graph = static_cast<topo::GossipGraph>(
                index_of(t.choices.gossip_graphs, read_kind(r, "graph", "graph", t.choices.gossip_graphs)));
    } else {
        a.kind = topo::ArchKind::ps;
        if (r.has("style"))
            a.style = read_choice(r.at("style"), r.path("style"), t.choices.ps_styles) == "byteps"
                          ? topo::PsStyle::byteps
                          : topo::PsStyle::standard;
        if (r.has("placement"))
            a.placement =
                read_choice(r.at("placement"), r.path("placement"), t.choices.server_placements) == "colocated"
                    ? topo::ServerPlacement::colocated
                    : topo::ServerPlacement::dedicated;
        if (a.style == topo::PsStyle::byteps && a.placement == topo::ServerPlacement::colocated)
            throw ScenarioError(r.path("placement"),
                                "style \"byteps\" uses dedicated CPU summation servers (every "
                                "worker host also serves); expected \"dedicated\"");
        a.servers = a.placement == topo::ServerPlacement::colocated ? workers : 1;
        // BytePS may run with no CPU server at all (worker hosts only).
        if (r.has("servers"))
            a.servers =
                read_uint(r.at("servers"), r.path("servers"), a.style == topo::PsStyle::byteps ? 0 : 1, kMaxWorkers);
        if (a.placement == topo::ServerPlacement::colocated && a.servers > workers)
            throw ScenarioError(r.path("servers"),
                                fmt::format("colocated servers live on worker hosts: expected at most "
                                            "{} (the workers), got {}",
                                            workers, a.servers));
        if (r.has("aggregation_rate"))
            a.aggregation_rate = read_bandwidth(r.at("aggregation_rate"), r.path("aggregation_rate"));
        if (r.has("sharding"))
            a.sharding = static_cast<topo::PsSharding>(index_of(
                t.choices.ps_shardings, read_choice(r.at("sharding"), r.path("sharding"), t.choices.ps_shardings)));
        if (r.has("split_size")) {
            if (a.sharding == topo::PsSharding::bytes)
                throw ScenarioError(r.path("split_size"),
                                    "applies to sharding \"round_robin\" or \"balanced\" "
                                    "(\"bytes\" already cuts every tensor over all servers)");
            a.split_size = read_bytes(r.at("split_size"), r.path("split_size"));
        }
        if (r.has("per_tensor")) a.per_tensor = read_bool(r.at("per_tensor"), r.path("per_tensor"));
        if (r.has("server_placement")) {
            const json& sp = read_array(r.at("server_placement"), r.path("server_placement"), 0);
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

// Reads sync, compression and overlap; `architecture` is the job's architecture kind, against
// which the sync scheme is checked once, here (Tables::sync_allowed).
void read_sync_compression_overlap(ObjectReader& root, const std::string& architecture) {
    const Tables& t = tables();
    if (root.has("sync")) {
        reject_planned_kind(root.at("sync"), root.path("sync"), "kind", "sync", t.choices.sync_kinds);
        ObjectReader r(root.at("sync"), root.path("sync"), t.sync);
        const std::string sync = read_kind(r, "kind", "sync", t.choices.sync_kinds);
        const auto& allowed = t.choices.sync_allowed.at(architecture);
        if (std::find(allowed.begin(), allowed.end(), sync) == allowed.end())
            throw ScenarioError(r.path("kind"), fmt::format("\"{}\" does not apply to architecture \"{}\"; expected "
                                                            "one of {}",
                                                            sync, architecture, list(allowed)));
        r.finish();
    }
    if (root.has("compression")) {
        reject_planned_kind(root.at("compression"), root.path("compression"), "kind", "compression",
                            t.choices.compression_kinds);
        ObjectReader r(root.at("compression"), root.path("compression"), t.compression);
        (void)read_kind(r, "kind", "compression", t.choices.compression_kinds);
        r.finish();
    }
    if (root.has("overlap")) {
        reject_planned_keys(root.at("overlap"), root.path("overlap"), "overlap");
        ObjectReader r(root.at("overlap"), root.path("overlap"), t.overlap);
        for (const char* key : {"wfbp", "priority"})
            if (r.has(key) && read_bool(r.at(key), r.path(key)))
                throw ScenarioError(r.path(key), "overlap is not implemented in this version; expected false");
        if (r.has("fusion")) (void)read_kind(r, "fusion", "fusion", t.choices.fusions);
        r.finish();
    }
}

}  // namespace

JobSpec read_job(ObjectReader& r) {
    JobSpec s;
    auto need = [&](const char* key) -> const json& {
        if (!r.has(key))
            throw ScenarioError(r.path(key), "required key is missing: " +
                                                 tables().job.find(key)->schema.value("description", std::string(key)));
        return r.at(key);
    };
    s.workers = static_cast<std::uint32_t>(read_uint(need("workers"), r.path("workers"), 1, kMaxWorkers));
    read_model(need("model"), r.path("model"), s);
    s.batch_size = static_cast<std::uint32_t>(read_uint(need("batch_size"), r.path("batch_size"), 1, 100'000'000));
    s.device = read_device(need("device"), r.path("device"));
    if (s.device.samples_per_s && s.workload.fwd_flops() <= 0.0 && s.workload.params() == 0)
        throw ScenarioError(r.path("device") + ".samples_per_s",
                            "the model has no FLOPs and no parameters to scale to a throughput");
    if (r.has("architecture"))
        s.architecture = read_architecture(r.at("architecture"), r.path("architecture"), s.workers);
    const char* arch_names[] = {"allreduce", "ps", "gossip"};
    read_sync_compression_overlap(r, arch_names[static_cast<int>(s.architecture.kind)]);
    return s;
}

}  // namespace ddlsim::scenario::detail
