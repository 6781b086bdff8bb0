// `ddlsim plan`: searches the parallel layouts of one job by simulation, as Calculon's optimal-execution search
// (Isaev et al., "Calculon: a methodology and tool for high-level co-design of systems and large language models",
// SC 2023) does analytically. The model, workers, device, network and global batch (sequences per optimizer step)
// stay as the scenario gives them; the layouts (tensor, pipeline, context, expert, virtual stages, micro-batch,
// sharding stage, recompute) are enumerated, each turned into a patch of the scenario that the loader accepts or
// refuses, those whose memory per GPU exceeds the device's dropped, and the rest simulated for one iteration each
// on threads and ranked by an objective (docs/MODEL.md, "Searching the layouts: ddlsim plan").
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.hpp"
#include "tools/sweep_detail.hpp"

namespace ddlsim::tools {

/// Exit code of a plan in which no candidate was simulated to a value of the objective.
inline constexpr int kPlanNothingRanked = 3;

struct PlanOptions {
    std::string scenario_file;      ///< "-": standard input
    std::vector<std::string> sets;  ///< "PATH=VALUE", applied before anything, like run --set
    std::string objective;          ///< empty or "throughput": tokens/s (samples/s for other models), highest first
    std::size_t top = 10;           ///< rows of the ranked table printed
    std::string out;                ///< every candidate as CSV, or JSON for a .json name; "-": standard output
    unsigned jobs = std::max(1U, std::thread::hardware_concurrency());  ///< candidates simulated at once
    std::uint32_t max_tensor = 0;  ///< largest tensor-parallel degree (0: the GPUs of one node of the fabric)
    bool progress = true;          ///< progress line on stderr when it is a terminal
    bool force_progress = false;   ///< progress on stderr even when it is not a terminal (a line every 5 s)
    /// Simulate every candidate that fits. By default a candidate whose step's lower bound
    /// (models/program/step_bound.hpp) exceeds the step of the `top`-th best simulated is not simulated ("bounded"):
    /// it cannot rank among them.
    bool exhaustive = false;
};

/// One parallel layout of the job: what the search varies.
struct PlanLayout {
    std::uint32_t tensor = 1, pipeline = 1, context = 1, expert = 1, virtual_stages = 1;
    std::string schedule;  ///< empty without a pipeline; "1f1b", "interleaved_1f1b" (the scenario's own may differ)
    std::uint32_t micro_batch = 1;    ///< sequences (samples) per micro-batch of one replica: batch_size
    std::uint32_t micro_batches = 1;  ///< micro-batches per step: gradient_accumulation
    std::uint32_t data = 1;           ///< replicas: workers / (tensor x pipeline x context)
    std::uint32_t sharding = 0;       ///< sharding.stage (1: Megatron's distributed optimizer)
    models::Checkpointing recompute = models::Checkpointing::none;  ///< activation_checkpointing
    bool sequence_parallel = false;

    auto operator<=>(const PlanLayout&) const = default;
};

enum class CandidateStatus { simulated, refused, does_not_fit, failed, bounded };

/// "simulated", "refused", "does-not-fit", "failed", "bounded" (not simulated: its step's lower bound exceeds the
/// top's steps).
[[nodiscard]] std::string status_name(CandidateStatus s);

struct PlanCandidate {
    std::size_t index = 0;  ///< in enumeration order (the scenario's own layout last when it is not enumerated)
    PlanLayout layout;
    bool yours = false;  ///< the scenario's own layout
    CandidateStatus status = CandidateStatus::failed;
    std::string reason_key;  ///< refused: the JSON path the loader named ("global batch" for the plan's own check)
    std::string reason;      ///< why it was refused, does not fit or failed
    std::optional<double> memory_bytes;  ///< the estimate per GPU (most loaded stage), once loaded
    /// A lower bound of its step, once loaded (models::program::step_lower_bound_s: the busiest rank's program with
    /// its compute and its tensor-parallel collectives at their contention-free time, the pipeline's fill and
    /// drain), which the simulation only lengthens. 0: none known.
    double bound_s = 0.0;
    /// The looser bound from the compute profile alone (models::program::compute_lower_bound_s), which orders the
    /// search; bound_s where that decides.
    double compute_bound_s = 0.0;
    std::map<std::string, nlohmann::json> result;  ///< simulated: the result flattened (sweep's columns)
    std::optional<double> value;                   ///< the objective's value (simulated, when the result has it)
    std::size_t rank = 0;                          ///< 1 = best; 0: not ranked
};

/// A finished search.
struct PlanSearch {
    std::string file;
    std::uint32_t workers = 0;
    std::uint32_t gpus_per_node = 0;
    std::uint32_t max_tensor = 0;
    std::uint64_t global_batch = 0;  ///< sequences (samples) per optimizer step
    std::int64_t tokens_per_sample = 0;
    std::string device;
    std::optional<double> capacity_bytes;  ///< the device's memory
    sweep_detail::Objective objective;
    std::vector<PlanCandidate> candidates;  ///< in enumeration order
    std::vector<std::size_t> ranking;       ///< indices into candidates, best first
    double wall_time_s = 0.0;

