// worker_devices and the scenario's precision: a built-in part named without a precision of its own runs at the mixed
// precision the scenario gave `device` (AMP is the job's choice). Oracle: a metamorphic relation — the
// same four H100s, given once as `device` and once listed by name, are the same job — and the device table (a part
// without the precision is refused at its own entry).
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/scenario_harness.hpp"
#include "tests/support/support.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

json h100s(const std::string& precision) {
    json j = testing::star_scenario({.workers = 4, .batch_size = 32, .iterations = 2, .bandwidth = "100Gbps"});
    j["device"] = {{"name", "H100"}, {"precision", precision}};
    return j;
}

double iteration(const json& j) {
    return scenario::run_scenario(scenario::load_scenario(j)).jobs.at(0).iteration_time_s;
}

}  // namespace

TEST_CASE("worker_devices: a part named without a precision takes the scenario's, as `device` does") {
    const json plain = h100s("bf16");
    json listed = plain;
    listed["worker_devices"] = {"H100", "H100", "H100", "H100"};
    // The same job: before, the listed H100s computed in FP32 matmuls, many times slower, with exit 0.
    CHECK(iteration(listed) == testing::approx(iteration(plain)).epsilon(1e-12));
    json as_objects = plain;
    as_objects["worker_devices"] = json::array();
    for (int i = 0; i < 4; ++i) as_objects["worker_devices"].push_back({{"name", "H100"}});
    CHECK(iteration(as_objects) == testing::approx(iteration(plain)).epsilon(1e-12));
    // A precision of its own wins: FP32 H100s are slower than the bf16 job (0.040 s against 0.027 s here).
    json own = plain;
    own["worker_devices"] = json::array();
    for (int i = 0; i < 4; ++i) own["worker_devices"].push_back({{"name", "H100"}, {"precision", "fp32"}});
    CHECK(iteration(own) > 1.2 * iteration(plain));
    // A part without the scenario's precision is refused at its own entry, not run at another.
    json mixed = plain;
    mixed["worker_devices"] = {"H100", "H100", "V100", "V100"};
    CHECK(testing::refused_at(mixed) == "$.worker_devices[2].precision");
    // Without a precision in the scenario, each part keeps its own default (V100: fp32, H100: TF32 convolutions).
    json defaults = testing::star_scenario({.workers = 4, .batch_size = 32, .iterations = 2});
    defaults["device"] = "H100";
    defaults["worker_devices"] = {"H100", "H100", "V100", "V100"};
    CHECK(testing::refused_at(defaults) == "accepted");
}
