// The key tables of every scenario object: the single source of truth that the
// loader reads through and the JSON Schema is generated from.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "scenarios/json_reader.hpp"

namespace ddlsim::scenario {

// The names a scenario may use. Those of plain enums come from the enums' tables (sim/enum_info.hpp, beside
// each enum); compressors, models and devices from their registries. The loader maps names to values through
// the same tables (sim::enum_value), never by position.
struct Choices {
    std::vector<std::string> topologies;               ///< detail::topology_readers()
    std::vector<std::string> network_models;           ///< scenario::NetworkModel
    std::vector<std::string> routings;                 ///< topo::Routing
    std::vector<std::string> transports;               ///< topo::TransportKind
    std::vector<std::string> node_kinds;               ///< topo::NodeKind
    std::vector<std::string> precisions;               ///< models::Precision
    std::vector<std::string> arch_kinds;               ///< topo::ArchKind
    std::vector<std::string> algorithms;               ///< topo::AllreduceAlgorithm
    std::vector<std::string> server_placements;        ///< topo::ServerPlacement
    std::vector<std::string> gossip_graphs;            ///< topo::GossipGraph
    std::vector<std::string> ps_shardings;             ///< topo::PsSharding
    std::vector<std::string> ps_styles;                ///< topo::PsStyle
    std::vector<std::string> sync_kinds;               ///< models::SyncKind
    std::vector<std::string> compression_kinds;        ///< models::compressors(), by name
    std::vector<std::string> fusions;                  ///< models::Fusion
    std::vector<std::string> straggler_distributions;  ///< models::StragglerDistribution
    std::vector<std::string> convergence_tasks;        ///< convergence_tasks() (scenarios/key_tables.hpp)
    std::vector<std::string> models;                   ///< built-in workloads
    std::vector<std::string> devices;                  ///< built-in device profiles
    std::vector<std::string> node_presets;             ///< topo::node_presets()
};

/// Names that docs/CONTRACT.md defines but this version does not implement yet; the
/// loader says so instead of calling them unknown.
struct Planned {
    std::map<std::string, std::vector<std::string>> values{
        {"algorithm", {}}, {"graph", {}}, {"sync", {}}, {"compression", {}}, {"fusion", {}},
    };
    /// Keys by object id ("scenario", "architecture", ...).
    std::map<std::string, std::vector<std::string>> keys{
        {"scenario", {}}, {"job", {}}, {"architecture", {}}, {"overlap", {}}, {"device", {}}, {"network", {}},
    };
};

struct Tables {
    Choices choices;
    Planned planned;
    ObjectSchema root, job, network, transport, topology_file, node, link, model, transformer, layer, device,
        architecture, sync, compression, overlap, sharding, parallelism, stragglers, convergence, training, evaluation,
        checkpoint;
};

/// The tables, built once.
[[nodiscard]] const Tables& tables();

}  // namespace ddlsim::scenario
