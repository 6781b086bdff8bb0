// BSP with priority scheduling, on a driver of its own (models/trainer_sync.cpp dispatches to it).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "models/message_scheduler.hpp"
#include "models/stragglers.hpp"
#include "models/trainer_detail.hpp"

namespace ddlsim::models::detail {
namespace {

// BSP with priority scheduling (P3, Jayarajan et al., SysML 2019; ByteScheduler, Peng et al., SOSP 2019): the one
// scheme that keeps a driver of its own beside the program executor. The compute stream moves on to the next
// iteration's forward when backward ends, while the last iteration's messages still travel; each layer's update
// runs on the compute stream once the last piece of that layer lands, and the next forward of a layer waits for it.
// Messages start by credit, front-most layer first (models/message_scheduler.hpp). The loader allows priority with
// BSP only, with WFBP, without accumulation. SyncBatchNorm's all-reduces, flows on the programs, are here their
// closed form on an idle fabric inside each layer's compute (models/compute.hpp add_batchnorm_sync).
class PriorityTrainer final : public TrainerBase {
public:
    explicit PriorityTrainer(const TrainerEnv& env) : TrainerBase(env, false), ws_(env.job.workers) {
        if (job_.bn_group > 1) {
            profiles_ = job_.worker_compute.empty() ? std::vector<ComputeProfile>{job_.compute} : job_.worker_compute;
            for (ComputeProfile& p : profiles_)
                add_batchnorm_sync(p, job_.workload, job_.batchnorm_cost.latency, job_.batchnorm_cost.seconds_per_byte);
        }
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
        return sync_result(job_, plan_, 1, false, clocks_, ready_, schedule_, nullptr);
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
    /// Worker w's compute, with SyncBatchNorm's waits.
    [[nodiscard]] const ComputeProfile& compute_of(std::uint32_t w) const {
        if (profiles_.empty()) return job_.compute_of(w);
        return profiles_[job_.worker_compute.empty() ? 0 : w];
    }
    std::vector<ComputeProfile> profiles_;  ///< with SyncBatchNorm: each profile with its closed form (else empty)

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
        const ComputeProfile& cp = compute_of(w);
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
        sim::Time d = scaled(compute_of(w).layers[l].bwd, s.slow.factor);
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
        const ComputeProfile& cp = compute_of(w);
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
        const ComputeProfile& cp = compute_of(w);
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

}  // namespace

std::unique_ptr<JobTrainer> make_priority_trainer(const TrainerEnv& env) {
    return std::make_unique<PriorityTrainer>(env);
}

}  // namespace ddlsim::models::detail
