// Transformer workloads of the built-in catalog, following the HuggingFace transformers reference implementations:
//   BERT   Devlin et al. 2018, arXiv:1810.04805; BertModel (models/bert/modeling_bert.py) with its pooler
//   GPT-2  Radford et al. 2019, "Language Models are Unsupervised Multitask Learners"; GPT2LMHeadModel
//          (models/gpt2/modeling_gpt2.py), whose lm_head weight is tied to transformer.wte
// Tensor names are HuggingFace's parameter names; layers are the modules a forward hook sees holding parameters,
// with each LayerNorm merged into the sub-block it belongs to. A layer's FLOPs are 2 x the multiply-accumulates of
// its matmuls for one sequence, including the attention scores Q K^T and the weighted sum of the values (computed in
// full by both models; GPT-2 masks the upper triangle afterwards). LayerNorm, softmax, GELU and bias adds are not
// counted, and embedding lookups cost nothing.
// Besides the FLOPs each layer lists its kernels as parts (models/workload.hpp) with the activation elements they
// read and write per sequence, following the eager HuggingFace code: a dense layer reads its input and writes its
// output; LayerNorm reads and writes once (2 passes) and softmax likewise, both in FP32 under autocast (PyTorch
// docs, "Automatic Mixed Precision package", CUDA ops that autocast to float32: layer_norm, softmax,
// log_softmax); dropout reads, writes and stores a mask (3); a residual add reads two and writes one (3); an
// element-wise op is 2. Attention's two batched matmuls are "attention" parts (one GEMM per head and sequence)
// with the score matrix read or written in full.
#include "models/catalog_detail.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace ddlsim::models::catalog_detail {
namespace {

constexpr std::int64_t k_ffn_expansion = 4;  // feed-forward width / hidden, in BERT and GPT-2 alike

/// FLOPs of multi-head attention's two matmuls over a sequence: scores Q K^T, then scores x V. Summed over the heads
/// each is `seq` x `seq` x `hidden` MACs, whatever the head count.
[[nodiscard]] double attention_matmul_flops(std::int64_t seq, std::int64_t hidden) {
    return 2.0 * 2.0 * static_cast<double>(seq * seq * hidden);
}

constexpr std::int64_t k_head_dim = 64;  // hidden / heads in every BERT and GPT-2 size

/// Attention between the projections: scores = Q K^T, `score_passes` element-wise passes over the scores
/// (scaling, masking, dropout), softmax, then scores x V and the merge of the heads (one copy). FLOPs as
/// attention_matmul_flops.
/// `d` is the width of the queries and keys over all heads, `v_width` that of the values (0: d; MLA's differ).
void add_attention_core(Layer& layer, std::int64_t seq, std::int64_t d, double score_passes,
                        std::int64_t head_count = 0, std::int64_t v_width = 0) {
    const double heads = static_cast<double>(head_count > 0 ? head_count : d / k_head_dim);
    const std::int64_t v = v_width > 0 ? v_width : d;
    const double head_dim = static_cast<double>(v) / heads;
    const double scores = heads * static_cast<double>(seq * seq);
    const double tokens = static_cast<double>(seq * d);
    const double half = attention_matmul_flops(seq, d) / 2.0, half_v = attention_matmul_flops(seq, v) / 2.0;
    layer.fwd_flops += half + half_v;
    const std::size_t first = layer.parts.size();
    layer.parts.push_back(LayerPart{.kind = PartKind::attention,
                                    .flops = half,
                                    .activations = 2.0 * tokens + scores,  // read Q, K; write the scores
                                    .rows_per_sample = static_cast<double>(seq),
                                    .cols = static_cast<double>(seq),
                                    .gemms_per_sample = heads,
                                    .scores = scores});
    add_memory(layer, PartKind::elementwise, score_passes, scores);
    add_memory(layer, PartKind::norm, 2.0, scores, true);  // softmax
    layer.parts.back().scores = 2.0 * scores;
    layer.parts.push_back(LayerPart{.kind = PartKind::attention,
                                    .flops = half_v,
                                    .activations = scores + 2.0 * static_cast<double>(seq * v),  // read P, V; write
                                    .rows_per_sample = static_cast<double>(seq),
                                    .cols = head_dim,
                                    .gemms_per_sample = heads,
                                    .scores = scores});
    for (std::size_t i = first; i < layer.parts.size(); ++i) {
        layer.parts[i].attention_core = true;
        if (layer.parts[i].kind == PartKind::elementwise) layer.parts[i].scores = layer.parts[i].activations;
    }
    add_memory(layer, PartKind::elementwise, 2.0, static_cast<double>(seq * v));  // merge heads: permute + copy
}

/// FlashAttention between the projections (models/workload.hpp AttentionKernel::flash): one fused kernel reading Q, K
/// and V (K and V of `kv_tokens` elements per sequence) and writing the context; FLOPs as attention_matmul_flops of
/// the query width `d` for the scores and of `v_width` (0: d) for the weighted values.
void add_flash_attention(Layer& layer, std::int64_t seq, std::int64_t d, std::int64_t head_count, double kv_tokens,
                         std::int64_t v_width = 0) {
    const double heads = static_cast<double>(head_count > 0 ? head_count : d / k_head_dim);
    const std::int64_t v = v_width > 0 ? v_width : d;
    const double flops = (attention_matmul_flops(seq, d) + attention_matmul_flops(seq, v)) / 2.0;
    layer.fwd_flops += flops;
    layer.parts.push_back(LayerPart{.kind = PartKind::attention,
                                    .flops = flops,
                                    .activations = static_cast<double>(seq * (d + v)) + 2.0 * kv_tokens,  // Q, K, V, O
                                    .rows_per_sample = static_cast<double>(seq),
                                    .cols = static_cast<double>(v) / heads,
                                    .gemms_per_sample = heads,
                                    .attention_core = true});
}

/// Attention between the projections with the given kernel (eager: add_attention_core's `score_passes`).
void add_attention(Layer& layer, AttentionKernel kernel, std::int64_t seq, std::int64_t d, double score_passes,
                   std::int64_t heads, double kv_tokens, std::int64_t v_width = 0) {
    if (kernel == AttentionKernel::flash) {
        add_flash_attention(layer, seq, d, heads, kv_tokens, v_width);
        return;
    }
    add_attention_core(layer, seq, d, score_passes, heads, v_width);
}

/// Dropout and the residual add after a projection back to the hidden size, over `tokens` elements.
void add_dropout_residual(Layer& layer, double tokens) {
    add_memory(layer, PartKind::elementwise, 3.0, tokens);  // dropout
    add_memory(layer, PartKind::elementwise, 3.0, tokens);  // residual add
}

/// An empty transformer workload over sequences of `seq` tokens, of that hidden size and those heads.
Workload sequence_workload(std::int64_t seq, std::int64_t hidden, std::int64_t heads, std::int64_t kv_heads) {
    Workload workload;
    workload.family = ModelFamily::transformer;
    workload.input = "sequence of " + std::to_string(seq) + " tokens";
    workload.hidden = hidden;
    workload.heads = heads;
    workload.kv_heads = kv_heads;
    workload.kv_dim = kv_heads * (hidden / heads);
    return workload;
}

/// A token-embedding layer: the lookup (read, write) of `tokens` elements per sequence, the dense vocab x d gradient
/// counted as the part's weights.
Layer token_embedding_layer(const std::string& name, std::int64_t vocab, std::int64_t d, double tokens) {
    Layer layer = named_layer(name);
    add_matrix(layer, name + ".weight", vocab, d);
    layer.parts.push_back(
        LayerPart{.kind = PartKind::embedding, .activations = 2.0 * tokens, .weights = static_cast<double>(vocab * d)});
    return layer;
}

/// Appends a dense layer without bias (Llama's projections); `replicated`: tensor parallelism keeps it whole.
void add_linear_no_bias(Layer& layer, const std::string& prefix, std::int64_t in, std::int64_t out, std::int64_t rows,
                        bool replicated = false) {
    add_matrix(layer, prefix + ".weight", out, in);
    layer.tensors.back().replicated = replicated;
    const double flops = 2.0 * static_cast<double>(rows * in * out);
    layer.fwd_flops += flops;
    layer.parts.push_back(LayerPart{.kind = PartKind::matmul,
                                    .flops = flops,
                                    .activations = static_cast<double>(rows * (in + out)),
                                    .weights = static_cast<double>(in * out),
                                    .rows_per_sample = static_cast<double>(rows),
                                    .cols = static_cast<double>(out),
                                    .replicated = replicated});
}

/// The PaLM model-FLOPs count per token (models/workload.hpp): 6 x the matmul weights a token runs through (every
/// matmul part's weight elements, the LM head included, embedding lookups, norms and biases excluded; of routed
/// experts the experts_per_token a token goes to: 6 N_active, as DeepSeek-V3's "37B activated") + 12 L a s, `a` the
/// attention's width (the mean of the query and the value widths over the heads: d for every model but MLA, Qwen3,
/// GPT-OSS).
void set_model_flops(Workload& w, int layers, std::int64_t a, std::int64_t seq) {
    // A matmul part of `rows` vectors per sample does 2 x rows x (its weight matrix's elements) FLOPs; a grouped GEMM
    // of experts 2 x seq x (the weights of the experts a token runs).
    double matmul_weights = 0.0;
    for (const Layer& l : w.layers)
        for (const LayerPart& p : l.parts)
            if (p.kind == PartKind::matmul && p.rows_per_sample > 0.0)
                matmul_weights +=
                    p.flops / (2.0 * (p.gemms_per_sample > 0.0 ? static_cast<double>(seq) : p.rows_per_sample));
    w.tokens_per_sample = seq;
    w.model_flops_per_token = 6.0 * matmul_weights + 12.0 * layers * static_cast<double>(a) * static_cast<double>(seq);
}

/// Llama's MLP (LlamaMLP): down(silu(gate(x)) * up(x)) of width f over `seq` rows, under `prefix`: SiLU 2 passes, the
/// product 3.
void add_swiglu(Layer& layer, const std::string& prefix, std::int64_t d, std::int64_t f, std::int64_t seq) {
    add_linear_no_bias(layer, prefix + ".gate_proj", d, f, seq);
    add_linear_no_bias(layer, prefix + ".up_proj", d, f, seq);
    add_memory(layer, PartKind::elementwise, 2.0 + 3.0, static_cast<double>(seq * f));
    add_linear_no_bias(layer, prefix + ".down_proj", f, d, seq);
}

/// A grouped GEMM of `experts` experts, `in` x `out` each, over the `rows` token copies of a sequence routed to them
/// (evenly: rows / experts each), its weights one `experts` x out x in tensor.
void add_experts_gemm(Layer& layer, const std::string& name, std::int64_t experts, std::int64_t in, std::int64_t out,
                      std::int64_t rows) {
    add_matrix(layer, name, experts * out, in);
    layer.tensors.back().expert = true;
    const double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(in * out);
    layer.fwd_flops += flops;
    layer.parts.push_back(LayerPart{.kind = PartKind::matmul,
                                    .flops = flops,
                                    .activations = static_cast<double>(rows * (in + out)),
                                    .weights = static_cast<double>(experts * in * out),
                                    .rows_per_sample = static_cast<double>(rows) / static_cast<double>(experts),
                                    .cols = static_cast<double>(out),
                                    .gemms_per_sample = static_cast<double>(experts)});
}

}  // namespace

