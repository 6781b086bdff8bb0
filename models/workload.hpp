// A training workload as frameworks see it: layers in forward order, each with
// its parameter tensors (one gradient tensor per parameter tensor) and its
// forward FLOPs per sample. Built-in workloads are derived from the published
// architectures in catalog.cpp; custom ones come from the scenario.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/enum_info.hpp"
#include "sim/units.hpp"

namespace ddlsim::models {

/// One parameter tensor (and so one gradient tensor), with its matrix view when known: a weight of `rows` x `cols`
/// (rows * cols == params; a convolution's out_channels x in_channels * kh * kw, a dense layer's out x in), a vector
/// (bias, norm scale) rows = params and cols = 1, and 0 x 0 when unknown (see models::tensor_shape).
struct Tensor {
    std::string name;
    std::int64_t params = 0;
    std::int64_t rows = 0;
    std::int64_t cols = 0;
    /// Tensor parallelism keeps it whole on every tensor rank (MLA's down-projections, an MoE router).
    bool replicated = false;
    /// A routed experts' weight (all the layer's experts in one tensor, as GPT-OSS's and Qwen3-MoE's grouped
    /// `experts.*` parameters): expert parallelism splits it, and its gradients sync over the expert-data group.
    bool expert = false;
};

/// What a piece of a layer computes; decides whether it runs at a tensor-core rate or at memory bandwidth.
enum class PartKind { matmul, conv, attention, norm, elementwise, embedding, pooling };

inline constexpr sim::EnumEntry<PartKind> k_part_kinds[]{
    {PartKind::matmul, "matmul", "dense matrix products at the tensor rate"},
    {PartKind::conv, "conv", "convolutions at the tensor rate (Winograd for 3x3 stride 1 on CUDA cores)"},
    {PartKind::attention, "attention", "attention scores and context at the tensor rate"},
    {PartKind::norm, "norm", "normalisation at memory bandwidth"},
    {PartKind::elementwise, "elementwise", "activations and additions at memory bandwidth"},
    {PartKind::embedding, "embedding", "table look-ups at memory bandwidth"},
    {PartKind::pooling, "pooling", "pooling at memory bandwidth"}};
constexpr std::span<const sim::EnumEntry<PartKind>> enum_entries(PartKind) {
    return k_part_kinds;
}

/// The scenario spelling of `k` ("matmul", "conv", ...), and all of them in table order.
[[nodiscard]] std::string_view part_kind_name(PartKind k);
[[nodiscard]] const std::vector<std::string>& part_kind_names();

/// The geometry of a 2-D convolution part, for the choice of algorithm (models/compute.cpp: Winograd applies to
/// 3 x 3 stride-1 convolutions); all 0 when the part is not a convolution or its shape is unknown.
struct ConvGeometry {
    int kernel_h = 0;
    int kernel_w = 0;
    int stride = 0;
    double in_channels = 0.0;
    double out_h = 0.0;  ///< output height and width (per sample)
    double out_w = 0.0;
};

/// One kernel-sized piece of a layer, per sample, forward pass. matmul/conv/attention parts are GEMMs (FLOPs at
/// the tensor rate, bounded below by their own memory traffic); the others only move memory.
struct LayerPart {
    PartKind kind = PartKind::matmul;
    double flops = 0.0;        ///< forward FLOPs per sample (2 x MACs)
    double activations = 0.0;  ///< activation elements read + written per sample
    double weights = 0.0;      ///< weight elements read once per pass (not per sample)
    bool bias = false;   ///< a GEMM that adds a bias vector (nn.Linear, a biased Conv2d): its gradient is a reduction
    double bytes = 0.0;  ///< bytes per sample given as such (custom layers' fwd_bytes), any precision
    /// Memory-bound parts of the built-in models: elements of the tensor it streams per sample (activations is
    /// passes x elements); a fused chain saves a write and a read of it per boundary. 0: unknown.
    double elements = 0.0;
    bool fp32_under_amp = false;  ///< autocast runs it in FP32 (layer_norm, softmax: 4-byte elements)
    // The GEMM's output shape for wave quantization: (rows_per_sample x batch) x cols, `gemms_per_sample` of them
    // (attention heads); 0 when unknown.
    double rows_per_sample = 0.0;
    double cols = 0.0;
    double gemms_per_sample = 0.0;
    /// A GEMM tensor parallelism runs whole on every tensor rank, outside its regions (Tensor::replicated).
    bool replicated = false;
    /// Attention's core between the projections: Q K^T, the passes over the scores, softmax, the weighted values (or
    /// the fused FlashAttention kernel): what selective recomputation reruns in backward (Korthikanti et al., arXiv
    /// 2205.05198, §5).
    bool attention_core = false;
    /// Of `activations`, the elements of the s x s attention scores it reads or writes per sample: what selective
    /// recomputation does not keep (the 5 a s / h term of Korthikanti et al.'s 34 + 5 a s / h bytes per s b h).
    double scores = 0.0;
    /// A language model's output layer: under FP8 it stays in BF16, as Megatron-Core builds it from its own
    /// ColumnParallelLinear, not a Transformer Engine module (models/device.cpp).
    bool bf16_under_fp8 = false;
    ConvGeometry conv{};  ///< convolutions of the built-in CNNs; output channels are `cols`
};

/// One layer: its tensors, its forward FLOPs per sample, and optional exact times.
struct Layer {
    std::string name;
    std::vector<Tensor> tensors;
    double fwd_flops = 0.0;             ///< forward FLOPs per sample (2 x MACs)
    std::optional<sim::Time> fwd_time;  ///< per iteration (whole local batch), used exactly when set
    std::optional<sim::Time> bwd_time;
    std::optional<sim::Time> update_time;
    /// The kernels it runs (built-in models); empty means one matmul part of fwd_flops (custom layers), or
    /// one part of `kind` when a custom layer names it. Part FLOPs sum to fwd_flops.
    std::vector<LayerPart> parts;
    /// The transformer block it belongs to (built-in transformers), -1 for none: the unit FSDP wraps.
    std::int32_t block = -1;
    /// Bytes of its output per sample, given as such (custom layers): what a pipeline stage ending at it sends
    /// forward, and its gradient backward (else the output shape of its last GEMM; models/program/pipeline.hpp).
    std::optional<double> activation_bytes = std::nullopt;
    /// The routed experts of a mixture-of-experts block (built-in transformers): the work on the tokens dispatched
    /// to them. Expert parallelism sends the tokens to it and its output back with an all-to-all over the expert
    /// group (models/expert_parallel.hpp).
    bool routed_experts = false;

