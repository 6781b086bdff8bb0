// Transformer workloads of the built-in catalog, following the HuggingFace transformers reference implementations:
//   BERT   Devlin et al. 2018, arXiv:1810.04805; BertModel (models/bert/modeling_bert.py) with its pooler
//   GPT-2  Radford et al. 2019, "Language Models are Unsupervised Multitask Learners"; GPT2LMHeadModel
//          (models/gpt2/modeling_gpt2.py), whose lm_head weight is tied to transformer.wte
// Tensor names are HuggingFace's parameter names; layers are the modules a forward hook sees holding parameters,
// with each LayerNorm merged into the sub-block it belongs to. A layer's FLOPs are 2 x the multiply-accumulates of
// its matmuls for one sequence, including the attention scores Q K^T and the weighted sum of the values (computed in
// full by both models; GPT-2 masks the upper triangle afterwards). LayerNorm, softmax, GELU and bias adds are not
// counted, and embedding lookups cost nothing.
#include "models/catalog_detail.hpp"

namespace ddlsim::models::catalog_detail {
namespace {

constexpr std::int64_t k_ffn_expansion = 4;  // feed-forward width / hidden, in BERT and GPT-2 alike

/// FLOPs of multi-head attention's two matmuls over a sequence: scores Q K^T, then scores x V. Summed over the heads
/// each is `seq` x `seq` x `hidden` MACs, whatever the head count.
[[nodiscard]] double attention_matmul_flops(std::int64_t seq, std::int64_t hidden) {
    return 2.0 * 2.0 * static_cast<double>(seq * seq * hidden);
}

}  // namespace

Workload bert(const BertConfig& config) {
    constexpr std::int64_t vocab = 30522;
    constexpr std::int64_t max_positions = 512;
    constexpr std::int64_t token_types = 2;
    constexpr std::int64_t seq = 128;
    const std::int64_t d = config.hidden;

    Workload workload;
    workload.input = "sequence of " + std::to_string(seq) + " tokens";

    Layer embeddings = named_layer("embeddings");
    add_matrix(embeddings, "embeddings.word_embeddings.weight", vocab, d);
    add_matrix(embeddings, "embeddings.position_embeddings.weight", max_positions, d);
    add_matrix(embeddings, "embeddings.token_type_embeddings.weight", token_types, d);
    add_norm(embeddings, "embeddings.LayerNorm", d);
    workload.layers.push_back(std::move(embeddings));

    for (int i = 0; i < config.layers; ++i) {
        const std::string p = "encoder.layer." + std::to_string(i);

        Layer self_attention = named_layer(p + ".attention.self");
        for (const char* projection : {".query", ".key", ".value"}) {
            add_linear(self_attention, p + ".attention.self" + projection, d, d, seq);
        }
        self_attention.fwd_flops += attention_matmul_flops(seq, d);
        workload.layers.push_back(std::move(self_attention));

        Layer attention_output = named_layer(p + ".attention.output");
        add_linear(attention_output, p + ".attention.output.dense", d, d, seq);
        add_norm(attention_output, p + ".attention.output.LayerNorm", d);
        workload.layers.push_back(std::move(attention_output));

        Layer intermediate = named_layer(p + ".intermediate");
        add_linear(intermediate, p + ".intermediate.dense", d, k_ffn_expansion * d, seq);
        workload.layers.push_back(std::move(intermediate));

        Layer output = named_layer(p + ".output");
        add_linear(output, p + ".output.dense", k_ffn_expansion * d, d, seq);
        add_norm(output, p + ".output.LayerNorm", d);
        workload.layers.push_back(std::move(output));
    }

    Layer pooler = named_layer("pooler");
    add_linear(pooler, "pooler.dense", d, d, 1);  // on the first ([CLS]) token only
    workload.layers.push_back(std::move(pooler));
    return workload;
}

Workload gpt2(const Gpt2Config& config) {
    constexpr std::int64_t vocab = 50257;
    constexpr std::int64_t context = 1024;  // n_positions
    constexpr std::int64_t seq = context;
    const std::int64_t d = config.hidden;

    Workload workload;
    workload.input = "sequence of " + std::to_string(seq) + " tokens";

    Layer token_embedding = named_layer("transformer.wte");
    add_matrix(token_embedding, "transformer.wte.weight", vocab, d);
    workload.layers.push_back(std::move(token_embedding));

    Layer position_embedding = named_layer("transformer.wpe");
    add_matrix(position_embedding, "transformer.wpe.weight", context, d);
    workload.layers.push_back(std::move(position_embedding));

    // Pre-norm blocks: ln_1 feeds attn, ln_2 feeds mlp. c_attn, c_proj and c_fc are Conv1D modules: dense layers
    // with the weight stored as in x out (so that is their matrix view).
    for (int i = 0; i < config.layers; ++i) {
        const std::string p = "transformer.h." + std::to_string(i);

        Layer attention = named_layer(p + ".attn");
        add_norm(attention, p + ".ln_1", d);
        add_linear(attention, p + ".attn.c_attn", d, 3 * d, seq, WeightLayout::in_by_out);
        attention.fwd_flops += attention_matmul_flops(seq, d);
        add_linear(attention, p + ".attn.c_proj", d, d, seq, WeightLayout::in_by_out);
        workload.layers.push_back(std::move(attention));

        Layer mlp = named_layer(p + ".mlp");
        add_norm(mlp, p + ".ln_2", d);
        add_linear(mlp, p + ".mlp.c_fc", d, k_ffn_expansion * d, seq, WeightLayout::in_by_out);
        add_linear(mlp, p + ".mlp.c_proj", k_ffn_expansion * d, d, seq, WeightLayout::in_by_out);
        workload.layers.push_back(std::move(mlp));
    }

    // The final LayerNorm, then the LM head: logits over the vocabulary at every position. Its weight is wte's, so it
    // adds no tensor here, only its matmul.
    Layer head = named_layer("transformer.ln_f+lm_head");
    add_norm(head, "transformer.ln_f", d);
    head.fwd_flops += 2.0 * static_cast<double>(seq * d * vocab);
    workload.layers.push_back(std::move(head));
    return workload;
}

}  // namespace ddlsim::models::catalog_detail
