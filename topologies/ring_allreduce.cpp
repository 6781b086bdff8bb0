#include "topologies/ring_allreduce.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace ddlsim::topo {
namespace {

class RingRound final : public sim::Round {
public:
    /// `next`: per endpoint its successor among the round's endpoints; `ring`: per endpoint whether it is in a
    /// ring (a class may succeed itself); `routes(i, next[i])`: the route to its successor.
    RingRound(sim::Network& network, std::shared_ptr<const std::vector<std::uint32_t>> next,
              std::shared_ptr<const std::vector<char>> ring, std::uint32_t steps, sim::Bytes chunk,
              sim::RouteLookup routes, sim::EndpointDone on_done)
        : network_(network),
          next_(std::move(next)),
          ring_(std::move(ring)),
          steps_(steps),
          chunk_(chunk),
          routes_(std::move(routes)),
          on_done_(std::move(on_done)),
          workers_(next_->size()) {}

    void open(std::uint32_t e) override {
        Worker& w = workers_[e];
        if (w.gate) return;
        w.gate = true;
        if (steps_ == 0 || (*ring_)[e] == 0) {
            on_done_(e);
            return;
        }
        try_send(e);
    }

private:
    struct Worker {
        std::uint32_t sent = 0;      ///< chunks whose send completed
        std::uint32_t received = 0;  ///< chunks received from the predecessor
        bool sending = false;
        bool gate = false;
        bool done = false;
        const sim::Route* route = nullptr;  ///< to the successor
    };

    void try_send(std::uint32_t i) {
        Worker& w = workers_[i];
        if (!w.gate || w.sending || w.sent == steps_ || w.received < w.sent) return;
        w.sending = true;
        if (!w.route) w.route = &routes_(i, (*next_)[i]);  // looked up once per round (routes are stable)
        network_.start(*w.route, chunk_, [this, i] { sent(i); });
    }

    void sent(std::uint32_t i) {
        const std::uint32_t j = (*next_)[i];
        Worker& w = workers_[i];
        w.sending = false;
        ++w.sent;
        ++workers_[j].received;
        try_send(i);
        try_send(j);
        check_done(i);
        check_done(j);
    }

    void check_done(std::uint32_t i) {
        Worker& w = workers_[i];
        if (w.done || w.sent != steps_ || w.received != steps_) return;
        w.done = true;
        on_done_(i);
    }

    sim::Network& network_;
    std::shared_ptr<const std::vector<std::uint32_t>> next_;  ///< the collective's successor table
    std::shared_ptr<const std::vector<char>> ring_;
    std::uint32_t steps_;
    sim::Bytes chunk_;
    sim::RouteLookup routes_;
    sim::EndpointDone on_done_;
    std::vector<Worker> workers_;
};

}  // namespace

RingCollective::RingCollective(std::uint32_t endpoints, std::vector<std::vector<std::uint32_t>> rings, sim::Bytes chunk,
                               std::uint32_t steps)
    : endpoints_(endpoints), chunk_(chunk), steps_(steps) {
    std::vector<std::uint32_t> next(endpoints);
    std::iota(next.begin(), next.end(), 0U);
    for (const auto& ring : rings) {
        if (ring.size() < 2) continue;  // a ring of one has nothing to exchange
        for (std::size_t r = 0; r < ring.size(); ++r) {
            const std::uint32_t a = ring[r];
            if (a >= endpoints || next[a] != a) throw std::invalid_argument("rings must be disjoint endpoint lists");
            next[a] = ring[(r + 1) % ring.size()];
        }
    }
    std::vector<char> ring(endpoints);
    for (std::uint32_t e = 0; e < endpoints; ++e) ring[e] = next[e] != e ? 1 : 0;
    next_ = std::make_shared<const std::vector<std::uint32_t>>(std::move(next));
    ring_ = std::make_shared<const std::vector<char>>(std::move(ring));
}

std::unique_ptr<sim::Round> RingCollective::start_round(sim::Engine& /*engine*/, sim::Network& network,
                                                        sim::RouteLookup routes, sim::EndpointDone on_done,
                                                        std::uint32_t /*round*/) const {
    return std::make_unique<RingRound>(network, next_, ring_, steps_, chunk_, std::move(routes), std::move(on_done));
}

std::unique_ptr<sim::Round> RingCollective::start_class_round(sim::Engine& /*engine*/, sim::Network& network,
                                                              sim::ShiftQuotient& q, sim::EndpointDone on_done,
                                                              std::uint32_t /*round*/) const {
    const std::uint32_t n = endpoints_, p = q.period();
    if (q.endpoints() != n) return nullptr;
    const auto& next = *next_;
    for (std::uint32_t e = p; e < n; ++e)  // periodic: the successor of e + P is P past e's
        if (next[e] != (next[e - p] + p) % n) return nullptr;
    auto cls = std::make_shared<std::vector<std::uint32_t>>(p);
    auto ring = std::make_shared<std::vector<char>>(ring_->begin(), ring_->begin() + p);
    for (std::uint32_t c = 0; c < p; ++c) (*cls)[c] = next[c] % p;
    // The class's route is its representative's to its real successor (which may lie in another period).
    auto routes = [&q, next_ = next_](std::uint32_t c, std::uint32_t) -> const sim::Route& {
        return q.route(c, (*next_)[c]);
    };
    return std::make_unique<RingRound>(network, std::move(cls), std::move(ring), steps_, chunk_, std::move(routes),
                                       std::move(on_done));
}

sim::Bytes RingCollective::wire_bytes(const RemoteTest& remote) const {
    double pairs = 0.0;
    const auto& next = *next_;
    for (std::uint32_t i = 0; i < endpoints_; ++i)
        if (next[i] != i) pairs += remote(i, next[i]) ? 1.0 : 0.0;
    return sim::Bytes{pairs * steps_ * chunk_.value()};
}

sim::Time RingCollective::least_time(const sim::PathCostLookup& cost, std::uint32_t e) const {
    const std::uint32_t next = (*next_)[e];
    if (next == e) return sim::Time::zero();
    const sim::PathCost c = cost(e, next);
    if (c.local) return sim::Time::zero();
    return sim::Time::seconds(steps_ * (c.latency.seconds() + chunk_.value() / c.bandwidth.bytes_per_s()));
}

sim::Time RingCollective::alpha_beta(const sim::PathCostLookup& cost) const {
    // Every level (step) of the DAG has each ranked endpoint send one chunk to its successor and
    // receive one: level time = max latency + max chunk / bandwidth over remote hops.
    const auto& next = *next_;
    double latency = 0.0, serial = 0.0;
    for (std::uint32_t i = 0; i < endpoints_; ++i) {
        if (next[i] == i) continue;
        const sim::PathCost c = cost(i, next[i]);
        if (c.local) continue;
        latency = std::max(latency, c.latency.seconds());
        serial = std::max(serial, chunk_.value() / c.bandwidth.bytes_per_s());
    }
    const double level = latency > 0.0 || serial > 0.0 ? latency + serial : 0.0;
    return sim::Time::seconds(steps_ * level);
}

namespace {
std::vector<std::vector<std::uint32_t>> everyone(std::uint32_t n) {
    std::vector<std::uint32_t> all(n);
    std::iota(all.begin(), all.end(), 0U);
    return {std::move(all)};
}
}  // namespace

RingAllreduce::RingAllreduce(std::uint32_t n, sim::Bytes bytes)
    : RingCollective(n, everyone(n), bytes / std::max<std::uint32_t>(n, 1), n < 2 ? 0 : 2 * (n - 1)) {}

}  // namespace ddlsim::topo
