// Max-min fair bandwidth sharing by progressive filling (Bertsekas & Gallager,
// "Data Networks", 6.5.2; the model of SimGrid's lmm solver without weights).
//
// Problem. Links l = 1..L with capacity c_l > 0; flows f = 1..F, each crossing a
// non-empty set of links R_f and optionally capped at u_f. Find rates r_f with
//     sum_{f : l in R_f} r_f <= c_l   for every link l,     0 <= r_f <= u_f,
// such that the vector r is max-min fair: no r_f can be increased without
// decreasing some r_g <= r_f. Equivalently every flow has a bottleneck: a saturated
// link on its route (or its cap) on which no other flow has a larger rate.
//
// Algorithm. Repeatedly take the link with the smallest fair share
// (remaining capacity / unfrozen flows crossing it), give that share to every
// unfrozen flow crossing it, freeze them and subtract their rate from every link
// they cross. Caps act as private links. O(rounds x L), rounds <= L + F. A flow may
// cross a link with a weight w > 0 (it stands for w flows of its rate there: flow
// classes, sim/symmetry.hpp, or a transfer's share, sim/network.hpp): the link's
// share divides by the weights, and freezing subtracts w times the rate.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace ddlsim::sim {

/// A max-min problem in compressed form: flow f crosses links
/// links[offsets[f] .. offsets[f+1]).
struct MaxMinProblem {
    std::vector<double> capacity;           ///< per link, > 0
    std::vector<std::uint32_t> offsets{0};  ///< size F + 1
    std::vector<std::uint32_t> links;       ///< link indices, concatenated per flow
    std::vector<double> weight;             ///< per entry of `links`: how many flows at this rate cross it (> 0)
    std::vector<double> cap;                ///< per flow upper bound (infinity = none)

    /// Appends a flow over `route` with an optional cap; returns its index. `weights` (empty: all 1) gives per link
    /// of the route how many flows at this flow's rate it stands for there (weighted max-min: flow classes).
    std::uint32_t add_flow(std::span<const std::uint32_t> route,
                           double rate_cap = std::numeric_limits<double>::infinity(),
                           std::span<const double> weights = {});
    [[nodiscard]] std::size_t flow_count() const { return offsets.size() - 1; }
    void clear();
};

/// Solves `p`, writing one rate per flow into `rates`. Reuses its buffers across calls.
class MaxMinSolver {
public:
    void solve(const MaxMinProblem& p, std::vector<double>& rates);

private:
    std::vector<double> remaining_;
    std::vector<double> unfrozen_;               ///< per link: weight of the unfrozen flows crossing it
    std::vector<std::uint32_t> unfrozen_count_;  ///< per link: how many unfrozen flows cross it
    std::vector<std::uint32_t> cursor_;
    std::vector<std::uint32_t> link_offsets_;
    std::vector<std::uint32_t> link_flows_;
    std::vector<char> frozen_;
};

}  // namespace ddlsim::sim
