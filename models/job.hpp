// A data-parallel training job as the simulator runs it, and what it reports.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/compression.hpp"
#include "models/compute.hpp"
#include "models/schedule.hpp"
#include "models/workload.hpp"
#include "sim/enum_info.hpp"
#include "topologies/collectives.hpp"
#include "topologies/fabric.hpp"
#include "topologies/transport.hpp"

namespace ddlsim::models {

/// The synchronisation scheme (docs/CONTRACT.md §2 `sync`; the survey's first dimension).
enum class SyncKind { bsp, ssp, asp, local_sgd, fedavg, diloco };

inline constexpr sim::EnumEntry<SyncKind> k_sync_kinds[]{
    {SyncKind::bsp, "bsp", "a barrier per iteration"},
    {SyncKind::ssp, "ssp", "bounded staleness (Ho et al., NeurIPS 2013)"},
    {SyncKind::asp, "asp", "fully asynchronous (ps; with gossip: AD-PSGD, Lian et al., ICML 2018)"},
    {SyncKind::local_sgd, "local_sgd", "average every `period` steps (Lin et al., ICLR 2020)"},
    {SyncKind::fedavg, "fedavg", "sampled clients, local steps, server averaging (McMahan et al., AISTATS 2017)"},
    {SyncKind::diloco, "diloco",
     "islands train by BSP inside; every `period` steps an outer Nesterov step on their averaged deltas (Douillard "
     "et al., arXiv 2311.08105)"}};
constexpr std::span<const sim::EnumEntry<SyncKind>> enum_entries(SyncKind) {
    return k_sync_kinds;
}

namespace detail {
class JobTrainer;
struct TrainerEnv;
}  // namespace detail

/// What the project knows about one synchronisation scheme besides its name (models/sync_schemes.cpp lists them):
/// the architectures it runs on, its keys, how it moves gradients, and the trainer that runs it.
struct SyncSpec;

struct SyncSchemeInfo {
    SyncKind kind;
    std::vector<topo::ArchKind> architectures;  ///< where it applies (checked once, at load)
    /// Every worker's push of a round meets in one sum: it runs on BytePS (which sums one iteration at a time) and
    /// with a parameter server's switch aggregation.
    bool summed_rounds = false;
    /// Each worker exchanges its whole payload with the servers once per iteration, without overlap (SSP, ASP,
    /// FedAvg: models/trainer_ssp.cpp, trainer_fedavg.cpp); otherwise the gradient follows the overlap's messages.
    bool whole_payload = false;
    /// The workers step in lockstep, one step each per iteration, so keys that join their steps apply (gradient
    /// accumulation's micro-batches, SyncBatchNorm's groups).
    bool lockstep = false;
    /// Every iteration all-reduces that iteration's gradients, so overlap (they leave as backward produces them) and
    /// sharding (they are reduce-scattered instead) apply: BSP, and DiLoCo inside its islands.
    bool step_gradients = false;
    /// The workers step locally and average their models every `period` iterations (Local SGD); otherwise every
    /// iteration synchronises (DiLoCo's inner steps included).
    bool periodic = false;
    /// Every worker runs one program over symmetric groups, so a flow-model run may stand for the transfers of many
    /// nodes by one (flow classes, sim/symmetry.hpp).
    bool symmetric = false;
    /// Keys of the sync block besides "kind" that it takes; '*' marks a required one.
    std::vector<std::string_view> keys;
    /// The scheme with its parameters, for the summary ("local_sgd (period 8)"); `arch`: the job's architecture.
    std::string (*describe)(const SyncSpec& s, topo::ArchKind arch) = nullptr;
    /// Makes the trainer of one job of this scheme (models::simulate calls it).
    std::unique_ptr<detail::JobTrainer> (*make_trainer)(const detail::TrainerEnv& env) = nullptr;

