// Sharded data parallelism on the event engine: ZeRO stages 1-3 (Rajbhandari et al., SC 2020), FSDP and hybrid
// sharding (Zhao et al., "PyTorch FSDP", VLDB 2023). The collectives are in topologies/sharded_collectives.hpp.
//
// One optimizer step of a worker, whose collectives all go to one FIFO queue with one in flight at a time
// (PyTorch's ProcessGroupNCCL runs every collective of a process group on one NCCL stream; DeepSpeed's ZeRO
// reduces and gathers on its own single communication stream):
//   stage 1, 2  the k - 1 accumulation micro-batches (no communication, DDP's no_sync); forward; backward layer by
//               layer, each gradient message (the overlap's buckets; one message without overlap) reduce-scattered
//               as backward produces it (with overlap) or when backward ends; the update of the local shard (the
//               optimizer's time / g for shard groups of g); the all-gather of the updated parameters, message by
//               message; the next step starts once they are in (DeepSpeed gathers inside its step()).
//   stage 3     units: `wrap` transformer blocks, or layers outside blocks (models/workload.hpp shard_units).
//               Per micro-batch: forward unit by unit, unit u waiting for the all-gather of its parameters;
//               backward unit by unit in reverse, each waiting for its unit's all-gather again (parameters are
//               freed after use: FSDP's FULL_SHARD, reshard_after_forward); the all-gather of the unit `prefetch`
//               positions ahead is issued when a unit is reached (FSDP's forward_prefetch and backward_prefetch =
//               BACKWARD_PRE; prefetch 0: each unit's all-gather is issued when it is reached); on the last
//               micro-batch each unit's gradients are reduce-scattered when its backward ends; then the update of
//               the local shard. Accumulation keeps the unsharded gradients between micro-batches (FSDP's no_sync),
//               so only the last micro-batch reduce-scatters.
//   hybrid      (group "node") each reduce-scatter is followed, in the same queue slot, by the all-reduce of the
//               worker's gradient shard with the same-rank workers of the other nodes.
//   ZeRO++     (Wang et al., "ZeRO++", arXiv 2306.10209, 2023, as DeepSpeed implements it: see sharding_keys)
//               qwZ: a unit's all-gather carries int8 blocks plus their fp32 scales; the gathering GPU quantizes its
//               shard before and dequantizes the unit after (memory-bound kernels at the device's memory bandwidth,
//               models/compression.hpp codec_time, inside the collective's time: they run on its stream). hpZ:
//               backward's all-gathers run among the h consecutive workers holding the secondary copy. qgZ: the
//               reduce-scatter becomes topo::make_hierarchical_all_to_all of int4 payloads with its quantize,
//               reduce and dequantize kernels (the reduction between the two parts is counted after the second).
// Compute that starts while the worker's queue holds communication runs (1 + overlap_slowdown) longer, as in the
// replicated trainer. The compute is not cut by sharding except the update: forward and backward run on
// the full (gathered) layers.
//
// The step is compiled into a per-rank program (models/program/program.hpp: computes, issued calls, waits), the
// same on every worker, whose collectives the planner builds (models/program/planner.hpp: groups `shard`, `replica`
// across it, `hpz`, `node`); the program executor runs it (models/program/executor.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "models/compression.hpp"
#include "models/program/batchnorm.hpp"
#include "models/program/executor.hpp"
#include "models/trainer_detail.hpp"
#include "models/trainer_outer.hpp"
#include "topologies/sharded_collectives.hpp"

