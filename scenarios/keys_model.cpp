// The key tables of the model: the model object (a built-in by name, a transformer by its shape, or custom
// layers), a transformer (models/workload.hpp TransformerConfig) and the layers of a custom model (models::Layer),
// with their readers.
#include <fmt/format.h>

#include <stdexcept>

#include "scenarios/key_tables.hpp"
#include "scenarios/loader_detail.hpp"
#include "scenarios/schema_tables.hpp"

namespace ddlsim::scenario {

using keys::key;
using keys::KeyTable;

namespace {

models::Layer read_layer(const json& j, const std::string& path) {
    ObjectReader r(j, path, tables().layer);
    models::Layer l;
    layer_keys().read(r, l);
    if (!l.parts.empty()) l.parts.front().flops = l.fwd_flops;
    r.finish();
    return l;
}

models::TransformerConfig read_transformer(const json& j, const std::string& path) {
    ObjectReader r(j, path, tables().transformer);
    models::TransformerConfig c;
    transformer_keys().read(r, c);
    if (const auto e = models::transformer_error(c)) throw ScenarioError(r.path(e->first), e->second);
    r.finish();
    return c;
}

models::Workload builtin_or_throw(const json& j, const std::string& path) {
    const std::string name = read_string(j, path);
    auto w = models::builtin_workload(name);
    if (!w)
        throw ScenarioError(
            path, fmt::format("expected a built-in model ({}), got \"{}\"{}", detail::list(tables().choices.models),
                              name, did_you_mean(name, tables().choices.models)));
    return *w;
}

// model.dtype: a gradient element type and its size in bytes (IEEE 754 binary32 and binary16; bfloat16 keeps
// binary32's 8 exponent bits in 16 bits).
struct Dtype {
    std::string name;
    double bytes;
};
const std::vector<Dtype>& dtypes() {
    static const std::vector<Dtype> table{{"fp32", 4.0}, {"fp16", 2.0}, {"bf16", 2.0}};
    return table;
}

}  // namespace

const std::vector<std::string>& dtype_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const Dtype& d : dtypes()) out.push_back(d.name);
        return out;
    }();
    return names;
}

const KeyTable<JobSpec>& model_keys() {
    using J = JobSpec;
    auto by_name = [](const J& s) { return !s.transformer && s.model_name != "custom"; };
    auto layered = [](const J& s) { return !s.transformer && s.model_name == "custom"; };
    static const KeyTable<J> t{
        "model",
        "a built-in model by name with options, or explicit layers",
        {
            keys::custom<J>(
                "name",
                enum_schema(models::builtin_workload_names(),
                            "built-in workload (exclusive with layers and transformer)"),
                [](J& s, const json& j, const std::string& path) {
                    s.workload = builtin_or_throw(j, path);
                    s.model_name = s.workload.name;
                },
                [](const J& s) { return json(s.model_name); })
                .echo_when(by_name),
            keys::custom<J>(
                "layers",
                {{"type", "array"},
                 {"items", ref_schema("layer", "a layer")},
                 {"description", "layers in forward order"}},
                [](J& s, const json& j, const std::string& path) {
                    const json& layers = read_array(j, path, 1);
                    s.workload.name = "custom";
                    s.workload.family = models::ModelFamily::custom;
                    s.workload.input = "sample";
                    for (std::size_t i = 0; i < layers.size(); ++i)
                        s.workload.layers.push_back(read_layer(layers[i], fmt::format("{}[{}]", path, i)));
                    s.model_name = "custom";
                },
                [](const J& s) {
                    json out = json::array();
                    for (const auto& l : s.workload.layers) out.push_back(layer_keys().echo(l));
                    return out;
                })
                .echo_when(layered),
            keys::custom<J>(
                "transformer",
                ref_schema("transformer", "a decoder-only transformer by its shape (Llama or GPT style)"),
                [](J& s, const json& j, const std::string& path) {
                    s.transformer = read_transformer(j, path);
                    try {  // read_transformer checked the shape; the builder's own checks are a backstop
                        s.workload = models::transformer(*s.transformer);
                    } catch (const std::invalid_argument& e) {
                        throw ScenarioError(path, e.what());
                    }
                    s.workload.name = "transformer";
                    s.model_name = "custom";
                },
                [](const J& s) { return s.transformer ? transformer_keys().echo(*s.transformer) : json(nullptr); }),
            keys::custom<J>(
                "seq_len",
                {{"type", "integer"},
                 {"minimum", 1},
                 {"description",
                  "with name: the sequence a built-in transformer trains on (default its own: BERT 128, GPT-2 1024, "
                  "GPT-3 2048, Llama 2 4096, Llama 3 8192; at most the learned position table: BERT 512, GPT-2 "
                  "1024, GPT-3 2048)"}},
                [](J& s, const json& j, const std::string& path) {
                    const std::int64_t max = models::builtin_max_seq_len(s.model_name);
                    if (max == 0)
                        throw ScenarioError(path, fmt::format("\"{}\" has no sequences; seq_len applies to the "
                                                              "built-in transformers (BERT, GPT-2, GPT-3, Llama)",
                                                              s.model_name));
                    s.seq_len = static_cast<std::int64_t>(
                        read_uint(j, path, 1, max > 0 ? static_cast<std::uint64_t>(max) : 1 << 20));
                    s.workload = *models::builtin_workload(s.model_name, s.seq_len);
                    s.workload.name = s.model_name;
                },
                [](const J& s) { return s.seq_len > 0 ? json(s.seq_len) : json(nullptr); })
                .when(keys::Rule<J>{by_name,
                                    [](const J& s) -> std::string {
                                        return s.transformer ? "is the transformer's own key here "
                                                               "(model.transformer.seq_len)"
                                                             : "applies to a built-in model by name (custom layers "
                                                               "carry their own FLOPs)";
                                    }}),
            keys::custom<J>(
                "dtype", enum_schema(dtype_names(), "gradient element type (default fp32: 4 bytes per parameter)"),
                [](J& s, const json& j, const std::string& path) {
                    s.dtype = read_choice(j, path, dtype_names());
                    for (const Dtype& d : dtypes())
                        if (d.name == s.dtype) s.bytes_per_param = d.bytes;
                },
                [](const J& s) { return json(s.dtype); })
                .with_default("fp32"),
        }};
    return t;
}

