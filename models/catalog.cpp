// The built-in workload catalog: names, in catalog order, and dispatch to the builders that derive each model
// from its published architecture (CNNs in catalog_cnn.cpp, transformers in catalog_transformer.cpp).
#include <array>

#include "models/catalog_detail.hpp"
#include "models/workload.hpp"

namespace ddlsim::models {
namespace {

namespace detail = catalog_detail;

// `build(seq)`: seq is the sequence trained on for sequence models (0: the model's own); `max_seq` its bound (the
// learned position table; 0: not a sequence model; -1: none, rotary positions).
struct CatalogEntry {
    std::string_view name;
    Workload (*build)(std::int64_t seq);
    std::int64_t max_seq = 0;
};

constexpr std::array<CatalogEntry, 25> k_catalog{{
    {"alexnet", [](std::int64_t) { return detail::alexnet(); }},
    {"vgg16", [](std::int64_t) { return detail::vgg16(); }},
    {"resnet50",
     [](std::int64_t) {
         return detail::resnet({3, 4, 6, 3});
     }},
    {"resnet101",
     [](std::int64_t) {
         return detail::resnet({3, 4, 23, 3});
     }},
    {"inception_v3", [](std::int64_t) { return detail::inception_v3(); }},
    {"bert_base",
     [](std::int64_t q) { return detail::bert({.layers = 12, .hidden = 768, .seq_len = q > 0 ? q : 128}); }, 512},
    {"bert_large",
     [](std::int64_t q) { return detail::bert({.layers = 24, .hidden = 1024, .seq_len = q > 0 ? q : 128}); }, 512},
    {"gpt2", [](std::int64_t q) { return detail::gpt2({.layers = 12, .hidden = 768, .train_seq = q}); }, 1024},
    {"gpt2_medium", [](std::int64_t q) { return detail::gpt2({.layers = 24, .hidden = 1024, .train_seq = q}); }, 1024},
    {"gpt2_large", [](std::int64_t q) { return detail::gpt2({.layers = 36, .hidden = 1280, .train_seq = q}); }, 1024},
    {"gpt2_xl", [](std::int64_t q) { return detail::gpt2({.layers = 48, .hidden = 1600, .train_seq = q}); }, 1024},
    // GPT-3 (Brown et al. 2020, arXiv 2005.14165, Table 2.1: n_layers, d_model, n_heads x d_head; context 2048,
    // the GPT-2 vocabulary). Where the table's n_heads x d_head differs from d_model (1.3B: 24 x 128 vs 2048; 13B:
    // 40 x 128 vs 5140) the heads are d_model / 128 (1.3B) or 20 of 257 (13B): the head count changes neither the
    // parameters nor the FLOPs, only the attention GEMMs' shapes.
    {"gpt3_1_3b",
     [](std::int64_t q) {
         return detail::gpt2({.layers = 24, .hidden = 2048, .heads = 16, .seq_len = 2048, .train_seq = q});
     },
     2048},
    {"gpt3_2_7b",
     [](std::int64_t q) {
         return detail::gpt2({.layers = 32, .hidden = 2560, .heads = 32, .seq_len = 2048, .train_seq = q});
     },
     2048},
    {"gpt3_6_7b",
     [](std::int64_t q) {
         return detail::gpt2({.layers = 32, .hidden = 4096, .heads = 32, .seq_len = 2048, .train_seq = q});
     },
     2048},
    {"gpt3_13b",
     [](std::int64_t q) {
         return detail::gpt2({.layers = 40, .hidden = 5140, .heads = 20, .seq_len = 2048, .train_seq = q});
     },
     2048},
    {"gpt3_175b",
     [](std::int64_t q) {
         return detail::gpt2({.layers = 96, .hidden = 12288, .heads = 96, .seq_len = 2048, .train_seq = q});
     },
     2048},
    // Llama 2 (Touvron et al. 2023, arXiv 2307.09288, Table 1 and the released config.json files: hidden,
    // intermediate_size, layers, heads, key-value heads, vocabulary 32000, context 4096) and Llama 3 (Llama Team
    // 2024, arXiv 2407.21783, Table 3: vocabulary 128256, context 8192, 8 key-value heads).
    {"llama2_7b",
     [](std::int64_t q) {
         return models::transformer({.layers = 32,
                                     .hidden = 4096,
                                     .heads = 32,
                                     .kv_heads = 32,
                                     .ffn_hidden = 11008,
                                     .seq_len = q > 0 ? q : 4096,
                                     .vocab = 32000});
     },
     -1},
    {"llama2_13b",
     [](std::int64_t q) {
         return models::transformer({.layers = 40,
                                     .hidden = 5120,
                                     .heads = 40,
                                     .kv_heads = 40,
                                     .ffn_hidden = 13824,
                                     .seq_len = q > 0 ? q : 4096,
                                     .vocab = 32000});
     },
     -1},
    {"llama2_70b",
     [](std::int64_t q) {
         return models::transformer({.layers = 80,
                                     .hidden = 8192,
                                     .heads = 64,
                                     .kv_heads = 8,
                                     .ffn_hidden = 28672,
                                     .seq_len = q > 0 ? q : 4096,
                                     .vocab = 32000});
     },
     -1},
    {"llama3_8b",
     [](std::int64_t q) {
         return models::transformer({.layers = 32,
                                     .hidden = 4096,
                                     .heads = 32,
                                     .kv_heads = 8,
                                     .ffn_hidden = 14336,
                                     .seq_len = q > 0 ? q : 8192,
                                     .vocab = 128256});
     },
     -1},
    {"llama3_70b",
     [](std::int64_t q) {
         return models::transformer({.layers = 80,
                                     .hidden = 8192,
                                     .heads = 64,
                                     .kv_heads = 8,
                                     .ffn_hidden = 28672,
                                     .seq_len = q > 0 ? q : 8192,
                                     .vocab = 128256});
     },
     -1},
    // Llama 3 405B (arXiv 2407.21783, Table 3: 126 layers, model dimension 16,384, FFN 53,248, 128 heads; the
    // released meta-llama/Llama-3.1-405B config.json: the same, vocabulary 128256): 405,853,388,800 parameters.
    {"llama3_405b",
     [](std::int64_t q) {
         return models::transformer({.layers = 126,
                                     .hidden = 16384,
                                     .heads = 128,
                                     .kv_heads = 8,
                                     .ffn_hidden = 53248,
                                     .seq_len = q > 0 ? q : 8192,
                                     .vocab = 128256});
     },
     -1},
    // Mixtral 8x7B (Jiang et al., "Mixtral of Experts", arXiv 2401.04088, Table 1: dim 4096, 32 layers, head_dim 128,
    // hidden_dim 14336, 32 heads, 8 kv heads, vocabulary 32000, 8 experts, top 2; mistralai/Mixtral-8x7B-v0.1
    // config.json the same, untied head): 46,702,792,704 parameters, 12.9B active. Trained here on 4096 tokens (the
    // paper gives no pre-training length; Megatron-LM's Mixtral recipe, examples/mixtral, uses 4096).
    {"mixtral_8x7b",
     [](std::int64_t q) {
         return models::transformer({.layers = 32,
                                     .hidden = 4096,
                                     .heads = 32,
                                     .kv_heads = 8,
                                     .ffn_hidden = 14336,
                                     .seq_len = q > 0 ? q : 4096,
                                     .vocab = 32000,
                                     .experts = 8,
                                     .experts_per_token = 2});
     },
     -1},
    // DeepSeek-V3 (arXiv 2412.19437, §4.2: 61 layers, hidden 7168, 128 heads of 128, KV compression 512, query
    // compression 1536, decoupled rotary 64; every FFN but the first 3 an MoE of 1 shared and 256 routed experts of
    // 2048, 8 routed per token; sequences of 4K; deepseek-ai/DeepSeek-V3 config.json: dense intermediate 18432, v_head
    // 128, vocabulary 129280, untied head): 671B parameters, 37B active, the multi-token-prediction module left out
    // (as the paper's 671B count does). The router's e_score_correction_bias (256 per MoE layer) is not counted.
    {"deepseek_v3",
     [](std::int64_t q) {
         return models::transformer({.layers = 61,
                                     .hidden = 7168,
                                     .heads = 128,
                                     .head_dim = 128,
                                     .ffn_hidden = 18432,
                                     .seq_len = q > 0 ? q : 4096,
                                     .vocab = 129280,
                                     .experts = 256,
                                     .experts_per_token = 8,
                                     .expert_ffn_hidden = 2048,
                                     .shared_experts = 1,
                                     .first_dense_layers = 3,
                                     .q_lora_rank = 1536,
                                     .kv_lora_rank = 512,
                                     .qk_rope_head_dim = 64,
                                     .v_head_dim = 128});
     },
     -1},
    // Qwen3-30B-A3B (Qwen3 Technical Report, arXiv 2505.09388, Table 2: 48 layers, 32 query and 4 key-value heads,
    // 128 experts, 8 activated; Qwen/Qwen3-30B-A3B config.json: hidden 2048, head_dim 128, moe_intermediate_size 768,
    // vocabulary 151936, q/k RMSNorm per head, untied head): 30.5B parameters, 3.3B active; sequences of 4096 (the
    // report's first pre-training stages).
    {"qwen3_30b_a3b",
     [](std::int64_t q) {
         return models::transformer({.layers = 48,
                                     .hidden = 2048,
                                     .heads = 32,
                                     .kv_heads = 4,
                                     .head_dim = 128,
                                     .seq_len = q > 0 ? q : 4096,
                                     .vocab = 151936,
                                     .experts = 128,
                                     .experts_per_token = 8,
                                     .expert_ffn_hidden = 768,
                                     .qk_norm = true});
     },
     -1},
}};

}  // namespace

const std::vector<std::string>& builtin_workload_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> result;
        for (const CatalogEntry& entry : k_catalog) result.emplace_back(entry.name);
        return result;
    }();
    return names;
}

std::int64_t builtin_max_seq_len(std::string_view name) {
    for (const CatalogEntry& entry : k_catalog)
        if (entry.name == name) return entry.max_seq;
    return 0;
}

std::optional<Workload> builtin_workload(std::string_view name, std::int64_t seq_len) {
    for (const CatalogEntry& entry : k_catalog) {
        if (entry.name != name) continue;
        Workload workload = entry.build(entry.max_seq != 0 ? seq_len : 0);
        workload.name = std::string(entry.name);
        return workload;
    }
    return std::nullopt;
}

}  // namespace ddlsim::models
