// Internal to the built-in catalog: the per-family builders (catalog_cnn.cpp, catalog_transformer.cpp) that
// catalog.cpp dispatches to, and the small helpers they share. Use models/workload.hpp from outside.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "models/workload.hpp"

namespace ddlsim::models::catalog_detail {

/// An empty layer called `name`.
[[nodiscard]] inline Layer named_layer(std::string name) {
    Layer layer;
    layer.name = std::move(name);
    return layer;
}

/// Appends one parameter tensor to `layer`: a `rows` x `cols` matrix (rows * cols parameters).
inline void add_matrix(Layer& layer, std::string name, std::int64_t rows, std::int64_t cols) {
    layer.tensors.push_back(Tensor{std::move(name), rows * cols, rows, cols});
}

/// Appends one vector parameter tensor (a bias, a norm's scale or shift) of `size` elements to `layer`.
inline void add_vector(Layer& layer, std::string name, std::int64_t size) {
    add_matrix(layer, std::move(name), size, 1);
}

/// How a dense layer stores its weight: nn.Linear as out x in, GPT-2's Conv1D as in x out.
enum class WeightLayout { out_by_in, in_by_out };

/// Appends dense layer `prefix` (weight `in` x `out`, bias `out`), applied to `rows` vectors per sample, to `layer`.
inline void add_linear(Layer& layer, const std::string& prefix, std::int64_t in, std::int64_t out, std::int64_t rows,
                       WeightLayout layout = WeightLayout::out_by_in) {
    if (layout == WeightLayout::out_by_in) {
        add_matrix(layer, prefix + ".weight", out, in);
    } else {
        add_matrix(layer, prefix + ".weight", in, out);
    }
    add_vector(layer, prefix + ".bias", out);
    const double flops = 2.0 * static_cast<double>(rows * in * out);
    layer.fwd_flops += flops;
    layer.parts.push_back(LayerPart{.kind = PartKind::matmul,
                                    .flops = flops,
                                    .activations = static_cast<double>(rows * (in + out)),
                                    .weights = static_cast<double>(in * out + out),
                                    .bias = true,
                                    .rows_per_sample = static_cast<double>(rows),
                                    .cols = static_cast<double>(out)});
}

/// Appends a memory-bound part to `layer`: `passes` reads or writes of `elements` activation elements per sample
/// (an element-wise kernel y = f(x) is 2 passes, x + y -> z is 3, dropout 3 counting its mask).
inline void add_memory(Layer& layer, PartKind kind, double passes, double elements, bool fp32_under_amp = false) {
    layer.parts.push_back(LayerPart{
        .kind = kind, .activations = passes * elements, .elements = elements, .fp32_under_amp = fp32_under_amp});
}

/// Appends the learned scale and shift of normalisation `prefix` (LayerNorm or BatchNorm) over `features`.
inline void add_norm(Layer& layer, const std::string& prefix, std::int64_t features) {
    add_vector(layer, prefix + ".weight", features);
    add_vector(layer, prefix + ".bias", features);
}

// Builders. They fill in the layers and the input description; catalog.cpp sets the name.

[[nodiscard]] Workload alexnet();
[[nodiscard]] Workload vgg16();
/// A torchvision bottleneck ResNet with the given number of blocks in each of its four stages.
[[nodiscard]] Workload resnet(const std::array<int, 4>& blocks_per_stage);
[[nodiscard]] Workload inception_v3();

/// The sizes that tell BERT models apart (the feed-forward width is 4 x hidden in all of them).
struct BertConfig {
    int layers = 0;
    std::int64_t hidden = 0;
    std::int64_t seq_len = 128;  ///< the sequence trained on (DeepLearningExamples' phase 1; at most the 512 positions)
};
[[nodiscard]] Workload bert(const BertConfig& config);

/// The sizes that tell GPT-2 models apart (the feed-forward width is 4 x hidden in all of them); GPT-3's shapes add
/// their context, head count and the defaults below (Brown et al. 2020, Table 2.1).
struct Gpt2Config {
    int layers = 0;
    std::int64_t hidden = 0;
    std::int64_t heads = 0;       ///< 0: hidden / 64
    std::int64_t ffn_hidden = 0;  ///< 0: 4 x hidden
    std::int64_t seq_len = 1024;  ///< n_positions (the learned position table)
    std::int64_t train_seq = 0;   ///< the sequence trained on, at most seq_len (0: seq_len)
    std::int64_t vocab = 50257;
    AttentionKernel attention = AttentionKernel::eager;  ///< GPT-2 and GPT-3 as HuggingFace's eager code runs them
};
[[nodiscard]] Workload gpt2(const Gpt2Config& config);
/// LlamaForCausalLM of the given shape (models/workload.hpp, TransformerConfig).
[[nodiscard]] Workload llama(const TransformerConfig& config);

}  // namespace ddlsim::models::catalog_detail
