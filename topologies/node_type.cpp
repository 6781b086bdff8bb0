// Node presets. Sources, cited again beside each figure:
//  [DGX1]   NVIDIA DGX-1 With Tesla V100 System Architecture, white paper WP-08437-002: eight V100 in a
//           hybrid cube-mesh of NVLink links; four 100 Gb/s EDR InfiniBand NICs, each beside a GPU pair on
//           one of the four PCIe switches.
//  [V100]   NVIDIA Tesla V100 GPU Architecture, white paper WP-08608-001, "NVLink": six NVLink 2 links per
//           GPU, 25 GB/s per direction each (300 GB/s in total, both directions).
//  [NCCL671] NVIDIA/nccl issue #671, a DGX-1V topology dump (NCCL_TOPO_DUMP_FILE): the per-pair NVLink
//           counts (GPU 0: one link to GPUs 1 and 2, two to GPUs 3 and 4; GPU 1: two to 2 and 5, one to 3)
//           and the PLX PCIe switch (8 GT/s x16) each GPU pair sits behind; the matrix below is
//           `nvidia-smi topo -m` of a DGX-1V (NV1 / NV2), six links per GPU.
//  [A100]   NVIDIA DGX A100 System Architecture, white paper WP-10083-001, and NVIDIA A100 Tensor Core GPU
//           Architecture, white paper: twelve NVLink 3 links per GPU through six NVSwitches, 600 GB/s per GPU
//           in total (300 GB/s per direction); DGX A100 User Guide, "Component specifications": eight
//           single-port ConnectX-6 VPI 200 Gb/s HDR InfiniBand NICs for the compute fabric, one per GPU.
//  [H100]   NVIDIA DGX H100 System User Guide, "Hardware overview", and NVIDIA H100 Tensor Core GPU
//           Architecture, white paper: eighteen NVLink 4 links per GPU through four third-generation
//           NVSwitches, 900 GB/s per GPU in total (450 GB/s per direction); eight ConnectX-7 400 Gb/s NDR
//           InfiniBand ports for the compute fabric, one per GPU; H100 SXM on PCIe Gen5 x16.
//  [H200]   NVIDIA H200 Tensor Core GPU datasheet: H200 SXM, NVLink 900 GB/s, HGX H200 8-GPU baseboard
//           with the H100's NVSwitch fabric; NVIDIA HGX AI Factory reference architecture, "Networking
//           hardware": one 400 Gb/s ConnectX-7 per GPU on the compute (east-west) fabric.
//  [PCIe]   PCI Express Base Specification 3.0 / 4.0 / 5.0: 8 / 16 / 32 GT/s per lane, 128b/130b
//           coding, so x16 carries 15.75 / 31.5 / 63.0 GB/s per direction.
//  [PEX]    Broadcom PEX88000 (PCIe Gen4 switch) product brief: up to 98 lanes, so an x16 uplink, two x16
//           GPUs and more ports per switch; 8-GPU PCIe servers put two GPUs behind each of four switches.
//  [CX6]    NVIDIA ConnectX-6 VPI adapter card datasheet: up to 200 Gb/s InfiniBand HDR / 200 GbE, PCIe
//           Gen4 x16.
//  [B200]   NVIDIA DGX B200 datasheet: eight B200 GPUs, fifth-generation NVLink through two NVSwitch chips, 1.8 TB/s
//           per GPU in total (900 GB/s per direction); eight single-port ConnectX-7 VPI 400 Gb/s (InfiniBand NDR /
//           400 GbE) for the compute fabric, one per GPU; B200 on PCIe Gen5 x16.
//  [NVL72]  NVIDIA GB200 NVL72 specifications: 72 Blackwell GPUs (36 Grace-Blackwell superchips) in one NVLink 5
//           domain through the NVLink Switch System, 1.8 TB/s per GPU (900 GB/s per direction), 130 TB/s in total;
//           the compute trays' scale-out NICs, one 400 Gb/s ConnectX-7 per GPU (the reference design's 1:1 rail,
//           ConnectX-8 800 Gb/s in later trays); the GPU reaches its NIC over PCIe Gen5 x16.
//  [MI300X] AMD Instinct MI300X specifications and AMD Instinct MI300X Platform datasheet: eight MI300X OAMs fully
//           connected by seven Infinity Fabric links per GPU, 128 GB/s per link (both directions: 64 GB/s each
//           way), 896 GB/s per GPU; PCIe Gen5 x16 to the host. MI325X platforms use the same fabric.
//  [MI355X] AMD Instinct MI355X specifications: seven Infinity Fabric links per GPU at 153.6 GB/s each (76.8 GB/s per
//           direction), 1,075 GB/s per GPU, eight GPUs fully connected; PCIe Gen5 x16.
//  [NVLS]   NVLink SHARP (NCCL's algorithm NVLS): third-generation NVSwitch (H100, H200) and the NVLink 5 switches
//           (B200, GB200 NVL72) reduce and multicast inside the switch (NVIDIA H100 Tensor Core GPU Architecture
//           white paper, "NVLink SHARP"; the A100's second-generation NVSwitch has no SHARP). The rate they sustain
//           is NCCL's own figure, NVIDIA/nccl src/graph/tuning.cc @ 5067397c2676d5aed50042fc39e5c8ee96eb0027,
//           `nvlsEfficiency`: 0.85 on Hopper, 0.74 on Blackwell, 0 on Volta and Ampere.
//  [RAILNIC] One 400 Gb/s NIC per GPU on the AMD platforms: the rail layout of the reference clusters above
//           (DGX B200, NVL72); AMD's platform datasheets leave the NICs to the server vendor (an assumption: give
//           network.nics_per_node / bandwidth to change it).
#include "topologies/node_type.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace ddlsim::topo {
namespace {

sim::Bandwidth gbyte_s(double v) {
    return sim::Bandwidth::bytes_per_s(v * 1e9);
}
sim::Bandwidth gbit_s(double v) {
    return sim::Bandwidth::bits_per_s(v * 1e9);
}

const sim::Bandwidth kPcie3x16 = gbyte_s(8.0 * 16 * 128.0 / 130.0 / 8.0);   // [PCIe] 15.75 GB/s
const sim::Bandwidth kPcie4x16 = gbyte_s(16.0 * 16 * 128.0 / 130.0 / 8.0);  // [PCIe] 31.5 GB/s
const sim::Bandwidth kPcie5x16 = gbyte_s(32.0 * 16 * 128.0 / 130.0 / 8.0);  // [PCIe] 63.0 GB/s

// The node switch reduces and multicasts (NVLink SHARP) at `efficiency` of the ring's NVLink rate.
NodeType with_sharp(NodeType t, double efficiency) {
    t.switch_reduction = efficiency;
    return t;
}

std::string gpu(std::size_t j) {
    return fmt::format("g{}", j);
}
std::string nic(std::size_t k) {
    return fmt::format("nic{}", k);
}

// A node's headline figures (8 GPUs unless given), without links yet.
NodeType eight_gpus(std::string name, std::string fabric, std::size_t nics, sim::Bandwidth nic_bw,
                    sim::Bandwidth per_gpu, std::size_t gpus = 8) {
    NodeType t;
    t.preset = std::move(name);
    t.fabric = std::move(fabric);
    t.gpus = gpus;
    t.nics = nics;
    t.nic_bandwidth = nic_bw;
    t.gpu_bandwidth = per_gpu;
    return t;
}

// GPUs (eight unless given) each on one link to an NVSwitch fabric, one NIC per GPU behind a PCIe link.
NodeType nvswitch_node(std::string name, std::string fabric, sim::Bandwidth per_gpu, sim::Bandwidth nic_bw,
                       sim::Bandwidth pcie, std::size_t gpus = 8) {
    NodeType t = eight_gpus(std::move(name), std::move(fabric), gpus, nic_bw, per_gpu, gpus);
    for (std::size_t j = 0; j < t.gpus; ++j) {
        t.links.push_back({gpu(j), "", per_gpu, Medium::nvlink});
        t.links.push_back({gpu(j), nic(j), pcie, Medium::pcie, LinkClass::inter});
    }
    return t;
}

NodeType dgx1_v100() {
    const sim::Bandwidth nvlink2 = gbyte_s(25.0);  // [V100] 25 GB/s per direction per link
    NodeType t = eight_gpus("dgx1_v100", "NVLink 2 hybrid cube-mesh",
                            4,               // [DGX1] four EDR InfiniBand NICs
                            gbit_s(100.0),   // [DGX1] 100 Gb/s EDR
                            nvlink2 * 6.0);  // [V100] six links per GPU
    // NVLink links per GPU pair [NCCL671]: 0-1 NV1, 0-2 NV1, 0-3 NV2, 0-4 NV2, 1-2 NV2, 1-3 NV1, 1-5 NV2,
    // 2-3 NV2, 2-6 NV1, 3-7 NV1, 4-5 NV1, 4-6 NV1, 4-7 NV2, 5-6 NV2, 5-7 NV1, 6-7 NV2: two fully connected
    // quads (0-3, 4-7) joined GPU i to GPU i+4; 16 pairs, 24 links, six per GPU.
    constexpr int kPairs[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1},
                                 {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1},
                                 {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};
    for (const auto& p : kPairs)
        for (int l = 0; l < p[2]; ++l)
            t.links.push_back(
                {gpu(static_cast<std::size_t>(p[0])), gpu(static_cast<std::size_t>(p[1])), nvlink2, Medium::nvlink});
    for (std::size_t j = 0; j < t.gpus; ++j) {
        // A pair without NVLink talks over PCIe through the CPUs ("SYS"); the PCIe switch a GPU pair shares on
        // its way to the CPU, and the QPI link between the two CPUs, are not modelled (one root node).
        t.links.push_back({gpu(j), "", kPcie3x16, Medium::pcie});                            // [NCCL671] 8 GT/s x16
        t.links.push_back({gpu(j), nic(j / 2), kPcie3x16, Medium::pcie, LinkClass::inter});  // [DGX1] pair + NIC
    }
    return t;
}

// Eight GPUs fully connected, one link of `per_link` (per direction) per pair, each on PCIe to the host and to its
// own NIC (the AMD Instinct platforms' Infinity Fabric mesh).
NodeType mesh_node(std::string name, std::string fabric, sim::Bandwidth per_link, sim::Bandwidth nic_bw,
                   sim::Bandwidth pcie) {
    NodeType t = eight_gpus(std::move(name), std::move(fabric), 8, nic_bw, per_link * 7.0);
    for (std::size_t a = 0; a < t.gpus; ++a)
        for (std::size_t b = a + 1; b < t.gpus; ++b) t.links.push_back({gpu(a), gpu(b), per_link, Medium::nvlink});
    for (std::size_t j = 0; j < t.gpus; ++j) {
        t.links.push_back({gpu(j), "", pcie, Medium::pcie});
        t.links.push_back({gpu(j), nic(j), pcie, Medium::pcie, LinkClass::inter});
    }
    return t;
}

NodeType pcie_8gpu() {
    NodeType t = eight_gpus("pcie_8gpu", "PCIe Gen4, two GPUs per switch",
                            1,              // one NIC on the CPU's root complex
                            gbit_s(200.0),  // [CX6] 200 Gb/s
                            kPcie4x16);     // [PCIe] Gen4 x16 per GPU
    t.pcie_switches = 4;                    // [PEX] two x16 GPUs per switch
    for (std::size_t k = 0; k < t.pcie_switches; ++k)
        t.links.push_back({fmt::format("p{}", k), "", kPcie4x16, Medium::pcie});  // [PEX] x16 uplink to the CPU
    for (std::size_t j = 0; j < t.gpus; ++j)
        t.links.push_back({gpu(j), fmt::format("p{}", j / 2), kPcie4x16, Medium::pcie});
    t.links.push_back({"", nic(0), kPcie4x16, Medium::pcie, LinkClass::inter});  // [CX6] PCIe Gen4 x16
    return t;
}

}  // namespace

