#include "models/comm_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "topologies/allreduce_auto.hpp"
#include "topologies/grouped_collective.hpp"
#include "topologies/parameter_server.hpp"
#include "topologies/sparse_collectives.hpp"

namespace ddlsim::models {

sim::Time scaled(sim::Time t, double f) {
    if (f == 1.0) return t;
    const double ps = static_cast<double>(t.ps()) * f;
    if (!(ps < 9.0e18)) throw sim::TimeOverflow();
    return sim::Time::ps(std::llround(ps));
}

sim::PathCost endpoint_path_cost(const TrainingJob& job, const topo::Fabric& fabric, std::uint32_t a, std::uint32_t b) {
    const topo::Vertex ha = job.endpoint_hosts[a];
    const topo::Vertex hb = job.endpoint_hosts[b];
    if (ha == hb) return sim::PathCost{sim::Time::zero(), sim::Bandwidth{}, true};
    return sim::PathCost{fabric.path_latency(ha, hb), fabric.path_bandwidth(ha, hb), false};
}

CommPlan::CommPlan(const TrainingJob& job, const topo::Fabric& fabric, bool model_sync, Picks* picks)
    : job_(job),
      fabric_(fabric),
      ctx_(collective_context(job, fabric)),
      compressor_(make_compressor(job.compression)),
      planner_(
          job.workers, &ctx_,
          [&job](std::uint32_t a, std::uint32_t b) { return job.endpoint_hosts[a] != job.endpoint_hosts[b]; },
          [&job, &fabric](std::uint32_t a, std::uint32_t b) {
              return fabric.node_of(job.endpoint_hosts[a]) != fabric.node_of(job.endpoint_hosts[b]);
          }) {
    planner_.serve_data_parallel(job, picks);
    // Tensors in backward order, each one piece (priority cuts them below).
    std::vector<Piece> pieces;
    const auto& layers = job.workload.layers;
    for (std::size_t l = layers.size(); l-- > 0;)
        for (std::size_t t = layers[l].tensors.size(); t-- > 0;)
            if (layers[l].tensors[t].params > 0)
                pieces.push_back({static_cast<std::uint32_t>(l), static_cast<std::uint32_t>(t),
                                  static_cast<double>(layers[l].tensors[t].params)});
    // PS key-to-server assignment over the whole model, so that messages holding a few tensors each
    // continue the round-robin (or the balancing) instead of restarting it at server 0.
    const auto& arch = job.architecture;
    if (arch.kind == topo::ArchKind::ps && arch.style == topo::PsStyle::standard &&
        arch.sharding != topo::PsSharding::bytes && !pieces.empty()) {
        std::vector<double> tensor_bytes;
        for (const Piece& p : pieces) tensor_bytes.push_back(p.elements * job.bytes_per_param);
        const double split =
            arch.split_size.value() > 0.0 ? arch.split_size.value() : std::numeric_limits<double>::infinity();
        const auto owners =
            topo::tensor_owners(arch.sharding, tensor_bytes, static_cast<std::uint32_t>(arch.servers), split);
        owner_.resize(layers.size());
        for (std::size_t l = 0; l < layers.size(); ++l) owner_[l].assign(layers[l].tensors.size(), topo::kCutOverAll);
        for (std::size_t i = 0; i < pieces.size(); ++i) owner_[pieces[i].layer][pieces[i].tensor] = owners[i];
    }
    Groups groups;
    if (model_sync || !job.overlap.any()) {
        if (!pieces.empty()) groups.push_back(pieces);
    } else {
        groups = group(pieces);
    }
    // BytePS key-to-server placement over the whole model: a message holding some partitions continues the
    // balancing of the messages before it (each message placing its own would send every one to the same server).
    if (arch.kind == topo::ArchKind::ps && arch.style == topo::PsStyle::byteps && arch.per_tensor &&
        groups.size() > 1) {
        std::vector<double> bytes;  // every piece of every message, in order
        for (const auto& g : groups)
            for (const Piece& p : g) bytes.push_back(p.elements * job.bytes_per_param);
        const auto placed =
            topo::byteps_partitions(topo::byteps_hosts(arch, ctx_), static_cast<std::uint32_t>(arch.servers), bytes,
                                    arch.partition_size.value());
        std::vector<std::vector<std::pair<std::uint32_t, double>>> where(bytes.size());
        for (std::uint32_t srv = 0; srv < placed.size(); ++srv)
            for (const topo::ShardPiece& sp : placed[srv])
                where[sp.tensor].emplace_back(srv, bytes[sp.tensor] > 0.0 ? sp.bytes / bytes[sp.tensor] : 0.0);
        std::size_t i = 0;
        for (const auto& g : groups) {
            auto& msg = byteps_place_.emplace_back();
            for (std::size_t k = 0; k < g.size(); ++k) msg.push_back(std::move(where[i++]));
        }
    }
    per_layer_.assign(layers.size(), 0);
    for (auto& g : groups) {
        Message m;
        m.pieces = std::move(g);
        m.front_layer = m.pieces.front().layer;
        m.back_layer = m.pieces.front().layer;
        for (const Piece& p : m.pieces) {
            m.front_layer = std::min(m.front_layer, p.layer);
            m.back_layer = std::max(m.back_layer, p.layer);
            m.dense_bytes += p.elements * job.bytes_per_param;
        }
        build_phases(m);
        for (const Phase& ph : m.phases) {
            wire_bytes_ += ph.wire_bytes;
            machine_bytes_ += ph.machine_bytes;
        }
        messages_.push_back(std::move(m));
    }
    // Per layer: the messages holding a piece of it (priority scheduling waits for all of them).
    for (const Message& m : messages_) {
        std::vector<std::uint32_t> seen;
        for (const Piece& p : m.pieces)
            if (std::find(seen.begin(), seen.end(), p.layer) == seen.end()) {
                seen.push_back(p.layer);
                ++per_layer_[p.layer];
            }
    }
}

Groups CommPlan::group(const std::vector<Piece>& pieces) const {
    // Nominal backward completion time of each layer (worker 0, no stragglers), from backward start.
    const ComputeProfile& c = job_.compute_of(0);
    GroupingInput in{job_.overlap, job_.bytes_per_param, std::vector<double>(c.layers.size(), 0.0),
                     [this] { return fit_collective(); }};
    double t = 0.0;
    for (std::size_t l = c.layers.size(); l-- > 0;) {
        t += c.layers[l].bwd.seconds();
        in.ready[l] = t;
    }
    return grouping_scheme(job_.overlap).rule(in, pieces);
}

std::pair<double, double> CommPlan::fit_collective() const {
    // The summable collective's time on this fabric fitted as a + b x bytes from two sizes.
    const double s1 = 1e6, s2 = 65e6;
    topo::CollectiveContext c1 = ctx_, c2 = ctx_;
    c1.bytes = sim::Bytes{s1};
    c1.tensor_bytes = {s1};
    c1.tensor_server.clear();
    c2.bytes = sim::Bytes{s2};
    c2.tensor_bytes = {s2};
    c2.tensor_server.clear();
    auto cost = [this](std::uint32_t x, std::uint32_t y) { return endpoint_path_cost(job_, fabric_, x, y); };
    const double t1 = planner_.make_summable(job_.architecture, c1)->alpha_beta(cost).seconds();
    const double t2 = planner_.make_summable(job_.architecture, c2)->alpha_beta(cost).seconds();
    const double b = std::max(0.0, (t2 - t1) / (s2 - s1));
    // Each collective also pays its launch: a merge saves it too.
    const double a = std::max(0.0, t1 - b * s1) + job_.collective_overhead.seconds();
    return {a, b};
}

void CommPlan::build_phases(Message& m) {
    const auto& layers = job_.workload.layers;
    double sum = 0.0, gather = 0.0, gtop = 0.0, p = 0.0, q = 0.0;
    std::vector<double> sum_tensors, p_tensors, q_tensors;
    std::vector<std::uint32_t> sum_owners;  // ps round_robin/balanced, BytePS: the server of each summable tensor
    bool owners_complete = !owner_.empty();
    const auto* place = byteps_place_.empty() ? nullptr : &byteps_place_.at(messages_.size());
    std::size_t piece = 0;
    // A summable payload of the current piece: one tensor of the round, or its BytePS partitions on their servers.
    auto summable_part = [&](double bytes, const Piece& pc) {
        if (place != nullptr) {
            for (const auto& [srv, frac] : (*place)[piece]) {
                sum_tensors.push_back(bytes * frac);
                sum_owners.push_back(srv);
            }
            return;
        }
        sum_tensors.push_back(bytes);
        if (owners_complete) sum_owners.push_back(owner_[pc.layer][pc.tensor]);
    };
    CodecWork between, decode_once, decode_each;
    for (const Piece& pc : m.pieces) {
        const Tensor& t = layers[pc.layer].tensors[pc.tensor];
        TensorShape shape = tensor_shape(t);
        const double frac = pc.elements / static_cast<double>(shape.elements);
        if (frac < 1.0) {  // a partition: the same columns, fewer rows
            shape.rows = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(shape.rows * frac)));
            shape.elements = shape.rows * shape.cols;
        }
        const CompressedTensor ct = compressor_->compress(shape, job_.bytes_per_param);
        m.encode += ct.encode;
        between += ct.between;
        switch (ct.aggregation) {
            case Aggregation::summable:
                sum += ct.payload_bytes;
                summable_part(ct.payload_bytes, pc);
                decode_once += ct.decode_per_payload;
                break;
            case Aggregation::allgather:
                gather += ct.payload_bytes;
                decode_each += ct.decode_per_payload;
                break;
            case Aggregation::gtopk:
                gtop += ct.payload_bytes;
                decode_once += ct.decode_per_payload;
                break;
            case Aggregation::lowrank:
                p += ct.p_bytes;
                q += ct.q_bytes;
                if (ct.p_bytes > 0.0) p_tensors.push_back(ct.p_bytes);
                if (ct.q_bytes > 0.0) q_tensors.push_back(ct.q_bytes);
                if (ct.dense_bytes > 0.0) {
                    sum += ct.dense_bytes;
                    summable_part(ct.dense_bytes, pc);
                }
                decode_once += ct.decode_per_payload;
                break;
        }
        ++piece;
    }
    m.payload_bytes = sum + gather + gtop + p + q;
    const std::uint32_t n = job_.workers;
    // With a PS the sparse aggregate is decoded once; with all-gather every payload is.
    const double gathered = job_.architecture.kind == topo::ArchKind::allreduce ? n : 1.0;
    m.decode = decode_once;
    m.decode.memory_bytes += decode_each.memory_bytes * gathered;
    m.decode.flops += decode_each.flops * gathered;
    auto remote = [this](std::uint32_t a, std::uint32_t b) { return job_.endpoint_hosts[a] != job_.endpoint_hosts[b]; };
    using program::CollectiveKind;
    auto add = [&](CollectiveKind kind, double bytes, const std::vector<double>& tensors, CodecWork before,
                   const std::vector<std::uint32_t>& owners = {}) {
        if (bytes <= 0.0) return;
        Phase ph;
        ph.op = program::CommOp::of(kind, 0, bytes);
        ph.op.tensors = tensors.empty() ? std::vector<double>{bytes} : tensors;
        if (owners.size() == tensors.size()) ph.op.servers = owners;
        ph.op.before = before;
        ph.collective = &planner_.collective(ph.op);
        ph.work_before = before;
        ph.wire_bytes = ph.collective->wire_bytes(remote).value();
        ph.machine_bytes =
            ph.collective
                ->wire_bytes([this](std::uint32_t a, std::uint32_t b) {
                    return fabric_.node_of(job_.endpoint_hosts[a]) != fabric_.node_of(job_.endpoint_hosts[b]);
                })
                .value();
        m.phases.push_back(ph);
    };
    // PowerSGD's P and Q factors are all-reduced like any summable payload.
    add(CollectiveKind::summable, p, p_tensors, {});
    add(CollectiveKind::summable, q, q_tensors, between);
    add(CollectiveKind::summable, sum, sum_tensors, {}, sum_owners);
    add(CollectiveKind::sparse_all_gather, gather, {}, {});
    add(CollectiveKind::gtopk, gtop, {}, {});
}

