// The built-in workload catalog against published facts: exact parameter and tensor counts (torchvision /
// HuggingFace), forward FLOPs per sample within a stated tolerance, and a few structural checks derived by hand.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <string>

#include "models/workload.hpp"

using ddlsim::models::builtin_workload;
using ddlsim::models::builtin_workload_names;
using ddlsim::models::Layer;
using ddlsim::models::Tensor;
using ddlsim::models::Workload;

namespace {

struct Published {
    const char* name;
    std::int64_t params;
    std::size_t tensors;
    double gflops;     ///< forward GFLOPs per sample (2 x MACs)
    double tolerance;  ///< relative
};

// GPT-2 has no single published FLOP figure; the usual estimate for a sequence of n tokens is 2 x params x n (every
// parameter in one multiply-add per token, the tied LM head counted through wte) plus the attention matmuls,
// 2 x 2 x n^2 x hidden per layer. The estimate also counts wpe, biases and LayerNorms as matmul weights, which our
// exact count does not: that is 0.6% of GPT-2 small and less for the larger ones, hence a 1% tolerance.
constexpr double gpt2_estimate_gflops(std::int64_t params, int layers, std::int64_t hidden, double tokens = 1024.0) {
    return (2.0 * static_cast<double>(params) * tokens + 4.0 * layers * tokens * tokens * static_cast<double>(hidden)) /
           1e9;
}

// Llama: the embedding table does no matmul but the untied LM head does, so 2 x (params - vocab x hidden) per token
// plus the attention matmuls (the RMSNorm scales, 0.003% of the parameters, are counted as matmul weights here).
constexpr double llama_estimate_gflops(std::int64_t params, int layers, std::int64_t hidden, std::int64_t vocab,
                                       double tokens) {
    return (2.0 * static_cast<double>(params - vocab * hidden) * tokens +
            4.0 * layers * tokens * tokens * static_cast<double>(hidden)) /
           1e9;
}

// Parameter and tensor counts are exact (sum(p.numel()) and len(list(model.parameters())) of the reference models).
// The CNN FLOP figures are torchvision's published GMACs x 2 (0.71, 15.47, 4.09, 7.80, 5.71) and the BERT ones the
// usual 2 x MACs at sequence 128; all are rounded to 3 significant digits, so 2% allows for rounding and for counters
// that differ on small terms (Inception's aux head is 0.1%), while a missing or extra block (a ResNet-101 layer3
// block is 2.8%, a BERT layer 4-8%) still fails.
// Llama parameter counts are exact: the sums over the released checkpoints' tensors (HuggingFace model cards list
// 6.74B, 13.0B, 69.0B, 8.03B, 70.6B, 406B), and equal the hand count V d (embedding) + V d (LM head) + d (final norm) +
// L (2 d^2 + 2 d d_kv + 3 d f + 2 d). GPT-3's are the shapes of Brown et al. Table 2.1 (checked against its rounded
// totals in test_transformer.cpp); tensors 4 + 12 L as GPT-2.
// Mixture of experts: 2 x the active parameters a token runs, less the embedding's lookup, per token plus the
// attention matmuls over an attention width `a` (the mean of the query-key and value widths over the heads).
constexpr double moe_estimate_gflops(double active, int layers, std::int64_t hidden, std::int64_t vocab, std::int64_t a,
                                     double tokens) {
    return (2.0 * (active - static_cast<double>(vocab * hidden)) * tokens +
            4.0 * layers * tokens * tokens * static_cast<double>(a)) /
           1e9;
}

constexpr std::array<Published, 25> k_published{{
    {"alexnet", 61'100'840, 16, 1.43, 0.02},
    {"vgg16", 138'357'544, 32, 30.9, 0.02},
    {"resnet50", 25'557'032, 161, 8.18, 0.02},
    {"resnet101", 44'549'160, 314, 15.6, 0.02},
    {"inception_v3", 27'161'264, 292, 11.4, 0.02},
    {"bert_base", 109'482'240, 199, 22.3, 0.02},
    {"bert_large", 335'141'888, 391, 78.9, 0.02},
    {"gpt2", 124'439'808, 148, gpt2_estimate_gflops(124'439'808, 12, 768), 0.01},
    {"gpt2_medium", 354'823'168, 292, gpt2_estimate_gflops(354'823'168, 24, 1024), 0.01},
    {"gpt2_large", 774'030'080, 436, gpt2_estimate_gflops(774'030'080, 36, 1280), 0.01},
    {"gpt2_xl", 1'557'611'200, 580, gpt2_estimate_gflops(1'557'611'200, 48, 1600), 0.01},
    {"gpt3_1_3b", 1'315'723'264, 292, gpt2_estimate_gflops(1'315'723'264, 24, 2048, 2048.0), 0.01},
    {"gpt3_2_7b", 2'651'553'280, 388, gpt2_estimate_gflops(2'651'553'280, 32, 2560, 2048.0), 0.01},
    {"gpt3_6_7b", 6'658'404'352, 388, gpt2_estimate_gflops(6'658'404'352, 32, 4096, 2048.0), 0.01},
    {"gpt3_13b", 12'952'938'780, 484, gpt2_estimate_gflops(12'952'938'780, 40, 5140, 2048.0), 0.01},
    {"gpt3_175b", 174'604'259'328, 1156, gpt2_estimate_gflops(174'604'259'328, 96, 12288, 2048.0), 0.01},
    {"llama2_7b", 6'738'415'616, 291, llama_estimate_gflops(6'738'415'616, 32, 4096, 32000, 4096.0), 0.01},
    {"llama2_13b", 13'015'864'320, 363, llama_estimate_gflops(13'015'864'320, 40, 5120, 32000, 4096.0), 0.01},
    {"llama2_70b", 68'976'648'192, 723, llama_estimate_gflops(68'976'648'192, 80, 8192, 32000, 4096.0), 0.01},
    {"llama3_8b", 8'030'261'248, 291, llama_estimate_gflops(8'030'261'248, 32, 4096, 128256, 8192.0), 0.01},
    {"llama3_70b", 70'553'706'496, 723, llama_estimate_gflops(70'553'706'496, 80, 8192, 128256, 8192.0), 0.01},
    {"llama3_405b", 405'853'388'800, 1137, llama_estimate_gflops(405'853'388'800, 126, 16384, 128256, 8192.0), 0.01},
    // Mixture-of-experts models: the parameters of the shapes their papers give (tests/models/test_expert_parallel.cpp
    // checks them against the papers' totals), the FLOPs from the papers' active parameters.
    {"mixtral_8x7b", 46'702'792'704, 323, moe_estimate_gflops(12.9e9, 32, 4096, 32000, 4096, 4096.0), 0.02},
    {"deepseek_v3", 671'026'404'352, 967, moe_estimate_gflops(37e9, 61, 7168, 129280, 128 * 160, 4096.0), 0.02},
    {"qwen3_30b_a3b", 30'532'122'624, 579, moe_estimate_gflops(3.3e9, 48, 2048, 151936, 32 * 128, 4096.0), 0.02},
}};

Workload load(const char* name) {
    const auto workload = builtin_workload(name);
    REQUIRE(workload.has_value());
    return *workload;
}

const Layer* find_layer(const Workload& workload, const std::string& name) {
    const auto it = std::find_if(workload.layers.begin(), workload.layers.end(),
                                 [&](const Layer& layer) { return layer.name == name; });
    return it == workload.layers.end() ? nullptr : &*it;
}

std::ptrdiff_t layer_index(const Workload& workload, const std::string& name) {
    const Layer* layer = find_layer(workload, name);
    REQUIRE(layer != nullptr);
    return layer - workload.layers.data();
}

}  // namespace

