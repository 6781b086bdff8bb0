// The loader's limits: estimates of a scenario's events and wall time (check prints them) and the refusals that keep
// a run inside them -- events and estimated seconds, a round's explicit-DAG transfers, communication-plan memory, the
// fabric's size and an iteration's compute (docs/CONTRACT.md §2: exit 2 at the key that makes it too large).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "models/compression.hpp"
#include "models/compute.hpp"
#include "models/grouping.hpp"
#include "models/trainer.hpp"
#include "scenarios/loader_detail.hpp"
#include "topologies/collectives.hpp"
#include "topologies/sharded_collectives.hpp"
#include "topologies/sparse_collectives.hpp"

namespace ddlsim::scenario {
namespace {

constexpr double kMaxEvents = 1e10;              // flow-mode refusal bound (about half an hour at the base rate)
constexpr double kMaxSeconds = kMaxFlowSeconds;  // the same bound in estimated wall time
constexpr double kMaxPlanSteps = 5e7;            // transfers in one explicit-DAG round, bounds memory
constexpr double kMaxPlanMemory = 4e9;           // bytes of communication plans (plan_memory_bytes), the stated limit

double tensor_calls_per_micro_batch(const JobSpec& j);

// SSP, ASP and FedAvg run on their own trainers, which send one message per iteration.
bool asynchronous(const JobSpec& s) {
    return models::sync_scheme(s.sync.kind).whole_payload;
}

// Messages the gradient is cut into per iteration: overlap's layers, buckets or partitions (the grouping scheme's
// own estimate, models/grouping.cpp); the asynchronous schemes send the whole payload at once.
double messages_per_iteration(const JobSpec& s) {
    if (asynchronous(s)) return 1.0;
    return models::estimated_messages(
        s.overlap, {sim::Bytes{static_cast<double>(s.workload.params()) * s.bytes_per_param},
                    static_cast<double>(s.workload.tensor_count()), static_cast<double>(s.workload.layers.size())});
}

// Bytes one worker sends per iteration after compression (the payloads the collectives carry).
double payload_bytes(const JobSpec& s) {
    if (s.compression.kind == "none") return static_cast<double>(s.workload.params()) * s.bytes_per_param;
    const auto compressor = models::make_compressor(s.compression);
    double bytes = 0.0;
    for (const auto& l : s.workload.layers)
        for (const auto& t : l.tensors) {
            if (t.params <= 0) continue;
            const auto c = compressor->compress(models::tensor_shape(t), s.bytes_per_param);
            bytes += c.payload_bytes + c.p_bytes + c.q_bytes + c.dense_bytes;
        }
    return bytes;
}

// Transfers in one round of a job (one message's collective; an estimate the architecture's own code gives,
// topo::round_size); whether the round is held as an explicit DAG. A round holds 1/messages of the gradient (after
// compression) and of its tensors.
topo::RoundSize round_of(const JobSpec& s, const topo::Machine& machine) {
    const double messages = messages_per_iteration(s);
    topo::RoundShape shape;
    shape.workers = s.workers;
    shape.bytes = sim::Bytes{payload_bytes(s) / messages};
    shape.tensors = std::max(1.0, std::ceil(static_cast<double>(s.workload.tensor_count()) / messages));
    // Payloads gathered whole (top-k, random-k, sign codecs gathered, gTop-k) travel as one piece per message
    // (models/comm_plan.cpp gives their collective the message's bytes as its only tensor).
    const auto aggregation = models::compressor_info(s.compression).aggregation;
    if (aggregation == models::Aggregation::allgather || aggregation == models::Aggregation::gtopk) shape.tensors = 1.0;
    shape.whole_payload_exchange = asynchronous(s);
    shape.machine_gpus = machine.gpus;
    shape.machine_nics = machine.nics;
    return topo::round_size(s.architecture, shape);
}

double round_transfers(const JobSpec& s, const topo::Machine& machine, bool& explicit_dag) {
    const topo::RoundSize size = round_of(s, machine);
    explicit_dag = size.explicit_dag;
    return size.transfers;
}

// Transfers a round's explicit DAG holds in memory: under auto the largest of the candidates built as DAGs (an
// unsegmented ring keeps O(n) state however many transfers it runs); 0 without one.
double plan_transfers(const topo::RoundSize& size) {
    return size.dag_transfers > 0.0 ? size.dag_transfers : size.explicit_dag ? size.transfers : 0.0;
}

// Collective rounds per iteration (an upper estimate): overlap cuts the gradient into messages,
// Local SGD synchronises every `period` iterations, PowerSGD runs two collectives.
double rounds_per_iteration(const JobSpec& s) {
    double messages = messages_per_iteration(s);
    messages *= models::compressor_info(s.compression).collectives_per_sync;
    if (models::sync_scheme(s.sync.kind).periodic) messages /= s.sync.period;  // may fall below one
    return messages;
}

// Events the flow model processes for one job (an estimate: about four per transfer, four per worker and round).
// With overlap, backward runs layer by layer on the event clock (one event per layer and worker).
double job_events(const Scenario& s, const JobSpec& j) {
    // DiLoCo's outer steps: per fragment an all-reduce across the islands (2 (R - 1) transfers per worker) and an
    // all-gather inside them (g - 1), counted like any round; its inner rounds are counted as over every worker
    // (an upper estimate of rounds inside the islands).
    double outer = 0.0;
    if (j.sync.kind == models::SyncKind::diloco) {
        const double launches = std::floor(s.iterations / static_cast<double>(j.sync.period / j.sync.fragments));
        const double islands = j.sync.islands, g = j.workers / islands;
        outer = launches * (4.0 * j.workers * (2.0 * (islands - 1.0) + g - 1.0) + 8.0 * j.workers);
    }
    if (j.parallelism.any()) {
        // Model parallelism: every micro-batch's activations and gradients between neighbouring stages (2 m (p - 1)
        // sends per data and tensor rank), a ring all-reduce of d ranks per stage and tensor rank (2 (d - 1) steps),
        // each tensor-parallel collective a ring of t ranks (2 (t - 1) steps, or t - 1 for a reduce-scatter or an
        // all-gather, which come in pairs), two computes per micro-batch and one more per collective.
        const double p = j.parallelism.pipeline, t = j.parallelism.tensor, d = j.workers / (p * t);
        const double v = j.parallelism.chunks(), m = j.gradient_accumulation, calls = tensor_calls_per_micro_batch(j);
        const double steps = j.parallelism.sequence_parallel ? t - 1.0 : 2.0 * (t - 1.0);
        const double transfers =
            2.0 * m * (p * v - 1.0) * d * t + p * t * d * 2.0 * (d - 1.0) + m * calls * j.workers * steps;
        return s.iterations * (4.0 * transfers + 4.0 * j.workers + (2.0 * v + 5.0 * calls) * m * j.workers);
    }
    if (j.sharding.any()) {
        const topo::Machine machine = topo::machine(s.topology);
        return s.iterations * models::sharded_step_events({&j.workload, j.sharding, static_cast<double>(j.workers),
                                                           machine.gpus, static_cast<double>(j.gradient_accumulation),
                                                           messages_per_iteration(j), machine.nics}) +
               outer;
    }
    bool explicit_dag = false;
    const double layers = j.overlap.any() ? static_cast<double>(j.workload.layers.size()) * j.workers : 0.0;
    // A periodic scheme (Local SGD) synchronises floor(iterations / period) times.
    const double syncs_per_iteration = models::sync_scheme(j.sync.kind).periodic
                                           ? std::floor(s.iterations / static_cast<double>(j.sync.period)) /
                                                 std::max(1.0, static_cast<double>(s.iterations)) * j.sync.period
                                           : 1.0;
    return s.iterations * (syncs_per_iteration * rounds_per_iteration(j) *
                               (4.0 * round_transfers(j, topo::machine(s.topology), explicit_dag) + 4.0 * j.workers) +
                           layers) +
           outer;
}

// The cost of an event over the base rate when F flows share links and each event re-solves them:
// 1 + A max(0, F - F0)^p (below about F0 flows the re-solve costs little beside the event's own bookkeeping). F is a
// round's streams (topo::RoundSize::coupled_flows), times what runs at once: for BytePS with overlap (its messages all
// start together, models/message_scheduler.hpp "concurrent") the square root of its messages per iteration (they
// pile up as far as the network lags backward, which the estimate cannot know); under priority scheduling the
// credit's messages in flight (each a round of at least one flow per worker). Measured on this project's machine
// (ddlsim run, cost per processed event over 1 / kFlowEventsPerSecond = 0.2 us): BytePS with 16 KiB partitions on a
// star, 16, 32 and 64 workers, no overlap: 75x, 219x and 157x at F = 288, 1,088 and 4,224 (2026-12-03); 16 workers,
// 4 CPU servers, ResNet-50, one iteration (2026-12-03): 64 KiB partitions without overlap 75x (2.02 s), with WFBP
// 1,555x (42.4 s), 1 MB partitions with WFBP 140x (0.61 s); a colocated per-tensor PS of 64 workers and 40 servers
// with WFBP, Inception-v3, one iteration: 208x (125 s); a ring of 4 workers with 16 KB priority partitions, credit 4:
// about 1x (0.07 s), credit 1,000: about 75x (10.5 s). A = 3.3, p = 0.55, F0 = 100 (a line through the log-log
// points of the runs without overlap) put each estimate within a factor 6 of these runs, the BytePS-with-WFBP ones
// aside (within a factor 4 to 5; a run whose backward is far shorter than its communication piles up more: 16
// workers, 8 CPU servers, 64 KiB partitions, WFBP, batch 8, two iterations is estimated at 26 s and took 207 s,
// 2026-12-03, the worst case known; the symmetric flow classes of the scale work are what would remove it).
constexpr double kCoupledCostScale = 3.3, kCoupledCostPower = 0.55, kCoupledCostFloor = 100.0;

// Wall seconds the flow model takes for one job: its events at the base rate, times the cost of re-solving the
// flows that share links at each event.
// Flow classes (sim/symmetry.hpp): how many transfers one simulated transfer may stand for, m = workers / GPUs per
// node (a model-parallel job: its replicas over an expert group's), where the run is of a kind that can be symmetric
// (one job on the flow network, no stragglers, no compression, a symmetric scheme (its descriptor: bsp, local SGD) over
// rings: ring all-reduce or sharding); 1 elsewhere. Whether it is symmetric is found while it runs (models::simulate);
// one that is not reruns in full, checked first against the full estimate (check_full_run).
double class_multiplicity(const Scenario& s, const JobSpec& j) {
    if (!s.flow_classes || s.network_model != NetworkModel::flow || s.jobs.size() != 1 || j.stragglers.any() ||
        j.compression.kind != "none" || !models::sync_scheme(j.sync.kind).symmetric)
        return 1.0;
    if (j.parallelism.any()) {  // model parallelism: one expert group's replicas run for all (models/trainer.cpp)
        const double q = j.workload.experts > 0 ? j.parallelism.expert : 1.0, d = j.parallelism.data(j.workers);
        return j.worker_devices.empty() && std::fmod(d, q) == 0.0 && d / q >= 2.0 ? d / q : 1.0;
    }
    const auto& a = j.architecture;
    const bool rings =
        j.sharding.any() || (a.kind == topo::ArchKind::allreduce && a.algorithm == topo::AllreduceAlgorithm::ring);
    const double g = std::max(1.0, topo::machine(s.topology).gpus), n = j.workers;
    if (!rings || std::fmod(n, g) != 0.0 || n / g < 2.0) return 1.0;
    return n / g;
}

// The events of a job's run: all of them, or per flow class the full count over m plus what every worker still
// does itself (about eight events per worker and collective round: its gate and its completion, with their
// callbacks).
double run_events(const Scenario& s, const JobSpec& j) {
    const double full = job_events(s, j), m = class_multiplicity(s, j);
    if (m <= 1.0) return full;
    if (j.parallelism.any()) return full / m;  // the images run nothing
    return full / m + 8.0 * j.workers * s.iterations * std::max(1.0, messages_per_iteration(j));
}

double job_seconds(const Scenario& s, const JobSpec& j) {
    double coupled = j.sharding.any() ? 1.0 : round_of(j, topo::machine(s.topology)).coupled_flows;
    const auto& a = j.architecture;
    if (j.overlap.priority) {
        const double in_flight = std::min(static_cast<double>(j.overlap.credit), messages_per_iteration(j));
        if (in_flight > 1.0) coupled = std::max(coupled, static_cast<double>(j.workers)) * in_flight;
    } else if (a.kind == topo::ArchKind::ps && a.style == topo::PsStyle::byteps && j.overlap.any()) {
        coupled *= std::sqrt(messages_per_iteration(j));
    }
    const double f = std::max(0.0, coupled - kCoupledCostFloor);
    return run_events(s, j) * (1.0 + kCoupledCostScale * std::pow(f, kCoupledCostPower)) / kFlowEventsPerSecond;
}

// The key that makes a round large: a segment size that cuts the gradient into many pieces, per-tensor
// push/pull, or else the number of workers (servers).
std::string round_culprit(const JobSpec& j, const topo::Machine& m, const std::string& prefix, double limit) {
    JobSpec plain = j;
    plain.architecture.segment_size = sim::Bytes{0.0};
    if (j.architecture.segment_size.value() > 0.0 && plan_transfers(round_of(plain, m)) <= limit)
        return prefix + "architecture.segment_size";
    plain.architecture.per_tensor = false;
    if (j.architecture.per_tensor && plan_transfers(round_of(plain, m)) <= limit)
        return prefix + "architecture.per_tensor";
    return prefix + "workers";
}

// The key that makes the simulation long: small overlap messages (bucket or partition size), small segments or
// BytePS partitions, else the iterations.
std::string events_culprit(const Scenario& s, const std::string& jobs_path, double limit_s) {
    Scenario plain = s;
    for (auto& j : plain.jobs) j.overlap = models::OverlapSpec{};
    const auto prefix = [&](std::size_t i) {
        return s.has_jobs_list ? fmt::format("{}[{}].", jobs_path, i) : std::string("$.");
    };
    if (estimated_seconds(plain) <= limit_s)
        for (std::size_t i = 0; i < s.jobs.size(); ++i)
            if (s.jobs[i].overlap.any())
                return prefix(i) + (s.jobs[i].overlap.priority                           ? "overlap.partition_size"
                                    : s.jobs[i].overlap.fusion == models::Fusion::buffer ? "overlap.bucket_size"
                                                                                         : "overlap");
    for (std::size_t i = 0; i < s.jobs.size(); ++i) {
        plain = s;
        plain.jobs[i].architecture.segment_size = sim::Bytes{0.0};
        if (s.jobs[i].architecture.segment_size.value() > 0.0 && estimated_seconds(plain) <= limit_s)
            return prefix(i) + "architecture.segment_size";
        plain = s;
        auto& a = plain.jobs[i].architecture;
        a.partition_size = sim::Bytes{std::numeric_limits<double>::max()};
        if (a.kind == topo::ArchKind::ps && a.style == topo::PsStyle::byteps && a.per_tensor &&
            estimated_seconds(plain) <= limit_s)
            return prefix(i) + "architecture.partition_size";
    }
    return "$.iterations";
}

// Peak memory a job's communication plans need (an upper estimate, bytes): the explicit transfer DAGs of one
// round — the architecture's own, or the all-gather of sparse payloads (Top-k, DGC: topo::sparse_allgather_transfers;
// gTop-k n log n) — times the distinct message sizes overlap creates (each keeps its
// plan). Per step: about 40 B measured for an all-reduce DAG, 235 B for a parameter server's (its transfers
// also hold flows and routes), rounded up to 64 and 256.
// The model's BatchNorms (each all-reduces its statistics under SyncBatchNorm).
double batchnorm_count(const JobSpec& j) {
    double n = 0.0;
    for (std::size_t l = 0; l < j.workload.layers.size(); ++l)
        n += static_cast<double>(models::batchnorm_channels(j.workload, l).size());
    return n;
}

// Tensor-parallel collectives one rank issues per micro-batch, averaged over the stages (models/program/pipeline.hpp):
// per block 2 all-reduces forward, 2 backward and 2 more with full recomputation, each a reduce-scatter and an
// all-gather with sequence parallelism; the embedding's and the head's.
double tensor_calls_per_micro_batch(const JobSpec& j) {
    if (j.parallelism.tensor < 2) return 0.0;
    double blocks = 0.0;
    std::int32_t last = -1;
    for (const models::Layer& l : j.workload.layers)
        if (l.block >= 0 && l.block != last) {
            blocks += 1.0;
            last = l.block;
        }
    const double pairs = j.parallelism.sequence_parallel ? 2.0 : 1.0;
    return (pairs * (4.0 + (j.activation_checkpointing ? 2.0 : 0.0)) * blocks + pairs * 2.0) / j.parallelism.pipeline;
}

// Memory of a job's per-rank programs (models/program/program.hpp) where they grow with the micro-batches: each
// micro-batch of a pipeline stage (of each chunk, interleaved) is two computes and about six instructions (about 540 B
// with its labels), each
// SyncBatchNorm all-reduce a call and two instructions (about 320 B), each tensor-parallel collective a call, a
// compute and three instructions (about 480 B), per micro-batch, forward and backward.
double program_memory_bytes(const JobSpec& j) {
    constexpr double kStageMicroBatch = 540.0, kCall = 320.0, kTensorCall = 480.0;
    const double m = j.gradient_accumulation;
    double bytes = 0.0;
    if (j.parallelism.any())
        bytes += j.parallelism.pipeline * m *
                 (j.parallelism.chunks() * kStageMicroBatch + kTensorCall * tensor_calls_per_micro_batch(j));
    if (j.bn_group > 1) {
        const double batchnorms = batchnorm_count(j);
        const double programs = models::sync_scheme(j.sync.kind).periodic ? 2.0 : 1.0;
        bytes += programs * 2.0 * batchnorms * m * kCall;
    }
    return bytes;
}

// Events of SyncBatchNorm's all-reduces (models/program/batchnorm.hpp): per BatchNorm, micro-batch and pass a ring
// in each group, 2 (g - 1) transfers per rank, counted like any round.
double batchnorm_events(const Scenario& s, const JobSpec& j) {
    if (j.bn_group < 2) return 0.0;
    const double batchnorms = batchnorm_count(j);
    const double calls = 2.0 * batchnorms * j.gradient_accumulation;
    return s.iterations * calls * (4.0 * j.workers * 2.0 * (j.bn_group - 1.0) + 4.0 * j.workers);
}

double plan_memory_bytes(const JobSpec& j, const topo::Machine& m) {
    constexpr double kDagStep = 64.0, kPsStep = 256.0;
    const double n = j.workers;
    const double log_n = std::max(1.0, std::ceil(std::log2(std::max(n, 2.0))));
    const topo::RoundSize size = round_of(j, m);
    const double steps = plan_transfers(size);
    const auto& a = j.architecture;
    double bytes = steps * (a.kind == topo::ArchKind::ps ? kPsStep : kDagStep);
    const auto aggregation = models::compressor_info(j.compression).aggregation;
    if (a.kind == topo::ArchKind::allreduce) {
        if (aggregation == models::Aggregation::allgather)
            bytes += kDagStep * topo::sparse_allgather_transfers(a.algorithm, j.workers);
        else if (aggregation == models::Aggregation::gtopk)
            bytes += kDagStep * 2.0 * n * log_n;
    }
    const double messages =
        j.overlap.any()
            ? std::min(rounds_per_iteration(j) * (models::sync_scheme(j.sync.kind).periodic ? j.sync.period : 1.0),
                       static_cast<double>(std::max<std::size_t>(1, j.workload.tensor_count())))
            : 1.0;
    return bytes * std::max(1.0, messages);
}

// Refuses a preset fabric whose nodes and links would not fit in memory, before it is built (a million 8-GPU nodes
// ran out of memory after 25 s instead), naming the key that sizes it.
void check_fabric_size(const Scenario& s) {
    const topo::FabricSize size = topo::fabric_size(s.topology);
    const std::string key = size.key.empty() ? "$.network" : fmt::format("$.network.{}", size.key);
    if (size.bytes > kMaxPlanMemory)
        throw ScenarioError(key, fmt::format("a fabric of {:.3g} hosts would need about {:.3g} GB of memory (limit "
                                             "{:.0f} GB); expected a smaller network",
                                             size.hosts, size.bytes / 1e9, kMaxPlanMemory / 1e9));
}

}  // namespace

// One step's compute must fit the event clock, so `check` refuses what `run` would: the resolved compute profile
// (its own limit of 1e6 s per iteration) and, with gradient accumulation, the k micro-batches of a step.
void detail::check_compute(const JobSpec& j, const models::ComputeProfile& p, const std::string& prefix) {
    const double step = static_cast<double>(j.gradient_accumulation) * (p.fwd + p.bwd).seconds() + p.update.seconds();
    if (!(step < 1e6))
        throw ScenarioError(prefix + "gradient_accumulation",
                            fmt::format("one step of {} micro-batches would compute for {:.3g} s; expected under 1e6 s",
                                        j.gradient_accumulation, step));
}

// Refuses runs too large to finish or to fit, before anything large is built.
void detail::check_limits(const Scenario& s, const std::string& jobs_path) {
    check_fabric_size(s);
    double events = 0.0;
    double memory = 0.0;
    for (std::size_t i = 0; i < s.jobs.size(); ++i) {
        const std::string prefix = s.has_jobs_list ? fmt::format("{}[{}].", jobs_path, i) : "$.";
        const topo::Machine m = topo::machine(s.topology);
        const double steps = plan_transfers(round_of(s.jobs[i], m));
        if (steps > kMaxPlanSteps) {
            const std::string path = round_culprit(s.jobs[i], m, prefix, kMaxPlanSteps);
            throw ScenarioError(path,
                                fmt::format("one synchronisation round would hold {:.3g} transfers (limit {:.0e}); "
                                            "{}",
                                            steps, kMaxPlanSteps,
                                            path.ends_with("segment_size") ? "expected a larger segment size"
                                            : path.ends_with("per_tensor") ? "expected per_tensor false"
                                                                           : "use fewer workers or servers"));
        }
        const double programs = program_memory_bytes(s.jobs[i]);
        if (programs > kMaxPlanMemory)
            throw ScenarioError(prefix + "gradient_accumulation",
                                fmt::format("the per-rank programs would hold about {:.3g} GB (a step's every "
                                            "micro-batch {}; limit {:.0f} GB); expected fewer micro-batches",
                                            programs / 1e9,
                                            s.jobs[i].parallelism.any() ? "through every pipeline stage"
                                                                        : "with its SyncBatchNorm all-reduces",
                                            kMaxPlanMemory / 1e9));
        memory += plan_memory_bytes(s.jobs[i], m);
        if (memory > kMaxPlanMemory) {
            const std::string path = round_culprit(s.jobs[i], m, prefix, kMaxPlanSteps);
            throw ScenarioError(path, fmt::format("the communication plans would need about {:.3g} GB of memory "
                                                  "(limit {:.0f} GB); {}",
                                                  memory / 1e9, kMaxPlanMemory / 1e9,
                                                  path.ends_with("segment_size") ? "expected a larger segment size"
                                                  : path.ends_with("per_tensor") ? "expected per_tensor false"
                                                                                 : "use fewer workers or servers"));
        }
        events += run_events(s, s.jobs[i]) + batchnorm_events(s, s.jobs[i]);
    }
    const double seconds = estimated_seconds(s);
    if (s.network_model == NetworkModel::flow && (events > kMaxEvents || seconds > kMaxSeconds)) {
        const std::string path = events_culprit(s, jobs_path, kMaxSeconds);
        const std::string key = path.substr(path.rfind('.') + 1);
        throw ScenarioError(path, fmt::format("the flow model would process about {:.3g} events, roughly {:.0f} s of "
                                              "simulation (limit {:.0f} s); {} or \"network\": {{\"model\": "
                                              "\"analytic\"}}",
                                              events, seconds, kMaxSeconds,
                                              key == "iterations" ? "use fewer iterations"
                                              : key == "overlap"  ? "use fewer, larger messages (fusion)"
                                                                  : fmt::format("expected a larger {}", key)));
    }
}

double estimated_events(const Scenario& s) {
    double events = 0.0;
    for (const JobSpec& j : s.jobs) events += run_events(s, j);
    return events;
}

void check_full_run(const Scenario& s) {
    Scenario full = s;
    full.flow_classes = false;
    detail::check_limits(full, "$.jobs");
}

double estimated_seconds(const Scenario& s) {
    double seconds = 0.0;
    for (const JobSpec& j : s.jobs) seconds += job_seconds(s, j);
    return seconds;
}

}  // namespace ddlsim::scenario