namespace detail {

void read_model(const json& j, const std::string& path, JobSpec& s) {
    if (j.is_string()) {
        s.workload = builtin_or_throw(j, path);
        s.model_name = s.workload.name;
        return;
    }
    ObjectReader r(j, path, tables().model);
    if ((r.has("name") ? 1 : 0) + (r.has("layers") ? 1 : 0) + (r.has("transformer") ? 1 : 0) != 1)
        throw ScenarioError(path, "expected exactly one of \"name\" (a built-in model), \"layers\" or \"transformer\"");
    model_keys().read(r, s);
    r.finish();
}

}  // namespace detail

const KeyTable<models::TransformerConfig>& transformer_keys() {
    using C = models::TransformerConfig;
    auto positive = [](std::int64_t C::*m) { return [m](const C& c) { return c.*m > 0; }; };
    static const KeyTable<C> t{
        "transformer",
        "a decoder-only transformer generated from its shape, with exact parameter counts and FLOPs "
        "(models/workload.hpp: Llama = RMSNorm, rotary positions, grouped-query attention, SwiGLU, untied head; "
        "GPT = GPT-2/GPT-3 blocks, tied head)",
        {
            key("style", &C::style, sim::enum_descriptions<models::TransformerStyle>()).with_default("llama"),
            key("layers", &C::layers, "transformer blocks", {1, 1024}).mandatory(),
            key("hidden", &C::hidden, "model width d", {1, 1 << 17}).mandatory(),
            key("heads", &C::heads, "attention heads (must divide hidden)", {1, 4096}).mandatory(),
            key("kv_heads", &C::kv_heads,
                "llama: key-value heads of grouped-query attention (must divide heads; default: heads)", {1, 4096})
                .when([](const C& c) { return c.style != models::TransformerStyle::gpt; },
                      "applies to style \"llama\" only (GPT blocks use multi-head attention)")
                .echo_when(positive(&C::kv_heads)),
            key("head_dim", &C::head_dim, "llama: each head's width (default hidden / heads)", {1, 1 << 14})
                .echo_when(positive(&C::head_dim)),
            key("ffn_hidden", &C::ffn_hidden,
                "MLP width of the dense blocks (default: llama 2/3 of 4d rounded up to 256; gpt 4d)", {1, 1 << 20})
                .echo_when(positive(&C::ffn_hidden)),
            key("experts", &C::experts,
                "llama: routed experts of each mixture-of-experts block (default: a dense model)", {1, 1 << 16})
                .echo_when(positive(&C::experts)),
            key("experts_per_token", &C::experts_per_token, "routed experts each token runs (top-k)", {1, 1 << 16})
                .echo_when(positive(&C::experts_per_token)),
            key("expert_ffn_hidden", &C::expert_ffn_hidden, "each expert's SwiGLU width (default ffn_hidden)",
                {1, 1 << 20})
                .echo_when(positive(&C::expert_ffn_hidden)),
            key("shared_experts", &C::shared_experts, "experts every token runs besides its routed ones (DeepSeek's)",
                {0, 1 << 10})
                .echo_when(positive(&C::shared_experts)),
            key("moe_layer_frequency", &C::moe_layer_frequency,
                "every this many blocks is a mixture-of-experts block (block i when i % frequency == 0)", {1, 1024})
                .echo_when([](const C& c) { return c.moe_layer_frequency != 1; }),
            key("first_dense_layers", &C::first_dense_layers, "blocks before the first mixture-of-experts block",
                {0, 1024})
                .echo_when(positive(&C::first_dense_layers)),
            key("capacity_factor", &C::capacity_factor,
                "tokens an expert takes at most, over the mean (default 0: dropless); caps expert_imbalance",
                {0.0, 1024.0})
                .echo_when([](const C& c) { return c.capacity_factor > 0.0; }),
            key("q_lora_rank", &C::q_lora_rank, "multi-head latent attention: the queries' latent (default: none)",
                {1, 1 << 16})
                .echo_when(positive(&C::q_lora_rank)),
            key("kv_lora_rank", &C::kv_lora_rank,
                "multi-head latent attention (DeepSeek's): the keys' and values' latent (default: none, grouped-query)",
                {1, 1 << 16})
                .echo_when(positive(&C::kv_lora_rank)),
            key("qk_rope_head_dim", &C::qk_rope_head_dim, "multi-head latent attention: each head's rotary part",
                {1, 1 << 14})
                .echo_when(positive(&C::qk_rope_head_dim)),
            key("v_head_dim", &C::v_head_dim, "multi-head latent attention: each head's value width (default head_dim)",
                {1, 1 << 14})
                .echo_when(positive(&C::v_head_dim)),
            key("attention", &C::attention, sim::enum_descriptions<models::AttentionKernel>()).with_default("flash"),
            key("seq_len", &C::seq_len, "tokens per sample (the sequence trained on)", {1, 1 << 20}).mandatory(),
            key("vocab", &C::vocab, "vocabulary size", {1, 1 << 22}).mandatory(),
        }};
    return t;
}

