// The discrete-event engine: integer time, events ordered by (time, insertion
// sequence), closures as actions, cancellation by id. One engine per simulation,
// passed by reference; there is no global state, so simulations run in parallel.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/units.hpp"

namespace ddlsim::sim {

/// Identifies a scheduled event for cancel(); the default value names no event.
struct EventId {
    std::uint32_t slot = 0;
    std::uint32_t generation = 0;  ///< 0 = none
    [[nodiscard]] bool valid() const { return generation != 0; }
};

class Engine {
public:
    using Action = std::function<void()>;

    [[nodiscard]] Time now() const { return now_; }
    /// Schedules `action` at absolute time `t` (>= now()); throws std::logic_error otherwise.
    EventId at(Time t, Action action);
    /// Schedules `action` `dt` after now(); throws TimeOverflow past Time::max().
    EventId after(Time dt, Action action);
    /// Cancels a pending event; returns false if it already ran or was cancelled.
    bool cancel(EventId id);
    /// Runs events until none is left or stop() is called.
    void run();
    /// Makes run() return after the current event.
    void stop() { stopped_ = true; }
    /// Events executed so far.
    [[nodiscard]] std::uint64_t events_processed() const { return processed_; }
    /// Calls `f` every kProgressEvents events during run() (progress reports; empty: none).
    void set_progress(Action f) { progress_ = std::move(f); }
    static constexpr std::uint64_t kProgressEvents = 1U << 16;
    /// Events pending.
    [[nodiscard]] std::size_t pending() const { return live_; }

private:
    struct Entry {
        std::int64_t time;
        std::uint64_t seq;
        std::uint32_t slot;
    };
    struct Slot {
        Action action;
        std::uint32_t generation = 1;
        std::uint32_t pos = kInQueue;  ///< its entry's index in heap_, or kInQueue (in due_now_, or free)
        bool armed = false;
    };
    static constexpr std::uint32_t kInQueue = 0xFFFFFFFFU;
    struct Later {  // heap order as a functor, so that the comparison inlines
        bool operator()(const Entry& a, const Entry& b) const {
            return a.time != b.time ? a.time > b.time : a.seq > b.seq;
        }
    };
    /// heap_ is a binary min-heap on (time, seq) that knows where each slot's entry sits, so a cancelled event
    /// leaves it at once (a transfer whose rate changes is cancelled and scheduled again: a flow network's re-solves
    /// would otherwise fill the heap with dead entries, 50 per live one in a 256-GPU double tree).
    void place(std::size_t i, const Entry& e) {
        heap_[i] = e;
        slots_[e.slot].pos = static_cast<std::uint32_t>(i);
    }
    void sift_up(std::size_t i, Entry e);
    void sift_down(std::size_t i, Entry e);
    void remove_at(std::size_t i);
    void release(std::uint32_t slot);

    std::vector<Entry> heap_;
    std::vector<Entry> due_now_;  ///< events scheduled at now() for now(), in order (a FIFO from due_head_)
    std::size_t due_head_ = 0;
    std::vector<Slot> slots_;
    std::vector<std::uint32_t> free_slots_;
    Time now_;
    std::uint64_t next_seq_ = 0;
    std::uint64_t processed_ = 0;
    std::size_t live_ = 0;
    Action progress_;
    bool stopped_ = false;
};

}  // namespace ddlsim::sim
