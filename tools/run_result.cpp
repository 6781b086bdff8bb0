#include "tools/run_result.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "validate/convergence.hpp"

namespace ddlsim::tools {

FullRun run_full(const scenario::Scenario& s, sim::Trace* trace,
                 const std::function<void(std::uint64_t, double)>& progress) {
    const bool converge = s.jobs.size() == 1 && s.jobs[0].convergence.has_value();
    if (converge) validate::require_task_data(s);
    FullRun out;
    out.result = scenario::run_scenario(s, trace, progress);
    if (converge) {  // time to accuracy (docs/CONTRACT.md §6): the schedule replayed on the proxy task
        out.convergence = validate::convergence_result(s, out.result);
        // A time to train whose scheme has no published factor takes the proxy's ratio to BSP instead of 1: the
        // same scenario with that factor, rerun (deterministic: the same per-iteration figures), labelled "proxy".
        auto& ttt = out.result.time_to_train.front();
        if (ttt && ttt->efficiency.assumed)
            if (const auto proxy = validate::proxy_efficiency(s, out.convergence)) {
                auto with_factor = s;
                with_factor.jobs.front().training->statistical_efficiency = proxy->factor;
                out.result.time_to_train = scenario::run_scenario(with_factor).time_to_train;
                out.result.time_to_train.front()->efficiency.source = proxy->source;
            }
    }
    out.json = scenario::result_json(s, out.result);
    if (converge) out.json.update(out.convergence);
    return out;
}

RunProgress::RunProgress(bool enabled, bool terminal, double estimated_events, std::ostream& err)
    : enabled_(enabled), terminal_(terminal), estimate_(estimated_events), after_(2.0), err_(err) {
    if (const char* a = std::getenv("DDLSIM_PROGRESS_AFTER"); a != nullptr) after_ = std::atof(a);
}

std::function<void(std::uint64_t, double)> RunProgress::callback() {
    if (!enabled_) return {};
    return [this](std::uint64_t events, double simulated_s) { report(events, simulated_s); };
}

void RunProgress::report(std::uint64_t events, double simulated_s) {
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (elapsed < after_ || now - last_ < std::chrono::milliseconds(terminal_ ? 250 : 5000)) return;
    last_ = now;
    const auto done = static_cast<double>(events);
    // The loader's estimate is an upper one (scenario::estimated_events), so what is left is "at most".
    std::string left = "past the estimate";
    if (done < estimate_) left = "at most ~" + duration_text(elapsed * (estimate_ - done) / done) + " left";
    err_ << fmt::format("{}run: {} of at most ~{} events ({:.0f} %), simulated {}, {} elapsed, {}{}",
                        terminal_ ? "\r" : "", si_text(done, ""), si_text(estimate_, ""),
                        std::min(100.0, 100.0 * done / std::max(1.0, estimate_)), duration_text(simulated_s),
                        duration_text(elapsed), left, terminal_ ? "\033[K" : "\n")
         << std::flush;
    printed_ = true;
}

void RunProgress::finish() {
    if (printed_ && terminal_) err_ << "\n" << std::flush;
}

std::string si_text(double v, const char* unit) {
    const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
    int i = 0;
    while (std::abs(v) >= 1000.0 && i < 5) v /= 1000.0, ++i;
    return fmt::format("{:.4g} {}{}", v, prefixes[i], unit);
}

std::string duration_text(double s) {
    if (std::abs(s) < 1e-9) return "0 s";  // below a nanosecond: rounding noise of sums, not time
    if (s < 1e-3) return fmt::format("{:.4g} us", s * 1e6);
    if (s < 1.0) return fmt::format("{:.4g} ms", s * 1e3);
    if (s < 60.0) return fmt::format("{:.4g} s", s);
    const auto whole = static_cast<long long>(std::llround(s));
    if (s < 3600.0) return fmt::format("{} min {} s", whole / 60, whole % 60);
    const long long minutes = std::llround(s / 60.0);
    if (s < 86400.0 * 3) return fmt::format("{} h {} min", minutes / 60, minutes % 60);
    const long long h = std::llround(s / 3600.0);
    return fmt::format("{} d {} h", h / 24, h % 24);
}

}  // namespace ddlsim::tools
