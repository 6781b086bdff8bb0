// In-network aggregation: all-reduces whose sums are formed inside a switch.
//
//   nvls  NVLink SHARP (NCCL's NVLS algorithm, NCCL >= 2.17). Inside a node whose NVSwitch reduces, a GPU's
//         multimem.ld_reduce makes the switch read one chunk from every GPU, sum it and return the sum to that
//         GPU; its multimem.st then hands the switch the summed chunk, which the switch multicasts to every GPU
//         (NVIDIA/nccl src/device/all_reduce.h @ 5067397c2676d5aed50042fc39e5c8ee96eb0027, the NVLS
//         specialisation: reduce-scatter by ld_reduce, all-gather by multicast store). With g GPUs and S bytes
//         each, every GPU sends S + S/g into the switch and receives S/g + S from it, against 2(g-1)/g S each way
//         for a ring: NVLS beats the ring above g = 3 at equal rates. Its transfers run at the reducing switch's
//         efficiency (node_type.cpp, NCCL's nvlsEfficiency: 0.85 on Hopper) of the NVLink rate, charged as
//         bytes / efficiency.
//         The plan: endpoint n + j stands for node j's switch. S is cut into k segments of segment_size, or by
//         default of what NCCL's channels move per loop: 16 channels x g heads x 128 KiB chunks on Hopper
//         (src/transport/nvls.cc, same commit: NVLS_NCHANNELS_SM90 16, NCCL_NVLS_CHUNKSIZE 128 KiB; the
//         kernel's loopCount is nHeads x chunkSize per channel), pipelined: per segment every GPU sends S/k up (one
//         two segments in flight per GPU and direction); once all are in, the switch returns each GPU its S/(kg) summed
//         chunk; each GPU stores it back; once all are back, the switch multicasts the segment (S/k) to every GPU. Idle
//         switch, k = 1, links of rate B and latency L, f = 1/efficiency: T = 4L + 2 f S (1 + 1/g) / B. Several nodes
//         (all of g GPUs): between the return and the store of each segment, GPU j all-reduces its summed chunk with
//         GPU j of every other node along the rail by NCCL's binary tree (ncclGetBtree), segment by segment, so the
//         node-level and network stages pipeline as in NCCL's NVLSTree (src/device/all_reduce.h, NCCL_ALGO_NVLS_TREE).
//         Between two nodes its bytes between machines equal the hierarchical all-reduce's.
//
//   collnet  InfiniBand SHARP between nodes (NCCL's CollNetDirect, NCCL >= 2.14 with the SHARP plugin). GPU j of
//         every node is the head of rail j: the node's GPUs reduce-scatter S directly (every GPU sends each other
//         GPU of its node that GPU's S/g share), head j sends its summed share up to rail j's SHARP switch, the
//         switch sums the m nodes' shares and returns the total to every head j, and the node's GPUs all-gather
//         directly (NVIDIA/nccl src/device/all_reduce.h @ 5067397c2676d5aed50042fc39e5c8ee96eb0027,
//         runRing/Tree's CollNetDirect specialisation: scatter to the heads, send to the network, receive, gather
//         from the heads). Per GPU the network carries S/g each way, m / (2(m-1)) of a ring's 2(m-1)/m S/g (as
//         much at m = 2, half as m grows). Its network transfers run at kCollnetEfficiency of the links' rate, charged
//         as bytes / efficiency (as nvls). Rail j's switch is the SHARP switch GPU j reaches first
//         (topo::Fabric::sharp_switch: the top switch of a two_tier, the rail leaf of a rail_optimized); endpoint
//         ctx.network_switches + j stands for it. S is cut into k segments of segment_size, by default NCCL's
//         CollNetDirect loop, g heads x 512 KiB chunks (src/enqueue.cc, same commit: the SIMPLE protocol's step of
//         buffSize 4 MiB / NCCL_STEPS 8 per chunk), two segments in flight per GPU and direction. Idle links, k = 1,
//         intra links of rate B_i, network links of rate B_n, f = 1 / efficiency: T = 2 L_i + 2 L_n + 2 (g-1)/g S / B_i
//         + 2 f S / (g B_n) (the α-β form keeps the stages' longer streaming time plus one segment of the shorter; it
//         assumes a NIC per GPU, as CollNetDirect does at full speed).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/transfer_dag.hpp"
#include "topologies/collectives.hpp"

