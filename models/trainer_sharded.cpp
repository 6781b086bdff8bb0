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
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "models/compression.hpp"
#include "models/stragglers.hpp"
#include "models/trainer_detail.hpp"
#include "models/trainer_outer.hpp"
#include "topologies/sharded_collectives.hpp"

namespace ddlsim::models::detail {
namespace {

using topo::ShardCollective;

class ShardedTrainer final : public TrainerBase {
public:
    explicit ShardedTrainer(const TrainerEnv& env)
        : TrainerBase(env, false),
          groups_(env.job.sync.kind == SyncKind::diloco  // DiLoCo: each island shards over its own workers
                      ? env.job.sync.island_groups(env.job.workers)
                      : topo::shard_groups(plan_.context().node_of, env.job.workers,
                                           env.job.sharding.group == ShardGroup::node)),
          ws_(env.job.workers) {
        group_size_ = static_cast<std::uint32_t>(groups_.front().size());
        hybrid_ = groups_.size() > 1 && env.job.sync.kind != SyncKind::diloco;  // islands meet in outer steps only
        if (env.job.sync.kind == SyncKind::diloco)
            outer_ = std::make_unique<OuterSteps>(env_, comm_, clocks_, plan_.context(),
                                                  [this](std::uint32_t w) { begin_iteration(w); });
        const ShardingSpec& sh = env.job.sharding;
        if (sh.hpz(env.job.workers))
            for (std::uint32_t w = 0; w < env.job.workers; ++w) {
                if (w % sh.hpz_partition_size == 0) hpz_groups_.emplace_back();
                hpz_groups_.back().push_back(w);
            }
        if (sh.quantized_gradients) nodes_ = topo::shard_groups(plan_.context().node_of, env.job.workers, true);
        if (schedule_) {  // the convergence replay: sharding is BSP's arithmetic (every step one averaged update)
            std::vector<std::uint32_t> everyone(job_.workers);
            for (std::uint32_t w = 0; w < job_.workers; ++w) everyone[w] = w;
            all_ = schedule_->add_set(std::move(everyone));
        }
        if (job_.sharding.stage >= 3) {
            build_stage3();
        } else {
            build_stage12();
        }
        for (const Op& op : ops_) {
            wire_ += op.wire;
            machine_ += op.machine;
            collectives_ += static_cast<double>(op.phases.size());
            if (op.reduce) ++reduces_;
        }
    }

    void start() override {
        for (std::uint32_t w = 0; w < job_.workers; ++w) begin_iteration(w);
    }

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
        double busy = 0.0;
        for (std::uint32_t w = 0; w < job_.workers; ++w) busy += clocks_[w].busy.seconds();
        JobResult::Breakdown b;
        b.compute = busy / (static_cast<double>(job_.workers) * job_.iterations);
        b.exposed_communication = std::max(0.0, r.iteration_time_s - b.compute);
        r.breakdown = b;
        return r;
    }

private:
    // One queued collective of a step: its phases run back to back (hybrid: reduce-scatter, then the replica
    // all-reduce).
    struct Op {
        std::vector<const topo::Collective*> phases;
        std::string label;
        bool reduce = false;  ///< gradients (the update waits for every one)
        double wire = 0.0, machine = 0.0;
        CodecWork before, after;  ///< ZeRO++'s quantization kernels around the collective
    };
    enum class StepKind { accumulate, forward, backward, update };
    // One compute step, the same on every worker: layers [first, last] of micro-batch mb.
    struct Step {
        StepKind kind = StepKind::forward;
        std::uint32_t first = 0, last = 0;
        std::uint32_t mb = 0;
        int needs = -1;                    ///< an op that must be done before the step starts
        std::vector<std::uint32_t> begin;  ///< ops issued when the step is reached
        std::vector<std::uint32_t> end;    ///< ops issued when it ends
    };
    struct W {
        std::uint32_t iter = 0;
        std::uint32_t step = 0;
        bool entered = false;  ///< the current step's `begin` ops are issued
        bool idle = false;     ///< compute waits (for an op, the gradients, or the step's last ops)
        StepSlowdown slow;
        std::vector<char> done;  ///< per op of this step
        std::uint32_t ops_left = 0, reduces_left = 0;
        std::vector<std::uint32_t> queue;  ///< ops waiting, a FIFO from queue_head (a deque's 512-byte block per
        std::size_t queue_head = 0;        ///< worker would cost 8 MB at 16,384 workers, and its cache)
        bool busy = false;                 ///< an op in flight
        sim::Time op_start;
    };
    struct RoundState {
        std::unique_ptr<sim::Round> runner;
        std::uint32_t endpoints_left = 0;
    };

