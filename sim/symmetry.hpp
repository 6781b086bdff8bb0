// Flow classes: transfers that a shift of the endpoints maps onto each other are simulated once.
//
// Let endpoints 0..n-1 be laid out in m = n / P periods of P, and σ the shift e -> e + P (mod n). When the
// transfers a simulation starts come in orbits {e + kP -> d + kP : k = 0..m-1} that start together with equal
// sizes, and the routes of an orbit's members map onto each other link by link under one consistent permutation
// σ of the links (position t of member k's route is σ^k of member 0's; every cycle of σ has links of one
// capacity, latency, overhead and flow cap), then the max-min fair rates are σ-invariant: the fair allocation is
// unique and σ maps the problem onto itself. So one representative per orbit, routed over one representative
// link per cycle, gets exactly the rate of every member. A cycle of length L (dividing m) has m / L members of
// the orbit on each of its links, so the representative crosses its representative link with weight m / L
// (Network::kWeight): the solver counts it as that many flows (weighted max-min), as the real link carries that
// many members (a route crossing one cycle at two positions crosses the representative twice, likewise). Where a route
// breaks the pattern (different lengths, a link sent to two images, a cycle not dividing m, links of different specs)
// route() throws SymmetryBroken and the caller simulates every transfer instead.
//
// ClassRound runs a round over the classes: every endpoint's gate is opened by its owner as usual; class c
// (endpoints c, c+P, ...) opens when all its members have, which must be at one instant (else SymmetryBroken),
// and its completion is reported for every member.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/engine.hpp"
#include "sim/network.hpp"
#include "sim/transfer_dag.hpp"

namespace ddlsim::sim {

/// The run is not symmetric after all: simulate every transfer.
struct SymmetryBroken : std::runtime_error {
    /// `period_specific`: a longer shift may still be a symmetry (routes); else none is (workers, collectives).
    explicit SymmetryBroken(const std::string& why, bool specific = false)
        : std::runtime_error("symmetry broken: " + why), period_specific(specific) {}
    bool period_specific;
};

class ShiftQuotient {
public:
    /// `period` must divide `endpoints` at least twice; `actual` gives the real routes between endpoints.
    ShiftQuotient(const Network& network, std::uint32_t endpoints, std::uint32_t period, RouteLookup actual);

    [[nodiscard]] std::uint32_t endpoints() const { return n_; }
    [[nodiscard]] std::uint32_t period() const { return p_; }
    /// m: how many transfers each simulated one stands for.
    [[nodiscard]] std::uint32_t multiplicity() const { return n_ / p_; }
    /// The representative route of the orbit of src -> dst (src < period()), over representative links; stable
    /// address. Throws SymmetryBroken where the orbit's routes do not map onto each other (see above).
    const Route& route(std::uint32_t src, std::uint32_t dst);
    /// The representative of the link cycle `l` belongs to (l itself where no verified orbit crosses it).
    [[nodiscard]] LinkIndex representative(LinkIndex l) const { return rep_[l] == kUnset ? l : rep_[l]; }

private:
    static constexpr LinkIndex kUnset = 0xffffffffU;
    std::uint32_t link_cycle(const std::vector<const Route*>& members, std::size_t t);

    const Network& network_;
    std::uint32_t n_;
    std::uint32_t p_;
    RouteLookup actual_;
    std::vector<LinkIndex> next_;  ///< σ on links crossed so far (kUnset: not yet known)
    std::vector<LinkIndex> prev_;  ///< σ^-1
    std::vector<LinkIndex> rep_;   ///< smallest link of each cycle
    std::unordered_map<std::uint64_t, Route> routes_;
};

/// A round over the classes of a ShiftQuotient (see above). Set the inner round (over endpoints 0..P-1, whose
/// completions go to class_done) before opening any gate.
class ClassRound final : public Round {
public:
    /// `representatives_only`: only the representatives (endpoints below the period) run and open their gates, each
    /// standing for its class, whose other members are its images by construction; completions are reported for the
    /// representatives only.
    ClassRound(const Engine& engine, std::uint32_t endpoints, std::uint32_t period, EndpointDone on_done,
               bool representatives_only = false);
    void set_inner(std::unique_ptr<Round> inner) { inner_ = std::move(inner); }
    void open(std::uint32_t e) override;
    void class_done(std::uint32_t c);

private:
    const Engine& engine_;
    std::uint32_t n_;
    std::uint32_t p_;
    EndpointDone on_done_;
    std::unique_ptr<Round> inner_;
    std::vector<char> gate_;             ///< per endpoint: opened
    std::vector<std::uint32_t> opened_;  ///< per class: members whose gate is open
    std::vector<Time> first_;            ///< per class: when its first member opened
    bool representatives_only_;
};

}  // namespace ddlsim::sim
