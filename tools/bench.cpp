// Simulation-speed benchmark (run on demand, not in CI): the ring all-reduce
// pattern on a star at growing worker counts, and PS and gossip at 1,024 workers,
// with the flow model; then the analytic model's time per scenario. Each case
// runs in its own child process so that its peak resident memory is its own.
//   build/ddlsim_bench            all cases (the 16,384-worker ring takes minutes)
//   build/ddlsim_bench --quick    up to 4,096 workers
// The collective moves 100 MB (25 M fp32 parameters, no compute) over 10 Gbit/s
// links with 5 us latency, as tools/simgrid/ does with SimGrid.
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"

namespace {

nlohmann::json scenario(int workers, const std::string& arch, int iterations, const char* model = "flow") {
    const nlohmann::json layer{
        {"name", "g"}, {"params", 25'000'000}, {"fwd_time", 0}, {"bwd_time", 0}, {"update_time", 0}};
    nlohmann::json j{
        {"workers", workers},
        {"model", {{"layers", {layer}}}},
        {"batch_size", 1},
        {"iterations", iterations},
        {"device", "V100"},
        {"network", {{"topology", "star"}, {"bandwidth", "10Gbps"}, {"latency", "5us"}, {"model", model}}}};
    if (arch == "ps")
        j["architecture"] = {{"kind", "ps"}, {"servers", 4}};
    else if (arch == "gossip")
        j["architecture"] = {{"kind", "gossip"}, {"graph", "ring"}};
    else
        j["architecture"] = {{"kind", "allreduce"}, {"algorithm", "ring"}};
    return j;
}

struct Case {
    int workers;
    const char* arch;
    int iterations;
};

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    fmt::print("{:<26}{:>13}{:>13}{:>10}{:>14}{:>12}{:>10}\n", "case (flow model)", "transfers", "events", "wall s",
               "transfers/s", "events/s", "peak MiB");
    for (const Case c : {Case{64, "ring", 10}, Case{256, "ring", 1}, Case{1024, "ring", 1}, Case{4096, "ring", 1},
                         Case{16384, "ring", 1}, Case{1024, "ps", 10}, Case{1024, "gossip", 10}}) {
        if (quick && c.workers > 4096) continue;
        std::fflush(stdout);
        const pid_t pid = fork();
        if (pid == 0) {
            const auto s = ddlsim::scenario::load_scenario(scenario(c.workers, c.arch, c.iterations));
            const auto r = ddlsim::scenario::run_scenario(s);
            rusage ru{};
            getrusage(RUSAGE_SELF, &ru);
            fmt::print("{:<26}{:>13}{:>13}{:>10.2f}{:>14.3g}{:>12.3g}{:>10.1f}\n",
                       fmt::format("{} x{} ({} it)", c.arch, c.workers, c.iterations), r.transfers, r.events,
                       r.wall_time_s, static_cast<double>(r.transfers) / r.wall_time_s,
                       static_cast<double>(r.events) / r.wall_time_s, static_cast<double>(ru.ru_maxrss) / 1024.0);
            std::fflush(stdout);
            _exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    }
    // The analytic model: load + closed form, no event queue.
    for (const int n : {64, 1024}) {
        const auto j = scenario(n, "ring", 100, "analytic");
        const int reps = 200;
        const auto t0 = std::chrono::steady_clock::now();
        double sink = 0.0;
        for (int i = 0; i < reps; ++i)
            sink += ddlsim::scenario::run_scenario(ddlsim::scenario::load_scenario(j)).jobs[0].iteration_time_s;
        const double per = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
        fmt::print("analytic ring x{}: {:.1f} us per scenario (load + solve), iteration {:.6f} s\n", n, per * 1e6,
                   sink / reps);
    }
    return 0;
}