Workload bert(const BertConfig& config) {
    constexpr std::int64_t vocab = 30522;
    constexpr std::int64_t max_positions = 512;
    constexpr std::int64_t token_types = 2;
    const std::int64_t seq = config.seq_len;
    const std::int64_t d = config.hidden;

    Workload workload = sequence_workload(seq, d, d / k_head_dim, d / k_head_dim);
    const double tokens = static_cast<double>(seq * d);

    Layer embeddings = named_layer("embeddings");
    add_matrix(embeddings, "embeddings.word_embeddings.weight", vocab, d);
    add_matrix(embeddings, "embeddings.position_embeddings.weight", max_positions, d);
    add_matrix(embeddings, "embeddings.token_type_embeddings.weight", token_types, d);
    add_norm(embeddings, "embeddings.LayerNorm", d);
    // Three lookups (read and write each), two adds, LayerNorm, dropout. The word-embedding gradient is dense:
    // its vocab x d elements are counted as the part's weights.
    embeddings.parts.push_back(LayerPart{
        .kind = PartKind::embedding, .activations = 12.0 * tokens, .weights = static_cast<double>(vocab * d)});
    add_memory(embeddings, PartKind::norm, 2.0, tokens, true);
    add_memory(embeddings, PartKind::elementwise, 3.0, tokens);
    workload.layers.push_back(std::move(embeddings));

    for (int i = 0; i < config.layers; ++i) {
        const std::string p = "encoder.layer." + std::to_string(i);

        Layer self_attention = named_layer(p + ".attention.self");
        self_attention.block = i;
        for (const char* projection : {".query", ".key", ".value"}) {
            add_linear(self_attention, p + ".attention.self" + projection, d, d, seq);
        }
        // BertSelfAttention: scores / sqrt(d_head), + attention mask, dropout of the probabilities (2 + 2 + 3).
        add_attention_core(self_attention, seq, d, 7.0);
        workload.layers.push_back(std::move(self_attention));

        Layer attention_output = named_layer(p + ".attention.output");
        attention_output.block = i;
        add_linear(attention_output, p + ".attention.output.dense", d, d, seq);
        add_norm(attention_output, p + ".attention.output.LayerNorm", d);
        add_dropout_residual(attention_output, tokens);
        add_memory(attention_output, PartKind::norm, 2.0, tokens, true);
        workload.layers.push_back(std::move(attention_output));

        Layer intermediate = named_layer(p + ".intermediate");
        intermediate.block = i;
        add_linear(intermediate, p + ".intermediate.dense", d, k_ffn_expansion * d, seq);
        add_memory(intermediate, PartKind::elementwise, 2.0, static_cast<double>(k_ffn_expansion) * tokens);  // GELU
        workload.layers.push_back(std::move(intermediate));

        Layer output = named_layer(p + ".output");
        output.block = i;
        add_linear(output, p + ".output.dense", k_ffn_expansion * d, d, seq);
        add_norm(output, p + ".output.LayerNorm", d);
        add_dropout_residual(output, tokens);
        add_memory(output, PartKind::norm, 2.0, tokens, true);
        workload.layers.push_back(std::move(output));
    }

    Layer pooler = named_layer("pooler");
    add_linear(pooler, "pooler.dense", d, d, 1);  // on the first ([CLS]) token only
    workload.layers.push_back(std::move(pooler));
    set_model_flops(workload, config.layers, d, seq);
    return workload;
}

