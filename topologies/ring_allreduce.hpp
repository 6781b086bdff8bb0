// Rings as per-worker state machines with O(n) state (Patarasuk & Yuan, JPDC 2009; NCCL's ring).
//
// RingCollective: one or more disjoint rings over a job's endpoints, each running `steps` ring steps of
// `chunk` bytes: rank r of a ring sends chunk s to rank r+1 once its gate is open, it has received chunk s-1
// from rank r-1 and its own send of chunk s-1 has completed; it is done when it has sent and received all
// `steps` chunks. A ring of g ranks runs g-1 steps of S/g for a reduce-scatter or an all-gather of S bytes and
// 2(g-1) for an all-reduce: the DAG of ring_allreduce_plan() without holding it (a 16,384-worker round would be
// 537 M DAG steps; here it is five integers per worker).
//
// RingAllreduce: the ring all-reduce of every worker (one ring 0..n-1, 2(n-1) steps of S/n).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "topologies/collectives.hpp"

namespace ddlsim::topo {

class RingCollective : public Collective {
public:
    /// `rings`: disjoint member lists (plan endpoints, rank order) over `endpoints` endpoints; endpoints in no ring
    /// are done as soon as they open.
    RingCollective(std::uint32_t endpoints, std::vector<std::vector<std::uint32_t>> rings, sim::Bytes chunk,
                   std::uint32_t steps);

    [[nodiscard]] std::uint32_t endpoints() const override { return endpoints_; }
    [[nodiscard]] std::unique_ptr<sim::Round> start_round(sim::Engine& engine, sim::Network& network,
                                                          sim::RouteLookup routes, sim::EndpointDone on_done,
                                                          std::uint32_t round) const override;
    /// Rings whose successor table is periodic under the shift (next[e + P] = next[e] + P, mod n) run per class.
    [[nodiscard]] std::unique_ptr<sim::Round> start_class_round(sim::Engine& engine, sim::Network& network,
                                                                sim::ShiftQuotient& q, sim::EndpointDone on_done,
                                                                std::uint32_t round) const override;
    [[nodiscard]] bool has_class_form() const override { return true; }
    [[nodiscard]] sim::Bytes wire_bytes(const RemoteTest& remote) const override;
    [[nodiscard]] sim::Time alpha_beta(const sim::PathCostLookup& cost) const override;
    /// An endpoint sends its `steps` chunks to its successor one after another, each after it opened: at least steps
    /// x (latency + chunk / bandwidth) of its own hop (0 on one host).
    [[nodiscard]] sim::Time least_time(const sim::PathCostLookup& cost, std::uint32_t e) const override;

private:
    std::uint32_t endpoints_;
    /// Per endpoint: its successor in its ring (itself: in no ring); shared with the rounds it starts.
    std::shared_ptr<const std::vector<std::uint32_t>> next_;
    std::shared_ptr<const std::vector<char>> ring_;  ///< per endpoint: in a ring
    sim::Bytes chunk_;
    std::uint32_t steps_;
};

class RingAllreduce final : public RingCollective {
public:
    RingAllreduce(std::uint32_t n, sim::Bytes bytes);
};

}  // namespace ddlsim::topo
