// Decoder-only transformers by their shape (models/workload.hpp): parameter counts by hand and against the papers,
// FLOPs, the scenario key, tokens/s and MFU.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "models/workload.hpp"
#include "scenarios/json_reader.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/support.hpp"

using namespace ddlsim;
using models::TransformerConfig;

namespace {

// Llama by hand: embedding V d + untied head V d + final norm d + per layer (q, o: d^2 each; k, v: d x d_kv each;
// gate, up, down: d f each; two RMSNorm scales of d).
double llama_params(const TransformerConfig& c) {
    const double d = static_cast<double>(c.hidden);
    const double kv = d / static_cast<double>(c.heads) * static_cast<double>(c.kv_heads > 0 ? c.kv_heads : c.heads);
    const double f = static_cast<double>(c.ffn_hidden > 0 ? c.ffn_hidden : models::llama_ffn_hidden(c.hidden));
    return 2.0 * static_cast<double>(c.vocab) * d + d + c.layers * (2.0 * d * d + 2.0 * d * kv + 3.0 * d * f + 2.0 * d);
}

nlohmann::json scenario_of(const nlohmann::json& model, int workers, const char* device) {
    return testing::star_scenario({.workers = workers,
                                   .model = model,
                                   .batch_size = 1,
                                   .iterations = 2,
                                   .device = {{"name", device}, {"precision", "bf16"}},
                                   .bandwidth = "400Gbps",
                                   .latency = "2us"});
}

}  // namespace

TEST_CASE("transformer: Llama parameter counts follow the hand count for any shape") {
    for (const TransformerConfig& c :
         {TransformerConfig{.layers = 2, .hidden = 256, .heads = 4, .seq_len = 64, .vocab = 1000},
          TransformerConfig{.layers = 3,
          .hidden = 512,
          .heads = 8,
          .kv_heads = 2,
          .ffn_hidden = 1000,
          .seq_len = 32,
          .vocab = 777}}) {
        const auto w = models::transformer(c);
        CHECK(static_cast<double>(w.params()) == llama_params(c));
        CHECK(w.tokens_per_sample == c.seq_len);
    }
    // Llama's default MLP width: 2/3 of 4d rounded up to 256 (4096 -> 11008, as Llama 2 7B).
    CHECK(models::llama_ffn_hidden(4096) == 11008);
    CHECK(models::llama_ffn_hidden(5120) == 13824);
}

TEST_CASE("transformer: grouped-query attention removes 2 L d (d - d_kv) parameters") {
    TransformerConfig mha{.layers = 4, .hidden = 1024, .heads = 16, .seq_len = 128, .vocab = 5000};
    TransformerConfig gqa = mha;
    gqa.kv_heads = 4;  // d_kv = 4 x 64 = 256
    const double removed = 2.0 * 4 * 1024 * (1024 - 256);
    CHECK(static_cast<double>(models::transformer(mha).params() - models::transformer(gqa).params()) == removed);
}

TEST_CASE("transformer: the GPT-3 shapes give Brown et al.'s Table 2.1 totals (rounded there)") {
    const std::pair<const char*, double> published[] = {
        {"gpt3_1_3b", 1.3e9}, {"gpt3_2_7b", 2.7e9}, {"gpt3_6_7b", 6.7e9}, {"gpt3_13b", 13.0e9}, {"gpt3_175b", 175.0e9}};
    for (const auto& entry : published) {
        const char* name = entry.first;  // not a structured binding: clang 14 cannot capture those
        const double params = entry.second;
        CAPTURE(name);
        const auto w = models::builtin_workload(name);
        REQUIRE(w.has_value());
        CHECK(std::abs(static_cast<double>(w->params()) / params - 1.0) < 0.02);
    }
}

