// Synchronous replicated trainers: BSP (with overlap, compression, stragglers), Local SGD, D-PSGD and DiLoCo (BSP
// inside islands, outer steps across them: models/diloco.hpp), compiled to per-rank programs (ReplicatedTrainer);
// BSP with priority scheduling keeps a driver of its own (models/trainer_priority.cpp).
// See models/trainer.hpp for the schemes and models/comm_plan.hpp for the messages.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

#include "models/program/batchnorm.hpp"
#include "models/program/executor.hpp"
#include "models/trainer_detail.hpp"
#include "models/trainer_outer.hpp"

namespace ddlsim::models::detail {
namespace {

// The synchronous schemes as configurations of one trainer, chosen once:
//   BSP               gradients every iteration, leaving as backward produces them (overlap), then the update
//   Local SGD         a local update every iteration; every `period` iterations the models are averaged and the
//                     average replaces the local model (Lin et al., ICLR 2020)
//   D-PSGD (gossip)   the model to the graph neighbours every iteration, then the local update (Lian et al.,
//                     NeurIPS 2017)
struct SyncConfig {
    bool model_sync = false;       ///< the payload is the model, sent as one message after backward
    std::uint32_t period = 1;      ///< synchronise every this many iterations
    bool averaging = false;        ///< the local update runs first and the synchronised model replaces it
    bool local_after_mix = false;  ///< the schedule records a local step after each mix (gossip)
    OpKind round_op = OpKind::sync;

