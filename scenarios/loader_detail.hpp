// Internal to the scenario loader: helpers shared by its files, and the readers
// of the job and network blocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/json_reader.hpp"
#include "scenarios/scenario.hpp"
#include "topologies/fabric.hpp"

namespace ddlsim::scenario::detail {

inline constexpr std::uint64_t kMaxWorkers = 1'000'000;

/// "a", "b", "c" — quoted and comma-separated.
[[nodiscard]] std::string list(const std::vector<std::string>& v);
/// Names defined by docs/CONTRACT.md but not implemented yet get a message saying so.
void reject_planned_value(const json& j, const std::string& path, const std::string& what,
                          const std::vector<std::string>& implemented);
void reject_planned_keys(const json& j, const std::string& path, const std::string& object_id);
/// A planned value of `key` is reported before the object's keys are checked, so that a spec-conforming
/// {"kind": "ssp", "staleness": 2} says "not implemented" rather than "unknown key staleness".
void reject_planned_kind(const json& j, const std::string& path, const std::string& key, const std::string& what,
                         const std::vector<std::string>& implemented);
/// Refuses a scenario whose estimated events, wall time, explicit-DAG rounds, plan memory or fabric exceed the
/// loader's limits (limits.cpp), before anything large is built, at the key that makes it too large; `jobs_path`
/// prefixes a jobs list's entries.
void check_limits(const Scenario& s, const std::string& jobs_path);
/// Refuses a job whose resolved compute profile `p` makes one optimizer step too long for the event clock, at
/// `prefix` + "gradient_accumulation".
void check_compute(const JobSpec& j, const models::ComputeProfile& p, const std::string& prefix);
/// A number in (0, max].
[[nodiscard]] double read_positive(const json& j, const std::string& path, double max);
/// The calibration profile (`ddlsim calibrate`) named by the string `name` at JSON path `path`, relative to
/// `base_dir`; its `member` object, or a ScenarioError at `path` naming the file. `file` receives the path read.
[[nodiscard]] json read_profile_member(const json& name, const std::string& path, const std::string& base_dir,
                                       const std::string& member, std::string& file);

/// The blocks of a job, each given the job read so far (keys_job.cpp reads them in its table's order).
void read_model(const json& j, const std::string& path, JobSpec& s);
[[nodiscard]] models::DeviceSpec read_device(const json& j, const std::string& path, const std::string& base_dir);
[[nodiscard]] topo::ArchitectureSpec read_architecture(const json& j, const std::string& path, std::uint32_t workers);
[[nodiscard]] models::SyncSpec read_sync(const json& j, const std::string& path, const JobSpec& job);
[[nodiscard]] models::CompressionSpec read_compression(const json& j, const std::string& path, const JobSpec& job);
[[nodiscard]] models::OverlapSpec read_overlap(const json& j, const std::string& path, const JobSpec& job);
[[nodiscard]] models::StragglerSpec read_stragglers(const json& j, const std::string& path, std::uint32_t workers);
/// The job's `training` block, checked against the job (keys_training.cpp).
[[nodiscard]] models::TrainingSpec read_training(const json& j, const std::string& path, const JobSpec& job);
/// `arch_path`: the job's architecture block, where the rules sharding sets on it are reported.
[[nodiscard]] models::ShardingSpec read_sharding(const json& j, const std::string& path, const JobSpec& job,
                                                 const std::string& arch_path);
/// The parallelism block, checked against the job read so far (its model, workers and data-parallel keys).
[[nodiscard]] models::ParallelismSpec read_parallelism(const json& j, const std::string& path, const JobSpec& job);
/// Keys that only a pipeline reads (a custom layer's activation_bytes) are refused without one; `prefix`: the job's
/// path ("$." or "$.jobs[i].").
void check_pipeline_keys(const JobSpec& job, const std::string& prefix);
/// The convergence block.
[[nodiscard]] ConvergenceSpec read_convergence(const json& j, const std::string& path);

/// What the network block says, sized for `hosts_needed` hosts (workers plus default
/// dedicated servers) where the topology's size is not given.
struct NetworkSpec {
    topo::TopologySpec topology;
    std::vector<std::pair<std::string, sim::Bandwidth>> host_bandwidth;
    NetworkModel model = NetworkModel::flow;
    topo::Routing routing = topo::Routing::ecmp;
    topo::FabricTransports transports;
    std::string transport_source;  ///< set when network.profile is given: where the transport came from
};
/// One topology as a scenario's network block spells it: its name and description (the spec's kName and
/// kDescription) and its builder from the block read through network_keys() (scenarios/keys_network.cpp, which
/// lists them; the schema's choices and the resolved scenario, topo::topology_name, follow the list).
struct TopologyInput;
struct TopologyReader {
    std::string_view name;
    std::string_view description;
    topo::TopologySpec (*build)(const TopologyInput& in);
};
[[nodiscard]] const std::vector<TopologyReader>& topology_readers();

/// Refuses "nvls" where a job's nodes have no reducing switch or hold unequal numbers of workers, and "collnet" where
/// the fabric has no SHARP switches or the nodes or their rails do not match (after placement).
void check_in_network(const Scenario& s, const topo::Fabric& fabric, const std::vector<std::string>& paths);

[[nodiscard]] NetworkSpec read_network(const json& j, const std::string& base_dir, std::size_t hosts_needed,
                                       std::size_t gpus_hint);

}  // namespace ddlsim::scenario::detail
