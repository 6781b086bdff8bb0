// The key tables of the scenario blocks (scenarios/key_table.hpp): one per block, each beside its reader in
// keys_<block>.cpp. The loader reads through them, `ddlsim schema` and docs/KEYS.md are generated from them,
// and the resolved scenario echoes through them.
#pragma once

#include <optional>
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
[[nodiscard]] const keys::KeyTable<models::ParallelismSpec>& parallelism_keys();
[[nodiscard]] const keys::KeyTable<models::StragglerSpec>& straggler_keys();
[[nodiscard]] const keys::KeyTable<ConvergenceSpec>& convergence_keys();
[[nodiscard]] const keys::KeyTable<models::TrainingSpec>& training_keys();
[[nodiscard]] const keys::KeyTable<models::EvaluationSpec>& evaluation_keys();
[[nodiscard]] const keys::KeyTable<models::CheckpointSpec>& checkpoint_keys();
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

/// The network block as written, flat: which keys apply depends on the topology (network_keys() says which);
/// keys_network.cpp builds the topology from it, and the resolved scenario echoes a block made from the
/// topology.
struct NetworkBlock {
    std::string topology;
    std::optional<std::string> node;  ///< a node preset (topologies/node_type.hpp)
    std::optional<sim::Bandwidth> bandwidth, intra_bandwidth;
    std::optional<sim::Time> latency, intra_latency;
    std::optional<std::uint64_t> hosts, gpus_per_node, num_nodes, nics_per_node, k, hosts_per_leaf, spines, leaves;
    std::optional<double> oversubscription;
    std::optional<std::uint64_t> sites;            ///< two_tier: datacenters
    std::optional<sim::Bandwidth> wan_bandwidth;   ///< two_tier with sites > 1
    std::optional<sim::Time> wan_latency;          ///< two_tier with sites > 1
    std::optional<bool> sharp;                     ///< two_tier (one site), rail_optimized: InfiniBand SHARP
    std::optional<sim::Bytes> aggregation_memory;  ///< with sharp: the summing switch's in-flight aggregation state
    std::vector<std::uint64_t> dims;
    std::optional<topo::CustomSpec> custom;  ///< nodes and links, inline or from the topology file
    bool custom_inline = false;              ///< nodes or links given in the block
    std::optional<std::string> file;         ///< or the file that holds them
    NetworkModel model = NetworkModel::flow;
    topo::Routing routing = topo::Routing::ecmp;
    std::vector<std::pair<std::string, sim::Bandwidth>> host_bandwidth;
    std::optional<topo::TransportSpec> transport;
    std::optional<topo::TransportSpec> intra_transport;
    std::optional<std::string> profile;                    ///< the calibration profile's file name as given
    std::optional<topo::TransportSpec> profile_transport;  ///< its "network"."transport"
    std::string profile_file;                              ///< the profile's path as read
};
[[nodiscard]] const keys::KeyTable<NetworkBlock>& network_keys();
/// A node and a link of a custom topology, and a topology file ({"nodes", "links"}).
[[nodiscard]] const keys::KeyTable<topo::CustomNode>& custom_node_keys();
[[nodiscard]] const keys::KeyTable<topo::CustomLink>& custom_link_keys();
[[nodiscard]] const keys::KeyTable<topo::CustomSpec>& topology_file_keys();
/// The resolved network block of a scenario (what the resolved scenario echoes).
[[nodiscard]] nlohmann::json network_echo(const Scenario& s);

/// The built-in device profiles' names.
[[nodiscard]] const std::vector<std::string>& device_names();
/// The gradient element types of model.dtype.
[[nodiscard]] const std::vector<std::string>& dtype_names();

/// The proxy tasks of the convergence block.
[[nodiscard]] const std::vector<std::string>& convergence_tasks();

}  // namespace ddlsim::scenario
