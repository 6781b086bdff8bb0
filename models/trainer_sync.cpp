// Synchronous replicated trainers: BSP (with overlap, compression, stragglers), Local SGD, D-PSGD and DiLoCo (BSP
// inside islands, outer steps across them: models/diloco.hpp), compiled to per-rank programs (ReplicatedTrainer);
// BSP with priority scheduling keeps a driver of its own (PriorityTrainer).
// See models/trainer.hpp for the schemes and models/comm_plan.hpp for the messages.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "models/message_scheduler.hpp"
#include "models/program/executor.hpp"
#include "models/stragglers.hpp"
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

// When each worker's gradients (or model) of one synchronisation round were ready. The waiting figure sums each
// worker's lag behind the last one exactly (picoseconds) and in worker order, so it depends neither on the order
// the workers got there nor on the size of the clock (count x last - sum of the times cancelled digits).
struct Readiness {
    std::vector<sim::Time> at;  ///< per worker (Time::max(): not yet)

    void note(std::uint32_t w, std::uint32_t workers, sim::Time t) {
        if (at.empty()) at.assign(workers, sim::Time::max());
        at[w] = t;
    }
    [[nodiscard]] double waiting_s() const {
        sim::Time last;
        for (sim::Time t : at)
            if (t != sim::Time::max()) last = std::max(last, t);
        double sum = 0.0;
        for (sim::Time t : at)
            if (t != sim::Time::max()) sum += (last - t).seconds();
        return sum;
    }
};

