// The key tables of the scenario blocks (scenarios/key_table.hpp): one per block, each beside its reader in
// keys_<block>.cpp. The loader reads through them, `ddlsim schema` and docs/KEYS.md are generated from them,
// and the resolved scenario echoes through them.
#pragma once

#include <string>
#include <vector>

#include "models/job.hpp"
#include "models/workload.hpp"
#include "scenarios/key_table.hpp"
#include "scenarios/scenario.hpp"
#include "topologies/collectives.hpp"
#include "topologies/transport.hpp"

namespace ddlsim::scenario {

[[nodiscard]] const keys::KeyTable<models::SyncSpec>& sync_keys();
[[nodiscard]] const keys::KeyTable<models::OverlapSpec>& overlap_keys();
[[nodiscard]] const keys::KeyTable<models::ShardingSpec>& sharding_keys();
[[nodiscard]] const keys::KeyTable<models::StragglerSpec>& straggler_keys();
[[nodiscard]] const keys::KeyTable<ConvergenceSpec>& convergence_keys();
[[nodiscard]] const keys::KeyTable<topo::ArchitectureSpec>& architecture_keys();
[[nodiscard]] const keys::KeyTable<topo::TransportSpec>& transport_keys();
[[nodiscard]] const keys::KeyTable<models::TransformerConfig>& transformer_keys();
[[nodiscard]] const keys::KeyTable<models::Layer>& layer_keys();
/// The model object (a built-in by name, a transformer, or layers), read into the job.
[[nodiscard]] const keys::KeyTable<JobSpec>& model_keys();
/// A device object (a profile with overrides, explicit peaks, or a measured throughput).
[[nodiscard]] const keys::KeyTable<models::DeviceSpec>& device_keys();
/// The per-job keys: at the root for one job, inside each element of "jobs" for several.
[[nodiscard]] const keys::KeyTable<JobSpec>& job_keys();
/// An element of "jobs": its name and description, then the per-job keys.
[[nodiscard]] const keys::KeyTable<JobSpec>& job_object_keys();
/// The scenario's own keys at the root (the per-job keys join them for one job).
[[nodiscard]] const keys::KeyTable<Scenario>& root_keys();

/// The built-in device profiles' names.
[[nodiscard]] const std::vector<std::string>& device_names();
/// The gradient element types of model.dtype.
[[nodiscard]] const std::vector<std::string>& dtype_names();

/// The proxy tasks of the convergence block.
[[nodiscard]] const std::vector<std::string>& convergence_tasks();

}  // namespace ddlsim::scenario
