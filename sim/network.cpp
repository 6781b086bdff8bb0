#include "sim/network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace ddlsim::sim {

LinkIndex Network::add_link(LinkSpec spec) {
    if (!(spec.bandwidth.bytes_per_s() > 0.0) || !std::isfinite(spec.bandwidth.bytes_per_s()))
        throw std::invalid_argument("link bandwidth must be positive and finite");
    if (!(spec.flow_cap > 0.0)) throw std::invalid_argument("link flow cap must be positive");
    links_.push_back(Link{spec, {}, {}, 0});
    local_index_.push_back(0);
    return static_cast<LinkIndex>(links_.size() - 1);
}

Time Network::latency(const Route& route) const {
    Time t;
    Time overhead;
    for (LinkIndex l : route) {
        if ((l & kWeight) != 0) continue;  // a weight (see start()), not another hop
        t += links_[l].spec.latency;
        overhead = std::max(overhead, links_[l].spec.overhead);
    }
    return t + overhead;
}

double Network::flow_cap(const Route& route) const {
    double cap = std::numeric_limits<double>::infinity();
    for (LinkIndex l : route)
        if ((l & kWeight) == 0) cap = std::min(cap, links_[l].spec.flow_cap);
    return cap;
}

void Network::start(const Route& route, Bytes bytes, Callback on_done, double share, Time latency_paid) {
    if (!(share > 0.0) || !std::isfinite(share)) throw std::invalid_argument("a transfer's share must be positive");
    ++started_;
    if (route.empty()) {
        engine_.after(Time::zero(), std::move(on_done));
        return;
    }
    std::uint32_t t = 0;
    if (!free_.empty()) {
        t = free_.back();
        free_.pop_back();
    } else {
        t = static_cast<std::uint32_t>(transfers_.size());
        transfers_.emplace_back();
    }
    Transfer& x = transfers_[t];
    x.route.clear();
    x.weights.clear();
    for (LinkIndex l : route) {
        if ((l & kWeight) == 0) {
            x.route.push_back(l);
            continue;
        }
        if (x.route.empty()) throw std::invalid_argument("a route's weight must follow a link");
        if (x.weights.empty()) x.weights.assign(x.route.size(), 1.0);
        x.weights.resize(x.route.size(), 1.0);
        x.weights.back() = static_cast<double>(l - kWeight);
    }
    if (!x.weights.empty()) x.weights.resize(x.route.size(), 1.0);
    x.remaining = bytes.value();
    x.bytes = bytes.value();
    x.rate = 0.0;
    x.share = share;
    x.cap = flow_cap(route);
    x.started = engine_.now();
    x.on_done = std::move(on_done);
    x.live = true;
    for (std::size_t i = 0; i < x.route.size(); ++i) {
        const double w = x.weights.empty() ? 1.0 : x.weights[i];
        links_[x.route[i]].stats.bytes += w * bytes.value();
        links_[x.route[i]].stats.transfers += static_cast<std::uint64_t>(w);
    }
    const Time wait = latency(route);
    engine_.after(latency_paid >= wait ? Time::zero() : wait - latency_paid, [this, t] { activate(t); });
}

void Network::activate(std::uint32_t t) {
    Transfer& x = transfers_[t];
    x.updated = engine_.now();
    for (LinkIndex l : x.route) links_[l].flows.push_back(t);
    ++active_count_;
    mark_dirty(x.route);
}

void Network::mark_dirty(const Route& route) {
    dirty_.insert(dirty_.end(), route.begin(), route.end());
    if (resolve_pending_) return;
    resolve_pending_ = true;
    engine_.after(Time::zero(), [this] { resolve_dirty(); });
}

void Network::resolve_dirty() {
    resolve_pending_ = false;
    Route seeds;
    seeds.swap(dirty_);
    resolve_from(seeds);
}