const KeyTable<models::Layer>& layer_keys() {
    using L = models::Layer;
    // A custom layer's one kernel, when it names its kind or its bytes (otherwise one matmul of fwd_flops).
    auto part = [](L& l) -> models::LayerPart& {
        if (l.parts.empty()) l.parts.push_back({});
        return l.parts.front();
    };
    static const KeyTable<L> t{
        "layer",
        "one layer of a custom model",
        {
            key("name", &L::name, "layer name").mandatory(),
            keys::custom<L>(
                "params", {{"type", "integer"}, {"minimum", 0}, {"description", "parameters (one gradient tensor)"}},
                [](L& l, const json& j, const std::string& path) {
                    l.tensors = {{l.name, static_cast<std::int64_t>(read_uint(j, path, 0, 10'000'000'000'000))}};
                },
                [](const L& l) { return json(l.params()); })
                .mandatory(),
            key("fwd_flops", &L::fwd_flops, "forward FLOPs per sample", {0, 1e18}),
            key("fwd_time", &L::fwd_time, "forward time per iteration, used exactly"),
            key("bwd_time", &L::bwd_time, "backward time per iteration, used exactly (default 2 x forward)"),
            key("update_time", &L::update_time, "update time per iteration, used exactly"),
            key("activation_bytes", &L::activation_bytes,
                "bytes of the layer's output per sample: what a pipeline stage ending at this layer sends to the next "
                "per sample, and the gradient it gets back (default: none sent)",
                {0, 1e15}),
            keys::custom<L>(
                "kind",
                enum_schema(models::part_kind_names(),
                            "what the layer computes: conv/matmul/attention at the tensor rate, the others at memory "
                            "bandwidth (default matmul)"),
                [part](L& l, const json& j, const std::string& path) {
                    part(l).kind = read_enum<models::PartKind>(j, path);
                },
                [](const L& l) {
                    return l.parts.empty() ? json(nullptr) : json(std::string(sim::enum_name(l.parts.front().kind)));
                }),
            keys::custom<L>(
                "fwd_bytes",
                {{"type", "number"},
                 {"minimum", 0},
                 {"description", "bytes the forward pass moves per sample (roofline memory term)"}},
                [part](L& l, const json& j, const std::string& path) {
                    part(l).bytes = read_number(j, path, 0.0, 1e18);
                },
                [](const L& l) { return l.parts.empty() ? json(nullptr) : json(l.parts.front().bytes); }),
        }};
    return t;
}

}  // namespace ddlsim::scenario
