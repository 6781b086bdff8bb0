// Pipeline parallelism compiled to per-rank programs (the job key `parallelism`): the model's layers split into
// `pipeline` stages, each stage's ranks a data-parallel group of workers / pipeline (Megatron's order puts the
// pipeline outermost: rank r on stage r / d, data rank r % d). Every stage runs its own program:
//
//   stage s, micro-batch k forward:   [recv act k from s-1]  compute fwd of its layers  [send act k to s+1]
//   stage s, micro-batch k backward:  [recv grad k from s+1] compute bwd of its layers  [send grad k to s-1]
//
// in the order the schedule gives (GPipe: every forward, then every backward; 1F1B: p - s - 1 warm-up forwards,
// then one forward and one backward in turn, then the remaining backwards; Narayanan et al., "Efficient
// Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21, §2.2). The sends are point-to-point
// flows on the fabric, so the bubble is not added but happens: on an idle fabric with zero-latency links a step is
// (m + p - 1)(f + b) for both schedules (m micro-batches, f and b a stage's forward and backward). After its last
// backward a stage all-reduces its gradients among its data-parallel group (a ring, as NCCL's all-reduce of large
// buffers; Megatron's default, the reduction after the pipeline drains) and runs its share of the optimizer's update.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "models/job.hpp"
#include "models/program/planner.hpp"
#include "models/program/program.hpp"

namespace ddlsim::models::program {

/// Layers [first, last] of one stage.
struct StageLayers {
    std::uint32_t first = 0, last = 0;
};

/// The stages of `w` over `p` stages: a transformer's blocks split evenly (the layers before the first block on the
/// first stage, after the last block on the last, as Megatron places the embedding and the head), every other model's
/// layers in contiguous runs of floor(L / p) or one more, the longer runs first. Throws std::invalid_argument naming
/// the rule when the blocks do not divide by p or a stage would get no layer.
[[nodiscard]] std::vector<StageLayers> pipeline_stages(const Workload& w, std::uint32_t p);

/// Bytes per sample a stage boundary after layer `l` sends forward, and its gradient backward: the layer's
/// activation_bytes where given (custom layers), else its output at `element_bytes` each (the output shape of its
/// last GEMM, rows per sample x columns); 0 when neither is known.
[[nodiscard]] double boundary_bytes_per_sample(const Workload& w, std::uint32_t l, double element_bytes);

/// The pipeline's point-to-point traffic and the stages' gradient all-reduces of one iteration.
struct PipelineTotals {
    double p2p_bytes = 0.0;            ///< every send's bytes, summed over ranks
    double p2p_machine_bytes = 0.0;    ///< of those, between different machines
    double wire = 0.0, machine = 0.0;  ///< the all-reduces' bytes between hosts and between machines, every rank's
    double collectives = 0.0;          ///< the all-reduces (one per stage with data parallelism)
};

/// Compiles one optimizer step of `job` (parallelism.pipeline > 1) into a program per stage, its all-reduces planned
/// by `planner` (group "stage_data" per stage). `same_machine(a, b)`: whether ranks a and b share a machine.
[[nodiscard]] ProgramSet compile_pipeline(const TrainingJob& job, Planner& planner, double element_bytes,
                                          const std::function<bool(std::uint32_t, std::uint32_t)>& same_machine,
                                          PipelineTotals& totals);

}  // namespace ddlsim::models::program
