#include "models/program/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

#include "models/context_parallel.hpp"
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
        case PipelineSchedule::one_f_one_b:
        case PipelineSchedule::zero_bubble: return std::min(p - s - 1, m);
        case PipelineSchedule::interleaved_1f1b: break;
    }
    return m == p ? m * v : std::min((p - s - 1) * 2 + (v - 1) * p, m * v);
}

std::vector<PipelineOp> stage_schedule(const ParallelismSpec& par, std::uint32_t s, std::uint32_t m) {
    const std::uint32_t p = par.pipeline;
    std::vector<PipelineOp> out;
    auto fwd = [&](std::uint32_t k, std::uint32_t j) { out.push_back({Pass::forward, k, j}); };
    auto bwd = [&](std::uint32_t k, std::uint32_t j) { out.push_back({Pass::backward, k, j}); };
    if (par.schedule == PipelineSchedule::zero_bubble) {
        // ZB-H1 (Qi et al., arXiv 2401.10241 §3.1, Figure 3): in step x, F of x, B of x - (p - 1 - s), W of x - (p -
        // 1).
        for (std::int64_t x = 0; x + 1 < static_cast<std::int64_t>(m + p); ++x) {
            const std::int64_t b = x - (p - 1 - s), wg = x - (p - 1), mm = m;
            if (x < mm) fwd(static_cast<std::uint32_t>(x), 0);
            if (b >= 0 && b < mm) out.push_back({Pass::input, static_cast<std::uint32_t>(b), 0});
            if (wg >= 0 && wg < mm) out.push_back({Pass::weight, static_cast<std::uint32_t>(wg), 0});
        }
        return out;
    }
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
StageParams layer_params(const Layer& layer) {
    StageParams p;
    for (const Tensor& t : layer.tensors) {
        p.all += static_cast<double>(t.params);
        if (t.expert) p.experts += static_cast<double>(t.params);
    }
    return p;
}
StageParams stage_params(const Workload& w, const std::vector<StageLayers>& chunks) {
    StageParams p;
    for (const StageLayers& st : chunks)
        for (std::uint32_t l = st.first; l <= st.last; ++l) {
            const StageParams q = layer_params(w.layers[l]);
            p.all += q.all;
            p.experts += q.experts;
        }
    return p;
}

// Issues `c` with its one phase `op` on the rank's program and counts its bytes and itself; returns the call.
std::uint32_t issued_call(ProgramSet& set, Program& prog, Planner& planner, const CommOp& op, Call c, double& wire,
                          double& machine, double& calls) {
    c.phases.push_back(op);
    const std::uint32_t call = set.add_call(std::move(c));
    prog.issue(call);
    wire += planner.wire_bytes(op);
    machine += planner.machine_bytes(op);
    calls += 1.0;
    return call;
}

// The same, and the compute stream waits for it.
void blocking_call(ProgramSet& set, Program& prog, Planner& planner, const CommOp& op, Call c, double& wire,
                   double& machine, double& calls) {
    prog.wait(issued_call(set, prog, planner, op, std::move(c), wire, machine, calls));
}

}  // namespace