TEST_CASE("transformer: forward FLOPs are a third of the model FLOPs per token, per token") {
    // 6N + 12 L d s per token trains; the forward pass is 2N + 4 L d s of it (the matmuls and the two attention
    // matmuls), so fwd_flops per sample = seq x model_flops_per_token / 3.
    for (const char* name : {"llama2_7b", "llama3_8b", "gpt3_1_3b", "gpt2"}) {
        CAPTURE(name);
        const auto w = models::builtin_workload(name);
        REQUIRE(w.has_value());
        CHECK(w->fwd_flops() ==
              ddlsim::testing::approx(static_cast<double>(w->tokens_per_sample) * w->model_flops_per_token / 3.0)
                  .epsilon(1e-12));
    }
    // Llama 2 7B by hand: N = 6,738,415,616 - 32000 x 4096 (embedding) - (2 x 32 + 1) x 4096 (norms)
    // = 6,607,077,376; 6N + 12 x 32 x 4096 x 4096 = 46,084,915,200.
    CHECK(models::builtin_workload("llama2_7b")->model_flops_per_token == 46'084'915'200.0);
}

TEST_CASE("transformer: the scenario key builds the same model as the catalog and round-trips") {
    const nlohmann::json shape{{"layers", 32},        {"hidden", 4096},  {"heads", 32},    {"kv_heads", 8},
                               {"ffn_hidden", 14336}, {"seq_len", 8192}, {"vocab", 128256}};
    const auto sc = scenario::load_scenario(scenario_of({{"transformer", shape}}, 8, "H100"));
    const auto catalog = models::builtin_workload("llama3_8b");
    CHECK(sc.jobs[0].workload.params() == catalog->params());
    CHECK(sc.jobs[0].workload.fwd_flops() == catalog->fwd_flops());
    const auto resolved = scenario::resolved_scenario(sc);
    CHECK(resolved.at("model").at("transformer").at("kv_heads") == 8);
    CHECK(scenario::resolved_scenario(scenario::load_scenario(resolved)) == resolved);
    // Bad shapes name the key.
    auto bad = shape;
    bad["heads"] = 30;
    try {
        (void)scenario::load_scenario(scenario_of({{"transformer", bad}}, 8, "H100"));
        FAIL("accepted heads that do not divide hidden");
    } catch (const scenario::ScenarioError& e) {
        CHECK(e.path() == "$.model.transformer.heads");
    }
    bad = shape;
    bad["style"] = "gpt";
    CHECK_THROWS_AS((void)scenario::load_scenario(scenario_of({{"transformer", bad}}, 8, "H100")),
                    scenario::ScenarioError);  // kv_heads is Llama's
}

TEST_CASE("transformer: tokens/s and MFU from the throughput and the dense peak") {
    const auto sc = scenario::load_scenario(scenario_of("llama2_7b", 8, "H100"));
    const auto run = scenario::run_scenario(sc);
    const auto& j = run.jobs.at(0);
    const auto t = scenario::token_rates(sc.jobs[0], j);
    REQUIRE(t.has_value());
    CHECK(t->tokens_per_s == ddlsim::testing::approx(j.throughput_samples_per_s * 4096.0));
    // H100 SXM dense BF16: 989.5 TFLOPS (the profile's datasheet value) per GPU.
    CHECK(t->mfu == ddlsim::testing::approx(t->tokens_per_s * 46'084'915'200.0 / (8 * 989.5e12)).epsilon(1e-9));
    CHECK(t->mfu > 0.0);
    CHECK(t->mfu < 1.0);
    const auto out = scenario::result_json(sc, run);
    CHECK(out.contains("mfu"));
    CHECK(out.contains("tokens_per_s"));
    // Not a sequence model: no token rates.
    const auto cnn = scenario::load_scenario(scenario_of("resnet50", 2, "H100"));
    CHECK_FALSE(scenario::token_rates(cnn.jobs[0], scenario::run_scenario(cnn).jobs.at(0)).has_value());
}

TEST_CASE("transformer: TFLOP/s per GPU and hardware FLOPs utilisation, which counts the recomputed forwards") {
    nlohmann::json j = scenario_of("llama2_7b", 8, "H100");
    const auto rates = [](const nlohmann::json& scenario) {
        const auto sc = scenario::load_scenario(scenario);
        return *scenario::token_rates(sc.jobs[0], scenario::run_scenario(sc).jobs.at(0));
    };
    const auto none = rates(j);
    // The same model FLOPs per second, per GPU rather than over the peak: MFU x 989.5 TFLOPS.
    CHECK(none.tflops_per_gpu == ddlsim::testing::approx(none.mfu * 989.5).epsilon(1e-9));
    CHECK(none.hfu == none.mfu);  // nothing recomputed
    // Full recomputation runs every block's forward again: of the 3F a step's model FLOPs are, the blocks' F again,
    // nearly all of F (the embedding's lookup and the head are not recomputed): HFU / MFU just under 4/3 (Korthikanti
    // et al., arXiv 2205.05198, §6: 8N / 6N).
    j["activation_checkpointing"] = "full";
    const auto full = rates(j);
    CHECK(full.hfu / full.mfu <= 4.0 / 3.0);
    CHECK(full.hfu / full.mfu > 1.28);
    // Selective recomputation reruns attention's core only: more than nothing, far less than the blocks.
    j["activation_checkpointing"] = "selective";
    const auto selective = rates(j);
    CHECK(selective.hfu > selective.mfu);
    CHECK(selective.hfu / selective.mfu - 1.0 < 0.5 * (full.hfu / full.mfu - 1.0));
}

TEST_CASE("transformer: seq_len of a built-in model changes its sequence, not its parameters") {
    // GPT-2 keeps its 1024-position table; per token the model FLOPs are 6N + 12 L d s (PaLM, Appendix B).
    const auto full = *models::builtin_workload("gpt2");
    const auto half = *models::builtin_workload("gpt2", 512);
    CHECK(half.params() == full.params());
    CHECK(full.model_flops_per_token - half.model_flops_per_token == ddlsim::testing::approx(12.0 * 12 * 768 * 512));
    const auto bert = *models::builtin_workload("bert_large", 512);
    CHECK(bert.params() == models::builtin_workload("bert_large")->params());
    CHECK(bert.fwd_flops() > 4.0 * models::builtin_workload("bert_large")->fwd_flops());
    CHECK(models::builtin_max_seq_len("resnet50") == 0);
    CHECK(models::builtin_max_seq_len("gpt3_175b") == 2048);
    CHECK(models::builtin_max_seq_len("llama3_8b") == -1);
    // Through the loader: echoed, bounded by the position table, refused for CNNs.
    nlohmann::json j = testing::star_scenario({.workers = 1,
                                               .model = {{"name", "gpt2"}, {"seq_len", 256}},
                                               .batch_size = 1,
                                               .device = "A100",
                                               .latency = "1us"});
    CHECK(scenario::resolved_scenario(scenario::load_scenario(j))["model"]["seq_len"] == 256);
    for (const auto& bad : std::vector<std::pair<std::string, int>>{{"gpt2", 2048}, {"resnet50", 128}}) {
        nlohmann::json k = j;
        k["model"] = {{"name", bad.first}, {"seq_len", bad.second}};
        CHECK_THROWS_AS((void)scenario::load_scenario(k), scenario::ScenarioError);
    }
}