namespace ddlsim::models::detail {
namespace {

using program::CollectiveKind;
using program::CommOp;
using program::ComputeKind;

// Compiles one step of a sharded job into the program every worker runs.
class ShardedCompiler {
public:
    ShardedCompiler(const TrainingJob& job, const CommPlan& plan, program::Planner& planner)
        : job_(job), plan_(plan), planner_(planner), batchnorm_(job, planner) {
        const auto& node_of = plan.context().node_of;
        shard_ = planner.add_group(
            "shard", job.sync.kind == SyncKind::diloco  // DiLoCo: each island shards alone
                         ? job.sync.island_groups(job.workers)
                         : topo::shard_groups(node_of, job.workers, job.sharding.group == ShardGroup::node));
        group_size_ = planner.group_size(shard_);
        // Islands meet in outer steps only.
        if (planner.parts(shard_).size() > 1 && job.sync.kind != SyncKind::diloco)
            replica_ = planner.add_group_across("replica", shard_);
        const ShardingSpec& sh = job.sharding;
        if (sh.hpz(job.workers)) {
            program::Partition hpz;
            for (std::uint32_t w = 0; w < job.workers; ++w) {
                if (w % sh.hpz_partition_size == 0) hpz.emplace_back();
                hpz.back().push_back(w);
            }
            hpz_ = planner.add_group("hpz", std::move(hpz));
        }
        if (sh.quantized_gradients) node_ = planner.add_group("node", topo::shard_groups(node_of, job.workers, true));
    }

    [[nodiscard]] std::uint32_t group_size() const { return group_size_; }

    program::ProgramSet compile() {
        set_.programs.emplace_back();
        if (job_.sharding.stage >= 3) {
            stage3();
        } else {
            stage12();
        }
        return std::move(set_);
    }

private:
    static constexpr std::uint32_t kNone = ~std::uint32_t{0};

    [[nodiscard]] program::Program& prog() { return set_.programs.front(); }
    [[nodiscard]] std::uint32_t layers() const { return static_cast<std::uint32_t>(job_.workload.layers.size()); }
    [[nodiscard]] double layer_bytes(std::uint32_t first, std::uint32_t last) const {
        double b = 0.0;
        for (std::uint32_t l = first; l <= last; ++l)
            b += static_cast<double>(job_.workload.layers[l].params()) * job_.bytes_per_param;
        return b;
    }
    [[nodiscard]] std::string layer_names(std::uint32_t first, std::uint32_t last) const {
        const auto& ls = job_.workload.layers;
        return first == last ? ls[first].name : ls[first].name + ".." + ls[last].name;
    }

    // A forward or backward pass over layers [first, last] of micro-batch mb, with SyncBatchNorm's all-reduces.
    void run_layers(ComputeKind kind, std::uint32_t first, std::uint32_t last, std::uint32_t mb) {
        batchnorm_.pass(set_, prog(), kind == ComputeKind::forward, first, last, mb,
                        [&](std::uint32_t a, std::uint32_t b) { compute(kind, a, b, mb); });
    }

    void compute(ComputeKind kind, std::uint32_t first, std::uint32_t last, std::uint32_t mb) {
        program::Compute c;
        c.kind = kind;
        c.first = first;
        c.last = last;
        c.micro_batch = mb;
        const std::string mbs = job_.gradient_accumulation > 1 ? fmt::format(" mb{}", mb) : std::string();
        switch (kind) {
            case ComputeKind::accumulate:
                c.label = fmt::format("micro-batches 1-{} (no_sync)", job_.gradient_accumulation - 1);
                break;
            case ComputeKind::update:
                c.fraction = 1.0 / group_size_;  // the update runs on the local shard only
                c.label = fmt::format("update (shard 1/{})", group_size_);
                break;
            case ComputeKind::forward: c.label = "fwd " + layer_names(first, last) + mbs; break;
            case ComputeKind::backward:
            case ComputeKind::backward_input:
            case ComputeKind::backward_weight: c.label = "bwd " + layer_names(first, last) + mbs; break;
            case ComputeKind::codec: break;  // ZeRO++'s kernels run on the communication stream
        }
        prog().compute(std::move(c));
    }

    std::uint32_t call(program::Call c) {
        if (c.gradient) gradients_.push_back(static_cast<std::uint32_t>(set_.calls.size()));
        return set_.add_call(std::move(c));
    }

