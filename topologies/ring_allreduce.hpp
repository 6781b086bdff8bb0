// Ring all-reduce (Patarasuk & Yuan, JPDC 2009; NCCL's ring) as a per-worker state
// machine with O(n) state, equivalent to the DAG of ring_allreduce_plan(): worker i
// sends chunk s (S/n bytes) to i+1 once its gate is open, it has received chunk s-1
// from i-1 and its own send of chunk s-1 has completed; it is done when it has sent
// and received all 2(n-1) chunks. A 16,384-worker round would be 537 M DAG steps;
// here it is five integers per worker.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "topologies/collectives.hpp"

namespace ddlsim::topo {

class RingAllreduce final : public Collective {
public:
    RingAllreduce(std::uint32_t n, sim::Bytes bytes) : n_(n), chunk_(bytes / std::max<std::uint32_t>(n, 1)) {}

    [[nodiscard]] std::uint32_t endpoints() const override { return n_; }
    [[nodiscard]] std::unique_ptr<sim::Round> start_round(sim::Engine& engine, sim::Network& network,
                                                          sim::RouteLookup routes, sim::EndpointDone on_done,
                                                          std::uint32_t round) const override;
    [[nodiscard]] sim::Bytes wire_bytes(const RemoteTest& remote) const override;
    [[nodiscard]] sim::Time alpha_beta(const sim::PathCostLookup& cost) const override;

private:
    std::uint32_t n_;
    sim::Bytes chunk_;
};

}  // namespace ddlsim::topo
