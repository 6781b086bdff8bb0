// Algorithm "auto": the fastest candidate per message; the model and its NCCL source in the header.
#include "topologies/allreduce_auto.hpp"

#include <algorithm>
#include <stdexcept>

#include "topologies/allreduce_algorithms.hpp"
#include "topologies/in_network.hpp"

namespace ddlsim::topo {
namespace {

/// Whether node_of holds at least two nodes, all of the same size above one worker (hierarchical's rails).
bool uniform_multi_gpu_nodes(const CollectiveContext& ctx) {
    const NodeShape shape = node_shape(ctx);
    return shape.nodes >= 2 && shape.per_node > 1;
}

}  // namespace

std::vector<AllreduceAlgorithm> auto_candidates(const CollectiveContext& ctx) {
    std::vector<AllreduceAlgorithm> out;
    for (AllreduceAlgorithm a : k_auto_pool) {
        if (a != AllreduceAlgorithm::ring && ctx.workers < 2) continue;  // nothing moves: the ring will do
        if (a == AllreduceAlgorithm::hierarchical && !uniform_multi_gpu_nodes(ctx)) continue;
        if (a == AllreduceAlgorithm::nvls && !nvls_applies(ctx)) continue;
        if (a == AllreduceAlgorithm::collnet && !collnet_applies(ctx)) continue;
        out.push_back(a);
    }
    return out;
}

std::vector<AutoCandidate> auto_predictions(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    if (!ctx.round_time) throw std::invalid_argument("all-reduce auto: no way to predict a round on this fabric");
    std::vector<AutoCandidate> out;
    ArchitectureSpec concrete = spec;
    for (AllreduceAlgorithm a : auto_candidates(ctx)) {
        concrete.algorithm = a;
        out.push_back({a, ctx.round_time(*make_allreduce(concrete, ctx))});
    }
    return out;
}

AllreduceAlgorithm pick_allreduce(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    if (ctx.workers < 2) return AllreduceAlgorithm::ring;
    const auto all = auto_predictions(spec, ctx);
    // min_element keeps the first of equal times: ring before the trees, as candidates are listed.
    return std::min_element(all.begin(), all.end(),
                            [](const AutoCandidate& a, const AutoCandidate& b) { return a.predicted < b.predicted; })
        ->algorithm;
}

}  // namespace ddlsim::topo
