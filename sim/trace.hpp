// A timeline in the Chrome trace-event format (the JSON that chrome://tracing,
// Perfetto's UI, PyTorch's profiler and ASTRA-sim's tools read): processes hold
// named tracks (threads); a complete event ("ph": "X") spans [start, start + dur)
// on one track. Timestamps are microseconds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/units.hpp"

namespace ddlsim::sim {

class Trace {
public:
    /// At most `max_events` events are kept (later ones are counted as dropped).
    explicit Trace(std::size_t max_events = 2'000'000) : max_events_(max_events) {}

    void name_process(std::uint32_t pid, std::string name, int sort_index);
    void name_track(std::uint32_t pid, std::uint32_t tid, std::string name);
    /// One span on track (pid, tid); `category` groups events for filtering.
    void span(std::uint32_t pid, std::uint32_t tid, std::string name, const char* category, Time start, Time end);

    [[nodiscard]] std::size_t size() const { return events_.size(); }
    [[nodiscard]] std::uint64_t dropped() const { return dropped_; }
    /// The whole trace as JSON text.
    [[nodiscard]] std::string json() const;

private:
    struct Event {
        std::uint32_t pid, tid;
        std::string name;
        const char* category;
        Time start, end;
    };
    std::size_t max_events_;
    std::uint64_t dropped_ = 0;
    std::vector<Event> events_;
    std::map<std::uint32_t, std::pair<std::string, int>> processes_;
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> tracks_;
};

}  // namespace ddlsim::sim
