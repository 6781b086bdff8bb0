// Full activation checkpointing (`activation_checkpointing`: "full"): the recomputed forward in backward and the
// activations kept, against hand-derived figures.
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

TEST_CASE("checkpointing: bad values are refused at their key") {
    json j = llama(2, "selective");
    try {
        (void)scenario::load_scenario(j);
        FAIL("accepted");
    } catch (const scenario::ScenarioError& e) {
        CHECK(e.path() == "$.activation_checkpointing");
    }
}