const std::vector<NodeType>& node_presets() {
    static const std::vector<NodeType> presets{
        dgx1_v100(),
        // [A100] 300 GB/s per direction per GPU through NVSwitch; [A100] 8 x 200 Gb/s HDR; [PCIe] Gen4 x16
        nvswitch_node("dgx_a100", "NVSwitch (NVLink 3)", gbyte_s(300.0), gbit_s(200.0), kPcie4x16),
        // [H100] 450 GB/s per direction per GPU through NVSwitch gen3; [H100] 8 x 400 Gb/s NDR; PCIe Gen5 x16
        // [NVLS] Hopper 0.85
        with_sharp(nvswitch_node("dgx_h100", "NVSwitch gen3 (NVLink 4)", gbyte_s(450.0), gbit_s(400.0), kPcie5x16),
                   0.85),
        // [H200] the H100's NVSwitch fabric, 900 GB/s per GPU; [H200] 8 x 400 Gb/s ConnectX-7
        // [NVLS] Hopper 0.85
        with_sharp(nvswitch_node("hgx_h200", "NVSwitch gen3 (NVLink 4)", gbyte_s(450.0), gbit_s(400.0), kPcie5x16),
                   0.85),
        pcie_8gpu(),
        // [B200] 900 GB/s per direction per GPU through NVSwitch (NVLink 5); 8 x 400 Gb/s ConnectX-7; PCIe Gen5 x16
        // [NVLS] Blackwell 0.74
        with_sharp(nvswitch_node("dgx_b200", "NVSwitch (NVLink 5)", gbyte_s(900.0), gbit_s(400.0), kPcie5x16), 0.74),
        // [NVL72] 72 GPUs in one NVLink 5 domain, 900 GB/s per direction each; one 400 Gb/s NIC per GPU; PCIe Gen5
        // [NVLS] Blackwell 0.74
        with_sharp(nvswitch_node("gb200_nvl72", "NVLink Switch System (NVLink 5, 72 GPUs)", gbyte_s(900.0),
                                 gbit_s(400.0), kPcie5x16, 72),
                   0.74),
        // [MI300X] 64 GB/s per direction per GPU pair (Infinity Fabric, full mesh); [RAILNIC] 8 x 400 Gb/s; Gen5 x16
        mesh_node("amd_mi300x", "Infinity Fabric full mesh (7 links per GPU)", gbyte_s(64.0), gbit_s(400.0), kPcie5x16),
        // [MI355X] 76.8 GB/s per direction per GPU pair; [RAILNIC] 8 x 400 Gb/s; PCIe Gen5 x16
        mesh_node("amd_mi355x", "Infinity Fabric full mesh (7 links per GPU)", gbyte_s(76.8), gbit_s(400.0), kPcie5x16),
    };
    return presets;
}

