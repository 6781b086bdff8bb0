// What `ddlsim sweep`, `ddlsim compare`, `ddlsim plan` and the Python module share to run many independent
// scenarios: a pool of threads that takes the next index from a counter, and the progress line on stderr.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ddlsim::tools {

/// Runs fn(i) for every i in [0, n) on up to `jobs` threads (the caller's among them); when some throw, the
/// exception of the lowest index is rethrown once all have finished.
template <typename Fn>
void parallel_for(std::size_t n, unsigned jobs, Fn fn) {
    std::vector<std::exception_ptr> errors(n);
    std::atomic<std::size_t> next{0};
    auto work = [&] {
        for (std::size_t i; (i = next++) < n;) {
            try {
                fn(i);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        }
    };
    std::vector<std::thread> pool;
    const std::size_t threads = std::max<std::size_t>(1, std::min<std::size_t>(jobs, n));
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);
}

/// The progress line "WHAT: done/total UNIT, rate, ETA": rewritten in place on a terminal, else (forced, for logs)
/// a whole line every 5 s; `final` prints the time taken.
class Progress {
public:
    using Clock = std::chrono::steady_clock;
    Progress(bool enabled, bool terminal, std::size_t total, std::ostream& err, std::string what = "sweep",
             std::string unit = "points")
        : enabled_(enabled),
          terminal_(terminal),
          total_(total),
          err_(err),
          what_(std::move(what)),
          unit_(std::move(unit)) {}
    void update(std::size_t done, bool final = false) {
        if (!enabled_) return;
        const auto now = Clock::now();
        if (!final && now - last_ < std::chrono::milliseconds(terminal_ ? 100 : 5000)) return;
        last_ = now;
        const double elapsed = std::chrono::duration<double>(now - start_).count();
        const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
        const std::string eta =
            rate > 0 ? fmt::format("{:.0f}s", static_cast<double>(total_ - done) / rate) : std::string("?");
        err_ << fmt::format("{}{}: {}/{} {}, {:.1f} {}/s, {} {}{}", terminal_ ? "\r" : "", what_, done, total_, unit_,
                            rate, unit_, final ? "took" : "ETA", final ? fmt::format("{:.1f}s", elapsed) : eta,
                            terminal_ ? "\033[K" : "\n")
             << (final && terminal_ ? "\n" : "") << std::flush;
    }

private:
    bool enabled_, terminal_;
    std::size_t total_;
    std::ostream& err_;
    std::string what_, unit_;
    Clock::time_point start_ = Clock::now();
    Clock::time_point last_{};
};

}  // namespace ddlsim::tools