    // A gradient reduction (hybrid: with the replica all-reduce in the same slot) or a gather of `bytes`.
    std::uint32_t add_collective(bool reduce, double bytes, const std::string& label) {
        program::Call c;
        c.gradient = reduce;
        c.label = fmt::format("{} ({:.3g} MB)", label, bytes / 1e6);
        c.phases.push_back(
            CommOp::of(reduce ? CollectiveKind::reduce_scatter : CollectiveKind::all_gather, shard_, bytes));
        if (reduce && replica_ != kNone) c.phases.push_back(CommOp::of(CollectiveKind::all_reduce, replica_, bytes));
        return call(std::move(c));
    }

    // ZeRO-3's all-gather of a unit of `params` parameters (ZeRO++: quantized, or backward's from hpZ's copy).
    std::uint32_t add_gather(double params, bool backward, const std::string& label) {
        const bool secondary = backward && hpz_ != kNone;
        const program::GroupId group = secondary ? hpz_ : shard_;
        const double g = planner_.group_size(group);
        CommOp op = CommOp::of(CollectiveKind::all_gather, group, params * job_.bytes_per_param);
        program::Call c;
        if (job_.sharding.quantized_weights) {
            // int8 per element, and an fp32 scale per block of at most kQuantBlock of each GPU's shard.
            const double shard = params / g;
            op.bytes = params + kScaleBytes * g * std::ceil(shard / kQuantBlock);
            c.encode.memory_bytes = shard * (job_.bytes_per_param + 1.0);   // read the shard, write int8
            c.decode.memory_bytes = params * (1.0 + job_.bytes_per_param);  // read int8, write the weights
        }
        c.label = fmt::format("{}{} ({:.3g} MB)", label, secondary ? " [hpZ]" : "", op.bytes / 1e6);
        c.phases.push_back(op);
        return call(std::move(c));
    }

    // ZeRO-3's gradient reduction of a unit (ZeRO++ qgZ: the int4 hierarchical all-to-all).
    std::uint32_t add_reduce(std::uint32_t first, std::uint32_t last, double params, const std::string& label) {
        if (!job_.sharding.quantized_gradients) return add_collective(true, params * job_.bytes_per_param, label);
        const auto& nodes = planner_.parts(node_);
        const double m = static_cast<double>(nodes.front().size()), N = static_cast<double>(nodes.size());
        // DeepSpeed's all_to_all_quant_reduce: max(rows, cols, world) fp32 scales per tensor inside the node, 1/m
        // of them between nodes.
        double scales = 0.0;
        for (std::uint32_t l = first; l <= last; ++l)
            for (const Tensor& t : job_.workload.layers[l].tensors) {
                if (t.params <= 0) continue;
                const TensorShape ts = tensor_shape(t);
                scales += kScaleBytes * static_cast<double>(std::max({ts.rows, ts.cols, std::uint64_t{job_.workers}}));
            }
        const double intra = params / 2.0 + scales, inter = params / (2.0 * m) + scales / m;
        const CommOp op = CommOp::of(CollectiveKind::hierarchical_all_to_all, node_, intra, inter);
        const double bpp = job_.bytes_per_param;
        program::Call c;
        c.encode.memory_bytes = params * (bpp + 0.5);  // quantize the gradients to int4
        // Dequantize the node's m slices, reduce and requantize (P int4 in, P/m out); after the second part
        // dequantize the N slices and sum them (P/m int4 in, P/(mN) out at full width).
        c.decode.memory_bytes = params * 0.5 + params / m * 0.5 + params / m * 0.5 + params / (m * N) * bpp;
        c.gradient = true;
        c.label = fmt::format("{} [qgZ int4] ({:.3g} MB)", label, intra / 1e6);
        c.phases.push_back(op);
        return call(std::move(c));
    }

