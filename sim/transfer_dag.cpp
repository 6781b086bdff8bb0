#include "sim/transfer_dag.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace ddlsim::sim {

std::uint32_t Plan::add(std::uint32_t src, std::uint32_t dst, Bytes bytes, std::span<const std::uint32_t> after) {
    const auto index = static_cast<std::uint32_t>(steps_.size());
    for (std::uint32_t d : after)
        if (d >= index) throw std::logic_error("plan step depends on a later step");
    steps_.push_back(PlanStep{src, dst, bytes, Time::zero()});
    if (!shares_.empty()) shares_.push_back(1.0);
    if (!follows_.empty()) follows_.push_back(kNoStep);
    after_.insert(after_.end(), after.begin(), after.end());
    after_offsets_.push_back(static_cast<std::uint32_t>(after_.size()));
    sealed_ = false;
    return index;
}

std::uint32_t Plan::add_work(std::uint32_t at, Time work, std::span<const std::uint32_t> after) {
    const std::uint32_t s = add(at, at, Bytes{0.0}, after);
    steps_[s].work = work;
    return s;
}

void Plan::set_share(std::uint32_t s, double share) {
    if (s >= steps_.size()) throw std::logic_error("plan share names a step outside the plan");
    if (!(share > 0.0) || !std::isfinite(share)) throw std::logic_error("a plan step's share must be positive");
    if (shares_.empty()) shares_.assign(steps_.size(), 1.0);
    shares_[s] = share;
}

void Plan::set_follows(std::uint32_t s, std::uint32_t prev) {
    if (s >= steps_.size() || prev >= s) throw std::logic_error("a stream's message must follow an earlier step");
    const auto deps = after(s);
    if (std::find(deps.begin(), deps.end(), prev) == deps.end())
        throw std::logic_error("a stream's message must come after the message it follows");
    if (steps_[s].src != steps_[prev].src || steps_[s].dst != steps_[prev].dst || steps_[s].src == steps_[s].dst)
        throw std::logic_error("a stream's messages are transfers between the same endpoints");
    if (follows_.empty()) follows_.assign(steps_.size(), kNoStep);
    follows_[s] = prev;
}

void Plan::seal() {
    dependent_offsets_.assign(steps_.size() + 1, 0);
    for (std::uint32_t d : after_) ++dependent_offsets_[d + 1];
    for (std::size_t s = 0; s < steps_.size(); ++s) dependent_offsets_[s + 1] += dependent_offsets_[s];
    dependents_.resize(after_.size());
    std::vector<std::uint32_t> fill(dependent_offsets_.begin(), dependent_offsets_.end() - 1);
    for (std::uint32_t s = 0; s < steps_.size(); ++s)
        for (std::uint32_t d : after(s)) dependents_[fill[d]++] = s;
    sealed_ = true;
}

std::span<const std::uint32_t> Plan::after(std::size_t s) const {
    return {after_.data() + after_offsets_[s], after_offsets_[s + 1] - after_offsets_[s]};
}

std::span<const std::uint32_t> Plan::dependents(std::size_t s) const {
    return {dependents_.data() + dependent_offsets_[s], dependent_offsets_[s + 1] - dependent_offsets_[s]};
}

double Plan::transfer_bytes() const {
    double total = 0.0;
    for (const auto& s : steps_)
        if (s.src != s.dst) total += s.bytes.value();
    return total;
}

Time alpha_beta_time(const Plan& plan, const PathCostLookup& cost) {
    std::vector<std::uint32_t> level(plan.size(), 0);
    std::uint32_t levels = 0;
    for (std::size_t s = 0; s < plan.size(); ++s) {
        for (std::uint32_t d : plan.after(s)) level[s] = std::max(level[s], level[d] + 1);
        levels = std::max(levels, level[s] + 1);
    }
    struct Level {
        double latency = 0.0;
        double work = 0.0;
    };
    std::vector<Level> per_level(levels);
    // Serialisation time per (level, endpoint), out and in; allocated only for levels with transfers.
    std::vector<std::vector<double>> out_time(levels), in_time(levels);
    for (std::size_t s = 0; s < plan.size(); ++s) {
        const PlanStep& step = plan.step(s);
        Level& lv = per_level[level[s]];
        if (step.src == step.dst) {
            lv.work = std::max(lv.work, step.work.seconds());
            continue;
        }
        const PathCost c = cost(step.src, step.dst);
        if (c.local) continue;
        lv.latency = std::max(lv.latency, c.latency.seconds());
        auto& out = out_time[level[s]];
        auto& in = in_time[level[s]];
        if (out.empty()) {
            out.assign(plan.endpoints, 0.0);
            in.assign(plan.endpoints, 0.0);
        }
        const double t = step.bytes.value() / c.bandwidth.bytes_per_s();
        out[step.src] += t;
        in[step.dst] += t;
    }
    double total = 0.0;
    for (std::uint32_t l = 0; l < levels; ++l) {
        double serial = 0.0;
        for (double t : out_time[l]) serial = std::max(serial, t);
        for (double t : in_time[l]) serial = std::max(serial, t);
        const double transfer = serial > 0.0 || per_level[l].latency > 0.0 ? per_level[l].latency + serial : 0.0;
        total += std::max(per_level[l].work, transfer);
    }
    return Time::seconds(total);
}

