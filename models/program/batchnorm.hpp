// SyncBatchNorm on the per-rank program (job key bn_group): each group of bn_group consecutive ranks all-reduces its
// BatchNorm statistics, every BatchNorm of every micro-batch, forward and backward, and the rank's compute waits for
// each (MLPerf's BN_GROUP; NVIDIA's group BatchNorm). The all-reduces are real flows, a ring in each group, on a
// communicator of their own (Call::stream 1), so they share links with the job's gradient traffic:
//
//   forward   ... compute fwd layer l  [issue bn(l)] [wait bn(l)]  compute fwd layer l+1 ...
//   backward  ... compute bwd layer l+1  [issue bn(l)] [wait bn(l)]  compute bwd layer l ...
//
// (the statistics are all-reduced after a layer's forward and before its backward: a BatchNorm follows its layer's
// convolution, so its backward comes first). Each BatchNorm of C channels all-reduces kBatchNormBytesPerChannel x C
// bytes, which NCCL sends with its LL protocol, the one it picks for messages this small: every 8-byte line carries
// 4 bytes of data and a 4-byte flag (NCCL's src/device/prims_ll.h; its cost model's Ring/LL busBw x 0.5,
// topologies/transport.cpp [NCCL-T]), so the ring moves twice the bytes. Each call's launch is the job's
// batchnorm_launch, NCCL's LL latency less the ring's hop latencies: on an idle fabric an all-reduce costs NCCL's own
// model of it (topo::nccl_small_allreduce, which models/compute.hpp add_batchnorm_sync charges as a closed form).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "models/job.hpp"
#include "models/program/planner.hpp"
#include "models/program/program.hpp"

namespace ddlsim::models::program {

class BatchNormSync {
public:
    /// SyncBatchNorm's communicator: a process group of its own, beside the job's data-parallel one.
    static constexpr std::uint8_t kStream = 1;

    /// Registers the job's BatchNorm groups with the planner when the job synchronises them (bn_group > 1).
    BatchNormSync(const TrainingJob& job, Planner& planner);

    [[nodiscard]] bool active() const { return active_; }

    /// Emits into `p` the forward or backward pass of micro-batch `mb` over layers [first, last]: `emit(a, b)` adds
    /// the compute of layers [a, b] (the caller's labels and flags), split around each BatchNorm's all-reduces, which
    /// it adds to `set` and issues and waits for. Without SyncBatchNorm: emit(first, last).
    void pass(ProgramSet& set, Program& p, bool forward, std::uint32_t first, std::uint32_t last, std::uint32_t mb,
              const std::function<void(std::uint32_t, std::uint32_t)>& emit);

    /// One iteration's all-reduces (every micro-batch's): their bytes between hosts and between machines, and count.
    struct Totals {
        double wire = 0.0, machine = 0.0, collectives = 0.0;
    };
    [[nodiscard]] Totals per_iteration();

private:
    [[nodiscard]] CommOp op(double channels) const;
    void sync_layer(ProgramSet& set, Program& p, bool forward, std::uint32_t l, std::uint32_t mb);

    const TrainingJob& job_;
    Planner& planner_;
    GroupId group_ = 0;
    bool active_ = false;
    std::vector<std::vector<double>> channels_;  ///< per layer: each BatchNorm's channels
};

}  // namespace ddlsim::models::program
