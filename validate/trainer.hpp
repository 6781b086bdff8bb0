// Real data-parallel training: one OS process per worker (fork), plus one for the parameter
// server, exchanging real gradients (or models) over TCP (transport.hpp) on the network of
// netns.hpp. Each worker trains its own replica on its own shard of the data.
//
// One iteration of a worker:
//   BSP, ring / PS   forward + backward; compress (with error feedback); ring all-reduce (summable
//                    payloads) or ring all-gather (others), or push to / pull from the server;
//                    SGD step with the average
//   Local SGD (H)    forward + backward + local SGD step; every H-th iteration also ring
//                    all-reduce of the parameters, which every worker replaces by the average
//   gossip           forward + backward; send the model to both ring neighbours, average the
//                    three; SGD step with the own gradient (D-PSGD)
// Iteration time is measured by every worker over the iterations after warm-up and averaged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/job.hpp"
#include "topologies/collectives.hpp"
#include "validate/codec.hpp"
#include "validate/dataset.hpp"
#include "validate/netns.hpp"
#include "validate/nn.hpp"

namespace ddlsim::validate {

// The configurations validate runs speak the simulator's vocabulary: an architecture kind (allreduce runs the ring
// algorithm) and a sync scheme (bsp or local_sgd), as scenarios name them.
namespace topo = ddlsim::topo;
namespace models = ddlsim::models;

/// "ring", "ps" or "gossip": the configuration names of the validation report.
[[nodiscard]] const char* architecture_name(topo::ArchKind a);

struct RunConfig {
    std::string name;
    ModelKind model = ModelKind::mlp;
    Backend backend = Backend::cpu;
    std::uint32_t workers = 2;
    std::uint32_t batch = 32;
    topo::ArchKind architecture = topo::ArchKind::allreduce;  ///< allreduce: the ring algorithm
    models::SyncKind sync = models::SyncKind::bsp;            ///< bsp or local_sgd
    std::uint32_t period = 1;                                 ///< local SGD: H
    CodecSpec codec;
    double rate_bps = 100e6;  ///< every link, bits per second
    std::uint32_t warmup = 2;
    std::uint32_t iterations = 10;  ///< measured, after warm-up
    float lr = 0.05F;
    std::uint64_t seed = 1;
    bool keep_first_average = false;  ///< worker 0 returns the averaged gradient of iteration 0
    std::size_t eval_samples = 0;     ///< worker 0 evaluates this many held-out samples at the end
};

/// What one worker measured.
struct WorkerReport {
    std::uint32_t rank = 0;
    double iteration_time_s = 0.0;  ///< mean over the measured iterations
    double compute_s = 0.0;         ///< mean forward + backward per iteration
    double codec_s = 0.0;           ///< mean encode + decode
    double comm_s = 0.0;            ///< mean time in the collective (including its own codec work)
    double update_s = 0.0;          ///< mean SGD step
    std::vector<double> losses;     ///< every iteration, warm-up included
    std::vector<double> residual_norms;
    std::vector<double> gradient_norms;
    std::uint64_t bytes_sent = 0;
    std::vector<float> first_average;
    double accuracy = -1.0;
};

struct RunOutcome {
    RunConfig config;
    std::vector<WorkerReport> workers;
    double iteration_time_s = 0.0;  ///< mean over workers
    double wall_s = 0.0;
    double cpu_load = 0.0;      ///< busy fraction of all CPUs during the run (/proc/stat)
    double worker_cpu_s = 0.0;  ///< user + system seconds of the worker processes (getrusage)
    std::string network;        ///< "netns" or "loopback"
};

/// Runs `c` on `net` (whose hosts must cover the workers, plus one for a server) with `train`
/// and, for the evaluation, `test`. Throws std::runtime_error with the workers' messages on failure.
[[nodiscard]] RunOutcome run_training(const RunConfig& c, const Dataset& train, const Dataset& test, HostNetwork& net,
                                      double timeout_s = 300.0);

/// Fraction of time the CPUs were busy since a /proc/stat sample; sample with cpu_sample().
struct CpuSample {
    double busy = 0.0;
    double total = 0.0;
};
[[nodiscard]] CpuSample cpu_sample();
[[nodiscard]] double cpu_load_between(const CpuSample& a, const CpuSample& b);

}  // namespace ddlsim::validate