ProgramSet compile_pipeline(const TrainingJob& job, Planner& planner, double element_bytes,
                            const std::function<bool(std::uint32_t, std::uint32_t)>& same_machine,
                            PipelineTotals& totals) {
    const ParallelismSpec& par = job.parallelism;
    const std::uint32_t p = par.pipeline, t = par.tensor, d = par.data(job.workers);
    const std::uint32_t e = job.workload.experts > 0 ? par.expert : 1, cp = par.context, dc = d * cp;
    const std::uint32_t m = job.gradient_accumulation;
    const bool sp = t > 1 && par.sequence_parallel;
    const bool tp_overlap = sp && par.tensor_overlap;
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
    // One context-parallel ring: every rank's key/value block (of its s / c tokens and its t-th of the heads), passed
    // around the c ranks: an all-gather of c blocks; backward the blocks and their gradients.
    const double cp_bytes = context_block_bytes_per_sample(job.workload, element_bytes) * job.batch_size * cp;
    // DeepSpeed-Ulysses (context_algorithm all_to_all): each rank's queries, keys and values of its s / c tokens and
    // its t-th of the heads go out by one all-to-all before attention, the output (hidden / t wide) comes back by
    // another after it (their gradients the other way in backward).
    const bool ulysses_mode = cp > 1 && par.context_algorithm == ContextAlgorithm::all_to_all;
    const double q_width = static_cast<double>(job.workload.hidden) / t;
    const double ulysses_in = static_cast<double>(job.workload.tokens_per_sample) *
                              (q_width + 2.0 * static_cast<double>(job.workload.kv_dim)) * element_bytes *
                              job.batch_size;
    const double ulysses_out =
        static_cast<double>(job.workload.tokens_per_sample) * q_width * element_bytes * job.batch_size;
    // Megatron's DDP (megatron/core/distributed/distributed_data_parallel.py): with overlap (wfbp) each bucket of
    // gradients is reduced as soon as the last micro-batch's backward has produced it; with the distributed optimizer
    // (sharding stage 1, megatron/core/optimizer/distrib_optimizer.py) reduce-scattered, each rank updating its
    // 1/(d c) and all-gathering the parameters after.
    const bool overlap = job.overlap.wfbp, dist_opt = job.sharding.stage == 1;
    const CollectiveKind grad_kind = dist_opt ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce;
    // Buckets of overlap.bucket_size with fusion buffers, else one per layer.
    const double bucket_bytes = job.overlap.fusion == Fusion::buffer ? job.overlap.bucket_size.value() : 0.0;
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
        // The stage's rank of data rank j, context rank k and tensor rank i (ParallelismSpec::rank: data outermost;
        // where it sits among the workers is the placement's, by `order`).
        auto rank_of = [&](std::uint32_t j, std::uint32_t k, std::uint32_t i) { return par.rank(s, j, k, i); };
        // Peers: the same data, context and tensor rank of the stage after (after the last stage, the first's next
        // chunk) and of the stage before. The program is the stage's, the peers relative.
        const std::int64_t next =
            static_cast<std::int64_t>(par.rank(s + 1 < p ? s + 1 : 0, 0, 0, 0)) - rank_of(0, 0, 0);
        const std::int64_t prev =
            static_cast<std::int64_t>(par.rank(s > 0 ? s - 1 : p - 1, 0, 0, 0)) - rank_of(0, 0, 0);
        // Its tensor-parallel groups: the t tensor ranks of each (data, context) rank.
        GroupId tensor_group = 0;
        if (t > 1) {
            Partition part(dc);
            for (std::uint32_t j = 0; j < dc; ++j)
                for (std::uint32_t i = 0; i < t; ++i) part[j].push_back(rank_of(j / cp, j % cp, i));
            tensor_group = planner.add_group(fmt::format("stage {} tensor", s), std::move(part));
        }
        // Its context-parallel rings: the c context ranks of each data and tensor rank.
        GroupId context_group = 0;
        if (cp > 1) {
            Partition part;
            for (std::uint32_t j = 0; j < d; ++j)
                for (std::uint32_t i = 0; i < t; ++i) {
                    auto& g = part.emplace_back();
                    for (std::uint32_t k = 0; k < cp; ++k) g.push_back(rank_of(j, k, i));
                }
            context_group = planner.add_group(fmt::format("stage {} context", s), std::move(part));
        }
        // Its expert groups: e consecutive data ranks (of the same context and tensor rank), Megatron's
        // expert-parallel groups.
        GroupId expert_group = 0;
        if (e > 1) {
            Partition part;
            for (std::uint32_t j0 = 0; j0 < d; j0 += e)
                for (std::uint32_t k = 0; k < cp; ++k)
                    for (std::uint32_t i = 0; i < t; ++i) {
                        auto& g = part.emplace_back();
                        for (std::uint32_t q = 0; q < e; ++q) g.push_back(rank_of(j0 + q, k, i));
                    }
            expert_group = planner.add_group(fmt::format("stage {} expert", s), std::move(part));
        }
        // Its gradient groups: each tensor rank's d x c data and context ranks, and (experts) the d / e holding the
        // same experts.
        auto grad_group = [&](const char* name, std::uint32_t groups, std::uint32_t stride, std::uint32_t size) {
            Partition part(groups);
            for (std::uint32_t i = 0; i < groups; ++i)
                for (std::uint32_t j = 0; j < size; ++j) {
                    const std::uint32_t f = i / t + j * (stride / t);  // its data x context rank, j c + k
                    part[i].push_back(rank_of(f / cp, f % cp, i % t));
                }
            return planner.add_group(fmt::format("stage {} {}", s, name), std::move(part));
        };
        constexpr GroupId kNone = ~GroupId{0};
        const GroupId data_group = dc > 1 ? grad_group("data", t, t, dc) : kNone;
        // With overlap: each chunk's buckets, from its last layer down, of bucket_size bytes of the weights the data
        // group reduces (the last one what is left); each is issued once the chunk's last backward has passed its
        // lowest layer.
        struct Bucket {
            std::uint32_t lo = 0;
            double params = 0.0;
        };
        std::vector<std::vector<Bucket>> buckets(v);
        std::vector<std::uint32_t> issued_buckets;
        auto dense_params = [&](std::uint32_t l) {  // what the data group reduces (the experts': their own group)
            const StageParams q = layer_params(job.workload.layers[l]);
            return e > 1 ? q.all - q.experts : q.all;
        };
        if (overlap && data_group != kNone)
            for (std::uint32_t j = 0; j < v; ++j) {
                const StageLayers st = stages[j * p + s];
                double acc = 0.0;
                for (std::int64_t l = st.last; l >= static_cast<std::int64_t>(st.first); --l) {
                    acc += dense_params(static_cast<std::uint32_t>(l));
                    if (acc * job.bytes_per_param >= bucket_bytes || l == static_cast<std::int64_t>(st.first)) {
                        if (acc > 0.0) buckets[j].push_back({static_cast<std::uint32_t>(l), acc});
                        acc = 0.0;
                    }
                }
            }
        // A bucket's call: its gradients' reduction, or (`kind` all-gather) its updated parameters' gathering.
        auto bucket_call = [&](std::uint32_t j, const Bucket& b, CollectiveKind kind) {
            const CommOp op = CommOp::of(kind, data_group, b.params * job.bytes_per_param);
            const bool gradients = kind != CollectiveKind::all_gather;
            Call call;
            call.verb = "sync ";
            call.label = fmt::format(
                "stage {} {} {} from {} ({:.3g} MB)", s, v > 1 ? fmt::format("chunk {}", j) : std::string("bucket"),
                gradients ? "gradients" : "parameters", job.workload.layers[b.lo].name, op.bytes / 1e6);
            call.gradient = gradients;
            call.phases.push_back(op);
            const std::uint32_t id = set.add_call(std::move(call));
            totals.wire += planner.wire_bytes(op);
            totals.machine += planner.machine_bytes(op);
            totals.collectives += 1.0;
            return id;
        };
        // Which op is each chunk's last backward (its weights' gradients complete after it).
        const std::vector<PipelineOp> order = stage_schedule(par, s, m);
        std::vector<std::size_t> last_backward(v, order.size());
        for (std::size_t i = 0; i < order.size(); ++i)
            if (order[i].pass == Pass::backward || order[i].pass == Pass::weight) last_backward[order[i].chunk] = i;
        std::size_t at_op = 0;
        Program prog;
        // overlap_param_gather: the last update's parameters all-gathered bucket by bucket as the step starts (on the
        // data stream, ahead of the gradients' reductions), each waited for by the first forward reaching its lowest
        // layer (Megatron's DDP starts the next bucket's all-gather from that forward pre-hook; issuing them all at
        // once on the one stream runs them in the same order).
        const bool gather_early = dist_opt && par.overlap_param_gather;
        std::vector<std::map<std::uint32_t, std::uint32_t>> gathers(v);  // per chunk: its buckets' lowest layer -> call
        if (gather_early)
            for (std::uint32_t j = 0; j < v; ++j)
                for (auto b = buckets[j].rbegin(); b != buckets[j].rend(); ++b) {
                    const std::uint32_t id = bucket_call(j, *b, CollectiveKind::all_gather);
                    prog.issue(id);
                    gathers[j][b->lo] = id;
                }
        auto compute = [&](ComputeKind kind, std::uint32_t first, std::uint32_t last, std::uint32_t k,
                           std::uint8_t pieces = Compute::kWhole) {
            Compute c;
            c.kind = kind;
            c.first = first;
            c.last = last;
            c.micro_batch = k;
            c.per_layer = true;
            c.pieces = pieces;
            // Without overlap nothing of the stage's own data-parallel traffic runs before the pipeline drains; with it
            // the buckets' reductions share the GPU with the backward (and the rings with attention); a GEMM beside
            // its overlapped tensor-parallel collective shares it too.
            c.slowable = overlap || pieces != Compute::kWhole;
            c.label = fmt::format("{} stage {} mb{}",
                                  kind == ComputeKind::forward           ? "fwd"
                                  : kind == ComputeKind::backward_weight ? "wgrad"
                                                                         : "bwd",
                                  s, k);
            prog.compute(std::move(c));
        };
        // A tensor-parallel collective on its own communicator, each one a call of its own (a call is joined once per
        // step): issued to run beside the compute that follows (tp_overlap; the caller waits for it), or waited for
        // at once.
        auto tensor_beside = [&](CollectiveKind kind, std::uint32_t layer, std::uint32_t k, const char* what) {
            Call c;
            c.verb = "tp ";
            c.label = fmt::format("{} {} mb{} ({:.3g} MB)", what, job.workload.layers[layer].name, k, tp_bytes / 1e6);
            c.stream = kTensorStream;
            return issued_call(set, prog, planner, CommOp::of(kind, tensor_group, tp_bytes), std::move(c),
                               totals.tensor_wire, totals.tensor_machine, totals.tensor_collectives);
        };
        auto tensor = [&](CollectiveKind kind, std::uint32_t layer, std::uint32_t k, const char* what) {
            prog.wait(tensor_beside(kind, layer, k, what));
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
        // A context-parallel ring, issued before the attention it feeds and waited for after it (overlapped with the
        // blockwise attention, on its own communicator): `blocks` key/value blocks per step.
        auto ring = [&](std::uint32_t layer, std::uint32_t k, double blocks, const char* what) {
            const CommOp op = CommOp::of(CollectiveKind::all_gather, context_group, blocks * cp_bytes);
            Call call;
            call.verb = "cp ";
            call.label =
                fmt::format("{} {} mb{} ({:.3g} MB)", what, job.workload.layers[layer].name, k, op.bytes / 1e6);
            call.stream = kContextStream;
            return issued_call(set, prog, planner, op, std::move(call), totals.context_wire, totals.context_machine,
                               totals.context_collectives);
        };
        auto ringed = [&](std::uint32_t l) { return cp > 1 && !ulysses_mode && attends(job.workload.layers[l]); };
        auto ulysses = [&](std::uint32_t l) { return ulysses_mode && attends(job.workload.layers[l]); };
        // One of Ulysses' all-to-alls the compute stream waits for (on the context communicator).
        auto a2a = [&](double bytes, std::uint32_t layer, std::uint32_t k, const char* what) {
            Call c;
            c.verb = "cp ";
            c.label = fmt::format("{} {} mb{} ({:.3g} MB)", what, job.workload.layers[layer].name, k, bytes / 1e6);
            c.stream = kContextStream;
            blocking_call(set, prog, planner, CommOp::of(CollectiveKind::dispatch, context_group, bytes, 1.0),
                          std::move(c), totals.context_wire, totals.context_machine, totals.context_collectives);
        };
        // Layers whose tensor-parallel collectives run beside their GEMMs (not the routed experts' layers: their
        // dispatch and combine sit between).
        auto overlapped = [&](std::uint32_t l) {
            return tp_overlap && (regions[l].starts || regions[l].ends) && !routed(l) && !ulysses(l);
        };
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
            for (std::uint32_t l = st.first; (t > 1 || e > 1 || cp > 1 || !gathers[j].empty()) && l <= st.last; ++l) {
                if (const auto g = gathers[j].find(l); g != gathers[j].end()) {  // its bucket's parameters first
                    run_up_to(l);
                    prog.wait(g->second);
                    gathers[j].erase(g);
                }
                if (ulysses(l)) {
                    // Ulysses: the projections on the rank's tokens, the all-to-all to its heads over the whole
                    // sequence, attention, the all-to-all back, the output projection (the tensor-parallel
                    // collectives around them as without it).
                    run_up_to(l);
                    if (t > 1 && sp && regions[l].starts) tensor(CollectiveKind::all_gather, l, k, "all-gather before");
                    compute(ComputeKind::forward, l, l, k, Compute::kHead);
                    a2a(ulysses_in, l, k, "all-to-all to heads for");
                    compute(ComputeKind::forward, l, l, k, Compute::kBody);
                    a2a(ulysses_out, l, k, "all-to-all to tokens after");
                    compute(ComputeKind::forward, l, l, k, Compute::kTail);
                    from = l + 1;
                    if (t > 1 && regions[l].ends)
                        tensor(reduce, l, k, sp ? "reduce-scatter after" : "all-reduce after");
                    continue;
                }
                if (overlapped(l)) {
                    // tp_overlap: the all-gather beside the column GEMMs it feeds, the reduce-scatter beside the row
                    // GEMMs whose partial sums it reduces (TransformerEngine splits both into chunks pipelined with
                    // the GEMM's: the pair takes about the longer of the two); the ring beside the attention between.
                    run_up_to(l);
                    const TensorRegion& r = regions[l];
                    const std::optional<std::uint32_t> ring_id =
                        ringed(l) ? std::optional{ring(l, k, 1.0, "key/value ring for")} : std::nullopt;
                    std::uint8_t left = Compute::kWhole;
                    if (r.starts) {
                        const std::uint32_t id = tensor_beside(CollectiveKind::all_gather, l, k, "all-gather beside");
                        compute(ComputeKind::forward, l, l, k, Compute::kHead);
                        prog.wait(id);
                        left &= static_cast<std::uint8_t>(~Compute::kHead);
                    }
                    if (r.ends) left &= static_cast<std::uint8_t>(~Compute::kTail);
                    compute(ComputeKind::forward, l, l, k, left);
                    if (ring_id) prog.wait(*ring_id);
                    if (r.ends) {
                        const std::uint32_t id =
                            tensor_beside(CollectiveKind::reduce_scatter, l, k, "reduce-scatter beside");
                        compute(ComputeKind::forward, l, l, k, Compute::kTail);
                        prog.wait(id);
                    }
                    from = l + 1;
                    continue;
                }
                if (routed(l)) {
                    run_up_to(l);
                    expert(CollectiveKind::dispatch, l, k, "dispatch to");
                }
                if (t > 1 && sp && regions[l].starts) {
                    run_up_to(l);
                    tensor(CollectiveKind::all_gather, l, k, "all-gather before");
                }
                if (ringed(l)) {
                    run_up_to(l);
                    const std::uint32_t id = ring(l, k, 1.0, "key/value ring for");
                    run_up_to(l + 1);
                    prog.wait(id);
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
        auto backward = [&](std::uint32_t k, std::uint32_t j, ComputeKind kind) {
            const std::uint32_t vs = j * p + s;
            const StageLayers st = stages[vs];
            if (vs + 1 < V) prog.recv_relative(next, 2 * (k * V + vs) + 1);
            // Layers run down from `to`; a collective ends the run at the layer it follows.
            std::int64_t to = st.last;
            auto run_down_to = [&](std::int64_t first) {
                if (first <= to) compute(kind, static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(to), k);
                to = first - 1;
            };
            // The chunk's last backward issues its gradient buckets as it passes their lowest layers.
            const bool flush = at_op == last_backward[j] && kind == ComputeKind::backward;
            std::size_t next_bucket = 0;
            auto bucket_after = [&](std::int64_t l) {
                if (!flush) return;
                while (next_bucket < buckets[j].size() && buckets[j][next_bucket].lo == l) {
                    run_down_to(l);
                    const std::uint32_t id = bucket_call(j, buckets[j][next_bucket++], grad_kind);
                    prog.issue(id);
                    issued_buckets.push_back(id);
                }
            };
            for (std::int64_t l = st.last;
                 (t > 1 || e > 1 || cp > 1 || flush) && l >= static_cast<std::int64_t>(st.first); --l) {
                const auto layer = static_cast<std::uint32_t>(l);
                const bool again_layer = job.activation_checkpointing && recomputed[layer];
                // Selective recomputation reruns attention's core, and with it the ring's forward exchange.
                const bool again_core = again_layer || (job.selective_recomputation && recomputed[layer]);
                if (ulysses(layer)) {
                    // Ulysses backward: the output gradient to heads, attention's backward, the input gradients back
                    // to tokens; full recomputation reruns the forward's two all-to-alls first, selective the first.
                    const TensorRegion& r = regions[static_cast<std::size_t>(l)];
                    run_down_to(l + 1);
                    if (t > 1) {
                        const bool again = again_layer && (r.ends || (sp && r.starts));
                        if (again && sp && r.starts) tensor(CollectiveKind::all_gather, layer, k, "recompute");
                        if (again && r.ends) tensor(reduce, layer, k, "recompute");
                        if (sp && r.ends) tensor(CollectiveKind::all_gather, layer, k, "all-gather before");
                    }
                    if (again_core) a2a(ulysses_in, layer, k, "recompute all-to-all to heads for");
                    if (again_layer) a2a(ulysses_out, layer, k, "recompute all-to-all to tokens after");
                    compute(kind, layer, layer, k, Compute::kTail);
                    a2a(ulysses_out, layer, k, "all-to-all to heads, gradient of");
                    compute(kind, layer, layer, k, Compute::kBody);
                    a2a(ulysses_in, layer, k, "all-to-all to tokens, gradients of");
                    compute(kind, layer, layer, k, Compute::kHead);
                    to = l - 1;
                    if (t > 1 && r.starts) tensor(reduce, layer, k, sp ? "reduce-scatter after" : "all-reduce after");
                    bucket_after(l);
                    continue;
                }
                if (routed(layer)) {  // the combine's gradient to the experts; recomputation reruns the forward's two
                    run_down_to(l + 1);
                    if (again_layer) {
                        expert(CollectiveKind::dispatch, layer, k, "recompute dispatch to");
                        expert(CollectiveKind::combine, layer, k, "recompute combine from");
                    }
                    expert(CollectiveKind::dispatch, layer, k, "combine's gradient to");
                }
                // The key/value blocks and their gradients around the ring beside the attention's backward (and the
                // blocks once more for its recomputation).
                std::optional<std::uint32_t> ring_id;
                if (ringed(layer)) {
                    run_down_to(l + 1);
                    ring_id = ring(layer, k, again_core ? 3.0 : 2.0, "key/value ring for");
                }
                auto ring_done = [&] {
                    if (!ring_id) return;
                    run_down_to(l);
                    prog.wait(*ring_id);
                    ring_id.reset();
                };
                if (t == 1) {
                    ring_done();
                    if (routed(layer)) {  // the dispatch's gradient back to the tokens' ranks
                        run_down_to(l);
                        expert(CollectiveKind::combine, layer, k, "dispatch's gradient from");
                    }
                    bucket_after(l);
                    continue;
                }
                const TensorRegion& r = regions[static_cast<std::size_t>(l)];
                // Before layer l's backward: full recomputation reruns its forward's collectives, and with sequence
                // parallelism the gradient of a region's closing reduce-scatter is an all-gather.
                const bool again = job.activation_checkpointing && recomputed[layer] && (r.ends || (sp && r.starts));
                if (overlapped(layer)) {
                    // tp_overlap: the output gradient's all-gather beside the row GEMMs' backward it feeds, the input
                    // gradient's reduce-scatter beside the column GEMMs' backward (TransformerEngine overlaps it with
                    // their weight gradient); recomputation's collectives wait as without it.
                    run_down_to(l + 1);
                    if (again && r.starts) tensor(CollectiveKind::all_gather, layer, k, "recompute");
                    if (again && r.ends) tensor(reduce, layer, k, "recompute");
                    std::uint8_t left = Compute::kWhole;
                    if (r.ends) {
                        const std::uint32_t id =
                            tensor_beside(CollectiveKind::all_gather, layer, k, "all-gather beside");
                        compute(kind, layer, layer, k, Compute::kTail);
                        prog.wait(id);
                        left &= static_cast<std::uint8_t>(~Compute::kTail);
                    }
                    if (r.starts) left &= static_cast<std::uint8_t>(~Compute::kHead);
                    compute(kind, layer, layer, k, left);
                    to = l - 1;
                    ring_done();
                    if (r.starts) {
                        const std::uint32_t id =
                            tensor_beside(CollectiveKind::reduce_scatter, layer, k, "reduce-scatter beside");
                        compute(kind, layer, layer, k, Compute::kHead);
                        prog.wait(id);
                    }
                    bucket_after(l);
                    continue;
                }
                if (again || (sp && r.ends)) {
                    run_down_to(l + 1);
                    if (again && sp && r.starts) tensor(CollectiveKind::all_gather, layer, k, "recompute");
                    if (again && r.ends) tensor(reduce, layer, k, "recompute");
                    if (sp && r.ends) tensor(CollectiveKind::all_gather, layer, k, "all-gather before");
                }
                ring_done();
                if (r.starts) {  // the column GEMM's input gradient, summed over the tensor ranks
                    run_down_to(l);
                    tensor(reduce, layer, k, sp ? "reduce-scatter after" : "all-reduce after");
                }
                if (routed(layer)) {
                    run_down_to(l);
                    expert(CollectiveKind::combine, layer, k, "dispatch's gradient from");
                }
                bucket_after(l);
            }
            run_down_to(st.first);
            if (vs > 0) prog.send_relative(prev, boundary(vs - 1), 2 * (k * V + vs - 1) + 1);
        };
        for (at_op = 0; at_op < order.size(); ++at_op) {
            const PipelineOp& op = order[at_op];
            switch (op.pass) {
                case Pass::forward: forward(op.micro_batch, op.chunk); break;
                case Pass::backward: backward(op.micro_batch, op.chunk, ComputeKind::backward); break;
                case Pass::input: backward(op.micro_batch, op.chunk, ComputeKind::backward_input); break;
                case Pass::weight: {  // no communication: the weights' gradients of the chunk's layers
                    const StageLayers st = stages[op.chunk * p + s];
                    compute(ComputeKind::backward_weight, st.first, st.last, op.micro_batch);
                    if (at_op == last_backward[op.chunk])  // zero bubble: the chunk's gradients are all there
                        for (const Bucket& b : buckets[op.chunk]) {
                            const std::uint32_t id = bucket_call(op.chunk, b, grad_kind);
                            prog.issue(id);
                            issued_buckets.push_back(id);
                        }
                    break;
                }
            }
        }
        // The stage's gradients (each tensor rank's share), reduced among its data and context ranks (the weights are
        // replicated over both): the buckets issued during the last backward, else all of them now. The experts'
        // gradients among the d / e ranks holding the same experts (Megatron's expert-data group), after the drain.
        const StageParams params = stage_params(job.workload, stage_chunks(stages, p, s));
        const double dense = e > 1 ? params.all - params.experts : params.all;
        for (const std::uint32_t id : issued_buckets) prog.wait(id);
        auto sync = [&](const char* name, CollectiveKind kind, GroupId g, double count) {
            if (g == kNone || count <= 0.0) return;
            const CommOp op = CommOp::of(kind, g, count * job.bytes_per_param);
            Call c;
            c.verb = "sync ";
            c.label = fmt::format("stage {} {} {} ({:.3g} MB)", s, name,
                                  kind == CollectiveKind::all_gather ? "parameters" : "gradients", op.bytes / 1e6);
            c.gradient = kind != CollectiveKind::all_gather;
            blocking_call(set, prog, planner, op, std::move(c), totals.wire, totals.machine, totals.collectives);
        };
        if (issued_buckets.empty()) sync("data", grad_kind, data_group, dense);
        const GroupId expert_group_data =
            e > 1 && d / e > 1 ? grad_group("expert data", t * e * cp, e * cp * t, d / e) : kNone;
        sync("expert data", grad_kind, expert_group_data, params.experts);
        Compute u;
        u.kind = ComputeKind::update;
        // The distributed optimizer updates each rank's 1/(d c) of the stage.
        u.fraction = (total_params > 0.0 ? params.all / total_params : 1.0 / p) / (dist_opt ? dc : 1);
        u.slowable = false;
        u.label = fmt::format("update stage {}", s);
        prog.compute(std::move(u));
        if (dist_opt) {  // the updated parameters back to every data rank (bf16 working copies)
            if (!gather_early) sync("data", CollectiveKind::all_gather, data_group, dense);
            sync("expert data", CollectiveKind::all_gather, expert_group_data, params.experts);
        }
        set.programs.push_back(std::move(prog));
        set.program_of.resize(job.workers);
        for (std::uint32_t r = 0; r < dc * t; ++r) {
            const std::uint32_t rank = rank_of(r / t / cp, r / t % cp, r % t);
            set.program_of[rank] = s;
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
