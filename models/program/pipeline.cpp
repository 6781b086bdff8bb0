#include "models/program/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "models/expert_parallel.hpp"
#include "models/tensor_parallel.hpp"

namespace ddlsim::models::program {

std::vector<StageLayers> pipeline_stages(const Workload& w, const ParallelismSpec& par) {
    const auto L = static_cast<std::uint32_t>(w.layers.size());
    const std::uint32_t p = par.pipeline * par.chunks();
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
        // Blocks per stage: the first's and the last's where given (Megatron's decoder_first/last_pipeline_num_layers),
        // the rest evenly.
        const std::uint32_t first = p > 1 ? par.first_stage_layers.value_or(0) : 0;
        const std::uint32_t last = p > 1 ? par.last_stage_layers.value_or(0) : 0;
        const std::uint32_t fixed = (first > 0 ? 1U : 0U) + (last > 0 ? 1U : 0U);
        if (first + last > B || (fixed == p && first + last != B))
            throw std::invalid_argument(
                fmt::format("expected first_stage_layers + last_stage_layers of at most the "
                            "model's {} transformer blocks (all of them with 2 stages), got {}",
                            B, first + last));
        const std::uint32_t rest = B - first - last, others = p - fixed;
        if (others > 0 && rest % others != 0)
            throw std::invalid_argument(
                fixed == 0 ? fmt::format("expected stages (pipeline x virtual_stages) dividing the model's {} "
                                         "transformer blocks (each stage holds as many; first_stage_layers and "
                                         "last_stage_layers make the outer stages uneven), got {}",
                                         B, p)
                           : fmt::format("expected the {} transformer blocks left after the first and last stages' "
                                         "to divide evenly over the other {} stages",
                                         rest, others));
        std::uint32_t at = 0;
        for (std::uint32_t s = 0; s < p; ++s) {
            const std::uint32_t count = s == 0 && first > 0      ? first
                                        : s + 1 == p && last > 0 ? last
                                                                 : rest / std::max(1U, others);
            if (count == 0)
                throw std::invalid_argument(
                    fmt::format("expected at least one transformer block on every stage; "
                                "stage {} would get none",
                                s));
            out[s].first = s == 0 ? 0 : starts[at];
            at += count;
            out[s].last = s + 1 == p ? L - 1 : starts[at] - 1;
        }
        return out;
    }
    if (par.first_stage_layers || par.last_stage_layers)
        throw std::invalid_argument(
            "first_stage_layers and last_stage_layers count transformer blocks; the model has "
            "none");
    if (L < p) throw std::invalid_argument(fmt::format("expected at most the model's {} layers, got {}", L, p));
    std::uint32_t first = 0;
    for (std::uint32_t s = 0; s < p; ++s) {
        const std::uint32_t n = L / p + (s < L % p ? 1 : 0);
        out[s] = {first, first + n - 1};
        first += n;
    }
    return out;
}

std::vector<StageLayers> stage_chunks(const std::vector<StageLayers>& all, std::uint32_t p, std::uint32_t s) {
    std::vector<StageLayers> out;
    for (std::size_t vs = s; vs < all.size(); vs += p) out.push_back(all[vs]);
    return out;
}

std::uint32_t warmup_forwards(const ParallelismSpec& par, std::uint32_t s, std::uint32_t m) {
    const std::uint32_t p = par.pipeline, v = par.chunks();
    switch (par.schedule) {
        case PipelineSchedule::gpipe: return m;
        case PipelineSchedule::one_f_one_b: return std::min(p - s - 1, m);
        case PipelineSchedule::interleaved_1f1b: break;
    }
    return m == p ? m * v : std::min((p - s - 1) * 2 + (v - 1) * p, m * v);
}

