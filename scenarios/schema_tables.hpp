// The key tables of every scenario object: the single source of truth that the
// loader reads through and the JSON Schema is generated from.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "scenarios/json_reader.hpp"

namespace ddlsim::scenario {

struct Choices {
    std::vector<std::string> topologies{"star", "two_tier", "fat_tree", "leaf_spine", "ring", "torus2d", "custom"};
    std::vector<std::string> network_models{"flow", "analytic"};
    std::vector<std::string> routings{"ecmp", "dmodk"};
    std::vector<std::string> transports;  ///< topo::transport_names()
    std::vector<std::string> node_kinds{"host", "switch"};
    std::vector<std::string> dtypes{"fp32", "fp16", "bf16"};
    // Order matches models::Precision (the loader maps by position).
    std::vector<std::string> precisions{"fp32", "tf32", "fp16", "bf16", "fp8"};
    std::vector<std::string> arch_kinds{"allreduce", "ps", "gossip"};
    // Order matches the enums in topologies/collectives.hpp (the loader maps by position).
    std::vector<std::string> algorithms{"ring", "tree", "double_tree", "halving_doubling", "hierarchical", "torus2d"};
    std::vector<std::string> server_placements{"dedicated", "colocated"};
    std::vector<std::string> gossip_graphs{"ring", "torus", "exponential", "random_matching"};
    std::vector<std::string> ps_shardings{"bytes", "round_robin", "balanced"};
    std::vector<std::string> ps_styles{"standard", "byteps"};
    // Order matches models::SyncKind.
    std::vector<std::string> sync_kinds{"bsp", "ssp", "asp", "local_sgd", "fedavg"};
    /// Which sync schemes each architecture kind supports (checked once, at load).
    std::map<std::string, std::vector<std::string>> sync_allowed{{"allreduce", {"bsp", "local_sgd"}},
                                                                 {"ps", {"bsp", "ssp", "asp", "local_sgd", "fedavg"}},
                                                                 {"gossip", {"bsp", "asp"}}};
    std::vector<std::string> compression_kinds;  ///< models::compressors(), by name
    // Order matches models::Fusion.
    std::vector<std::string> fusions{"none", "buffer", "mgwfbp"};
    std::vector<std::string> straggler_distributions{"lognormal", "exponential", "periodic"};
    std::vector<std::string> convergence_tasks{"fashion_mnist_mlp", "fashion_mnist_cnn", "synthetic_mlp"};
    std::vector<std::string> models;   ///< built-in workloads
    std::vector<std::string> devices;  ///< built-in device profiles
};

/// Names that SPEC.md defines but this version does not implement yet; the
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
    ObjectSchema root, job, network, transport, topology_file, node, link, model, layer, device, architecture, sync,
        compression, overlap, stragglers, convergence;
};

/// The tables, built once.
[[nodiscard]] const Tables& tables();

}  // namespace ddlsim::scenario
