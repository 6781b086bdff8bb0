// One scenario run to its whole result, as `ddlsim run`, `ddlsim compare` and the Python module give it: the
// simulation, the result JSON (docs/CONTRACT.md §3) and, with a "convergence" block, the time-to-accuracy replay
// (§6) merged in, with its proxy statistical-efficiency factor applied to a time to train.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/trace.hpp"
#include "tools/parallel_points.hpp"  // parallel_for, which compare and the Python module use

namespace ddlsim::tools {

struct FullRun {
    scenario::RunResult result;
    nlohmann::json json;         ///< result_json, with the convergence keys merged in
    nlohmann::json convergence;  ///< the convergence replay's keys (null without a convergence block)
};

/// Throws ScenarioError for bad input found once the pieces meet (and when the replay's task data is missing).
/// `progress` is scenario::run_scenario's.
[[nodiscard]] FullRun run_full(const scenario::Scenario& s, sim::Trace* trace = nullptr,
                               const std::function<void(std::uint64_t, double)>& progress = {});

/// A run's progress on standard error once it has taken `after` seconds (DDLSIM_PROGRESS_AFTER overrides the
/// default 2): on a terminal one line rewritten every quarter second, else (forced, for logs) a line every 5 s;
/// events so far against the loader's upper estimate (scenario::estimated_events), simulated time, wall time and
/// at most what is left at the rate so far.
class RunProgress {
public:
    RunProgress(bool enabled, bool terminal, double estimated_events, std::ostream& err);
    /// The callback for run_full (empty when disabled).
    [[nodiscard]] std::function<void(std::uint64_t, double)> callback();
    /// Ends the line a terminal was rewriting.
    void finish();

private:
    void report(std::uint64_t events, double simulated_s);
    bool enabled_, terminal_;
    double estimate_, after_;
    std::ostream& err_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
    bool printed_ = false;
};

/// A duration for people (below 1 ns: "0 s"): "850 us", "12.34 ms", "4.213 s", "2 min 54 s", "3 h 12 min", "2 d 5 h".
[[nodiscard]] std::string duration_text(double seconds);
/// A quantity with a decimal prefix and 4 significant digits: si_text(9.9e9, "B") = "9.904 GB".
[[nodiscard]] std::string si_text(double v, const char* unit);

}  // namespace ddlsim::tools