    /// Whether it takes the sync key `key` (required or not).
    [[nodiscard]] bool takes(std::string_view key) const;
    /// Whether it requires the sync key `key`.
    [[nodiscard]] bool requires_key(std::string_view key) const;
};

/// The names of the schemes `pred` holds for, quoted and comma-separated ("\"bsp\", \"local_sgd\""), for messages.
[[nodiscard]] std::string sync_kinds_where(const std::function<bool(const SyncSchemeInfo&)>& pred);

/// Every scheme, in k_sync_kinds order.
[[nodiscard]] const std::vector<SyncSchemeInfo>& sync_schemes();
[[nodiscard]] const SyncSchemeInfo& sync_scheme(SyncKind kind);

struct SyncSpec {
    SyncKind kind = SyncKind::bsp;
    std::uint32_t staleness = 0;          ///< ssp: bound s
    std::uint32_t period = 1;             ///< local_sgd: H local steps per averaging
    std::uint32_t clients_per_round = 1;  ///< fedavg: c
    std::uint32_t local_steps = 1;        ///< fedavg: E local steps per round
    double availability = 1.0;            ///< fedavg: probability a client is available in a round
    // DiLoCo (models/trainer_sync.cpp states the schedule):
    std::uint32_t islands = 1;        ///< diloco: groups of consecutive workers that all-reduce inside themselves
    std::uint32_t fragments = 1;      ///< diloco: parts of the model synchronised in turn (Streaming DiLoCo)
    std::uint32_t overlap_steps = 0;  ///< diloco: inner steps that run while a fragment's outer sync travels
    double outer_bits = 0.0;          ///< diloco: bits per outer-gradient value across islands (0: the gradients')

    /// DiLoCo's islands: `islands` groups of workers / islands consecutive workers.
    [[nodiscard]] std::vector<std::vector<std::uint32_t>> island_groups(std::uint32_t workers) const {
        std::vector<std::vector<std::uint32_t>> out(islands);
        const std::uint32_t g = workers / islands;
        for (std::uint32_t w = 0; w < g * islands; ++w) out[w / g].push_back(w);
        return out;
    }
};

enum class Fusion { none, buffer, mgwfbp };

inline constexpr sim::EnumEntry<Fusion> k_fusions[]{
    {Fusion::none, "none", "one message per layer (with wfbp) or one per iteration"},
    {Fusion::buffer, "buffer", "DDP buckets / Horovod fusion buffer"},
    {Fusion::mgwfbp, "mgwfbp", "MG-WFBP merging (Shi et al., INFOCOM 2019; implies wfbp)"}};
constexpr std::span<const sim::EnumEntry<Fusion>> enum_entries(Fusion) {
    return k_fusions;
}

/// The `overlap` block (the survey's fourth dimension).
struct OverlapSpec {
    bool wfbp = false;
    Fusion fusion = Fusion::none;
    /// buffer: fusion threshold / DDP bucket cap; default PyTorch DDP's bucket_cap_mb = 25, in MiB
    /// (torch/nn/parallel/distributed.py: int(bucket_cap_mb * 1024 * 1024))
    sim::Bytes bucket_size{25.0 * 1024 * 1024};
    sim::Time cycle_time;            ///< buffer: Horovod cycle (0 = static DDP-style buckets)
    bool priority = false;           ///< P3 / ByteScheduler
    sim::Bytes partition_size{4e6};  ///< priority: partition size
    std::uint32_t credit = 4;        ///< priority: partitions in flight at once (ByteScheduler's credit)
    /// Compute slowdown while this worker's communication is in flight beside it (NCCL kernels take SMs
    /// and memory bandwidth); nullopt: the default (kDefaultOverlapSlowdown, 0 with an ideal transport).
    std::optional<double> compute_slowdown;