    [[nodiscard]] std::int64_t params() const;
};

/// The optimizer family a model usually trains with, which sets the default optimizer (models/compute.hpp).
enum class ModelFamily { cnn, transformer, custom };

/// A model: its layers in forward order.
struct Workload {
    std::string name;
    std::string input;  ///< what one sample is, e.g. "224x224 RGB image"
    std::vector<Layer> layers;
    ModelFamily family = ModelFamily::custom;
    /// Sequence models: tokens in one sample (the sequence length); 0 for other models.
    std::int64_t tokens_per_sample = 0;
    /// Sequence models: training FLOPs per token as model-FLOPs utilisation counts them, 6N + 12 L d s (PaLM,
    /// Chowdhery et al. 2022, Appendix B: N the parameters of the matmuls, L layers, d the hidden size, s the
    /// sequence length; the attention term counts the scores and the weighted values); 0 when unknown.
    double model_flops_per_token = 0.0;
    /// Built-in transformers: the hidden size, the attention heads and the key/value heads (grouped-query attention)
    /// that tensor parallelism splits (models/tensor_parallel.hpp); 0 for other models.
    std::int64_t hidden = 0, heads = 0, kv_heads = 0;
    /// Built-in transformers: the width of the keys (and of the values) over the key/value heads, what context
    /// parallelism's ring passes on (MLA: the mean of the expanded keys' and values' widths over the heads); 0 for
    /// other models.
    std::int64_t kv_dim = 0;
    /// Mixture-of-experts transformers: routed experts per MoE block, the experts each token goes to (top-k), and the
    /// capacity factor (0: dropless); 0 for dense models.
    std::int64_t experts = 0, experts_per_token = 0;
    double capacity_factor = 0.0;

