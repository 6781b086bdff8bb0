#include "topologies/parameter_server.hpp"

#include <stdexcept>

namespace ddlsim::topo {

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

std::unique_ptr<Collective> make_parameter_server(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    return std::make_unique<PlanCollective>(
        parameter_server(ctx.workers, static_cast<std::uint32_t>(spec.servers), ctx.bytes, spec.aggregation_rate));
}

}  // namespace ddlsim::topo
