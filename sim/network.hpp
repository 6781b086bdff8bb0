// The flow-level network: full-duplex links are modelled as one directed link
// per direction; a transfer of S bytes over a route (a list of directed links)
// whose latencies sum to Λ waits Λ, then shares bandwidth max-min fairly with all
// active transfers until its S bytes are through. With a constant rate r it ends
// at start + Λ + S/r (the fluid model of SimGrid without correction factors).
//
// Rates are re-solved whenever transfers become active or finish, only over the
// connected component of transfers that share links with them (transitively): flows
// outside it cannot change rate. Starts and finishes at the same instant are batched
// into one re-solve, run before simulated time advances, so no byte is mis-counted.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "sim/engine.hpp"
#include "sim/max_min.hpp"
#include "sim/units.hpp"

namespace ddlsim::sim {

using LinkIndex = std::uint32_t;
using Route = std::vector<LinkIndex>;

/// A directed link's capacity and latency, and what its transport charges each transfer:
/// `overhead`, a per-transfer software latency (a transfer pays the largest overhead among
/// the links it crosses, once, on top of the propagation latencies), and `flow_cap`, the
/// most one transfer (one stream or a fixed set of streams) can move over this link
/// (bytes/s; infinity = only the link's capacity limits it).
struct LinkSpec {
    LinkSpec(Bandwidth bw, Time lat, Time per_transfer = Time::zero(),
             double cap = std::numeric_limits<double>::infinity())
        : bandwidth(bw), latency(lat), overhead(per_transfer), flow_cap(cap) {}
    Bandwidth bandwidth;
    Time latency;
    Time overhead;
    double flow_cap;
};

/// Per-link counters, for utilisation reports.
struct LinkStats {
    double bytes = 0.0;  ///< bytes that crossed the link
    std::uint64_t transfers = 0;
};

class Network {
public:
    using Callback = std::function<void()>;

    explicit Network(Engine& engine) : engine_(engine) {}
    Network(const Network&) = delete;
    Network& operator=(const Network&) = delete;

    /// Adds a directed link; returns its index.
    LinkIndex add_link(LinkSpec spec);
    [[nodiscard]] const LinkSpec& link(LinkIndex l) const { return links_[l].spec; }
    [[nodiscard]] std::size_t link_count() const { return links_.size(); }
    [[nodiscard]] const LinkStats& stats(LinkIndex l) const { return links_[l].stats; }

    /// A route entry with this bit set is no link: the link before it stands for (entry - kWeight) flows at this
    /// transfer's rate (weighted max-min: flow classes, sim/symmetry.hpp); its latency and bytes' path count once.
    static constexpr LinkIndex kWeight = 0x80000000U;

    /// Starts moving `bytes` along `route`; `on_done` runs when the last byte arrives.
    /// An empty route (same host) completes after zero time. Link counters count a weighted link's flows.
    /// `share` (> 0, default 1): the transfer counts as that many flows in max-min sharing on every link of its route
    /// and moves at that many times the fair rate -- a stream that keeps `share` times the average number of
    /// messages in flight (BytePS's partitions, topologies/parameter_server.hpp). Its bytes are counted once.
    /// `latency_paid`: how much of the route's latency (and overhead) has already elapsed for this transfer -- the
    /// next message of a stream whose sender had it ready while the previous one was still arriving
    /// (Plan::set_follows); it starts sharing after the rest, at once when paid >= latency(route).
    void start(const Route& route, Bytes bytes, Callback on_done, double share = 1.0, Time latency_paid = Time::zero());

    /// Transfers started so far (each counted once, however many links it crosses).
    [[nodiscard]] std::uint64_t transfers_started() const { return started_; }
    /// Transfers currently sharing bandwidth.
    [[nodiscard]] std::size_t active() const { return active_count_; }
    /// Sum of route latencies of `route`, plus the largest per-transfer overhead on it.
    [[nodiscard]] Time latency(const Route& route) const;
    /// The most one transfer over `route` may move per second (the smallest flow cap on it).
    [[nodiscard]] double flow_cap(const Route& route) const;

    /// Called for every finished transfer over at least one link (timelines); off by default.
    using Observer = std::function<void(const Route& route, double bytes, Time started, Time finished)>;
    void set_observer(Observer o) { observer_ = std::move(o); }

private:
    struct Link {
        LinkSpec spec;
        LinkStats stats;
        std::vector<std::uint32_t> flows;  ///< active transfers crossing it
        std::uint32_t mark = 0;            ///< component-search epoch
    };
    struct Transfer {
        Route route;                                           ///< links only (weights taken out)
        std::vector<double> weights;                           ///< per link of `route`, or empty: all 1
        double remaining = 0.0;                                ///< bytes left as of `updated`
        double bytes = 0.0;                                    ///< size at start
        double rate = 0.0;                                     ///< bytes per second
        double share = 1.0;                                    ///< flows it counts as (start())
        double cap = std::numeric_limits<double>::infinity();  ///< per-transfer rate bound
        Time updated;
        Time started;
        EventId completion;
        Callback on_done;
        std::uint32_t mark = 0;
        bool live = false;
    };

    void activate(std::uint32_t t);
    void finish(std::uint32_t t);
    void mark_dirty(const Route& route);
    void resolve_dirty();
    void resolve_from(const Route& seeds);
    void reschedule(std::uint32_t t);

    Engine& engine_;
    std::vector<Link> links_;
    std::vector<Transfer> transfers_;
    std::vector<std::uint32_t> free_;
    std::size_t active_count_ = 0;
    std::uint64_t started_ = 0;
    std::uint32_t epoch_ = 0;
    Observer observer_;
    Route dirty_;  ///< links touched since the last re-solve
    bool resolve_pending_ = false;
    // Scratch space for re-solves.
    MaxMinProblem problem_;
    MaxMinSolver solver_;
    std::vector<double> rates_;
    std::vector<std::uint32_t> comp_flows_;
    std::vector<LinkIndex> comp_links_;
    std::vector<std::uint32_t> local_index_;
    std::vector<std::uint32_t> local_route_;
    std::vector<double> share_weights_;  ///< a shared transfer's weights per link, for the solver
    std::vector<double> rate_load_;      ///< invariant checks: per component link
};

}  // namespace ddlsim::sim