Workload gpt2(const Gpt2Config& config) {
    const std::int64_t vocab = config.vocab;
    const std::int64_t context = config.seq_len;  // n_positions: GPT-2 1024, GPT-3 2048
    const std::int64_t seq = config.train_seq > 0 ? config.train_seq : context;
    const std::int64_t d = config.hidden;
    const std::int64_t f = config.ffn_hidden > 0 ? config.ffn_hidden : k_ffn_expansion * d;
    const std::int64_t heads = config.heads > 0 ? config.heads : d / k_head_dim;

    Workload workload = sequence_workload(seq, d, heads, heads);
    const double tokens = static_cast<double>(seq * d);
    const double ffn = static_cast<double>(f * seq);

    workload.layers.push_back(token_embedding_layer("transformer.wte", vocab, d, tokens));

    Layer position_embedding = named_layer("transformer.wpe");
    add_matrix(position_embedding, "transformer.wpe.weight", context, d);
    add_memory(position_embedding, PartKind::embedding, 2.0, tokens);
    add_memory(position_embedding, PartKind::elementwise, 3.0, tokens);  // wte + wpe
    add_memory(position_embedding, PartKind::elementwise, 3.0, tokens);  // embedding dropout
    workload.layers.push_back(std::move(position_embedding));

    // Pre-norm blocks: ln_1 feeds attn, ln_2 feeds mlp. c_attn, c_proj and c_fc are Conv1D modules: dense layers
    // with the weight stored as in x out (so that is their matrix view).
    for (int i = 0; i < config.layers; ++i) {
        const std::string p = "transformer.h." + std::to_string(i);

        Layer attention = named_layer(p + ".attn");
        attention.block = i;
        add_norm(attention, p + ".ln_1", d);
        add_memory(attention, PartKind::norm, 2.0, tokens, true);
        add_linear(attention, p + ".attn.c_attn", d, 3 * d, seq, WeightLayout::in_by_out);
        // GPT2Attention._attn: scores / sqrt(d_head), causal torch.where, dropout of the probabilities (2 + 3 + 3).
        add_attention(attention, config.attention, seq, d, 8.0, config.heads, tokens);
        add_linear(attention, p + ".attn.c_proj", d, d, seq, WeightLayout::in_by_out);
        add_dropout_residual(attention, tokens);
        workload.layers.push_back(std::move(attention));

        Layer mlp = named_layer(p + ".mlp");
        mlp.block = i;
        add_norm(mlp, p + ".ln_2", d);
        add_memory(mlp, PartKind::norm, 2.0, tokens, true);
        add_linear(mlp, p + ".mlp.c_fc", d, f, seq, WeightLayout::in_by_out);
        // gelu_new, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), runs eagerly as 8 element-wise kernels
        // (pow, mul, add, mul, tanh, add, mul, mul: 6 of 2 passes, 2 of 3) = 18 passes.
        add_memory(mlp, PartKind::elementwise, 18.0, ffn);
        add_linear(mlp, p + ".mlp.c_proj", f, d, seq, WeightLayout::in_by_out);
        add_dropout_residual(mlp, tokens);
        workload.layers.push_back(std::move(mlp));
    }

    // The final LayerNorm, then the LM head: logits over the vocabulary at every position. Its weight is wte's, so it
    // adds no tensor here, only its matmul.
    Layer head = named_layer("transformer.ln_f+lm_head");
    add_norm(head, "transformer.ln_f", d);
    add_memory(head, PartKind::norm, 2.0, tokens, true);
    const double logits = static_cast<double>(seq * vocab);
    head.fwd_flops += 2.0 * static_cast<double>(seq * d * vocab);
    head.parts.push_back(LayerPart{.kind = PartKind::matmul,
                                   .flops = 2.0 * static_cast<double>(seq * d * vocab),
                                   .activations = tokens + logits,
                                   .weights = static_cast<double>(vocab * d),
                                   .rows_per_sample = static_cast<double>(seq),
                                   .cols = static_cast<double>(vocab),
                                   .bf16_under_fp8 = true});
    // The language-modelling loss over the logits (GPT2LMHeadModel with labels): the shifted copy (2), the cast
    // to FP32 and log_softmax (2 + 2, FP32 under autocast), nll_loss (1).
    add_memory(head, PartKind::norm, 7.0, logits, true);
    workload.layers.push_back(std::move(head));
    set_model_flops(workload, config.layers, d, seq);
    return workload;
}

