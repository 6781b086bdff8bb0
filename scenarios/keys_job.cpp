// The key tables of a training job (scenarios/scenario.hpp JobSpec) and of the scenario's root. Each key's
// reader is beside its entry; the blocks inside a job (architecture, sync, ...) have their own tables.
#include <fmt/format.h>

#include <algorithm>

#include "models/compression.hpp"
#include "models/compute.hpp"
#include "scenarios/key_tables.hpp"
#include "scenarios/loader_detail.hpp"
#include "scenarios/schema_tables.hpp"

namespace ddlsim::scenario {

using keys::key;
using keys::KeyTable;

namespace {

using J = JobSpec;

json device_union(std::string description) {
    return {{"description", std::move(description)},
            {"oneOf",
             json::array({enum_schema(device_names(), "built-in profile"), ref_schema("device", "device object")})}};
}

// Keys of workers that step in lockstep (gradient accumulation, SyncBatchNorm): the schemes whose descriptor says so.
void require_lockstep(const J& s, const std::string& path) {
    if (!models::sync_scheme(s.sync.kind).lockstep)
        throw ScenarioError(path, fmt::format("applies to sync {}, not \"{}\"",
                                              models::sync_kinds_where(&models::SyncSchemeInfo::lockstep),
                                              sim::enum_name(s.sync.kind)));
}

// The path of a sibling key: "$.jobs[0].sharding" -> "$.jobs[0].architecture".
std::string sibling(const std::string& path, std::string_view key) {
    return path.substr(0, path.rfind('.') + 1) + std::string(key);
}

// {"description", "oneOf": [the block, null]}: a block that null also stands for (its defaults).
json nullable_ref_schema(const std::string& name, const std::string& description) {
    json alternatives = json::array();
    alternatives.push_back(ref_schema(name, "the block"));
    json null_schema = json::object();
    null_schema["type"] = "null";
    null_schema["description"] = "absent";
    alternatives.push_back(std::move(null_schema));
    json out = json::object();
    out["description"] = description + "; null: the same as absent";
    out["oneOf"] = std::move(alternatives);
    return out;
}

// A block read by its own reader (with the job so far); absent, the block keeps its defaults.
// `nullable`: null is accepted and means the block's defaults (e.g. "sharding": null, no sharding).
template <typename Read, typename Echo>
keys::Key<J> block(std::string name, std::string description, Read read, Echo echo, bool nullable = false) {
    json schema = nullable ? nullable_ref_schema(name, description) : ref_schema(name, std::move(description));
    return keys::custom<J>(std::move(name), std::move(schema), std::move(read),
                           std::function<json(const J&)>(std::move(echo)));
}

json compression_json(const models::CompressionSpec& k) {
    // Every parameter the compressor's descriptor lists, at its resolved value.
    const models::CompressorInfo& info = models::compressor_info(k);
    json out{{"kind", k.kind}};
    for (const models::CompressorParam& p : info.params) {
        const std::string name(p.key);
        if (p.integer != nullptr) out[name] = k.*p.integer;
        if (p.number != nullptr) out[name] = k.*p.number;
        if (p.boolean != nullptr) out[name] = k.*p.boolean;
    }
    return out;
}

std::vector<keys::Key<J>> job_key_list() {
    return {
        key<J>("workers", &J::workers, "number of data-parallel workers (GPUs)", {1, detail::kMaxWorkers}).mandatory(),
        keys::custom<J>(
            "model",
            {{"description", "a built-in workload name or a model object"},
             {"oneOf", json::array({enum_schema(models::builtin_workload_names(), "built-in workload"),
                                    ref_schema("model", "model object")})}},
            [](J& s, const json& j, const std::string& path) { detail::read_model(j, path, s); },
            [](const J& s) { return model_keys().echo(s); })
            .mandatory(),
        key<J>("batch_size", &J::batch_size,
               "samples per worker per micro-batch (per iteration without gradient_accumulation)", {1, 100'000'000})
            .mandatory(),
        keys::custom<J>(
            "optimizer",
            enum_schema(models::optimizer_names(),
                        "optimizer whose update streams its state through memory (default: momentum for CNNs and "
                        "custom models, adamw for transformers)"),
            [](J& s, const json& j, const std::string& path) {
                s.optimizer = read_enum<models::Optimizer>(j, path);
                s.optimizer_source = models::Source::scenario;
            },
            [](const J& s) { return json(std::string(sim::enum_name(s.optimizer))); })
            .when_absent([](J& s) { s.optimizer = models::default_optimizer(s.workload.family); }),
        keys::custom<J>(
            "device", device_union("a built-in device profile name or a device object"),
            [](J& s, const json& j, const std::string& path, const keys::ReadContext& ctx) {
                s.device = detail::read_device(j, path, ctx.base_dir);
                if (s.device.samples_per_s && s.workload.fwd_flops() <= 0.0 && s.workload.params() == 0)
                    throw ScenarioError(path + ".samples_per_s",
                                        "the model has no FLOPs and no parameters to scale to a throughput");
            },
            [](const J& s) { return device_keys().echo(s.device); })
            .mandatory(),
        // Resolved with the network (loader.cpp): the hosts must exist first.
        keys::custom<J>("placement",
                        {{"type", "array"},
                         {"items", {{"type", "string"}}},
                         {"description", "the host each worker runs on (default: the next unused hosts in order)"}},
                        nullptr,
                        // Unplaced (a job built in code, not loaded): left to the default, which places it.
                        [](const J& s) { return s.placement.empty() ? json(nullptr) : json(s.placement); }),
        block(
            "architecture", "how gradients are aggregated (default: ring all-reduce)",
            [](J& s, const json& j, const std::string& path) {
                s.architecture = detail::read_architecture(j, path, s.workers);
            },
            [](const J& s) { return architecture_keys().echo(s.architecture); }),
        block(
            "sync", "synchronisation scheme (default: bsp)",
            [](J& s, const json& j, const std::string& path) { s.sync = detail::read_sync(j, path, s); },
            [](const J& s) { return sync_keys().echo(s.sync); }),
        block(
            "compression", "gradient compression (default: none)",
            [](J& s, const json& j, const std::string& path) { s.compression = detail::read_compression(j, path, s); },
            [](const J& s) { return compression_json(s.compression); }),
        block(
            "overlap", "compute/communication overlap (default: none)",
            [](J& s, const json& j, const std::string& path) { s.overlap = detail::read_overlap(j, path, s); },
            [](const J& s) { return overlap_keys().echo(s.overlap); }),
        block(
            "stragglers", "per-worker compute slowdowns (default: none)",
            [](J& s, const json& j, const std::string& path) {
                s.stragglers = detail::read_stragglers(j, path, s.workers);
            },
            [](const J& s) { return straggler_keys().echo(s.stragglers); })
            .echo_when([](const J& s) { return s.stragglers.any(); }),
        key<J>("gradient_accumulation", &J::gradient_accumulation,
               "micro-batches of batch_size per optimizer step, synchronised once (DDP no_sync); an iteration is then "
               "one step; bsp, local_sgd and diloco",
               {1, 1'000'000})
            .with_default(1)
            .and_then([](J& s, const std::string& path) {
                // The asynchronous schemes push after every micro-batch's own clock; accumulation is a synchronous
                // data-parallel technique (DDP no_sync), modelled for BSP and Local SGD.
                if (s.gradient_accumulation > 1) require_lockstep(s, path);
                // P3 / ByteScheduler start the next forward under the previous step's pulls; with accumulation that
                // forward is the first micro-batch's, which this model does not gate.
                if (s.gradient_accumulation > 1 && s.overlap.priority)
                    throw ScenarioError(path, "does not combine with overlap.priority (expected 1, or priority false)");
            }),
        keys::custom<J>(
            "activation_checkpointing",
            enum_schema(sim::enum_names<models::Checkpointing>(),
                        "full: keep only each transformer block's input (every layer's, for models without blocks) "
                        "and recompute its forward in backward; selective: keep everything but attention's core "
                        "(scores, softmax, dropout, weighted values, or the FlashAttention kernel) and recompute that "
                        "(Korthikanti et al. 2022, Megatron's recompute_granularity selective); none (default): keep "
                        "every activation"),
            [](J& s, const json& j, const std::string& path) {
                const auto c = read_enum<models::Checkpointing>(j, path);
                s.activation_checkpointing = c == models::Checkpointing::full;
                s.selective_recomputation = c == models::Checkpointing::selective;
                const auto core = [](const models::Layer& l) {
                    return std::any_of(l.parts.begin(), l.parts.end(),
                                       [](const models::LayerPart& p) { return p.attention_core; });
                };
                if (s.selective_recomputation && std::none_of(s.workload.layers.begin(), s.workload.layers.end(), core))
                    throw ScenarioError(path, "selective recomputation reruns attention's core, and the model has "
                                              "none (a built-in transformer or a \"transformer\" model); expected "
                                              "\"full\" or \"none\"");
            },
            [](const J& s) {
                return json(s.activation_checkpointing ? "full" : s.selective_recomputation ? "selective" : "none");
            })
            .with_default("none"),
        key<J>(
            "bn_group", &J::bn_group,
            "GPUs that synchronise their BatchNorm statistics (SyncBatchNorm; MLPerf's BN_GROUP), consecutive ranks in "
            "groups of this size: every BatchNorm layer then all-reduces its statistics forward and its gradient sums "
            "backward within the group, on the critical path, at NCCL's own small-message (LL) ring cost (default 1: "
            "each GPU its own)",
            {1, detail::kMaxWorkers})
            .with_default(1)
            .when([](const J& s) { return models::has_batchnorm(s.workload); },
                  "applies to models with BatchNorm layers (the built-in ResNets and inception_v3)")
            .and_then([](J& s, const std::string& path) {
                if (s.workers % s.bn_group != 0)
                    throw ScenarioError(
                        path, fmt::format("expected a divisor of workers ({}), got {}", s.workers, s.bn_group));
                // A group steps together through every BatchNorm: the synchronous schemes only.
                if (s.bn_group > 1) require_lockstep(s, path);
            }),
        block(
            "sharding",
            "sharded data parallelism: ZeRO stages 1-3, FSDP, hybrid sharding (default: none, every worker holds a "
            "replica)",
            [](J& s, const json& j, const std::string& path) {
                if (j.is_null()) return;  // null: no sharding, as when absent (a variant's JSON patch may say so)
                s.sharding = detail::read_sharding(j, path, s, sibling(path, "architecture"));
            },
            [](const J& s) { return sharding_keys().echo(s.sharding); }, true)
            .echo_when([](const J& s) { return s.sharding.any(); }),
        block(
            "parallelism",
            "model parallelism around data parallelism: pipeline stages (default: none, every worker holds the whole "
            "model)",
            [](J& s, const json& j, const std::string& path) { s.parallelism = detail::read_parallelism(j, path, s); },
            [](const J& s) { return parallelism_keys().echo(s.parallelism); })
            .echo_when([](const J& s) { return s.parallelism.any(); }),
        keys::custom<J>(
            "worker_devices",
            {{"type", "array"},
             {"items", device_union("a built-in profile or a device object")},
             {"description",
              "heterogeneous clusters: one device per worker (name or object), overriding `device` for compute; "
              "`device` stays the reference for scaling efficiency; a built-in part without its own precision takes "
              "the mixed precision (fp16, bf16, fp8) given to `device`"}},
            [](J& s, const json& j, const std::string& path, const keys::ReadContext& ctx) {
                const json& d = read_array(j, path, 1);
                if (d.size() != s.workers)
                    throw ScenarioError(
                        path, fmt::format("expected {} devices (one per worker), got {}", s.workers, d.size()));
                // A built-in part named without a precision of its own runs at the mixed precision the scenario gave
                // `device` (fp16, bf16, fp8): AMP is the job's choice, not a property of each part. FP32 and TF32 stay
                // each part's own default math (a V100's fp32 does not turn an A100's TF32 convolutions off), as do a
                // custom device and a calibration profile.
                const models::Precision p = s.device.precision;
                const bool scenario_precision =
                    s.device.precision_source == models::Source::scenario &&
                    (p == models::Precision::fp16 || p == models::Precision::bf16 || p == models::Precision::fp8);
                for (std::size_t i = 0; i < d.size(); ++i) {
                    json entry = d[i];
                    if (scenario_precision &&
                        (entry.is_string() || (entry.is_object() && entry.contains("name") &&
                                               !entry.contains("precision") && !entry.contains("profile")))) {
                        if (entry.is_string()) entry = json{{"name", entry}};
                        entry["precision"] = std::string(models::precision_name(s.device.precision));
                    }
                    s.worker_devices.push_back(
                        detail::read_device(entry, fmt::format("{}[{}]", path, i), ctx.base_dir));
                }
            },
            [](const J& s) {
                json out = json::array();
                for (const auto& d : s.worker_devices) out.push_back(device_keys().echo(d));
                return out;
            })
            .echo_when([](const J& s) { return !s.worker_devices.empty(); }),
        block(
            "training",
            "the whole run to a target: time to train, its parts and range, GPU-hours, cost, energy (default: none, "
            "per-iteration figures only)",
            [](J& s, const json& j, const std::string& path) { s.training = detail::read_training(j, path, s); },
            [](const J& s) { return s.training ? training_keys().echo(*s.training) : json(nullptr); }),
    };
}

}  // namespace

const KeyTable<JobSpec>& job_keys() {
    static const KeyTable<J> t{"job_keys", "the keys of one training job", job_key_list()};
    return t;
}

const KeyTable<JobSpec>& job_object_keys() {
    static const KeyTable<J> t = [] {
        KeyTable<J> out{"job",
                        "one training job sharing the network with the others",
                        {
                            // Default job0, job1, ... by position (loader.cpp), unique among the jobs.
                            key("name", &J::name, "job name in results (default job0, job1, ...)"),
                            keys::free_text<J>("free text (not interpreted)"),
                        }};
        for (auto& k : job_key_list()) out.keys.push_back(std::move(k));
        return out;
    }();
    return t;
}

const KeyTable<Scenario>& root_keys() {
    using S = Scenario;
    // The network, the jobs and the convergence block are read by the loader (scenarios/loader.cpp): the network
    // is sized by the jobs, and convergence belongs to the job.
    static const KeyTable<S> t{
        "scenario",
        "a ddlsim scenario: one training job (its keys at the root) or several sharing a network (jobs)",
        {
            keys::free_text<S>("free text describing the scenario (not interpreted)"),
            key("iterations", &S::iterations, "iterations to simulate, per job (default 10)", {1, 1'000'000'000})
                .with_default(10),
            keys::external<S>("network", ref_schema("network", "the physical network")).mandatory(),
            key("seed", &S::seed, "seed of every random choice, ECMP path hashing included (default 0)")
                .with_default(0),
            keys::external<S>("convergence", ref_schema("convergence",
                                                        "train a proxy task for real under the simulated schedule and "
                                                        "report time to accuracy (one job only)")),
            keys::external<S>(
                "jobs", {{"type", "array"},
                         {"items", ref_schema("job", "a job")},
                         {"minItems", 1},
                         {"description", "several training jobs sharing the network; per-job keys go inside each"}}),
        }};
    return t;
}

}  // namespace ddlsim::scenario
