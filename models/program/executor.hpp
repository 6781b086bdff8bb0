// The one interpreter of per-rank programs (models/program/program.hpp) on the event engine.
//
// Per rank: a compute stream that runs the program's instructions in order, and per communicator (Call::stream) a
// communication stream that runs its issued calls one at a time in issue order (fifo) or each as soon as it is
// issued (concurrent). A call starts with its encode and its launch (the transport's per-collective overhead, unless
// the call names its own); its phases run back to back, each after its own codec work (`before`) and followed by its
// `after` work, the last by the call's decode. Every rank that joins a call meets
// in the same round, keyed by (iteration, call, phase); endpoints that are no rank (servers, switches) join at once.
// Compute that starts while the rank's communication stream holds work or any of its traffic is in flight (calls,
// sends, a trainer's own: DiLoCo's outer steps) runs (1 + overlap_slowdown) longer, unless it is marked not to. Each
// iteration starts with the rank's straggler delay and slowdown (models/stragglers.hpp).
//
// Flow classes (sim/symmetry.hpp): ranks running the same program on symmetric groups move through the same rounds
// at the same times, which the engine finds while running. Or, where the communicator runs representatives only
// (detail::Comm::representatives_only: a model-parallel job, whose replicas are each other's images by construction),
// only the ranks below the quotient's period run; each stands for its class, whose clocks and waits are its own.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/program/planner.hpp"
#include "models/program/program.hpp"
#include "models/stragglers.hpp"
#include "models/trainer_detail.hpp"

namespace ddlsim::models::program {

class Executor {
public:
    /// What a trainer adds around the programs (each may be empty).
    struct Hooks {
        /// Rank w's iteration `iter` starts computing at t (after its straggler delay).
        std::function<void(std::uint32_t w, std::uint32_t iter, sim::Time t)> began;
        /// Rank w starts `c` now.
        std::function<void(std::uint32_t w, std::uint32_t iter, const Compute& c)> computing;
        /// Rank w finished iteration `iter`; false: the trainer starts its next one later (DiLoCo's outer steps).
        std::function<bool(std::uint32_t w, std::uint32_t iter)> ended;
        /// Rank w reached mark `id` of iteration `iter`.
        std::function<void(std::uint32_t w, std::uint32_t iter, std::uint32_t id)> marked;
        /// Call `call` of iteration `iter` is done on rank w.
        std::function<void(std::uint32_t w, std::uint32_t iter, std::uint32_t call)> called;
    };

    Executor(const ProgramSet& programs, Planner& planner, detail::Comm& comm, std::vector<detail::WorkerClock>& clocks,
             const TrainingJob& job, detail::Timeline timeline, Hooks hooks);
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    /// Starts every rank's first iteration.
    void start();
    /// Starts rank w's next iteration (its clock's finish time when it has run them all).
    void begin_iteration(std::uint32_t w);

    [[nodiscard]] sim::Time duration(std::uint32_t w, const Compute& c) const { return compute_time(job_, w, c); }
    /// How long `c` runs on rank w of `job` alone: no straggler, nothing beside it.
    [[nodiscard]] static sim::Time compute_time(const TrainingJob& job, std::uint32_t w, const Compute& c);
    /// How long rank w's compute stream has waited, over every iteration so far, for the calls of communicator
    /// `stream` (Call::stream), or for receives and its own last sends (`stream` = kReceives).
    static constexpr std::uint32_t kReceives = 16;
    [[nodiscard]] sim::Time waited(std::uint32_t w, std::uint32_t stream) const;
    /// One layer's time in a pass of `kind` (forward, backward, or a backward's input or weight gradients).
    [[nodiscard]] static sim::Time pass_time(const LayerTimes& t, ComputeKind kind, std::uint8_t pieces);

private:
    static constexpr std::uint8_t kNothing = 255;
    /// One communicator's stream on one rank.
    struct Lane {
        std::vector<std::uint32_t> queue;  ///< calls waiting, a FIFO from head (a deque's 512-byte block per rank
        std::size_t head = 0;              ///< would cost 8 MB at 16,384 ranks, and its cache)
        std::uint32_t in_flight = 0;       ///< calls started and not done
    };
    struct W {
        std::uint32_t iter = 0;
        std::uint32_t program = 0;  ///< this iteration's
        std::uint32_t pc = 0;       ///< next instruction
        bool idle = false;          ///< the compute stream waits (for a call, a receive, or the iteration's last calls)
        std::uint8_t waiting_on = kNothing;  ///< what it waits for: a call's stream, kReceives (and since when)
        sim::Time idle_since;
        StepSlowdown slow;
        std::vector<bool> done;  ///< per call of ProgramSet::calls, this iteration (a bit each: 16,384 ranks)
        std::uint32_t calls_left = 0, sends_left = 0;
        Lane lane0;  ///< the job's own communicator's stream, inline (every rank's state is touched per call)
        std::vector<Lane> lanes;  ///< the other communicators' (Call::stream 1, 2, ...)

