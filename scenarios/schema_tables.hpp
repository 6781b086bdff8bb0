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
    std::vector<std::string> node_kinds{"host", "switch"};
    std::vector<std::string> dtypes{"fp32", "fp16", "bf16"};
    std::vector<std::string> precisions{"fp32", "tf32", "fp16"};
    std::vector<std::string> arch_kinds{"allreduce", "ps", "gossip"};
    std::vector<std::string> algorithms{"ring"};
    std::vector<std::string> server_placements{"dedicated", "colocated"};
    std::vector<std::string> gossip_graphs{"ring"};
    std::vector<std::string> sync_kinds{"bsp"};
    std::vector<std::string> compression_kinds{"none"};
    std::vector<std::string> fusions{"none"};
    std::vector<std::string> models;   ///< built-in workloads
    std::vector<std::string> devices;  ///< built-in device profiles
};

/// Names that SPEC.md defines but this version does not implement yet; the
/// loader says so instead of calling them unknown.
struct Planned {
    std::map<std::string, std::vector<std::string>> values{
        {"algorithm", {"tree", "halving_doubling", "hierarchical", "torus2d"}},
        {"graph", {"torus", "exponential"}},
        {"sync", {"ssp", "asp", "local_sgd", "fedavg"}},
        {"compression",
         {"fp16", "qsgd", "terngrad", "signsgd", "ef_signsgd", "onebit", "topk", "randomk", "dgc", "gtopk",
          "powersgd"}},
        {"fusion", {"buffer", "mgwfbp"}},
    };
    /// Keys by object id ("scenario", "architecture", ...).
    std::map<std::string, std::vector<std::string>> keys{
        {"scenario", {"stragglers", "convergence"}},
        {"job", {"stragglers", "convergence"}},
        {"architecture", {"style"}},
        {"overlap", {"bucket_size", "partition_size"}},
        {"device", {"profile"}},
        {"network", {}},
    };
};

struct Tables {
    Choices choices;
    Planned planned;
    ObjectSchema root, job, network, topology_file, node, link, model, layer, device, architecture, sync, compression,
        overlap;
};

/// The tables, built once.
[[nodiscard]] const Tables& tables();

}  // namespace ddlsim::scenario
