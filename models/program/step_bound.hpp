// A lower bound of one step of a job, read off its per-rank programs without simulating them: what `ddlsim plan`
// (tools/plan.cpp) compares with the best steps simulated so far, to leave a layout that cannot rank unsimulated.
//
// Each rank's compute stream runs its program in order (models/program/executor.hpp), so a rank's step lasts at least
// its walk: every compute at its profile's time (no straggler, no slowdown beside communication: both only stretch
// it), every wait until the call it waits for is done, and a call starting no earlier than its issue and the previous
// call of its communicator (fifo), lasting at least its launch plus each phase's least time on that rank
// (topo::Collective::least_time: on a ring a rank sends its chunks one after another, each at least its own hop's
// latency and the chunk at the hop's bottleneck bandwidth, whatever shares the links; the least over the ranks that
// run the same program on the same stage, whose walks differ in nothing else; other collectives, such as the expert
// all-to-alls, count nothing). Receives count the pipeline's fill: with p stages, stage s receives nothing
// before the first micro-batch has gone forward through virtual stages 0 .. s - 1, and after its last send back the
// last micro-batch's input gradients still go back through virtual stages s - 1 .. 0 (compute alone). Every schedule
// (GPipe, 1F1B, interleaved, zero bubble) keeps those orders. The step's bound is the largest over the ranks; on a
// program of compute and tensor-parallel collectives inside one NVSwitch node it is the step itself.
#pragma once

#include "models/job.hpp"
#include "topologies/fabric.hpp"

namespace ddlsim::models::program {

/// Seconds no simulation of one step of `job` on `fabric` can beat (see above), at least compute_lower_bound_s; 0
/// where the ranks' devices differ or stragglers may speed one up.
[[nodiscard]] double step_lower_bound_s(const TrainingJob& job, const topo::Fabric& fabric);

/// A looser bound from the compute profile alone, without compiling the programs: the busiest stage's forward and
/// backward passes over the m micro-batches between the pipeline's fill and drain (a job without model parallelism:
/// its accumulation, forward and backward). What `ddlsim plan` orders its candidates by before it compiles any.
[[nodiscard]] double compute_lower_bound_s(const TrainingJob& job);

}  // namespace ddlsim::models::program