    // The update waits for every gradient reduction issued before it.
    void update() {
        for (std::uint32_t g : gradients_) prog().wait(g);
        compute(ComputeKind::update, 0, 0, 0);
    }

    void stage12() {
        const std::uint32_t L = layers();
        const std::uint32_t A = job_.gradient_accumulation;
        if (A > 1 && batchnorm_.active()) {  // each micro-batch waits for its BatchNorms' all-reduces
            for (std::uint32_t mb = 0; mb + 1 < A; ++mb) {
                run_layers(ComputeKind::forward, 0, L - 1, mb);
                run_layers(ComputeKind::backward, 0, L - 1, mb);
            }
        } else if (A > 1) {
            compute(ComputeKind::accumulate, 0, 0, 0);
        }
        if (L > 0) run_layers(ComputeKind::forward, 0, L - 1, A - 1);
        const auto& msgs = plan_.messages();
        const bool overlap = job_.overlap.overlapped();
        std::vector<std::uint32_t> gathers;
        std::vector<std::vector<std::uint32_t>> at_layer(L);
        for (std::uint32_t m = 0; m < msgs.size(); ++m) {
            const std::uint32_t c = add_collective(true, msgs[m].dense_bytes, fmt::format("reduce-scatter msg{}", m));
            at_layer[overlap ? msgs[m].front_layer : 0].push_back(c);
        }
        for (std::uint32_t m = 0; m < msgs.size(); ++m)
            gathers.push_back(add_collective(false, msgs[m].dense_bytes, fmt::format("all-gather msg{}", m)));
        // Each reduction leaves when the backward of its front layer ends (without overlap: when backward ends);
        // the gathers of the updated shard when the update ends.
        for (std::uint32_t l = L; l-- > 0;) {
            run_layers(ComputeKind::backward, l, l, A - 1);
            for (std::uint32_t c : at_layer[l]) prog().issue(c);
        }
        update();
        for (std::uint32_t c : gathers) prog().issue(c);
    }

    void stage3() {
        struct Unit {
            std::uint32_t first, last;
            double bytes;
        };
        std::vector<Unit> units;
        for (const auto& [f, l] : shard_units(job_.workload, job_.sharding.wrap))
            units.push_back({f, l, layer_bytes(f, l)});
        const auto U = static_cast<std::uint32_t>(units.size());
        const std::uint32_t p = std::min(job_.sharding.prefetch, U);
        const std::uint32_t A = job_.gradient_accumulation;
        // One pass (forward or backward) of micro-batch mb: position j is unit u(j), which waits for its gather;
        // that gather is issued when position j - p is reached (positions below p: when the pass begins); on the
        // last micro-batch's backward each unit's reduction leaves when its backward ends.
        auto pass = [&](ComputeKind kind, std::uint32_t mb) {
            const bool fwd = kind == ComputeKind::forward;
            std::vector<std::uint32_t> gather(U, kNone), reduce(U, kNone);
            for (std::uint32_t j = 0; j < U; ++j) {
                const Unit& u = units[fwd ? j : U - 1 - j];
                if (u.bytes <= 0.0) continue;
                const double params = u.bytes / job_.bytes_per_param;
                gather[j] = add_gather(
                    params, !fwd,
                    fmt::format("all-gather {} ({})", layer_names(u.first, u.last), fwd ? "forward" : "backward"));
                if (!fwd && mb + 1 == A)
                    reduce[j] = add_reduce(u.first, u.last, params, "reduce-scatter " + layer_names(u.first, u.last));
            }
            for (std::uint32_t j = 0; j < U; ++j) {
                for (std::uint32_t k = j; k < U; ++k)  // the gathers issued on reaching position j
                    if (gather[k] != kNone && (k >= p ? k - p : 0) == j) prog().issue(gather[k]);
                if (gather[j] != kNone) prog().wait(gather[j]);
                const Unit& u = units[fwd ? j : U - 1 - j];
                run_layers(kind, u.first, u.last, mb);
                if (reduce[j] != kNone) prog().issue(reduce[j]);
            }
        };
        for (std::uint32_t mb = 0; mb < A; ++mb) {
            pass(ComputeKind::forward, mb);
            pass(ComputeKind::backward, mb);
        }
        update();
    }

