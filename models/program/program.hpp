// The per-rank program: what one rank does in one optimizer step, as data that one executor
// (models/program/executor.hpp) runs on the event engine. The shape of ASTRA-sim's per-rank execution graph
// (workload/Workload.hh: compute and communication nodes over communicator groups, issued when their dependencies
// are met) and of htsim's collectives as flow DAGs, kept as a list per rank:
//
//   rank r:  [issue c3] [wait c3] compute fwd unit0 mb0 [issue c4] [wait c4] compute fwd unit1 ... [send → r+1]
//
// Instructions run in order on the rank's compute stream; only `compute` takes time on it.
//   compute  a part of the model (layers [first, last]) for one micro-batch: forward, backward, the accumulation
//            micro-batches of a step (no communication), or the optimizer's update (a fraction of it: a shard's)
//   issue    puts a call (a sequence of collectives, ProgramSet::calls) on its communicator's stream: a FIFO with
//            one call in flight (PyTorch's ProcessGroupNCCL runs a process group's collectives on one NCCL stream;
//            DeepSpeed's ZeRO reduces and gathers on its own single stream); each communicator has its own
//            (Call::stream)
//   wait     the compute stream waits until that call is done on this rank
//   send     starts a point-to-point transfer of `bytes` to rank `peer`, tagged (not on the FIFO: NCCL's
//            send/recv of a pipeline run on their own streams)
//   recv     the compute stream waits until the matching send from `peer` has arrived
//   mark     tells the trainer the rank got here (a schedule record, gradients ready for the waiting figures)
// An iteration ends when the last instruction has run and every issued call is done.
//
// Ranks may run different programs (pipeline stages will): ProgramSet keeps the distinct programs once and which
// rank runs which, so 16,384 ranks of one data-parallel program hold one copy. A call is named by its index in
// ProgramSet::calls, the same index on every rank that joins it: that index (with the iteration and the phase) is
// the collective round the ranks meet in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/program/planner.hpp"

namespace ddlsim::models::program {

enum class ComputeKind : std::uint8_t {
    accumulate,  ///< the k - 1 micro-batches of a step before the last (forward and backward, no_sync)
    forward,
    backward,
    backward_input,   ///< a backward's input gradients only (zero-bubble schedules; LayerTimes::bwd - wgrad)
    backward_weight,  ///< a backward's weight gradients only (LayerTimes::wgrad)
    update,           ///< the optimizer step, `fraction` of the whole model's (a shard's 1/g)
    codec,            ///< a codec kernel (`work`: a message's encode beside backward), not stretched by a straggler
};

/// Layers [first, last] of micro-batch `micro_batch` (forward or backward), or a whole-model compute.
struct Compute {
    ComputeKind kind = ComputeKind::forward;
    std::uint32_t first = 0, last = 0;
    std::uint32_t micro_batch = 0;
    double fraction = 1.0;  ///< update: the share of the update this rank runs
    std::string label;      ///< the timeline's name of the span
    /// Forward, backward: each layer's time scaled by the straggler on its own and drawn as its own span ("fwd
    /// <layer>"), as a run of layer kernels (else the range's total is scaled once and drawn as one span).
    bool per_layer = false;
    /// Stretched by (1 + overlap_slowdown) when it starts while the rank communicates (false: never).
    bool slowable = true;
    /// Forward, backward of one layer (first == last): which of its pieces it runs, a mask of kHead (its leading
    /// GEMMs, LayerTimes::head of its time), kBody (the rest) and kTail (its trailing GEMMs, LayerTimes::tail).
    std::uint8_t pieces = kWhole;
    static constexpr std::uint8_t kHead = 1, kBody = 2, kTail = 4, kWhole = 7;
    CodecWork work;  ///< codec: the kernel's work
};

/// One entry of a rank's communication stream: collectives run back to back (hybrid sharding: the reduce-scatter,
/// then the replica all-reduce, in one slot). Each phase's codec work runs before and after it on the rank's device.
struct Call {
    std::vector<CommOp> phases;
    std::string label;      ///< the timeline's name of the call, after "<verb>it<iteration> "
    std::string verb;       ///< e.g. "sync "
    bool gradient = false;  ///< reduces gradients
    CodecWork encode;       ///< on the rank's device when the call starts, before its launch
    CodecWork decode;       ///< after its last phase
    /// The communicator whose stream runs it: 0, the job's own (data parallelism's process group); another number,
    /// a process group of its own (NCCL gives each communicator its own stream), so its calls do not queue behind
    /// the others' (a SyncBatchNorm group, a tensor- or expert-parallel group). ProgramSet::stream's policy holds on
    /// each.
    std::uint8_t stream = 0;
    /// Its launch before the first phase (none: the transport's per-collective overhead, TrainingJob's
    /// collective_overhead).
    std::optional<sim::Time> launch;