    /// Gradients are cut into several messages (buckets, layers, partitions).
    [[nodiscard]] bool any() const { return wfbp || fusion != Fusion::none || priority; }
    /// Messages leave while backward still runs (wfbp, normalised by the loader: mgwfbp and
    /// priority imply it; `"wfbp": false` with fusion buffers sends them when backward ends).
    [[nodiscard]] bool overlapped() const { return wfbp; }
};

/// Compute slowdown under overlapped communication: Lee, Oh, Kim, Go, Park, Mahajan, "Characterizing
/// Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning: Performance and
/// Power Implications" (arXiv 2507.03114, 2025), abstract: overlapping computation with communication
/// causes "an average computational slowdown of 18.9%, with a maximum of 40.0% slowdown" against the same
/// kernels alone.
inline constexpr double kDefaultOverlapSlowdown = 0.189;

/// Which workers share one copy of the model state under sharding.
enum class ShardGroup { all, node };

inline constexpr sim::EnumEntry<ShardGroup> k_shard_groups[]{
    {ShardGroup::all, "all", "shard over every worker (ZeRO, FSDP FULL_SHARD)"},
    {ShardGroup::node, "node", "shard inside each node, replicate across nodes (hybrid sharding, FSDP HYBRID_SHARD)"}};
constexpr std::span<const sim::EnumEntry<ShardGroup>> enum_entries(ShardGroup) {
    return k_shard_groups;
}

/// The `sharding` block: sharded data parallelism (models/trainer_sharded.cpp states the schedule).
///   stage 1  ZeRO-1: optimizer state sharded; gradients reduce-scattered, the local shard updated, the
///            parameters all-gathered (Rajbhandari et al., SC 2020, §5.1)
///   stage 2  ZeRO-2: gradients sharded too; the same collectives (§5.2)
///   stage 3  ZeRO-3 / FSDP: parameters sharded; each unit's parameters all-gathered before its forward and again
///            before its backward, its gradients reduce-scattered after its backward (§5.3; Zhao et al., VLDB 2023)
struct ShardingSpec {
    std::uint32_t stage = 0;  ///< 0: replicated (DDP)
    ShardGroup group = ShardGroup::all;
    std::uint32_t prefetch = 1;  ///< stage 3: units whose all-gathers are issued ahead of the one computing
    std::uint32_t wrap = 1;      ///< stage 3: transformer blocks (or layers) per unit (models/workload.hpp shard_units)
    std::uint32_t group_size = 0;  ///< workers per shard group, resolved with the placement (0: every worker)
    // ZeRO++ (Wang et al., "ZeRO++: Extremely Efficient Collective Communication for Giant Model Training",
    // arXiv 2306.10209, 2023; stage 3 over all workers only):
    bool quantized_weights = false;        ///< qwZ: weights all-gathered as int8 blocks with fp32 scales
    std::uint32_t hpz_partition_size = 1;  ///< hpZ: backward gathers from a secondary copy over this many GPUs
    bool quantized_gradients = false;      ///< qgZ: gradients reduced by an int4 hierarchical all-to-all