    const TrainingJob& job_;
    const CommPlan& plan_;
    program::Planner& planner_;
    program::BatchNormSync batchnorm_;
    program::ProgramSet set_;
    program::GroupId shard_ = 0, replica_ = kNone, hpz_ = kNone, node_ = kNone;
    std::uint32_t group_size_ = 1;
    std::vector<std::uint32_t> gradients_;  ///< the calls that reduce gradients
    // CUDAQuantizer.target_group_size (deepspeed/runtime/zero/partition_parameters.py at 38327e0): blocks of at
    // most 8,000 elements, each with one fp32 scale.
    static constexpr double kQuantBlock = 8000.0, kScaleBytes = 4.0;
};

class ShardedTrainer final : public TrainerBase {
public:
    explicit ShardedTrainer(const TrainerEnv& env) : TrainerBase(env, false) {
        program::Planner& planner = plan_.planner();  // the job's one planner
        ShardedCompiler compiler(job_, plan_, planner);
        programs_ = compiler.compile();
        group_size_ = compiler.group_size();
        for (const program::Call& c : programs_.calls)
            for (const CommOp& op : c.phases) {
                wire_ += planner.wire_bytes(op);
                machine_ += planner.machine_bytes(op);
                collectives_ += 1.0;
            }
        if (schedule_) {  // the convergence replay: sharding is BSP's arithmetic (every step one averaged update)
            std::vector<std::uint32_t> everyone(job_.workers);
            for (std::uint32_t w = 0; w < job_.workers; ++w) everyone[w] = w;
            all_ = schedule_->add_set(std::move(everyone));
        }
        program::Executor::Hooks hooks;
        hooks.began = [this](std::uint32_t w, std::uint32_t i, sim::Time t) {
            record(OpKind::grad, w, i, t);  // on the model of the last update
        };
        if (schedule_)
            hooks.computing = [this](std::uint32_t, std::uint32_t i, const program::Compute& c) {
                if (c.kind != ComputeKind::update || synced_ > i) return;
                // Every gradient is reduced once any worker may update: the step's one averaged update.
                schedule_->add(OpKind::sync, 0, all_, i, engine_.now().seconds());
                synced_ = i + 1;
            };
        if (env.job.sync.kind == SyncKind::diloco) {
            outer_ = std::make_unique<OuterSteps>(env_, comm_, clocks_, planner,
                                                  [this](std::uint32_t w) { executor_->begin_iteration(w); });
            hooks.ended = [this](std::uint32_t w, std::uint32_t i) { return outer_->step_done(w, i); };
        }
        executor_ = std::make_unique<program::Executor>(programs_, planner, comm_, clocks_, job_, env_.timeline,
                                                        std::move(hooks));
    }

    void start() override { executor_->start(); }

    [[nodiscard]] JobResult result() const override {
        JobResult r;
        fill_result(job_, clocks_, job_.iterations, static_cast<double>(job_.workers) * job_.batch_size, r);
        r.bytes_on_wire_per_iteration = wire_;
        r.machine_bytes_per_iteration = machine_;
        r.collectives_per_iteration = collectives_;
        r.rounds = job_.iterations;
        r.model_versions = job_.iterations;
        if (outer_) outer_->add_to(r);
        r.schedule = schedule_;
        // The update runs on the local shard only.
        const sim::Time update = shard_update(job_.compute);
        r.update_time_s = update.seconds();
        r.compute_time_s = (job_.compute.accumulation + job_.compute.fwd + job_.compute.bwd + update).seconds();
        // Efficiency against each worker's own compute with its shard's update (a lone GPU would update the whole
        // model, which sharding never does: against that the step could exceed 100 %).
        double ideal = 0.0;
        for (std::uint32_t w = 0; w < job_.workers; ++w) {
            const ComputeProfile& cp = job_.compute_of(w);
            ideal += static_cast<double>(job_.batch_size) * job_.gradient_accumulation /
                     (cp.accumulation + cp.fwd + cp.bwd + shard_update(cp)).seconds();
        }
        r.scaling_efficiency =
            std::min(1.0, ideal > 0.0 && r.iteration_time_s > 0.0 ? r.throughput_samples_per_s / ideal
                                                                  : 1.0);  // rounding must not lift it above 1
        r.breakdown = busy_breakdown(job_, clocks_, r.iteration_time_s);
        return r;
    }

private:
    [[nodiscard]] sim::Time shard_update(const ComputeProfile& cp) const {
        return scaled(cp.update, 1.0 / group_size_);
    }

