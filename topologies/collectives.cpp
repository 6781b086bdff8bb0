#include "topologies/collectives.hpp"

#include <algorithm>
#include <stdexcept>

#include "topologies/ring_allreduce.hpp"

namespace ddlsim::topo {

PlanCollective::PlanCollective(sim::Plan plan) : plan_(std::move(plan)) {
    plan_.seal();
}

std::unique_ptr<sim::Round> PlanCollective::start_round(sim::Engine& engine, sim::Network& network,
                                                        sim::RouteLookup routes, sim::EndpointDone on_done) const {
    return std::make_unique<sim::DagRunner>(engine, network, plan_, std::move(routes), std::move(on_done));
}

double PlanCollective::wire_bytes(const RemoteTest& remote) const {
    double total = 0.0;
    for (std::size_t s = 0; s < plan_.size(); ++s) {
        const sim::PlanStep& step = plan_.step(s);
        if (step.src != step.dst && remote(step.src, step.dst)) total += step.bytes.value();
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

sim::Plan parameter_server(std::uint32_t n, std::uint32_t k, sim::Bytes bytes,
                           std::optional<sim::Bandwidth> aggregation_rate) {
    if (k == 0) throw std::invalid_argument("a parameter server needs at least one server");
    sim::Plan plan;
    plan.endpoints = n + k;
    const sim::Bytes shard = bytes / k;
    std::vector<std::vector<std::uint32_t>> pushes(k);
    for (std::uint32_t w = 0; w < n; ++w)
        for (std::uint32_t j = 0; j < k; ++j) pushes[j].push_back(plan.add(w, n + j, shard));
    for (std::uint32_t j = 0; j < k; ++j) {
        // Aggregation at server j once all its shards arrived: summing n shards reads n*S/k bytes
        // at the server's aggregation throughput (instant when unlimited). The pulls hang off this
        // one step, so the plan has O(nk) dependencies, not O(n^2 k).
        const sim::Time sum = aggregation_rate ? sim::transfer_time(shard * n, *aggregation_rate) : sim::Time::zero();
        const std::uint32_t aggregated = plan.add_work(n + j, sum, pushes[j]);
        for (std::uint32_t w = 0; w < n; ++w) plan.add(n + j, w, shard, {aggregated});
    }
    return plan;
}

std::vector<std::vector<std::uint32_t>> gossip_neighbours(GossipGraph graph, std::uint32_t n) {
    std::vector<std::vector<std::uint32_t>> out(n);
    switch (graph) {
        case GossipGraph::ring:
            for (std::uint32_t i = 0; i < n; ++i) {
                for (std::uint32_t j : {(i + n - 1) % n, (i + 1) % n})
                    if (j != i && std::find(out[i].begin(), out[i].end(), j) == out[i].end()) out[i].push_back(j);
            }
            break;
    }
    return out;
}

sim::Plan gossip_exchange(const std::vector<std::vector<std::uint32_t>>& neighbours, sim::Bytes bytes) {
    sim::Plan plan;
    plan.endpoints = static_cast<std::uint32_t>(neighbours.size());
    for (std::uint32_t i = 0; i < neighbours.size(); ++i)
        for (std::uint32_t j : neighbours[i]) plan.add(i, j, bytes);
    return plan;
}

std::uint32_t server_endpoints(const ArchitectureSpec& spec) {
    return spec.kind == ArchKind::ps ? static_cast<std::uint32_t>(spec.servers) : 0;
}

std::unique_ptr<Collective> make_collective(const ArchitectureSpec& spec, std::uint32_t n, sim::Bytes bytes) {
    switch (spec.kind) {
        case ArchKind::allreduce: return std::make_unique<RingAllreduce>(n, bytes);
        case ArchKind::ps:
            return std::make_unique<PlanCollective>(
                parameter_server(n, static_cast<std::uint32_t>(spec.servers), bytes, spec.aggregation_rate));
        case ArchKind::gossip:
            return std::make_unique<PlanCollective>(gossip_exchange(gossip_neighbours(spec.graph, n), bytes));
    }
    throw std::logic_error("unknown architecture kind");
}

}  // namespace ddlsim::topo
