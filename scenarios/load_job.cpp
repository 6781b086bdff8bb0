// Reading the per-job keys: model, device, architecture, sync, compression, overlap.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include <charconv>

#include "models/compression.hpp"
#include "scenarios/key_tables.hpp"
#include "scenarios/loader_detail.hpp"
#include "scenarios/schema_tables.hpp"

namespace ddlsim::scenario::detail {
namespace {

models::Layer read_layer(const json& j, const std::string& path) {
    ObjectReader r(j, path, tables().layer);
    models::Layer l;
    layer_keys().read(r, l);
    if (!l.parts.empty()) l.parts.front().flops = l.fwd_flops;
    r.finish();
    return l;
}

models::Workload builtin_or_throw(const json& j, const std::string& path) {
    const std::string name = read_string(j, path);
    auto w = models::builtin_workload(name);
    if (!w)
        throw ScenarioError(
            path, fmt::format("expected a built-in model ({}), got \"{}\"{}", list(tables().choices.models), name,
                              did_you_mean(name, tables().choices.models)));
    return *w;
}

models::TransformerConfig read_transformer(const json& j, const std::string& path) {
    ObjectReader r(j, path, tables().transformer);
    models::TransformerConfig c;
    transformer_keys().read(r, c);
    if (c.hidden % c.heads != 0)
        throw ScenarioError(r.path("heads"),
                            fmt::format("expected a divisor of hidden ({}), got {}", c.hidden, c.heads));
    if (c.kv_heads > 0 && c.heads % c.kv_heads != 0)
        throw ScenarioError(r.path("kv_heads"),
                            fmt::format("expected a divisor of heads ({}), got {}", c.heads, c.kv_heads));
    r.finish();
    return c;
}

void read_model(const json& j, const std::string& path, JobSpec& s) {
    const Tables& t = tables();
    if (j.is_string()) {
        s.workload = builtin_or_throw(j, path);
        s.model_name = s.workload.name;
        return;
    }
    ObjectReader r(j, path, t.model);
    if ((r.has("name") ? 1 : 0) + (r.has("layers") ? 1 : 0) + (r.has("transformer") ? 1 : 0) != 1)
        throw ScenarioError(path, "expected exactly one of \"name\" (a built-in model), \"layers\" or \"transformer\"");
    if (r.has("transformer")) {
        s.transformer = read_transformer(r.at("transformer"), r.path("transformer"));
        try {  // read_transformer checked the shape; the builder's own checks are a backstop
            s.workload = models::transformer(*s.transformer);
        } catch (const std::invalid_argument& e) {
            throw ScenarioError(r.path("transformer"), e.what());
        }
        s.workload.name = "transformer";
        s.model_name = "custom";
        r.forbid("seq_len", "is the transformer's own key here (model.transformer.seq_len)");
    } else if (r.has("name")) {
        s.workload = builtin_or_throw(r.at("name"), r.path("name"));
        s.model_name = s.workload.name;
        if (r.has("seq_len")) {
            const std::int64_t max = models::builtin_max_seq_len(s.model_name);
            if (max == 0)
                throw ScenarioError(r.path("seq_len"),
                                    fmt::format("\"{}\" has no sequences; seq_len applies to the built-in "
                                                "transformers (BERT, GPT-2, GPT-3, Llama)",
                                                s.model_name));
            s.seq_len = static_cast<std::int64_t>(
                read_uint(r.at("seq_len"), r.path("seq_len"), 1, max > 0 ? static_cast<std::uint64_t>(max) : 1 << 20));
            s.workload = *models::builtin_workload(s.model_name, s.seq_len);
            s.workload.name = s.model_name;
        }
    } else {
        r.forbid("seq_len", "applies to a built-in model by name (custom layers carry their own FLOPs)");
        const json& layers = read_array(r.at("layers"), r.path("layers"), 1);
        s.workload.name = "custom";
        s.workload.family = models::ModelFamily::custom;
        s.workload.input = "sample";
        for (std::size_t i = 0; i < layers.size(); ++i)
            s.workload.layers.push_back(read_layer(layers[i], fmt::format("{}[{}]", r.path("layers"), i)));
        s.model_name = "custom";
    }
    if (r.has("dtype")) {
        s.dtype = read_choice(r.at("dtype"), r.path("dtype"), t.choices.dtypes);
        s.bytes_per_param = s.dtype == "fp32" ? 4.0 : 2.0;
    }
    r.finish();
}

models::DeviceProfile profile_or_throw(const json& j, const std::string& path) {
    const std::string name = read_string(j, path);
    auto p = models::builtin_device(name);
    if (!p)
        throw ScenarioError(
            path, fmt::format("expected a built-in device ({}), got \"{}\"{}", list(tables().choices.devices), name,
                              did_you_mean(name, tables().choices.devices)));
    return *p;
}

// A calibration profile's "device" member (written by `ddlsim calibrate`), merged under the
// keys the scenario's device object gives itself.
json merge_profile(const json& j, const std::string& path, const std::string& base_dir) {
    if (!j.is_object() || !j.contains("profile")) return j;
    std::string file;
    const json profile = read_profile_member(j.at("profile"), path + ".profile", base_dir, "device", file);
    json merged = profile;
    for (const auto& [k, v] : j.items())
        if (k != "profile") merged[k] = v;
    return merged;
}

// The device's precision and the fractions that go with it (models/device.hpp). A built-in profile brings its
// measured fractions; a custom device (no "name") keeps the V100 peaks and memory but, as before, the scalar
// efficiency and its bandwidth as given.
void set_precision(models::DeviceSpec& d, const models::DeviceProfile& p, bool builtin,
                   std::optional<models::Precision> given, const std::string& ppath) {
    const models::Precision precision = given.value_or(builtin ? p.default_precision : models::Precision::fp32);
    if (p.peak(precision).per_s() <= 0.0)
        throw ScenarioError(ppath, fmt::format("{} has no {} math (bf16 needs an A100, H100 or H200; fp8 an H100 or "
                                               "H200); expected one of fp32, tf32, fp16",
                                               p.name, models::precision_name(precision)));
    d.precision = precision;
    d.precision_source = given ? models::Source::scenario : models::Source::builtin_default;
    d.peak = p.peak(precision);
    d.vector_peak = p.fp32;
    d.memory_bandwidth = p.memory_bandwidth;
    if (builtin) {
        d.measured = p.efficiency(precision);
        d.fp32_measured = p.efficiency(models::Precision::fp32);
        d.sms = p.sms;
        // PyTorch's default on Ampere and later: TF32 convolutions, FP32 matmuls (models/device.cpp).
        d.tf32_convolutions_only = !given && precision == models::Precision::tf32;
        d.memory_capacity = p.memory_capacity.value();
    }
}

models::DeviceSpec read_device(const json& j_in, const std::string& path, const std::string& base_dir) {
    const Tables& t = tables();
    models::DeviceSpec d;
    if (j_in.is_string()) {
        const auto p = profile_or_throw(j_in, path);
        d.name = p.name;
        set_precision(d, p, true, std::nullopt, path + ".precision");
        return d;
    }
    reject_planned_keys(j_in, path, "device");
    const json j = merge_profile(j_in, path, base_dir);
    ObjectReader r(j, path, t.device);
    const auto p = r.has("name") ? profile_or_throw(r.at("name"), r.path("name")) : *models::builtin_device("V100");
    std::optional<models::Precision> precision;
    if (r.has("precision")) precision = read_enum<models::Precision>(r.at("precision"), r.path("precision"));
    d.name = r.has("name") ? p.name : j_in.contains("profile") ? "calibrated" : "custom";
    set_precision(d, p, r.has("name"), precision, r.path("precision"));
    if (r.has("peak_flops")) {
        d.peak = read_flop_rate(r.at("peak_flops"), r.path("peak_flops"));
        if (!r.has("name")) d.vector_peak = d.peak;
    }
    if (r.has("efficiency")) {
        d.efficiency = read_positive(r.at("efficiency"), r.path("efficiency"), 1.0);
        d.efficiency_source =
            j_in.contains("efficiency") ? models::Source::scenario : models::Source::calibration_profile;
    }
    if (r.has("memory_bandwidth"))
        d.memory_bandwidth = read_bandwidth(r.at("memory_bandwidth"), r.path("memory_bandwidth"));
    if (r.has("samples_per_s")) d.samples_per_s = read_positive(r.at("samples_per_s"), r.path("samples_per_s"), 1e12);
    if (r.has("memory")) {
        d.memory_capacity = read_bytes(r.at("memory"), r.path("memory")).value();
        if (!(*d.memory_capacity > 0.0)) throw ScenarioError(r.path("memory"), "expected a positive size");
    }
    if (r.has("overlap_slowdown"))
        d.overlap_slowdown = read_number(r.at("overlap_slowdown"), r.path("overlap_slowdown"), 0.0, 10.0);
    r.finish();
    return d;
}

topo::ArchitectureSpec read_architecture(const json& j, const std::string& path, std::uint32_t workers) {
    const Tables& t = tables();
    topo::ArchitectureSpec a;
    reject_planned_keys(j, path, "architecture");
    reject_planned_kind(j, path, "algorithm", "algorithm", t.choices.algorithms);
    reject_planned_kind(j, path, "graph", "graph", t.choices.gossip_graphs);
    ObjectReader r(j, path, t.architecture);
    architecture_keys().read(r, a);
    if (a.kind == topo::ArchKind::ps) {
        // Colocated BytePS (its usual deployment without spare CPU machines): a server process on every
        // worker machine and no CPU summation server, i.e. the worker-host shares alone (k = 0).
        const bool byteps_colocated =
            a.style == topo::PsStyle::byteps && a.placement == topo::ServerPlacement::colocated;
        if (byteps_colocated)
            r.forbid("servers",
                     "colocated BytePS runs one server on every worker machine; expected no \"servers\" "
                     "(or placement \"dedicated\" with CPU servers)");
        a.servers = a.placement == topo::ServerPlacement::colocated && !byteps_colocated ? workers : 1;
        if (byteps_colocated) a.servers = 0;
        // BytePS may run with no CPU server at all (worker hosts only).
        if (r.has("servers"))
            a.servers =
                read_uint(r.at("servers"), r.path("servers"), a.style == topo::PsStyle::byteps ? 0 : 1, kMaxWorkers);
        if (a.placement == topo::ServerPlacement::colocated && a.servers > workers)
            throw ScenarioError(r.path("servers"),
                                fmt::format("colocated servers live on worker hosts: expected at most "
                                            "{} (the workers), got {}",
                                            workers, a.servers));
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

models::SyncSpec read_sync(const json& j, const std::string& path, const JobSpec& job) {
    const Tables& t = tables();
    ObjectReader r(j, path, t.sync);
    models::SyncSpec s;
    s.kind = read_enum<models::SyncKind>(r.at("kind"), r.path("kind"));
    const std::string kind(sim::enum_name(s.kind));
    // The scheme's descriptor (models/sync_schemes.cpp): where it runs.
    const models::SyncSchemeInfo& info = models::sync_scheme(s.kind);
    const std::string arch(sim::enum_name(job.architecture.kind));
    if (std::find(info.architectures.begin(), info.architectures.end(), job.architecture.kind) ==
        info.architectures.end()) {
        std::vector<std::string> allowed;
        for (const models::SyncSchemeInfo& other : models::sync_schemes())
            if (std::find(other.architectures.begin(), other.architectures.end(), job.architecture.kind) !=
                other.architectures.end())
                allowed.emplace_back(sim::enum_name(other.kind));
        throw ScenarioError(
            r.path("kind"),
            fmt::format("\"{}\" does not apply to architecture \"{}\"; expected one of {}", kind, arch, list(allowed)));
    }
    if (!info.byteps && job.architecture.style == topo::PsStyle::byteps) {
        std::vector<std::string> synchronous;
        for (const models::SyncSchemeInfo& other : models::sync_schemes())
            if (other.byteps) synchronous.emplace_back(sim::enum_name(other.kind));
        throw ScenarioError(r.path("kind"), fmt::format("\"{}\" needs a standard parameter server; BytePS is "
                                                        "synchronous (expected {})",
                                                        kind, list(synchronous)));
    }
    sync_keys().read(r, s);
    // FedAvg samples among the job's workers: all of them by default, at most all of them.
    if (s.kind == models::SyncKind::fedavg) {
        if (!r.has("clients_per_round")) s.clients_per_round = job.workers;
        if (s.clients_per_round > job.workers)
            throw ScenarioError(r.path("clients_per_round"), fmt::format("expected an integer in 1 .. {}, got {}",
                                                                         job.workers, s.clients_per_round));
    }
    r.finish();
    return s;
}

models::CompressionSpec read_compression(const json& j, const std::string& path, const JobSpec& job) {
    const Tables& t = tables();
    ObjectReader r(j, path, t.compression);
    const std::string kind = read_choice(r.at("kind"), r.path("kind"), t.choices.compression_kinds);
    // Everything below comes from the compressor's descriptor (models/compression/<kind>.cpp).
    const models::CompressorInfo& info = *models::find_compressor(kind);
    models::CompressionSpec c = models::default_spec(info);
    for (const Field& f : t.compression.fields) {
        if (f.name == "kind" || info.param(f.name) != nullptr) continue;
        std::vector<std::string> owners;
        for (const models::CompressorInfo* other : models::compressors())
            if (other->param(f.name) != nullptr) owners.emplace_back(other->name);
        r.forbid(f.name, fmt::format("applies to kind {} only, not \"{}\"", list(owners), kind));
    }
    for (const models::CompressorParam& p : info.params) {
        if (!r.has(p.key)) continue;
        const std::string key(p.key);
        const json& v = r.at(key);
        switch (p.type) {
            case models::CompressorParam::Type::integer:
                c.*p.integer = static_cast<std::uint32_t>(
                    read_uint(v, r.path(key), static_cast<std::uint64_t>(p.min), static_cast<std::uint64_t>(p.max)));
                break;
            case models::CompressorParam::Type::number:
                c.*p.number = p.min_exclusive && p.min == 0.0 ? read_positive(v, r.path(key), p.max)
                                                              : read_number(v, r.path(key), p.min, p.max);
                break;
            case models::CompressorParam::Type::boolean: {
                const bool on = read_bool(v, r.path(key));
                if (!on && p.boolean == &models::CompressionSpec::error_feedback &&
                    info.error_feedback == models::ErrorFeedbackRule::forced)
                    throw ScenarioError(r.path(key), fmt::format("\"{}\" is defined with error feedback; expected "
                                                                 "true (or use signsgd)",
                                                                 kind));
                c.*p.boolean = on;
                break;
            }
        }
    }
    const std::string arch(sim::enum_name(job.architecture.kind));
    if (!info.architectures.empty() &&
        std::find(info.architectures.begin(), info.architectures.end(), arch) == info.architectures.end()) {
        std::vector<std::string> allowed(info.architectures.begin(), info.architectures.end());
        throw ScenarioError(r.path("kind"), fmt::format("\"{}\" needs architecture {}", kind, list(allowed)));
    }
    if (!info.byteps && job.architecture.style == topo::PsStyle::byteps)
        throw ScenarioError(r.path("kind"),
                            "sparse payloads cannot be summed by BytePS servers; expected a standard "
                            "parameter server or all-reduce");
    r.finish();
    try {
        (void)models::make_compressor(c);
    } catch (const std::invalid_argument& e) {
        throw ScenarioError(path, e.what());
    }
    return c;
}

// The sharding block (models/job.hpp ShardingSpec; the schedule is stated in models/trainer_sharded.cpp). Read after
// every key it depends on; the shard group's size is resolved with the placement (loader.cpp).
models::ShardingSpec read_sharding(const json& j, const std::string& path, const JobSpec& job, const json* arch,
                                   const std::string& arch_path) {
    const Tables& t = tables();
    ObjectReader r(j, path, t.sharding);
    models::ShardingSpec s;
    sharding_keys().read(r, s);
    const auto layers = std::max<std::size_t>(1, job.workload.layers.size());
    if (s.wrap > layers)
        throw ScenarioError(r.path("wrap"), fmt::format("expected an integer in 1 .. {}, got {}", layers, s.wrap));
    r.finish();
    if (job.sync.kind != models::SyncKind::bsp)
        throw ScenarioError(path, fmt::format("sharded data parallelism synchronises every step; expected sync "
                                              "\"bsp\", got \"{}\"",
                                              sim::enum_name(job.sync.kind)));
    if (job.architecture.kind != topo::ArchKind::allreduce)
        throw ScenarioError(path, fmt::format("sharded data parallelism runs collectives among the workers; expected "
                                              "architecture \"allreduce\", got \"{}\"",
                                              sim::enum_name(job.architecture.kind)));
    // Sharding's collectives are rings (NCCL's reduce-scatter and all-gather): another algorithm, or pipelining
    // segments, would be ignored, so they are refused ("ring", the resolved scenario's echo, is what runs).
    if (arch != nullptr && arch->is_object()) {
        if (arch->contains("algorithm") && job.architecture.algorithm != topo::AllreduceAlgorithm::ring)
            throw ScenarioError(arch_path + ".algorithm",
                                "sharding runs ring reduce-scatters and all-gathers (NCCL's algorithm for them); "
                                "expected \"ring\" or no algorithm with sharding");
        if (job.architecture.segment_size.value() > 0.0)
            throw ScenarioError(arch_path + ".segment_size",
                                "sharding's rings send whole chunks; expected no "
                                "segment_size with sharding");
    }
    if (job.compression.kind != "none")
        throw ScenarioError(path, fmt::format("sharding moves dense shards; expected no compression, got \"{}\"",
                                              job.compression.kind));
    if (job.overlap.priority)
        throw ScenarioError(path,
                            "does not combine with overlap.priority (ZeRO and FSDP schedule their own "
                            "collectives)");
    if (s.stage == 3 && job.overlap.any())
        throw ScenarioError(path,
                            "stage 3 communicates unit by unit (prefetch and wrap set its schedule); expected "
                            "no overlap.wfbp or overlap.fusion with it (overlap.compute_slowdown applies)");
    return s;
}

models::OverlapSpec read_overlap(const json& j, const std::string& path, const JobSpec& job) {
    const Tables& t = tables();
    ObjectReader r(j, path, t.overlap);
    models::OverlapSpec o;
    overlap_keys().read(r, o);
    if (o.priority && o.fusion != models::Fusion::none)
        throw ScenarioError(r.path("fusion"),
                            "priority scheduling sends its own partitions; expected \"none\" with "
                            "\"priority\": true");
    // MG-WFBP and priority scheduling are WFBP schedules; fusion buffers overlap unless "wfbp": false
    // says otherwise (then they are sent when backward ends: Horovod's and the survey's no-overlap
    // baseline). A key that is set is never overridden.
    if (o.fusion == models::Fusion::mgwfbp || o.priority) {
        if (r.has("wfbp") && !o.wfbp)
            throw ScenarioError(r.path("wfbp"), fmt::format("{} is a wait-free backprop schedule; expected true "
                                                            "(or no \"wfbp\") with it",
                                                            o.priority ? "priority scheduling" : "MG-WFBP"));
        o.wfbp = true;
    }
    if (o.fusion == models::Fusion::buffer && !r.has("wfbp")) o.wfbp = true;
    if (o.any() && job.sync.kind != models::SyncKind::bsp)
        throw ScenarioError(path,
                            "overlap applies to sync \"bsp\" (gradients of one iteration); expected no overlap "
                            "with this sync scheme");
    if (o.any() && job.architecture.kind == topo::ArchKind::gossip)
        throw ScenarioError(path,
                            "gossip exchanges whole models after the step; expected no overlap with "
                            "architecture \"gossip\"");
    r.finish();
    return o;
}

models::StragglerSpec read_stragglers(const json& j, const std::string& path, std::uint32_t workers) {
    const Tables& t = tables();
    ObjectReader r(j, path, t.stragglers);
    models::StragglerSpec s;
    straggler_keys().read(r, s);
    // The keys bounded by the job's workers.
    if (r.has("fixed")) {
        const json& f = r.at("fixed");
        if (!f.is_object())
            throw ScenarioError(r.path("fixed"), "expected an object mapping worker indices to slowdown factors");
        for (const auto& [key, value] : f.items()) {
            const std::string kp = r.path("fixed") + "." + key;
            std::uint64_t w = 0;
            const auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), w);
            if (ec != std::errc{} || ptr != key.data() + key.size() || w >= workers)
                throw ScenarioError(
                    kp, fmt::format("expected a worker index 0..{} as the key, got \"{}\"", workers - 1, key));
            s.fixed.emplace_back(static_cast<std::uint32_t>(w), read_positive(value, kp, 1e6));
        }
    }
    if (r.has("workers")) {
        const json& ws = read_array(r.at("workers"), r.path("workers"), 1);
        for (std::size_t i = 0; i < ws.size(); ++i)
            s.workers.push_back(static_cast<std::uint32_t>(
                read_uint(ws[i], fmt::format("{}[{}]", r.path("workers"), i), 0, workers - 1)));
    }
    if (s.distribution == models::StragglerDistribution::none && s.fixed.empty())
        throw ScenarioError(path, "expected \"fixed\" factors, a \"distribution\", or both");
    r.finish();
    return s;
}

}  // namespace

ConvergenceSpec read_convergence(const json& j, const std::string& path) {
    ObjectReader r(j, path, tables().convergence);
    ConvergenceSpec c;
    convergence_keys().read(r, c);
    r.finish();
    return c;
}

JobSpec read_job(ObjectReader& r, const std::string& base_dir) {
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
    s.optimizer = models::default_optimizer(s.workload.family);
    if (r.has("optimizer")) {
        s.optimizer = read_enum<models::Optimizer>(r.at("optimizer"), r.path("optimizer"));
        s.optimizer_source = models::Source::scenario;
    }
    s.device = read_device(need("device"), r.path("device"), base_dir);
    if (s.device.samples_per_s && s.workload.fwd_flops() <= 0.0 && s.workload.params() == 0)
        throw ScenarioError(r.path("device") + ".samples_per_s",
                            "the model has no FLOPs and no parameters to scale to a throughput");
    if (r.has("architecture"))
        s.architecture = read_architecture(r.at("architecture"), r.path("architecture"), s.workers);
    if (r.has("sync")) s.sync = read_sync(r.at("sync"), r.path("sync"), s);
    if (r.has("compression")) s.compression = read_compression(r.at("compression"), r.path("compression"), s);
    if (r.has("overlap")) s.overlap = read_overlap(r.at("overlap"), r.path("overlap"), s);
    if (r.has("stragglers")) s.stragglers = read_stragglers(r.at("stragglers"), r.path("stragglers"), s.workers);
    if (r.has("gradient_accumulation")) {
        const std::string p = r.path("gradient_accumulation");
        s.gradient_accumulation = static_cast<std::uint32_t>(read_uint(r.at("gradient_accumulation"), p, 1, 1'000'000));
        // The asynchronous schemes push after every micro-batch's own clock; accumulation is a synchronous
        // data-parallel technique (DDP no_sync), modelled for BSP and Local SGD.
        if (s.gradient_accumulation > 1 && s.sync.kind != models::SyncKind::bsp &&
            s.sync.kind != models::SyncKind::local_sgd)
            throw ScenarioError(
                p, fmt::format("applies to sync \"bsp\" or \"local_sgd\", not \"{}\"", sim::enum_name(s.sync.kind)));
        // P3 / ByteScheduler start the next forward under the previous step's pulls; with accumulation that forward
        // is the first micro-batch's, which this model does not gate.
        if (s.gradient_accumulation > 1 && s.overlap.priority)
            throw ScenarioError(p, "does not combine with overlap.priority (expected 1, or priority false)");
    }
    if (r.has("activation_checkpointing")) {
        s.activation_checkpointing =
            read_enum<models::Checkpointing>(r.at("activation_checkpointing"), r.path("activation_checkpointing")) ==
            models::Checkpointing::full;
    }
    if (r.has("sharding"))
        s.sharding = read_sharding(r.at("sharding"), r.path("sharding"), s,
                                   r.has("architecture") ? &r.at("architecture") : nullptr, r.path("architecture"));
    if (r.has("worker_devices")) {
        const json& d = read_array(r.at("worker_devices"), r.path("worker_devices"), 1);
        if (d.size() != s.workers)
            throw ScenarioError(r.path("worker_devices"),
                                fmt::format("expected {} devices (one per worker), got {}", s.workers, d.size()));
        for (std::size_t i = 0; i < d.size(); ++i)
            s.worker_devices.push_back(read_device(d[i], fmt::format("{}[{}]", r.path("worker_devices"), i), base_dir));
    }
    return s;
}

}  // namespace ddlsim::scenario::detail