    [[nodiscard]] std::uint32_t layers() const { return static_cast<std::uint32_t>(job_.workload.layers.size()); }
    [[nodiscard]] double layer_bytes(std::uint32_t first, std::uint32_t last) const {
        double b = 0.0;
        for (std::uint32_t l = first; l <= last; ++l)
            b += static_cast<double>(job_.workload.layers[l].params()) * job_.bytes_per_param;
        return b;
    }
    [[nodiscard]] sim::Time shard_update(const ComputeProfile& cp) const {
        return scaled(cp.update, 1.0 / group_size_);
    }

    // The collectives, built once per kind and size: 0-2 ShardCollective over the shard groups, 3 an all-gather
    // over hpZ's secondary groups, 4 qgZ's hierarchical all-to-all (its second part's bytes in `bytes2`).
    const topo::Collective* collective(int kind, double bytes, double bytes2 = 0.0) {
        const auto key = std::make_tuple(kind, bytes, bytes2);
        auto it = cache_.find(key);
        if (it != cache_.end()) return it->second.get();
        std::unique_ptr<topo::Collective> c;
        if (kind == kSecondaryGather)
            c = topo::make_shard_collective(ShardCollective::all_gather, hpz_groups_, job_.workers, sim::Bytes{bytes},
                                            &plan_.context());
        else if (kind == kQuantizedReduce)
            c = topo::make_hierarchical_all_to_all(nodes_, job_.workers, sim::Bytes{bytes}, sim::Bytes{bytes2});
        else
            c = topo::make_shard_collective(static_cast<ShardCollective>(kind), groups_, job_.workers,
                                            sim::Bytes{bytes}, &plan_.context());
        return cache_.emplace(key, std::move(c)).first->second.get();
    }
    const topo::Collective* collective(ShardCollective kind, double bytes) {
        return collective(static_cast<int>(kind), bytes);
    }

    // Adds an op of `bytes`: a gather, or a reduce (hybrid: with the replica all-reduce); returns its index.
    std::uint32_t add_op(bool reduce, double bytes, std::string label) {
        Op op;
        op.reduce = reduce;
        op.label = fmt::format("{} ({:.3g} MB)", label, bytes / 1e6);
        op.phases.push_back(collective(reduce ? ShardCollective::reduce_scatter : ShardCollective::all_gather, bytes));
        if (reduce && hybrid_) op.phases.push_back(collective(ShardCollective::replica_allreduce, bytes));
        return push_op(std::move(op));
    }

    // ZeRO-3's all-gather of a unit of `params` parameters (ZeRO++: quantized, or backward's from hpZ's copy).
    std::uint32_t add_gather(double params, bool backward, std::string label) {
        const ShardingSpec& sh = job_.sharding;
        const bool secondary = backward && !hpz_groups_.empty();
        const double g = static_cast<double>(secondary ? hpz_groups_.front().size() : groups_.front().size());
        double bytes = params * job_.bytes_per_param;
        Op op;
        if (sh.quantized_weights) {
            // int8 per element, and an fp32 scale per block of at most kQuantBlock of each GPU's shard.
            const double shard = params / g;
            bytes = params + kScaleBytes * g * std::ceil(shard / kQuantBlock);
            op.before.memory_bytes = shard * (job_.bytes_per_param + 1.0);  // read the shard, write int8
            op.after.memory_bytes = params * (1.0 + job_.bytes_per_param);  // read int8, write the weights
        }
        op.label = fmt::format("{}{} ({:.3g} MB)", label, secondary ? " [hpZ]" : "", bytes / 1e6);
        op.phases.push_back(secondary ? collective(kSecondaryGather, bytes)
                                      : collective(ShardCollective::all_gather, bytes));
        return push_op(std::move(op));
    }

    // ZeRO-3's gradient reduction of a unit (ZeRO++ qgZ: the int4 hierarchical all-to-all).
    std::uint32_t add_reduce(std::uint32_t first, std::uint32_t last, double params, std::string label) {
        if (!job_.sharding.quantized_gradients) return add_op(true, params * job_.bytes_per_param, std::move(label));
        const double m = static_cast<double>(nodes_.front().size()), N = static_cast<double>(nodes_.size());
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
        Op op;
        op.reduce = true;
        op.label = fmt::format("{} [qgZ int4] ({:.3g} MB)", label, intra / 1e6);
        op.phases.push_back(collective(kQuantizedReduce, intra, inter));
        const double bpp = job_.bytes_per_param;
        op.before.memory_bytes = params * (bpp + 0.5);  // quantize the gradients to int4
        // Dequantize the node's m slices, reduce and requantize (P int4 in, P/m out); after the second part
        // dequantize the N slices and sum them (P/m int4 in, P/(mN) out at full width).
        op.after.memory_bytes = params * 0.5 + params / m * 0.5 + params / m * 0.5 + params / (m * N) * bpp;
        return push_op(std::move(op));
    }

