#include "sim/max_min.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ddlsim::sim {

std::uint32_t MaxMinProblem::add_flow(std::span<const std::uint32_t> route, double rate_cap,
                                      std::span<const double> weights) {
    links.insert(links.end(), route.begin(), route.end());
    if (weights.empty())
        weight.insert(weight.end(), route.size(), 1.0);
    else
        weight.insert(weight.end(), weights.begin(), weights.end());
    offsets.push_back(static_cast<std::uint32_t>(links.size()));
    cap.push_back(rate_cap);
    return static_cast<std::uint32_t>(flow_count() - 1);
}

void MaxMinProblem::clear() {
    capacity.clear();
    offsets.assign(1, 0);
    links.clear();
    weight.clear();
    cap.clear();
}

void MaxMinSolver::solve(const MaxMinProblem& p, std::vector<double>& rates) {
    const std::size_t n_links = p.capacity.size();
    const std::size_t n_flows = p.flow_count();
    constexpr double inf = std::numeric_limits<double>::infinity();
    rates.assign(n_flows, inf);
    if (n_flows == 0) return;

    // Link -> flows adjacency (counting sort by link).
    link_offsets_.assign(n_links + 1, 0);
    for (std::uint32_t l : p.links) {
        if (l >= n_links) throw std::out_of_range("max-min: flow crosses an unknown link");
        ++link_offsets_[l + 1];
    }
    for (std::size_t l = 0; l < n_links; ++l) link_offsets_[l + 1] += link_offsets_[l];
    link_flows_.resize(p.links.size());
    cursor_.assign(link_offsets_.begin(), link_offsets_.end() - 1);
    for (std::uint32_t f = 0; f < n_flows; ++f)
        for (std::uint32_t i = p.offsets[f]; i < p.offsets[f + 1]; ++i) link_flows_[cursor_[p.links[i]]++] = f;
    remaining_.assign(p.capacity.begin(), p.capacity.end());
    unfrozen_.assign(n_links, 0.0);
    unfrozen_count_.assign(n_links, 0);
    for (std::size_t i = 0; i < p.links.size(); ++i) {
        unfrozen_[p.links[i]] += p.weight[i];
        ++unfrozen_count_[p.links[i]];
    }
    frozen_.assign(n_flows, 0);

    std::size_t left = n_flows;
    const bool has_caps = std::any_of(p.cap.begin(), p.cap.end(), [](double c) { return c != inf; });
    auto freeze = [&](std::uint32_t f, double r) {
        rates[f] = r;
        frozen_[f] = 1;
        --left;
        for (std::uint32_t i = p.offsets[f]; i < p.offsets[f + 1]; ++i) {
            const std::uint32_t l = p.links[i];
            remaining_[l] = std::max(0.0, remaining_[l] - p.weight[i] * r);
            // Weights need not be whole (a transfer's share): the last flow to freeze leaves exactly zero.
            unfrozen_[l] = --unfrozen_count_[l] == 0 ? 0.0 : unfrozen_[l] - p.weight[i];
        }
    };

    while (left > 0) {
        // The smallest fair share among links with unfrozen flows, and among caps.
        double share = inf;
        for (std::size_t l = 0; l < n_links; ++l)
            if (unfrozen_[l] > 0.0) share = std::min(share, remaining_[l] / unfrozen_[l]);
        double min_cap = inf;
        if (has_caps)
            for (std::uint32_t f = 0; f < n_flows; ++f)
                if (!frozen_[f]) min_cap = std::min(min_cap, p.cap[f]);

        if (min_cap <= share) {
            // Caps bind first: freeze every flow whose cap equals the minimum.
            for (std::uint32_t f = 0; f < n_flows; ++f)
                if (!frozen_[f] && p.cap[f] <= min_cap) freeze(f, min_cap);
            continue;
        }
        if (share == inf) {  // flows with no links and no cap: unbounded
            for (std::uint32_t f = 0; f < n_flows; ++f)
                if (!frozen_[f]) freeze(f, inf);
            break;
        }
        // Freeze flows on every link whose share ties the minimum (relative 1e-12).
        const double tie = share * (1.0 + 1e-12);
        for (std::size_t l = 0; l < n_links; ++l) {
            if (unfrozen_[l] == 0.0 || remaining_[l] / unfrozen_[l] > tie) continue;
            for (std::uint32_t i = link_offsets_[l]; i < link_offsets_[l + 1]; ++i) {
                const std::uint32_t f = link_flows_[i];
                if (!frozen_[f]) freeze(f, share);
            }
        }
    }
}

}  // namespace ddlsim::sim
