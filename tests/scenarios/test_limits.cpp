// Inputs whose magnitudes the simulator cannot represent are bad input (exit 2),
// never an overflow, a hang or an internal error.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/support.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {
json base() {
    return testing::star_scenario({.workers = 2,
                                   .model = "gpt2_xl",
                                   .batch_size = 100,
                                   .bandwidth = "1Gbps",
                                   .latency = "1ms",
                                   .transport = "ideal"});
}
std::string error_path(const json& j) {
    try {
        (void)scenario::run_scenario(scenario::load_scenario(j));
    } catch (const scenario::ScenarioError& e) {
        return e.path();
    }
    return "no error";
}
}  // namespace

TEST_CASE("limits: an iteration that computes for more than 1e6 s is refused") {
    json j = base();
    j["batch_size"] = 100'000'000;
    j["device"] = {{"name", "P100"}, {"efficiency", 0.01}};
    CHECK(error_path(j) == "$.device");
}

TEST_CASE("limits: simulated time past the picosecond range is refused, not wrapped") {
    // 2 workers of GPT-2 XL at 1 bps: one ring step of 3.1 GB takes 2.5e10 s, so the bandwidth is to blame.
    json j = base();
    j["network"]["bandwidth"] = "1bps";
    CHECK(error_path(j) == "$.network.bandwidth");
    // At 1 Mbit/s one iteration takes about 2.5e4 s: fine alone, so the iterations are what overflows.
    j["network"]["bandwidth"] = "1Mbps";
    j["iterations"] = 1000;
    j["network"]["model"] = "analytic";
    CHECK(error_path(j) == "$.iterations");
    // Two sites: a WAN of a year's latency, or of 1 bit/s, is what overflows, named by its own key.
    json sites = base();
    sites["network"] = {{"topology", "two_tier"},
                        {"node", "dgx_h100"},
                        {"sites", 2},
                        {"wan_bandwidth", "10Gbps"},
                        {"wan_latency", "1e8s"}};
    sites["workers"] = 16;
    CHECK(error_path(sites) == "$.network.wan_latency");
    sites["network"]["wan_latency"] = "30ms";
    sites["network"]["wan_bandwidth"] = "1bps";
    CHECK(error_path(sites) == "$.network.wan_bandwidth");
}

TEST_CASE("limits: flow runs beyond the event budget are refused up front, analytic ones run") {
    json j = base();
    j["workers"] = 64;
    j["iterations"] = 1'000'000;
    CHECK(error_path(j) == "$.iterations");
    j["network"]["model"] = "analytic";
    j["iterations"] = 1000;
    CHECK(error_path(j) == "no error");
}

TEST_CASE("limits: the analytic model handles 100,000 workers (ring, closed form)") {
    // Comm-only ring of S = 100 MB on a 10 Gbit/s star with 5 us links: 2(n-1)(2L + S/(nB)).
    const double n = 100'000, S = 100e6, B = 1.25e9, L = 5e-6;
    const json j = testing::star_scenario({.workers = 100'000,
                                           .model = testing::one_layer_model(S),
                                           .batch_size = 1,
                                           .iterations = 1,
                                           .network_model = "analytic",
                                           .transport = "ideal"});
    const auto r = scenario::run_scenario(scenario::load_scenario(j));
    CHECK(r.jobs[0].iteration_time_s == ddlsim::testing::approx(2 * (n - 1) * (2 * L + S / (n * B))).epsilon(1e-9));
    CHECK(r.events == 0);
}