    std::uint32_t push_op(Op op) {
        auto remote = [this](std::uint32_t a, std::uint32_t b) {
            return job_.endpoint_hosts[a] != job_.endpoint_hosts[b];
        };
        auto machines = [this](std::uint32_t a, std::uint32_t b) {
            return env_.fabric.node_of(job_.endpoint_hosts[a]) != env_.fabric.node_of(job_.endpoint_hosts[b]);
        };
        for (const topo::Collective* c : op.phases) {
            op.wire += c->wire_bytes(remote).value();
            op.machine += c->wire_bytes(machines).value();
        }
        ops_.push_back(std::move(op));
        return static_cast<std::uint32_t>(ops_.size() - 1);
    }

    void build_stage12() {
        const std::uint32_t L = layers();
        if (job_.gradient_accumulation > 1) steps_.push_back({StepKind::accumulate, 0, 0, 0, -1, {}, {}});
        if (L > 0) steps_.push_back({StepKind::forward, 0, L - 1, 0, -1, {}, {}});
        const auto& msgs = plan_.messages();
        const bool overlap = job_.overlap.overlapped();
        std::vector<std::uint32_t> gathers;
        std::vector<std::vector<std::uint32_t>> at_layer(L);
        for (std::uint32_t m = 0; m < msgs.size(); ++m) {
            const std::uint32_t op = add_op(true, msgs[m].dense_bytes, fmt::format("reduce-scatter msg{}", m));
            at_layer[overlap ? msgs[m].front_layer : 0].push_back(op);
        }
        for (std::uint32_t m = 0; m < msgs.size(); ++m)
            gathers.push_back(add_op(false, msgs[m].dense_bytes, fmt::format("all-gather msg{}", m)));
        for (std::uint32_t l = L; l-- > 0;) steps_.push_back({StepKind::backward, l, l, 0, -1, {}, at_layer[l]});
        steps_.push_back({StepKind::update, 0, 0, 0, -1, {}, gathers});
    }

    void build_stage3() {
        struct Unit {
            std::uint32_t first, last;
            double bytes;
        };
        std::vector<Unit> units;
        for (const auto& [f, l] : shard_units(job_.workload, job_.sharding.wrap))
            units.push_back({f, l, layer_bytes(f, l)});
        const auto U = static_cast<std::uint32_t>(units.size());
        const std::uint32_t p = std::min(job_.sharding.prefetch, U);
        auto name = [&](const Unit& u) {
            const auto& ls = job_.workload.layers;
            return u.first == u.last ? ls[u.first].name : ls[u.first].name + ".." + ls[u.last].name;
        };
        const std::uint32_t A = job_.gradient_accumulation;
        // One pass (forward or backward) of micro-batch mb: position j is unit u(j); its gather is issued when
        // position j - p is reached (positions below p: when the pass begins).
        auto pass = [&](StepKind kind, std::uint32_t mb) {
            const bool fwd = kind == StepKind::forward;
            const std::size_t first = steps_.size();
            std::vector<int> gather(U, -1);
            for (std::uint32_t j = 0; j < U; ++j) {
                const Unit& u = units[fwd ? j : U - 1 - j];
                Step s{kind, u.first, u.last, mb, -1, {}, {}};
                const double params = u.bytes / job_.bytes_per_param;
                if (u.bytes > 0.0)
                    s.needs = static_cast<int>(add_gather(
                        params, !fwd, fmt::format("all-gather {} ({})", name(u), fwd ? "forward" : "backward")));
                gather[j] = s.needs;
                if (kind == StepKind::backward && mb + 1 == A && u.bytes > 0.0)
                    s.end.push_back(add_reduce(u.first, u.last, params, fmt::format("reduce-scatter {}", name(u))));
                steps_.push_back(std::move(s));
            }
            for (std::uint32_t j = 0; j < U; ++j) {
                if (gather[j] < 0) continue;
                const std::size_t at = first + (j >= p ? j - p : 0);
                steps_[at].begin.push_back(static_cast<std::uint32_t>(gather[j]));
            }
        };
        for (std::uint32_t mb = 0; mb < A; ++mb) {
            pass(StepKind::forward, mb);
            pass(StepKind::backward, mb);
        }
        steps_.push_back({StepKind::update, 0, 0, 0, -1, {}, {}});
    }