const NodeType* find_node_preset(std::string_view name) {
    const auto& p = node_presets();
    const auto it = std::find_if(p.begin(), p.end(), [&](const NodeType& t) { return t.preset == name; });
    return it == p.end() ? nullptr : &*it;
}

NodeType plain_node(std::size_t gpus, sim::Bandwidth gpu_bandwidth, std::size_t nics, sim::Bandwidth nic_bandwidth) {
    if (nics != 1 && nics != gpus)
        throw std::invalid_argument(
            fmt::format("a node given key by key takes one NIC or one per GPU ({}), not {}", gpus, nics));
    NodeType t;
    t.fabric = "node switch";
    t.gpus = gpus;
    t.nics = nics;
    t.nic_bandwidth = nic_bandwidth;
    t.gpu_bandwidth = gpu_bandwidth;
    for (std::size_t j = 0; j < gpus; ++j) t.links.push_back({gpu(j), "", gpu_bandwidth});
    // The NIC's attachment runs at the NIC's rate, so the NIC port stays the bottleneck.
    if (nics == gpus && gpus > 1)
        for (std::size_t j = 0; j < gpus; ++j)
            t.links.push_back({gpu(j), nic(j), nic_bandwidth, Medium::unknown, LinkClass::inter});
    else
        t.links.push_back({"", nic(0), nic_bandwidth, Medium::unknown, LinkClass::inter});
    return t;
}

