#include "models/program/batchnorm.hpp"

#include <fmt/format.h>

namespace ddlsim::models::program {

BatchNormSync::BatchNormSync(const TrainingJob& job, Planner& planner) : job_(job), planner_(planner) {
    if (job.bn_group < 2 || job.workers < 2) return;
    for (std::size_t l = 0; l < job.workload.layers.size(); ++l) {
        channels_.push_back(batchnorm_channels(job.workload, l));
        active_ = active_ || !channels_.back().empty();
    }
    if (!active_) return;
    Partition groups;  // consecutive ranks
    for (std::uint32_t w = 0; w < job.workers; ++w) {
        if (w % job.bn_group == 0) groups.emplace_back();
        groups.back().push_back(w);
    }
    group_ = planner.add_group("batchnorm", std::move(groups));
}

CommOp BatchNormSync::op(double channels) const {
    constexpr double kLlLine = 2.0;  // LL: 8-byte lines of 4 data bytes and a 4-byte flag (src/device/prims_ll.h)
    return CommOp::of(CollectiveKind::all_reduce, group_, kLlLine * kBatchNormBytesPerChannel * channels);
}

void BatchNormSync::sync_layer(ProgramSet& set, Program& p, bool forward, std::uint32_t l, std::uint32_t mb) {
    for (const double channels : channels_[l]) {
        Call c;
        c.phases.push_back(op(channels));
        c.verb = "batchnorm ";
        c.label = fmt::format("{} {} mb{} ({} channels)", forward ? "forward" : "backward",
                              job_.workload.layers[l].name, mb, channels);
        c.stream = kStream;
        c.launch = job_.batchnorm_launch;
        const std::uint32_t call = set.add_call(std::move(c));
        p.issue(call);
        p.wait(call);
    }
}

void BatchNormSync::pass(ProgramSet& set, Program& p, bool forward, std::uint32_t first, std::uint32_t last,
                         std::uint32_t mb, const std::function<void(std::uint32_t, std::uint32_t)>& emit) {
    if (!active_) {
        emit(first, last);
        return;
    }
    if (forward) {
        std::uint32_t from = first;  // the run of layers not yet emitted starts here
        for (std::uint32_t l = first; l <= last; ++l) {
            if (channels_[l].empty()) continue;
            emit(from, l);
            sync_layer(set, p, true, l, mb);
            from = l + 1;
        }
        if (from <= last) emit(from, last);
        return;
    }
    std::uint32_t top = last + 1;  // layers [.., top) not yet emitted; backward runs from the last
    for (std::uint32_t l = last + 1; l-- > first;) {
        if (channels_[l].empty()) continue;
        if (l + 1 < top) emit(l + 1, top - 1);
        sync_layer(set, p, false, l, mb);
        top = l + 1;
    }
    if (first < top) emit(first, top - 1);
}

BatchNormSync::Totals BatchNormSync::per_iteration() {
    Totals t;
    if (!active_) return t;
    const double passes = 2.0 * job_.gradient_accumulation;  // forward and backward of every micro-batch
    for (const auto& layer : channels_)
        for (const double channels : layer) {
            t.wire += passes * planner_.wire_bytes(op(channels));
            t.machine += passes * planner_.machine_bytes(op(channels));
            t.collectives += passes;
        }
    return t;
}

}  // namespace ddlsim::models::program
