#include "models/program/executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/comm_plan.hpp"

namespace ddlsim::models::program {

Executor::Executor(const ProgramSet& programs, Planner& planner, detail::Comm& comm,
                   std::vector<detail::WorkerClock>& clocks, const TrainingJob& job, detail::Timeline timeline,
                   Hooks hooks)
    : set_(programs),
      planner_(planner),
      comm_(comm),
      engine_(comm.engine()),
      clocks_(clocks),
      job_(job),
      timeline_(timeline),
      hooks_(std::move(hooks)),
      reps_(comm.representatives()),
      ws_(job.workers) {
    if (set_.programs.empty()) throw std::logic_error("executor: no program");
    if (set_.calls.size() >= (std::size_t{1} << 28)) throw std::logic_error("executor: at most 2^28 calls");
    std::size_t streams = 1;
    for (const Call& c : set_.calls) {
        if (c.phases.empty() || c.phases.size() > 16) throw std::logic_error("executor: a call holds 1 to 16 phases");
        streams = std::max<std::size_t>(streams, c.stream + 1U);
    }
    for (W& s : ws_) s.lanes.resize(streams - 1);
    buckets_ = static_cast<std::uint32_t>(streams) + 1;
    waited_.assign(static_cast<std::size_t>(job_.workers) * buckets_, sim::Time::zero());
    // The ranks that join each call: those whose program issues it (every rank, unless ranks run different
    // programs: a pipeline's stages).
    std::vector<std::vector<char>> issues(set_.programs.size(), std::vector<char>(set_.calls.size(), 0));
    for (std::size_t p = 0; p < set_.programs.size(); ++p) {
        std::uint32_t n = 0;
        for (const Instr& in : set_.programs[p].instrs)
            if (in.kind == Instr::Kind::issue) {
                ++n;
                issues[p][in.index] = 1;
            }
        issued_.push_back(n);
    }
    // Without a map from rank to program every rank runs each program in turn (a cycle): all join what any issues.
    joiners_.assign(set_.calls.size(), 0);
    for (std::size_t c = 0; c < set_.calls.size(); ++c) {
        if (!set_.program_of.empty()) {
            for (std::uint32_t r = 0; r < running(); ++r) joiners_[c] += issues[set_.program_of[r]][c] != 0 ? 1 : 0;
            continue;
        }
        bool any = false;
        for (const auto& p : issues) any = any || p[c] != 0;
        joiners_[c] = any ? running() : 0;
    }
}

sim::Time Executor::waited(std::uint32_t w, std::uint32_t stream) const {
    // The last bucket is the receives'; a stream no call uses has none.
    const std::uint32_t b = stream == kReceives ? buckets_ - 1 : stream;
    return b < buckets_ && (stream == kReceives || b + 1 < buckets_)
               ? waited_[static_cast<std::size_t>(w) * buckets_ + b]
               : sim::Time::zero();
}

// Rank w's compute stream starts waiting on `what` (a stream, kReceives), or stops waiting (kNothing).
void Executor::wait_on(std::uint32_t w, std::uint8_t what) {
    W& s = ws_[w];
    const sim::Time now = engine_.now();
    if (s.waiting_on != kNothing) {
        const std::uint32_t b = s.waiting_on == kReceives ? buckets_ - 1 : s.waiting_on;
        waited_[static_cast<std::size_t>(w) * buckets_ + b] += now - s.idle_since;
    }
    s.waiting_on = what;
    s.idle_since = now;
}

void Executor::start() {
    for (std::uint32_t w = 0; w < running(); ++w) begin_iteration(w);
}

bool Executor::local(const CommOp& op) {
    if (reps_ == 0) return false;
    const auto [it, fresh] = local_.try_emplace(op.group, true);
    if (fresh)
        for (const auto& part : planner_.parts(op.group)) {
            const auto images = std::count_if(part.begin(), part.end(), [&](std::uint32_t r) { return r >= reps_; });
            if (images > 0 && images < static_cast<std::ptrdiff_t>(part.size())) {
                it->second = false;
                break;
            }
        }
    return it->second;
}

sim::Time Executor::compute_time(const TrainingJob& job, std::uint32_t w, const Compute& c) {
    const ComputeProfile& cp = job.compute_of(w);
    sim::Time d;
    switch (c.kind) {
        case ComputeKind::accumulate: d = cp.accumulation; break;
        case ComputeKind::update: d = scaled(cp.update, c.fraction); break;
        case ComputeKind::codec: d = job.codec_time(c.work, w); break;
        case ComputeKind::forward:
        case ComputeKind::backward:
        case ComputeKind::backward_input:
        case ComputeKind::backward_weight:
            for (std::uint32_t l = c.first; l <= c.last; ++l) d += pass_time(cp.layers[l], c.kind, c.pieces);
            break;
    }
    return d;
}

sim::Time Executor::pass_time(const LayerTimes& t, ComputeKind kind, std::uint8_t pieces) {
    sim::Time whole;
    switch (kind) {
        case ComputeKind::forward: whole = t.fwd; break;
        case ComputeKind::backward_input: whole = t.bwd - t.wgrad; break;
        case ComputeKind::backward_weight: whole = t.wgrad; break;
        default: whole = t.bwd; break;
    }
    if (pieces == Compute::kWhole) return whole;
    const double share = ((pieces & Compute::kHead) != 0 ? t.head : 0.0) +
                         ((pieces & Compute::kBody) != 0 ? std::max(0.0, 1.0 - t.head - t.tail) : 0.0) +
                         ((pieces & Compute::kTail) != 0 ? t.tail : 0.0);
    return scaled(whole, share);
}

void Executor::begin_iteration(std::uint32_t w) {
    W& s = ws_[w];
    if (s.iter == job_.iterations) {
        clocks_[w].finished = engine_.now();
        // A representative's images ran what it ran.
        for (std::uint32_t image = w + reps_; reps_ != 0 && image < job_.workers; image += reps_) {
            clocks_[image] = clocks_[w];
            std::copy_n(waited_.begin() + static_cast<std::ptrdiff_t>(w) * buckets_, buckets_,
                        waited_.begin() + static_cast<std::ptrdiff_t>(image) * buckets_);
        }
        return;
    }
    s.pc = 0;
    s.program = set_.program_index(w, s.iter);
    s.done.assign(set_.calls.size(), false);
    // Only a timeline draws a call from its start: 8 bytes per call and rank (31 MB for an HSDP step of Llama 3 70B
    // on 16,384 ranks) that a run without one does not hold.
    if (timeline_.trace != nullptr && s.call_start.size() != set_.calls.size())
        s.call_start.assign(set_.calls.size(), sim::Time::zero());
    s.calls_left = issued_[s.program];
    s.sends_left = 0;
    s.slow = straggler(job_.stragglers, job_.seed, w, s.iter);
    if (hooks_.began) hooks_.began(w, s.iter, engine_.now() + s.slow.delay);
    clocks_[w].busy += s.slow.delay;
    if (s.slow.delay > sim::Time::zero()) {
        engine_.after(s.slow.delay, [this, w] { advance(w); });
        return;
    }
    advance(w);
}

bool Executor::comm_active(std::uint32_t w) const {
    const W& s = ws_[w];
    // Calls waiting on its stream, or any of its traffic in flight: calls, sends, and what the trainer sends itself
    // (DiLoCo's outer steps) — NCCL kernels share the GPU with compute.
    return clocks_[w].in_flight > 0 || s.lane0.head < s.lane0.queue.size() ||
           std::any_of(s.lanes.begin(), s.lanes.end(), [](const Lane& l) { return l.head < l.queue.size(); });
}

// The compute's spans from `start`: one, or one per layer.
void Executor::span_compute(std::uint32_t w, const Compute& c, sim::Time start, bool slowed) const {
    const char* cat = c.kind == ComputeKind::forward  ? "forward"
                      : c.kind == ComputeKind::update ? "update"
                      : c.kind == ComputeKind::codec  ? "codec"
                                                      : "backward";
    const char* suffix = slowed ? " (slowed by communication)" : "";
    if (!c.per_layer) {
        timeline_.span(
            detail::Timeline::compute(w), [&] { return c.label + suffix; }, cat, start,
            start + step_time(w, c, slowed));
        return;
    }
    const ComputeProfile& cp = job_.compute_of(w);
    const bool fwd = c.kind == ComputeKind::forward;
    const char* prefix = fwd ? "fwd " : c.kind == ComputeKind::backward_weight ? "wgrad " : "bwd ";
    for (std::uint32_t k = c.first; k <= c.last; ++k) {
        const std::uint32_t l = fwd ? k : c.last - (k - c.first);  // backward runs from the last layer
        const sim::Time d = layer_time(pass_time(cp.layers[l], c.kind, c.pieces), w, slowed);
        timeline_.span(
            detail::Timeline::compute(w), [&] { return prefix + job_.workload.layers[l].name + suffix; }, cat, start,
            start + d);
        start += d;
    }
}

sim::Time Executor::layer_time(sim::Time t, std::uint32_t w, bool slowed) const {
    sim::Time d = scaled(t, ws_[w].slow.factor);
    return slowed ? scaled(d, 1.0 + job_.overlap_slowdown) : d;
}

// How long `c` runs on rank w now: the straggler's factor (not on codec kernels) and the stretch beside communication.
sim::Time Executor::step_time(std::uint32_t w, const Compute& c, bool slowed) const {
    if (c.kind == ComputeKind::codec) return duration(w, c);
    if (!c.per_layer) return layer_time(duration(w, c), w, slowed);
    const ComputeProfile& cp = job_.compute_of(w);
    sim::Time d;
    for (std::uint32_t l = c.first; l <= c.last; ++l)
        d += layer_time(pass_time(cp.layers[l], c.kind, c.pieces), w, slowed);
    return d;
}

// Runs rank w's instructions from its current one until it must wait.
void Executor::advance(std::uint32_t w) {
    W& s = ws_[w];
    const Program& prog = set_.programs[s.program];
    while (s.pc < prog.instrs.size()) {
        const Instr& in = prog.instrs[s.pc];
        switch (in.kind) {
            case Instr::Kind::issue:
                ++s.pc;
                issue(w, in.index);
                continue;
            case Instr::Kind::send:
                ++s.pc;
                send(w, in);
                continue;
            case Instr::Kind::wait:
                if (!s.done[in.index]) {
                    s.idle = true;
                    wait_on(w, set_.calls[in.index].stream);
                    return;
                }
                ++s.pc;
                continue;
            case Instr::Kind::recv: {
                auto it = arrived_.find({s.iter, in.peer_of(w), w, in.tag});
                if (it == arrived_.end()) {
                    s.idle = true;
                    wait_on(w, static_cast<std::uint8_t>(kReceives));
                    return;
                }
                arrived_.erase(it);
                ++s.pc;
                continue;
            }
            case Instr::Kind::mark:
                ++s.pc;
                if (hooks_.marked) hooks_.marked(w, s.iter, in.index);
                continue;
            case Instr::Kind::compute: break;
        }
        const Compute& c = prog.computes[in.index];
        s.idle = false;
        if (s.waiting_on != kNothing) wait_on(w, kNothing);
        if (hooks_.computing) hooks_.computing(w, s.iter, c);
        const bool slowed = c.slowable && c.kind != ComputeKind::codec && job_.overlap_slowdown > 0.0 && comm_active(w);
        const sim::Time d = step_time(w, c, slowed);
        const sim::Time now = engine_.now();
        clocks_[w].busy += d;
        if (c.pieces != Compute::kWhole) {
            // A layer's GEMMs beside their tensor-parallel collective: slowed while the rank communicates, at full
            // speed once it stops (piece_unslowed); drawn when it ends.
            s.piece_start = now;
            s.piece_until = now + d;
            s.piece_running = true;
            s.piece_slowed = slowed;
            s.piece_end = engine_.at(now + d, [this, w] { compute_done(w); });
            return;
        }
        span_compute(w, c, now, slowed);
        engine_.at(now + d, [this, w] { compute_done(w); });
        return;
    }
    s.idle = s.calls_left > 0 || s.sends_left > 0;  // the iteration's last calls or sends still travel
    if (s.idle) {
        wait_on(w, s.calls_left > 0 ? std::uint8_t{0} : static_cast<std::uint8_t>(kReceives));
        return;
    }
    if (s.waiting_on != kNothing) wait_on(w, kNothing);
    end_iteration(w);
}

void Executor::compute_done(std::uint32_t w) {
    W& s = ws_[w];
    if (s.piece_running) {
        const Program& prog = set_.programs[s.program];
        const Compute& c = prog.computes[prog.instrs[s.pc].index];
        timeline_.span(
            detail::Timeline::compute(w),
            [&] {
                return std::string(c.kind == ComputeKind::forward ? "fwd " : "bwd ") +
                       job_.workload.layers[c.first].name + (s.piece_slowed ? " (slowed by communication)" : "");
            },
            c.kind == ComputeKind::forward ? "forward" : "backward", s.piece_start, engine_.now());
        s.piece_running = s.piece_slowed = false;
        s.piece_end = {};
    }
    ++s.pc;
    advance(w);
}

// Rank w's communication stopped: a piece running slowed beside it runs its rest at full speed.
void Executor::piece_unslowed(std::uint32_t w) {
    W& s = ws_[w];
    if (!s.piece_slowed || comm_active(w)) return;
    const sim::Time now = engine_.now();
    const sim::Time left = s.piece_until - now;
    const sim::Time fast = scaled(left, 1.0 / (1.0 + job_.overlap_slowdown));
    if (!engine_.cancel(s.piece_end)) return;
    clocks_[w].busy -= left - fast;
    s.piece_until = now + fast;
    s.piece_slowed = false;
    s.piece_end = engine_.at(s.piece_until, [this, w] { compute_done(w); });
}

void Executor::end_iteration(std::uint32_t w) {
    W& s = ws_[w];
    ++clocks_[w].iterations;
    if (set_.count_updates) ++clocks_[w].updates;
    const std::uint32_t i = s.iter++;
    if (hooks_.ended && !hooks_.ended(w, i)) return;
    begin_iteration(w);
}

void Executor::issue(std::uint32_t w, std::uint32_t call) {
    const std::uint8_t stream = set_.calls[call].stream;
    ws_[w].lane(stream).queue.push_back(call);
    pump(w, stream);
}

// Starts rank w's queued calls of one communicator: the next one when none is in flight (fifo), or all of them
// (concurrent).
void Executor::pump(std::uint32_t w, std::uint8_t stream) {
    Lane& l = ws_[w].lane(stream);
    while (l.head < l.queue.size() && (set_.stream == ProgramSet::Stream::concurrent || l.in_flight == 0)) {
        const std::uint32_t call = l.queue[l.head++];
        if (l.head == l.queue.size()) {
            l.queue.clear();
            l.head = 0;
        }
        ++l.in_flight;
        start_call(w, call);
    }
}

// The call's encode and launch (the transport's per-collective overhead), then its first phase.
void Executor::start_call(std::uint32_t w, std::uint32_t call) {
    W& s = ws_[w];
    const sim::Time now = engine_.now();
    if (!s.call_start.empty()) s.call_start[call] = now;
    clocks_[w].comm_begin(now);
    const Call& c = set_.calls[call];
    const sim::Time enc = job_.codec_time(c.encode, w), launch = c.launch.value_or(job_.collective_overhead);
    if (set_.comm_spans) {
        timeline_.span(detail::Timeline::comm(w), "encode", "codec", now, now + enc);
        timeline_.span(detail::Timeline::comm(w), "launch", "communication", now + enc, now + enc + launch);
    }
    engine_.after(enc + launch,
                  [this, at = pack(w, call, 0)] { open_phase(rank_of(at), ws_[rank_of(at)].iter, call_of(at), 0); });
}

void Executor::open_phase(std::uint32_t w, std::uint32_t i, std::uint32_t call, std::uint32_t p) {
    const sim::Time before = job_.codec_time(set_.calls[call].phases[p].before, w);
    if (before > sim::Time::zero()) {
        if (set_.comm_spans)
            timeline_.span(detail::Timeline::comm(w), "codec work", "codec", engine_.now(), engine_.now() + before);
        engine_.after(before, [this, at = pack(w, call, p)] {
            round(ws_[rank_of(at)].iter, call_of(at), phase_of(at)).runner->open(rank_of(at));
        });
        return;
    }
    round(i, call, p).runner->open(w);
}

Executor::RoundState& Executor::round(std::uint32_t i, std::uint32_t call, std::uint32_t p) {
    const std::uint64_t key = round_key(i, call, p);
    auto it = rounds_.find(key);
    if (it != rounds_.end()) return it->second;
    const topo::Collective& c = planner_.collective(set_.calls[call].phases[p]);
    RoundState& r = rounds_[key];
    r.endpoints_left = joiners_[call] + (c.endpoints() - std::min(c.endpoints(), job_.workers));
    r.runner = comm_.start_round(
        c, [this, i, call, p](std::uint32_t e) { phase_done(i, call, p, e); }, i / set_.round_period,
        local(set_.calls[call].phases[p]));
    for (std::uint32_t e = job_.workers; e < c.endpoints(); ++e) r.runner->open(e);  // servers, switches: ready
    return r;
}

void Executor::phase_done(std::uint32_t i, std::uint32_t call, std::uint32_t p, std::uint32_t e) {
    const std::uint64_t key = round_key(i, call, p);
    if (--rounds_[key].endpoints_left == 0)  // the round is still on the stack: drop it later
        engine_.after(sim::Time::zero(), [this, key] { rounds_.erase(key); });
    if (e >= job_.workers) return;  // an endpoint that is no rank (a server, a switch)
    const Call& c = set_.calls[call];
    const bool last = p + 1 == c.phases.size();
    sim::Time after = job_.codec_time(c.phases[p].after, e);
    if (last) {
        const sim::Time dec = job_.codec_time(c.decode, e);
        if (set_.comm_spans)
            timeline_.span(detail::Timeline::comm(e), "decode", "codec", engine_.now(), engine_.now() + dec);
        after += dec;
    }
    if (after > sim::Time::zero()) {
        engine_.after(after, [this, at = pack(e, call, p)] { phase_ended(rank_of(at), call_of(at), phase_of(at)); });
        return;
    }
    phase_ended(e, call, p);
}

// Rank w's phase p of `call` and the codec work after it are done: the next phase, or the call.
void Executor::phase_ended(std::uint32_t w, std::uint32_t call, std::uint32_t p) {
    if (p + 1 == set_.calls[call].phases.size()) {
        call_done(w, call);
        return;
    }
    open_phase(w, ws_[w].iter, call, p + 1);
}

void Executor::call_done(std::uint32_t w, std::uint32_t call) {
    W& s = ws_[w];
    clocks_[w].comm_end(engine_.now());
    const Call& c = set_.calls[call];
    if (!s.call_start.empty())
        timeline_.span(
            detail::Timeline::comm(w), [&] { return fmt::format("{}it{} {}", c.verb, s.iter, c.label); },
            "communication", s.call_start[call], engine_.now());
    --s.lane(c.stream).in_flight;
    s.done[call] = true;
    --s.calls_left;
    pump(w, c.stream);
    piece_unslowed(w);
    if (hooks_.called) hooks_.called(w, s.iter, call);
    if (s.idle) advance(w);
}

void Executor::send(std::uint32_t w, const Instr& in) {
    W& s = ws_[w];
    ++s.sends_left;
    clocks_[w].comm_begin(engine_.now());
    const std::uint32_t i = s.iter, to = in.peer_of(w), tag = in.tag;
    const sim::Time start = engine_.now();
    comm_.send(w, to, sim::Bytes{in.bytes}, [this, w, i, to, tag, start] {
        W& sender = ws_[w];
        clocks_[w].comm_end(engine_.now());
        timeline_.span(
            detail::Timeline::comm(w), [&] { return fmt::format("it{} send to {} (tag {})", i, to, tag); },
            "communication", start, engine_.now());
        arrived_[{i, w, to, tag}] = 1;
        --sender.sends_left;
        piece_unslowed(w);
        if (sender.idle) advance(w);
        if (to != w && ws_[to].idle) advance(to);
    });
}

}  // namespace ddlsim::models::program
