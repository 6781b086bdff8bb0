// Simulation-speed benchmark: runs scenarios of growing size with the flow model
// and prints events, wall time, events per second and peak memory. Each case runs
// in its own child process so that its peak resident memory is its own.
//   build/ddlsim_bench            (all cases)
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"

namespace {

nlohmann::json scenario(int workers, const char* arch, int iterations) {
    nlohmann::json j{
        {"workers", workers}, {"model", "resnet50"},
        {"batch_size", 32},   {"iterations", iterations},
        {"device", "V100"},   {"network", {{"topology", "star"}, {"bandwidth", "10Gbps"}, {"latency", "5us"}}}};
    if (std::string(arch) == "ps")
        j["architecture"] = {{"kind", "ps"}, {"servers", 4}};
    else if (std::string(arch) == "gossip")
        j["architecture"] = {{"kind", "gossip"}, {"graph", "ring"}};
    else
        j["architecture"] = {{"kind", "allreduce"}, {"algorithm", "ring"}};
    return j;
}

}  // namespace

int main() {
    fmt::print("{:<34}{:>12}{:>12}{:>14}{:>12}\n", "case", "events", "wall s", "events/s", "peak MiB");
    struct Case {
        int workers;
        const char* arch;
        int iterations;
    };
    for (const Case c : {Case{64, "ring", 100}, Case{256, "ring", 10}, Case{1024, "ring", 2}, Case{64, "ps", 100},
                         Case{1024, "ps", 10}, Case{1024, "gossip", 100}}) {
        std::fflush(stdout);
        const pid_t pid = fork();
        if (pid == 0) {
            const auto s = ddlsim::scenario::load_scenario(scenario(c.workers, c.arch, c.iterations));
            const auto r = ddlsim::scenario::run_scenario(s);
            rusage ru{};
            getrusage(RUSAGE_SELF, &ru);
            fmt::print("{:<34}{:>12}{:>12.3f}{:>14.3g}{:>12.1f}\n",
                       fmt::format("resnet50 {} x{} ({} it)", c.arch, c.workers, c.iterations), r.events, r.wall_time_s,
                       static_cast<double>(r.events) / r.wall_time_s, static_cast<double>(ru.ru_maxrss) / 1024.0);
            std::fflush(stdout);
            _exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    }
    return 0;
}