TEST_CASE("catalog: names in catalog order, unknown names give nothing") {
    std::vector<std::string> expected;
    for (const Published& model : k_published) expected.emplace_back(model.name);
    CHECK(builtin_workload_names() == expected);
    CHECK_FALSE(builtin_workload("nope").has_value());
    CHECK_FALSE(builtin_workload("").has_value());
}

TEST_CASE("catalog: every model matches its published parameters, tensors and forward FLOPs") {
    for (const Published& model : k_published) {
        INFO("model: " << model.name);
        const Workload workload = load(model.name);
        CHECK(workload.name == model.name);
        CHECK_FALSE(workload.input.empty());
        CHECK(workload.params() == model.params);
        CHECK(workload.tensor_count() == model.tensors);
        CHECK(workload.fwd_flops() / 1e9 == ddlsim::testing::approx(model.gflops).epsilon(model.tolerance));
    }
}

TEST_CASE("catalog: layers are well formed") {
    for (const std::string& name : builtin_workload_names()) {
        INFO("model: " << name);
        const Workload workload = load(name.c_str());
        REQUIRE_FALSE(workload.layers.empty());
        std::set<std::string> layer_names;
        std::set<std::string> tensor_names;
        for (const Layer& layer : workload.layers) {
            INFO("layer: " << layer.name);
            CHECK(layer_names.insert(layer.name).second);
            CHECK_FALSE(layer.tensors.empty());
            CHECK(layer.fwd_flops >= 0.0);
            CHECK_FALSE(layer.fwd_time.has_value());
            CHECK_FALSE(layer.bwd_time.has_value());
            CHECK_FALSE(layer.update_time.has_value());
            for (const Tensor& tensor : layer.tensors) {
                CHECK(tensor.params > 0);
                CHECK(tensor_names.insert(tensor.name).second);
            }
        }
    }
}

