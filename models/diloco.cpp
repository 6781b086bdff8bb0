// DiLoCo's outer step (the schedule is stated in models/diloco.hpp).
#include "models/diloco.hpp"

#include "models/comm_plan.hpp"
#include "topologies/sharded_collectives.hpp"

namespace ddlsim::models {

OuterPlan::OuterPlan(const TrainingJob& job, const topo::Fabric& fabric, const topo::CollectiveContext& ctx)
    : job_(job),
      spacing_(job.sync.period / job.sync.fragments),
      overlap_steps_(job.sync.overlap_steps),
      island_size_(static_cast<double>(job.workers / job.sync.islands)) {
    const auto& layers = job.workload.layers;
    const std::uint32_t count = job.sync.fragments;
    const double total = static_cast<double>(job.workload.params());
    // Consecutive layers, fragment f ending at the first layer where the running parameter count reaches
    // (f + 1) / F of the model, every fragment keeping at least one layer.
    std::uint32_t first = 0;
    double running = 0.0;
    const auto n_layers = static_cast<std::uint32_t>(layers.size());
    for (std::uint32_t f = 0; f < count && count <= n_layers; ++f) {
        Fragment frag;
        std::uint32_t last = first;
        double bytes = static_cast<double>(layers[last].params());
        const double target = total * (f + 1) / count;
        while (last + 1 < n_layers - (count - 1 - f) && (f + 1 == count || running + bytes < target)) {
            ++last;
            bytes += static_cast<double>(layers[last].params());
        }
        running += bytes;
        frag.bytes = bytes * job.bytes_per_param;
        first = last + 1;
        fragments_.push_back(std::move(frag));
    }
    const auto groups = job.sync.island_groups(job.workers);
    const auto remote = [&](std::uint32_t a, std::uint32_t b) {
        return job.endpoint_hosts[a] != job.endpoint_hosts[b];
    };
    const auto between_machines = [&](std::uint32_t a, std::uint32_t b) {
        return fabric.node_of(job.endpoint_hosts[a]) != fabric.node_of(job.endpoint_hosts[b]);
    };
    for (Fragment& f : fragments_) {
        if (f.bytes <= 0.0) continue;
        const sim::Bytes s{f.bytes};
        // The outer gradients cross the islands at outer_bits per value (Streaming DiLoCo, arXiv 2501.18512, §2:
        // 4-bit E3M0 floats on the wire, accumulated in FP32, "no loss"); their quantize and dequantize kernels,
        // memory-bound over S_f / g bytes, are left out beside a WAN transfer of that many bytes.
        const double width = job.sync.outer_bits > 0.0 ? job.sync.outer_bits / (8.0 * job.bytes_per_param) : 1.0;
        if (groups.size() > 1)
            f.across = topo::make_shard_collective(topo::ShardCollective::replica_allreduce, groups, job.workers,
                                                   sim::Bytes{f.bytes * width});
        if (island_size_ > 1.0 && job.sharding.stage < 3)  // stage 3 keeps the slice sharded until its next gather
            f.gather = topo::make_shard_collective(topo::ShardCollective::all_gather, groups, job.workers, s, &ctx);
        for (const topo::Collective* c : {f.across.get(), f.gather.get()}) {
            if (c == nullptr) continue;
            f.wire_bytes += c->wire_bytes(remote).value();
            f.machine_bytes += c->wire_bytes(between_machines).value();
        }
    }
}

template <typename F>
double OuterPlan::over_launches(std::uint32_t iterations, F per_fragment) const {
    double sum = 0.0;
    for (std::uint32_t l = 0; l < launches(iterations); ++l) sum += per_fragment(fragment_of(l));
    return sum;
}

double OuterPlan::wire_bytes(std::uint32_t iterations) const {
    return over_launches(iterations, [](const Fragment& f) { return f.wire_bytes; });
}

double OuterPlan::machine_bytes(std::uint32_t iterations) const {
    return over_launches(iterations, [](const Fragment& f) { return f.machine_bytes; });
}

double OuterPlan::collectives(std::uint32_t iterations) const {
    return over_launches(iterations, [](const Fragment& f) {
        return static_cast<double>((f.across != nullptr) + (f.gather != nullptr));
    });
}

sim::Time OuterPlan::update_time(const Fragment& f, std::uint32_t w) const {
    const double total = static_cast<double>(job_.workload.params()) * job_.bytes_per_param;
    if (total <= 0.0) return sim::Time::zero();
    return scaled(job_.compute_of(w).update, f.bytes / total / island_size_);
}

}  // namespace ddlsim::models