void Network::finish(std::uint32_t t) {
    Transfer& x = transfers_[t];
#ifdef DDLSIM_INVARIANTS
    // Every byte delivered exactly once: what is left at the completion event is rounding only.
    if (!x.live) throw std::logic_error("network invariant: a transfer finished twice");
    const double left = x.remaining - x.rate * (engine_.now() - x.updated).seconds();
    // Completion times are rounded to the picosecond: allow what one picosecond at this rate moves.
    if (std::abs(left) > 1e-6 * x.bytes + x.rate * 1e-12 + 1e-9)
        throw std::logic_error("network invariant: a transfer finished with " + std::to_string(left) + " of " +
                               std::to_string(x.bytes) + " bytes undelivered");
#endif
    for (LinkIndex l : x.route) {
        auto& flows = links_[l].flows;
        for (std::size_t i = 0; i < flows.size(); ++i)
            if (flows[i] == t) {
                flows[i] = flows.back();
                flows.pop_back();
                break;
            }
    }
    --active_count_;
    if (observer_) observer_(x.route, x.bytes, x.started, engine_.now());
    Callback done = std::move(x.on_done);
    x.on_done = nullptr;
    x.live = false;
    x.completion = {};
    mark_dirty(x.route);
    x.route.clear();
    free_.push_back(t);
    done();
}

// Finds the component of active transfers reachable from `seeds` through shared
// links, solves max-min on it, and reschedules transfers whose rate changed.
void Network::resolve_from(const Route& seeds) {
    if (++epoch_ == 0) epoch_ = 1;
    comp_flows_.clear();
    comp_links_.clear();
    auto visit_link = [&](LinkIndex l) {
        if (links_[l].mark == epoch_) return;
        links_[l].mark = epoch_;
        comp_links_.push_back(l);
    };
    for (LinkIndex l : seeds) visit_link(l);
    for (std::size_t i = 0; i < comp_links_.size(); ++i) {
        for (std::uint32_t f : links_[comp_links_[i]].flows) {
            if (transfers_[f].mark == epoch_) continue;
            transfers_[f].mark = epoch_;
            comp_flows_.push_back(f);
            for (LinkIndex l : transfers_[f].route) visit_link(l);
        }
    }
    if (comp_flows_.empty()) return;

    problem_.clear();
    for (std::size_t i = 0; i < comp_links_.size(); ++i) {
        local_index_[comp_links_[i]] = static_cast<std::uint32_t>(i);
        problem_.capacity.push_back(links_[comp_links_[i]].spec.bandwidth.bytes_per_s());
    }
    for (std::uint32_t f : comp_flows_) {
        local_route_.clear();
        for (LinkIndex l : transfers_[f].route) local_route_.push_back(local_index_[l]);
        const Transfer& x = transfers_[f];
        if (x.share == 1.0) {
            problem_.add_flow(local_route_, x.cap, x.weights);
            continue;
        }
        share_weights_.assign(x.route.size(), x.share);
        for (std::size_t k = 0; k < x.weights.size(); ++k) share_weights_[k] *= x.weights[k];
        problem_.add_flow(local_route_, x.cap, share_weights_);
    }
    solver_.solve(problem_, rates_);
#ifdef DDLSIM_INVARIANTS
    // No link carries more than its capacity.
    std::vector<double>& load = rate_load_;
    load.assign(comp_links_.size(), 0.0);
    for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
        const Transfer& x = transfers_[comp_flows_[i]];
        for (std::size_t k = 0; k < x.route.size(); ++k)
            load[local_index_[x.route[k]]] += (x.weights.empty() ? 1.0 : x.weights[k]) * x.share * rates_[i];
    }
    for (std::size_t i = 0; i < comp_links_.size(); ++i)
        if (load[i] > problem_.capacity[i] * (1.0 + 1e-9))
            throw std::logic_error("network invariant: a link carries more than its capacity");
#endif
    for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
        Transfer& x = transfers_[comp_flows_[i]];
        const double rate = x.share * rates_[i];
        if (x.rate == rate && x.completion.valid()) continue;
        const Time now = engine_.now();
        x.remaining = std::max(0.0, x.remaining - x.rate * (now - x.updated).seconds());
        x.updated = now;
        x.rate = rate;
        reschedule(comp_flows_[i]);
    }
}

void Network::reschedule(std::uint32_t t) {
    Transfer& x = transfers_[t];
    engine_.cancel(x.completion);
    const double secs = x.remaining / x.rate;
    if (!(secs < 9.2e6)) throw TimeOverflow();  // a transfer would outlast the event clock
    const Time dt = Time::ps(static_cast<std::int64_t>(std::llround(secs * 1e12)));
    x.completion = engine_.after(dt, [this, t] { finish(t); });
}

}  // namespace ddlsim::sim
