// What one worker sends per iteration and when: the gradient, cut into messages by the
// overlap scheme, each compressed and turned into a sequence of collective phases.
//
// Messages (buckets), in the order backward produces them:
//   no overlap      one message holding every tensor, ready when backward ends
//   wfbp            one message per layer, ready when that layer's backward ends
//                   (wait-free backprop, Zhang et al., USENIX ATC 2017 "Poseidon")
//   fusion buffer   static buckets in backward order, a bucket closed once it holds at least
//                   bucket_size bytes (PyTorch DDP, Li et al., VLDB 2020); with a cycle time,
//                   Horovod's fusion: tensors that become ready within one cycle (on the
//                   nominal schedule) are fused, up to bucket_size per buffer (Sergeev & Del
//                   Balso, arXiv 1802.05799)
//   mgwfbp          MG-WFBP (Shi, Chu, Li, INFOCOM 2019): walking backward order, the next
//                   layer is merged into the current group when sending the two together ends
//                   no later than sending them apart, with the collective's time fitted as
//                   a + b·bytes (so a merge pays when the saved start-up a exceeds the wait)
//   priority        every tensor cut into partitions of at most partition_size; the partitions
//                   of front layers go first (P3, Jayarajan et al., SysML 2019; ByteScheduler,
//                   Peng et al., SOSP 2019)
// A message is ready when the backward of the front-most layer it holds has finished.
//
// Phases of a message after compression (models/compression.hpp), in order: the PowerSGD
// P all-reduce, local work, the Q all-reduce; the summable part on the configured
// architecture; the all-gather part (sparse all-gather: ring for the ring algorithm, else
// recursive doubling / Bruck; with a PS: push the sparse payload, pull the aggregate, at most
// n payloads or the dense size); the gTop-k part (Shi et al., ICDCS 2019 tree).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "models/grouping.hpp"
#include "models/job.hpp"
#include "models/program/planner.hpp"
#include "topologies/collectives.hpp"
#include "topologies/fabric.hpp"

namespace ddlsim::models {

struct Phase {
    program::CommOp op;  ///< what the phase does (its `before`: work_before), the planner's key of `collective`
    const topo::Collective* collective = nullptr;
    CodecWork work_before;  ///< local work before this phase starts (lowrank: between P and Q)
    double wire_bytes = 0.0;
    double machine_bytes = 0.0;  ///< of wire_bytes, those between different machines (through NICs)
};

struct Message {
    std::vector<Piece> pieces;
    std::uint32_t front_layer = 0;  ///< smallest forward index among its pieces: ready when its backward ends
    std::uint32_t back_layer = 0;   ///< largest forward index
    double dense_bytes = 0.0;
    double payload_bytes = 0.0;  ///< compressed, one worker's
    CodecWork encode;
    CodecWork decode;  ///< all received payloads
    std::vector<Phase> phases;
};

/// The messages of one job and the collectives they run on (owned here).
class CommPlan {
public:
    using Picks = program::Picks;
    /// `model_sync`: the payload is the model (Local SGD, FedAvg, gossip), sent as one message. `picks`: auto's picks
    /// made so far for this job on this fabric (models::simulate keeps them across its attempts), else the plan's own.
    CommPlan(const TrainingJob& job, const topo::Fabric& fabric, bool model_sync, Picks* picks = nullptr);
    CommPlan(const CommPlan&) = delete;  // the planner points at the context
    CommPlan& operator=(const CommPlan&) = delete;

    [[nodiscard]] const std::vector<Message>& messages() const { return messages_; }
    /// Wire bytes of one iteration's messages (transfers between hosts, counted once).
    [[nodiscard]] double wire_bytes() const { return wire_bytes_; }
    /// Of those, the bytes between hosts of different machines (nodes): what crosses NICs.
    [[nodiscard]] double machine_bytes() const { return machine_bytes_; }
    /// One worker's compressed payload of all messages (the whole gradient or model).
    [[nodiscard]] sim::Bytes payload_bytes() const {
        double p = 0.0;
        for (const Message& m : messages_) p += m.payload_bytes;
        return sim::Bytes{p};
    }
    /// Collective rounds per iteration (every phase of every message).
    [[nodiscard]] double collectives() const {
        double c = 0.0;
        for (const Message& m : messages_) c += static_cast<double>(m.phases.size());
        return c;
    }
    /// Codec seconds per iteration on worker w's device.
    [[nodiscard]] sim::Time codec_time(std::uint32_t w) const;
    [[nodiscard]] sim::Time work_time(const CodecWork& work, std::uint32_t w) const;
    /// Closed-form time of one message's phases without contention (plus its codec work on worker 0).
    [[nodiscard]] sim::Time alpha_beta(const Message& m) const;
    [[nodiscard]] sim::Time alpha_beta(const Phase& p) const;
    /// Messages in which each layer's tensors end (per layer: count), for priority scheduling.
    [[nodiscard]] const std::vector<std::uint32_t>& messages_per_layer() const { return per_layer_; }
    [[nodiscard]] const topo::CollectiveContext& context() const { return ctx_; }
    /// The job's one planner: every collective of its messages, and those its trainer adds (program/planner.hpp).
    [[nodiscard]] program::Planner& planner() { return planner_; }
    /// Algorithm auto: per picked algorithm, the collectives of one iteration that run it (empty otherwise).
    [[nodiscard]] std::vector<AlgorithmPick> algorithm_picks() const;

private:
    void build_phases(Message& m);
    /// The messages of one iteration, cut by the job's grouping scheme (models/grouping.hpp).
    [[nodiscard]] Groups group(const std::vector<Piece>& backward_pieces) const;
    /// The summable collective's contention-free time on this fabric as a + b x bytes (a: seconds, b: s/byte).
    [[nodiscard]] std::pair<double, double> fit_collective() const;

    const TrainingJob& job_;
    const topo::Fabric& fabric_;
    topo::CollectiveContext ctx_;
    std::unique_ptr<Compressor> compressor_;
    std::vector<Message> messages_;
    std::vector<std::uint32_t> per_layer_;
    std::vector<std::vector<std::uint32_t>> owner_;  ///< ps round_robin/balanced: [layer][tensor] -> server
    /// BytePS with several messages: per message, per piece, its partitions' (server, fraction of the piece), placed
    /// over the whole model once (empty: each message's round places its own).
    std::vector<std::vector<std::vector<std::pair<std::uint32_t, double>>>> byteps_place_;
    program::Planner planner_;  ///< after ctx_, which it reads
    double wire_bytes_ = 0.0;
    double machine_bytes_ = 0.0;
};

/// Latency and bottleneck bandwidth between the hosts of two endpoints of `job` (local on one host).
[[nodiscard]] sim::PathCost endpoint_path_cost(const TrainingJob& job, const topo::Fabric& fabric, std::uint32_t a,
                                               std::uint32_t b);

/// t scaled by f (rounded to the picosecond).
[[nodiscard]] sim::Time scaled(sim::Time t, double f);

}  // namespace ddlsim::models
