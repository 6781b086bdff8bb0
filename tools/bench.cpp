// Simulation-speed benchmark (run on demand, not in CI): the ring all-reduce
// pattern on a star at growing worker counts, and PS and gossip at 1,024 workers,
// with the flow model; then the analytic model's time per scenario. Each case
// runs in its own child process so that its peak resident memory is its own.
//   build/ddlsim_bench            all cases (the 16,384-worker ring takes minutes)
//   build/ddlsim_bench --quick    up to 4,096 workers
//   build/ddlsim_bench --scale [--full]   one step of Llama 3 70B HSDP, ResNet-50 DDP and Llama 3 405B in 3D
//                                         parallelism (TP 8, PP 16) on DGX H100 rails, 256 to
//                                         16,384 workers (--full: and 131,072), with flow classes (sim/symmetry.hpp);
//                                         up to 16,384 the median wall time of 5 runs
//   build/ddlsim_bench --startup [DDLSIM]   only the start-up of `ddlsim check` on a small example
// Every run ends with the start-up cost of the command line: wall time and peak resident memory of
// `ddlsim check` on a small example scenario (fork + exec, then wait4's rusage), the median of 21 runs.
// The collective moves 100 MB (25 M fp32 parameters, no compute) over 10 Gbit/s
// links with 5 us latency, as tools/simgrid/ does with SimGrid.
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// --scale: one step of Llama 3 70B with hybrid sharding (FSDP inside each DGX H100 node, the
// shards all-reduced across nodes) and of ResNet-50 DDP (ring, 25 MB buckets), on DGX H100 nodes on a
// rail-optimized fabric (400 Gbit/s per GPU, 8 spines, ideal transport), routing left at its default (ECMP): the
// ring's hops between nodes that change rail relay to the destination's rail over NVLink (NCCL's PXN), so no hash
// decides a route and the symmetry flow classes need holds.
nlohmann::json scale_scenario(const std::string& kind, int workers) {
    nlohmann::json j{
        {"workers", workers},
        {"iterations", 1},
        {"device", {{"name", "H100"}, {"precision", "bf16"}}},
        {"network", {{"topology", "rail_optimized"}, {"node", "dgx_h100"}, {"spines", 8}, {"transport", "ideal"}}}};
    if (kind == "3d") {  // Llama 3 405B as its paper ran it (arXiv 2407.21783 §3.3.2): TP 8, PP 16, the rest DP
        j["model"] = {{"name", "llama3_405b"}, {"dtype", "bf16"}};
        j["batch_size"] = 1;
        j["gradient_accumulation"] = 16;
        j["activation_checkpointing"] = "full";
        j["optimizer"] = "adamw";
        j["parallelism"] = {{"tensor", 8},
                            {"sequence_parallel", true},
                            {"pipeline", 16},
                            {"first_stage_layers", 7},
                            {"last_stage_layers", 7}};
        j["sharding"] = {{"stage", 1}};
    } else if (kind == "hsdp") {
        j["model"] = {{"name", "llama3_70b"}, {"dtype", "bf16"}};
        j["batch_size"] = 1;
        j["activation_checkpointing"] = "full";
        j["optimizer"] = "adamw";
        j["sharding"] = {{"stage", 3}, {"group", "node"}};
    } else {
        j["model"] = "resnet50";
        j["batch_size"] = 64;
        j["architecture"] = {{"kind", "allreduce"}, {"algorithm", "ring"}};
        j["overlap"] = {{"fusion", "buffer"}, {"bucket_size", "25MB"}};
    }
    return j;
}

