// Time to train of a simulated job (models/time_to_train.hpp): what the run gives it, and its result keys.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/device.hpp"
#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"

namespace ddlsim::scenario {

std::optional<models::TimeToTrain> job_time_to_train(const JobSpec& spec, const models::TrainingJob& job,
                                                     const topo::Fabric& fabric, const models::JobResult& r,
                                                     const std::string& path) {
    if (!spec.training) return std::nullopt;
    models::TrainingRun run;
    run.model = spec.model_name;
    // The samples of one step: each model replica's micro-batches (workers / pipeline replicas).
    run.global_batch =
        static_cast<double>(spec.parallelism.data(spec.workers)) * spec.batch_size * spec.gradient_accumulation;
    run.samples_per_s = r.throughput_samples_per_s;
    run.workers = spec.workers;  // the GPUs billed (dedicated parameter servers are hosts, not GPUs)
    run.batch_size = spec.batch_size;
    // The forward's compute: an evaluation runs BatchNorm on its running statistics, with no SyncBatchNorm
    // all-reduce (bn_group; those are the training step's communication, not its compute).
    run.forward_s = r.forward_time_s;
    run.pipeline_stages = spec.parallelism.pipeline;
    run.metric_allreduce_s = models::metric_allreduce_time(job, fabric).seconds();
    const models::MemoryEstimate mem = job_memory(spec);
    run.rank_state_bytes = mem.weights + mem.optimizer;
    run.tokens_per_sample = spec.workload.tokens_per_sample;
    if (const auto p = models::builtin_device(spec.device.name)) run.board_power_w = p->board_power_w;
    run.efficiency = models::statistical_efficiency(job);
    try {
        return models::time_to_train(*spec.training, run);
    } catch (const models::TrainingInputError& e) {
        throw ScenarioError(e.key().empty() ? path : path + "." + e.key(), e.what());
    }
}

nlohmann::json time_to_train_json(const models::TimeToTrain& t) {
    // The headline figures sit beside the job's per-iteration keys; how they were found goes in "time_to_train".
    nlohmann::json details{
        {"global_batch", t.global_batch},
        {"samples_to_target_low", t.samples.low},
        {"samples_to_target_high", t.samples.high},
        {"samples_source", t.samples_source},
        {"samples_how", t.samples.how},
        {"extrapolated", t.samples.extrapolated},
        {"statistical_efficiency",
         {{"factor", t.efficiency.factor}, {"source", t.efficiency.source}, {"assumed", t.efficiency.assumed}}},
        {"step_time_s", t.step_s},
        {"parts_s", {{"training", t.training_s}, {"evaluation", t.evaluation_s}, {"checkpoints", t.checkpoint_s}}},
        {"evaluations", t.evaluations},
        {"evaluation_each_s", t.evaluation_each_s},
        {"checkpoints", t.checkpoints},
        {"checkpoint_each_s", t.checkpoint_each_s},
    };
    nlohmann::json out{
        {"samples_to_target", t.samples.samples}, {"optimizer_steps", t.optimizer_steps},
        {"time_to_train_s", t.total_s},           {"time_to_train_low_s", t.total_low_s},
        {"time_to_train_high_s", t.total_high_s}, {"gpu_hours", t.gpu_hours},
    };
    if (t.epoch_samples > 0.0) {
        details["epoch_samples"] = t.epoch_samples;
        out["epochs_to_target"] = t.epochs;
    }
    if (t.cost) {
        out["cost"] = *t.cost;
        details["cost_low"] = *t.cost_low;
        details["cost_high"] = *t.cost_high;
    }
    if (t.energy_kwh) out["energy_kwh"] = *t.energy_kwh;
    if (t.fitted)
        details["noise_scale_fit"] = {{"critical_batch", t.fitted->critical_batch},
                                      {"min_samples", t.fitted->min_samples}};
    out["time_to_train"] = std::move(details);
    return out;
}

}  // namespace ddlsim::scenario