namespace ddlsim::topo {

/// NCCL's NVLS channels on Hopper and its chunk per head (src/transport/nvls.cc, see above).
inline constexpr std::uint32_t kNvlsChannels = 16;
inline constexpr double kNvlsChunk = 128.0 * 1024.0;
/// The default segment of an nvls round with g GPUs per node: one loop of every channel.
[[nodiscard]] sim::Bytes nvls_default_segment(std::uint32_t g);

/// NVLS all-reduce of `bytes` per worker: node_of[w] is worker w's node (0 .. nodes-1, every node holding the same
/// number of workers), endpoint n + j the switch of node j, `efficiency` the switch's rate as a fraction of the
/// links'. Throws std::invalid_argument for uneven nodes, a node without workers or efficiency outside (0, 1].
[[nodiscard]] sim::Plan nvls_allreduce_plan(const std::vector<std::uint32_t>& node_of, std::uint32_t n,
                                            sim::Bytes bytes, sim::Bytes segment, double efficiency);

/// The nvls collective for ctx (ctx.switch_reduction must be positive).
[[nodiscard]] std::unique_ptr<Collective> make_nvls(const ArchitectureSpec& spec, const CollectiveContext& ctx);

/// Upper estimate of the transfers of one nvls round (AllreduceAlgorithmInfo::transfers).
[[nodiscard]] double nvls_transfers(double n, double bytes, double segment);

/// Whether ctx's workers can run nvls: every node reduces (ctx.switch_reduction > 0) and holds the same number
/// of workers, at least two.
[[nodiscard]] bool nvls_applies(const CollectiveContext& ctx);

/// SHARP's aggregation rate as a fraction of the links': NCCL's CollNetDirect bandwidth on Hopper and later
/// (src/graph/tuning.cc @ 5067397c2676d5aed50042fc39e5c8ee96eb0027: `if (minCompCap >= 90) busBw *= .85`).
/// NCCL applies it from compute capability 9.0 on; the fabric does not know the GPUs, so it is charged on every
/// generation here (on A100 and older SHARP runs at the links' rate in NCCL's model: this is 15 % slower).
inline constexpr double kCollnetEfficiency = 0.85;
/// NCCL's CollNetDirect chunk per head: the SIMPLE protocol's step, 4 MiB / 8 (src/enqueue.cc, see above).
inline constexpr double kCollnetChunk = 512.0 * 1024.0;

/// CollNet all-reduce of `bytes` per worker: node_of as for nvls; endpoint `base` + j is rail j's SHARP switch.
/// Throws std::invalid_argument for uneven nodes or efficiency outside (0, 1].
[[nodiscard]] sim::Plan collnet_allreduce_plan(const std::vector<std::uint32_t>& node_of, std::uint32_t n,
                                               sim::Bytes bytes, sim::Bytes segment, std::uint32_t base,
                                               double efficiency);

/// The collnet collective for ctx (ctx.network_reduction must be positive).
[[nodiscard]] std::unique_ptr<Collective> make_collnet(const ArchitectureSpec& spec, const CollectiveContext& ctx);

/// Upper estimate of the transfers of one collnet round.
[[nodiscard]] double collnet_transfers(double n, double bytes, double segment);

/// Whether ctx's workers can run collnet: the fabric's switches between nodes reduce (ctx.network_reduction > 0)
/// and the workers sit on at least two nodes, each holding the same number.
[[nodiscard]] bool collnet_applies(const CollectiveContext& ctx);

}  // namespace ddlsim::topo