    static SyncConfig of(const TrainingJob& job) {
        SyncConfig c;
        if (job.sync.kind == SyncKind::local_sgd) {
            c.model_sync = true;
            c.period = job.sync.period;
            c.averaging = true;
            c.round_op = OpKind::average;
        } else if (job.architecture.kind == topo::ArchKind::gossip) {
            c.model_sync = true;
            c.local_after_mix = true;
            c.round_op = OpKind::mix;
        }
        return c;
    }
};

}  // namespace

JobResult sync_result(const TrainingJob& job, const CommPlan& plan, std::uint32_t period, bool averaging,
                      const std::vector<WorkerClock>& clocks, const std::map<std::uint32_t, Readiness>& ready,
                      const std::shared_ptr<Schedule>& schedule, const OuterSteps* outer) {
    JobResult r;
    fill_result(job, clocks, job.iterations, static_cast<double>(job.workers) * job.batch_size, r);
    const std::uint32_t sync_count = plan.messages().empty() ? 0 : job.iterations / period;
    const double syncs = static_cast<double>(sync_count) / job.iterations;
    r.bytes_on_wire_per_iteration = plan.wire_bytes() * syncs;
    r.machine_bytes_per_iteration = plan.machine_bytes() * syncs;
    r.codec_time_s = plan.codec_time(0).seconds() * syncs;
    r.rounds = sync_count;
    r.collectives_per_iteration = plan.collectives() * syncs;
    r.algorithm_picks = plan.algorithm_picks();
    r.schedule = schedule;
    r.model_versions = averaging ? sync_count : job.iterations;
    if (outer != nullptr) outer->add_to(r);  // DiLoCo: the outer steps' bytes; they make the global model's versions
    // Waiting: a worker whose gradients are ready waits for the last worker of its round (stragglers, slower
    // devices) before its bytes can finish; sum over rounds of (last ready - own ready), mean over workers.
    double waiting = 0.0;
    for (const auto& [i, rr] : ready) waiting += rr.waiting_s();
    r.waiting_time_s = waiting / job.workers / job.iterations;
    // Busy time holds compute (stretched beside communication) and, with overlap, the inline encodes.
    double busy = 0.0;
    for (std::uint32_t w = 0; w < job.workers; ++w) busy += clocks[w].busy.seconds();
    busy /= static_cast<double>(job.workers) * job.iterations;
    double inline_encode = 0.0;
    if (job.overlap.overlapped())
        for (const Message& m : plan.messages()) inline_encode += plan.work_time(m.encode, 0).seconds();
    JobResult::Breakdown b;
    b.compute = std::max(0.0, busy - inline_encode * syncs);
    // Codec kernels that ran while other messages were in flight are hidden like communication: the parts
    // add up to the iteration (docs/CONTRACT.md), so the codec gets at most what compute leaves of it.
    b.codec = std::min(r.codec_time_s, std::max(0.0, r.iteration_time_s - b.compute));
    const double idle = std::max(0.0, r.iteration_time_s - b.compute - b.codec);
    b.waiting = std::clamp(r.waiting_time_s, 0.0, idle);
    b.exposed_communication = idle - b.waiting;
    r.breakdown = b;
    return r;
}

namespace {

// The replicated synchronous schemes compiled to a per-rank program (models/program/program.hpp) that the program
// executor runs: every worker runs the same program, BSP's every iteration, Local SGD's cycle of H - 1 local steps
// and one averaging step. Per iteration:
//   the accumulation micro-batches; forward (layer by layer, never stretched: nothing of the job is in flight then);
//   backward: with overlap and a compute slowdown, layer by layer, each layer stretched when it starts beside
//     communication, then the encodes of the messages it completes, then those messages issued; otherwise in runs of
//     layers up to each message's front layer, each message encoded and issued as it is completed (without overlap
//     every message is issued, and encoded on its stream, when backward ends);
//   BSP: the update once every message is done; Local SGD: the local update, then (every H-th step) the model's
//     message, whose average replaces the local model; D-PSGD (gossip): the model's message, then the update.
// Messages run on the worker's stream one at a time (NCCL), or all at once on a parameter server. With SyncBatchNorm
// every micro-batch's forward and backward wait for their BatchNorms' all-reduces (models/program/batchnorm.hpp), so
// the accumulation micro-batches run as passes of their own.
class ReplicatedTrainer final : public TrainerBase {
public:
    explicit ReplicatedTrainer(const TrainerEnv& env)
        : TrainerBase(env, SyncConfig::of(env.job).model_sync),
          cfg_(SyncConfig::of(env.job)),
          batchnorm_(env.job, plan_.planner()) {
        compile();
        if (schedule_) {
            std::vector<std::uint32_t> everyone(job_.workers);
            for (std::uint32_t w = 0; w < job_.workers; ++w) everyone[w] = w;
            all_ = schedule_->add_set(std::move(everyone));
        }
        program::Executor::Hooks hooks;
        hooks.marked = [this](std::uint32_t w, std::uint32_t i, std::uint32_t id) { marked(w, i, id); };
        hooks.called = [this](std::uint32_t w, std::uint32_t i, std::uint32_t call) {
            if (call < plan_.messages().size()) called(w, i);  // not SyncBatchNorm's
        };
        if (job_.sync.kind == SyncKind::diloco) {
            outer_ = std::make_unique<OuterSteps>(env_, comm_, clocks_, plan_.planner(),
                                                  [this](std::uint32_t w) { executor_->begin_iteration(w); });
            hooks.ended = [this](std::uint32_t w, std::uint32_t i) { return outer_->step_done(w, i); };
        }
        done_.assign(job_.workers, 0);
        executor_ = std::make_unique<program::Executor>(programs_, plan_.planner(), comm_, clocks_, job_, env_.timeline,
                                                        std::move(hooks));
    }

    void start() override { executor_->start(); }

    [[nodiscard]] JobResult result() const override {
        JobResult r = sync_result(job_, plan_, cfg_.period, cfg_.averaging, clocks_, ready_, schedule_, outer_.get());
        r.bytes_on_wire_per_iteration += batchnorm_totals_.wire;
        r.machine_bytes_per_iteration += batchnorm_totals_.machine;
        r.collectives_per_iteration += batchnorm_totals_.collectives;
        return r;
    }

private:
    enum Mark : std::uint32_t { grad, local, ready, updated };

    [[nodiscard]] std::uint32_t layers() const { return static_cast<std::uint32_t>(job_.workload.layers.size()); }

