#include "sim/symmetry.hpp"

#include <algorithm>
#include <stdexcept>

namespace ddlsim::sim {

ShiftQuotient::ShiftQuotient(const Network& network, std::uint32_t endpoints, std::uint32_t period, RouteLookup actual)
    : network_(network),
      n_(endpoints),
      p_(period),
      actual_(std::move(actual)),
      next_(network.link_count(), kUnset),
      prev_(network.link_count(), kUnset),
      rep_(network.link_count(), kUnset) {
    if (p_ == 0 || n_ % p_ != 0 || n_ / p_ < 2)
        throw std::invalid_argument("a shift quotient needs a period dividing the endpoints at least twice");
}

namespace {
bool same_spec(const LinkSpec& a, const LinkSpec& b) {
    return a.bandwidth.bytes_per_s() == b.bandwidth.bytes_per_s() && a.latency == b.latency &&
           a.overhead == b.overhead && a.flow_cap == b.flow_cap;
}
}  // namespace

// Position t of the members' routes: links x_0 .. x_{m-1} must run through a cycle of σ of some length L dividing
// m (x_k -> x_{k+1}, x_{L-1} -> x_0, x_{k+L} = x_k), consistent with what earlier orbits fixed, of L distinct
// links with one spec. Each of them then carries m / L members: returns that weight.
std::uint32_t ShiftQuotient::link_cycle(const std::vector<const Route*>& members, std::size_t t) {
    const std::size_t m = members.size();
    auto x = [&](std::size_t k) { return (*members[k % m])[t]; };
    std::size_t cycle = 1;
    while (cycle < m && x(cycle) != x(0)) ++cycle;
    if (m % cycle != 0) throw SymmetryBroken("a link cycle whose length does not divide the shift's order", true);
    LinkIndex smallest = x(0);
    for (std::size_t k = 0; k < m; ++k) {
        const LinkIndex a = x(k), b = x(k + 1);
        if (k >= cycle) {
            if (a != x(k - cycle)) throw SymmetryBroken("a link cycle that does not repeat", true);
            continue;
        }
        if (next_[a] == kUnset && prev_[b] == kUnset) {
            if (!same_spec(network_.link(a), network_.link(b))) throw SymmetryBroken("links of different specs", true);
            next_[a] = b;
            prev_[b] = a;
        } else if (next_[a] != b || prev_[b] != a) {
            throw SymmetryBroken("a link the shift maps to two links", true);
        }
        smallest = std::min(smallest, a);
    }
    for (std::size_t k = 0; k < cycle; ++k) rep_[x(k)] = smallest;
    return static_cast<std::uint32_t>(m / cycle);
}

const Route& ShiftQuotient::route(std::uint32_t src, std::uint32_t dst) {
    const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | dst;
    if (const auto it = routes_.find(key); it != routes_.end()) return it->second;
    if (src >= p_ || dst >= n_) throw std::out_of_range("shift quotient: endpoint out of range");
    const std::uint32_t m = multiplicity();
    std::vector<const Route*> members(m);
    for (std::uint32_t k = 0; k < m; ++k) {
        members[k] = &actual_(src + k * p_, (dst + k * p_) % n_);
        if (members[k]->size() != members[0]->size())
            throw SymmetryBroken("routes of one orbit differ in length", true);
    }
    Route r;
    r.reserve(members[0]->size());
    for (std::size_t t = 0; t < members[0]->size(); ++t) {
        // A link carrying w members carries the representative with weight w (Network::kWeight): the solver counts
        // it as w flows, as the real link carries w.
        const std::uint32_t w = link_cycle(members, t);
        r.push_back(rep_[(*members[0])[t]]);
        if (w > 1) r.push_back(Network::kWeight + w);
    }
    return routes_.emplace(key, std::move(r)).first->second;
}

ClassRound::ClassRound(const Engine& engine, std::uint32_t endpoints, std::uint32_t period, EndpointDone on_done,
                       bool representatives_only)
    : engine_(engine),
      n_(endpoints),
      p_(period),
      on_done_(std::move(on_done)),
      gate_(representatives_only ? 0 : endpoints, 0),
      opened_(representatives_only ? 0 : period, 0),
      first_(representatives_only ? 0 : period),
      representatives_only_(representatives_only) {}

void ClassRound::open(std::uint32_t e) {
    if (representatives_only_) {
        if (e >= p_) throw std::logic_error("class round: only representatives open");
        inner_->open(e);
        return;
    }
    if (gate_[e] != 0) return;
    gate_[e] = 1;
    const std::uint32_t c = e % p_;
    if (opened_[c] == 0)
        first_[c] = engine_.now();
    else if (engine_.now() != first_[c])
        throw SymmetryBroken("the members of a class joined a round at different times");
    if (++opened_[c] == n_ / p_) inner_->open(c);
}

void ClassRound::class_done(std::uint32_t c) {
    if (representatives_only_) {
        on_done_(c);
        return;
    }
    for (std::uint32_t e = c; e < n_; e += p_) on_done_(e);
}

}  // namespace ddlsim::sim
