// Model parallelism compiled to per-rank programs (the job key `parallelism`): tensor parallelism inside each
// layer (models/tensor_parallel.hpp) and the model's layers split into `pipeline` stages, each stage's ranks
// d model replicas of t tensor ranks (Megatron's order: rank r = (stage x d + data rank) x t + tensor rank). Every
// stage runs its own program:
//
//   stage s, micro-batch k forward:   [recv act k from s-1]  fwd of its layers, each tensor-parallel region
//                                     followed by its all-reduce  [send act k to s+1]
//   stage s, micro-batch k backward:  [recv grad k from s+1] bwd of its layers, each region's column GEMM
//                                     followed by its input gradient's all-reduce  [send grad k to s-1]
//
// in the order the schedule gives (GPipe: every forward, then every backward; 1F1B: p - s - 1 warm-up forwards,
// then one forward and one backward in turn, then the remaining backwards; interleaved 1F1B: each stage holds v
// chunks of the model, virtual stages s, s + p, ..., and runs Megatron's interleaved order over them; Narayanan et
// al., "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21, §2.2; zero bubble
// (ZB-H1, Qi et al., arXiv 2401.10241 §3.1): each backward's input gradients B and weight gradients W apart, stage s
// running for x = 0, 1, ..., m + p - 2 the forward of micro-batch x, the input gradients of x - (p - 1 - s) and the
// weight gradients of x - (p - 1), those that exist: 1F1B's order with the W deferred into the bubble). The sends are
// point-to-point flows on the fabric, so the bubble is not added but happens: on an idle fabric with zero-latency
// links a step is (m + p - 1)(f + b) for GPipe and 1F1B and m (f + b) + (p - 1)(f + b) / v interleaved (m
// micro-batches, f and b a stage's forward and backward), and m (F + B + W) + (p - 1)(F + B - W) for zero bubble
// when W <= F and m >= p (the paper's ZB-H1 bubble). The tensor-parallel
// collectives (reduce-scatters and all-gathers with sequence parallelism, a second all-reduce per region with full
// recomputation) run on their own communicator and the compute stream waits for each (no overlap: Megatron's
// default). With expert parallelism (models/expert_parallel.hpp) each routed-experts layer's forward is preceded by
// the dispatch all-to-all over the expert group and followed by the combine, its backward the same two in reverse,
// on a communicator of their own that the compute stream waits for (full recomputation reruns both). After its last
// backward a stage all-reduces its gradients among each tensor rank's data-parallel group (a ring, as NCCL's
// all-reduce of large buffers; Megatron's default, the reduction after the pipeline drains), the experts' among the
// ranks holding the same experts, and runs its share of the optimizer's update.
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

/// The virtual stages of `w`: par.pipeline x par.chunks() of them in forward order (stage s runs virtual stages
/// s, s + p, s + 2p, ...: its chunks under the interleaved schedule). A transformer's blocks split evenly, or the first
/// and the last virtual stage holding `first_stage_layers` and `last_stage_layers` blocks and the others the rest
/// evenly (the layers before the first block on the first, after the last block on the last, as Megatron places the
/// embedding and the head); every other model's layers in contiguous runs of floor(L / V) or one more, the longer runs
/// first. Throws std::invalid_argument naming the rule when the blocks do not divide or a stage would get no layer.
[[nodiscard]] std::vector<StageLayers> pipeline_stages(const Workload& w, const ParallelismSpec& par);

/// Stage s's chunks of the virtual stages `all` (pipeline_stages) over p stages: virtual stages s, s + p, ...
[[nodiscard]] std::vector<StageLayers> stage_chunks(const std::vector<StageLayers>& all, std::uint32_t p,
                                                    std::uint32_t s);

/// One pass of one micro-batch through one of a stage's chunks.
enum class Pass : std::uint8_t {
    forward,
    backward,  ///< input and weight gradients together
    input,     ///< the input gradients alone (zero bubble), sent on at once
    weight,    ///< the deferred weight gradients (zero bubble)
};
struct PipelineOp {
    Pass pass = Pass::forward;
    std::uint32_t micro_batch = 0;
    std::uint32_t chunk = 0;
};

/// The forwards stage `s` runs before its first backward (of m micro-batches, counting each chunk's): GPipe all m;
/// 1F1B and zero bubble p - s - 1 (at most m); interleaved 2 (p - s - 1) + (v - 1) p (at most m v; all of them when m =
/// p), Megatron's (megatron/core/pipeline_parallel/schedules.py).
[[nodiscard]] std::uint32_t warmup_forwards(const ParallelismSpec& par, std::uint32_t s, std::uint32_t m);

/// The order stage `s` runs its m micro-batches' passes in, by the job's schedule.
[[nodiscard]] std::vector<PipelineOp> stage_schedule(const ParallelismSpec& par, std::uint32_t s, std::uint32_t m);

/// Bytes per sample a stage boundary after layer `l` sends forward, and its gradient backward: the layer's
/// activation_bytes where given (custom layers), else its output at `element_bytes` each (the output shape of its
/// last GEMM, rows per sample x columns); 0 when neither is known.
[[nodiscard]] double boundary_bytes_per_sample(const Workload& w, std::uint32_t l, double element_bytes);

/// The communicators of the tensor-parallel collectives and of the expert all-to-alls (Call::stream): process groups
/// of their own.
inline constexpr std::uint8_t kTensorStream = 2;
inline constexpr std::uint8_t kExpertStream = 3;
inline constexpr std::uint8_t kContextStream = 4;

/// The pipeline's point-to-point traffic, the tensor-parallel collectives and the stages' gradient all-reduces of one
/// iteration.
struct PipelineTotals {
    double p2p_bytes = 0.0;            ///< every send's bytes, summed over ranks
    double p2p_machine_bytes = 0.0;    ///< of those, between different machines
    double wire = 0.0, machine = 0.0;  ///< the all-reduces' bytes between hosts and between machines, every rank's
    double collectives = 0.0;          ///< the all-reduces (one per stage with data parallelism)
    double tensor_wire = 0.0, tensor_machine = 0.0;    ///< the tensor-parallel collectives' bytes, every rank's
    double tensor_collectives = 0.0;                   ///< tensor-parallel collectives, summed over the stages
    double expert_wire = 0.0, expert_machine = 0.0;    ///< the expert all-to-alls' bytes, every rank's
    double expert_collectives = 0.0;                   ///< expert all-to-alls, summed over the stages
    double context_wire = 0.0, context_machine = 0.0;  ///< the context-parallel rings' bytes, every rank's
    double context_collectives = 0.0;                  ///< context-parallel rings, summed over the stages
};

/// Compiles one optimizer step of `job` (parallelism.any()) into a program per stage, its collectives planned by
/// `planner` (groups "stage s data", "stage s tensor", "stage s expert" and "stage s expert data"). `same_machine(a,
/// b)`: whether ranks a and b share a machine.
[[nodiscard]] ProgramSet compile_pipeline(const TrainingJob& job, Planner& planner, double element_bytes,
                                          const std::function<bool(std::uint32_t, std::uint32_t)>& same_machine,
                                          PipelineTotals& totals);

}  // namespace ddlsim::models::program
