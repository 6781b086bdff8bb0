// The key tables of a model given by its shape: a transformer (models/workload.hpp TransformerConfig) and the
// layers of a custom model (models::Layer).
#include "scenarios/key_tables.hpp"

namespace ddlsim::scenario {

using keys::key;
using keys::KeyTable;

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
            key("ffn_hidden", &C::ffn_hidden, "MLP width (default: llama 2/3 of 4d rounded up to 256; gpt 4d)",
                {1, 1 << 20})
                .echo_when(positive(&C::ffn_hidden)),
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
