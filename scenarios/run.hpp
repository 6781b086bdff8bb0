// Runs a loaded scenario and turns its result into the docs/CONTRACT.md §3 result JSON.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/job.hpp"
#include "models/memory.hpp"
#include "scenarios/scenario.hpp"
#include "sim/trace.hpp"

namespace ddlsim::scenario {

/// One directed link's load over the run.
struct LinkLoad {
    std::string name;  ///< "a->b"
    double bytes = 0.0;
    double utilization = 0.0;  ///< bytes / (capacity x simulated time)
};

/// The compute model's assumptions for a job's `device`: precision, optimizer, the fractions used and where each
/// came from, and the effective TFLOPS per part kind. The result's "compute_model" is its to_json(); the text
/// summary prints the struct itself.
struct ComputeAssumptions {
    std::string precision;
    bool fp32_matmuls = false;  ///< PyTorch's Ampere default: TF32 convolutions, FP32 matmuls
    std::string precision_source;
    std::string optimizer;
    std::string optimizer_source;
    double peak_tflops = 0.0;
    double memory_bandwidth_gbps = 0.0;
    double matmul_efficiency = 0.0;
    double memory_efficiency = 0.0;
    std::string efficiency_source;
    std::string software;  ///< device.software: how the framework runs the kernels
    struct Kind {
        std::string name;
        double seconds = 0.0;
        double effective_tflops = 0.0;
    };
    bool profiled = false;  ///< false when the compute profile cannot be built (run_scenario reports it)
    std::vector<Kind> kinds;
    double effective_tflops = 0.0;

    [[nodiscard]] nlohmann::json to_json() const;
};

/// What one run of a scenario produced.
struct RunResult {
    std::vector<models::JobResult> jobs;  ///< in scenario order
    std::uint64_t events = 0;
    std::uint64_t transfers = 0;          ///< flow model: transfers simulated (each class's counted m times)
    std::uint32_t flow_class_period = 0;  ///< flow model: the shift simulated per flow class (0: none)
    std::string flow_class_reason;        ///< flow model, period 0: why no shift was a symmetry (FlowRun)
    double simulated_time_s = 0.0;
    double wall_time_s = 0.0;
    std::vector<LinkLoad> busiest_links;  ///< flow model: the most loaded directed links, most loaded first
    double mean_link_utilization = 0.0;   ///< over links that carried traffic
    /// Per job (scenario order): the whole run to its target, for jobs with a `training` block.
    std::vector<std::optional<models::TimeToTrain>> time_to_train;
    /// Per job (scenario order): the compute model's assumptions, read from the profile the run built (the result's
    /// "compute_model" and the summary print these: the profile is not built again).
    std::vector<ComputeAssumptions> compute;
};

/// Builds the fabric and the jobs and simulates them; throws ScenarioError for
/// inconsistent combinations found only once the pieces meet.
/// With `trace`, also records a Chrome-trace timeline of the run there.
/// `progress` (when given) is called during flow runs with the events so far and the simulated seconds.
[[nodiscard]] RunResult run_scenario(const Scenario& s, sim::Trace* trace = nullptr,
                                     const std::function<void(std::uint64_t, double)>& progress = {});

/// The result JSON: for one job the docs/CONTRACT.md §3 keys at the top level; with a "jobs"
/// list, one such object per job under "jobs". Plus events, wall time and links.
[[nodiscard]] nlohmann::json result_json(const Scenario& s, const RunResult& r);

/// The transports in use, e.g. "tcp (auto): 94.1 % goodput, 40 us per message, 8.4 us per collective, 2 x
/// 19 Gbit/s streams per transfer"; with two_tier also the intra-node one.
/// `with_source`: say after each whether the scenario gave it or `auto` picked it.
[[nodiscard]] std::string describe_transports(const Scenario& s, bool with_source = true);

/// A job's whole run to its target (its `training` block; nullopt without one) from its simulated result;
/// ScenarioError at `path` (the block) when the target cannot be resolved.
[[nodiscard]] std::optional<models::TimeToTrain> job_time_to_train(const JobSpec& spec, const models::TrainingJob& job,
                                                                   const topo::Fabric& fabric,
                                                                   const models::JobResult& r, const std::string& path);
/// The result keys of a time to train (docs/CONTRACT.md §3, "time_to_train").
[[nodiscard]] nlohmann::json time_to_train_json(const models::TimeToTrain& t);

/// Memory per GPU of a job (models/memory.hpp) on its reference device.
[[nodiscard]] models::MemoryEstimate job_memory(const JobSpec& j);

/// A one-line description of a job's architecture, e.g. "ps (4 dedicated servers)".
[[nodiscard]] std::string describe_architecture(const JobSpec& j);
/// Sharded data parallelism, in words (describe_architecture's, for a job with sharding).
[[nodiscard]] std::string describe_sharding(const JobSpec& j);
/// "ssp (staleness 2)", "topk (density 0.01, error feedback)", "wfbp + buckets (25 MB)".
[[nodiscard]] std::string describe_sync(const JobSpec& j);
[[nodiscard]] std::string describe_compression(const JobSpec& j);
[[nodiscard]] std::string describe_overlap(const JobSpec& j);
/// Model parallelism, e.g. "tensor 8 (sequence parallel) x pipeline 4 x data 8 (1f1b)" (a job with some).
[[nodiscard]] std::string describe_parallelism(const JobSpec& j);
/// From the job's compute profile `p` (the one its run built), or, without one, from a profile built here.
[[nodiscard]] ComputeAssumptions compute_assumptions(const JobSpec& j, const models::ComputeProfile* p = nullptr);

/// Sequence models (a workload with tokens_per_sample): tokens per second of the cluster and the model-FLOPs
/// utilisation, tokens/s x model_flops_per_token (6N + 12 L d s, models/workload.hpp) over the sum of the workers'
/// dense peaks at their precision; the model FLOPs per second each GPU delivers (what Megatron-LM and NeMo report as
/// TFLOP/s per GPU); and the hardware FLOPs utilisation, which counts the recomputed forwards too (full: every
/// checkpointed layer's forward again; selective: attention's core again; Korthikanti et al., arXiv 2205.05198, §6).
/// Result keys `tokens_per_s`, `mfu`, `tflops_per_gpu`, `hfu`; nullopt for other models.
struct TokenRates {
    double tokens_per_s = 0.0;
    double mfu = 0.0;
    double tflops_per_gpu = 0.0;
    double hfu = 0.0;
};
[[nodiscard]] std::optional<TokenRates> token_rates(const JobSpec& spec, const models::JobResult& j);

}  // namespace ddlsim::scenario