    [[nodiscard]] std::int64_t params() const;
    [[nodiscard]] std::size_t tensor_count() const;
    [[nodiscard]] double fwd_flops() const;  ///< per sample, all layers
    [[nodiscard]] bool has_blocks() const;   ///< some layer belongs to a transformer block
};

/// A decoder-only transformer by its shape (`"model": {"transformer": {...}}` and the Llama / GPT-3 catalog
/// entries). Two styles:
///   llama  HuggingFace LlamaForCausalLM (models/llama/modeling_llama.py): RMSNorm before attention and MLP,
///          rotary positions, grouped-query attention (kv_heads), SwiGLU MLP gate/up/down of ffn_hidden, no biases,
///          an untied LM head (Touvron et al. 2023, arXiv 2302.13971 and 2307.09288; Llama 3, arXiv 2407.21783)
///   gpt    GPT-2/GPT-3 blocks (Radford et al. 2019; Brown et al. 2020, arXiv 2005.14165 Table 2.1): LayerNorm
///          with bias, learned positions over seq_len, 4d GELU MLP, biases everywhere, the LM head tied to wte
enum class TransformerStyle { llama, gpt };
inline constexpr sim::EnumEntry<TransformerStyle> k_transformer_styles[]{
    {TransformerStyle::llama, "llama", "Llama blocks: RMSNorm, rotary positions, grouped-query attention, SwiGLU"},
    {TransformerStyle::gpt, "gpt", "GPT-2/GPT-3 blocks: LayerNorm, learned positions, GELU MLP, tied head"}};
constexpr std::span<const sim::EnumEntry<TransformerStyle>> enum_entries(TransformerStyle) {
    return k_transformer_styles;
}

/// How attention runs between the projections.
///   flash  one fused kernel per layer (FlashAttention, Dao et al., NeurIPS 2022; PyTorch's
///   scaled_dot_product_attention
///          picks it for fp16/bf16 on sm80+ since PyTorch 2.0): reads Q, K, V and writes the output, the score
///          matrix never reaches memory, and only the output is kept for backward. Its FLOPs are counted in full
///          (causal block skipping and the backward's recomputation of the scores are not modelled)
///   eager  the HuggingFace reference code: scores, scaling and masking, softmax and the weighted sum as separate
///          kernels over the full seq x seq score matrix, kept for backward
enum class AttentionKernel { flash, eager };
inline constexpr sim::EnumEntry<AttentionKernel> k_attention_kernels[]{
    {AttentionKernel::flash, "flash", "one fused kernel (FlashAttention / PyTorch SDPA): no score matrix in memory"},
    {AttentionKernel::eager, "eager", "separate kernels over the full score matrix (HuggingFace eager attention)"}};
constexpr std::span<const sim::EnumEntry<AttentionKernel>> enum_entries(AttentionKernel) {
    return k_attention_kernels;
}

/// Mixture-of-experts blocks (llama style; Shazeer et al. 2017, Fedus et al. 2021; Mixtral, arXiv 2401.04088;
/// DeepSeek-V3, arXiv 2412.19437 §2.1.2): each MoE block's MLP is a router (a d x experts GEMM, top-k), `experts`
/// SwiGLU experts of width `expert_ffn_hidden` of which each token runs `experts_per_token`, and `shared_experts`
/// that every token runs; `moe_layer_frequency` 1 makes every block after the `first_dense_layers` an MoE block.
/// Multi-head latent attention (MLA, DeepSeek-V2 arXiv 2405.04434 §2.1, as DeepSeek-V3's modeling_deepseek.py):
/// when `kv_lora_rank` > 0, keys and values come from a kv_lora_rank latent (plus a shared rotary key of
/// qk_rope_head_dim), queries from a q_lora_rank latent (0: directly), each head's query and key of head_dim +
/// qk_rope_head_dim and its value of v_head_dim.
struct TransformerConfig {
    using Style = TransformerStyle;
    Style style = Style::llama;
    AttentionKernel attention = AttentionKernel::flash;
    int layers = 0;
    std::int64_t hidden = 0;
    std::int64_t heads = 0;
    std::int64_t kv_heads = 0;    ///< 0: heads (multi-head attention)
    std::int64_t head_dim = 0;    ///< 0: hidden / heads (Qwen3 and GPT-OSS set their own)
    std::int64_t ffn_hidden = 0;  ///< 0: llama 2/3 of 4d rounded up to a multiple of 256; gpt 4d
    std::int64_t seq_len = 0;
    std::int64_t vocab = 0;
    // Mixture of experts (llama style): 0 experts is a dense model.
    std::int64_t experts = 0;
    std::int64_t experts_per_token = 0;
    std::int64_t expert_ffn_hidden = 0;  ///< 0: ffn_hidden
    std::int64_t shared_experts = 0;
    std::int64_t moe_layer_frequency = 1;
    std::int64_t first_dense_layers = 0;
    double capacity_factor = 0.0;  ///< 0: dropless
    // Multi-head latent attention (llama style): kv_lora_rank 0 is grouped-query attention.
    std::int64_t q_lora_rank = 0;
    std::int64_t kv_lora_rank = 0;
    std::int64_t qk_rope_head_dim = 0;
    std::int64_t v_head_dim = 0;  ///< 0: head_dim
    bool qk_norm = false;         ///< Qwen3: RMSNorm of each head's query and key (built-in models only)

