#include "sim/trace.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddlsim::sim {

namespace {

// JSON string escaping for names (quotes, backslashes and control characters).
std::string escaped(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

void Trace::name_process(std::uint32_t pid, std::string name, int sort_index) {
    processes_[pid] = {std::move(name), sort_index};
}

void Trace::name_track(std::uint32_t pid, std::uint32_t tid, std::string name) {
    tracks_[{pid, tid}] = std::move(name);
}

void Trace::span(std::uint32_t pid, std::uint32_t tid, std::string name, const char* category, Time start, Time end) {
    bool aggregate = false;
    TrackState* st = nullptr;
    if (detailed_ > 0) {
        st = &state_[{pid, tid}];
        aggregate = ++st->spans > detailed_;
        if (aggregate && st->aggregate != kNoEvent) {
            Event& last = events_[st->aggregate];
            // Same kind of work, back to back or overlapping (a link's concurrent transfers): one longer span.
            if (last.category == category && start <= last.end + merge_gap_ && end + merge_gap_ >= last.start) {
                last.start = std::min(last.start, start);
                last.end = std::max(last.end, end);
                ++last.merged;
                return;
            }
        }
    }
    if (events_.size() >= max_events_) {
        ++dropped_;
        return;
    }
    events_.push_back({pid, tid, std::move(name), category, start, end});
    if (aggregate) st->aggregate = events_.size() - 1;
}

std::string Trace::json() const {
    std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
    bool first = true;
    auto sep = [&] {
        if (!first) out += ",\n";
        first = false;
    };
    for (const auto& [pid, p] : processes_) {
        sep();
        out += fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": "{}"}}}})", pid,
                           escaped(p.first));
        out += fmt::format(R"(,
{{"name": "process_sort_index", "ph": "M", "pid": {}, "args": {{"sort_index": {}}}}})",
                           pid, p.second);
    }
    for (const auto& [key, name] : tracks_) {
        sep();
        out += fmt::format(R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": {}, "args": {{"name": "{}"}}}})",
                           key.first, key.second, escaped(name));
        out += fmt::format(R"(,
{{"name": "thread_sort_index", "ph": "M", "pid": {}, "tid": {}, "args": {{"sort_index": {}}}}})",
                           key.first, key.second, key.second);
    }
    for (const Event& e : events_) {
        sep();
        // Microseconds with picosecond resolution (6 decimals).
        out += fmt::format(
            R"({{"name": "{}", "cat": "{}", "ph": "X", "ts": {:.6f}, "dur": {:.6f}, "pid": {}, "tid": {}}})",
            e.merged > 1 ? fmt::format("{} spans of {}", e.merged, e.category) : escaped(e.name), e.category,
            static_cast<double>(e.start.ps()) * 1e-6, static_cast<double>((e.end - e.start).ps()) * 1e-6, e.pid, e.tid);
    }
    out += "\n]";
    if (dropped_ > 0 || detailed_ > 0) {
        out += ",\n\"otherData\": {";
        if (dropped_ > 0) out += fmt::format("\"dropped_events\": {}", dropped_);
        if (detailed_ > 0)
            out += fmt::format("{}\"compacted\": {{\"detailed_spans_per_track\": {}, \"merge_gap_us\": {:.6g}}}",
                               dropped_ > 0 ? ", " : "", detailed_, merge_gap_.seconds() * 1e6);
        out += "}";
    }
    out += "}\n";
    return out;
}

}  // namespace ddlsim::sim
