// Collectives as data (after htsim): a plan is a DAG of steps between abstract
// endpoints; a step is either a transfer of `bytes` from `src` to `dst` over the
// network, or, when src == dst, local work of duration `work` at that endpoint.
// A step starts once every step it comes after is done and its source endpoint's
// gate is open (the endpoint has its data ready). A round reports each endpoint as
// done when every step it sends or receives has finished.
//
// Plans are stored in compressed (CSR) form and shared by every round that runs
// them, so a round costs a few integers per step, not an allocation per step.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <vector>

#include "sim/engine.hpp"
#include "sim/network.hpp"

namespace ddlsim::sim {

struct PlanStep {
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
    Bytes bytes;
    Time work;  ///< local steps only (src == dst)
};

/// A DAG of steps among `endpoints` endpoints; steps may only depend on earlier ones.
class Plan {
public:
    std::uint32_t endpoints = 0;

    /// Appends a transfer (or, with src == dst, a zero-time local step) and returns its index.
    std::uint32_t add(std::uint32_t src, std::uint32_t dst, Bytes bytes, std::span<const std::uint32_t> after = {});
    std::uint32_t add(std::uint32_t src, std::uint32_t dst, Bytes bytes, std::initializer_list<std::uint32_t> after) {
        return add(src, dst, bytes, std::span<const std::uint32_t>(after.begin(), after.size()));
    }
    /// Appends local work of duration `work` at endpoint `at`.
    std::uint32_t add_work(std::uint32_t at, Time work, std::span<const std::uint32_t> after = {});
    std::uint32_t add_work(std::uint32_t at, Time work, std::initializer_list<std::uint32_t> after) {
        return add_work(at, work, std::span<const std::uint32_t>(after.begin(), after.size()));
    }
    /// Transfer `s` runs with that share of max-min sharing (Network::start; default 1).
    void set_share(std::uint32_t s, double share);
    [[nodiscard]] double share(std::size_t s) const { return shares_.empty() ? 1.0 : shares_[s]; }
    /// Transfer `s` is the next message of the stream whose previous message is `prev` (one of s's `after` steps, a
    /// transfer between the same endpoints): the sender sends it right behind `prev`, so the route's latency and
    /// overhead that have run since s's other dependencies (and its source's gate) were met count as paid -- a stream
    /// of back-to-back messages pays them once, a message that waited on something else pays what it has not.
    void set_follows(std::uint32_t s, std::uint32_t prev);
    static constexpr std::uint32_t kNoStep = 0xFFFFFFFFU;
    [[nodiscard]] std::uint32_t follows(std::size_t s) const { return follows_.empty() ? kNoStep : follows_[s]; }
    [[nodiscard]] bool has_streams() const { return !follows_.empty(); }
    /// Builds the reverse (dependents) index; required before a round runs the plan.
    void seal();

    [[nodiscard]] std::size_t size() const { return steps_.size(); }
    [[nodiscard]] const PlanStep& step(std::size_t s) const { return steps_[s]; }
    [[nodiscard]] std::span<const std::uint32_t> after(std::size_t s) const;
    [[nodiscard]] std::span<const std::uint32_t> dependents(std::size_t s) const;
    [[nodiscard]] bool sealed() const { return sealed_; }
    /// Bytes of all network steps whose endpoints differ (the bytes a round puts on the wire, counted once).
    [[nodiscard]] double transfer_bytes() const;

private:
    std::vector<PlanStep> steps_;
    std::vector<double> shares_;          ///< per step, or empty: every share 1 (most plans)
    std::vector<std::uint32_t> follows_;  ///< per step, or empty: no streams (most plans)
    std::vector<std::uint32_t> after_offsets_{0};
    std::vector<std::uint32_t> after_;
    std::vector<std::uint32_t> dependent_offsets_;
    std::vector<std::uint32_t> dependents_;
    bool sealed_ = false;
};

/// Maps a pair of endpoints to the route between the hosts they sit on; the route
/// must stay valid (at the same address) while the network runs.
using RouteLookup = std::function<const Route&(std::uint32_t src, std::uint32_t dst)>;
/// Called when an endpoint's part of a round is over.
using EndpointDone = std::function<void(std::uint32_t endpoint)>;

/// Latency and bottleneck bandwidth between the hosts of two endpoints;
/// `local` when they share a host (the transfer then costs nothing).
struct PathCost {
    Time latency;
    Bandwidth bandwidth;
    bool local = false;
};
using PathCostLookup = std::function<PathCost(std::uint32_t src, std::uint32_t dst)>;

/// Closed-form α-β estimate of a plan without link sharing: steps are grouped into
/// levels by their longest dependency chain; a level takes its largest latency plus
/// the largest time any endpoint needs to send (or receive) its bytes of that level
/// one after another, Σ bytes/bandwidth (or its longest local work); levels add up.
/// On an idle star this equals the flow model for ring, PS and gossip rounds.
[[nodiscard]] Time alpha_beta_time(const Plan& plan, const PathCostLookup& cost);

/// One synchronisation round in progress: endpoints open their gates when their
/// data is ready; the round calls back as each endpoint's part completes.
class Round {
public:
    virtual ~Round() = default;
    /// Opens endpoint `e`'s gate: its sends may start from now on.
    virtual void open(std::uint32_t e) = 0;
};

/// Runs one sealed plan on a network. Keep it alive until all endpoints are done.
class DagRunner final : public Round {
public:
    DagRunner(Engine& engine, Network& network, const Plan& plan, RouteLookup routes, EndpointDone on_done);
    DagRunner(const DagRunner&) = delete;
    DagRunner& operator=(const DagRunner&) = delete;

    void open(std::uint32_t e) override;
    [[nodiscard]] bool finished() const { return steps_left_ == 0; }

private:
    void try_start(std::uint32_t s);
    void complete(std::uint32_t s);
    void touch_done(std::uint32_t e);

    Engine& engine_;
    Network& network_;
    const Plan& plan_;
    RouteLookup routes_;
    EndpointDone on_done_;
    std::vector<std::uint32_t> deps_left_;
    std::vector<std::uint32_t> endpoint_steps_left_;
    std::vector<char> gate_open_;
    std::vector<std::vector<std::uint32_t>> waiting_;  ///< per endpoint: steps ready but for its gate
    std::vector<char> started_;
    std::size_t steps_left_ = 0;
    std::vector<Time> finished_at_;  ///< per step (plans with streams only)
    std::vector<Time> gate_opened_;  ///< per endpoint (plans with streams only)
};

}  // namespace ddlsim::sim
