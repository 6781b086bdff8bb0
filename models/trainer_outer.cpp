// DiLoCo's outer steps as the trainers run them (trainer_outer.hpp).
#include "models/trainer_outer.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddlsim::models::detail {

OuterSteps::OuterSteps(const TrainerEnv& env, Comm& comm, std::vector<WorkerClock>& clocks, program::Planner& planner,
                       std::function<void(std::uint32_t)> resume)
    : env_(env),
      job_(env.job),
      comm_(comm),
      clocks_(clocks),
      plan_(env.job, planner),
      resume_(std::move(resume)),
      next_(env.job.workers, 0),
      pending_(env.job.workers),
      waiting_(env.job.workers, 0) {}

bool OuterSteps::step_done(std::uint32_t w, std::uint32_t k) {
    next_[w] = k + 1;
    if (plan_.launches_after(k)) {
        const std::uint32_t launch = plan_.launch_after(k);
        pending_[w].push_back({launch, std::min(k + 1 + plan_.overlap_steps(), job_.iterations), env_.engine.now()});
        clocks_[w].comm_begin(env_.engine.now());
        phase(w, launch, 0);
    }
    waiting_[w] = blocked(w);
    return !waiting_[w];
}

bool OuterSteps::blocked(std::uint32_t w) const {
    return std::any_of(pending_[w].begin(), pending_[w].end(),
                       [&](const Pending& p) { return p.deadline <= next_[w]; });
}

// Worker w's part of outer step `launch`: 0 the all-reduce across islands, 1 the outer update of its slice, 2 the
// all-gather inside its island.
void OuterSteps::phase(std::uint32_t w, std::uint32_t launch, std::uint32_t p) {
    const OuterPlan::Fragment& f = plan_.fragment_of(launch);
    if (p == 0 && f.across) {
        round(launch, 0, plan_.collective(*f.across)).runner->open(w);
        return;
    }
    if (p <= 1) {
        const sim::Time now = env_.engine.now(), u = plan_.update_time(f, w);
        env_.timeline.span(Timeline::comm(w), "outer update", "update", now, now + u);
        clocks_[w].busy += u;
        env_.engine.after(u, [this, w, launch] { phase(w, launch, 2); });
        return;
    }
    if (f.gather) {
        round(launch, 1, plan_.collective(*f.gather)).runner->open(w);
        return;
    }
    done(w, launch);
}

OuterSteps::RoundState& OuterSteps::round(std::uint32_t launch, std::uint32_t part, const topo::Collective& c) {
    const std::uint64_t key = (static_cast<std::uint64_t>(launch) << 1) | part;
    auto it = rounds_.find(key);
    if (it != rounds_.end()) return it->second;
    RoundState& r = rounds_[key];
    r.endpoints_left = c.endpoints();
    r.runner = comm_.start_round(
        c,
        [this, launch, part, key](std::uint32_t e) {
            if (--rounds_[key].endpoints_left == 0)  // the round is still on the stack: drop it later
                env_.engine.after(sim::Time::zero(), [this, key] { rounds_.erase(key); });
            if (part == 0) {
                phase(e, launch, 1);
            } else {
                done(e, launch);
            }
        },
        launch);
    return r;
}

void OuterSteps::done(std::uint32_t w, std::uint32_t launch) {
    clocks_[w].comm_end(env_.engine.now());
    auto& mine = pending_[w];
    const auto it = std::find_if(mine.begin(), mine.end(), [&](const Pending& p) { return p.launch == launch; });
    env_.timeline.span(Timeline::comm(w),
                       fmt::format("outer step {} ({:.3g} MB)", launch, plan_.fragment_of(launch).bytes / 1e6),
                       "communication", it->start, env_.engine.now());
    mine.erase(it);
    if (waiting_[w] && !blocked(w)) {
        waiting_[w] = 0;
        resume_(w);
    }
}

void OuterSteps::add_to(JobResult& r) const {
    const double n = job_.iterations;
    r.bytes_on_wire_per_iteration += plan_.wire_bytes(job_.iterations) / n;
    r.machine_bytes_per_iteration += plan_.machine_bytes(job_.iterations) / n;
    r.collectives_per_iteration += plan_.collectives(job_.iterations) / n;
    r.rounds = plan_.launches(job_.iterations);
    r.model_versions = r.rounds;
}

}  // namespace ddlsim::models::detail
