#include "sim/engine.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ddlsim::sim {

void Engine::sift_up(std::size_t i, Entry e) {
    while (i > 0) {
        const std::size_t parent = (i - 1) / 2;
        if (!Later{}(heap_[parent], e)) break;
        place(i, heap_[parent]);
        i = parent;
    }
    place(i, e);
}

void Engine::sift_down(std::size_t i, Entry e) {
    const std::size_t n = heap_.size();
    for (;;) {
        std::size_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && Later{}(heap_[child], heap_[child + 1])) ++child;
        if (!Later{}(e, heap_[child])) break;
        place(i, heap_[child]);
        i = child;
    }
    place(i, e);
}

void Engine::remove_at(std::size_t i) {
    const Entry last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;
    if (i > 0 && Later{}(heap_[(i - 1) / 2], last))
        sift_up(i, last);
    else
        sift_down(i, last);
}

void Engine::release(std::uint32_t slot) {
    Slot& s = slots_[slot];
    s.action = nullptr;
    s.armed = false;
    s.pos = kInQueue;
    if (++s.generation == 0) s.generation = 1;  // stale ids never match again
    free_slots_.push_back(slot);
}

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
    const Entry e{t.ps(), next_seq_++, slot};
    if (t == now_) {
        // Due now: after every pending event (a later sequence number), so a FIFO keeps the order without the heap.
        due_now_.push_back(e);
    } else {
        heap_.emplace_back();
        sift_up(heap_.size() - 1, e);
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
    --live_;
    if (s.pos != kInQueue) {  // in the heap: out at once, its slot free
        remove_at(s.pos);
        release(id.slot);
        return true;
    }
    s.armed = false;
    s.action = nullptr;  // release captures now; the queue's entry is skipped when it comes up
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
            e = heap_.front();
            remove_at(0);
        }
        Slot& s = slots_[e.slot];
        const bool armed = s.armed;
        Action action = std::move(s.action);
        release(e.slot);
        if (!armed) continue;
        --live_;
        now_ = Time::ps(e.time);
        ++processed_;
        action();
        if (progress_ && processed_ % kProgressEvents == 0) progress_();
    }
}

}  // namespace ddlsim::sim
