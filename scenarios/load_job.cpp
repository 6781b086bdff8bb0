// Reading the blocks of a job that have rules across keys and blocks: architecture, sync, compression, sharding,
// overlap, stragglers (the job's own keys, the model and the device are read through their tables:
// keys_job.cpp, keys_model.cpp, keys_device.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include <charconv>

#include "models/compression.hpp"
#include "models/program/pipeline.hpp"
#include "scenarios/key_tables.hpp"
#include "scenarios/loader_detail.hpp"
#include "scenarios/schema_tables.hpp"

namespace ddlsim::scenario::detail {

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

namespace {

// DiLoCo's islands are equal groups of consecutive workers; the fragments split the model's layers and the period
// evenly; a fragment's outer step lands before the next fragment's starts.
void check_diloco(const ObjectReader& r, const models::SyncSpec& s, const JobSpec& job) {
    if (job.workers % s.islands != 0)
        throw ScenarioError(r.path("islands"),
                            fmt::format("expected a divisor of the job's {} workers (islands of equal size: workers / "
                                        "islands consecutive workers each), got {}",
                                        job.workers, s.islands));
    const std::size_t layers = std::max<std::size_t>(1, job.workload.layers.size());
    if (s.fragments > layers || s.period % s.fragments != 0)
        throw ScenarioError(r.path("fragments"),
                            fmt::format("expected a divisor of period = {} of at most the model's {} layers (a "
                                        "fragment's outer step every period / fragments steps), got {}",
                                        s.period, layers, s.fragments));
    const std::uint32_t spacing = s.period / s.fragments;
    if (s.overlap_steps >= spacing)
        throw ScenarioError(r.path("overlap_steps"),
                            fmt::format("expected an integer in 0 .. {} (fewer than the period / fragments = {} steps "
                                        "between two outer steps), got {}",
                                        spacing - 1, spacing, s.overlap_steps));
    if (job.architecture.algorithm == topo::AllreduceAlgorithm::nvls ||
        job.architecture.algorithm == topo::AllreduceAlgorithm::collnet)
        throw ScenarioError(r.path("kind"),
                            fmt::format("DiLoCo's islands run their own collectives, which do not use {}; "
                                        "expected another architecture.algorithm with \"diloco\"",
                                        sim::enum_name(job.architecture.algorithm)));
}

}  // namespace

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
    if (!info.summed_rounds && job.architecture.style == topo::PsStyle::byteps) {
        std::vector<std::string> synchronous;
        for (const models::SyncSchemeInfo& other : models::sync_schemes())
            if (other.summed_rounds) synchronous.emplace_back(sim::enum_name(other.kind));
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
    if (s.kind == models::SyncKind::diloco) check_diloco(r, s, job);
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
    if (kind != "none" && job.sync.kind == models::SyncKind::diloco)
        throw ScenarioError(r.path("kind"),
                            "DiLoCo's islands all-reduce dense gradients (compressed islands are "
                            "not modelled); expected \"none\" with sync \"diloco\"");
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
void check_pipeline_keys(const JobSpec& job, const std::string& prefix) {
    if (job.parallelism.pipeline > 1) return;
    for (std::size_t l = 0; l < job.workload.layers.size(); ++l)
        if (job.workload.layers[l].activation_bytes)
            throw ScenarioError(fmt::format("{}model.layers[{}].activation_bytes", prefix, l),
                                "applies with pipeline stages only (\"parallelism\": {\"pipeline\": p}): it is what "
                                "a stage boundary sends");
}

models::ParallelismSpec read_parallelism(const json& j, const std::string& path, const JobSpec& job) {
    ObjectReader r(j, path, tables().parallelism);
    models::ParallelismSpec p;
    parallelism_keys().read(r, p);
    r.finish();
    if (!p.any()) return p;
    const std::string at = r.path(p.pipeline > 1  ? "pipeline"
                                  : p.tensor > 1  ? "tensor"
                                  : p.context > 1 ? "context"
                                                  : "expert");
    if (job.workers % p.pipeline != 0)
        throw ScenarioError(r.path("pipeline"), fmt::format("expected a divisor of the job's {} workers (each stage "
                                                            "holds workers / pipeline ranks), got {}",
                                                            job.workers, p.pipeline));
    if (p.tensor > 1) {
        const std::string tat = r.path("tensor");
        if (job.workers / p.pipeline % p.tensor != 0)
            throw ScenarioError(tat, fmt::format("expected a divisor of the {} ranks of each stage (workers / "
                                                 "pipeline), got {}",
                                                 job.workers / p.pipeline, p.tensor));
        const models::Workload& w = job.workload;
        if (w.hidden <= 0 || w.heads <= 0 || !w.has_blocks())
            throw ScenarioError(tat,
                                "tensor parallelism splits a transformer's attention heads and MLP; expected a "
                                "built-in transformer or a \"transformer\" model, got a model without that shape");
        if (w.heads % p.tensor != 0 || w.kv_heads % p.tensor != 0)
            throw ScenarioError(tat, fmt::format("expected a divisor of the model's {} attention heads and {} "
                                                 "key/value heads (each tensor rank holds as many), got {}",
                                                 w.heads, w.kv_heads, p.tensor));
    }
    if (p.context > 1) {
        const std::string cat = r.path("context");
        const models::Workload& w = job.workload;
        const std::uint32_t stage = job.workers / p.pipeline;
        if (stage % (p.tensor * p.context) != 0)
            throw ScenarioError(cat, fmt::format("expected a divisor of the {} ranks of each stage over tensor ranks "
                                                 "(workers / (pipeline x tensor)), got {}",
                                                 stage / std::max(1U, p.tensor), p.context));
        if (w.kv_dim <= 0 || !w.has_blocks())
            throw ScenarioError(cat,
                                "context parallelism splits a transformer's sequence and passes its keys and values "
                                "around a ring; expected a built-in transformer or a \"transformer\" model");
        if (w.tokens_per_sample % (2 * p.context) != 0)
            throw ScenarioError(cat, fmt::format("expected 2 x context to divide the sequence of {} tokens (each rank "
                                                 "holds two chunks of seq / (2 x context), Megatron's load balance), "
                                                 "got {}",
                                                 w.tokens_per_sample, p.context));
        const std::int64_t split = static_cast<std::int64_t>(p.tensor) * p.context;
        const std::int64_t kv_heads = w.kv_heads > 0 ? w.kv_heads : w.heads;
        if (p.context_algorithm == models::ContextAlgorithm::all_to_all &&
            (w.heads % split != 0 || kv_heads % split != 0))
            throw ScenarioError(r.path("context_algorithm"),
                                fmt::format("the all-to-all splits the attention heads over tensor x context = {} "
                                            "ranks; expected it to divide the {} heads and {} key/value heads "
                                            "(\"ring\" has no such rule)",
                                            split, w.heads, kv_heads));
    }
    if (p.expert > 1) {
        const std::string eat = r.path("expert");
        const models::Workload& w = job.workload;
        if (w.experts <= 0)
            throw ScenarioError(eat,
                                "expected 1: expert parallelism splits a mixture-of-experts model's routed "
                                "experts, and the model has none (a transformer with \"experts\", or "
                                "mixtral_8x7b, deepseek_v3, qwen3_30b_a3b)");
        const std::uint32_t d = p.data(job.workers);
        if (job.workers % (p.pipeline * p.tensor * p.context) == 0 && d % p.expert != 0)
            throw ScenarioError(eat, fmt::format("expected a divisor of the {} data-parallel ranks (workers / "
                                                 "(pipeline x tensor x context)), got {}",
                                                 d, p.expert));
        if (w.experts % p.expert != 0)
            throw ScenarioError(eat, fmt::format("expected a divisor of the model's {} routed experts (each rank "
                                                 "holds as many), got {}",
                                                 w.experts, p.expert));
        const double most = static_cast<double>(w.experts) / static_cast<double>(w.experts_per_token);
        if (p.expert_imbalance > most)
            throw ScenarioError(r.path("expert_imbalance"),
                                fmt::format("expected at most experts / experts_per_token = {:g} (a token chooses an "
                                            "expert once), got {:g}",
                                            most, p.expert_imbalance));
    }
    if (p.schedule == models::PipelineSchedule::interleaved_1f1b) {
        if (!p.virtual_stages)
            throw ScenarioError(r.path("virtual_stages"),
                                "expected an integer of at least 2 with schedule \"interleaved_1f1b\" (the model "
                                "chunks each stage holds)");
        if (job.gradient_accumulation % p.pipeline != 0)
            throw ScenarioError(path.substr(0, path.rfind('.')) + ".gradient_accumulation",
                                fmt::format("expected a multiple of the {} pipeline stages with schedule "
                                            "\"interleaved_1f1b\" (Megatron interleaves micro-batches in groups of "
                                            "pipeline), got {}",
                                            p.pipeline, job.gradient_accumulation));
    }
    if (p.pipeline > 1) try {
            (void)models::program::pipeline_stages(job.workload, p);
        } catch (const std::invalid_argument& e) {
            throw ScenarioError(r.path(p.first_stage_layers  ? "first_stage_layers"
                                       : p.last_stage_layers ? "last_stage_layers"
                                       : p.virtual_stages    ? "virtual_stages"
                                                             : "pipeline"),
                                e.what());
        }
    // What the model-parallel programs model today: synchronous data parallelism inside each stage, its gradients
    // all-reduced once the pipeline drains or overlapped with the last micro-batch's backward (wfbp), or Megatron's
    // distributed optimizer (sharding stage 1). Everything else is refused rather than ignored.
    auto refuse = [&](const std::string& what) {
        throw ScenarioError(at, "model parallelism is modelled with " + what);
    };
    if (job.sync.kind != models::SyncKind::bsp) refuse("sync \"bsp\" only");
    if (job.architecture.kind != topo::ArchKind::allreduce) refuse("architecture \"allreduce\" only");
    if (job.architecture.algorithm != topo::AllreduceAlgorithm::automatic &&
        job.architecture.algorithm != topo::AllreduceAlgorithm::ring)
        refuse("each stage's gradients all-reduced by a ring (architecture.algorithm \"ring\" or \"auto\")");
    const models::ShardingSpec& sh = job.sharding;
    if (sh.stage > 1 || sh.group != models::ShardGroup::all || sh.quantized_weights || sh.quantized_gradients ||
        sh.hpz_partition_size > 1)
        refuse("sharding stage 1 over the data-parallel ranks only (Megatron's distributed optimizer)");
    if (job.compression.kind != "none") refuse("no gradient compression yet");
    if (job.overlap.fusion == models::Fusion::mgwfbp || job.overlap.priority)
        refuse("overlap wfbp only (Megatron's overlapped gradient reduction, per layer or in fusion buffers)");
    if (job.bn_group > 1) refuse("no SyncBatchNorm (bn_group) yet");
    if (p.overlap_param_gather && (sh.stage != 1 || !job.overlap.wfbp || job.overlap.fusion != models::Fusion::buffer))
        throw ScenarioError(r.path("overlap_param_gather"),
                            "Megatron overlaps the distributed optimizer's parameter all-gathers in the gradient "
                            "buckets (it asserts --overlap-grad-reduce); expected sharding stage 1 and overlap "
                            "{\"fusion\": \"buffer\"} with it");
    return p;
}

models::ShardingSpec read_sharding(const json& j, const std::string& path, const JobSpec& job,
                                   const std::string& arch_path) {
    const Tables& t = tables();
    ObjectReader r(j, path, t.sharding);
    models::ShardingSpec s;
    sharding_keys().read(r, s);
    const auto layers = std::max<std::size_t>(1, job.workload.layers.size());
    if (s.wrap > layers)
        throw ScenarioError(r.path("wrap"), fmt::format("expected an integer in 1 .. {}, got {}", layers, s.wrap));
    if (job.workers % s.hpz_partition_size != 0)
        throw ScenarioError(r.path("hpz_partition_size"),
                            fmt::format("expected a divisor of the job's {} workers (the secondary partitions are "
                                        "groups of that many consecutive workers), got {}",
                                        job.workers, s.hpz_partition_size));
    r.finish();
    // DiLoCo's islands may shard inside themselves (models/diloco.hpp), over every worker of the island.
    if (job.sync.kind == models::SyncKind::diloco && s.group != models::ShardGroup::all)
        throw ScenarioError(r.path("group"),
                            "DiLoCo shards inside each island; expected group \"all\" (the "
                            "island's workers) with sync \"diloco\"");
    if (job.sync.kind == models::SyncKind::diloco &&
        (s.quantized_weights || s.quantized_gradients || s.hpz_partition_size > 1))
        throw ScenarioError(path,
                            "ZeRO++ is not modelled inside DiLoCo's islands; expected no quantized_weights, "
                            "quantized_gradients or hpz_partition_size with sync \"diloco\"");
    if (!models::sync_scheme(job.sync.kind).step_gradients)
        throw ScenarioError(path, fmt::format("sharded data parallelism synchronises every step; expected sync {}, "
                                              "got \"{}\"",
                                              models::sync_kinds_where(&models::SyncSchemeInfo::step_gradients),
                                              sim::enum_name(job.sync.kind)));
    if (job.architecture.kind != topo::ArchKind::allreduce)
        throw ScenarioError(path, fmt::format("sharded data parallelism runs collectives among the workers; expected "
                                              "architecture \"allreduce\", got \"{}\"",
                                              sim::enum_name(job.architecture.kind)));
    // Sharding's collectives are rings (NCCL's reduce-scatter and all-gather): another algorithm, or pipelining
    // segments, would be ignored, so they are refused ("ring", the resolved scenario's echo, is what runs).
    if (job.architecture.algorithm != topo::AllreduceAlgorithm::ring)
        throw ScenarioError(arch_path + ".algorithm",
                            "sharding runs ring reduce-scatters and all-gathers (NCCL's algorithm for them); "
                            "expected \"ring\" or no algorithm with sharding");
    if (job.architecture.segment_size.value() > 0.0)
        throw ScenarioError(arch_path + ".segment_size",
                            "sharding's rings send whole chunks; expected no "
                            "segment_size with sharding");
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
    if (o.any() && !models::sync_scheme(job.sync.kind).step_gradients)
        throw ScenarioError(path, fmt::format("overlap applies to sync {} (gradients of one iteration); expected no "
                                              "overlap with this sync scheme",
                                              models::sync_kinds_where(&models::SyncSchemeInfo::step_gradients)));
    if (o.priority && job.sync.kind == models::SyncKind::diloco)
        throw ScenarioError(r.path("priority"),
                            "DiLoCo's outer steps gate whole steps; expected no priority with "
                            "sync \"diloco\"");
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
            // Canonical decimal only: "01" and "1" would name one worker twice, one of the factors silently lost.
            if (ec != std::errc{} || ptr != key.data() + key.size() || w >= workers || std::to_string(w) != key)
                throw ScenarioError(
                    kp,
                    fmt::format("expected a worker index 0..{} written without leading zeros as the key, got \"{}\"",
                                workers - 1, key));
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

ConvergenceSpec read_convergence(const json& j, const std::string& path) {
    ObjectReader r(j, path, tables().convergence);
    ConvergenceSpec c;
    convergence_keys().read(r, c);
    r.finish();
    return c;
}

}  // namespace ddlsim::scenario::detail