// Runs `f` in a child process (its peak memory its own); false when the child failed.
template <class F>
bool in_child(F&& f) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        f();
        std::fflush(stdout);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int scale(bool full) {
    constexpr int kRepeats = 5;
    fmt::print("{:<28}{:>9}{:>17}{:>7}{:>16}{:>12}{:>10}{:>10}\n", "case (one step)", "workers", "iteration s", "shift",
               "transfers", "events", "wall s", "peak MiB");
    for (const char* kind : {"hsdp", "ddp", "3d"})
        for (const int n : {256, 1024, 4096, 16384, 131072}) {
            if (!full && n > 16384) continue;
            // At 256 and 1,024 workers also every transfer (--no-flow-classes), for the difference.
            for (const bool classes : {true, false}) {
                if (!classes && n > 1024) continue;
                const bool ok = in_child([&] {
                    auto s = ddlsim::scenario::load_scenario(scale_scenario(kind, n));
                    s.flow_classes = classes;
                    // Up to 16,384 workers with classes, the median of kRepeats runs: at 1,024 a run takes a tenth
                    // of a second, and one run's noise would decide the growth from 1,024 to 16,384.
                    const int repeats = classes && n <= 16384 ? kRepeats : 1;
                    std::vector<double> walls;
                    ddlsim::scenario::RunResult r;
                    for (int k = 0; k < repeats; ++k) {
                        r = ddlsim::scenario::run_scenario(s);
                        walls.push_back(r.wall_time_s);
                    }
                    std::sort(walls.begin(), walls.end());
                    r.wall_time_s = walls[walls.size() / 2];
                    rusage ru{};
                    getrusage(RUSAGE_SELF, &ru);
                    fmt::print("{:<28}{:>9}{:>17.13g}{:>7}{:>16}{:>12}{:>10.2f}{:>10.1f}\n",
                               fmt::format("{}{}",
                                           kind == std::string("hsdp") ? "llama3-70b hsdp"
                                           : kind == std::string("3d") ? "llama3-405b tp8 pp16"
                                                                       : "resnet50 ddp",
                                           classes ? "" : " (all)"),
                               n, r.jobs[0].iteration_time_s, r.flow_class_period, r.transfers, r.events, r.wall_time_s,
                               static_cast<double>(ru.ru_maxrss) / 1024.0);
                });
                if (!ok) return 1;
            }
        }
    return 0;
}

// `ddlsim check` on a small example: wall milliseconds (median, min) and the largest peak RSS over `runs`
// runs; its output goes to a pipe that is read and dropped. Returns false when a run fails.
bool startup(const std::string& ddlsim, int runs) {
    const std::string example = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/examples/allreduce_torus2d_4x4.json";
    std::vector<double> wall_ms;
    double peak_mib = 0.0;
    for (int i = 0; i < runs; ++i) {
        std::array<int, 2> fds{};
        if (pipe(fds.data()) != 0) return false;
        std::fflush(stdout);
        const auto t0 = std::chrono::steady_clock::now();
        const pid_t pid = fork();
        if (pid < 0) return false;
        if (pid == 0) {
            dup2(fds[1], STDOUT_FILENO);
            dup2(fds[1], STDERR_FILENO);
            close(fds[0]);
            close(fds[1]);
            std::array<std::string, 3> args{ddlsim, "check", example};
            std::array<char*, 4> argv{args[0].data(), args[1].data(), args[2].data(), nullptr};
            execv(argv[0], argv.data());
            _exit(127);
        }
        close(fds[1]);
        std::array<char, 4096> buf{};
        while (read(fds[0], buf.data(), buf.size()) > 0) {
        }
        close(fds[0]);
        int status = 0;
        rusage ru{};
        if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fmt::print(stderr, "ddlsim_bench: {} check {} failed\n", ddlsim, example);
            return false;
        }
        wall_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        peak_mib = std::max(peak_mib, static_cast<double>(ru.ru_maxrss) / 1024.0);
    }
    std::sort(wall_ms.begin(), wall_ms.end());
    fmt::print("start-up: ddlsim check {} ({} runs): median {:.1f} ms, min {:.1f} ms, peak RSS {:.1f} MiB\n",
               "scenarios/examples/allreduce_torus2d_4x4.json", runs, wall_ms[wall_ms.size() / 2], wall_ms.front(),
               peak_mib);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    constexpr int kStartupRuns = 21;
    if (argc > 1 && std::strcmp(argv[1], "--startup") == 0)
        return startup(argc > 2 ? argv[2] : DDLSIM_BINARY, kStartupRuns) ? 0 : 1;
    if (argc > 1 && std::strcmp(argv[1], "--scale") == 0) return scale(argc > 2 && std::strcmp(argv[2], "--full") == 0);
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    fmt::print("{:<26}{:>13}{:>13}{:>10}{:>14}{:>12}{:>10}\n", "case (flow model)", "transfers", "events", "wall s",
               "transfers/s", "events/s", "peak MiB");
    for (const Case c : {Case{64, "ring", 10}, Case{256, "ring", 1}, Case{1024, "ring", 1}, Case{4096, "ring", 1},
                         Case{16384, "ring", 1}, Case{1024, "ps", 10}, Case{1024, "gossip", 10}}) {
        if (quick && c.workers > 4096) continue;
        std::fflush(stdout);
        const pid_t pid = fork();
        if (pid == 0) {
            // Every transfer: these cases measure the engine and the solver per transfer (on a star every ring
            // transfer is alike, and flow classes would simulate one per step).
            auto s = ddlsim::scenario::load_scenario(scenario(c.workers, c.arch, c.iterations));
            s.flow_classes = false;
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
    return startup(DDLSIM_BINARY, kStartupRuns) ? 0 : 1;
}