        Lane& lane(std::uint8_t stream) { return stream == 0 ? lane0 : lanes[stream - 1U]; }
        std::vector<sim::Time> call_start;  ///< per call, when it started (only with a timeline)
        /// A piece of a layer (Compute::pieces) runs slowed beside communication only while that lasts: its end
        /// event, its start and end, whether one runs and whether it still runs slowed.
        sim::EventId piece_end{};
        sim::Time piece_start, piece_until;
        bool piece_running = false, piece_slowed = false;
    };
    struct RoundState {
        std::unique_ptr<sim::Round> runner;
        std::uint32_t endpoints_left = 0;
    };
    struct MessageKey {
        std::uint32_t iter, from, to, tag;
        friend auto operator<=>(const MessageKey&, const MessageKey&) = default;
    };

    void advance(std::uint32_t w);
    void compute_done(std::uint32_t w);
    void piece_unslowed(std::uint32_t w);
    void end_iteration(std::uint32_t w);
    void issue(std::uint32_t w, std::uint32_t call);
    void pump(std::uint32_t w, std::uint8_t stream);
    void open_phase(std::uint32_t w, std::uint32_t i, std::uint32_t call, std::uint32_t p);
    RoundState& round(std::uint32_t i, std::uint32_t call, std::uint32_t p);
    void phase_done(std::uint32_t i, std::uint32_t call, std::uint32_t p, std::uint32_t e);
    void phase_ended(std::uint32_t w, std::uint32_t call, std::uint32_t p);
    void call_done(std::uint32_t w, std::uint32_t call);
    // A rank, a call and a phase in 64 bits, so that an event's closure is two words and std::function keeps it
    // inline (its small buffer holds 16 bytes) rather than allocating one per event; the iteration is the rank's
    // own, which cannot end while one of its calls is in flight.
    static std::uint64_t pack(std::uint32_t w, std::uint32_t call, std::uint32_t p) {
        return (static_cast<std::uint64_t>(w) << 32) | (static_cast<std::uint64_t>(call) << 4) | p;
    }
    static std::uint32_t rank_of(std::uint64_t at) { return static_cast<std::uint32_t>(at >> 32); }
    static std::uint32_t call_of(std::uint64_t at) { return static_cast<std::uint32_t>(at >> 4) & 0x0FFFFFFFU; }
    static std::uint32_t phase_of(std::uint64_t at) { return static_cast<std::uint32_t>(at) & 0xFU; }
    void send(std::uint32_t w, const Instr& in);
    [[nodiscard]] sim::Time layer_time(sim::Time t, std::uint32_t w, bool slowed) const;
    [[nodiscard]] sim::Time step_time(std::uint32_t w, const Compute& c, bool slowed) const;
    [[nodiscard]] bool comm_active(std::uint32_t w) const;
    void start_call(std::uint32_t w, std::uint32_t call);
    void span_compute(std::uint32_t w, const Compute& c, sim::Time start, bool slowed) const;
    static std::uint64_t round_key(std::uint32_t i, std::uint32_t call, std::uint32_t p) {
        return (static_cast<std::uint64_t>(i) << 32) | (static_cast<std::uint64_t>(call) << 4) | p;
    }

    const ProgramSet& set_;
    Planner& planner_;
    detail::Comm& comm_;
    sim::Engine& engine_;
    std::vector<detail::WorkerClock>& clocks_;
    const TrainingJob& job_;
    detail::Timeline timeline_;
    Hooks hooks_;
    void wait_on(std::uint32_t w, std::uint8_t what);
    std::uint32_t buckets_ = 1;           ///< streams + 1: where waited_ keeps each rank's waits
    std::vector<sim::Time> waited_;       ///< per rank and bucket (streams, then receives)
    std::vector<std::uint32_t> issued_;   ///< per program: calls issued in one iteration
    std::vector<std::uint32_t> joiners_;  ///< per call: the ranks that issue it (that run)
    std::uint32_t reps_ = 0;              ///< the ranks that run, each for its class (0: every rank)
    std::map<GroupId, bool> local_;       ///< per group: no part joins a representative to an image
    [[nodiscard]] bool local(const CommOp& op);
    [[nodiscard]] std::uint32_t running() const { return reps_ != 0 ? reps_ : job_.workers; }
    std::vector<W> ws_;
    std::unordered_map<std::uint64_t, RoundState> rounds_;
    std::map<MessageKey, char> arrived_;  ///< sends landed and not yet received
};

}  // namespace ddlsim::models::program
