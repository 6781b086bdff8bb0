// In-network aggregation (NVLink SHARP, InfiniBand SHARP); the models and their sources in the header.
#include "topologies/in_network.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "topologies/allreduce_algorithms.hpp"
#include "topologies/allreduce_primitives.hpp"

namespace ddlsim::topo {
namespace {

using Steps = std::vector<std::uint32_t>;

// Segments in flight per GPU and direction: two, so that one transfer's start-up cost (the link's per-transfer
// overhead) hides behind the other's bytes, as NCCL's channels keep several chunks in flight.
constexpr std::uint32_t kNvlsWindow = 2;

/// The workers of each node, by node id; throws unless every id below the largest holds the same number.
std::vector<Steps> nodes_by_id(const std::vector<std::uint32_t>& node_of, std::uint32_t n) {
    if (node_of.size() != n) throw std::invalid_argument("nvls: node_of must name a node for every worker");
    std::vector<Steps> nodes;
    for (std::uint32_t w = 0; w < n; ++w) {
        if (node_of[w] >= nodes.size()) nodes.resize(node_of[w] + 1);
        nodes[node_of[w]].push_back(w);
    }
    for (const Steps& node : nodes)
        if (node.size() != nodes.front().size())
            throw std::invalid_argument("nvls: every node must hold the same number of workers");
    return nodes;
}

// Segments of a round: `segment` bytes each, or by default one loop of NCCL's channels for g GPUs per node.
std::uint32_t nvls_segments(sim::Bytes bytes, sim::Bytes segment, std::uint32_t g) {
    return segment_count(bytes, segment.value() > 0.0 ? segment : nvls_default_segment(g));
}

// Segments of a collnet round: `segment` bytes each, or by default one CollNetDirect loop of g heads.
std::uint32_t collnet_segments(sim::Bytes bytes, sim::Bytes segment, std::uint32_t g) {
    return segment_count(bytes, segment.value() > 0.0 ? segment : sim::Bytes{g * kCollnetChunk});
}

}  // namespace

sim::Plan nvls_allreduce_plan(const std::vector<std::uint32_t>& node_of, std::uint32_t n, sim::Bytes bytes,
                              sim::Bytes segment, double efficiency) {
    if (!(efficiency > 0.0 && efficiency <= 1.0))
        throw std::invalid_argument("nvls: the switch's efficiency must lie in (0, 1]");
    const std::vector<Steps> nodes = nodes_by_id(node_of, n);
    sim::Plan plan;
    plan.endpoints = n + static_cast<std::uint32_t>(nodes.size());
    if (n < 2) return plan;
    const auto g = static_cast<std::uint32_t>(nodes.front().size());
    const std::uint32_t k = nvls_segments(bytes, segment, g);
    const double f = 1.0 / efficiency;
    const sim::Bytes piece = bytes / k * f;  // a segment, as the switch's transfers charge it
    const sim::Bytes chunk = piece / g;      // one GPU's share of a segment
    const std::size_t m = nodes.size();
    // Per [node * g + rank][segment]: the GPU's transfer up, the summed chunk back, its store, the multicast to it.
    std::vector<Steps> up(m * g, Steps(k)), back(m * g, Steps(k)), store(m * g, Steps(k)), cast(m * g, Steps(k));
    auto window = [](const Steps& chain, std::uint32_t c, Steps after) {
        if (c >= kNvlsWindow) after.push_back(chain[c - kNvlsWindow]);
        return after;
    };
    const std::vector<std::uint32_t> parents = nccl_btree_parents(static_cast<std::uint32_t>(m));
    for (std::uint32_t c = 0; c < k; ++c) {
        // Reduce: every GPU sends the segment up; once all of it is in, the switch returns each its summed chunk.
        for (std::size_t a = 0; a < m; ++a) {
            const auto sw = static_cast<std::uint32_t>(n + a);
            Steps all_in;
            for (std::uint32_t i = 0; i < g; ++i) {
                const std::size_t r = a * g + i;
                up[r][c] = plan.add(nodes[a][i], sw, piece, window(up[r], c, {}));
                all_in.push_back(up[r][c]);
            }
            const std::uint32_t summed = plan.add_work(sw, sim::Time::zero(), all_in);
            for (std::uint32_t i = 0; i < g; ++i) {
                const std::size_t r = a * g + i;
                back[r][c] = plan.add(sw, nodes[a][i], chunk, window(back[r], c, {summed}));
            }
        }
        // Several nodes: GPU j's summed chunk of the segment is all-reduced along rail j by NCCL's binary tree
        // (NVLSTree; the network's bytes carry no NVLS overhead).
        StepSets ready(m * g);
        for (std::size_t r = 0; r < m * g; ++r) ready[r] = {back[r][c]};
        if (m > 1)
            for (std::uint32_t j = 0; j < g; ++j) {
                std::vector<std::uint32_t> rail;
                StepSets start;
                for (std::size_t a = 0; a < m; ++a) {
                    rail.push_back(nodes[a][j]);
                    start.push_back({back[a * g + j][c]});
                }
                const sim::Bytes part = bytes / k / g;
                const StepSets end = tree_allreduce(plan, rail, parents, part, part, start);
                for (std::size_t a = 0; a < m; ++a) ready[a * g + j] = end[a];
            }
        // Broadcast: every GPU stores its chunk into the switch, which multicasts the segment to every GPU.
        for (std::size_t a = 0; a < m; ++a) {
            const auto sw = static_cast<std::uint32_t>(n + a);
            Steps all_in;
            for (std::uint32_t i = 0; i < g; ++i) {
                const std::size_t r = a * g + i;
                store[r][c] = plan.add(nodes[a][i], sw, chunk, window(store[r], c, ready[r]));
                all_in.push_back(store[r][c]);
            }
            const std::uint32_t stored = plan.add_work(sw, sim::Time::zero(), all_in);
            for (std::uint32_t i = 0; i < g; ++i) {
                const std::size_t r = a * g + i;
                cast[r][c] = plan.add(sw, nodes[a][i], piece, window(cast[r], c, {stored}));
            }
        }
    }
    return plan;
}

namespace {

// The nvls plan, run as a DAG; its closed form is its own: the α-β levels of a DAG serialise an endpoint's sends,
// which for a switch multicasting on g links of its own would count g transfers one after another.
class NvlsCollective final : public PlanCollective {
public:
    NvlsCollective(const ArchitectureSpec& spec, const CollectiveContext& ctx)
        : PlanCollective(
              nvls_allreduce_plan(ctx.node_of, ctx.workers, ctx.bytes, spec.segment_size, ctx.switch_reduction)),
          nodes_(nodes_by_id(ctx.node_of, ctx.workers)),
          n_(ctx.workers),
          bytes_(ctx.bytes.value()),
          f_(1.0 / ctx.switch_reduction),
          height_(tree_height(nccl_btree_parents(static_cast<std::uint32_t>(nodes_.size())))),
          k_(nvls_segments(ctx.bytes, spec.segment_size, static_cast<std::uint32_t>(nodes_.front().size()))) {}
    /// The two pipelined stages' streaming times, the longer plus one segment of the shorter: inside the node each
    /// GPU moves f S (1 + 1/g) each way over its link to the switch (plus four latencies); along the rails a
    /// pipelined binary tree moves S/g each way between two nodes and up to 3 S/g through an inner node of more
    /// (up to its parent and down to two children), plus the tree's height twice in latencies.
    [[nodiscard]] sim::Time alpha_beta(const sim::PathCostLookup& cost) const override {
        if (n_ < 2) return sim::Time::zero();
        const double g = static_cast<double>(nodes_.front().size());
        double intra = 0.0, rail = 0.0;
        for (std::size_t a = 0; a < nodes_.size(); ++a)
            for (std::size_t i = 0; i < nodes_[a].size(); ++i) {
                const sim::PathCost up = cost(nodes_[a][i], n_ + static_cast<std::uint32_t>(a));
                intra = std::max(
                    intra, 4.0 * up.latency.seconds() + f_ * bytes_ * (1.0 + 1.0 / g) / up.bandwidth.bytes_per_s());
                if (nodes_.size() < 2) continue;
                const sim::PathCost next = cost(nodes_[a][i], nodes_[(a + 1) % nodes_.size()][i]);
                const double through = (nodes_.size() == 2 ? 1.0 : 3.0) * bytes_ / g;
                rail = std::max(rail, 2.0 * height_ * next.latency.seconds() + through / next.bandwidth.bytes_per_s());
            }
        return sim::Time::seconds(std::max(intra, rail) + std::min(intra, rail) / k_);
    }

private:
    std::vector<Steps> nodes_;
    std::uint32_t n_;
    double bytes_, f_;
    double height_;
    double k_;
};

}  // namespace

std::unique_ptr<Collective> make_nvls(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    if (!(ctx.switch_reduction > 0.0))
        throw std::invalid_argument("nvls: the job's nodes have no switch that reduces (NVLink SHARP)");
    return std::make_unique<NvlsCollective>(spec, ctx);
}

sim::Bytes nvls_default_segment(std::uint32_t g) {
    return sim::Bytes{static_cast<double>(kNvlsChannels) * g * kNvlsChunk};
}

double nvls_transfers(double n, double bytes, double segment) {
    // The smallest default segment (two GPUs per node) bounds the count from above.
    const double k = std::max(1.0, std::ceil(bytes / (segment > 0.0 ? segment : nvls_default_segment(2).value())));
    // Per GPU and segment: four transfers inside the node and at most two in its rail's tree (each rail of m has
    // 2(m - 1) edge crossings, up and down).
    return k * n * 6.0;
}

sim::Plan collnet_allreduce_plan(const std::vector<std::uint32_t>& node_of, std::uint32_t n, sim::Bytes bytes,
                                 sim::Bytes segment, std::uint32_t base, double efficiency) {
    if (!(efficiency > 0.0 && efficiency <= 1.0))
        throw std::invalid_argument("collnet: the switches' efficiency must lie in (0, 1]");
    const std::vector<Steps> nodes = nodes_by_id(node_of, n);
    if (base < n) throw std::invalid_argument("collnet: the switches' endpoints must follow the workers");
    const auto g = static_cast<std::uint32_t>(nodes.front().size());
    sim::Plan plan;
    plan.endpoints = base + g;
    if (nodes.size() < 2) return plan;
    const std::uint32_t k = collnet_segments(bytes, segment, g);
    const sim::Bytes chunk = bytes / k / g;         // a head's share of a segment
    const sim::Bytes charged = chunk / efficiency;  // as the switch's transfers charge it
    const std::size_t m = nodes.size();
    auto window = [](const Steps& chain, std::uint32_t c, Steps after) {
        if (c >= kNvlsWindow) after.push_back(chain[c - kNvlsWindow]);
        return after;
    };
    // Per [node * g + head][segment]: the head's transfer up to its rail's switch and the total back to it.
    std::vector<Steps> up(m * g, Steps(k)), down(m * g, Steps(k));
    // Per [node * g + gpu][segment]: the GPU's last scatter and gather sends (its window).
    std::vector<Steps> scatter(m * g, Steps(k)), gather(m * g, Steps(k));
    for (std::uint32_t c = 0; c < k; ++c) {
        for (std::uint32_t j = 0; j < g; ++j) {
            const std::uint32_t sw = base + j;
            Steps all_in;
            for (std::size_t a = 0; a < m; ++a) {
                // Scatter: every other GPU of the node sends head j its share of the segment.
                Steps in;
                for (std::uint32_t i = 0; i < g; ++i) {
                    if (i == j) continue;
                    const std::size_t r = a * g + i;
                    const Steps prior = window(scatter[r], c, {});
                    in.push_back(plan.add(nodes[a][i], nodes[a][j], chunk, prior));
                    scatter[r][c] = in.back();
                }
                const std::size_t h = a * g + j;
                up[h][c] = plan.add(nodes[a][j], sw, charged, window(up[h], c, in));
                all_in.push_back(up[h][c]);
            }
            const std::uint32_t summed = plan.add_work(sw, sim::Time::zero(), all_in);
            for (std::size_t a = 0; a < m; ++a) {
                const std::size_t h = a * g + j;
                down[h][c] = plan.add(sw, nodes[a][j], charged, window(down[h], c, {summed}));
                // Gather: head j hands every other GPU of its node the total share.
                for (std::uint32_t i = 0; i < g; ++i)
                    if (i != j)
                        gather[h][c] = plan.add(nodes[a][j], nodes[a][i], chunk, window(gather[h], c, {down[h][c]}));
            }
        }
    }
    return plan;
}

namespace {

// The collnet plan, run as a DAG; its closed form is its own (as nvls's: a switch returning to m heads at once).
class CollnetCollective final : public PlanCollective {
public:
    CollnetCollective(const ArchitectureSpec& spec, const CollectiveContext& ctx)
        : PlanCollective(collnet_allreduce_plan(ctx.node_of, ctx.workers, ctx.bytes, spec.segment_size,
                                                ctx.network_switches, ctx.network_reduction)),
          nodes_(nodes_by_id(ctx.node_of, ctx.workers)),
          base_(ctx.network_switches),
          bytes_(ctx.bytes.value()),
          f_(1.0 / ctx.network_reduction),
          k_(collnet_segments(ctx.bytes, spec.segment_size, static_cast<std::uint32_t>(nodes_.front().size()))) {}
    /// Two stages pipelined over the segments, the longer plus one segment of the shorter: inside the node each GPU
    /// sends 2 (g-1)/g S over its link (scatter and gather) and pays two latencies; each head moves f S/g each way
    /// over its route to its rail's switch and pays its latency twice.
    [[nodiscard]] sim::Time alpha_beta(const sim::PathCostLookup& cost) const override {
        if (nodes_.size() < 2) return sim::Time::zero();
        const double g = static_cast<double>(nodes_.front().size());
        double intra = 0.0, net = 0.0;
        for (const Steps& node : nodes_)
            for (std::size_t j = 0; j < node.size(); ++j) {
                const sim::PathCost up = cost(node[j], base_ + static_cast<std::uint32_t>(j));
                net = std::max(net, 2.0 * up.latency.seconds() + f_ * bytes_ / g / up.bandwidth.bytes_per_s());
                if (node.size() < 2) continue;
                const sim::PathCost peer = cost(node[j], node[(j + 1) % node.size()]);
                intra = std::max(
                    intra, 2.0 * peer.latency.seconds() + 2.0 * (g - 1.0) / g * bytes_ / peer.bandwidth.bytes_per_s());
            }
        return sim::Time::seconds(std::max(intra, net) + std::min(intra, net) / k_);
    }
    /// The bytes moved: a transfer to or from a switch is charged f times its bytes but moves them once.
    [[nodiscard]] sim::Bytes wire_bytes(const RemoteTest& remote) const override {
        sim::Bytes total;
        for (std::size_t s = 0; s < plan().size(); ++s) {
            const sim::PlanStep& step = plan().step(s);
            if (step.src == step.dst || !remote(step.src, step.dst)) continue;
            total += std::max(step.src, step.dst) >= base_ ? step.bytes / f_ : step.bytes;
        }
        return total;
    }

private:
    std::vector<Steps> nodes_;
    std::uint32_t base_;
    double bytes_, f_;
    double k_;
};

}  // namespace

std::unique_ptr<Collective> make_collnet(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    if (!(ctx.network_reduction > 0.0))
        throw std::invalid_argument("collnet: the job's fabric has no switches that reduce between nodes (SHARP)");
    return std::make_unique<CollnetCollective>(spec, ctx);
}

double collnet_transfers(double n, double bytes, double segment) {
    // Per GPU and segment of g heads' chunks: 2(g - 1) transfers inside the node and two to and from its switch, so
    // ceil(bytes / (g c)) 2g <= 2 bytes / c + 2g per GPU; g is at most n and at most 1,024 (network.gpus_per_node).
    const double per_head = segment > 0.0 ? std::ceil(bytes / segment) * std::min(n, 1024.0)
                                          : std::ceil(bytes / kCollnetChunk) + std::min(n, 1024.0);
    return n * 2.0 * std::max(1.0, per_head);
}

bool collnet_applies(const CollectiveContext& ctx) {
    return ctx.network_reduction > 0.0 && node_shape(ctx).nodes >= 2 && node_shape(ctx).per_node >= 1;
}

bool nvls_applies(const CollectiveContext& ctx) {
    return ctx.switch_reduction > 0.0 && ctx.workers >= 2 && node_shape(ctx).per_node >= 2;
}

}  // namespace ddlsim::topo
