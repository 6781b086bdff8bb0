// A multi-GPU machine as a graph: its GPUs, the fabric between them (NVSwitch, NVLink
// point-to-point links, PCIe switches) and its NICs, with the GPU each NIC serves. Named
// presets describe the common 8-GPU servers; the figures and their sources are in
// node_type.cpp, beside each number.
//
// Inside node i the parts are named (the two_tier convention):
//   n<i>g<j>    GPU j (a host; routes never pass through a GPU: it is an endpoint, not a switch)
//   n<i>        the node switch: the NVSwitch fabric, or the CPUs' PCIe root complex
//   n<i>p<k>    PCIe switch k (pcie_8gpu)
//   n<i>nic<k>  NIC k; its port joins the network (the top switch, or rail leaf k)
// GPU j's traffic between machines leaves through NIC j * nics / gpus: that NIC is linked to
// GPU j (dgx1_v100: to both GPUs of its pair, standing for the PCIe switch they share;
// pcie_8gpu: its one NIC to the CPUs' root complex), and no path leads to another NIC because
// routes do not cross GPUs. The PCIe hop from a GPU to its NIC belongs to the NIC's path (class
// inter, the NIC's transport): the measured goodput of NCCL's network transport includes it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "topologies/fabric.hpp"

namespace ddlsim::topo {

/// One link inside a node between two of its parts, named relative to the node: "g<j>" (GPU j),
/// "" (the node switch), "p<k>" (PCIe switch k), "nic<k>" (NIC k).
struct NodeLink {
    std::string a;
    std::string b;
    sim::Bandwidth bandwidth;  ///< per direction
    Medium medium = Medium::unknown;
    LinkClass cls = LinkClass::intra;
};

struct NodeType {
    std::string preset;             ///< the preset's name; empty when the node is given key by key
    std::string fabric;             ///< one line on the intra-node fabric, for summaries
    std::size_t gpus = 0;           ///< GPUs per node
    std::size_t nics = 1;           ///< NICs per node: parts nic0 .. nic(nics-1)
    std::size_t pcie_switches = 0;  ///< parts p0 .. p(pcie_switches-1)
    sim::Bandwidth nic_bandwidth;   ///< each NIC's port (the default of network.bandwidth)
    sim::Bandwidth gpu_bandwidth;   ///< a GPU's intra-node bandwidth per direction (the headline figure)
    std::vector<NodeLink> links;    ///< every link inside the node
    /// NVLink SHARP: the node switch reduces and multicasts (algorithm "nvls") at this fraction of the NVLink rate
    /// the ring reaches; 0 when it cannot reduce.
    double switch_reduction = 0.0;
};

/// The built-in node presets, in the order the schema lists them.
[[nodiscard]] const std::vector<NodeType>& node_presets();
/// The preset named `name`, or nullptr.
[[nodiscard]] const NodeType* find_node_preset(std::string_view name);
/// A node given key by key: `gpus` GPUs each on a link of `gpu_bandwidth` to the node switch and
/// `nics` NICs, one per GPU (nics == gpus) or one on the node switch (nics == 1); throws
/// std::invalid_argument for any other NIC count.
[[nodiscard]] NodeType plain_node(std::size_t gpus, sim::Bandwidth gpu_bandwidth, std::size_t nics,
                                  sim::Bandwidth nic_bandwidth);
/// Adds node `index` of type `t` to `f` (every inner link with `intra_latency`); returns the names
/// of its NICs, in order, for the caller to join to the network.
std::vector<std::string> add_node(Fabric& f, const NodeType& t, std::size_t index, sim::Time intra_latency);

}  // namespace ddlsim::topo
