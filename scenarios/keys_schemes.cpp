// The key tables of the survey's four dimensions as a job spells them: sync, overlap, sharding, stragglers,
// convergence (models/job.hpp holds the structs they fill).
#include <fmt/format.h>

#include <algorithm>

#include "scenarios/key_tables.hpp"

namespace ddlsim::scenario {
namespace {

using keys::key;
using keys::Key;
using keys::KeyTable;
using models::SyncKind;

// A sync key applies to the schemes whose descriptor lists it (models/sync_schemes.cpp).
keys::Rule<models::SyncSpec> scheme_takes(std::string name) {
    auto pred = [name](const models::SyncSpec& s) { return models::sync_scheme(s.kind).takes(name); };
    auto message = [name](const models::SyncSpec& s) {
        return fmt::format("applies to kind {} only, not \"{}\"",
                           models::sync_kinds_where([&](const models::SyncSchemeInfo& i) { return i.takes(name); }),
                           sim::enum_name(s.kind));
    };
    return {pred, message};
}

// A sync key is required by the schemes whose descriptor marks it '*'.
bool scheme_requires(const models::SyncSpec& s, std::string_view name) {
    return models::sync_scheme(s.kind).requires_key(name);
}
std::string required_by(std::string_view name) {
    return "required for kind " +
           models::sync_kinds_where([&](const models::SyncSchemeInfo& i) { return i.requires_key(name); });
}

}  // namespace

const KeyTable<models::SyncSpec>& sync_keys() {
    using S = models::SyncSpec;
    static const KeyTable<S> t{
        "sync",
        "synchronisation scheme",
        {
            key("kind", &S::kind,
                "bsp: a barrier per iteration; ssp: bounded staleness; asp: fully asynchronous (ps; with gossip: "
                "AD-PSGD); local_sgd: average every `period` steps; fedavg: sampled clients, local steps, server "
                "averaging; diloco: islands run BSP inside and an outer Nesterov step across every `period` steps")
                .mandatory(),
            key("staleness", &S::staleness, "ssp (required): how many iterations a worker may run ahead of the slowest",
                {0, 1e6})
                .when(scheme_takes("staleness"))
                .required_when([](const S& s) { return scheme_requires(s, "staleness"); }, required_by("staleness")),
            key("period", &S::period,
                "local_sgd, diloco (required): local steps H between model averagings (diloco: between outer steps)",
                {1, 1e6})
                .when(scheme_takes("period"))
                .required_when([](const S& s) { return scheme_requires(s, "period"); }, required_by("period")),
            // Its divisibility by the job's workers is checked by read_sync.
            key("islands", &S::islands,
                "diloco (required): groups of workers / islands consecutive workers (in placement order, so a site's "
                "nodes form its islands) that train by BSP inside themselves; must divide the workers",
                {1, 1e6})
                .when(scheme_takes("islands"))
                .required_when([](const S& s) { return scheme_requires(s, "islands"); }, required_by("islands")),
            key("fragments", &S::fragments,
                "diloco: parts of the model (consecutive layers of about equal size) whose outer steps run in turn, "
                "one every period / fragments steps (Streaming DiLoCo; default 1: the whole model every period)",
                {1, 1e6})
                .when(scheme_takes("fragments"))
                .with_default(1),
            key("overlap_steps", &S::overlap_steps,
                "diloco: inner steps that run while a fragment's outer all-reduce travels; its outer step is applied "
                "before the step after them (Streaming DiLoCo's tau; default 0: the islands wait for it)",
                {0, 1e6})
                .when(scheme_takes("overlap_steps"))
                .with_default(0),
            key("outer_bits", &S::outer_bits,
                "diloco: bits per value of the outer gradients as they cross the islands (Streaming DiLoCo sends 4-bit "
                "floats and sums in FP32; default: the gradients' width); the all-gather inside an island keeps it",
                {1, 32})
                .when(scheme_takes("outer_bits"))
                .echo_when([](const S& s) { return s.outer_bits > 0.0; }),
            // Its bound and its default are the job's workers (read_sync).
            key("clients_per_round", &S::clients_per_round, "fedavg: clients sampled per round (default: all workers)",
                {1, 1e6})
                .when(scheme_takes("clients_per_round")),
            key("local_steps", &S::local_steps, "fedavg: local steps E each client runs per round (default 1)",
                {1, 1e6})
                .when(scheme_takes("local_steps"))
                .with_default(1),
            key("availability", &S::availability,
                "fedavg: probability that a client is available in a round (default 1)", {0, 1, true})
                .when(scheme_takes("availability"))
                .with_default(1.0),
        }};
    return t;
}

const KeyTable<models::OverlapSpec>& overlap_keys() {
    using O = models::OverlapSpec;
    auto buffer = [](const O& o) { return o.fusion == models::Fusion::buffer; };
    auto priority = [](const O& o) { return o.priority; };
    static const KeyTable<O> t{
        "overlap",
        "compute/communication overlap",
        {
            key("wfbp", &O::wfbp,
                "wait-free backprop: a layer's gradient (or a full bucket) leaves as soon as backward produced it "
                "(default: true with fusion, mgwfbp or priority, else false; false with fusion \"buffer\" sends the "
                "buckets when backward ends)"),
            key("fusion", &O::fusion,
                "none (default), buffer (DDP buckets / Horovod fusion buffer) or mgwfbp (MG-WFBP merging; implies "
                "wfbp)")
                .with_default("none"),
            key("priority", &O::priority,
                "P3 / ByteScheduler: partitions sent front layers first, next forward starts per layer (implies "
                "wfbp; default false)")
                .with_default(false),
            key("bucket_size", &O::bucket_size,
                "buffer: bucket / fusion threshold (default 25MiB, PyTorch DDP's bucket_cap_mb)", {1})
                .when(buffer, "applies to fusion \"buffer\" only")
                .with_default("25MiB"),
            key("cycle_time", &O::cycle_time,
                "buffer: Horovod cycle time; tensors ready within one cycle are fused (default 0: static DDP "
                "buckets)")
                .when(buffer, "applies to fusion \"buffer\" only")
                .with_default("0s"),
            key("partition_size", &O::partition_size, "priority: partition size (default 4MB)", {1})
                .when(priority, "applies with \"priority\": true only")
                .with_default("4MB"),
            key("credit", &O::credit, "priority: partitions in flight at once, ByteScheduler's credit (default 4)",
                {1, 1e6})
                .when(priority, "applies with \"priority\": true only")
                .with_default(4),
            key("compute_slowdown", &O::compute_slowdown,
                "fraction by which compute slows while this worker's communication runs beside it (default 0.189, "
                "Lee et al. arXiv 2507.03114; 0 with transport \"ideal\")",
                {0, 10}),
        }};
    return t;
}

const KeyTable<models::ParallelismSpec>& parallelism_keys() {
    using P = models::ParallelismSpec;
    static const KeyTable<P> t{
        "parallelism",
        "model parallelism around data parallelism (bsp, architecture allreduce)",
        {
            key("tensor", &P::tensor,
                "tensor-parallel ranks: each transformer block's attention and MLP GEMMs split over this many "
                "consecutive ranks (Megatron-LM's column and row split), the embedding and the head by vocabulary; "
                "2 all-reduces of the b x s x h activations per block in forward and 2 in backward (default 1: none; "
                "must divide workers / pipeline, the heads and the key/value heads)",
                {1, 1024})
                .with_default(1),
            key("sequence_parallel", &P::sequence_parallel,
                "Megatron's sequence parallelism: the norms, dropout and residual adds on 1/tensor of the sequence, "
                "each all-reduce a reduce-scatter and an all-gather of the same bytes (default false)")
                .when([](const P& p) { return p.tensor > 1; }, "applies to tensor > 1 only")
                .with_default(false),
            key("tp_overlap", &P::tensor_overlap,
                "tensor-parallel communication overlapped with the GEMMs that produce and consume it "
                "(TransformerEngine's userbuffers, Megatron's --tp-comm-overlap, torchtitan's async TP): each "
                "all-gather runs beside the column GEMM it feeds, each reduce-scatter beside the row GEMM that "
                "produces it, those GEMMs slowed by overlap.compute_slowdown meanwhile (default false; needs "
                "sequence_parallel, as Megatron does)")
                .when([](const P& p) { return p.tensor > 1 && p.sequence_parallel; },
                      "applies to tensor > 1 with sequence_parallel only (Megatron asserts it)")
                .with_default(false),
            key("pipeline", &P::pipeline,
                "pipeline stages: the model's transformer blocks (or layers) split evenly into this many stages, "
                "the embedding on the first and the head on the last, each stage's workers / (pipeline x tensor) "
                "model replicas a data-parallel group; micro-batches are gradient_accumulation, activations and their "
                "gradients "
                "point-to-point flows between stages (default 1: none; must divide workers)",
                {1, 1024})
                .with_default(1),
            key("first_stage_layers", &P::first_stage_layers,
                "transformer blocks on the first pipeline stage, which also holds the embedding (Megatron's "
                "decoder_first_pipeline_num_layers; Llama 3 405B ran one block fewer on its first and last stages); "
                "the other stages share the rest evenly (default: as many as every stage)",
                {1, 100000})
                .when([](const P& p) { return p.pipeline > 1; }, "applies to pipeline > 1 only")
                .echo_when([](const P& p) { return p.first_stage_layers.has_value(); }),
            key("last_stage_layers", &P::last_stage_layers,
                "transformer blocks on the last pipeline stage, which also holds the final norm and the head "
                "(Megatron's decoder_last_pipeline_num_layers; default: as many as every stage)",
                {1, 100000})
                .when([](const P& p) { return p.pipeline > 1; }, "applies to pipeline > 1 only")
                .echo_when([](const P& p) { return p.last_stage_layers.has_value(); }),
            key("schedule", &P::schedule,
                "the order of each stage's forward and backward passes: 1f1b (default, Megatron's), gpipe, zero_bubble "
                "(ZB-H1), or "
                "interleaved_1f1b (with virtual_stages)")
                .when([](const P& p) { return p.pipeline > 1; }, "applies to pipeline > 1 only")
                .with_default("1f1b"),
            key("virtual_stages", &P::virtual_stages,
                "interleaved_1f1b: model chunks per stage (Megatron's virtual pipeline size); stage s holds virtual "
                "stages s, s + pipeline, ...; the transformer blocks must divide by pipeline x virtual_stages and "
                "gradient_accumulation by pipeline (required with interleaved_1f1b)",
                {2, 1024})
                .when([](const P& p) { return p.schedule == models::PipelineSchedule::interleaved_1f1b; },
                      "applies to schedule \"interleaved_1f1b\" only")
                .echo_when([](const P& p) { return p.virtual_stages.has_value(); }),
            key("context", &P::context,
                "context-parallel ranks: each sequence split over this many ranks (ring attention, Megatron's p2p "
                "context parallelism): every kernel on s / context tokens, each attention layer passing the key/value "
                "blocks around the ring beside its attention (backward: the blocks and their gradients); the weights' "
                "gradients all-reduced over data x context ranks (default 1: none; must divide workers / (pipeline x "
                "tensor), and 2 x context the sequence)",
                {1, 1024})
                .with_default(1),
            key("context_algorithm", &P::context_algorithm,
                "how the context ranks exchange what attention needs: ring (default; ring attention, the key/value "
                "blocks around the ring beside attention) or all_to_all (DeepSpeed-Ulysses: queries, keys and values "
                "all-to-all'd from a split sequence to split heads before attention and the output back after it, "
                "forward and backward; heads and key/value heads must divide by tensor x context)")
                .when([](const P& p) { return p.context > 1; }, "applies to context > 1 only")
                .with_default("ring"),
            key("expert", &P::expert,
                "expert-parallel ranks: each mixture-of-experts block's routed experts split over this many "
                "consecutive data-parallel ranks, tokens dispatched to them and combined back by all-to-alls (2 in "
                "forward, 2 in backward); the experts' gradients sync over data / expert ranks (default 1: none; must "
                "divide the data-parallel ranks and the model's experts)",
                {1, 65536})
                .with_default(1),
            key("order", &P::order,
                "how the ranks sit on the workers (so which traffic crosses which links): the dimensions from the "
                "fastest-varying out, Megatron's rank order; \"tp\", \"cp\", \"dp\", \"pp\" once each and "
                "\"ep\" optionally just before \"dp\" (default \"tp-cp-ep-dp-pp\", Megatron's: each tensor group on "
                "consecutive workers, each stage on a block; Llama 3 ran \"tp-cp-pp-dp\", each model replica on a "
                "block)")
                .when([](const P& p) { return p.any(); },
                      "applies with model parallelism only (tensor, pipeline, context or expert > 1)")
                .and_then([](P& p, const std::string& path) {
                    try {
                        (void)p.order_dims();
                    } catch (const std::invalid_argument& e) {
                        throw ScenarioError(path, e.what());
                    }
                })
                .with_default("tp-cp-ep-dp-pp"),
            key("overlap_param_gather", &P::overlap_param_gather,
                "Megatron's --overlap-param-gather: with the distributed optimizer (sharding stage 1) and overlapped "
                "gradient buckets (overlap wfbp with fusion \"buffer\"), each bucket's updated parameters are "
                "all-gathered beside the next step's forward, which waits for a bucket only at its first layer "
                "(default false: the all-gathers run after the update)")
                .when([](const P& p) { return p.any(); },
                      "applies with model parallelism only (tensor, pipeline, context or expert > 1)")
                .with_default(false),
            key("expert_imbalance", &P::expert_imbalance,
                "the busiest expert's tokens over the mean (default 1: balanced routing; at most experts / "
                "experts_per_token): its rank runs more expert work and receives more tokens (an uneven all-to-all), "
                "and its group waits for it",
                {1.0, 65536.0})
                .when([](const P& p) { return p.expert > 1; }, "applies to expert > 1 only")
                .with_default(1.0),
        }};
    return t;
}

const KeyTable<models::ShardingSpec>& sharding_keys() {
    using H = models::ShardingSpec;
    auto stage3 = [](const H& h) { return h.stage >= 3; };
    auto zero_pp = [](const H& h) { return h.stage >= 3 && h.group == models::ShardGroup::all; };
    const char* zero_pp_message =
        "applies to stage 3 over every worker (group \"all\") only: ZeRO++ compresses ZeRO-3's collectives";
    static const KeyTable<H> t{
        "sharding",
        "sharded data parallelism (bsp, architecture allreduce, no compression)",
        {
            key("stage", &H::stage,
                "1: optimizer state sharded (ZeRO-1); 2: gradients too (ZeRO-2); 3: parameters too (ZeRO-3, FSDP "
                "FULL_SHARD). Stages 1 and 2 reduce-scatter the gradients, update the local shard and all-gather "
                "the parameters; stage 3 all-gathers each unit before its forward and its backward and "
                "reduce-scatters its gradients after",
                {1, 3})
                .mandatory(),
            key("group", &H::group,
                "all (default): shard over every worker; node: shard inside each node and all-reduce the shards "
                "across nodes (hybrid sharding)")
                .with_default("all"),
            key("prefetch", &H::prefetch,
                "stage 3: units whose all-gathers are issued ahead of the unit computing (default 1, FSDP's "
                "forward and backward prefetch; 0: none)",
                {0, 1024})
                .when(stage3, "applies to stage 3 only (stages 1 and 2 gather the whole model after the update)")
                .with_default(1),
            // At most the model's layers (read_sharding).
            key("wrap", &H::wrap,
                "stage 3: transformer blocks per unit (layers, for layers outside blocks and models without them), "
                "each all-gathered and reduce-scattered as one (default 1: every block, FSDP's transformer "
                "wrapping)",
                {1, 1e6})
                .when(stage3, "applies to stage 3 only (stages 1 and 2 follow the overlap's buckets)")
                .with_default(1),
            // ZeRO++ (Wang et al., arXiv 2306.10209, 2023), as DeepSpeed implements it
            // (deepspeed/runtime/zero/partition_parameters.py and runtime/comm/coalesced_collectives.py of
            // microsoft/DeepSpeed at 38327e07f6cd39b63418f60cedd1651b0be3e7c3).
            key("quantized_weights", &H::quantized_weights,
                "ZeRO++ qwZ (DeepSpeed zero_quantized_weights): each unit's weights are quantized to int8 in blocks "
                "of at most 8,000 elements with one fp32 scale each (CUDAQuantizer) before every all-gather and "
                "dequantized after it; the kernels run on the gathering GPU (default false)")
                .when(zero_pp, zero_pp_message)
                .with_default(false),
            key("hpz_partition_size", &H::hpz_partition_size,
                "ZeRO++ hpZ (DeepSpeed zero_hpz_partition_size): after its forward all-gather each GPU keeps a "
                "secondary 1/h shard of the unit's weights, so that backward all-gathers among h consecutive GPUs "
                "(normally a node's) instead of all workers; the secondary copy counts in memory (default 1: off; "
                "must divide the workers)",
                {1, 1e6})
                .when(zero_pp, zero_pp_message)
                .with_default(1),
            key("quantized_gradients", &H::quantized_gradients,
                "ZeRO++ qgZ (DeepSpeed zero_quantized_gradients): each unit's gradients are reduced by a "
                "hierarchical all-to-all instead of a ring reduce-scatter: int4 inside each node, the node's "
                "partial sums requantized to int4 between nodes (rank j of every node), with their quantize, "
                "reduce and dequantize kernels; needs the same number of workers on every node (default false)")
                .when(zero_pp, zero_pp_message)
                .with_default(false),
        }};
    return t;
}

const KeyTable<models::StragglerSpec>& straggler_keys() {
    using G = models::StragglerSpec;
    using D = models::StragglerDistribution;
    // A distribution's own keys; with no distribution at all, every one of them.
    auto of = [](D d) {
        auto pred = [d](const G& g) { return g.distribution == d; };
        auto message = [d](const G& g) {
            if (g.distribution == D::none) return std::string("applies with a \"distribution\" only");
            return fmt::format("applies to kind \"{}\" only, not \"{}\"", sim::enum_name(d),
                               sim::enum_name(g.distribution));
        };
        return keys::Rule<G>{pred, message};
    };
    auto any = [](const G& g) { return g.distribution != D::none; };
    static const KeyTable<G> t{
        "stragglers",
        "per-worker compute slowdowns; fixed factors and a seeded per-iteration distribution compose",
        {
            // Keyed by worker index, bounded by the job's workers (read_stragglers reads it).
            keys::custom<G>(
                "fixed",
                {{"type", "object"},
                 {"additionalProperties", {{"type", "number"}, {"exclusiveMinimum", 0}}},
                 {"description", "worker index (as a string) -> compute slowdown factor, e.g. {\"0\": 2.0}"}},
                nullptr,
                [](const G& g) {
                    if (g.fixed.empty()) return json(nullptr);
                    json out = json::object();
                    for (const auto& [w, f] : g.fixed) out[std::to_string(w)] = f;
                    return out;
                }),
            key("distribution", &G::distribution,
                "lognormal (slowdown factor exp(sigma |Z|)), exponential (added delay of mean `mean_delay`) or "
                "periodic (one iteration in `every` slower by `slowdown`)")
                .echo_when(any),
            key("sigma", &G::sigma, "lognormal: sigma (default 0.5)", {0, 10}).when(of(D::lognormal)).with_default(0.5),
            key("mean_delay", &G::mean_delay, "exponential: mean added delay per iteration")
                .when(of(D::exponential))
                .required_when(keys::is(&G::distribution, D::exponential), "required for distribution \"exponential\""),
            key("every", &G::every, "periodic: one iteration in this many is slow (default 10)", {1, 1e6})
                .when(of(D::periodic))
                .with_default(10),
            key("slowdown", &G::slowdown, "periodic: the slow factor (default 2)", {0, 1e6, true})
                .when(of(D::periodic))
                .with_default(2.0),
            // Worker indices, bounded by the job's workers (read_stragglers reads it).
            keys::custom<G>("workers",
                            {{"type", "array"},
                             {"items", {{"type", "integer"}, {"minimum", 0}}},
                             {"description", "the workers the distribution applies to (default: all)"}},
                            nullptr, [](const G& g) { return g.workers.empty() ? json(nullptr) : json(g.workers); })
                .when(any, "applies with a \"distribution\" only"),
        }};
    return t;
}

const std::vector<std::string>& convergence_tasks() {
    static const std::vector<std::string> tasks{"fashion_mnist_mlp", "fashion_mnist_cnn", "synthetic_mlp"};
    return tasks;
}

const KeyTable<ConvergenceSpec>& convergence_keys() {
    using V = ConvergenceSpec;
    static const KeyTable<V> t{
        "convergence",
        "time to accuracy: the simulated update schedule replayed on a real proxy model (docs/CONTRACT.md §6)",
        {
            keys::choice<V>("task", &V::task, convergence_tasks(),
                            "proxy task: Fashion-MNIST MLP (default) or CNN (Debian's dataset-fashion-mnist), or a "
                            "synthetic MLP task that needs no data")
                .with_default("fashion_mnist_mlp"),
            key("target_accuracy", &V::target_accuracy, "test accuracy to reach (default 0.8)", {0, 1, true})
                .with_default(0.8),
            key("max_iterations", &V::max_iterations, "iterations simulated and replayed (overrides `iterations`)",
                {1, 1e6})
                .echo_when([](const V& v) { return v.max_iterations > 0; }),
            key("learning_rate", &V::learning_rate, "proxy SGD learning rate (default 0.05)", {0, 100, true})
                .with_default(0.05),
            key("batch_size", &V::batch_size,
                "proxy samples per worker per step (default 32; with gradient_accumulation A, per micro-batch: a "
                "step's gradient is over A × batch_size)",
                {1, 60'000})
                .with_default(32),
            key("eval_every", &V::eval_every, "evaluate every this many iterations (default 10)", {1, 1e6})
                .with_default(10),
            key("test_samples", &V::test_samples, "held-out samples accuracy is measured on (default 2000)",
                {1, 10'000})
                .with_default(2000),
            key("train_samples", &V::train_samples, "training samples used (default 0: all)", {0, 60'000})
                .with_default(0),
        }};
    return t;
}

}  // namespace ddlsim::scenario