std::vector<PipelineOp> stage_schedule(const ParallelismSpec& par, std::uint32_t s, std::uint32_t m) {
    const std::uint32_t p = par.pipeline;
    std::vector<PipelineOp> out;
    auto fwd = [&](std::uint32_t k, std::uint32_t j) { out.push_back({true, k, j}); };
    auto bwd = [&](std::uint32_t k, std::uint32_t j) { out.push_back({false, k, j}); };
    if (par.schedule == PipelineSchedule::gpipe) {
        for (std::uint32_t k = 0; k < m; ++k) fwd(k, 0);
        for (std::uint32_t k = 0; k < m; ++k) bwd(k, 0);
        return out;
    }
    const std::uint32_t warm = warmup_forwards(par, s, m);
    if (par.schedule == PipelineSchedule::one_f_one_b) {
        for (std::uint32_t k = 0; k < warm; ++k) fwd(k, 0);
        for (std::uint32_t k = 0; k + warm < m; ++k) {
            fwd(k + warm, 0);
            bwd(k, 0);
        }
        for (std::uint32_t k = m - warm; k < m; ++k) bwd(k, 0);
        return out;
    }
    // Interleaved 1F1B (megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving):
    // the i-th forward runs chunk (i / p) % v of micro-batch (i / (p v)) p + i % p, the i-th backward the chunks
    // in reverse; the warm-up forwards, then one forward and one backward in turn, then the remaining backwards.
    const std::uint32_t v = par.chunks(), total = m * v;
    auto micro_batch = [&](std::uint32_t i) { return i / (p * v) * p + i % p; };
    auto chunk = [&](std::uint32_t i, bool forward) {
        const std::uint32_t j = i / p % v;
        return forward ? j : v - 1 - j;
    };
    for (std::uint32_t i = 0; i < warm; ++i) fwd(micro_batch(i), chunk(i, true));
    for (std::uint32_t i = 0; i + warm < total; ++i) {
        fwd(micro_batch(i + warm), chunk(i + warm, true));
        bwd(micro_batch(i), chunk(i, false));
    }
    for (std::uint32_t i = total - warm; i < total; ++i) bwd(micro_batch(i), chunk(i, false));
    return out;
}

double boundary_bytes_per_sample(const Workload& w, std::uint32_t l, double element_bytes) {
    if (w.layers.at(l).activation_bytes) return *w.layers[l].activation_bytes;
    // A transformer block's layers all end in the b x s x h hidden state (a routed-experts layer's last GEMM is
    // an expert's, over its share of the tokens).
    if (w.layers[l].block >= 0 && w.hidden > 0 && w.tokens_per_sample > 0)
        return static_cast<double>(w.tokens_per_sample * w.hidden) * element_bytes;
    const auto& parts = w.layers.at(l).parts;
    for (auto it = parts.rbegin(); it != parts.rend(); ++it)
        if (it->rows_per_sample > 0.0 && it->cols > 0.0) return it->rows_per_sample * it->cols * element_bytes;
    return 0.0;
}

namespace {

// The parameters of a stage's layers: all of them, and of those the routed experts'.
struct StageParams {
    double all = 0.0, experts = 0.0;
};
StageParams stage_params(const Workload& w, const std::vector<StageLayers>& chunks) {
    StageParams p;
    for (const StageLayers& st : chunks)
        for (std::uint32_t l = st.first; l <= st.last; ++l)
            for (const Tensor& t : w.layers[l].tensors) {
                p.all += static_cast<double>(t.params);
                if (t.expert) p.experts += static_cast<double>(t.params);
            }
    return p;
}

// Puts the call of `op` on `prog`, issued and waited for at once, and counts its bytes and itself.
void blocking_call(ProgramSet& set, Program& prog, Planner& planner, const CommOp& op, Call c, double& wire,
                   double& machine, double& calls) {
    c.phases.push_back(op);
    const std::uint32_t call = set.add_call(std::move(c));
    prog.issue(call);
    prog.wait(call);
    wire += planner.wire_bytes(op);
    machine += planner.machine_bytes(op);
    calls += 1.0;
}

}  // namespace

