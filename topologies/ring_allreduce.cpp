#include "topologies/ring_allreduce.hpp"

#include <algorithm>

namespace ddlsim::topo {
namespace {

class RingRound final : public sim::Round {
public:
    RingRound(sim::Network& network, std::uint32_t n, sim::Bytes chunk, sim::RouteLookup routes,
              sim::EndpointDone on_done)
        : network_(network),
          n_(n),
          steps_(n < 2 ? 0 : 2 * (n - 1)),
          chunk_(chunk),
          routes_(std::move(routes)),
          on_done_(std::move(on_done)),
          workers_(n) {}

    void open(std::uint32_t e) override {
        Worker& w = workers_[e];
        if (w.gate) return;
        w.gate = true;
        if (steps_ == 0) {
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
        if (!w.route) w.route = &routes_(i, (i + 1) % n_);  // looked up once per round (routes are stable)
        network_.start(*w.route, chunk_, [this, i] { sent(i); });
    }

    void sent(std::uint32_t i) {
        const std::uint32_t j = (i + 1) % n_;
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
    std::uint32_t n_;
    std::uint32_t steps_;
    sim::Bytes chunk_;
    sim::RouteLookup routes_;
    sim::EndpointDone on_done_;
    std::vector<Worker> workers_;
};

}  // namespace

std::unique_ptr<sim::Round> RingAllreduce::start_round(sim::Engine& /*engine*/, sim::Network& network,
                                                       sim::RouteLookup routes, sim::EndpointDone on_done,
                                                       std::uint32_t /*round*/) const {
    return std::make_unique<RingRound>(network, n_, chunk_, std::move(routes), std::move(on_done));
}

sim::Bytes RingAllreduce::wire_bytes(const RemoteTest& remote) const {
    if (n_ < 2) return sim::Bytes{};
    double pairs = 0.0;
    for (std::uint32_t i = 0; i < n_; ++i) pairs += remote(i, (i + 1) % n_) ? 1.0 : 0.0;
    return sim::Bytes{pairs * 2.0 * (n_ - 1) * chunk_.value()};
}

sim::Time RingAllreduce::alpha_beta(const sim::PathCostLookup& cost) const {
    // Every level (step) of the DAG has each worker send one chunk to its successor and
    // receive one: level time = max latency + max chunk / bandwidth over remote hops.
    if (n_ < 2) return sim::Time::zero();
    double latency = 0.0, serial = 0.0;
    for (std::uint32_t i = 0; i < n_; ++i) {
        const sim::PathCost c = cost(i, (i + 1) % n_);
        if (c.local) continue;
        latency = std::max(latency, c.latency.seconds());
        serial = std::max(serial, chunk_.value() / c.bandwidth.bytes_per_s());
    }
    const double level = latency > 0.0 || serial > 0.0 ? latency + serial : 0.0;
    return sim::Time::seconds(2.0 * (n_ - 1) * level);
}

}  // namespace ddlsim::topo