DagRunner::DagRunner(Engine& engine, Network& network, const Plan& plan, RouteLookup routes, EndpointDone on_done)
    : engine_(engine),
      network_(network),
      plan_(plan),
      routes_(std::move(routes)),
      on_done_(std::move(on_done)),
      deps_left_(plan.size(), 0),
      endpoint_steps_left_(plan.endpoints, 0),
      gate_open_(plan.endpoints, 0),
      waiting_(plan.endpoints),
      started_(plan.size(), 0),
      steps_left_(plan.size()) {
    if (!plan.sealed()) throw std::logic_error("a plan must be sealed before it runs");
    if (plan.has_streams()) {
        finished_at_.assign(plan.size(), Time::zero());
        gate_opened_.assign(plan.endpoints, Time::zero());
    }
    for (std::uint32_t s = 0; s < plan.size(); ++s) {
        const PlanStep& step = plan.step(s);
        if (step.src >= plan.endpoints || step.dst >= plan.endpoints)
            throw std::logic_error("plan step names an endpoint outside the plan");
        deps_left_[s] = static_cast<std::uint32_t>(plan.after(s).size());
        if (deps_left_[s] == 0) waiting_[step.src].push_back(s);
        ++endpoint_steps_left_[step.src];
        if (step.dst != step.src) ++endpoint_steps_left_[step.dst];
    }
}

void DagRunner::open(std::uint32_t e) {
    if (gate_open_[e]) return;
    gate_open_[e] = 1;
    if (!gate_opened_.empty()) gate_opened_[e] = engine_.now();
    if (endpoint_steps_left_[e] == 0) {
        on_done_(e);
        return;
    }
    std::vector<std::uint32_t> ready = std::move(waiting_[e]);
    waiting_[e].clear();
    for (std::uint32_t s : ready) try_start(s);
}

void DagRunner::try_start(std::uint32_t s) {
    const PlanStep& step = plan_.step(s);
    if (started_[s] || deps_left_[s] != 0) return;
    if (!gate_open_[step.src]) {
        waiting_[step.src].push_back(s);
        return;
    }
    started_[s] = 1;
    if (step.src == step.dst) {
        engine_.after(step.work, [this, s] { complete(s); });
    } else {
        Time paid = Time::zero();
        if (const std::uint32_t prev = plan_.follows(s); prev != Plan::kNoStep) {
            // The sender had this message ready once its other dependencies and its gate were: since then the
            // route's latency has been running behind `prev`'s bytes.
            Time ready = gate_opened_[step.src];
            for (std::uint32_t d : plan_.after(s))
                if (d != prev) ready = std::max(ready, finished_at_[d]);
            paid = engine_.now() - std::min(ready, engine_.now());
        }
        network_.start(
            routes_(step.src, step.dst), step.bytes, [this, s] { complete(s); }, plan_.share(s), paid);
    }
}

void DagRunner::complete(std::uint32_t s) {
    --steps_left_;
    if (!finished_at_.empty()) finished_at_[s] = engine_.now();
    const PlanStep& step = plan_.step(s);
    for (std::uint32_t d : plan_.dependents(s))
        if (--deps_left_[d] == 0) try_start(d);
    touch_done(step.src);
    if (step.dst != step.src) touch_done(step.dst);
}

void DagRunner::touch_done(std::uint32_t e) {
    if (--endpoint_steps_left_[e] == 0 && gate_open_[e]) on_done_(e);
}

}  // namespace ddlsim::sim
