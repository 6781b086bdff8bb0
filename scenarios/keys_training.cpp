// The key tables of a job's `training` block (models/time_to_train.hpp TrainingSpec) and its evaluation and
// checkpoint blocks, and their readers. What a target needs from the job (a built-in model with convergence
// data, a sequence model for tokens) is checked where the block meets the job (keys_job.cpp).
#include <fmt/format.h>

#include <tuple>

#include "scenarios/key_tables.hpp"
#include "scenarios/loader_detail.hpp"
#include "scenarios/schema_tables.hpp"

namespace ddlsim::scenario {

using keys::key;
using keys::KeyTable;

namespace {

using models::CheckpointSpec;
using models::ConvergencePoint;
using models::EvaluationSpec;
using models::SamplesToTarget;
using models::TargetForm;
using models::TrainingSpec;

constexpr keys::Range kPositive{0.0, 1e18, true};

// An object of exactly two positive numbers, e.g. {"global_batch": B, "samples": S}.
json pair_schema(const char* a, const char* b) {
    const json positive{{"type", "number"}, {"exclusiveMinimum", 0}};
    return {{"type", "object"},
            {"properties", {{a, positive}, {b, positive}}},
            {"required", json::array({a, b})},
            {"additionalProperties", false}};
}

json samples_schema() {
    const json point = pair_schema("global_batch", "samples");
    const json noise = pair_schema("critical_batch", "min_samples");
    return {
        {"description", "samples to reach the target: a number; \"builtin\" (published convergence data: " +
                            detail::list(models::convergence_models()) +
                            "); a table [{\"global_batch\": B, \"samples\": S}, ...] by increasing batch; or "
                            "{\"critical_batch\": B_crit, \"min_samples\": E_min} for E(B) = E_min (1 + B / B_crit)"},
        {"oneOf", json::array({{{"type", "number"}, {"exclusiveMinimum", 0}},
                               {{"const", "builtin"}},
                               {{"type", "array"}, {"minItems", 1}, {"items", point}},
                               noise})}};
}

double positive(const json& j, const std::string& path) {
    return read_number_above(j, path, 0.0, 1e18);
}

// The two positive numbers of a pair_schema object at `path`.
std::pair<double, double> read_pair(const json& j, const std::string& path, const char* a, const char* b) {
    if (!j.is_object()) throw ScenarioError(path, fmt::format("expected {{\"{}\": ..., \"{}\": ...}}", a, b));
    for (const auto& [k, v] : j.items())
        if (k != a && k != b)
            throw ScenarioError(path + "." + k, fmt::format("unknown key (expected {} and {})", a, b));
    for (const char* k : {a, b})
        if (!j.contains(k)) throw ScenarioError(path + "." + k, "required key is missing");
    return {positive(j.at(a), path + "." + a), positive(j.at(b), path + "." + b)};
}

SamplesToTarget read_samples(const json& j, const std::string& path) {
    SamplesToTarget t;
    if (j.is_number()) {
        t.form = TargetForm::samples;
        t.samples = positive(j, path);
    } else if (j.is_string()) {
        if (j.get<std::string>() != "builtin")
            throw ScenarioError(path, fmt::format("expected a number of samples, \"builtin\", a table or a "
                                                  "noise-scale object, got \"{}\"",
                                                  j.get<std::string>()));
        t.form = TargetForm::builtin;
    } else if (j.is_array()) {
        t.form = TargetForm::table;
        const json& a = read_array(j, path, 1);
        for (std::size_t i = 0; i < a.size(); ++i) {
            const std::string p = fmt::format("{}[{}]", path, i);
            ConvergencePoint pt;
            std::tie(pt.global_batch, pt.samples) = read_pair(a[i], p, "global_batch", "samples");
            pt.low = pt.high = pt.samples;
            if (!t.table.empty() && !(pt.global_batch > t.table.back().global_batch))
                throw ScenarioError(p + ".global_batch",
                                    fmt::format("expected batches in increasing order (above {:g}), got {:g}",
                                                t.table.back().global_batch, pt.global_batch));
            t.table.push_back(pt);
        }
    } else if (j.is_object()) {
        t.form = TargetForm::noise_scale;
        std::tie(t.noise.critical_batch, t.noise.min_samples) = read_pair(j, path, "critical_batch", "min_samples");
    } else {
        throw ScenarioError(
            path, "expected a number of samples, \"builtin\", a table or a noise-scale object, got " + describe(j));
    }
    return t;
}

json samples_echo(const SamplesToTarget& t) {
    switch (t.form) {
        case TargetForm::samples: return t.samples;
        case TargetForm::builtin: return "builtin";
        case TargetForm::table: {
            json out = json::array();
            for (const auto& p : t.table) out.push_back({{"global_batch", p.global_batch}, {"samples", p.samples}});
            return out;
        }
        case TargetForm::noise_scale:
            return {{"critical_batch", t.noise.critical_batch}, {"min_samples", t.noise.min_samples}};
    }
    return nullptr;
}

// An optional block inside `training`, read and echoed by its own table.
template <typename B>
keys::Key<TrainingSpec> sub_block(std::string name, std::string description, const KeyTable<B>& (*table)(),
                                  ObjectSchema Tables::*schema, std::optional<B> TrainingSpec::*m) {
    json ref = ref_schema(name, std::move(description));
    return keys::custom<TrainingSpec>(
        std::move(name), std::move(ref),
        [table, schema, m](TrainingSpec& s, const json& j, const std::string& path) {
            ObjectReader r(j, path, tables().*schema);
            B b;
            table().read(r, b);
            s.*m = b;
        },
        [table, m](const TrainingSpec& s) { return s.*m ? table().echo(*(s.*m)) : json(nullptr); });
}

}  // namespace

const KeyTable<EvaluationSpec>& evaluation_keys() {
    using E = EvaluationSpec;
    const auto no_samples = [](const E& e) { return e.every_samples <= 0.0; };
    static const KeyTable<E> t{
        "evaluation",
        "evaluation during training: forward-only passes over the evaluation set on every worker plus the metric "
        "all-reduce (default: none)",
        {
            key("every_samples", &E::every_samples, "evaluate every this many training samples", kPositive)
                .echo_when([](const E& e) { return e.every_samples > 0.0; }),
            key("every_epochs", &E::every_epochs, "evaluate every this many epochs (training.epoch_samples)", kPositive)
                .when(no_samples, "give every_samples or every_epochs, not both")
                .required_when(no_samples, "expected every_samples or every_epochs"),
            key("first_after_samples", &E::first_after_samples,
                "training samples before the first evaluation (default: one interval)", {0.0, 1e18}),
            key("samples", &E::samples, "samples in the evaluation set (e.g. ImageNet's 50000)", kPositive).mandatory(),
        }};
    return t;
}

const KeyTable<CheckpointSpec>& checkpoint_keys() {
    using C = CheckpointSpec;
    const auto no_steps = [](const C& c) { return c.every_steps == 0; };
    static const KeyTable<C> t{
        "checkpoint",
        "checkpoints during training: each rank writes its state at write_bandwidth, the job waiting (default: "
        "none)",
        {
            key("every_steps", &C::every_steps, "write every this many optimizer steps", {1, 1e15})
                .echo_when([](const C& c) { return c.every_steps > 0; }),
            key("every_seconds", &C::every, "write every this much training time", {1e-3, 9e6})
                .when(no_steps, "give every_steps or every_seconds, not both")
                .required_when(no_steps, "expected every_steps or every_seconds"),
            key("bytes", &C::bytes,
                "bytes each rank writes (default: the weights and optimizer state it holds, as the memory "
                "estimate counts them)"),
            key("write_bandwidth", &C::write_bandwidth, "each rank's write bandwidth to checkpoint storage", {1, 1e18})
                .mandatory(),
        }};
    return t;
}

const KeyTable<TrainingSpec>& training_keys() {
    using T = TrainingSpec;
    static const KeyTable<T> t{
        "training",
        "the whole run to a target: time to train, its parts and range, GPU-hours, cost and energy "
        "(docs/MODEL.md, \"Time to train\")",
        {
            keys::custom<T>(
                "samples_to_target", samples_schema(),
                [](T& s, const json& j, const std::string& path) { s.samples_to_target = read_samples(j, path); },
                [](const T& s) { return s.samples_to_target ? samples_echo(*s.samples_to_target) : json(nullptr); }),
            key("tokens_to_target", &T::tokens_to_target,
                "tokens a language model trains on (a token budget; no accuracy claim), instead of "
                "samples_to_target",
                kPositive)
                .when([](const T& s) { return !s.samples_to_target; },
                      "a target is given twice: expected samples_to_target or tokens_to_target, not both")
                .required_when([](const T& s) { return !s.samples_to_target; },
                               "expected samples_to_target or tokens_to_target")
                .echo_when([](const T& s) { return s.tokens_to_target > 0.0; }),
            key("epoch_samples", &T::epoch_samples,
                "samples in one epoch (default: the built-in data's, e.g. ImageNet's 1281167)", kPositive)
                .echo_when([](const T& s) { return s.epoch_samples > 0.0; }),
            sub_block("evaluation", "evaluation during training (default: none)", &evaluation_keys, &Tables::evaluation,
                      &T::evaluation),
            sub_block("checkpoint", "checkpoints during training (default: none)", &checkpoint_keys,
                      &Tables::checkpoint, &T::checkpoint),
            key("price_per_gpu_hour", &T::price_per_gpu_hour, "price of one GPU-hour, for the cost (any currency)",
                {0.0, 1e9}),
            key("statistical_efficiency", &T::statistical_efficiency,
                "samples-to-target multiplier of this job's scheme relative to BSP (default: the published "
                "factor where one exists, else 1 and the result says it was assumed)",
                {0.0, 1e6, true}),
        }};
    return t;
}

models::TrainingSpec detail::read_training(const json& j, const std::string& path, const JobSpec& job) {
    ObjectReader r(j, path, tables().training);
    TrainingSpec s;
    training_keys().read(r, s);
    const auto& t = s.samples_to_target;
    if (t && t->form == TargetForm::builtin && !models::find_convergence(job.model_name))
        throw ScenarioError(r.path("samples_to_target"),
                            fmt::format("no built-in convergence data for model \"{}\"; expected a model with data "
                                        "({}), a number, a table or a noise-scale object",
                                        job.model_name, detail::list(models::convergence_models())));
    if (s.tokens_to_target > 0.0 && job.workload.tokens_per_sample <= 0)
        throw ScenarioError(r.path("tokens_to_target"),
                            fmt::format("model \"{}\" has no sequence length; expected a sequence model (a "
                                        "transformer or a built-in language model) or samples_to_target",
                                        job.model_name));
    const bool builtin_epoch =
        t && t->form == TargetForm::builtin && models::find_convergence(job.model_name)->epoch_samples > 0.0;
    if (s.evaluation && s.evaluation->every_epochs > 0.0 && s.epoch_samples <= 0.0 && !builtin_epoch)
        throw ScenarioError(r.path("evaluation") + ".every_epochs",
                            "needs training.epoch_samples (no built-in epoch for this target); expected "
                            "every_samples or an epoch_samples");
    return s;
}

}  // namespace ddlsim::scenario
