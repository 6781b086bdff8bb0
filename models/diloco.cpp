// DiLoCo's outer step (the schedule is stated in models/diloco.hpp).
#include "models/diloco.hpp"

#include "models/comm_plan.hpp"
#include "topologies/sharded_collectives.hpp"

namespace ddlsim::models {

OuterPlan::OuterPlan(const TrainingJob& job, program::Planner& planner)
    : job_(job),
      planner_(planner),
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
    using program::CollectiveKind;
    using program::CommOp;
    const program::GroupId island = planner.add_group("island", job.sync.island_groups(job.workers));
    const bool several = planner.parts(island).size() > 1;
    const program::GroupId across = several ? planner.add_group_across("islands", island) : island;
    for (Fragment& f : fragments_) {
        if (f.bytes <= 0.0) continue;
        // The outer gradients cross the islands at outer_bits per value (Streaming DiLoCo, arXiv 2501.18512, §2:
        // 4-bit E3M0 floats on the wire, accumulated in FP32, "no loss"); their quantize and dequantize kernels,
        // memory-bound over S_f / g bytes, are left out beside a WAN transfer of that many bytes.
        const double width = job.sync.outer_bits > 0.0 ? job.sync.outer_bits / (8.0 * job.bytes_per_param) : 1.0;
        // The all-reduce of rank j of every island (the replicas of its slice), then the all-gather inside each.
        if (several) f.across = CommOp::of(CollectiveKind::all_reduce, across, f.bytes * width);
        if (island_size_ > 1.0 && job.sharding.stage < 3)  // stage 3 keeps the slice sharded until its next gather
            f.gather = CommOp::of(CollectiveKind::all_gather, island, f.bytes);
        for (const auto* op : {&f.across, &f.gather}) {
            if (!op->has_value()) continue;
            f.wire_bytes += planner.wire_bytes(**op);
            f.machine_bytes += planner.machine_bytes(**op);
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
    return over_launches(
        iterations, [](const Fragment& f) { return static_cast<double>(f.across.has_value() + f.gather.has_value()); });
}

sim::Time OuterPlan::update_time(const Fragment& f, std::uint32_t w) const {
    const double total = static_cast<double>(job_.workload.params()) * job_.bytes_per_param;
    if (total <= 0.0) return sim::Time::zero();
    return scaled(job_.compute_of(w).update, f.bytes / total / island_size_);
}

}  // namespace ddlsim::models
