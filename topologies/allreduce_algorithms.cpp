// All-reduce algorithms (ring with segments, NCCL tree and double binary tree, Rabenseifner
// halving-doubling, hierarchical rails, 2D torus) as transfer DAGs; citations in the header.
#include "topologies/allreduce_algorithms.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

#include "topologies/ring_allreduce.hpp"

namespace ddlsim::topo {
namespace {

sim::Plan empty_plan(std::uint32_t n) {
    sim::Plan plan;
    plan.endpoints = n;
    return plan;
}

std::vector<std::uint32_t> iota(std::uint32_t n) {
    std::vector<std::uint32_t> v(n);
    std::iota(v.begin(), v.end(), 0U);
    return v;
}

sim::Bytes tree_segment(sim::Bytes message, sim::Bytes segment) {
    return segment.value() > 0.0 ? segment : message / kDefaultTreeSegments;
}

/// Reduce-scatter within each group, ring all-reduce of each shard along rails (rank j of every group), then
/// all-gather within each group. All groups must have the same size.
void grouped_allreduce(sim::Plan& plan, const std::vector<std::vector<std::uint32_t>>& groups, sim::Bytes bytes,
                       sim::Bytes segment) {
    const auto ngroups = static_cast<std::uint32_t>(groups.size());
    const auto g = static_cast<std::uint32_t>(groups.front().size());
    std::vector<StepSets> state(ngroups);
    for (std::uint32_t a = 0; a < ngroups; ++a) state[a] = ring_reduce_scatter(plan, groups[a], bytes, segment, {});
    for (std::uint32_t j = 0; j < g; ++j) {
        std::vector<std::uint32_t> rail(ngroups);
        StepSets start(ngroups);
        for (std::uint32_t a = 0; a < ngroups; ++a) {
            rail[a] = groups[a][j];
            start[a] = state[a][j];
        }
        const StepSets end = ring_allreduce(plan, rail, bytes / g, segment, start);
        for (std::uint32_t a = 0; a < ngroups; ++a) state[a][j] = end[a];
    }
    for (std::uint32_t a = 0; a < ngroups; ++a) (void)ring_all_gather(plan, groups[a], bytes, segment, state[a]);
}

}  // namespace

sim::Plan segmented_ring_allreduce_plan(std::uint32_t n, sim::Bytes bytes, sim::Bytes segment) {
    sim::Plan plan = empty_plan(n);
    (void)ring_allreduce(plan, iota(n), bytes, segment, {});
    return plan;
}

sim::Plan tree_allreduce_plan(std::uint32_t n, sim::Bytes bytes, sim::Bytes segment) {
    sim::Plan plan = empty_plan(n);
    (void)tree_allreduce(plan, iota(n), nccl_btree_parents(n), bytes, tree_segment(bytes, segment), {});
    return plan;
}

sim::Plan double_tree_allreduce_plan(std::uint32_t n, sim::Bytes bytes, sim::Bytes segment) {
    sim::Plan plan = empty_plan(n);
    const std::vector<std::uint32_t> members = iota(n);
    const sim::Bytes half = bytes / 2.0;
    (void)tree_allreduce(plan, members, nccl_btree_parents(n), half, tree_segment(half, segment), {});
    (void)tree_allreduce(plan, members, nccl_second_tree_parents(n), half, tree_segment(half, segment), {});
    return plan;
}

sim::Plan halving_doubling_allreduce_plan(std::uint32_t n, sim::Bytes bytes, sim::Bytes segment) {
    sim::Plan plan = empty_plan(n);
    (void)halving_doubling(plan, iota(n), bytes, segment, {});
    return plan;
}

sim::Plan hierarchical_allreduce_plan(const std::vector<std::uint32_t>& node_of, std::uint32_t n, sim::Bytes bytes,
                                      sim::Bytes segment) {
    if (!node_of.empty() && node_of.size() != n)
        throw std::invalid_argument("hierarchical all-reduce: node_of must name a node for every worker");
    sim::Plan plan = empty_plan(n);
    if (n < 2) return plan;
    // Nodes in order of their first worker; each node's workers in id order.
    std::map<std::uint32_t, std::size_t> index;
    std::vector<std::vector<std::uint32_t>> nodes;
    for (std::uint32_t w = 0; w < n; ++w) {
        const std::uint32_t node = node_of.empty() ? w : node_of[w];
        const auto [it, fresh] = index.try_emplace(node, nodes.size());
        if (fresh) nodes.emplace_back();
        nodes[it->second].push_back(w);
    }
    const bool uniform =
        std::all_of(nodes.begin(), nodes.end(), [&](const auto& node) { return node.size() == nodes.front().size(); });
    if (uniform) {
        grouped_allreduce(plan, nodes, bytes, segment);
        return plan;
    }
    // Uneven nodes: binomial reduce to each node's first worker, ring all-reduce among leaders, broadcast back.
    std::vector<std::uint32_t> leaders;
    StepSets leader_start;
    std::vector<StepSets> reduced;
    for (const auto& node : nodes) {
        reduced.push_back(reduce(plan, node, bytes, segment, {}));
        leaders.push_back(node.front());
        leader_start.push_back(reduced.back().front());
    }
    const StepSets leader_end = ring_allreduce(plan, leaders, bytes, segment, leader_start);
    for (std::size_t a = 0; a < nodes.size(); ++a) {
        StepSets start = reduced[a];
        start.front() = leader_end[a];
        (void)broadcast(plan, nodes[a], bytes, segment, start);
    }
    return plan;
}

std::pair<std::uint32_t, std::uint32_t> torus2d_grid(std::uint32_t n) {
    if (n == 0) return {1, 0};
    std::uint32_t x = 1;
    for (std::uint32_t d = 1; static_cast<std::uint64_t>(d) * d <= n; ++d)
        if (n % d == 0) x = d;
    return {x, n / x};
}

sim::Plan torus2d_allreduce_plan(std::uint32_t n, sim::Bytes bytes, sim::Bytes segment) {
    sim::Plan plan = empty_plan(n);
    if (n < 2) return plan;
    const auto [x, y] = torus2d_grid(n);
    std::vector<std::vector<std::uint32_t>> rows(y);
    for (std::uint32_t w = 0; w < n; ++w) rows[w / x].push_back(w);
    grouped_allreduce(plan, rows, bytes, segment);
    return plan;
}

std::unique_ptr<Collective> make_allreduce(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    const std::uint32_t n = ctx.workers;
    const sim::Bytes bytes = ctx.bytes;
    const sim::Bytes seg = spec.segment_size;
    if (seg.value() < 0.0) throw std::invalid_argument("all-reduce: segment_size must not be negative");
    switch (spec.algorithm) {
        case AllreduceAlgorithm::ring:
            if (seg.value() <= 0.0) return std::make_unique<RingAllreduce>(n, bytes);
            return std::make_unique<PlanCollective>(segmented_ring_allreduce_plan(n, bytes, seg));
        case AllreduceAlgorithm::tree: return std::make_unique<PlanCollective>(tree_allreduce_plan(n, bytes, seg));
        case AllreduceAlgorithm::double_tree:
            return std::make_unique<PlanCollective>(double_tree_allreduce_plan(n, bytes, seg));
        case AllreduceAlgorithm::halving_doubling:
            return std::make_unique<PlanCollective>(halving_doubling_allreduce_plan(n, bytes, seg));
        case AllreduceAlgorithm::hierarchical:
            return std::make_unique<PlanCollective>(hierarchical_allreduce_plan(ctx.node_of, n, bytes, seg));
        case AllreduceAlgorithm::torus2d:
            return std::make_unique<PlanCollective>(torus2d_allreduce_plan(n, bytes, seg));
    }
    throw std::logic_error("unknown all-reduce algorithm");
}

}  // namespace ddlsim::topo
