// A data-parallel training job as the simulator runs it, and what it reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/compute.hpp"
#include "models/workload.hpp"
#include "topologies/collectives.hpp"
#include "topologies/fabric.hpp"

namespace ddlsim::models {

/// Everything the trainer needs, resolved from a scenario.
struct TrainingJob {
    Workload workload;
    ComputeProfile compute;
    std::uint32_t workers = 1;
    std::uint32_t batch_size = 1;
    std::uint32_t iterations = 1;
    double bytes_per_param = 4.0;
    topo::ArchitectureSpec architecture;
    std::vector<topo::Vertex> endpoint_hosts;  ///< workers, then server endpoints
    std::uint32_t index = 0;                   ///< position among the jobs sharing a fabric
    std::uint64_t seed = 0;                    ///< ECMP flow hashing derives from it

    /// Gradient (or model) bytes one worker synchronises per iteration.
    [[nodiscard]] sim::Bytes gradient_bytes() const {
        return sim::Bytes{static_cast<double>(workload.params()) * bytes_per_param};
    }
};

/// Per-iteration figures of one job (SPEC §3).
struct JobResult {
    double iteration_time_s = 0.0;
    double throughput_samples_per_s = 0.0;
    double scaling_efficiency = 0.0;
    double compute_time_s = 0.0;
    double forward_time_s = 0.0;
    double backward_time_s = 0.0;
    double update_time_s = 0.0;
    double communication_time_s = 0.0;
    double exposed_communication_time_s = 0.0;
    double bytes_on_wire_per_iteration = 0.0;
    double makespan_s = 0.0;
};

/// What the job's collective needs: sizes, tensors in backward order, nodes of the workers.
[[nodiscard]] topo::CollectiveContext collective_context(const TrainingJob& job, const topo::Fabric& fabric);

/// Fills the derived figures from the iteration time and compute profile.
void finish_result(const TrainingJob& job, double makespan_s, JobResult& r);

}  // namespace ddlsim::models