    [[nodiscard]] std::size_t count(CandidateStatus s) const;
    /// The scenario's own candidate.
    [[nodiscard]] const PlanCandidate& yours() const;
};

/// The scenario's global batch in sequences (samples) per optimizer step: batch_size x gradient_accumulation x data.
[[nodiscard]] std::uint64_t global_batch(const scenario::JobSpec& job);
/// The workers that share worker 0's node (machine) on the loaded scenario's fabric.
[[nodiscard]] std::uint32_t gpus_per_node(const scenario::Scenario& s);
/// The layout a loaded job runs.
[[nodiscard]] PlanLayout layout_of(const scenario::JobSpec& job);
/// Every layout the search tries for the loaded scenario `s` (tensor up to `max_tensor`), in enumeration order:
/// tensor t dividing the workers, pipeline p dividing workers / t, context c in {1, 2, 4, 8} dividing workers /
/// (t p) (1 unless the model is a transformer on at least 8,192 tokens), expert e dividing the model's routed
/// experts (1 for a dense model), virtual stages v in {1, 2, 4} (1 without a pipeline), micro-batch b in
/// {1, 2, 4, 8} with m = G / (d b) (m = 0 where G does not split so), sharding 0 or 1, recompute none, selective or
/// full.
[[nodiscard]] std::vector<PlanLayout> enumerate_layouts(const scenario::Scenario& s, std::uint32_t max_tensor);
/// The scenario JSON `base` with `layout` applied (and "iterations": 1).
[[nodiscard]] nlohmann::json layout_patch(const nlohmann::json& base, const PlanLayout& layout);
/// Resolves --objective (empty or "throughput": tokens_per_s for sequence models, else throughput_samples_per_s);
/// columns where higher is better (throughput, tokens/s, MFU, scaling efficiency) rank highest first, "max:NAME"
/// ranks any column highest first, others lowest first. SweepError (exit 2) for an unknown column.
[[nodiscard]] sweep_detail::Objective plan_objective(const std::string& given, bool sequence_model, bool has_training);

/// Runs the search on opts.scenario_file (bad input: scenario::ScenarioError or CliError); `progress` gets the
/// progress line.
[[nodiscard]] PlanSearch plan_search(const PlanOptions& opts, std::ostream& progress);
/// The same on the scenario JSON `base` (opts.sets not yet applied; relative file names resolve in `base_dir`).
[[nodiscard]] PlanSearch plan_search(nlohmann::json base, const std::string& base_dir, const PlanOptions& opts,
                                     std::ostream& progress);
/// The printed report: the counts and the reasons, the best `top` layouts and the scenario's own rank.
[[nodiscard]] std::string plan_report(const PlanSearch& p, std::size_t top);
/// The columns of every candidate's row, in order (the layout, status, reason, then the result columns).
[[nodiscard]] std::vector<std::string> plan_columns(const PlanSearch& p);
/// Every candidate's row (ranked first, best first, then the others in enumeration order), as JSON values.
[[nodiscard]] std::vector<nlohmann::json> plan_rows(const PlanSearch& p);
/// The rows as CSV (header first) or as a JSON array.
[[nodiscard]] std::string plan_csv(const PlanSearch& p);
[[nodiscard]] std::string plan_json(const PlanSearch& p);

/// The command: writes the report to `out` (stderr with --out -), messages to `err`; returns 0, 2 (bad input),
/// kPlanNothingRanked or 1 (internal error).
[[nodiscard]] int run_plan(const PlanOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace ddlsim::tools
