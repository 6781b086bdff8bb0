// Time to train: the samples a model needs to reach its target at a global batch (published convergence data, a
// user's own table, or the gradient-noise-scale form), and the time, GPU-hours, cost and energy of the whole run
// built from one simulated step, the evaluations and the checkpoints (docs/MODEL.md, "Time to train").
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/units.hpp"

namespace ddlsim::topo {
class Fabric;
}

namespace ddlsim::models {

struct TrainingJob;

/// Samples to target at one global batch: the mean of the runs and the fastest and slowest run.
struct ConvergencePoint {
    double global_batch = 0.0;
    double samples = 0.0;
    double low = 0.0;
    double high = 0.0;
    std::uint32_t runs = 0;  ///< reference runs behind the point (0: a user's number)
};

/// A model's published convergence data (models/convergence_data.cpp, generated from MLPerf's reference
/// convergence points by tools/gen_convergence_data.py).
struct ConvergenceData {
    std::string model;                     ///< the built-in workload it belongs to
    std::string benchmark;                 ///< what was trained
    std::string target;                    ///< the quality the samples reach
    std::string optimizer;                 ///< the optimizer and hyperparameters the points assume
    std::string source;                    ///< repository, commit and file
    double epoch_samples = 0.0;            ///< samples in one epoch (0: the data counts samples only)
    std::vector<ConvergencePoint> points;  ///< by increasing batch
};

[[nodiscard]] const std::vector<ConvergenceData>& builtin_convergence();
[[nodiscard]] const ConvergenceData* find_convergence(std::string_view model);
/// The built-in models with convergence data, for messages.
[[nodiscard]] std::vector<std::string> convergence_models();

/// McCandlish et al. 2018, "An Empirical Model of Large-Batch Training" (arXiv 1812.06162), eqs. 2.11-2.12 with
/// E = B S: E(B) = E_min (1 + B / B_crit), the samples to a target at batch B.
struct NoiseScale {
    double critical_batch = 0.0;
    double min_samples = 0.0;
    [[nodiscard]] double samples(double batch) const { return min_samples * (1.0 + batch / critical_batch); }
};
/// Least squares of the points' means on E = E_min + (E_min / B_crit) B; nullopt when the slope is not positive.
[[nodiscard]] std::optional<NoiseScale> fit_noise_scale(const std::vector<ConvergencePoint>& points);

/// How `training.samples_to_target` was given.
enum class TargetForm { samples, builtin, table, noise_scale };

struct SamplesToTarget {
    TargetForm form = TargetForm::samples;
    double samples = 0.0;                 ///< form samples
    std::vector<ConvergencePoint> table;  ///< form table (the user's), by increasing batch
    NoiseScale noise;                     ///< form noise_scale
};

/// The samples to target at one global batch and how they were found.
struct SamplesEstimate {
    double samples = 0.0;
    double low = 0.0;
    double high = 0.0;
    bool extrapolated = false;  ///< beyond the data's largest batch
    std::string how;            ///< e.g. "interpolated between global batch 8192 and 13056"
};

/// Linear in the batch between the two points around it (what MLPerf's rcp_checker.py does between reference
/// points, _create_interp_rcp's np.interp); below the first point that point's samples (a smaller batch never
/// needs fewer samples in the noise-scale model); above the last point the noise-scale fit of the points,
/// shifted to pass through the last point, so the curve is continuous there.
[[nodiscard]] SamplesEstimate samples_at(const std::vector<ConvergencePoint>& points, double global_batch);

/// `training.evaluation`: forward-only passes over `samples` on every worker plus the metric all-reduce.
struct EvaluationSpec {
    double every_samples = 0.0;  ///< one of these two
    double every_epochs = 0.0;
    std::optional<double> first_after_samples;  ///< default: after the first interval
    double samples = 0.0;                       ///< the evaluation set
};

/// `training.checkpoint`: every so many steps or seconds, each rank writes its bytes at `write_bandwidth`.
struct CheckpointSpec {
    std::uint64_t every_steps = 0;  ///< one of these two
    sim::Time every;
    std::optional<sim::Bytes> bytes;  ///< default: the model states a rank holds (weights and optimizer)
    sim::Bandwidth write_bandwidth;
};

/// The `training` block of a job.
struct TrainingSpec {
    std::optional<SamplesToTarget> samples_to_target;
    double tokens_to_target = 0.0;  ///< language models trained to a token budget (instead of samples_to_target)
    double epoch_samples = 0.0;     ///< 0: the built-in data's epoch, or none
    std::optional<EvaluationSpec> evaluation;
    std::optional<CheckpointSpec> checkpoint;
    std::optional<double> price_per_gpu_hour;
    std::optional<double> statistical_efficiency;  ///< the user's factor for the job's scheme (overrides the table)
};

/// The samples-to-target multiplier of a scheme relative to BSP on the convergence data's own recipe.
struct StatisticalEfficiency {
    double factor = 1.0;
    std::string source;  ///< "bsp", "published: ...", "scenario", or "assumed: ..."
    bool assumed = false;
};
/// The factor of the job's synchronisation and compression (time_to_train.cpp cites each published one).
[[nodiscard]] StatisticalEfficiency statistical_efficiency(const TrainingJob& job);

/// One evaluation's metric all-reduce (two FP32 numbers) with the job's collective on its hosts: its launch
/// overhead and latency terms, contention-free.
[[nodiscard]] sim::Time metric_allreduce_time(const TrainingJob& job, const topo::Fabric& fabric);

/// What one simulated run gives time to train.
struct TrainingRun {
    std::string model;             ///< the built-in workload's name (for "builtin")
    double global_batch = 0.0;     ///< workers x batch x gradient accumulation
    double samples_per_s = 0.0;    ///< the simulated throughput
    std::uint32_t workers = 1;     ///< GPUs billed
    std::uint32_t batch_size = 1;  ///< per worker per micro-batch (evaluation batches)
    double forward_s = 0.0;        ///< one micro-batch's forward pass (with pipeline stages: one stage's)
    /// Pipeline stages: workers / stages model replicas split an evaluation, each micro-batch's forward flows
    /// through every stage, so a replica's passes take (its micro-batches + stages - 1) stage forwards.
    std::uint32_t pipeline_stages = 1;
    double metric_allreduce_s = 0.0;
    double rank_state_bytes = 0.0;  ///< weights and optimizer a rank holds (default checkpoint size)
    std::int64_t tokens_per_sample = 0;
    double board_power_w = 0.0;  ///< 0: unknown (no energy)
    StatisticalEfficiency efficiency;
};

struct TimeToTrain {
    SamplesEstimate samples;  ///< after the statistical-efficiency factor
    std::string samples_source;
    std::optional<NoiseScale> fitted;  ///< the data's noise-scale fit (builtin and tables)
    StatisticalEfficiency efficiency;
    double epoch_samples = 0.0;
    double epochs = 0.0;  ///< 0 without an epoch size
    double optimizer_steps = 0.0;
    double global_batch = 0.0;  ///< the run's: workers x batch x gradient accumulation
    double step_s = 0.0;
    double training_s = 0.0;
    double evaluations = 0.0;
    double evaluation_each_s = 0.0;
    double evaluation_s = 0.0;
    double checkpoints = 0.0;
    double checkpoint_each_s = 0.0;
    double checkpoint_s = 0.0;
    double total_s = 0.0;
    double total_low_s = 0.0;
    double total_high_s = 0.0;
    double gpu_hours = 0.0;
    std::optional<double> cost, cost_low, cost_high;
    std::optional<double> energy_kwh;
};

/// Bad training input found once the run is known: `key` names the training key at fault ("samples_to_target",
/// "evaluation", "checkpoint", or "" for the block).
class TrainingInputError : public std::invalid_argument {
public:
    TrainingInputError(std::string key, const std::string& what) : std::invalid_argument(what), key_(std::move(key)) {}
    [[nodiscard]] const std::string& key() const { return key_; }

private:
    std::string key_;
};

/// The longest run priced (about 31,700 years): beyond it the inputs are not a training run.
inline constexpr double kMaxTrainingSeconds = 1e12;

/// The whole run: optimizer steps of the simulated step time, evaluations and checkpoints; throws
/// TrainingInputError naming what is wrong (a built-in request for a model without data, a run longer than
/// kMaxTrainingSeconds or with more than 1e12 evaluations or checkpoints).
[[nodiscard]] TimeToTrain time_to_train(const TrainingSpec& spec, const TrainingRun& run);

}  // namespace ddlsim::models
