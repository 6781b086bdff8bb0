// One resolved job: a job's keys (models::JobKeys) made into what the trainers run (TrainingJob) on a built fabric,
// beside the model rather than in the scenario parser (as ns-3 keeps its wiring in helper/). Every model rule that
// turns keys into a runnable job lives here, once:
//   - the compute profile of the job's device and of each worker's own (models/compute.hpp), with full activation
//     checkpointing's recomputation and gradient accumulation's k - 1 micro-batches of forward and backward;
//   - SyncBatchNorm's cost (bn_group > 1: each group of consecutive ranks all-reduces its statistics, which the
//     programs run as flows, models/program/batchnorm.hpp): NCCL's LL latency of the slowest group and the launch
//     that makes a ring on the idle fabric cost it;
//   - the compute slowdown beside communication: overlap.compute_slowdown, else the device's calibrated
//     overlap_slowdown, else kDefaultOverlapSlowdown (0 with the ideal transport); none for a lone worker with no
//     server (nothing to communicate);
//   - the collective overhead (the transport's; none for one worker);
//   - the endpoints: workers, servers, then the in-network reducers a collective ends flows at (NVLink SHARP's
//     node switches and InfiniBand SHARP's rail switches for an all-reduce; the summing switch of a parameter server
//     with switch aggregation);
//   - switch aggregation's memory shared among the jobs summing in one switch (share_switch_memory).
// The scenario loader builds the fabric and calls these once (scenario::ResolvedRun); the trainer, the limits, the
// summary and the result read the job they return.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/job.hpp"
#include "topologies/fabric.hpp"

namespace ddlsim::models {

/// What a job needs beyond its own keys: its place among the jobs and on the fabric.
struct JobContext {
    std::uint32_t iterations = 1;
    std::uint32_t index = 0;  ///< position among the jobs sharing the fabric
    std::uint64_t seed = 0;
    sim::Time collective_overhead;  ///< the fabric's transport's, per collective
    bool ideal_transport = false;   ///< the ideal transport: overlap costs nothing unless a key says so
    std::vector<topo::Vertex> worker_hosts;
    std::vector<topo::Vertex> server_hosts;
    bool record_schedule = false;  ///< keep the update schedule (the convergence replay)
};

/// A device that cannot run the job (models::compute_profile refused it): `worker` is -1 for the job's device, else
/// the worker whose own device it is.
class DeviceRefused : public std::invalid_argument {
public:
    DeviceRefused(int w, const std::string& what) : std::invalid_argument(what), worker(w) {}
    int worker;
};

/// The job of `keys` before any fabric: its keys, with the model as one rank holds it (its tensor-parallel share,
/// models/tensor_parallel.hpp). What resolve_job starts from, and what a memory estimate without a fabric reads.
[[nodiscard]] TrainingJob job_of_keys(const JobKeys& keys);

/// The job of `keys` on `fabric`; throws DeviceRefused.
[[nodiscard]] TrainingJob resolve_job(const JobKeys& keys, const topo::Fabric& fabric, const JobContext& ctx);

/// Switch aggregation's memory (network.aggregation_memory, bytes; 0: none): the jobs that sum in one switch share it
/// equally, as SwitchML's pools are split among jobs and ATP's aggregators among the jobs active on a switch (its
/// fallback to the server when they run out is not modelled).
void share_switch_memory(std::vector<TrainingJob>& jobs, const topo::Fabric& fabric, double memory);

}  // namespace ddlsim::models