Workload llama(const TransformerConfig& c) {
    const std::int64_t d = c.hidden, seq = c.seq_len, vocab = c.vocab;
    const std::int64_t head_dim = c.head_dim > 0 ? c.head_dim : d / c.heads;
    const std::int64_t kv_heads = c.kv_heads > 0 ? c.kv_heads : c.heads;
    const std::int64_t q = c.heads * head_dim, kv = kv_heads * head_dim;  // query and key widths over the heads
    const std::int64_t f = c.ffn_hidden > 0 ? c.ffn_hidden : llama_ffn_hidden(d);
    Workload workload = sequence_workload(seq, d, c.heads, kv_heads);
    workload.experts = c.experts;
    workload.experts_per_token = c.experts_per_token;
    workload.capacity_factor = c.capacity_factor;
    const double tokens = static_cast<double>(seq * d);
    // MLA: each head's query and key of head_dim + qk_rope_head_dim, its value of v_head_dim.
    const std::int64_t qk_head = head_dim + c.qk_rope_head_dim, v_head = c.v_head_dim > 0 ? c.v_head_dim : head_dim;
    const std::int64_t qk_width = c.mla() ? c.heads * qk_head : q, v_width = c.mla() ? c.heads * v_head : q;
    workload.kv_dim = c.mla() ? (qk_width + v_width) / 2 : kv;

    workload.layers.push_back(token_embedding_layer("model.embed_tokens", vocab, d, tokens));

    for (int i = 0; i < c.layers; ++i) {
        const std::string p = "model.layers." + std::to_string(i);
        Layer attention = named_layer(p + ".self_attn");
        attention.block = i;
        add_vector(attention, p + ".input_layernorm.weight", d);
        add_memory(attention, PartKind::norm, 2.0, tokens, true);
        if (c.mla()) {
            // DeepseekV3Attention (deepseek-ai/DeepSeek-V3 inference/model.py and modeling_deepseek.py): the
            // down-projections to the latents (whole on every tensor rank, as Megatron-Core's MLA keeps
            // linear_q_down_proj and linear_kv_down_proj: megatron/core/transformer/multi_latent_attention.py) and
            // their RMSNorms, then the up-projections to every head, rotary embeddings on the rope parts (11 passes,
            // as Llama's), the rotary key copied to every head (2 passes), attention, o_proj from the values.
            const double s = static_cast<double>(seq);
            if (c.q_lora_rank > 0) {
                add_linear_no_bias(attention, p + ".self_attn.q_a_proj", d, c.q_lora_rank, seq, true);
                add_vector(attention, p + ".self_attn.q_a_layernorm.weight", c.q_lora_rank);
                add_memory(attention, PartKind::norm, 2.0, s * static_cast<double>(c.q_lora_rank), true);
            }
            add_linear_no_bias(attention, p + ".self_attn.kv_a_proj_with_mqa", d, c.kv_lora_rank + c.qk_rope_head_dim,
                               seq, true);
            add_vector(attention, p + ".self_attn.kv_a_layernorm.weight", c.kv_lora_rank);
            add_memory(attention, PartKind::norm, 2.0, s * static_cast<double>(c.kv_lora_rank), true);
            if (c.q_lora_rank > 0)
                add_linear_no_bias(attention, p + ".self_attn.q_b_proj", c.q_lora_rank, qk_width, seq);
            else
                add_linear_no_bias(attention, p + ".self_attn.q_proj", d, qk_width, seq);
            add_linear_no_bias(attention, p + ".self_attn.kv_b_proj", c.kv_lora_rank, c.heads * (head_dim + v_head),
                               seq);
            add_memory(attention, PartKind::elementwise, 11.0,
                       s * static_cast<double>((c.heads + 1) * c.qk_rope_head_dim));
            add_memory(attention, PartKind::elementwise, 2.0, s * static_cast<double>(qk_width));
            add_attention(attention, c.attention, seq, qk_width, 5.0, c.heads,
                          s * static_cast<double>(qk_width + v_width) / 2.0, v_width);
            add_linear_no_bias(attention, p + ".self_attn.o_proj", v_width, d, seq);
        } else {
            // LlamaAttention (eager; with flash the score passes and softmax are inside the fused kernel): RMSNorm in
            // FP32 (2 passes), the projections, Qwen3's RMSNorm of each head's query and key (qk_norm), rotary
            // embeddings on q and k (q * cos + rotate_half(q) * sin: a copy of 2 passes and three kernels of 3, 11
            // passes), repeat_kv's copy of k and v to every head (2 passes over both) under grouped-query attention,
            // then eager: scores / sqrt(d_head) (2) + the causal mask (3), softmax in FP32; o_proj, the residual add.
            add_linear_no_bias(attention, p + ".self_attn.q_proj", d, q, seq);
            add_linear_no_bias(attention, p + ".self_attn.k_proj", d, kv, seq);
            add_linear_no_bias(attention, p + ".self_attn.v_proj", d, kv, seq);
            if (c.qk_norm) {
                add_vector(attention, p + ".self_attn.q_norm.weight", head_dim);
                add_vector(attention, p + ".self_attn.k_norm.weight", head_dim);
                add_memory(attention, PartKind::norm, 2.0, static_cast<double>(seq * (q + kv)), true);
            }
            add_memory(attention, PartKind::elementwise, 11.0, static_cast<double>(seq * (q + kv)));
            if (kv < q) add_memory(attention, PartKind::elementwise, 2.0, 2.0 * static_cast<double>(seq * q));
            add_attention(attention, c.attention, seq, q, 5.0, c.heads, static_cast<double>(seq * kv));
            add_linear_no_bias(attention, p + ".self_attn.o_proj", q, d, seq);
        }
        add_memory(attention, PartKind::elementwise, 3.0, tokens);  // residual
        workload.layers.push_back(std::move(attention));

        // LlamaMLP: RMSNorm, down(silu(gate(x)) * up(x)): SiLU 2 passes, the product 3, the residual add 3.
        Layer mlp = named_layer(p + ".mlp");
        mlp.block = i;
        add_vector(mlp, p + ".post_attention_layernorm.weight", d);
        add_memory(mlp, PartKind::norm, 2.0, tokens, true);
        const bool moe = c.moe() && i >= c.first_dense_layers && i % c.moe_layer_frequency == 0;
        if (!moe) {
            add_swiglu(mlp, p + ".mlp", d, f, seq);
            add_memory(mlp, PartKind::elementwise, 3.0, tokens);
            workload.layers.push_back(std::move(mlp));
            continue;
        }
        // A mixture-of-experts MLP (MixtralSparseMoeBlock, DeepseekV3MoE): the router's d x experts GEMM (whole on
        // every tensor rank), its softmax and top-k over the scores (FP32, 2 passes), the shared experts as one
        // SwiGLU MLP of shared_experts x the expert width (DeepseekV3MoE's shared_experts), then the routed experts as
        // a layer of their own: the token copies gathered by expert (2 passes over seq k d), the experts' grouped
        // SwiGLU GEMMs over them, the copies scattered back and summed with their router weights (3 passes), the
        // residual add.
        const std::int64_t fe = c.expert_ffn_hidden > 0 ? c.expert_ffn_hidden : f;
        const std::int64_t copies = seq * c.experts_per_token;
        add_linear_no_bias(mlp, p + ".mlp.gate", d, c.experts, seq, true);
        add_memory(mlp, PartKind::norm, 2.0, static_cast<double>(seq * c.experts), true);
        if (c.shared_experts > 0) add_swiglu(mlp, p + ".mlp.shared_experts", d, c.shared_experts * fe, seq);
        workload.layers.push_back(std::move(mlp));

        Layer experts = named_layer(p + ".mlp.experts");
        experts.block = i;
        experts.routed_experts = true;
        add_memory(experts, PartKind::elementwise, 2.0, static_cast<double>(copies * d));
        add_experts_gemm(experts, p + ".mlp.experts.gate_proj", c.experts, d, fe, copies);
        add_experts_gemm(experts, p + ".mlp.experts.up_proj", c.experts, d, fe, copies);
        add_memory(experts, PartKind::elementwise, 2.0 + 3.0, static_cast<double>(copies * fe));
        add_experts_gemm(experts, p + ".mlp.experts.down_proj", c.experts, fe, d, copies);
        add_memory(experts, PartKind::elementwise, 3.0, static_cast<double>(copies * d));
        add_memory(experts, PartKind::elementwise, 3.0, tokens);  // residual
        workload.layers.push_back(std::move(experts));
    }

    Layer head = named_layer("model.norm+lm_head");
    add_vector(head, "model.norm.weight", d);
    add_memory(head, PartKind::norm, 2.0, tokens, true);
    add_linear_no_bias(head, "lm_head", d, vocab, seq);
    head.parts.back().bf16_under_fp8 = true;  // Megatron's output layer (models/device.cpp)
    add_memory(head, PartKind::norm, 7.0, static_cast<double>(seq * vocab), true);  // the loss, as GPT-2's
    workload.layers.push_back(std::move(head));
    set_model_flops(workload, c.layers, (qk_width + v_width) / 2, seq);
    return workload;
}

}  // namespace ddlsim::models::catalog_detail