    [[nodiscard]] bool any() const { return stage > 0; }
    /// hpZ changes anything: secondary partitions smaller than the `workers` of the job and larger than one GPU.
    [[nodiscard]] bool hpz(std::uint32_t workers) const {
        return hpz_partition_size > 1 && hpz_partition_size < workers;
    }
};

/// How a pipeline orders its micro-batches' forward and backward passes on each stage.
enum class PipelineSchedule { gpipe, one_f_one_b, interleaved_1f1b, zero_bubble };

inline constexpr sim::EnumEntry<PipelineSchedule> k_pipeline_schedules[]{
    {PipelineSchedule::gpipe, "gpipe", "every micro-batch's forward, then every backward (Huang et al. 2019)"},
    {PipelineSchedule::one_f_one_b, "1f1b",
     "p - s - 1 warm-up forwards on stage s, then one forward and one backward in turn, then the remaining "
     "backwards (PipeDream-Flush; Narayanan et al. SC'21, Megatron's default)"},
    {PipelineSchedule::interleaved_1f1b, "interleaved_1f1b",
     "each stage holds virtual_stages chunks of the model and runs Megatron's interleaved 1F1B over them: the bubble "
     "shrinks v times for v times the point-to-point traffic (Narayanan et al. SC'21 §2.2)"},
    {PipelineSchedule::zero_bubble, "zero_bubble",
     "ZB-H1 (Qi et al., \"Zero Bubble Pipeline Parallelism\", ICLR 2024, arXiv 2401.10241 §3): each backward split "
     "into "
     "its input gradients (sent on at once) and its weight gradients (deferred to fill the bubble), 1F1B's memory; "
     "the bubble (p - 1)(F + B - W) instead of (p - 1)(F + B + W)"}};
constexpr std::span<const sim::EnumEntry<PipelineSchedule>> enum_entries(PipelineSchedule) {
    return k_pipeline_schedules;
}

/// How context parallelism exchanges what attention needs (models/context_parallel.hpp).
enum class ContextAlgorithm { ring, all_to_all };

inline constexpr sim::EnumEntry<ContextAlgorithm> k_context_algorithms[]{
    {ContextAlgorithm::ring, "ring",
     "ring attention (Megatron-Core's cp_comm_type \"p2p\"): the key/value blocks passed around the ring beside the "
     "blockwise attention"},
    {ContextAlgorithm::all_to_all, "all_to_all",
     "DeepSpeed-Ulysses (Jacobs et al., arXiv 2309.14509; Megatron-Core's cp_comm_type \"a2a\"): an all-to-all turns "
     "the sequence-split queries, keys and values into head-split ones over the whole sequence before attention, and "
     "another turns its output back; the compute stream waits for both"}};
constexpr std::span<const sim::EnumEntry<ContextAlgorithm>> enum_entries(ContextAlgorithm) {
    return k_context_algorithms;
}

/// The `parallelism` block: model parallelism around data parallelism (models/program/pipeline.hpp,
/// models/tensor_parallel.hpp). Ranks are laid out in Megatron's default order, tensor innermost and the pipeline
/// outermost: rank r = (stage x data + data rank) x tensor + tensor rank.
struct ParallelismSpec {
    std::uint32_t tensor = 1;  ///< ranks splitting each layer (1: none)
    bool sequence_parallel = false;
    /// Each sequence-parallel all-gather and reduce-scatter runs beside the GEMM that consumes or produces it
    /// (TransformerEngine's userbuffers, Megatron's --tp-comm-overlap; models/program/pipeline.cpp).
    bool tensor_overlap = false;
    std::uint32_t pipeline = 1;  ///< stages (1: none)
    PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
    /// Transformer blocks on the first and on the last (virtual) stage (none: as many as on the others).
    std::optional<std::uint32_t> first_stage_layers, last_stage_layers;
    /// interleaved_1f1b: the model chunks each stage holds.
    std::optional<std::uint32_t> virtual_stages;
    /// Ranks each sequence splits over (models/context_parallel.hpp; 1: none).
    std::uint32_t context = 1;
    ContextAlgorithm context_algorithm = ContextAlgorithm::ring;
    /// Ranks of the data-parallel dimension the routed experts split over (models/expert_parallel.hpp; 1: none).
    std::uint32_t expert = 1;
    /// The busiest expert's tokens over the mean (1: balanced routing).
    double expert_imbalance = 1.0;
    /// The distributed optimizer's all-gather of each bucket of updated parameters runs beside the next step's
    /// forward, waited for before the bucket's first layer (Megatron's --overlap-param-gather).
    bool overlap_param_gather = false;

    /// The model chunks each stage holds (1 unless interleaved).
    [[nodiscard]] std::uint32_t chunks() const {
        return schedule == PipelineSchedule::interleaved_1f1b ? virtual_stages.value_or(1) : 1;
    }

    [[nodiscard]] bool any() const { return pipeline > 1 || tensor > 1 || context > 1 || expert > 1; }
    /// The data-parallel degree: model replicas, workers / (tensor x context x pipeline).
    [[nodiscard]] std::uint32_t data(std::uint32_t workers) const {
        return workers / std::max<std::uint32_t>(1, pipeline * tensor * context);
    }
    /// The ranks of one stage: data x context x tensor.
    [[nodiscard]] std::uint32_t stage_ranks(std::uint32_t workers) const {
        return workers / std::max<std::uint32_t>(1, pipeline);
    }
    /// The ranks of one model replica: pipeline x context x tensor.
    [[nodiscard]] std::uint32_t replica_ranks() const { return pipeline * context * tensor; }

