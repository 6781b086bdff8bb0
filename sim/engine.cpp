#include "sim/engine.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ddlsim::sim {

EventId Engine::at(Time t, Action action) {
    if (t < now_)
        throw std::logic_error("event scheduled in the past: " + std::to_string(t.ps()) + " ps < now " +
                               std::to_string(now_.ps()) + " ps");
    std::uint32_t slot = 0;
    if (!free_slots_.empty()) {
        slot = free_slots_.back();
        free_slots_.pop_back();
    } else {
        slot = static_cast<std::uint32_t>(slots_.size());
        slots_.emplace_back();
    }
    Slot& s = slots_[slot];
    s.action = std::move(action);
    s.armed = true;
    if (t == now_) {
        // Due now: after every pending event (a later sequence number), so a FIFO keeps the order without the heap.
        due_now_.push_back({t.ps(), next_seq_++, slot});
    } else {
        heap_.push_back({t.ps(), next_seq_++, slot});
        std::push_heap(heap_.begin(), heap_.end(), Later{});
    }
    ++live_;
    return {slot, s.generation};
}

EventId Engine::after(Time dt, Action action) {
    if (dt > Time::max() - now_) throw TimeOverflow();
    return at(now_ + dt, std::move(action));
}

bool Engine::cancel(EventId id) {
    if (!id.valid() || id.slot >= slots_.size()) return false;
    Slot& s = slots_[id.slot];
    if (!s.armed || s.generation != id.generation) return false;
    s.armed = false;
    s.action = nullptr;  // release captures now; the heap entry is skipped when popped
    --live_;
    return true;
}

void Engine::run() {
    stopped_ = false;
    while ((!heap_.empty() || due_head_ < due_now_.size()) && !stopped_) {
        // The heap's events at now were scheduled before now was reached, so before every one in due_now_.
        Entry e{};
        if (due_head_ < due_now_.size() && (heap_.empty() || heap_.front().time != now_.ps())) {
            e = due_now_[due_head_++];
            if (due_head_ == due_now_.size()) {
                due_now_.clear();
                due_head_ = 0;
            }
        } else {
            std::pop_heap(heap_.begin(), heap_.end(), Later{});
            e = heap_.back();
            heap_.pop_back();
        }
        Slot& s = slots_[e.slot];
        const bool armed = s.armed;
        Action action = std::move(s.action);
        s.action = nullptr;
        s.armed = false;
        if (++s.generation == 0) s.generation = 1;  // stale ids never match again
        free_slots_.push_back(e.slot);
        if (!armed) continue;
        --live_;
        now_ = Time::ps(e.time);
        ++processed_;
        action();
        if (progress_ && processed_ % kProgressEvents == 0) progress_();
    }
}

}  // namespace ddlsim::sim
