// All-reduce algorithms (ring with segments, NCCL tree and double binary tree, Rabenseifner
// halving-doubling, hierarchical rails, 2D torus) as transfer DAGs; citations in the header.
#include "topologies/allreduce_algorithms.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

#include "topologies/allreduce_auto.hpp"
#include "topologies/in_network.hpp"
#include "topologies/ring_allreduce.hpp"
#include "topologies/sharded_collectives.hpp"

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

std::vector<std::vector<std::uint32_t>> nodes_of(const std::vector<std::uint32_t>& node_of, std::uint32_t n) {
    std::map<std::uint32_t, std::size_t> index;
    std::vector<std::vector<std::uint32_t>> nodes;
    for (std::uint32_t w = 0; w < n; ++w) {
        const std::uint32_t node = w < node_of.size() ? node_of[w] : w;
        const auto [it, fresh] = index.try_emplace(node, nodes.size());
        if (fresh) nodes.emplace_back();
        nodes[it->second].push_back(w);
    }
    return nodes;
}

sim::Plan node_tree_allreduce_plan(const std::vector<std::vector<std::uint32_t>>& nodes, std::uint32_t n,
                                   std::uint32_t channels, std::uint32_t trees, sim::Bytes bytes, sim::Bytes segment) {
    if (channels == 0 || trees == 0 || trees > 2) throw std::invalid_argument("node trees: 1 or 2 trees, >= 1 channel");
    sim::Plan plan = empty_plan(n);
    const auto count = static_cast<std::uint32_t>(nodes.size());
    std::vector<std::vector<std::uint32_t>> among{nccl_btree_parents(count)};
    if (trees == 2) among.push_back(nccl_second_tree_parents(count));
    const sim::Bytes share = bytes / static_cast<double>(channels * trees);
    std::vector<std::uint32_t> members, base(count), parents;
    for (std::uint32_t c = 0; c < channels; ++c) {
        members.clear();
        for (std::uint32_t a = 0; a < count; ++a) {
            const std::vector<std::uint32_t>& node = nodes[a];
            const std::size_t m = node.size(), rotation = c * m / channels;
            base[a] = static_cast<std::uint32_t>(members.size());
            for (std::size_t i = 0; i < m; ++i) members.push_back(node[(i + rotation) % m]);
        }
        for (const std::vector<std::uint32_t>& up : among) {
            parents.assign(members.size(), kNoParent);
            for (std::uint32_t a = 0; a < count; ++a) {
                const std::uint32_t end = a + 1 < count ? base[a + 1] : static_cast<std::uint32_t>(members.size());
                for (std::uint32_t i = base[a] + 1; i < end; ++i) parents[i] = i - 1;  // the node's chain
                if (up[a] != kNoParent) parents[base[a]] = base[up[a]];                // its head joins the tree
            }
            (void)tree_allreduce(plan, members, parents, share, tree_segment(share, segment), {});
        }
    }
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
    const std::vector<std::vector<std::uint32_t>> nodes = nodes_of(node_of, n);
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

namespace {

// Segments per step: a ring step moves a chunk of S/n, a tree pipelines the whole S (kDefaultTreeSegments per
// tree, two trees: 16, when no segment size is given), halving-doubling's steps halve the data.
double segments(double chunk, double segment) {
    return segment > 0.0 ? std::max(1.0, std::ceil(chunk / segment)) : 1.0;
}
double log2_steps(double n) {
    return std::max(1.0, std::ceil(std::log2(std::max(n, 2.0))));
}
double ring_transfers(double n, double bytes, double seg) {
    return 2.0 * n * (n - 1.0) * segments(bytes / n, seg);
}
double tree_transfers(double n, double bytes, double seg) {
    return 4.0 * n * (seg > 0.0 ? segments(bytes, seg) : 2.0 * kDefaultTreeSegments);
}
double halving_doubling_transfers(double n, double bytes, double seg) {
    return 2.0 * n * (log2_steps(n) + (seg > 0.0 ? 2.0 * bytes / seg : 0.0));
}
bool always_dag(double) {
    return true;
}

// NCCL's ring all-reduce runs on several channels, one ring each, built so that each ring enters and leaves a node
// through a different GPU and NIC (src/graph/search.cc of NVIDIA/nccl searches one ring per channel; NCCL user guide,
// "NCCL_MIN_NCHANNELS"): on nodes of m >= 2 workers with k >= 2 NICs, one ring of S/k per NIC (ctx.ring_channels: m
// where every GPU has its own; ring_channels, as sharded data parallelism's reduce-scatter and all-gather), so a
// multi-NIC node sends over all its NICs. One node, one worker per node, or one NIC per node: one ring.
// With segment_size the channels' rings are cut into segments in one plan.
std::unique_ptr<Collective> make_ring(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    const std::uint32_t n = ctx.workers;
    auto rings = ring_channels({iota(n)}, ctx.node_of, ctx.ring_channels);
    const double c = static_cast<double>(rings.size());
    if (spec.segment_size.value() > 0.0) {
        sim::Plan plan = empty_plan(n);
        for (const auto& channel : rings)
            (void)ring_allreduce(plan, channel.front(), ctx.bytes / c, spec.segment_size, {});
        return std::make_unique<PlanCollective>(std::move(plan));
    }
    if (rings.size() == 1) return std::make_unique<RingAllreduce>(n, ctx.bytes);
    std::vector<std::unique_ptr<Collective>> parts;
    for (auto& channel : rings)
        parts.push_back(std::make_unique<RingCollective>(n, std::move(channel), ctx.bytes / c / n, 2 * (n - 1)));
    return std::make_unique<ParallelCollective>(std::move(parts));
}
// NCCL's trees on multi-GPU nodes (src/graph/connect.cc, connectTrees, @5067397c): per channel the ranks of a node
// form a chain whose head joins the binary tree among nodes (ncclGetBtree over nodes, not ranks); the double tree
// runs ncclGetDtree's second tree on a copy of every channel (channel c + nChannels). Channel c's chain starts at the
// node's worker c m / C, the GPU beside NIC c, so C = ctx.ring_channels trees leave a node by C NICs, as the rings do
// (ring_channels; 1 where the nodes differ in size). One worker per node (or one node): the tree over workers.
std::unique_ptr<Collective> make_node_trees(const ArchitectureSpec& spec, const CollectiveContext& ctx,
                                            std::uint32_t trees) {
    const std::vector<std::vector<std::uint32_t>> nodes = nodes_of(ctx.node_of, ctx.workers);
    const bool multi_gpu =
        nodes.size() >= 2 && std::any_of(nodes.begin(), nodes.end(), [](const auto& node) { return node.size() > 1; });
    if (!multi_gpu)
        return std::make_unique<PlanCollective>(
            trees == 2 ? double_tree_allreduce_plan(ctx.workers, ctx.bytes, spec.segment_size)
                       : tree_allreduce_plan(ctx.workers, ctx.bytes, spec.segment_size));
    const bool uniform =
        std::all_of(nodes.begin(), nodes.end(), [&](const auto& node) { return node.size() == nodes.front().size(); });
    const std::uint32_t channels = uniform ? std::max<std::uint32_t>(1, ctx.ring_channels) : 1;
    return std::make_unique<PlanCollective>(
        node_tree_allreduce_plan(nodes, ctx.workers, channels, trees, ctx.bytes, spec.segment_size));
}
std::unique_ptr<Collective> make_tree(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    return make_node_trees(spec, ctx, 1);
}
std::unique_ptr<Collective> make_double_tree(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    return make_node_trees(spec, ctx, 2);
}
std::unique_ptr<Collective> make_halving_doubling(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    return std::make_unique<PlanCollective>(halving_doubling_allreduce_plan(ctx.workers, ctx.bytes, spec.segment_size));
}
std::unique_ptr<Collective> make_hierarchical(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    return std::make_unique<PlanCollective>(
        hierarchical_allreduce_plan(ctx.node_of, ctx.workers, ctx.bytes, spec.segment_size));
}
std::unique_ptr<Collective> make_torus2d(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    return std::make_unique<PlanCollective>(torus2d_allreduce_plan(ctx.workers, ctx.bytes, spec.segment_size));
}

// One line per algorithm (its name and description: k_allreduce_algorithms in collectives.hpp). Hierarchical and
// torus2d run rings of fewer workers, so the ring's count bounds theirs.
constexpr std::array<AllreduceAlgorithmInfo, 8> k_algorithms{{
    {AllreduceAlgorithm::ring, make_ring, ring_transfers, [](double seg) { return seg > 0.0; }},
    {AllreduceAlgorithm::tree, make_tree, tree_transfers, always_dag},
    {AllreduceAlgorithm::double_tree, make_double_tree, tree_transfers, always_dag},
    {AllreduceAlgorithm::halving_doubling, make_halving_doubling, halving_doubling_transfers, always_dag},
    {AllreduceAlgorithm::hierarchical, make_hierarchical, ring_transfers, always_dag},
    {AllreduceAlgorithm::torus2d, make_torus2d, ring_transfers, always_dag},
    {AllreduceAlgorithm::nvls, make_nvls, nvls_transfers, always_dag},
    {AllreduceAlgorithm::collnet, make_collnet, collnet_transfers, always_dag},
}};

}  // namespace

std::span<const AllreduceAlgorithmInfo> allreduce_algorithms() {
    return k_algorithms;
}

const AllreduceAlgorithmInfo& allreduce_algorithm(AllreduceAlgorithm a) {
    for (const AllreduceAlgorithmInfo& info : k_algorithms)
        if (info.algorithm == a) return info;
    throw std::logic_error("unknown all-reduce algorithm");
}

std::unique_ptr<Collective> make_allreduce(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    if (spec.segment_size.value() < 0.0) throw std::invalid_argument("all-reduce: segment_size must not be negative");
    if (spec.algorithm == AllreduceAlgorithm::automatic) {
        ArchitectureSpec picked = spec;
        picked.algorithm = pick_allreduce(spec, ctx);
        return allreduce_algorithm(picked.algorithm).make(picked, ctx);
    }
    return allreduce_algorithm(spec.algorithm).make(spec, ctx);
}

RoundSize allreduce_round_size(const ArchitectureSpec& spec, const RoundShape& shape) {
    if (spec.algorithm == AllreduceAlgorithm::automatic) {
        // Before anything is built the pick is unknown: the largest of every candidate auto may take.
        RoundSize most{0.0, false};
        ArchitectureSpec concrete = spec;
        for (AllreduceAlgorithm a : k_auto_pool) {
            concrete.algorithm = a;
            const RoundSize r = allreduce_round_size(concrete, shape);
            most.transfers = std::max(most.transfers, r.transfers);
            most.explicit_dag = most.explicit_dag || r.explicit_dag;
            if (r.explicit_dag) most.dag_transfers = std::max(most.dag_transfers, r.transfers);
        }
        return most;
    }
    const AllreduceAlgorithmInfo& info = allreduce_algorithm(spec.algorithm);
    const double seg = spec.segment_size.value();
    if (shape.workers <= 1.0) return {0.0, info.explicit_dag(seg)};  // one worker alone: no traffic
    // The unsegmented ring and the trees run one channel per NIC of a node when the job spans several nodes
    // (make_ring, make_node_trees: m where every GPU has one; m also where k does not divide m), each carrying S / c.
    const double g = std::max(1.0, shape.machine_gpus);
    const double k = std::min(g, shape.machine_nics);
    const bool per_channel = spec.algorithm == AllreduceAlgorithm::tree ||
                             spec.algorithm == AllreduceAlgorithm::double_tree ||
                             spec.algorithm == AllreduceAlgorithm::ring;
    const double channels = per_channel && k >= 2.0 && shape.workers > g ? (std::fmod(g, k) == 0.0 ? k : g) : 1.0;
    if (spec.algorithm == AllreduceAlgorithm::hierarchical && g >= 2.0 && shape.workers > g) {
        // Equal nodes of g: each node's reduce-scatter and all-gather, g(g - 1) transfers each, and g rail rings of
        // N = n / g nodes, 2 N (N - 1) each: 2 n (g + N - 2), times the segments of the largest chunk (S / g).
        const double n = shape.workers, nodes = std::ceil(n / g);
        return {2.0 * n * (g + nodes - 2.0) * segments(shape.bytes.value() / g, seg), true};
    }
    return {channels * info.transfers(shape.workers, shape.bytes.value() / channels, seg), info.explicit_dag(seg)};
}

}  // namespace ddlsim::topo
