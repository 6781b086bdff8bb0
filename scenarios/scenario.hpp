// A scenario after strict loading: plain structs, no JSON. The loader is the only
// place that reads scenario JSON; everything downstream receives these.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/compute.hpp"
#include "models/device.hpp"
#include "models/job.hpp"
#include "models/time_to_train.hpp"
#include "models/workload.hpp"
#include "topologies/builders.hpp"
#include "topologies/collectives.hpp"
#include "topologies/transport.hpp"

namespace ddlsim::scenario {

enum class NetworkModel { flow, analytic };

inline constexpr sim::EnumEntry<NetworkModel> k_network_models[]{
    {NetworkModel::flow, "flow", "max-min fair sharing of every link"},
    {NetworkModel::analytic, "analytic", "closed-form alpha-beta, contention-free"}};
constexpr std::span<const sim::EnumEntry<NetworkModel>> enum_entries(NetworkModel) {
    return k_network_models;
}

/// The `convergence` block (docs/CONTRACT.md §6): train a proxy task for real under the simulated schedule.
struct ConvergenceSpec {
    std::string task = "fashion_mnist_mlp";  ///< fashion_mnist_mlp, fashion_mnist_cnn, synthetic_mlp (tests)
    double target_accuracy = 0.8;
    std::uint32_t max_iterations = 0;  ///< also the number of simulated iterations
    double learning_rate = 0.05;
    std::uint32_t batch_size = 32;      ///< proxy samples per worker per step
    std::uint32_t eval_every = 10;      ///< evaluate the model every this many iterations
    std::uint32_t test_samples = 2000;  ///< held-out samples the accuracy is measured on
    std::uint32_t train_samples = 0;    ///< training samples used (0: all)
};

/// One training job: its model, devices, workers and schemes.
/// One job of a scenario: its keys (models::JobKeys, which the trained job resolves) and what only the scenario
/// holds (names, placement by host name, the convergence and training blocks).
struct JobSpec : models::JobKeys {
    std::string name;                                      ///< "job0", "job1", ... unless given
    std::string model_name;                                ///< built-in name or "custom"
    std::optional<models::TransformerConfig> transformer;  ///< `"model": {"transformer": {...}}`
    std::int64_t seq_len = 0;    ///< `"model": {"name": ..., "seq_len": s}`: a built-in sequence model's sequence
    std::string dtype = "fp32";  ///< model.dtype (sets bytes_per_param)
    models::Source optimizer_source = models::Source::builtin_default;  ///< where `optimizer` came from
    std::vector<std::string> placement;                                 ///< host of each worker
    std::vector<std::string> server_placement;                          ///< host of each server endpoint (ps)
    std::optional<ConvergenceSpec> convergence;
    std::optional<models::TrainingSpec> training;  ///< `training`: the run to a target (time to train)
};

/// What load_scenario builds once and every run of the scenario reads (docs/DESIGN.md, "One resolved job"): the
/// fabric with its routing, host speeds and transports applied, and each job resolved on it (models::resolve_job),
/// its compute profile included.
struct ResolvedRun {
    topo::Fabric fabric;
    std::vector<models::TrainingJob> jobs;
};

struct Scenario {
    std::vector<JobSpec> jobs;  ///< one, unless the scenario has a "jobs" list
    bool has_jobs_list = false;
    std::uint32_t iterations = 10;
    topo::TopologySpec topology;
    NetworkModel network_model = NetworkModel::flow;
    topo::Routing routing = topo::Routing::ecmp;
    std::uint64_t seed = 0;
    /// Flow classes (models::SimOptions::flow_classes): on unless `ddlsim run --no-flow-classes`; not a scenario key,
    /// as it changes no result, only how fast it comes.
    bool flow_classes = true;
    std::vector<std::pair<std::string, sim::Bandwidth>> host_bandwidth;  ///< network.host_bandwidth
    topo::FabricTransports transports;     ///< network.transport / intra_transport (nullopt: auto)
    std::string transport_source;          ///< with network.profile: "calibration profile FILE" or the override
    std::vector<std::string> input_files;  ///< every file the load read (profiles, topology files), as opened
    /// Built by load_scenario from the keys above; run_scenario reads it (a caller may change `seed` between runs).
    std::shared_ptr<const ResolvedRun> resolved;
};

/// Records, while alive, the files read_json_file reads on this thread (the scenario, profiles, topology files),
/// as it opened them: the inputs a command's outputs must not replace. Logs nest; each records every read.
class InputFileLog {
public:
    InputFileLog();
    ~InputFileLog();
    InputFileLog(const InputFileLog&) = delete;
    InputFileLog& operator=(const InputFileLog&) = delete;
    [[nodiscard]] const std::vector<std::string>& files() const { return files_; }

private:
    friend nlohmann::json read_json_file(const std::string& file);
    std::vector<std::string> files_;
    InputFileLog* outer_;
};

/// Loads a scenario from parsed JSON; throws ScenarioError on any bad input.
/// `base_dir` resolves relative file names inside it (network.file).
[[nodiscard]] Scenario load_scenario(const nlohmann::json& j, const std::string& base_dir = ".");

/// Reads, parses and loads a scenario file, applying `--set PATH=VALUE` overrides
/// first; throws ScenarioError (path "$" for unreadable or malformed files).
[[nodiscard]] Scenario load_scenario_file(const std::string& file, const std::vector<std::string>& overrides);

/// Applies one "a.b.c=VALUE" override (VALUE as JSON if it parses, else as a string).
void apply_override(nlohmann::json& j, const std::string& assignment);
/// Checks that the dotted key path of an override (--set, --vary) names a key the scenario schema declares (it is
/// generated from the key tables); throws ScenarioError at `what` (e.g. "--vary net.bandwidth=...") naming the
/// unknown key, with a did-you-mean and the keys expected there.
void check_key_path(const std::string& path, const std::string& what);

/// Reads a JSON file strictly (ScenarioError with path "$" when unreadable or malformed).
[[nodiscard]] nlohmann::json read_json_file(const std::string& file);

/// Refuses (ScenarioError, as the loader) a flow-model run of `s` that simulates every transfer and would take too
/// long or need too much memory: the loader's limits assume flow classes where the run may be symmetric; a run found
/// not to be (or run with `--no-flow-classes`) checks this before it simulates in full.
void check_full_run(const Scenario& s);
/// The up-front estimate of the events a flow-model run of `s` processes (what the loader's limit checks; per flow
/// class where the run may be symmetric).
[[nodiscard]] double estimated_events(const Scenario& s);
/// Events the flow model processes per second of wall time on one core, for the time estimates beside the event
/// estimate (order of magnitude of `tools/bench`'s measurements on this project's 2-core machines, README).
inline constexpr double kFlowEventsPerSecond = 5e6;
/// The up-front estimate of the wall seconds a flow-model run of `s` takes on one core: its events at
/// kFlowEventsPerSecond, slowed where many flows share links (a parameter server's streams) and every event
/// re-solves them all. Within about 6x of measured runs (scenarios/loader.cpp).
[[nodiscard]] double estimated_seconds(const Scenario& s);
/// The longest flow-model run the loader accepts, in estimated wall seconds: an hour on one core. With the
/// estimate's 6x band a run refused would have taken at least ten minutes and one accepted at most about six hours
/// (an accepted estimate of 1,000 s is a 125 s to 2 h run).
inline constexpr double kMaxFlowSeconds = 3600.0;

/// The JSON Schema of scenarios, generated from the loader's own key tables.
[[nodiscard]] nlohmann::json scenario_schema();

}  // namespace ddlsim::scenario
