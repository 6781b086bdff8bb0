// Independent groups of a job's workers, each running its own collective at once: the islands of DiLoCo
// (Douillard et al., "DiLoCo: Distributed Low-Communication Training of Language Models", arXiv 2311.08105, 2023)
// all-reduce their gradients inside themselves every inner step.
//
// Group k's collective is built over its own endpoints 0 .. |group k| - 1; endpoint i of it is the job's endpoint
// groups[k][i]. A round opens, routes and reports each endpoint through that map; the bytes on the wire add up over
// the groups and the closed form is the slowest group's.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "topologies/collectives.hpp"

namespace ddlsim::topo {

class GroupedCollective final : public Collective {
public:
    /// `parts[k]` runs over `groups[k]` (disjoint, together every one of `n` endpoints at most once).
    GroupedCollective(std::vector<std::vector<std::uint32_t>> groups, std::vector<std::unique_ptr<Collective>> parts,
                      std::uint32_t n);
    [[nodiscard]] std::uint32_t endpoints() const override { return n_; }
    [[nodiscard]] std::unique_ptr<sim::Round> start_round(sim::Engine& engine, sim::Network& network,
                                                          sim::RouteLookup routes, sim::EndpointDone on_done,
                                                          std::uint32_t round) const override;
    [[nodiscard]] sim::Bytes wire_bytes(const RemoteTest& remote) const override;
    [[nodiscard]] sim::Time alpha_beta(const sim::PathCostLookup& cost) const override;

private:
    std::vector<std::vector<std::uint32_t>> groups_;
    std::vector<std::unique_ptr<Collective>> parts_;
    std::uint32_t n_;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> where_;  ///< per endpoint: (group, index in it)
};

/// A view of `inner` (over |members| endpoints) as a collective of the job's `n` endpoints, member i being the job's
/// endpoint members[i]; `inner` must outlive it (algorithm auto times one island's candidate this way).
[[nodiscard]] std::unique_ptr<Collective> view_over(const Collective& inner, std::vector<std::uint32_t> members,
                                                    std::uint32_t n);

}  // namespace ddlsim::topo
