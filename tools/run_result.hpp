// One scenario run to its whole result, as `ddlsim run`, `ddlsim compare` and the Python module give it: the
// simulation, the result JSON (docs/CONTRACT.md §3) and, with a "convergence" block, the time-to-accuracy replay
// (§6) merged in, with its proxy statistical-efficiency factor applied to a time to train.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/trace.hpp"

namespace ddlsim::tools {

struct FullRun {
    scenario::RunResult result;
    nlohmann::json json;         ///< result_json, with the convergence keys merged in
    nlohmann::json convergence;  ///< the convergence replay's keys (null without a convergence block)
};

/// Throws ScenarioError for bad input found once the pieces meet (and when the replay's task data is missing).
[[nodiscard]] FullRun run_full(const scenario::Scenario& s, sim::Trace* trace = nullptr);

/// A duration for people (below 1 ns: "0 s"): "850 us", "12.34 ms", "4.213 s", "2 min 54 s", "3 h 12 min", "2 d 5 h".
[[nodiscard]] std::string duration_text(double seconds);
/// A quantity with a decimal prefix and 4 significant digits: si_text(9.9e9, "B") = "9.904 GB".
[[nodiscard]] std::string si_text(double v, const char* unit);

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

}  // namespace ddlsim::tools