    static program::Compute step(program::ComputeKind kind, std::uint32_t first, std::uint32_t last, std::string label,
                                 bool slowable) {
        program::Compute c;
        c.kind = kind;
        c.first = first;
        c.last = last;
        c.per_layer = kind == program::ComputeKind::forward || kind == program::ComputeKind::backward;
        c.slowable = slowable;
        c.label = std::move(label);
        return c;
    }

    void compile() {
        const auto& msgs = plan_.messages();
        const bool overlap = job_.overlap.overlapped();
        const bool gradients = !cfg_.model_sync;
        for (std::uint32_t m = 0; m < msgs.size(); ++m) {
            program::Call c;
            for (const Phase& ph : msgs[m].phases) c.phases.push_back(ph.op);
            c.verb = "sync ";
            c.label = fmt::format("msg{} ({:.3g} MB)", m, msgs[m].payload_bytes / 1e6);
            c.gradient = gradients;
            if (!(gradients && overlap)) c.encode = msgs[m].encode;  // else encoded beside backward
            c.decode = msgs[m].decode;
            programs_.add_call(std::move(c));
        }
        programs_.stream = job_.architecture.kind == topo::ArchKind::ps ? program::ProgramSet::Stream::concurrent
                                                                        : program::ProgramSet::Stream::fifo;
        programs_.round_period = cfg_.period;
        programs_.comm_spans = true;
        programs_.count_updates = false;
        batchnorm_totals_ = batchnorm_.per_iteration();
        if (msgs.empty()) {  // nothing to synchronise: every step is local
            programs_.programs.push_back(program_of(false));
            return;
        }
        programs_.programs.push_back(program_of(true));
        if (cfg_.period > 1) {
            programs_.programs.push_back(program_of(false));
            programs_.cycle.assign(cfg_.period, 1);
            programs_.cycle.back() = 0;
        }
    }

    // One iteration's program: `sync` whether it synchronises.
    program::Program program_of(bool sync) {
        using program::ComputeKind;
        program::Program p;
        const std::uint32_t L = layers(), A = job_.gradient_accumulation;
        const auto& msgs = plan_.messages();
        // Layers [first, last] of micro-batch mb forward or backward, with SyncBatchNorm's all-reduces among them.
        auto pass = [&](bool forward, std::uint32_t first, std::uint32_t last, std::uint32_t mb, std::string label,
                        bool slowable) {
            const ComputeKind kind = forward ? ComputeKind::forward : ComputeKind::backward;
            batchnorm_.pass(programs_, p, forward, first, last, mb, [&](std::uint32_t a, std::uint32_t b) {
                program::Compute c = step(kind, a, b, label, slowable);
                c.micro_batch = mb;
                p.compute(std::move(c));
            });
        };
        if (A > 1 && batchnorm_.active()) {
            for (std::uint32_t mb = 0; mb + 1 < A; ++mb) {
                pass(true, 0, L - 1, mb, fmt::format("forward mb{} (no_sync)", mb), false);
                pass(false, 0, L - 1, mb, fmt::format("backward mb{} (no_sync)", mb), false);
            }
        } else if (A > 1) {
            p.compute(step(ComputeKind::accumulate, 0, 0, fmt::format("micro-batches 1-{} (no_sync)", A - 1), false));
        }
        if (L > 0) pass(true, 0, L - 1, A - 1, "forward", false);
        p.mark(grad);  // every layer's parameters are current: the gradient's model
        const bool gradients = sync && !cfg_.model_sync;
        const bool overlap = job_.overlap.overlapped();
        std::vector<std::vector<std::uint32_t>> by_front(L);
        for (std::uint32_t m = 0; m < msgs.size(); ++m) by_front[msgs[m].front_layer].push_back(m);
        auto encode = [&](std::uint32_t m) {
            const CodecWork& e = msgs[m].encode;
            if (e.memory_bytes <= 0.0 && e.flops <= 0.0) return;
            program::Compute c = step(ComputeKind::codec, 0, 0, fmt::format("encode msg{}", m), false);
            c.work = e;
            p.compute(std::move(c));
        };
        if (gradients && overlap && job_.overlap_slowdown > 0.0 && L > 0) {
            // Layer by layer on the event clock; a layer's messages leave once all their encodes ran.
            for (std::uint32_t l = L; l-- > 0;) {
                pass(false, l, l, A - 1, "backward", true);
                for (std::uint32_t m : by_front[l]) encode(m);
                for (std::uint32_t m : by_front[l]) p.issue(m);
            }
        } else if (gradients && overlap) {
            // Runs of layers up to each message's front layer; each message leaves once encoded.
            std::uint32_t top = L;  // the run's first layer in backward order is top - 1
            for (std::uint32_t l = L; l-- > 0;) {
                if (by_front[l].empty() && l > 0) continue;
                pass(false, l, top - 1, A - 1, "backward", false);
                top = l;
                for (std::uint32_t m : by_front[l]) {
                    encode(m);
                    p.issue(m);
                }
            }
        } else {
            if (L > 0) pass(false, 0, L - 1, A - 1, "backward", false);
            if (gradients)
                for (std::uint32_t m = 0; m < msgs.size(); ++m) p.issue(m);
        }
        auto update = [&] {
            p.compute(step(ComputeKind::update, 0, 0, "update", false));
            p.mark(updated);
        };
        if (gradients) {
            p.mark(ready);
            for (std::uint32_t m = 0; m < msgs.size(); ++m) p.wait(m);
            update();
        } else if (!sync || cfg_.averaging) {
            // A local step, or Local SGD's averaging after the local update.
            p.mark(local);
            update();
            if (sync) {
                p.mark(ready);
                p.issue(0);  // the averaged model replaces the local one when it lands
            }
        } else {
            // D-PSGD: the model to the neighbours, then the update.
            p.mark(ready);
            p.issue(0);
            p.wait(0);
            if (cfg_.local_after_mix) p.mark(local);
            update();
        }
        return p;
    }