    [[nodiscard]] bool comm_active(std::uint32_t w) const {
        return ws_[w].busy || ws_[w].queue_head < ws_[w].queue.size();
    }

    void begin_iteration(std::uint32_t w) {
        W& s = ws_[w];
        if (s.iter == job_.iterations) {
            clocks_[w].finished = engine_.now();
            return;
        }
        s.step = 0;
        s.entered = false;
        s.done.assign(ops_.size(), 0);
        s.ops_left = static_cast<std::uint32_t>(ops_.size());
        s.reduces_left = reduces_;
        s.slow = straggler(job_.stragglers, job_.seed, w, s.iter);
        record(OpKind::grad, w, s.iter, engine_.now() + s.slow.delay);  // on the model of the last update
        clocks_[w].busy += s.slow.delay;
        if (s.slow.delay > sim::Time::zero()) {
            engine_.after(s.slow.delay, [this, w] { advance(w); });
            return;
        }
        advance(w);
    }

    [[nodiscard]] sim::Time duration(std::uint32_t w, const Step& st) const {
        const ComputeProfile& cp = job_.compute_of(w);
        sim::Time d;
        switch (st.kind) {
            case StepKind::accumulate: d = cp.accumulation; break;
            case StepKind::update: d = shard_update(cp); break;
            case StepKind::forward:
            case StepKind::backward:
                for (std::uint32_t l = st.first; l <= st.last; ++l)
                    d += st.kind == StepKind::forward ? cp.layers[l].fwd : cp.layers[l].bwd;
                break;
        }
        return scaled(d, ws_[w].slow.factor);
    }

    [[nodiscard]] std::string step_name(const Step& st) const {
        const auto& ls = job_.workload.layers;
        const std::string layers =
            st.first == st.last ? ls[st.first].name : ls[st.first].name + ".." + ls[st.last].name;
        const std::string mb = job_.gradient_accumulation > 1 ? fmt::format(" mb{}", st.mb) : std::string();
        switch (st.kind) {
            case StepKind::accumulate:
                return fmt::format("micro-batches 1-{} (no_sync)", job_.gradient_accumulation - 1);
            case StepKind::update: return fmt::format("update (shard 1/{})", group_size_);
            case StepKind::forward: return "fwd " + layers + mb;
            case StepKind::backward: return "bwd " + layers + mb;
        }
        return {};
    }

    // Runs worker w's compute from its current step until it must wait.
    void advance(std::uint32_t w) {
        W& s = ws_[w];
        if (s.step == steps_.size()) {
            s.idle = s.ops_left > 0;  // the step's last gathers still travel
            if (!s.idle) end_iteration(w);
            return;
        }
        const Step& st = steps_[s.step];
        if (!s.entered) {
            s.entered = true;
            for (std::uint32_t op : st.begin) issue(w, op);
        }
        if ((st.needs >= 0 && !s.done[static_cast<std::size_t>(st.needs)]) ||
            (st.kind == StepKind::update && s.reduces_left > 0)) {
            s.idle = true;
            return;
        }
        s.idle = false;
        if (st.kind == StepKind::update && schedule_ && synced_ <= s.iter) {
            // Every gradient is reduced once any worker may update: the step's one averaged update.
            schedule_->add(OpKind::sync, 0, all_, s.iter, engine_.now().seconds());
            synced_ = s.iter + 1;
        }
        const bool slowed = comm_active(w) && job_.overlap_slowdown > 0.0;
        sim::Time d = duration(w, st);
        if (slowed) d = scaled(d, 1.0 + job_.overlap_slowdown);
        const char* cat = st.kind == StepKind::forward  ? "forward"
                          : st.kind == StepKind::update ? "update"
                                                        : "backward";
        const sim::Time now = engine_.now();
        env_.timeline.span(
            Timeline::compute(w), [&] { return step_name(st) + (slowed ? " (slowed by communication)" : ""); }, cat,
            now, now + d);
        clocks_[w].busy += d;
        engine_.at(now + d, [this, w] { step_done(w); });
    }

    void step_done(std::uint32_t w) {
        W& s = ws_[w];
        for (std::uint32_t op : steps_[s.step].end) issue(w, op);
        ++s.step;
        s.entered = false;
        advance(w);
    }

    void end_iteration(std::uint32_t w) {
        ++clocks_[w].iterations;
        ++clocks_[w].updates;
        ++ws_[w].iter;
        if (outer_ && !outer_->step_done(w, ws_[w].iter - 1)) return;  // DiLoCo: an outer step is due first
        begin_iteration(w);
    }

