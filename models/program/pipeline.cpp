#include "models/program/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace ddlsim::models::program {

std::vector<StageLayers> pipeline_stages(const Workload& w, std::uint32_t p) {
    const auto L = static_cast<std::uint32_t>(w.layers.size());
    if (p == 0) throw std::invalid_argument("expected at least one stage");
    std::vector<StageLayers> out(p);
    if (w.has_blocks()) {
        // Block ids in order, and where each block's layers start.
        std::vector<std::uint32_t> starts;
        std::int32_t last_block = -1;
        for (std::uint32_t l = 0; l < L; ++l) {
            if (w.layers[l].block < 0) continue;
            if (w.layers[l].block != last_block) starts.push_back(l);
            last_block = w.layers[l].block;
        }
        const auto B = static_cast<std::uint32_t>(starts.size());
        if (B % p != 0)
            throw std::invalid_argument(fmt::format(
                "expected a divisor of the model's {} transformer blocks (each stage holds as many), got {}", B, p));
        const std::uint32_t per = B / p;
        for (std::uint32_t s = 0; s < p; ++s) {
            out[s].first = s == 0 ? 0 : starts[s * per];
            out[s].last = s + 1 == p ? L - 1 : starts[(s + 1) * per] - 1;
        }
        return out;
    }
    if (L < p) throw std::invalid_argument(fmt::format("expected at most the model's {} layers, got {}", L, p));
    std::uint32_t first = 0;
    for (std::uint32_t s = 0; s < p; ++s) {
        const std::uint32_t n = L / p + (s < L % p ? 1 : 0);
        out[s] = {first, first + n - 1};
        first += n;
    }
    return out;
}

double boundary_bytes_per_sample(const Workload& w, std::uint32_t l, double element_bytes) {
    if (w.layers.at(l).activation_bytes) return *w.layers[l].activation_bytes;
    const auto& parts = w.layers.at(l).parts;
    for (auto it = parts.rbegin(); it != parts.rend(); ++it)
        if (it->rows_per_sample > 0.0 && it->cols > 0.0) return it->rows_per_sample * it->cols * element_bytes;
    return 0.0;
}

namespace {

double stage_params(const Workload& w, const StageLayers& st) {
    double p = 0.0;
    for (std::uint32_t l = st.first; l <= st.last; ++l) p += static_cast<double>(w.layers[l].params());
    return p;
}

}  // namespace

ProgramSet compile_pipeline(const TrainingJob& job, Planner& planner, double element_bytes,
                            const std::function<bool(std::uint32_t, std::uint32_t)>& same_machine,
                            PipelineTotals& totals) {
    const std::uint32_t p = job.parallelism.pipeline, d = job.parallelism.data(job.workers);
    const std::uint32_t m = job.gradient_accumulation;
    const std::vector<StageLayers> stages = pipeline_stages(job.workload, p);
    const double total_params = static_cast<double>(job.workload.params());
    ProgramSet set;
    set.stream = ProgramSet::Stream::fifo;
    set.comm_spans = true;
    for (std::uint32_t s = 0; s < p; ++s) {
        const StageLayers st = stages[s];
        // The activations a stage sends forward (and their gradients backward) per micro-batch.
        const double out_bytes = boundary_bytes_per_sample(job.workload, st.last, element_bytes) * job.batch_size;
        const double in_bytes =
            s > 0 ? boundary_bytes_per_sample(job.workload, stages[s - 1].last, element_bytes) * job.batch_size : 0.0;
        Program prog;
        auto compute = [&](ComputeKind kind, std::uint32_t k) {
            Compute c;
            c.kind = kind;
            c.first = st.first;
            c.last = st.last;
            c.micro_batch = k;
            c.per_layer = true;
            c.slowable = false;  // nothing of the stage's own data-parallel traffic runs before the pipeline drains
            c.label = fmt::format("{} stage {} mb{}", kind == ComputeKind::forward ? "fwd" : "bwd", s, k);
            prog.compute(std::move(c));
        };
        // Tags: micro-batch k's activations 2k, its gradients 2k + 1. Peers are the same data rank of the stages
        // before and after (rank +- d); the program is the stage's, the peer relative: the executor adds the rank.
        auto forward = [&](std::uint32_t k) {
            if (s > 0) prog.recv_relative(-static_cast<std::int64_t>(d), 2 * k);
            compute(ComputeKind::forward, k);
            if (s + 1 < p) prog.send_relative(static_cast<std::int64_t>(d), out_bytes, 2 * k);
        };
        auto backward = [&](std::uint32_t k) {
            if (s + 1 < p) prog.recv_relative(static_cast<std::int64_t>(d), 2 * k + 1);
            compute(ComputeKind::backward, k);
            if (s > 0) prog.send_relative(-static_cast<std::int64_t>(d), in_bytes, 2 * k + 1);
        };
        if (job.parallelism.schedule == PipelineSchedule::gpipe) {
            for (std::uint32_t k = 0; k < m; ++k) forward(k);
            for (std::uint32_t k = 0; k < m; ++k) backward(k);
        } else {
            const std::uint32_t warm = std::min(p - s - 1, m);
            for (std::uint32_t k = 0; k < warm; ++k) forward(k);
            for (std::uint32_t k = 0; k + warm < m; ++k) {
                forward(k + warm);
                backward(k);
            }
            for (std::uint32_t k = m - warm; k < m; ++k) backward(k);
        }
        const double params = stage_params(job.workload, st);
        if (d > 1 && params > 0.0) {
            Partition part(1);
            for (std::uint32_t r = 0; r < d; ++r) part[0].push_back(s * d + r);
            const GroupId g = planner.add_group(fmt::format("stage {} data", s), std::move(part));
            const CommOp op = CommOp::of(CollectiveKind::all_reduce, g, params * job.bytes_per_param);
            Call c;
            c.phases.push_back(op);
            c.verb = "sync ";
            c.label = fmt::format("stage {} gradients ({:.3g} MB)", s, op.bytes / 1e6);
            c.gradient = true;
            const std::uint32_t call = set.add_call(std::move(c));
            prog.issue(call);
            prog.wait(call);
            totals.wire += planner.wire_bytes(op);
            totals.machine += planner.machine_bytes(op);
            totals.collectives += 1.0;
        }
        Compute u;
        u.kind = ComputeKind::update;
        u.fraction = total_params > 0.0 ? params / total_params : 1.0 / p;
        u.slowable = false;
        u.label = fmt::format("update stage {}", s);
        prog.compute(std::move(u));
        set.programs.push_back(std::move(prog));
        for (std::uint32_t r = 0; r < d; ++r) {
            set.program_of.push_back(s);
            const std::uint32_t rank = s * d + r;
            if (s + 1 < p) {  // forward to the next stage and its gradients back, every micro-batch
                const double out_back = 2.0 * out_bytes;
                totals.p2p_bytes += m * out_back;
                if (!same_machine(rank, rank + d)) totals.p2p_machine_bytes += m * out_back;
            }
        }
    }
    return set;
}

}  // namespace ddlsim::models::program
