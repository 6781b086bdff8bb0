// Algorithm "auto": per collective, the all-reduce NCCL would weigh, picked by predicted time.
//
// NCCL's tuner (NVIDIA/nccl, src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime, commit
// 5067397c2676d5aed50042fc39e5c8ee96eb0027) predicts, per algorithm and protocol, time = latency + bytes / bus
// bandwidth from tables measured on NVIDIA's machines, and src/enqueue.cc (same commit, the table loop around
// `minTime`) takes the lowest. ddlsim keeps the rule -- every candidate's predicted time for this message on this
// job, the minimum wins -- but predicts with its own model: CollectiveContext::round_time, one round of the
// candidate alone on the job's fabric (models/ runs it on the flow network with the job's routes). Why not NCCL's
// constants: they describe NVLink, PCIe and InfiniBand as NVIDIA measured them (e.g. Simple-protocol base
// latency 8.4 us for both ring and tree, net hop latency 14 us, tree bus bandwidth x 0.92), not the fabric a
// scenario describes; a pick made with them would often lose on the simulated fabric, which is what the scenario
// asks about. Why not the closed-form alpha_beta: it charges each endpoint's own serialisation but not a link
// that several endpoints share (a node's NIC under the hierarchical rails or a flat tree's cross-node edges), so
// on multi-GPU nodes it overrates those candidates by up to the GPUs per node.
//
// Candidates, and what they stand for in NCCL:
//   ring          NCCL's ring (every rank sends S/n to its successor; one channel per NIC on multi-NIC nodes).
//   double_tree   NCCL's double binary tree (ncclGetDtree). With several ranks per node, as NCCL >= 2.4 builds it
//                 (src/graph/connect.cc, connectTrees, same commit): per channel a chain inside each node whose head
//                 joins the two trees among nodes, one channel per NIC (allreduce_algorithms.hpp); with one rank per
//                 node, the trees over ranks.
//   hierarchical  only when there are at least two nodes of equal size above one worker: NCCL's rings on several
//                 channels, each crossing between nodes on its own NIC (rails), carry a node's inter-node bytes
//                 over all of its NICs; ddlsim's hierarchical all-reduce (intra-node reduce-scatter, rings along
//                 rails, intra-node all-gather) is the form of that which its fabric and ECMP routing can run.
//   nvls          NCCL's NVLS (NVLink SHARP, topologies/in_network.hpp), only where every node's switch reduces (the
//                 node preset says so) and the nodes hold equal numbers of workers, at least two; NCCL's NVLSTree
//                 among nodes is modelled by rings along the rails.
//   collnet       NCCL's CollNetDirect (InfiniBand SHARP, topologies/in_network.hpp), only where the fabric's switches
//                 between nodes reduce (network.sharp) and the workers sit on at least two nodes of equal size.
// Not candidates: the single binary tree (NCCL's tree algorithm is always the double tree), halving-doubling and
// torus2d (NCCL has neither); NCCL's CollNetChain (used where no NVSwitch joins a node's GPUs) and NVLS with
// CollNet among nodes are not modelled: collnet's direct scatter and gather stand for them.
// PAT is NCCL's all-gather/reduce-scatter only. A pick is a pure function of the message size, the workers, their nodes
// and the fabric, so equal runs pick equally.
#pragma once

#include <vector>

#include "sim/units.hpp"
#include "topologies/collectives.hpp"

namespace ddlsim::topo {

/// One candidate and its predicted time for one message.
struct AutoCandidate {
    AllreduceAlgorithm algorithm = AllreduceAlgorithm::ring;
    sim::Time predicted;
};

/// Every algorithm auto may weigh, in preference order for ties (auto_candidates picks those that apply).
inline constexpr AllreduceAlgorithm k_auto_pool[]{AllreduceAlgorithm::ring, AllreduceAlgorithm::double_tree,
                                                  AllreduceAlgorithm::hierarchical, AllreduceAlgorithm::nvls,
                                                  AllreduceAlgorithm::collnet};

/// The algorithms auto weighs for `ctx` (its workers and node_of), in preference order for ties.
[[nodiscard]] std::vector<AllreduceAlgorithm> auto_candidates(const CollectiveContext& ctx);
/// Every candidate with its predicted time (ctx.round_time) for ctx.bytes; throws without ctx.round_time.
[[nodiscard]] std::vector<AutoCandidate> auto_predictions(const ArchitectureSpec& spec, const CollectiveContext& ctx);
/// The candidate auto picks: the lowest predicted time, the earlier candidate on a tie.
[[nodiscard]] AllreduceAlgorithm pick_allreduce(const ArchitectureSpec& spec, const CollectiveContext& ctx);

}  // namespace ddlsim::topo