namespace ddlsim::models {

std::int64_t llama_ffn_hidden(std::int64_t hidden) {
    constexpr std::int64_t multiple_of = 256;
    const std::int64_t f = 2 * 4 * hidden / 3;
    return (f + multiple_of - 1) / multiple_of * multiple_of;
}

std::optional<std::pair<std::string, std::string>> transformer_error(const TransformerConfig& c) {
    using R = std::optional<std::pair<std::string, std::string>>;
    auto at = [](const char* key, std::string what) { return R{std::pair{std::string(key), std::move(what)}}; };
    for (const auto& [key, value] : {std::pair{"layers", std::int64_t{c.layers}},
                                     {"hidden", c.hidden},
                                     {"heads", c.heads},
                                     {"seq_len", c.seq_len},
                                     {"vocab", c.vocab}})
        if (value < 1) return at(key, fmt::format("expected at least 1, got {}", value));
    const bool llama = c.style == TransformerStyle::llama;
    if (!llama) {
        const char* own = c.kv_heads > 0 && c.kv_heads != c.heads ? "kv_heads"
                          : c.head_dim > 0                        ? "head_dim"
                          : c.moe()                               ? "experts"
                          : c.mla()                               ? "kv_lora_rank"
                                                                  : nullptr;
        if (own != nullptr) return at(own, "a key of style \"llama\" only (GPT blocks: multi-head attention, dense)");
    }
    if (c.head_dim == 0 && c.hidden % c.heads != 0)
        return at("heads", fmt::format("expected a divisor of hidden ({}) or head_dim, got {}", c.hidden, c.heads));
    if (c.kv_heads > 0 && c.heads % c.kv_heads != 0)
        return at("kv_heads", fmt::format("expected a divisor of heads ({}), got {}", c.heads, c.kv_heads));
    if (c.mla() && c.kv_heads > 0 && c.kv_heads != c.heads)
        return at("kv_heads", "expected none with kv_lora_rank (latent attention has no key-value heads)");
    if (!c.mla() && (c.q_lora_rank > 0 || c.qk_rope_head_dim > 0 || c.v_head_dim > 0))
        return at(c.q_lora_rank > 0        ? "q_lora_rank"
                  : c.qk_rope_head_dim > 0 ? "qk_rope_head_dim"
                                           : "v_head_dim",
                  "a key of latent attention: set kv_lora_rank too");
    if (!c.moe()) {
        const char* own = c.experts_per_token > 0      ? "experts_per_token"
                          : c.expert_ffn_hidden > 0    ? "expert_ffn_hidden"
                          : c.shared_experts > 0       ? "shared_experts"
                          : c.first_dense_layers > 0   ? "first_dense_layers"
                          : c.moe_layer_frequency != 1 ? "moe_layer_frequency"
                          : c.capacity_factor != 0.0   ? "capacity_factor"
                                                       : nullptr;
        if (own != nullptr)
            return at(own, "a key of mixture-of-experts models: set experts too (a dense model has none)");
        return std::nullopt;
    }
    if (c.experts_per_token < 1 || c.experts_per_token > c.experts)
        return at("experts_per_token",
                  fmt::format("expected 1 to experts ({}) with experts, got {}", c.experts, c.experts_per_token));
    if (c.first_dense_layers >= c.layers)
        return at("first_dense_layers",
                  fmt::format("expected fewer than layers ({}), got {}", c.layers, c.first_dense_layers));
    if (c.moe_layer_frequency < 1)
        return at("moe_layer_frequency", fmt::format("expected at least 1, got {}", c.moe_layer_frequency));
    if (c.capacity_factor != 0.0 && c.capacity_factor < 1.0)
        return at("capacity_factor", fmt::format("expected 0 (dropless) or at least 1, got {}", c.capacity_factor));
    return std::nullopt;
}

Workload transformer(const TransformerConfig& c) {
    if (auto e = transformer_error(c)) throw std::invalid_argument("transformer: " + e->first + ": " + e->second);
    if (c.style == TransformerConfig::Style::llama) return catalog_detail::llama(c);
    return catalog_detail::gpt2({.layers = c.layers,
                                 .hidden = c.hidden,
                                 .heads = c.heads,
                                 .ffn_hidden = c.ffn_hidden,
                                 .seq_len = c.seq_len,
                                 .vocab = c.vocab,
                                 .attention = c.attention});
}

}  // namespace ddlsim::models