std::vector<std::string> add_node(Fabric& f, const NodeType& t, std::size_t index, sim::Time intra_latency) {
    const std::string root = fmt::format("n{}", index);
    auto part = [&](const std::string& p) { return root + p; };
    const Vertex node_switch = f.add_node(root, NodeKind::switch_);
    if (t.switch_reduction > 0.0) {
        // A switch that reduces is an endpoint of nvls's flows; it belongs to its node (its bytes stay inside).
        f.set_node(node_switch, static_cast<std::uint32_t>(index));
        f.set_reducing_switch(static_cast<std::uint32_t>(index), node_switch, t.switch_reduction);
    }
    for (std::size_t k = 0; k < t.pcie_switches; ++k) f.add_node(part(fmt::format("p{}", k)), NodeKind::switch_);
    std::vector<std::string> nics;
    for (std::size_t k = 0; k < t.nics; ++k) {
        nics.push_back(part(nic(k)));
        f.add_node(nics.back(), NodeKind::switch_);
    }
    for (std::size_t j = 0; j < t.gpus; ++j) {
        const Vertex v = f.add_node(part(gpu(j)), NodeKind::host);
        f.set_node(v, static_cast<std::uint32_t>(index));
        f.set_transit(v, false);
    }
    for (const NodeLink& l : t.links) f.add_link(part(l.a), part(l.b), l.bandwidth, intra_latency, l.cls, l.medium);
    return nics;
}

}  // namespace ddlsim::topo