    [[nodiscard]] static Call of(std::vector<CommOp> phases, std::string label, bool gradient = false) {
        Call c;
        c.phases = std::move(phases);
        c.label = std::move(label);
        c.gradient = gradient;
        return c;
    }
};

struct Instr {
    enum class Kind : std::uint8_t { compute, issue, wait, send, recv, mark };
    Kind kind = Kind::compute;
    std::uint32_t index = 0;  ///< compute: into Program::computes; issue, wait: into ProgramSet::calls; mark: its id
    std::uint32_t peer = 0;   ///< send, recv: the other rank
    std::uint32_t tag = 0;    ///< send, recv: matches a send to its receive within an iteration
    double bytes = 0.0;       ///< send
    /// send, recv: `offset` names the peer relative to the running rank (rank + offset), so that the ranks of one
    /// pipeline stage share a program; else `peer` is absolute.
    bool relative = false;
    std::int32_t offset = 0;

    [[nodiscard]] std::uint32_t peer_of(std::uint32_t rank) const {
        return relative ? static_cast<std::uint32_t>(static_cast<std::int64_t>(rank) + offset) : peer;
    }
};

/// One rank's step.
struct Program {
    std::vector<Compute> computes;
    std::vector<Instr> instrs;

    std::uint32_t compute(Compute c) {
        computes.push_back(std::move(c));
        instrs.push_back({Instr::Kind::compute, static_cast<std::uint32_t>(computes.size() - 1)});
        return static_cast<std::uint32_t>(instrs.size() - 1);
    }
    void issue(std::uint32_t call) { instrs.push_back({Instr::Kind::issue, call}); }
    void wait(std::uint32_t call) { instrs.push_back({Instr::Kind::wait, call}); }
    void send(std::uint32_t peer, double bytes, std::uint32_t tag) {
        instrs.push_back({Instr::Kind::send, 0, peer, tag, bytes});
    }
    void recv(std::uint32_t peer, std::uint32_t tag) { instrs.push_back({Instr::Kind::recv, 0, peer, tag}); }
    void send_relative(std::int64_t offset, double bytes, std::uint32_t tag) {
        instrs.push_back({Instr::Kind::send, 0, 0, tag, bytes, true, static_cast<std::int32_t>(offset)});
    }
    void recv_relative(std::int64_t offset, std::uint32_t tag) {
        instrs.push_back({Instr::Kind::recv, 0, 0, tag, 0.0, true, static_cast<std::int32_t>(offset)});
    }
    void mark(std::uint32_t id) { instrs.push_back({Instr::Kind::mark, id}); }
};

/// Every rank's program, and the calls they issue.
struct ProgramSet {
    std::vector<Program> programs;
    std::vector<std::uint32_t> program_of;  ///< per rank (empty: every rank runs programs[0], or the cycle's)
    /// Every rank runs programs[cycle[i % size]] in iteration i (Local SGD: H - 1 local steps, then the averaging).
    std::vector<std::uint32_t> cycle;
    std::vector<Call> calls;
    /// How a rank's communication stream runs its issued calls: one at a time in issue order (NCCL's one stream per
    /// process group), or each as soon as it is issued (a parameter server's pushes and pulls to different servers).
    enum class Stream : std::uint8_t { fifo, concurrent };
    Stream stream = Stream::fifo;
    std::uint32_t round_period = 1;  ///< a call's round is numbered iteration / round_period (Local SGD: per period)
    bool comm_spans = false;         ///< draw the encode, launch, codec work and decode of calls on the timeline
    bool count_updates = true;       ///< each iteration applies one update (else the trainer counts them)

    [[nodiscard]] std::uint32_t program_index(std::uint32_t rank, std::uint32_t iteration) const {
        if (!program_of.empty()) return program_of[rank];
        return cycle.empty() ? 0 : cycle[iteration % cycle.size()];
    }
    std::uint32_t add_call(Call c) {
        calls.push_back(std::move(c));
        return static_cast<std::uint32_t>(calls.size() - 1);
    }
};

}  // namespace ddlsim::models::program