    [[nodiscard]] bool moe() const { return experts > 0; }
    [[nodiscard]] bool mla() const { return kv_lora_rank > 0; }
};
/// What is wrong with the shape, if anything: the key and what was expected of it (heads not dividing hidden or
/// head_dim, kv_heads not dividing heads, a size below 1, MoE keys without experts, MLA keys without kv_lora_rank,
/// a llama key on a GPT block).
[[nodiscard]] std::optional<std::pair<std::string, std::string>> transformer_error(const TransformerConfig& config);
/// Builds it; throws std::invalid_argument on an inconsistent shape (transformer_error).
[[nodiscard]] Workload transformer(const TransformerConfig& config);
/// Llama's default MLP width: 2/3 of 4d, rounded up to a multiple of 256 (modeling_llama / Meta's model.py,
/// `multiple_of`).
[[nodiscard]] std::int64_t llama_ffn_hidden(std::int64_t hidden);

/// Layers [first, last] (forward order) that sharded data parallelism gathers and reduces as one unit: `wrap`
/// consecutive transformer blocks (FSDP's transformer_auto_wrap_policy wraps each block; Zhao et al., VLDB 2023,
/// §3.2.1), and every layer outside a block (embeddings, the head; every layer of a model without blocks: `wrap`
/// consecutive layers) a unit of its own kind.
[[nodiscard]] std::vector<std::pair<std::uint32_t, std::uint32_t>> shard_units(const Workload& w, std::uint32_t wrap);

/// Per layer, whether full activation checkpointing recomputes it: the layers inside transformer blocks (Megatron-LM's
/// and torchtitan's full checkpointing wrap each block; Chen et al., "Training Deep Nets with Sublinear Memory Cost",
/// arXiv 1604.06174, checkpoints segments), every layer of a model without blocks.
[[nodiscard]] std::vector<bool> checkpointed_layers(const Workload& w);

/// The job's `activation_checkpointing`.
enum class Checkpointing { none, selective, full };
inline constexpr sim::EnumEntry<Checkpointing> k_checkpointings[]{
    {Checkpointing::none, "none", "keep every activation for backward"},
    {Checkpointing::selective, "selective",
     "keep all but attention's core (scores, softmax, dropout, weighted values), recompute that in backward"},
    {Checkpointing::full, "full", "keep each transformer block's input, recompute its forward in backward"}};
constexpr std::span<const sim::EnumEntry<Checkpointing>> enum_entries(Checkpointing) {
    return k_checkpointings;
}

/// Names of the built-in workloads, in catalog order.
[[nodiscard]] const std::vector<std::string>& builtin_workload_names();
/// The built-in workload `name`, or nullopt when there is none.
/// `seq_len` > 0 sets the sequence a built-in sequence model trains on (BERT, GPT-2/3 up to their learned position
/// table, Llama any); other models ignore it (check builtin_max_seq_len first).
[[nodiscard]] std::optional<Workload> builtin_workload(std::string_view name, std::int64_t seq_len = 0);
/// The longest sequence a built-in model can train on: its learned position table (BERT 512, GPT-2 1024, GPT-3
/// 2048), -1 for no bound (Llama's rotary positions), 0 for a model without sequences (the CNNs).
[[nodiscard]] std::int64_t builtin_max_seq_len(std::string_view name);

}  // namespace ddlsim::models
