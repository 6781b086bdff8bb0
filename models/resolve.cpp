// The model rules of a resolved job (resolve.hpp).
#include "models/resolve.hpp"

#include <algorithm>
#include <map>
#include <span>

#include "models/comm_plan.hpp"
#include "models/context_parallel.hpp"
#include "models/expert_parallel.hpp"
#include "models/tensor_parallel.hpp"
#include "topologies/transport.hpp"

namespace ddlsim::models {

TrainingJob job_of_keys(const JobKeys& keys) {
    TrainingJob job;
    static_cast<JobKeys&>(job) = keys;
    const ParallelismSpec& par = keys.parallelism;
    if (par.tensor > 1) job.workload = tensor_shard(keys.workload, par.tensor, par.sequence_parallel);
    if (par.context > 1) job.workload = context_shard(job.workload, par.context);
    if (keys.workload.experts > 0)
        job.workload =
            expert_shard(job.workload, par.expert, expert_rank_load(keys.workload, par.expert, par.expert_imbalance));
    return job;
}

namespace {

// A model-parallel job's programs index its ranks data outermost (ParallelismSpec::rank); rank r sits on worker
// placement[r] by the job's order, and takes that worker's host, device and straggling.
void place_ranks(TrainingJob& job) {
    const std::uint32_t n = job.workers;
    const std::vector<std::uint32_t> at = job.parallelism.placement(n);
    std::vector<std::uint32_t> rank_at(n);
    for (std::uint32_t r = 0; r < n; ++r) rank_at[at[r]] = r;
    auto permute = [&](auto& per_worker) {
        if (per_worker.size() < n) return;
        const auto by_worker = per_worker;
        for (std::uint32_t r = 0; r < n; ++r) per_worker[r] = by_worker[at[r]];
    };
    permute(job.endpoint_hosts);  // the workers' (servers follow, untouched)
    permute(job.worker_devices);
    permute(job.worker_compute);
    for (auto& fixed : job.stragglers.fixed) fixed.first = rank_at.at(fixed.first);
    for (auto& w : job.stragglers.workers) w = rank_at.at(w);
}

}  // namespace

TrainingJob resolve_job(const JobKeys& keys, const topo::Fabric& fabric, const JobContext& ctx) {
    TrainingJob job = job_of_keys(keys);
    job.iterations = ctx.iterations;
    job.index = ctx.index;
    job.seed = ctx.seed;
    job.collective_overhead = keys.workers > 1 ? ctx.collective_overhead : sim::Time::zero();  // no collective
    // Overlap is not free (models/job.hpp), unless the user asked for the ideal model: the overlap key wins, then the
    // device's calibrated overlap_slowdown (device.profile), then the default.
    job.overlap_slowdown = keys.overlap.compute_slowdown.value_or(
        keys.device.overlap_slowdown.value_or(ctx.ideal_transport ? 0.0 : kDefaultOverlapSlowdown));
    // One worker with no server to talk to sends nothing: no communication kernel shares its GPU (its zero-time
    // rounds of one endpoint must not slow backward, nor ZeRO-3's gathers of its own shards).
    const auto& a = keys.architecture;
    const bool servers = a.kind == topo::ArchKind::ps && a.servers > 0 &&
                         (a.style == topo::PsStyle::byteps || a.placement == topo::ServerPlacement::dedicated);
    if (keys.workers == 1 && !servers) job.overlap_slowdown = 0.0;
    job.record_schedule = ctx.record_schedule;
    try {
        job.compute = compute_profile(job.workload, keys.device, keys.batch_size, keys.bytes_per_param, keys.optimizer);
    } catch (const std::invalid_argument& e) {
        throw DeviceRefused(-1, e.what());
    }
    for (std::size_t w = 0; w < keys.worker_devices.size(); ++w) {
        try {
            job.worker_compute.push_back(compute_profile(job.workload, keys.worker_devices[w], keys.batch_size,
                                                         keys.bytes_per_param, keys.optimizer));
        } catch (const std::invalid_argument& e) {
            throw DeviceRefused(static_cast<int>(w), e.what());
        }
    }
    job.endpoint_hosts = ctx.worker_hosts;
    job.endpoint_hosts.insert(job.endpoint_hosts.end(), ctx.server_hosts.begin(), ctx.server_hosts.end());
    if (keys.parallelism.any()) place_ranks(job);
    if (keys.bn_group > 1) {  // SyncBatchNorm: each group of consecutive ranks all-reduces its statistics
        const std::span<const topo::Vertex> ranks(job.endpoint_hosts);
        for (std::uint32_t first = 0; first < keys.workers; first += keys.bn_group) {
            const std::span<const topo::Vertex> group = ranks.subspan(first, keys.bn_group);
            const topo::SmallAllreduce c = topo::nccl_small_allreduce(fabric, group);
            job.batchnorm_cost.latency = std::max(job.batchnorm_cost.latency, c.latency);
            job.batchnorm_cost.seconds_per_byte = std::max(job.batchnorm_cost.seconds_per_byte, c.seconds_per_byte);
            // The ring's 2(r - 1) steps, each its slowest hop's latency (RingCollective's closed form).
            sim::Time hop;
            for (std::size_t i = 0; i < group.size(); ++i)
                hop = std::max(hop, fabric.path_latency(group[i], group[(i + 1) % group.size()]));
            const sim::Time ring = scaled(hop, 2.0 * static_cast<double>(group.size() - 1));
            if (c.latency > ring) job.batchnorm_launch = std::max(job.batchnorm_launch, c.latency - ring);
        }
    }
    if (keys.activation_checkpointing) {
        add_recomputation(job.compute, job.workload);
        for (auto& wc : job.worker_compute) add_recomputation(wc, job.workload);
    }
    if (keys.selective_recomputation) {
        add_selective_recomputation(job.compute, job.workload, keys.device, keys.batch_size);
        for (std::size_t w = 0; w < job.worker_compute.size(); ++w)
            add_selective_recomputation(job.worker_compute[w], job.workload, keys.worker_devices[w], keys.batch_size);
    }
    // Gradient accumulation: k - 1 micro-batches of forward and backward before the last.
    const double extra = static_cast<double>(keys.gradient_accumulation - 1);
    job.compute.accumulation = scaled(job.compute.fwd + job.compute.bwd, extra);
    for (auto& wc : job.worker_compute) wc.accumulation = scaled(wc.fwd + wc.bwd, extra);
    // NVLink SHARP: the nodes' reducing switches, endpoints after the workers (reducing_switches).
    // InfiniBand SHARP: the rails' switches, endpoints after those (sharp_switches).
    if (a.kind == topo::ArchKind::allreduce) {
        for (const topo::ReducingSwitch& sw : reducing_switches(job, fabric)) job.endpoint_hosts.push_back(sw.vertex);
        for (const topo::Vertex sw : sharp_switches(job, fabric)) job.endpoint_hosts.push_back(sw);
    }
    // Switch aggregation: the SHARP switch the workers reach, after the servers (the loader made sure it is one).
    if (a.kind == topo::ArchKind::ps && a.switch_aggregation && !job.endpoint_hosts.empty())
        if (const auto sw = fabric.sharp_switch(job.endpoint_hosts.front())) job.endpoint_hosts.push_back(*sw);
    return job;
}

void share_switch_memory(std::vector<TrainingJob>& jobs, const topo::Fabric& fabric, double memory) {
    if (memory <= 0.0) return;
    std::map<topo::Vertex, double> sharing;
    for (const auto& job : jobs)
        if (const auto sw = summing_switch(job, fabric)) sharing[*sw] += 1.0;
    for (auto& job : jobs)
        if (const auto sw = summing_switch(job, fabric)) job.architecture.switch_memory = memory / sharing[*sw];
}

}  // namespace ddlsim::models
