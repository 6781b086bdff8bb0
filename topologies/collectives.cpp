#include "topologies/collectives.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "topologies/allreduce_algorithms.hpp"
#include "topologies/gossip.hpp"
#include "topologies/parameter_server.hpp"
#include "topologies/ring_allreduce.hpp"

namespace ddlsim::topo {

PlanCollective::PlanCollective(sim::Plan plan) : plan_(std::move(plan)) {
    plan_.seal();
}

std::unique_ptr<sim::Round> PlanCollective::start_round(sim::Engine& engine, sim::Network& network,
                                                        sim::RouteLookup routes, sim::EndpointDone on_done,
                                                        std::uint32_t /*round*/) const {
    return std::make_unique<sim::DagRunner>(engine, network, plan_, std::move(routes), std::move(on_done));
}

sim::Bytes PlanCollective::wire_bytes(const RemoteTest& remote) const {
    sim::Bytes total;
    for (std::size_t s = 0; s < plan_.size(); ++s) {
        const sim::PlanStep& step = plan_.step(s);
        if (step.src != step.dst && remote(step.src, step.dst)) total += step.bytes;
    }
    return total;
}

sim::Time PlanCollective::alpha_beta(const sim::PathCostLookup& cost) const {
    return sim::alpha_beta_time(plan_, cost);
}

sim::Plan ring_allreduce_plan(std::uint32_t n, sim::Bytes bytes) {
    sim::Plan plan;
    plan.endpoints = n;
    if (n < 2) return plan;
    const sim::Bytes chunk = bytes / n;
    const std::uint32_t steps = 2 * (n - 1);
    // Step s of worker i has index s*n + i; it sends to i+1 after receiving step s-1 from
    // i-1 and after its own send of step s-1 is out.
    for (std::uint32_t s = 0; s < steps; ++s)
        for (std::uint32_t i = 0; i < n; ++i) {
            if (s == 0) {
                plan.add(i, (i + 1) % n, chunk);
            } else {
                const std::uint32_t after[] = {(s - 1) * n + (i + n - 1) % n, (s - 1) * n + i};
                plan.add(i, (i + 1) % n, chunk, after);
            }
        }
    return plan;
}

RoundSize round_size(const ArchitectureSpec& spec, const RoundShape& shape) {
    switch (spec.kind) {
        case ArchKind::allreduce: return allreduce_round_size(spec, shape);
        case ArchKind::ps: return parameter_server_round_size(spec, shape);
        case ArchKind::gossip: return gossip_round_size(spec, shape);
    }
    throw std::logic_error("unknown architecture kind");
}

NodeShape node_shape(const CollectiveContext& ctx) {
    if (ctx.node_of.size() != ctx.workers) return {};
    std::map<std::uint32_t, std::uint32_t> size;
    for (std::uint32_t node : ctx.node_of) ++size[node];
    if (size.empty()) return {};
    const std::uint32_t g = size.begin()->second;
    const bool even = std::all_of(size.begin(), size.end(), [g](const auto& kv) { return kv.second == g; });
    return {size.size(), even ? g : 0U};
}

std::unique_ptr<Collective> make_collective(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    switch (spec.kind) {
        case ArchKind::allreduce: return make_allreduce(spec, ctx);
        case ArchKind::ps: {
            PsOptions options;
            if (spec.split_size.value() > 0.0) options.split_bytes = spec.split_size.value();
            return make_parameter_server(spec, ctx, options);
        }
        case ArchKind::gossip: return make_gossip(spec, ctx);
    }
    throw std::logic_error("unknown architecture kind");
}

}  // namespace ddlsim::topo