    // The simulation's rank of (stage s, data rank j, context rank k, tensor rank i): data outermost,
    // ((j p + s) c + k) t + i, so that replica j + 1's ranks are replica j's shifted by one replica, a shift of the
    // ranks that maps the job onto itself (flow classes, sim/symmetry.hpp). Where a rank sits among the workers (its
    // host, its device, its place in results) is `placement`'s, by `order`.
    [[nodiscard]] std::uint32_t rank(std::uint32_t s, std::uint32_t j, std::uint32_t k, std::uint32_t i) const {
        return ((j * pipeline + s) * context + k) * tensor + i;
    }
    /// The stage rank r runs.
    [[nodiscard]] std::uint32_t stage_of(std::uint32_t r) const { return r / (context * tensor) % pipeline; }

    /// Megatron's rank order (megatron/core/parallel_state.py, RankGenerator): the dimensions from the fastest-varying
    /// out, "tp", "cp", "dp", "pp" once each and "ep" (optional) just inside "dp" (expert groups are consecutive data
    /// ranks). Default Megatron's; Llama 3 ran "tp-cp-pp-dp" (arXiv 2407.21783 §3.3.2).
    std::string order = "tp-cp-ep-dp-pp";
    /// `order`'s dimensions from the innermost: 0 tensor, 1 context, 2 data, 3 pipeline. Throws
    /// std::invalid_argument (naming what was expected) for anything else.
    [[nodiscard]] std::array<std::uint8_t, 4> order_dims() const;
    /// Where each rank sits among the workers: its coordinates laid out in `order` (rank r -> worker).
    [[nodiscard]] std::vector<std::uint32_t> placement(std::uint32_t workers) const;
};

enum class StragglerDistribution { none, lognormal, exponential, periodic };

/// The distributions a scenario names ("none" is the absence of the key, so it has no name here).
inline constexpr sim::EnumEntry<StragglerDistribution> k_straggler_distributions[]{
    {StragglerDistribution::lognormal, "lognormal", "slowdown factor exp(sigma |Z|)"},
    {StragglerDistribution::exponential, "exponential", "added delay of mean `mean_delay`"},
    {StragglerDistribution::periodic, "periodic", "one iteration in `every` slower by `slowdown`"}};
constexpr std::span<const sim::EnumEntry<StragglerDistribution>> enum_entries(StragglerDistribution) {
    return k_straggler_distributions;
}

/// Per-worker, per-iteration compute slowdowns (docs/CONTRACT.md §2 `stragglers`).
struct StragglerSpec {
    std::vector<std::pair<std::uint32_t, double>> fixed;  ///< worker -> compute slowdown factor
    StragglerDistribution distribution = StragglerDistribution::none;
    double sigma = 0.5;                  ///< lognormal: factor exp(sigma * N(0,1))
    sim::Time mean_delay;                ///< exponential: added delay with this mean
    std::uint32_t every = 10;            ///< periodic: one iteration in `every` is slow ...
    double slowdown = 2.0;               ///< ... by this factor
    std::vector<std::uint32_t> workers;  ///< distributions apply to these workers (empty: all)