    void marked(std::uint32_t w, std::uint32_t i, std::uint32_t id) {
        const sim::Time now = engine_.now();
        switch (id) {
            case grad: record(OpKind::grad, w, i, now); break;
            case local: record(OpKind::local, w, i, now); break;
            case ready: ready_[i].note(w, job_.workers, now); break;
            case updated: ++clocks_[w].updates; break;
            default: break;
        }
    }

    // One of worker w's messages of iteration i is done: after the last, the round is recorded (by the first worker
    // to get there) and, with averaging, the averaged model replaces the local one.
    void called(std::uint32_t w, std::uint32_t i) {
        if (++done_[w] < plan_.messages().size()) return;
        done_[w] = 0;
        if (schedule_ && recorded_rounds_ <= i) {
            recorded_rounds_ = i + 1;
            schedule_->add(cfg_.round_op, 0, all_, i, engine_.now().seconds(), i);
        }
        if (cfg_.averaging) ++clocks_[w].updates;
    }

    SyncConfig cfg_;
    program::BatchNormSync batchnorm_;
    program::BatchNormSync::Totals batchnorm_totals_;
    program::ProgramSet programs_;
    std::unique_ptr<program::Executor> executor_;
    std::unique_ptr<OuterSteps> outer_;  ///< DiLoCo's outer steps (null for the other schemes)
    std::map<std::uint32_t, Readiness> ready_;
    std::vector<std::uint32_t> done_;  ///< per worker: messages of its current round done
    std::uint32_t all_ = 0;
    std::uint32_t recorded_rounds_ = 0;
};

}  // namespace

std::unique_ptr<JobTrainer> make_sync_trainer(const TrainerEnv& env) {
    // Priority scheduling (P3, ByteScheduler) keeps its own driver: its next forward overlaps the last iteration's
    // messages layer by layer, each layer's update launched when its last piece lands (docs/DESIGN.md).
    if (env.job.overlap.priority && env.job.workload.params() > 0) return make_priority_trainer(env);
    return std::make_unique<ReplicatedTrainer>(env);
}

}  // namespace ddlsim::models::detail
