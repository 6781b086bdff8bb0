// The summary's words for a scenario's transports, sync scheme, compression, overlap, sharding and architecture
// (declared in scenarios/run.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

#include "scenarios/run.hpp"
#include "scenarios/schema_tables.hpp"
#include "topologies/transport.hpp"

namespace ddlsim::scenario {

std::string describe_transports(const Scenario& s, bool with_source) {
    // `given`: 1 the scenario's (or network.profile's, as transport_source says), 2 the scenario's
    // intra_transport, 0 auto.
    auto one = [&s, with_source](const topo::TransportSpec& t, int given) {
        std::string out(sim::enum_name(t.kind));
        if (with_source)
            out += given == 0                                  ? " (auto)"
                   : given == 1 && !s.transport_source.empty() ? " (" + s.transport_source + ")"
                                                               : " (scenario)";
        if (t.kind == topo::TransportKind::ideal) return out + ": nominal link speed, no overheads";
        out += fmt::format(": {:.1f} % goodput, {:.3g} us per message, {:.3g} us per collective", 100.0 * t.efficiency,
                           t.message_overhead.seconds() * 1e6, t.collective_overhead.seconds() * 1e6);
        if (t.stream_rate)
            out += fmt::format(", transfers capped at {} x {:.3g} Gbit/s streams", t.streams,
                               t.stream_rate->bits_per_s() / 1e9);
        return out;
    };
    // Links of their own speeds (custom): auto picks for each.
    const std::optional<topo::LinkSpeeds> links = topo::link_speeds(s.topology);
    if (!links)
        return s.transports.inter ? one(*s.transports.inter, 1) : "auto per link (rdma >= 100 Gbit/s, tcp below)";
    std::string out = one(topo::transport_for(s.transports, topo::LinkClass::inter, links->host),
                          s.transports.inter.has_value() ? 1 : 0);
    // A node preset's links pick by medium under auto (NVLink links nvlink, PCIe links pcie).
    if (links->intra)
        out += "; intra-node " +
               (links->intra->preset && !s.transports.intra
                    ? std::string("auto per link (nvlink on NVLink, pcie on PCIe)")
                    : one(topo::transport_for(s.transports, topo::LinkClass::intra, links->intra->bandwidth),
                          s.transports.intra.has_value() ? 2 : 0));
    return out;
}

std::string describe_sync(const JobSpec& j) {
    return models::sync_scheme(j.sync.kind).describe(j.sync, j.architecture.kind);
}

std::string describe_compression(const JobSpec& j) {
    return models::make_compressor(j.compression)->describe();
}

std::string describe_parallelism(const JobSpec& j) {
    const models::ParallelismSpec& p = j.parallelism;
    std::string out;
    if (p.tensor > 1)
        out += fmt::format("tensor {}{} x ", p.tensor,
                           p.tensor_overlap      ? " (sequence parallel, overlapped with its GEMMs)"
                           : p.sequence_parallel ? " (sequence parallel)"
                                                 : "");
    if (p.context > 1)
        out += fmt::format("context {}{} x ", p.context,
                           p.context_algorithm == models::ContextAlgorithm::all_to_all ? " (all-to-all, Ulysses)" : "");
    if (p.pipeline > 1) out += fmt::format("pipeline {} x ", p.pipeline);
    out += fmt::format("data {}", p.data(j.workers));
    if (p.expert > 1)
        out += fmt::format(" (expert {}{})", p.expert,
                           p.expert_imbalance > 1.0 ? fmt::format(", imbalance {:g}", p.expert_imbalance) : "");
    if (p.pipeline > 1) out += fmt::format(" ({})", sim::enum_name(p.schedule));
    return out;
}

std::string describe_overlap(const JobSpec& j) {
    const auto& o = j.overlap;
    if (j.sharding.stage >= 3) {
        std::string out = fmt::format(
            "per unit (sharding: all-gathers {} unit{} ahead, reduce-scatter after each "
            "unit's backward)",
            j.sharding.prefetch, j.sharding.prefetch == 1 ? "" : "s");
        if (o.compute_slowdown)
            out += fmt::format(", compute slowdown {:.3g} beside communication", *o.compute_slowdown);
        return out;
    }
    if (!o.any()) return "none";
    if (o.priority)
        return fmt::format("priority (P3/ByteScheduler, {:.4g} MB partitions)", o.partition_size.value() / 1e6);
    if (o.fusion == models::Fusion::mgwfbp) return "mgwfbp";
    std::string out = o.wfbp ? "wfbp" : "no wfbp";
    if (o.fusion == models::Fusion::buffer)
        out += o.cycle_time > sim::Time::zero() ? fmt::format(" + fusion buffer ({:.4g} MB, {:.4g} ms cycle)",
                                                              o.bucket_size.value() / 1e6, o.cycle_time.seconds() * 1e3)
                                                : fmt::format(" + buckets ({:.4g} MB)", o.bucket_size.value() / 1e6);
    if (!o.wfbp) out += ", sent after backward";
    if (o.compute_slowdown) out += fmt::format(", compute slowdown {:.3g} beside communication", *o.compute_slowdown);
    return out;
}

std::string describe_sharding(const JobSpec& j) {
    const auto& sh = j.sharding;
    static constexpr const char* kStages[] = {"", "ZeRO-1 (optimizer state sharded)",
                                              "ZeRO-2 (optimizer state and gradients sharded)",
                                              "ZeRO-3 / FSDP (parameters, gradients and optimizer state sharded)"};
    std::string out = fmt::format("{} over shard groups of {}", kStages[sh.stage], sh.group_size);
    if (sh.group == models::ShardGroup::node)
        out += fmt::format(" (one per node; {} replicas all-reduce their shards)",
                           j.workers / std::max(1U, sh.group_size));
    out += sh.stage >= 3
               ? fmt::format("; {} per unit, prefetch {}",
                             fmt::format("{} {}{}", sh.wrap, j.workload.has_blocks() ? "transformer block" : "layer",
                                         sh.wrap == 1 ? "" : "s"),
                             sh.prefetch)
               : "; reduce-scatter, shard update, all-gather";
    std::string zero_pp;
    if (sh.quantized_weights) zero_pp += "qwZ (int8 weight all-gathers)";
    if (sh.hpz_partition_size > 1)
        zero_pp += fmt::format("{}hpZ (backward all-gathers among {} GPUs)", zero_pp.empty() ? "" : ", ",
                               sh.hpz_partition_size);
    if (sh.quantized_gradients)
        zero_pp += fmt::format("{}qgZ (int4 hierarchical all-to-all of gradients)", zero_pp.empty() ? "" : ", ");
    if (!zero_pp.empty()) out += "; ZeRO++ " + zero_pp;
    return out;
}

std::string describe_architecture(const JobSpec& j) {
    const auto& a = j.architecture;
    const auto& c = tables().choices;
    switch (a.kind) {
        case topo::ArchKind::allreduce: {
            if (j.sharding.any()) return describe_sharding(j);
            std::string out = std::string(sim::enum_name(a.algorithm)) + " all-reduce";
            if (a.segment_size.value() > 0.0) out += fmt::format(" ({:.4g} MB segments)", a.segment_size.value() / 1e6);
            return out;
        }
        case topo::ArchKind::gossip:
            return fmt::format("gossip (D-PSGD, {} graph)", c.gossip_graphs[static_cast<std::size_t>(a.graph)]);
        case topo::ArchKind::ps: {
            const std::string local = a.local_aggregation ? ", local aggregation on multi-GPU machines" : "";
            if (a.style == topo::PsStyle::byteps)
                return fmt::format("BytePS ({} CPU summation server{} + every worker machine{}{})", a.servers,
                                   a.servers == 1 ? "" : "s",
                                   a.per_tensor
                                       ? fmt::format(", {:.4g} MB partitions pipelined", a.partition_size.value() / 1e6)
                                       : ", whole shares",
                                   local);
            std::string out = fmt::format("parameter server ({} {} server{}", a.servers,
                                          a.placement == topo::ServerPlacement::dedicated ? "dedicated" : "colocated",
                                          a.servers == 1 ? "" : "s");
            if (a.sharding != topo::PsSharding::bytes)
                out += ", " + c.ps_shardings[static_cast<std::size_t>(a.sharding)] + " sharding";
            if (a.per_tensor) out += ", per-tensor push/pull";
            return out + local + ")";
        }
    }
    return "?";
}

}  // namespace ddlsim::scenario