    [[nodiscard]] bool any() const { return !fixed.empty() || distribution != StragglerDistribution::none; }
};

/// A training job's own keys: what a scenario's job block says. The scenario's JobSpec and the resolved TrainingJob
/// both are one, so the loader fills it once and resolve_job (models/resolve.hpp) takes it whole; nothing copies it
/// field by field.
struct JobKeys {
    Workload workload;
    std::uint32_t workers = 1;
    std::uint32_t batch_size = 1;  ///< per worker per micro-batch
    /// Micro-batches per optimizer step (gradient accumulation; 1: none): an iteration is one step of
    /// gradient_accumulation x batch_size samples per worker, synchronised once.
    std::uint32_t gradient_accumulation = 1;
    bool activation_checkpointing = false;      ///< full: recompute each block's forward in backward (compute.hpp)
    bool selective_recomputation = false;       ///< selective: recompute attention's core only (LayerPart)
    double bytes_per_param = 4.0;               ///< gradient element size (model.dtype)
    Optimizer optimizer = Optimizer::momentum;  ///< the optimizer the update streams through memory
    std::uint32_t bn_group = 1;  ///< GPUs that synchronise their BatchNorm statistics (SyncBatchNorm; 1: none)
    topo::ArchitectureSpec architecture;
    SyncSpec sync;
    OverlapSpec overlap;
    ShardingSpec sharding;
    ParallelismSpec parallelism;
    CompressionSpec compression;
    StragglerSpec stragglers;
    DeviceSpec device;                       ///< the device of every worker without its own
    std::vector<DeviceSpec> worker_devices;  ///< per worker when the cluster is heterogeneous (else empty)
};

/// Everything the trainer needs: the job's keys resolved on a fabric (models/resolve.hpp).
struct TrainingJob : JobKeys {
    ComputeProfile compute;
    std::uint32_t iterations = 1;
    std::vector<topo::Vertex> endpoint_hosts;    ///< workers, then server endpoints
    std::uint32_t index = 0;                     ///< position among the jobs sharing a fabric
    std::uint64_t seed = 0;                      ///< ECMP flow hashing derives from it
    std::vector<ComputeProfile> worker_compute;  ///< per worker when devices differ (else empty: `compute`)
    bool record_schedule = false;                ///< keep the update schedule (convergence replay)
    sim::Time collective_overhead;               ///< per collective: launch / negotiation (the transport's)
    double overlap_slowdown = 0.0;               ///< compute stretched by (1 + this) while communication runs
    /// SyncBatchNorm (bn_group > 1): NCCL's cost of one small all-reduce in the slowest group (its LL ring,
    /// topo::nccl_small_allreduce), and the launch of each statistics all-reduce, so that its ring of flows on an
    /// idle fabric costs that: the LL latency less the ring's hop latencies on the fabric, never below zero.
    topo::SmallAllreduce batchnorm_cost;
    sim::Time batchnorm_launch;

    [[nodiscard]] const ComputeProfile& compute_of(std::uint32_t w) const {
        return worker_compute.empty() ? compute : worker_compute[w];
    }
    [[nodiscard]] const DeviceSpec& device_of(std::uint32_t w) const {
        return worker_devices.empty() ? device : worker_devices[w];
    }

    /// Worker w's time for codec work on its device (models/compression.hpp codec_time, with the compressor's
    /// calibrated cost_scale); none without work.
    [[nodiscard]] sim::Time codec_time(const CodecWork& work, std::uint32_t w) const {
        if (work.memory_bytes <= 0.0 && work.flops <= 0.0) return sim::Time::zero();
        return models::codec_time(work, device_of(w), compression.cost_scale);
    }

    /// Gradient (or model) bytes one worker synchronises per iteration.
    [[nodiscard]] sim::Bytes gradient_bytes() const {
        return sim::Bytes{static_cast<double>(workload.params()) * bytes_per_param};
    }
};

/// Algorithm auto: the collectives of one iteration that run one picked algorithm.
struct AlgorithmPick {
    topo::AllreduceAlgorithm algorithm = topo::AllreduceAlgorithm::ring;
    std::uint32_t messages = 0;  ///< collectives per iteration (a message's summable part; PowerSGD's P and Q)
    double min_bytes = 0.0;      ///< per worker, the smallest of them
    double max_bytes = 0.0;
};

/// Per-iteration figures of one job (docs/CONTRACT.md §3).
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
    double machine_bytes_per_iteration = -1.0;  ///< of those, between machines (through NICs); < 0: not known
    double makespan_s = 0.0;
    double codec_time_s = 0.0;  ///< encode + decode per iteration of one worker
    /// Per iteration, mean over workers: idle while waiting for peers (stragglers, slower devices), not for bytes
    /// (synchronous trainers; the others report their waiting in `breakdown` only).
    double waiting_time_s = 0.0;
    /// Where an iteration goes, per worker on average; the four sum to iteration_time_s (every trainer; the
    /// closed form, which has no peers to wait for, leaves it empty and the result derives it).
    struct Breakdown {
        double compute = 0.0;                ///< forward, backward, update (stretched beside communication)
        double codec = 0.0;                  ///< encode + decode
        double exposed_communication = 0.0;  ///< idle waiting for bytes
        double waiting = 0.0;                ///< idle waiting for peers
    };
    std::optional<Breakdown> breakdown;

