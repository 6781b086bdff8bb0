// Gossip graphs, seeded random matchings, mixing weights and the D-PSGD exchange; the
// model and citations are in gossip.hpp.
#include "topologies/gossip.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <utility>

#include "sim/rng.hpp"

namespace ddlsim::topo {

namespace {

void add_unique(std::vector<std::uint32_t>& v, std::uint32_t self, std::uint32_t j) {
    if (j != self && std::find(v.begin(), v.end(), j) == v.end()) v.push_back(j);
}

// In-neighbours (whom each worker receives from) given out-neighbours.
std::vector<std::vector<std::uint32_t>> invert(const std::vector<std::vector<std::uint32_t>>& out) {
    std::vector<std::vector<std::uint32_t>> in(out.size());
    for (std::uint32_t i = 0; i < out.size(); ++i)
        for (std::uint32_t j : out[i]) in[j].push_back(i);
    return in;
}

// Random matching: a plan per round, built in start_round and owned by the round.
class MatchingRound final : public sim::Round {
public:
    MatchingRound(sim::Plan plan, sim::Engine& engine, sim::Network& network, sim::RouteLookup routes,
                  sim::EndpointDone on_done)
        : plan_(std::move(plan)), runner_(engine, network, plan_, std::move(routes), std::move(on_done)) {}
    void open(std::uint32_t e) override { runner_.open(e); }

private:
    sim::Plan plan_;  // declared before runner_, which keeps a reference to it
    sim::DagRunner runner_;
};

class MatchingGossip final : public Collective {
public:
    MatchingGossip(std::uint32_t n, sim::Bytes bytes, std::uint64_t seed)
        : n_(n), bytes_(bytes), seed_(seed), round0_(plan_for(0)) {}
    [[nodiscard]] std::uint32_t endpoints() const override { return n_; }
    [[nodiscard]] std::unique_ptr<sim::Round> start_round(sim::Engine& engine, sim::Network& network,
                                                          sim::RouteLookup routes, sim::EndpointDone on_done,
                                                          std::uint32_t round) const override {
        return std::make_unique<MatchingRound>(plan_for(round), engine, network, std::move(routes), std::move(on_done));
    }
    // Round 0's matching: with one worker per host every round moves n·S bytes (n even).
    [[nodiscard]] sim::Bytes wire_bytes(const RemoteTest& remote) const override {
        sim::Bytes total;
        for (std::size_t s = 0; s < round0_.size(); ++s) {
            const sim::PlanStep& step = round0_.step(s);
            if (step.src != step.dst && remote(step.src, step.dst)) total += step.bytes;
        }
        return total;
    }
    [[nodiscard]] sim::Time alpha_beta(const sim::PathCostLookup& cost) const override {
        return sim::alpha_beta_time(round0_, cost);
    }

private:
    [[nodiscard]] sim::Plan plan_for(std::uint32_t round) const {
        sim::Plan plan = gossip_exchange(gossip_neighbours(GossipGraph::random_matching, n_, seed_, round), bytes_);
        plan.seal();
        return plan;
    }