std::vector<AlgorithmPick> CommPlan::algorithm_picks() const {
    std::vector<AlgorithmPick> out;
    for (const Message& m : messages_)
        for (const Phase& ph : m.phases) {
            const auto* picked = planner_.pick_of(ph.collective);
            if (picked == nullptr) continue;
            const topo::AllreduceAlgorithm algorithm = picked->first;
            const double bytes = picked->second;
            auto p =
                std::find_if(out.begin(), out.end(), [&](const AlgorithmPick& x) { return x.algorithm == algorithm; });
            if (p == out.end()) p = out.insert(out.end(), AlgorithmPick{algorithm, 0, bytes, bytes});
            ++p->messages;
            p->min_bytes = std::min(p->min_bytes, bytes);
            p->max_bytes = std::max(p->max_bytes, bytes);
        }
    // In the order of the algorithm table, so that equal runs print equally.
    std::sort(out.begin(), out.end(),
              [](const AlgorithmPick& a, const AlgorithmPick& b) { return a.algorithm < b.algorithm; });
    return out;
}

sim::Time CommPlan::work_time(const CodecWork& work, std::uint32_t w) const {
    return job_.codec_time(work, w);
}

sim::Time CommPlan::codec_time(std::uint32_t w) const {
    sim::Time t;
    for (const Message& m : messages_) {
        t += work_time(m.encode, w) + work_time(m.decode, w);
        for (const Phase& ph : m.phases) t += work_time(ph.work_before, w);
    }
    return t;
}

sim::Time CommPlan::alpha_beta(const Phase& p) const {
    return p.collective->alpha_beta(
        [this](std::uint32_t a, std::uint32_t b) { return endpoint_path_cost(job_, fabric_, a, b); });
}

sim::Time CommPlan::alpha_beta(const Message& m) const {
    sim::Time t = work_time(m.encode, 0) + work_time(m.decode, 0);
    if (!m.phases.empty()) t += job_.collective_overhead;  // launched once per message
    for (const Phase& ph : m.phases) t += work_time(ph.work_before, 0) + alpha_beta(ph);
    return t;
}

}  // namespace ddlsim::models
