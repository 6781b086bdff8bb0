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

    /// Compact mode: each track keeps its first `detailed` spans as they are; after those, a span of the same
    /// category that starts within `merge_gap` of the track's last aggregate span (or overlaps it) is merged
    /// into it ("N spans of CATEGORY"). Repeated iterations then cost a few spans each. 0: keep every span.
    void set_compaction(std::size_t detailed, Time merge_gap) {
        detailed_ = detailed;
        merge_gap_ = merge_gap;
    }

    void name_process(std::uint32_t pid, std::string name, int sort_index);
    void name_track(std::uint32_t pid, std::uint32_t tid, std::string name);
    /// One span on track (pid, tid); `category` groups events for filtering.
    void span(std::uint32_t pid, std::uint32_t tid, std::string name, const char* category, Time start, Time end);

    /// Forgets every event, track and process (a run that starts over), keeping the limits and the compaction.
    void clear() {
        events_.clear();
        state_.clear();
        processes_.clear();
        tracks_.clear();
        dropped_ = 0;
    }

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
        std::uint64_t merged = 1;  ///< spans this event stands for
    };
    struct TrackState {
        std::size_t spans = 0;             ///< spans seen on the track
        std::size_t aggregate = kNoEvent;  ///< index of its last aggregate event
    };
    static constexpr std::size_t kNoEvent = static_cast<std::size_t>(-1);
    std::size_t detailed_ = 0;
    Time merge_gap_;
    std::map<std::pair<std::uint32_t, std::uint32_t>, TrackState> state_;
    std::size_t max_events_;
    std::uint64_t dropped_ = 0;
    std::vector<Event> events_;
    std::map<std::uint32_t, std::pair<std::string, int>> processes_;
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> tracks_;
};

}  // namespace ddlsim::sim