    std::uint32_t n_;
    sim::Bytes bytes_;
    std::uint64_t seed_;
    sim::Plan round0_;
};

}  // namespace

std::pair<std::uint32_t, std::uint32_t> gossip_torus_shape(std::uint32_t n) {
    if (n == 0) return {0, 0};
    std::uint32_t x = 1;
    for (std::uint32_t d = 1; static_cast<std::uint64_t>(d) * d <= n; ++d)
        if (n % d == 0) x = d;
    return {x, n / x};
}

std::vector<std::uint32_t> gossip_matching(std::uint32_t n, std::uint64_t seed, std::uint32_t round) {
    std::vector<std::uint32_t> order(n);
    for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
    sim::rng::SplitMix64 g(sim::rng::substream(sim::rng::stream(seed, "gossip matching"), round));
    sim::rng::shuffle(g, std::span(order));
    std::vector<std::uint32_t> partner(n);
    for (std::uint32_t i = 0; i < n; ++i) partner[i] = i;
    for (std::uint32_t i = 0; i + 1 < n; i += 2) {
        partner[order[i]] = order[i + 1];
        partner[order[i + 1]] = order[i];
    }
    return partner;
}

std::vector<std::vector<std::uint32_t>> gossip_neighbours(GossipGraph graph, std::uint32_t n, std::uint64_t seed,
                                                          std::uint32_t round) {
    std::vector<std::vector<std::uint32_t>> out(n);
    switch (graph) {
        case GossipGraph::ring:
            for (std::uint32_t i = 0; i < n; ++i)
                for (std::uint32_t j : {(i + n - 1) % n, (i + 1) % n}) add_unique(out[i], i, j);
            break;
        case GossipGraph::torus: {
            const auto [x, y] = gossip_torus_shape(n);
            for (std::uint32_t i = 0; i < n; ++i) {
                const std::uint32_t r = i / y, c = i % y;
                for (std::uint32_t rr : {(r + x - 1) % x, (r + 1) % x}) add_unique(out[i], i, rr * y + c);
                for (std::uint32_t cc : {(c + y - 1) % y, (c + 1) % y}) add_unique(out[i], i, r * y + cc);
            }
            break;
        }
        case GossipGraph::exponential:
            for (std::uint32_t i = 0; i < n; ++i)
                for (std::uint64_t hop = 1; hop < n; hop *= 2)
                    add_unique(out[i], i, static_cast<std::uint32_t>((i + hop) % n));
            break;
        case GossipGraph::random_matching: {
            const auto partner = gossip_matching(n, seed, round);
            for (std::uint32_t i = 0; i < n; ++i) add_unique(out[i], i, partner[i]);
            break;
        }
        default: throw std::logic_error("unknown gossip graph");
    }
    return out;
}

std::vector<std::vector<MixingWeight>> metropolis_weights(const std::vector<std::vector<std::uint32_t>>& neighbours) {
    const auto n = static_cast<std::uint32_t>(neighbours.size());
    std::vector<std::vector<MixingWeight>> rows(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        double others = 0.0;
        for (std::uint32_t j : neighbours[i]) {
            const double w = 1.0 / static_cast<double>(1 + std::max(neighbours[i].size(), neighbours[j].size()));
            rows[i].push_back(MixingWeight{j, w});
            others += w;
        }
        rows[i].push_back(MixingWeight{i, 1.0 - others});
        std::sort(rows[i].begin(), rows[i].end(),
                  [](const MixingWeight& a, const MixingWeight& b) { return a.peer < b.peer; });
    }
    return rows;
}

std::vector<std::vector<MixingWeight>> gossip_mixing_weights(GossipGraph graph, std::uint32_t n, std::uint64_t seed,
                                                             std::uint32_t round) {
    const auto in = invert(gossip_neighbours(graph, n, seed, round));
    // Undirected graphs (ring, torus, a matching: 1/(1+1) = 1/2 per pair): Metropolis–Hastings.
    if (graph != GossipGraph::exponential) return metropolis_weights(in);
    // Directed exponential graph: uniform 1/(τ+1) over itself and its τ in-neighbours.
    std::vector<std::vector<MixingWeight>> rows(n);
    for (std::uint32_t i = 0; i < n; ++i) {
        const double w = 1.0 / static_cast<double>(in[i].size() + 1);
        rows[i].push_back(MixingWeight{i, w});
        for (std::uint32_t j : in[i]) rows[i].push_back(MixingWeight{j, w});
        std::sort(rows[i].begin(), rows[i].end(),
                  [](const MixingWeight& a, const MixingWeight& b) { return a.peer < b.peer; });
    }
    return rows;
}

sim::Plan gossip_exchange(const std::vector<std::vector<std::uint32_t>>& neighbours, sim::Bytes bytes) {
    sim::Plan plan;
    plan.endpoints = static_cast<std::uint32_t>(neighbours.size());
    for (std::uint32_t i = 0; i < neighbours.size(); ++i)
        for (std::uint32_t j : neighbours[i]) plan.add(i, j, bytes);
    return plan;
}

std::unique_ptr<Collective> make_gossip(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    if (spec.graph == GossipGraph::random_matching)
        return std::make_unique<MatchingGossip>(ctx.workers, ctx.bytes, ctx.seed);
    return std::make_unique<PlanCollective>(gossip_exchange(gossip_neighbours(spec.graph, ctx.workers), ctx.bytes));
}

RoundSize gossip_round_size(const ArchitectureSpec&, const RoundShape& shape) {
    const double n = shape.workers;
    if (n <= 1.0) return {0.0, true};
    return {2.0 * n * std::max(1.0, std::ceil(std::log2(std::max(n, 2.0)))), true};
}

}  // namespace ddlsim::topo