    void issue(std::uint32_t w, std::uint32_t op) {
        ws_[w].queue.push_back(op);
        pump(w);
    }

    // Starts the next queued op of worker w when none is in flight.
    void pump(std::uint32_t w) {
        W& s = ws_[w];
        if (s.busy || s.queue_head == s.queue.size()) return;
        const std::uint32_t op = s.queue[s.queue_head++];
        if (s.queue_head == s.queue.size()) {
            s.queue.clear();
            s.queue_head = 0;
        }
        s.busy = true;
        s.op_start = engine_.now();
        clocks_[w].comm_begin(engine_.now());
        const std::uint32_t i = s.iter;
        engine_.after(job_.collective_overhead + kernel(ops_[op].before, w),
                      [this, w, i, op] { round(i, op, 0).runner->open(w); });
    }

    static std::uint64_t round_key(std::uint32_t i, std::uint32_t op, std::uint32_t p) {
        return (static_cast<std::uint64_t>(i) << 32) | (static_cast<std::uint64_t>(op) << 2) | p;
    }

    RoundState& round(std::uint32_t i, std::uint32_t op, std::uint32_t p) {
        const std::uint64_t key = round_key(i, op, p);
        auto it = rounds_.find(key);
        if (it != rounds_.end()) return it->second;
        const topo::Collective& c = *ops_[op].phases[p];
        RoundState& r = rounds_[key];
        r.endpoints_left = c.endpoints();
        r.runner = comm_.start_round(
            c, [this, i, op, p](std::uint32_t e) { phase_done(i, op, p, e); }, i);
        return r;
    }

    void phase_done(std::uint32_t i, std::uint32_t op, std::uint32_t p, std::uint32_t e) {
        const std::uint64_t key = round_key(i, op, p);
        if (--rounds_[key].endpoints_left == 0)  // the round is still on the stack: drop it later
            engine_.after(sim::Time::zero(), [this, key] { rounds_.erase(key); });
        if (p + 1 < ops_[op].phases.size()) {
            round(i, op, p + 1).runner->open(e);
            return;
        }
        const sim::Time after = kernel(ops_[op].after, e);
        if (after > sim::Time::zero()) {
            engine_.after(after, [this, e, op] { op_done(e, op); });
            return;
        }
        op_done(e, op);
    }

    // ZeRO++'s kernels on worker w's device (memory-bound: models/compression.hpp codec_time).
    [[nodiscard]] sim::Time kernel(const CodecWork& work, std::uint32_t w) const {
        return work.memory_bytes > 0.0 ? codec_time(work, job_.device_of(w), 1.0) : sim::Time::zero();
    }

    void op_done(std::uint32_t w, std::uint32_t op) {
        W& s = ws_[w];
        clocks_[w].comm_end(engine_.now());
        env_.timeline.span(
            Timeline::comm(w), [&] { return fmt::format("it{} {}", s.iter, ops_[op].label); }, "communication",
            s.op_start, engine_.now());
        s.busy = false;
        s.done[op] = 1;
        --s.ops_left;
        if (ops_[op].reduce) --s.reduces_left;
        pump(w);
        if (s.idle) advance(w);
    }

    std::vector<std::vector<std::uint32_t>> groups_;
    std::uint32_t group_size_ = 1;
    bool hybrid_ = false;
    std::unique_ptr<OuterSteps> outer_;  ///< DiLoCo's outer steps (null for the other schemes)
    std::uint32_t all_ = 0;              ///< the all-workers set of the schedule (convergence replay)
    std::uint32_t synced_ = 0;           ///< iterations whose update the schedule holds
    std::vector<Op> ops_;
    std::vector<Step> steps_;
    std::uint32_t reduces_ = 0;
    double wire_ = 0.0, machine_ = 0.0, collectives_ = 0.0;
    // CUDAQuantizer.target_group_size (deepspeed/runtime/zero/partition_parameters.py at 38327e0): blocks of at
    // most 8,000 elements, each with one fp32 scale.
    static constexpr double kQuantBlock = 8000.0, kScaleBytes = 4.0;
    static constexpr int kSecondaryGather = 3, kQuantizedReduce = 4;
    std::vector<std::vector<std::uint32_t>> hpz_groups_;  ///< hpZ's secondary partitions (empty: off)
    std::vector<std::vector<std::uint32_t>> nodes_;       ///< qgZ: the workers of each node
    std::map<std::tuple<int, double, double>, std::unique_ptr<topo::Collective>> cache_;
    std::vector<W> ws_;
    std::unordered_map<std::uint64_t, RoundState> rounds_;
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