// The figures of a synchronous replicated run (both drivers below).
JobResult sync_result(const TrainingJob& job, const CommPlan& plan, const SyncConfig& cfg,
                      const std::vector<WorkerClock>& clocks, const std::map<std::uint32_t, Readiness>& ready,
                      const std::shared_ptr<Schedule>& schedule, const OuterSteps* outer) {
    JobResult r;
    fill_result(job, clocks, job.iterations, static_cast<double>(job.workers) * job.batch_size, r);
    const std::uint32_t sync_count = plan.messages().empty() ? 0 : job.iterations / cfg.period;
    const double syncs = static_cast<double>(sync_count) / job.iterations;
    r.bytes_on_wire_per_iteration = plan.wire_bytes() * syncs;
    r.machine_bytes_per_iteration = plan.machine_bytes() * syncs;
    r.codec_time_s = plan.codec_time(0).seconds() * syncs;
    r.rounds = sync_count;
    r.collectives_per_iteration = plan.collectives() * syncs;
    r.algorithm_picks = plan.algorithm_picks();
    r.schedule = schedule;
    r.model_versions = cfg.averaging ? sync_count : job.iterations;
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

// BSP with priority scheduling (P3, Jayarajan et al., SysML 2019; ByteScheduler, Peng et al., SOSP 2019): the one
// scheme that keeps a driver of its own beside the program executor. The compute stream moves on to the next
// iteration's forward when backward ends, while the last iteration's messages still travel; each layer's update
// runs on the compute stream once the last piece of that layer lands, and the next forward of a layer waits for it.
// Messages start by credit, front-most layer first (models/message_scheduler.hpp). The loader allows priority with
// BSP only, with WFBP, without accumulation.
class PriorityTrainer final : public TrainerBase {
public:
    explicit PriorityTrainer(const TrainerEnv& env) : TrainerBase(env, false), ws_(env.job.workers) {
        const auto& msgs = plan_.messages();
        scheduler_ = make_message_scheduler(
            job_, [this](std::uint32_t w, std::uint32_t i, std::uint32_t m) { start_message(w, i, m); },
            [this](std::uint32_t m) { return plan_.messages()[m].front_layer; });
        const std::size_t layers = job_.workload.layers.size();
        for (W& w : ws_) {
            w.pending.assign(layers, 0);
            w.param_ready.assign(layers, sim::Time::zero());
            w.msg_start.assign(msgs.size(), sim::Time::zero());
        }
        if (schedule_) {
            std::vector<std::uint32_t> everyone(job_.workers);
            for (std::uint32_t w = 0; w < job_.workers; ++w) everyone[w] = w;
            all_ = schedule_->add_set(std::move(everyone));
        }
        by_front_.resize(job_.workload.layers.size());
        for (std::uint32_t m = 0; m < msgs.size(); ++m) by_front_[msgs[m].front_layer].push_back(m);
        // Distinct layers per message (priority: a message completes these layers' pieces).
        for (const Message& m : msgs) {
            std::vector<std::uint32_t> ls;
            for (const Piece& p : m.pieces)
                if (std::find(ls.begin(), ls.end(), p.layer) == ls.end()) ls.push_back(p.layer);
            msg_layers_.push_back(std::move(ls));
        }
    }

    void start() override {
        for (std::uint32_t w = 0; w < job_.workers; ++w) begin(w);
    }

    [[nodiscard]] JobResult result() const override {
        return sync_result(job_, plan_, SyncConfig{}, clocks_, ready_, schedule_, nullptr);
    }

private:
    // A worker's gradients (or model) of synchronisation round i are ready at t.
    void note_ready(std::uint32_t w, std::uint32_t i, sim::Time t) { ready_[i].note(w, job_.workers, t); }
    std::map<std::uint32_t, Readiness> ready_;

    struct W {
        std::uint32_t iter = 0;
        StepSlowdown slow;
        double update_factor = 1.0;  ///< slowdown of the iteration whose updates are pending
        // Priority: layer-by-layer forward gated on each layer's update.
        std::uint32_t fwd_layer = 0;
        sim::Time fwd_clock;
        bool fwd_waiting = false;
        std::vector<std::uint32_t> pending;  ///< per layer: messages of the last iteration not done
        std::vector<sim::Time> param_ready;
        std::uint32_t outstanding = 0;  ///< messages started by backward and not yet done
        // Communication.
        std::uint32_t msgs_left = 0;
        std::vector<sim::Time> msg_start;
    };
    struct RoundState {
        std::unique_ptr<sim::Round> runner;
        std::uint32_t endpoints_left = 0;
    };

    [[nodiscard]] std::uint32_t layers() const { return static_cast<std::uint32_t>(job_.workload.layers.size()); }

    // Runs forward from `fwd_clock`, layer by layer, each layer after its update, then backward.
    void begin(std::uint32_t w) {
        W& s = ws_[w];
        WorkerClock& c = clocks_[w];
        if (s.iter == job_.iterations) {
            if (s.outstanding == 0) finish(w);
            return;
        }
        s.slow = straggler(job_.stragglers, job_.seed, w, s.iter);
        c.busy += s.slow.delay;
        // The compute stream may still be busy with updates when the iteration begins.
        s.fwd_clock = std::max(engine_.now(), s.fwd_clock) + s.slow.delay;
        s.fwd_layer = 0;
        advance_forward(w);
    }

    void advance_forward(std::uint32_t w) {
        W& s = ws_[w];
        const ComputeProfile& cp = job_.compute_of(w);
        while (s.fwd_layer < layers()) {
            const std::uint32_t l = s.fwd_layer;
            if (s.pending[l] > 0) {
                s.fwd_waiting = true;
                return;
            }
            const sim::Time start = std::max({s.fwd_clock, s.param_ready[l], engine_.now()});
            // The previous iteration's partitions still travel during forward.
            const bool slowed = s.outstanding > 0 && job_.overlap_slowdown > 0.0;
            sim::Time d = scaled(cp.layers[l].fwd, s.slow.factor);
            if (slowed) d = scaled(d, 1.0 + job_.overlap_slowdown);
            env_.timeline.span(
                Timeline::compute(w),
                [&] { return "fwd " + job_.workload.layers[l].name + (slowed ? " (slowed by communication)" : ""); },
                "forward", start, start + d);
            clocks_[w].busy += d;
            s.fwd_clock = start + d;
            ++s.fwd_layer;
        }
        s.fwd_waiting = false;
        backward(w, s.fwd_clock);
    }

    // Gradient messages of iteration i: counts set before any of them is ready.
    void expect_messages(std::uint32_t w) {
        W& s = ws_[w];
        const auto count = static_cast<std::uint32_t>(plan_.messages().size());
        s.msgs_left = count;
        s.outstanding += count;
        for (const auto& ls : msg_layers_)
            for (std::uint32_t l : ls) ++s.pending[l];
    }

    // Whether worker w has communication in flight (or queued) now: its compute then runs slower.
    [[nodiscard]] bool comm_active(std::uint32_t w) const { return clocks_[w].in_flight > 0 || scheduler_->waiting(w); }

    // Overlapped backward with a compute slowdown, layer by layer on the event clock: a layer that
    // starts while this worker's communication is in flight runs (1 + slowdown) times longer.
    void backward_step(std::uint32_t w, std::uint32_t l) {
        W& s = ws_[w];
        const std::uint32_t i = s.iter;
        const auto& msgs = plan_.messages();
        sim::Time t = engine_.now();
        const bool slowed = comm_active(w);
        sim::Time d = scaled(job_.compute_of(w).layers[l].bwd, s.slow.factor);
        if (slowed) d = scaled(d, 1.0 + job_.overlap_slowdown);
        env_.timeline.span(
            Timeline::compute(w),
            [&] { return "bwd " + job_.workload.layers[l].name + (slowed ? " (slowed by communication)" : ""); },
            "backward", t, t + d);
        clocks_[w].busy += d;
        t += d;
        for (std::uint32_t m : by_front_[l]) {
            const sim::Time enc = plan_.work_time(msgs[m].encode, w);
            env_.timeline.span(
                Timeline::compute(w), [&] { return fmt::format("encode msg{}", m); }, "codec", t, t + enc);
            clocks_[w].busy += enc;
            t += enc;
        }
        engine_.at(t, [this, w, i, l] {
            for (std::uint32_t m : by_front_[l]) message_ready(w, i, m);
            if (l > 0) {
                backward_step(w, l - 1);
            } else {
                backward_end(w, engine_.now());
            }
        });
    }

    // Backward (and its inline encodes) ended at t with gradient messages on their way: the compute stream moves on
    // to the next iteration's forward.
    void backward_end(std::uint32_t w, sim::Time t) {
        W& s = ws_[w];
        note_ready(w, s.iter, t);
        s.fwd_clock = t;  // the compute stream is busy until backward (and inline encodes) end
        engine_.at(t, [this, w] {
            ws_[w].update_factor = ws_[w].slow.factor;
            ++ws_[w].iter;
            ++clocks_[w].iterations;
            begin(w);
        });
    }

    void backward(std::uint32_t w, sim::Time t) {
        W& s = ws_[w];
        const ComputeProfile& cp = job_.compute_of(w);
        const std::uint32_t i = s.iter;
        record(OpKind::grad, w, i, s.fwd_clock);  // every layer's parameters are current now
        const auto& msgs = plan_.messages();
        // A message's encode kernels run on the device right after the backward layer that completes it, delaying
        // the layers after it (codecs share the GPU with backward); with a compute slowdown, layer by layer on the
        // event clock.
        expect_messages(w);
        if (job_.overlap_slowdown > 0.0 && layers() > 0) {
            engine_.at(t, [this, w] { backward_step(w, layers() - 1); });
            return;
        }
        std::vector<sim::Time> ready(msgs.size());
        for (std::uint32_t l = layers(); l-- > 0;) {
            const sim::Time d = scaled(cp.layers[l].bwd, s.slow.factor);
            env_.timeline.span(
                Timeline::compute(w), [&] { return "bwd " + job_.workload.layers[l].name; }, "backward", t, t + d);
            clocks_[w].busy += d;
            t += d;
            for (std::uint32_t m : by_front_[l]) {
                const sim::Time enc = plan_.work_time(msgs[m].encode, w);
                env_.timeline.span(
                    Timeline::compute(w), [&] { return fmt::format("encode msg{}", m); }, "codec", t, t + enc);
                clocks_[w].busy += enc;
                t += enc;
                ready[m] = t;
            }
        }
        // Gradient messages leave as backward produces them (equal ready times: one event).
        for (std::uint32_t m = 0; m < msgs.size();) {
            const sim::Time at = ready[m];
            std::uint32_t e = m + 1;
            while (e < msgs.size() && ready[e] == at) ++e;
            engine_.at(at, [this, w, i, m, e] {
                for (std::uint32_t k = m; k < e; ++k) message_ready(w, i, k);
            });
            m = e;
        }
        backward_end(w, t);
    }

    void message_ready(std::uint32_t w, std::uint32_t i, std::uint32_t m) { scheduler_->ready(w, i, m); }

    void start_message(std::uint32_t w, std::uint32_t i, std::uint32_t m) {
        clocks_[w].comm_begin(engine_.now());
        ws_[w].msg_start[m] = engine_.now();
        const bool encoded = job_.overlap.overlapped();  // encoded on the device after its backward layer
        const sim::Time enc = encoded ? sim::Time::zero() : plan_.work_time(plan_.messages()[m].encode, w);
        env_.timeline.span(Timeline::comm(w), "encode", "codec", engine_.now(), engine_.now() + enc);
        // Launching the collective (kernel launch, negotiation) costs the transport's overhead.
        const sim::Time launch = job_.collective_overhead;
        env_.timeline.span(Timeline::comm(w), "launch", "communication", engine_.now() + enc,
                           engine_.now() + enc + launch);
        engine_.after(enc + launch, [this, w, i, m] { open_phase(w, i, m, 0); });
    }

    void open_phase(std::uint32_t w, std::uint32_t i, std::uint32_t m, std::uint32_t p) {
        const sim::Time work = plan_.work_time(plan_.messages()[m].phases[p].work_before, w);
        if (work > sim::Time::zero()) {
            env_.timeline.span(Timeline::comm(w), "codec work", "codec", engine_.now(), engine_.now() + work);
            engine_.after(work, [this, w, i, m, p] { round(i, m, p).runner->open(w); });
            return;
        }
        round(i, m, p).runner->open(w);
    }

    static std::uint64_t round_key(std::uint32_t i, std::uint32_t m, std::uint32_t p) {
        return (static_cast<std::uint64_t>(i) << 32) | (static_cast<std::uint64_t>(m) << 3) | p;
    }

    RoundState& round(std::uint32_t i, std::uint32_t m, std::uint32_t p) {
        const std::uint64_t key = round_key(i, m, p);
        auto it = rounds_.find(key);
        if (it != rounds_.end()) return it->second;
        const topo::Collective& c = *plan_.messages()[m].phases[p].collective;
        RoundState& r = rounds_[key];
        r.endpoints_left = c.endpoints();
        const std::uint32_t round_id = i;
        r.runner = comm_.start_round(
            c, [this, i, m, p](std::uint32_t e) { phase_done(i, m, p, e); }, round_id);
        for (std::uint32_t e = job_.workers; e < c.endpoints(); ++e) r.runner->open(e);  // servers are ready
        return r;
    }

    void phase_done(std::uint32_t i, std::uint32_t m, std::uint32_t p, std::uint32_t e) {
        const std::uint64_t key = round_key(i, m, p);
        if (--rounds_[key].endpoints_left == 0)  // the round is still on the stack: drop it later
            engine_.after(sim::Time::zero(), [this, key] { rounds_.erase(key); });
        if (e >= job_.workers) return;
        const Message& msg = plan_.messages()[m];
        if (p + 1 < msg.phases.size()) {
            open_phase(e, i, m, p + 1);
            return;
        }
        const sim::Time dec = plan_.work_time(msg.decode, e);
        env_.timeline.span(Timeline::comm(e), "decode", "codec", engine_.now(), engine_.now() + dec);
        engine_.after(dec, [this, e, i, m] { message_done(e, i, m); });
    }

    void message_done(std::uint32_t w, std::uint32_t i, std::uint32_t m) {
        W& s = ws_[w];
        WorkerClock& c = clocks_[w];
        c.comm_end(engine_.now());
        const Message& msg = plan_.messages()[m];
        env_.timeline.span(
            Timeline::comm(w),
            [&] { return fmt::format("sync it{} msg{} ({:.3g} MB)", i, m, msg.payload_bytes / 1e6); }, "communication",
            s.msg_start[m], engine_.now());
        --s.outstanding;
        scheduler_->done(w, i, m);
        // Layers whose last piece arrived are updated; a forward waiting on them resumes.
        const ComputeProfile& cp = job_.compute_of(w);
        for (std::uint32_t l : msg_layers_[m])
            if (--s.pending[l] == 0) {
                // The update kernel runs on the compute stream, after whatever it holds.
                const sim::Time start = std::max(engine_.now(), s.fwd_clock);
                const sim::Time u = scaled(cp.layers[l].update, s.update_factor);
                env_.timeline.span(
                    Timeline::compute(w), [&] { return "update " + job_.workload.layers[l].name; }, "update", start,
                    start + u);
                c.busy += u;
                s.fwd_clock = start + u;
                s.param_ready[l] = start + u;
                if (s.fwd_waiting && s.fwd_layer == l) advance_forward(w);
            }
        if (--s.msgs_left == 0) {
            ++c.updates;
            record_round(i);
        }
        if (s.iter == job_.iterations && s.outstanding == 0) finish(w);
    }

    // The first worker to finish iteration i's synchronisation records it for all.
    void record_round(std::uint32_t i) {
        if (!schedule_ || recorded_rounds_ > i) return;
        recorded_rounds_ = i + 1;
        schedule_->add(OpKind::sync, 0, all_, i, engine_.now().seconds(), i);
    }

    void finish(std::uint32_t w) {
        sim::Time t = engine_.now();
        for (sim::Time r : ws_[w].param_ready) t = std::max(t, r);
        clocks_[w].finished = t;
    }

    std::vector<W> ws_;
    std::vector<std::vector<std::uint32_t>> msg_layers_;
    std::vector<std::vector<std::uint32_t>> by_front_;  ///< per layer: messages it completes
    std::unique_ptr<MessageScheduler> scheduler_;       ///< credit (models/message_scheduler.hpp)
    std::unordered_map<std::uint64_t, RoundState> rounds_;
    std::uint32_t all_ = 0;
    std::uint32_t recorded_rounds_ = 0;
};

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
// Messages run on the worker's stream one at a time (NCCL), or all at once on a parameter server.
class ReplicatedTrainer final : public TrainerBase {
public:
    explicit ReplicatedTrainer(const TrainerEnv& env)
        : TrainerBase(env, SyncConfig::of(env.job).model_sync), cfg_(SyncConfig::of(env.job)) {
        compile();
        if (schedule_) {
            std::vector<std::uint32_t> everyone(job_.workers);
            for (std::uint32_t w = 0; w < job_.workers; ++w) everyone[w] = w;
            all_ = schedule_->add_set(std::move(everyone));
        }
        program::Executor::Hooks hooks;
        hooks.marked = [this](std::uint32_t w, std::uint32_t i, std::uint32_t id) { marked(w, i, id); };
        hooks.called = [this](std::uint32_t w, std::uint32_t i, std::uint32_t) { called(w, i); };
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
        return sync_result(job_, plan_, cfg_, clocks_, ready_, schedule_, outer_.get());
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
    program::Program program_of(bool sync) const {
        using program::ComputeKind;
        program::Program p;
        const std::uint32_t L = layers(), A = job_.gradient_accumulation;
        const auto& msgs = plan_.messages();
        if (A > 1)
            p.compute(step(ComputeKind::accumulate, 0, 0, fmt::format("micro-batches 1-{} (no_sync)", A - 1), false));
        if (L > 0) p.compute(step(ComputeKind::forward, 0, L - 1, "forward", false));
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
                p.compute(step(ComputeKind::backward, l, l, "backward", true));
                for (std::uint32_t m : by_front[l]) encode(m);
                for (std::uint32_t m : by_front[l]) p.issue(m);
            }
        } else if (gradients && overlap) {
            // Runs of layers up to each message's front layer; each message leaves once encoded.
            std::uint32_t top = L;  // the run's first layer in backward order is top - 1
            for (std::uint32_t l = L; l-- > 0;) {
                if (by_front[l].empty() && l > 0) continue;
                p.compute(step(ComputeKind::backward, l, top - 1, "backward", false));
                top = l;
                for (std::uint32_t m : by_front[l]) {
                    encode(m);
                    p.issue(m);
                }
            }
        } else {
            if (L > 0) p.compute(step(ComputeKind::backward, 0, L - 1, "backward", false));
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
    if (env.job.overlap.priority && env.job.workload.params() > 0) return std::make_unique<PriorityTrainer>(env);
    return std::make_unique<ReplicatedTrainer>(env);
}

}  // namespace ddlsim::models::detail
