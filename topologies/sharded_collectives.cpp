#include "topologies/sharded_collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "topologies/allreduce_primitives.hpp"
#include "topologies/ring_allreduce.hpp"

namespace ddlsim::topo {

std::vector<std::vector<std::uint32_t>> shard_groups(const std::vector<std::uint32_t>& node_of, std::uint32_t n,
                                                     bool by_node) {
    std::vector<std::vector<std::uint32_t>> groups;
    if (!by_node) {
        groups.emplace_back();
        for (std::uint32_t w = 0; w < n; ++w) groups.front().push_back(w);
        return groups;
    }
    std::map<std::uint32_t, std::size_t> index;  // node -> group, in order of the node's first worker
    for (std::uint32_t w = 0; w < n; ++w) {
        const std::uint32_t node = w < node_of.size() ? node_of[w] : w;
        const auto it = index.try_emplace(node, groups.size()).first;
        if (it->second == groups.size()) groups.emplace_back();
        groups[it->second].push_back(w);
    }
    for (const auto& g : groups)
        if (g.size() != groups.front().size())
            throw std::invalid_argument(
                fmt::format("hybrid sharding needs the same number of workers on every node, got {} and {} (place "
                            "the workers evenly, or shard over \"all\")",
                            groups.front().size(), g.size()));
    return groups;
}

namespace {

class ParallelRound final : public sim::Round {
public:
    ParallelRound(std::size_t parts, std::uint32_t endpoints, sim::EndpointDone on_done)
        : left_(endpoints, static_cast<std::uint32_t>(parts)), on_done_(std::move(on_done)) {}
    void add(std::unique_ptr<sim::Round> r) { rounds_.push_back(std::move(r)); }
    void part_done(std::uint32_t e) {
        if (--left_[e] == 0) on_done_(e);
    }
    void open(std::uint32_t e) override {
        for (auto& r : rounds_) r->open(e);
    }

private:
    std::vector<std::unique_ptr<sim::Round>> rounds_;
    std::vector<std::uint32_t> left_;
    sim::EndpointDone on_done_;
};

}  // namespace

std::vector<std::vector<std::vector<std::uint32_t>>> ring_channels(
    const std::vector<std::vector<std::uint32_t>>& groups, const std::vector<std::uint32_t>& node_of,
    std::uint32_t channels) {
    std::vector<std::vector<std::vector<std::uint32_t>>> out{groups};
    if (node_of.empty() || channels < 2) return out;
    std::size_t m = 0;
    std::vector<std::vector<std::vector<std::uint32_t>>> by_node;  // per group: its nodes' workers
    for (const auto& group : groups) {
        std::map<std::uint32_t, std::size_t> index;
        auto& nodes = by_node.emplace_back();
        for (std::uint32_t w : group) {
            const auto it = index.try_emplace(w < node_of.size() ? node_of[w] : w, nodes.size()).first;
            if (it->second == nodes.size()) nodes.emplace_back();
            nodes[it->second].push_back(w);
        }
        if (nodes.size() < 2) return out;
        for (const auto& node : nodes) {
            if (m == 0) m = node.size();
            if (node.size() != m) return out;
        }
    }
    if (m < 2) return out;
    const std::size_t c = m % channels == 0 ? channels : m;
    out.assign(c, {});
    for (std::size_t i = 0; i < c; ++i)
        for (const auto& nodes : by_node) {
            auto& ring = out[i].emplace_back();
            const std::size_t rotation = i * m / c;
            for (const auto& node : nodes)
                for (std::size_t j = 0; j < m; ++j) ring.push_back(node[(j + rotation) % m]);
        }
    return out;
}

ParallelCollective::ParallelCollective(std::vector<std::unique_ptr<Collective>> parts) : parts_(std::move(parts)) {
    if (parts_.empty()) throw std::invalid_argument("a parallel collective needs at least one part");
}

std::unique_ptr<sim::Round> ParallelCollective::start_round(sim::Engine& engine, sim::Network& network,
                                                            sim::RouteLookup routes, sim::EndpointDone on_done,
                                                            std::uint32_t round) const {
    auto r = std::make_unique<ParallelRound>(parts_.size(), endpoints(), std::move(on_done));
    ParallelRound* self = r.get();
    for (const auto& p : parts_)
        r->add(p->start_round(
            engine, network, routes, [self](std::uint32_t e) { self->part_done(e); }, round));
    return r;
}

std::unique_ptr<sim::Round> ParallelCollective::start_class_round(sim::Engine& engine, sim::Network& network,
                                                                  sim::ShiftQuotient& q, sim::EndpointDone on_done,
                                                                  std::uint32_t round) const {
    auto r = std::make_unique<ParallelRound>(parts_.size(), q.period(), std::move(on_done));
    ParallelRound* self = r.get();
    for (const auto& p : parts_) {
        auto part = p->start_class_round(
            engine, network, q, [self](std::uint32_t c) { self->part_done(c); }, round);
        if (!part) return nullptr;
        r->add(std::move(part));
    }
    return r;
}

sim::Bytes ParallelCollective::wire_bytes(const RemoteTest& remote) const {
    sim::Bytes b{0.0};
    for (const auto& p : parts_) b = b + p->wire_bytes(remote);
    return b;
}

sim::Time ParallelCollective::least_time(const sim::PathCostLookup& cost, std::uint32_t e) const {
    sim::Time t;
    for (const auto& p : parts_) t = std::max(t, p->least_time(cost, e));
    return t;
}

sim::Time ParallelCollective::alpha_beta(const sim::PathCostLookup& cost) const {
    sim::Time t;
    for (const auto& p : parts_) t = std::max(t, p->alpha_beta(cost));
    return t;
}

std::unique_ptr<Collective> make_all_to_all(const std::vector<std::vector<std::uint32_t>>& groups, std::uint32_t n,
                                            sim::Bytes bytes, double hot, bool into_first) {
    sim::Plan plan;
    plan.endpoints = n;
    for (const auto& group : groups) {
        const auto g = static_cast<double>(group.size());
        if (group.size() < 2) continue;
        const double h = std::clamp(hot, 1.0, g), rest = (g - h) / (g - 1.0);
        for (std::size_t i = 0; i < group.size(); ++i)
            for (std::size_t j = 0; j < group.size(); ++j) {
                if (i == j) continue;
                const std::size_t skewed = into_first ? j : i;
                const sim::Bytes share = bytes / g * (skewed == 0 ? h : rest);
                if (share.value() > 0.0) (void)plan.add(group[i], group[j], share, {});
            }
    }
    plan.seal();
    return std::make_unique<PlanCollective>(std::move(plan));
}

std::unique_ptr<Collective> make_hierarchical_all_to_all(const std::vector<std::vector<std::uint32_t>>& nodes,
                                                         std::uint32_t n, sim::Bytes intra, sim::Bytes inter) {
    sim::Plan plan;
    plan.endpoints = n;
    StepSets after(n);  // per worker: the steps its first part ended with
    for (const auto& node : nodes) {
        const StepSets end = all_to_all(plan, node, intra, sim::Bytes{0.0}, StepSets(node.size()));
        for (std::size_t i = 0; i < node.size(); ++i) after[node[i]] = end[i];
    }
    const std::size_t m = nodes.empty() ? 0 : nodes.front().size();
    for (std::size_t j = 0; j < m; ++j) {
        std::vector<std::uint32_t> rail;
        StepSets start;
        for (const auto& node : nodes) {
            rail.push_back(node.at(j));
            start.push_back(after[node[j]]);
        }
        (void)all_to_all(plan, rail, inter, sim::Bytes{0.0}, start);
    }
    plan.seal();
    return std::make_unique<PlanCollective>(std::move(plan));
}

std::unique_ptr<Collective> make_shard_collective(ShardCollective op,
                                                  const std::vector<std::vector<std::uint32_t>>& groups,
                                                  std::uint32_t n, sim::Bytes bytes, const CollectiveContext* ctx) {
    const auto g = static_cast<std::uint32_t>(groups.empty() ? 1 : groups.front().size());
    if (op != ShardCollective::replica_allreduce) {
        auto rings =
            ctx == nullptr ? ring_channels(groups, {}, 1) : ring_channels(groups, ctx->node_of, ctx->ring_channels);
        if (rings.size() == 1) return std::make_unique<RingCollective>(n, groups, bytes / g, g - 1);
        const double c = static_cast<double>(rings.size());
        std::vector<std::unique_ptr<Collective>> parts;
        for (auto& channel : rings)
            parts.push_back(std::make_unique<RingCollective>(n, std::move(channel), bytes / c / g, g - 1));
        return std::make_unique<ParallelCollective>(std::move(parts));
    }
    // Rails: rank j of every group.
    const auto r = static_cast<std::uint32_t>(groups.size());
    std::vector<std::vector<std::uint32_t>> rails(g);
    for (const auto& group : groups)
        for (std::uint32_t j = 0; j < g; ++j) rails[j].push_back(group[j]);
    return std::make_unique<RingCollective>(n, std::move(rails), bytes / g / r, r < 2 ? 0 : 2 * (r - 1));
}

}  // namespace ddlsim::topo
