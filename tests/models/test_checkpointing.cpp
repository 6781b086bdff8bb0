// Activation checkpointing (`activation_checkpointing`: "full", "selective"): the recomputed forward in backward and
// the activations kept, against hand-derived figures and Korthikanti et al.'s formula.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/support.hpp"

using nlohmann::json;
using namespace ddlsim;

namespace {

json llama(int layers, const char* ac) {
    json j = testing::star_scenario(
        {.workers = 1,
         .model = {{"transformer",
                    {{"layers", layers}, {"hidden", 1024}, {"heads", 8}, {"seq_len", 2048}, {"vocab", 32000}}},
                   {"dtype", "bf16"}},
         .batch_size = 2,
         .iterations = 2,
         .device = {{"name", "H100"}, {"precision", "bf16"}},
         .bandwidth = "100Gbps",
         .latency = "2us"});
    j["activation_checkpointing"] = ac;
    return j;
}

}  // namespace

TEST_CASE("checkpointing: backward recomputes the blocks' forward, the embeddings and head are not recomputed") {
    const auto plain = scenario::run_scenario(scenario::load_scenario(llama(4, "none"))).jobs.at(0);
    const auto full = scenario::run_scenario(scenario::load_scenario(llama(4, "full"))).jobs.at(0);
    const auto sc = scenario::load_scenario(llama(4, "none"));
    // Forward unchanged; backward grows by the forward of the layers inside blocks (all but embeddings and head).
    CHECK(full.forward_time_s == plain.forward_time_s);
    CHECK(full.backward_time_s > plain.backward_time_s);
    CHECK(full.backward_time_s < plain.backward_time_s + plain.forward_time_s);
    CHECK(
        full.iteration_time_s ==
        ddlsim::testing::approx(plain.iteration_time_s + (full.backward_time_s - plain.backward_time_s)).epsilon(1e-9));
    // A model without blocks recomputes every layer: backward + forward exactly.
    json custom = llama(1, "full");
    custom["model"] = {
        {"layers", json::array({{{"name", "a"}, {"params", 1000}, {"fwd_time", "3ms"}, {"bwd_time", "5ms"}},
                                {{"name", "b"}, {"params", 1000}, {"fwd_time", "2ms"}, {"bwd_time", "4ms"}}})}};
    const auto c = scenario::run_scenario(scenario::load_scenario(custom)).jobs.at(0);
    CHECK(c.backward_time_s == ddlsim::testing::approx(0.009 + 0.005).epsilon(1e-12));
}

TEST_CASE("checkpointing: each further block keeps only its input, 2sbh bytes in 16-bit") {
    // Korthikanti et al., arXiv 2205.05198, section 4: with full recomputation a layer stores only its input, s b h
    // elements (2 s b h bytes in 16-bit). Adding one identical block adds exactly that.
    const double s = 2048, b = 2, h = 1024;
    auto acts = [](int layers, const char* ac) {
        return scenario::job_memory(scenario::load_scenario(llama(layers, ac)).jobs.at(0)).activations;
    };
    CHECK(acts(5, "full") - acts(4, "full") == ddlsim::testing::approx(2.0 * s * b * h).epsilon(1e-12));
    CHECK(acts(9, "full") - acts(4, "full") == ddlsim::testing::approx(5 * 2.0 * s * b * h).epsilon(1e-12));
    // Without checkpointing a block keeps far more (its attention and MLP activations).
    CHECK(acts(5, "none") - acts(4, "none") > 10.0 * 2.0 * s * b * h);
    CHECK(acts(8, "full") < acts(8, "none"));
}

TEST_CASE("checkpointing: selective recomputation keeps no attention scores and reruns attention's core") {
    // Korthikanti et al., arXiv 2205.05198, Table 2 / eq. 6: GPT-3 175B (h 12288, a 96, s 2048) with t = 8 and
    // sequence parallelism keeps s b h / t (34 + 5 a s / h) bytes per block and micro-batch; selective recomputation
    // drops the 5 a s / h term (the s x s scores, softmax, dropout). 1F1B's first of p = 8 stages keeps p micro-batches
    // of its 96 / 8 blocks.
    const double s = 2048, h = 12288, a = 96, t = 8, blocks = 12, in_flight = 8;
    auto scen = [&](const char* ac, int seq) {
        json j = {{"workers", 64},
                  {"model", {{"name", "gpt3_175b"}, {"dtype", "bf16"}, {"seq_len", seq}}},
                  {"batch_size", 1},
                  {"gradient_accumulation", 8},
                  {"activation_checkpointing", ac},
                  {"optimizer", "adamw"},
                  {"device", {{"name", "H100"}, {"precision", "bf16"}}},
                  {"network", {{"topology", "rail_optimized"}, {"node", "dgx_h100"}}},
                  {"parallelism", {{"tensor", 8}, {"sequence_parallel", true}, {"pipeline", 8}}}};
        return scenario::load_scenario(j);
    };
    auto acts = [&](const char* ac, int seq = 2048) {
        return scenario::job_memory(scen(ac, seq).jobs.at(0)).activations;
    };
    const double sbh_t = s * h / t * blocks * in_flight;
    const double korthikanti = sbh_t * (34.0 + 5.0 * a * s / h), scores = sbh_t * 5.0 * a * s / h;
    // Without recomputation: the formula to 5 % (the embedding's and the model's own kernel-level count aside).
    CHECK(acts("none") == ddlsim::testing::approx(korthikanti).epsilon(0.05));
    // Selective drops the scores: 4 of the formula's 5 a s / h bytes here (this model counts the softmax's output and
    // the scores' reads by the GEMMs; the dropout mask's byte per score is not counted), and keeps no s^2 term, so a
    // sequence twice as long keeps exactly twice the activations, where without recomputation it keeps more.
    CHECK(acts("none") - acts("selective") == ddlsim::testing::approx(0.8 * scores).epsilon(0.01));
    CHECK(acts("selective") == ddlsim::testing::approx(2.0 * acts("selective", 1024)).epsilon(1e-9));
    CHECK(acts("none") > 2.2 * acts("none", 1024));
    CHECK(acts("full") < acts("selective"));
    // Compute: selective reruns attention's core only, far less than full's whole forward.
    auto step = [&](const char* ac) { return scenario::run_scenario(scen(ac, 2048)).jobs.at(0).iteration_time_s; };
    const double none = step("none"), selective = step("selective"), full = step("full");
    CHECK(none < selective);
    CHECK(selective - none < 0.25 * (full - none));
}

TEST_CASE("checkpointing: bad values are refused at their key") {
    json cnn = testing::star_scenario({.workers = 1, .model = "resnet50", .batch_size = 2});
    cnn["activation_checkpointing"] = "selective";  // no attention to recompute
    try {
        (void)scenario::load_scenario(cnn);
        FAIL("accepted");
    } catch (const scenario::ScenarioError& e) {
        CHECK(e.path() == "$.activation_checkpointing");
    }
    json j = llama(2, "partial");
    try {
        (void)scenario::load_scenario(j);
        FAIL("accepted");
    } catch (const scenario::ScenarioError& e) {
        CHECK(e.path() == "$.activation_checkpointing");
    }
}