TEST_CASE("catalog: resnet50 structure") {
    const Workload workload = load("resnet50");
    // conv1 + 16 bottlenecks x 3 convs + 4 downsample projections + fc, each conv with its BatchNorm.
    CHECK(workload.layers.size() == 1 + 16 * 3 + 4 + 1);
    // The classifier is last: a 2048 -> 1000 linear layer.
    const Layer& fc = workload.layers.back();
    CHECK(fc.name == "fc");
    CHECK(fc.params() == 2048 * 1000 + 1000);
    // v1.5: layer2.0.conv2 is the 3x3 with stride 2, 128 -> 128 channels, output 28x28.
    const Layer* conv2 = find_layer(workload, "layer2.0.conv2");
    REQUIRE(conv2 != nullptr);
    CHECK(conv2->tensors.front().name == "layer2.0.conv2.weight");
    CHECK(conv2->params() == 128 * 128 * 9 + 2 * 128);
    CHECK(conv2->fwd_flops == ddlsim::testing::approx(2.0 * 128 * 128 * 9 * 28 * 28));
}

TEST_CASE("catalog: alexnet and vgg16 hold most parameters in their fully connected layers") {
    // AlexNet: 9216 -> 4096 -> 4096 -> 1000, i.e. 37,752,832 + 16,781,312 + 4,097,000 = 58,631,144 of 61.1M (96%).
    const Workload alexnet = load("alexnet");
    const auto classifier_params = [](const Workload& workload) {
        std::int64_t total = 0;
        for (const Layer& layer : workload.layers) {
            if (layer.name.starts_with("classifier.")) total += layer.params();
        }
        return total;
    };
    CHECK(classifier_params(alexnet) == 58'631'144);
    CHECK(alexnet.layers.back().name == "classifier.6");
    // VGG-16: 25088 -> 4096 -> 4096 -> 1000, i.e. 102,764,544 + 16,781,312 + 4,097,000 = 123,642,856 of 138.4M (89%).
    const Workload vgg = load("vgg16");
    CHECK(classifier_params(vgg) == 123'642'856);
    CHECK(find_layer(vgg, "features.28") != nullptr);  // the 13th conv, in torchvision's Sequential numbering
}

TEST_CASE("catalog: inception_v3 runs its aux head between Mixed_6e and Mixed_7a") {
    const Workload workload = load("inception_v3");
    const auto aux_fc = layer_index(workload, "AuxLogits.fc");
    CHECK(layer_index(workload, "Mixed_6e.branch_pool") < layer_index(workload, "AuxLogits.conv0"));
    CHECK(aux_fc < layer_index(workload, "Mixed_7a.branch3x3_1"));
    CHECK(workload.layers[static_cast<std::size_t>(aux_fc)].params() == 768 * 1000 + 1000);
    // Without the aux head (conv0 768*128 + 2*128, conv1 128*768*25 + 2*768, fc above): torchvision's 23,834,568.
    std::int64_t aux_params = 0;
    for (const Layer& layer : workload.layers) {
        if (layer.name.starts_with("AuxLogits.")) aux_params += layer.params();
    }
    CHECK(workload.params() - aux_params == 23'834'568);
}

TEST_CASE("catalog: bert_base starts with its embeddings and ends with the pooler") {
    const Workload workload = load("bert_base");
    const Layer& embeddings = workload.layers.front();
    CHECK(embeddings.name == "embeddings");
    CHECK(embeddings.tensors.front().name == "embeddings.word_embeddings.weight");
    CHECK(embeddings.tensors.front().params == 30522 * 768);
    CHECK(embeddings.fwd_flops == 0.0);
    // embeddings + 12 x (attention.self, attention.output, intermediate, output) + pooler.
    CHECK(workload.layers.size() == 1 + 12 * 4 + 1);
    CHECK(workload.layers.back().name == "pooler");
    CHECK(workload.layers.back().params() == 768 * 768 + 768);
    // Self-attention at sequence 128: Q, K, V projections (3 x 128 x 768^2 MACs) and two 128 x 128 x 768 matmuls.
    const Layer* attention = find_layer(workload, "encoder.layer.5.attention.self");
    REQUIRE(attention != nullptr);
    CHECK(attention->fwd_flops == ddlsim::testing::approx(2.0 * (3.0 * 128 * 768 * 768 + 2.0 * 128 * 128 * 768)));
}

TEST_CASE("catalog: gpt2 ties its LM head to wte and charges the head's matmul to the last layer") {
    const Workload workload = load("gpt2");
    CHECK(workload.layers.front().tensors.front().name == "transformer.wte.weight");
    CHECK(workload.layers.front().params() == 50257 * 768);
    // No lm_head tensor anywhere: only ln_f's weight and bias in the last layer, which carries 1024 x 768 x 50257 MACs.
    const Layer& head = workload.layers.back();
    CHECK(head.params() == 2 * 768);
    CHECK(head.fwd_flops == ddlsim::testing::approx(2.0 * 1024 * 768 * 50257));
    for (const Layer& layer : workload.layers) {
        for (const Tensor& tensor : layer.tensors) CHECK(tensor.name.find("lm_head") == std::string::npos);
    }
}