    program::ProgramSet programs_;
    std::unique_ptr<program::Executor> executor_;
    std::unique_ptr<OuterSteps> outer_;  ///< DiLoCo's outer steps (null for the other schemes)
    std::uint32_t group_size_ = 1;
    std::uint32_t all_ = 0;     ///< the all-workers set of the schedule (convergence replay)
    std::uint32_t synced_ = 0;  ///< iterations whose update the schedule holds
    double wire_ = 0.0, machine_ = 0.0, collectives_ = 0.0;
};

}  // namespace

std::unique_ptr<JobTrainer> make_sharded_trainer(const TrainerEnv& env) {
    return std::make_unique<ShardedTrainer>(env);
}

}  // namespace ddlsim::models::detail

namespace ddlsim::models {

double sharded_step_events(const ShardedShape& s) {
    // Stage 1/2: a reduce-scatter and an all-gather per message; stage 3: per unit an all-gather per micro-batch
    // pass (forward and backward) and one reduce-scatter. Each is a ring of n (g - 1) transfers, across nodes of
    // m GPUs and k NICs as k channels (topologies/sharded_collectives.hpp), plus the hybrid replica all-reduce's
    // 2n (n / g - 1); compute steps run on the event clock.
    const double n = s.workers;
    const double m = std::clamp(s.gpus_per_node, 1.0, n);
    const double k = std::clamp(s.nics_per_node, 1.0, m);  // channels: one per NIC, m where k does not divide m
    const bool by_node = s.sharding.group == ShardGroup::node;
    const double g = by_node ? m : n, channels = by_node || m >= n || k < 2.0 ? 1.0 : (std::fmod(m, k) == 0.0 ? k : m);
    const bool stage3 = s.sharding.stage >= 3;
    const double units = stage3 ? static_cast<double>(shard_units(*s.workload, s.sharding.wrap).size()) : s.messages;
    const double gathers = stage3 ? units * 2.0 * s.accumulation : units, reduces = units;
    const double ring = channels * n * (g - 1.0), replica = g < n ? 2.0 * n * (n / g - 1.0) : 0.0;
    const double steps = static_cast<double>(s.workload->layers.size()) * 2.0 * (stage3 ? s.accumulation : 1.0) * n;
    // ZeRO++: backward's gathers ring over the h workers of hpZ's partition; qgZ's reduction is n (m + N - 2)
    // transfers.
    const double back = stage3 ? units * s.accumulation : 0.0;  // backward's gathers
    const double back_ring = s.sharding.hpz(static_cast<std::uint32_t>(n))
                                 ? n * (static_cast<double>(s.sharding.hpz_partition_size) - 1.0)
                                 : ring;
    const double reduce = s.sharding.quantized_gradients ? n * (m + n / m - 2.0) : ring;
    return (gathers - back) * (4.0 * ring + 4.0 * n) + back * (4.0 * back_ring + 4.0 * n) +
           reduces * (4.0 * reduce + 4.0 * n) + reduces * 4.0 * replica + steps;
}

}  // namespace ddlsim::models