ProgramSet compile_pipeline(const TrainingJob& job, Planner& planner, double element_bytes,
                            const std::function<bool(std::uint32_t, std::uint32_t)>& same_machine,
                            PipelineTotals& totals) {
    const ParallelismSpec& par = job.parallelism;
    const std::uint32_t p = par.pipeline, t = par.tensor, d = par.data(job.workers), sr = par.stage_ranks(job.workers);
    const std::uint32_t e = job.workload.experts > 0 ? par.expert : 1;
    const std::uint32_t m = job.gradient_accumulation;
    const bool sp = t > 1 && par.sequence_parallel;
    const std::vector<StageLayers> stages = pipeline_stages(job.workload, par);
    const std::vector<TensorRegion> regions = tensor_regions(job.workload);
    const std::vector<bool> recomputed = checkpointed_layers(job.workload);
    const double total_params = static_cast<double>(job.workload.params());
    // One tensor-parallel collective: the micro-batch's b x s x h activations, whole on every rank.
    const double tp_bytes = tensor_collective_bytes_per_sample(job.workload, element_bytes) * job.batch_size;
    // One expert all-to-all per rank: its micro-batch's token copies, each tensor rank 1/t of them (the tensor group
    // dispatches each copy once), the busiest rank of each expert group at rho x the mean.
    const double ep_bytes = expert_all_to_all_bytes_per_sample(job.workload, element_bytes) * job.batch_size / t;
    const double hot = expert_rank_load(job.workload, e, par.expert_imbalance);
    ProgramSet set;
    set.stream = ProgramSet::Stream::fifo;
    set.comm_spans = true;
    const std::uint32_t v = par.chunks(), V = p * v;
    // The activations a virtual stage sends forward (and their gradients backward) per micro-batch; with sequence
    // parallelism each tensor rank sends its 1/t of the sequence.
    const double share = sp ? 1.0 / t : 1.0;
    auto boundary = [&](std::uint32_t vs) {
        return boundary_bytes_per_sample(job.workload, stages[vs].last, element_bytes) * job.batch_size * share;
    };
    for (std::uint32_t s = 0; s < p; ++s) {
        // Peers: the same data and tensor rank of the stage after (rank + d t; after the last stage, the first's next
        // chunk) and of the stage before. The program is the stage's, the peers relative.
        const std::int64_t next = s + 1 < p ? static_cast<std::int64_t>(sr) : -static_cast<std::int64_t>((p - 1) * sr);
        const std::int64_t prev = s > 0 ? -static_cast<std::int64_t>(sr) : static_cast<std::int64_t>((p - 1) * sr);
        // The stage's tensor-parallel groups: t consecutive ranks of each of its d model replicas.
        GroupId tensor_group = 0;
        if (t > 1) {
            Partition part(d);
            for (std::uint32_t j = 0; j < d; ++j)
                for (std::uint32_t i = 0; i < t; ++i) part[j].push_back(s * sr + j * t + i);
            tensor_group = planner.add_group(fmt::format("stage {} tensor", s), std::move(part));
        }
        // Its expert groups: e consecutive data ranks (of the same tensor rank), Megatron's expert-parallel groups.
        GroupId expert_group = 0;
        if (e > 1) {
            Partition part;
            for (std::uint32_t j0 = 0; j0 < d; j0 += e)
                for (std::uint32_t i = 0; i < t; ++i) {
                    auto& g = part.emplace_back();
                    for (std::uint32_t q = 0; q < e; ++q) g.push_back(s * sr + (j0 + q) * t + i);
                }
            expert_group = planner.add_group(fmt::format("stage {} expert", s), std::move(part));
        }
        Program prog;
        auto compute = [&](ComputeKind kind, std::uint32_t first, std::uint32_t last, std::uint32_t k) {
            Compute c;
            c.kind = kind;
            c.first = first;
            c.last = last;
            c.micro_batch = k;
            c.per_layer = true;
            c.slowable = false;  // nothing of the stage's own data-parallel traffic runs before the pipeline drains
            c.label = fmt::format("{} stage {} mb{}", kind == ComputeKind::forward ? "fwd" : "bwd", s, k);
            prog.compute(std::move(c));
        };
        // A tensor-parallel collective the compute stream waits for (on its own communicator): each one a call of
        // its own, since a call is joined once per step.
        auto tensor = [&](CollectiveKind kind, std::uint32_t layer, std::uint32_t k, const char* what) {
            Call c;
            c.verb = "tp ";
            c.label = fmt::format("{} {} mb{} ({:.3g} MB)", what, job.workload.layers[layer].name, k, tp_bytes / 1e6);
            c.stream = kTensorStream;
            blocking_call(set, prog, planner, CommOp::of(kind, tensor_group, tp_bytes), std::move(c),
                          totals.tensor_wire, totals.tensor_machine, totals.tensor_collectives);
        };
        // An expert all-to-all the compute stream waits for (on its own communicator).
        auto expert = [&](CollectiveKind kind, std::uint32_t layer, std::uint32_t k, const char* what) {
            Call c;
            c.verb = "ep ";
            c.label = fmt::format("{} {} mb{} ({:.3g} MB)", what, job.workload.layers[layer].name, k, ep_bytes / 1e6);
            c.stream = kExpertStream;
            blocking_call(set, prog, planner, CommOp::of(kind, expert_group, ep_bytes, hot), std::move(c),
                          totals.expert_wire, totals.expert_machine, totals.expert_collectives);
        };
        auto routed = [&](std::uint32_t l) { return e > 1 && job.workload.layers[l].routed_experts; };
        const CollectiveKind reduce = sp ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce;
        // Tags: micro-batch k's activations from virtual stage u to u + 1 are 2 (k V + u), their gradients that + 1.
        auto forward = [&](std::uint32_t k, std::uint32_t j) {
            const std::uint32_t vs = j * p + s;
            const StageLayers st = stages[vs];
            if (vs > 0) prog.recv_relative(prev, 2 * (k * V + vs - 1));
            // Layers run up from `from`; a collective ends the run at the layer it follows.
            std::uint32_t from = st.first;
            auto run_up_to = [&](std::uint32_t last_plus_one) {
                if (from < last_plus_one) compute(ComputeKind::forward, from, last_plus_one - 1, k);
                from = last_plus_one;
            };
            for (std::uint32_t l = st.first; (t > 1 || e > 1) && l <= st.last; ++l) {
                if (routed(l)) {
                    run_up_to(l);
                    expert(CollectiveKind::dispatch, l, k, "dispatch to");
                }
                if (t > 1 && sp && regions[l].starts) {
                    run_up_to(l);
                    tensor(CollectiveKind::all_gather, l, k, "all-gather before");
                }
                if (t > 1 && regions[l].ends) {
                    run_up_to(l + 1);
                    tensor(reduce, l, k, sp ? "reduce-scatter after" : "all-reduce after");
                }
                if (routed(l)) {
                    run_up_to(l + 1);
                    expert(CollectiveKind::combine, l, k, "combine from");
                }
            }
            run_up_to(st.last + 1);
            if (vs + 1 < V) prog.send_relative(next, boundary(vs), 2 * (k * V + vs));
        };
        auto backward = [&](std::uint32_t k, std::uint32_t j) {
            const std::uint32_t vs = j * p + s;
            const StageLayers st = stages[vs];
            if (vs + 1 < V) prog.recv_relative(next, 2 * (k * V + vs) + 1);
            // Layers run down from `to`; a collective ends the run at the layer it follows.
            std::int64_t to = st.last;
            auto run_down_to = [&](std::int64_t first) {
                if (first <= to)
                    compute(ComputeKind::backward, static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(to),
                            k);
                to = first - 1;
            };
            for (std::int64_t l = st.last; (t > 1 || e > 1) && l >= static_cast<std::int64_t>(st.first); --l) {
                const auto layer = static_cast<std::uint32_t>(l);
                if (routed(layer)) {  // the combine's gradient to the experts; recomputation reruns the forward's two
                    run_down_to(l + 1);
                    if (job.activation_checkpointing && recomputed[layer]) {
                        expert(CollectiveKind::dispatch, layer, k, "recompute dispatch to");
                        expert(CollectiveKind::combine, layer, k, "recompute combine from");
                    }
                    expert(CollectiveKind::dispatch, layer, k, "combine's gradient to");
                }
                if (t == 1) {
                    if (routed(layer)) {  // the dispatch's gradient back to the tokens' ranks
                        run_down_to(l);
                        expert(CollectiveKind::combine, layer, k, "dispatch's gradient from");
                    }
                    continue;
                }
                const TensorRegion& r = regions[static_cast<std::size_t>(l)];
                // Before layer l's backward: full recomputation reruns its forward's collectives, and with sequence
                // parallelism the gradient of a region's closing reduce-scatter is an all-gather.
                const bool again = job.activation_checkpointing && recomputed[layer] && (r.ends || (sp && r.starts));
                if (again || (sp && r.ends)) {
                    run_down_to(l + 1);
                    if (again && sp && r.starts) tensor(CollectiveKind::all_gather, layer, k, "recompute");
                    if (again && r.ends) tensor(reduce, layer, k, "recompute");
                    if (sp && r.ends) tensor(CollectiveKind::all_gather, layer, k, "all-gather before");
                }
                if (r.starts) {  // the column GEMM's input gradient, summed over the tensor ranks
                    run_down_to(l);
                    tensor(reduce, layer, k, sp ? "reduce-scatter after" : "all-reduce after");
                }
                if (routed(layer)) {
                    run_down_to(l);
                    expert(CollectiveKind::combine, layer, k, "dispatch's gradient from");
                }
            }
            run_down_to(st.first);
            if (vs > 0) prog.send_relative(prev, boundary(vs - 1), 2 * (k * V + vs - 1) + 1);
        };
        for (const PipelineOp& op : stage_schedule(par, s, m)) {
            if (op.forward)
                forward(op.micro_batch, op.chunk);
            else
                backward(op.micro_batch, op.chunk);
        }
        // The stage's gradients (each tensor rank's share), all-reduced among its data ranks.
        // The experts' gradients among the d / e ranks holding the same experts (Megatron's expert-data group).
        const StageParams params = stage_params(job.workload, stage_chunks(stages, p, s));
        const double dense = e > 1 ? params.all - params.experts : params.all;
        auto sync = [&](const char* name, double count, std::uint32_t groups, std::uint32_t stride,
                        std::uint32_t size) {
            if (size < 2 || count <= 0.0) return;
            Partition part(groups);
            for (std::uint32_t i = 0; i < groups; ++i)
                for (std::uint32_t j = 0; j < size; ++j) part[i].push_back(s * sr + (i / t) * t + j * stride + i % t);
            const GroupId g = planner.add_group(fmt::format("stage {} {}", s, name), std::move(part));
            const CommOp op = CommOp::of(CollectiveKind::all_reduce, g, count * job.bytes_per_param);
            Call c;
            c.verb = "sync ";
            c.label = fmt::format("stage {} {} gradients ({:.3g} MB)", s, name, op.bytes / 1e6);
            c.gradient = true;
            blocking_call(set, prog, planner, op, std::move(c), totals.wire, totals.machine, totals.collectives);
        };
        sync("data", dense, t, t, d);
        if (e > 1) sync("expert data", params.experts, t * e, e * t, d / e);
        Compute u;
        u.kind = ComputeKind::update;
        u.fraction = total_params > 0.0 ? params.all / total_params : 1.0 / p;
        u.slowable = false;
        u.label = fmt::format("update stage {}", s);
        prog.compute(std::move(u));
        set.programs.push_back(std::move(prog));
        for (std::uint32_t r = 0; r < sr; ++r) {
            set.program_of.push_back(s);
            const std::uint32_t rank = s * sr + r;
            for (std::uint32_t j = 0; j < v; ++j) {  // forward to the next stage and its gradients back
                const std::uint32_t vs = j * p + s;
                if (vs + 1 == V) continue;
                const double out_back = 2.0 * m * boundary(vs);
                totals.p2p_bytes += out_back;
                if (!same_machine(rank, static_cast<std::uint32_t>(static_cast<std::int64_t>(rank) + next)))
                    totals.p2p_machine_bytes += out_back;
            }
        }
    }
    return set;
}

}  // namespace ddlsim::models::program