    /// Asynchronous schemes: the staleness of every applied update (model versions
    /// applied between the read of the model a gradient was computed on and its application).
    bool has_staleness = false;
    double staleness_mean = 0.0;
    std::uint64_t staleness_max = 0;
    std::vector<std::uint64_t> staleness_histogram;  ///< [s] = updates of staleness s

    struct WorkerStats {
        std::uint32_t iterations = 0;       ///< local steps completed
        double idle_s = 0.0;                ///< waiting for communication, barriers or bounds
        std::uint64_t updates_applied = 0;  ///< updates applied to its model (own steps, averagings, pulls)
    };
    std::vector<WorkerStats> workers;
    std::uint64_t model_versions = 0;          ///< PS / server: global model versions produced
    std::uint64_t rounds = 0;                  ///< synchronisation rounds run (local_sgd, fedavg: averagings)
    double clients_per_round_mean = 0.0;       ///< fedavg: clients that took part, per round
    double collectives_per_iteration = 0.0;    ///< collective rounds a worker joins per iteration (messages x phases)
    std::shared_ptr<const Schedule> schedule;  ///< with TrainingJob::record_schedule
    std::uint32_t max_lead = 0;                ///< ssp/asp: most iterations a worker started ahead of the slowest
    /// Algorithm auto: what it picked, one entry per algorithm (empty for every other algorithm).
    std::vector<AlgorithmPick> algorithm_picks;
    /// Model-parallel jobs: a figure by the parallel dimension it belongs to.
    struct ByDimension {
        double tensor = 0.0;    ///< tensor-parallel all-reduces (reduce-scatters and all-gathers)
        double pipeline = 0.0;  ///< activations and their gradients between stages (and, for time, the bubble)
        double data = 0.0;      ///< the stages' gradient all-reduces
        double expert = 0.0;    ///< expert parallelism's all-to-alls (dispatch and combine)
        double context = 0.0;   ///< context parallelism's key/value rings
    };
    /// bytes_on_wire_per_iteration by the dimension that sends them (they sum to it).
    std::optional<ByDimension> bytes_by_dimension;
    /// The breakdown's exposed_communication by what the compute stream waited for (they sum to it): tensor- and
    /// data-parallel collectives, and the rest, the pipeline's (receives, the bubble).
    std::optional<ByDimension> exposed_by_dimension;
};

/// What the job's collective needs: sizes, tensors in backward order, nodes of the workers.
[[nodiscard]] topo::CollectiveContext collective_context(const TrainingJob& job, const topo::Fabric& fabric);
/// The reducing switch (NVLink SHARP) of each node the job's workers use, in order of the nodes' first worker (the
/// order of CollectiveContext::node_of); empty unless every such node has one. An all-reduce job appends their
/// vertices to endpoint_hosts so that nvls can end flows at them.
[[nodiscard]] std::vector<topo::ReducingSwitch> reducing_switches(const TrainingJob& job, const topo::Fabric& fabric);
/// The SHARP switch of each rail of the job's nodes (InfiniBand SHARP, algorithm collnet): rail j is the j-th worker
/// of every node in worker order, its switch the one that worker's host reaches first (topo::Fabric::sharp_switch).
/// Empty unless the fabric has SHARP switches, the workers sit on at least two nodes of equal size and every rail's
/// workers reach the same switch. An all-reduce job appends them to endpoint_hosts after the reducing switches.
[[nodiscard]] std::vector<topo::Vertex> sharp_switches(const TrainingJob& job, const topo::Fabric& fabric);
/// Switch aggregation: the SHARP switch a parameter-server job's pushes are summed in, when it is the job's last
/// endpoint (scenarios/run.cpp appends it); none otherwise.
[[nodiscard]] std::optional<topo::Vertex> summing_switch(const TrainingJob& job, const topo::Fabric& fabric);

}  // namespace ddlsim::models
