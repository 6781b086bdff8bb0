// Several sites (datacenters) of a two_tier joined by a WAN (network.sites, wan_bandwidth, wan_latency): the
// hierarchical all-reduce across two sites derived by hand, the WAN's bandwidth term halved by doubling it, and the
// refusals of the keys where they do not apply.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include <string>

#include "tests/support/scenario_harness.hpp"
#include "tests/support/support.hpp"

using namespace ddlsim;
using nlohmann::json;
using testing::refused_at;

namespace {

constexpr double kS = 100e6;          // gradient bytes per worker
constexpr double kWanLatency = 0.03;  // s

// Two sites of one DGX H100 node each, ideal transport, a bare all-reduce of kS bytes (hierarchical).
json two_sites(const std::string& wan_bandwidth) {
    return {{"workers", 16},
            {"batch_size", 1},
            {"iterations", 2},
            {"model", testing::one_layer_model(kS)},
            {"device", {{"name", "H100"}, {"precision", "fp32"}}},
            {"network",
             {{"topology", "two_tier"},
              {"node", "dgx_h100"},
              {"sites", 2},
              {"wan_bandwidth", wan_bandwidth},
              {"wan_latency", "30ms"},
              {"transport", "ideal"}}},
            {"architecture", {{"kind", "allreduce"}, {"algorithm", "hierarchical"}}}};
}

}  // namespace

TEST_CASE("two sites: the hierarchical all-reduce pays the WAN latency twice and S / B_wan once") {
    // Rails of two GPUs cross the WAN: a ring all-reduce of S/8 among two is two steps of S/16 per GPU; the eight
    // rails share the site's WAN link, so each step moves S/2 through it: 2 (L_wan + S / (2 B)). The node's own
    // reduce-scatter and all-gather (S over NVLink at 450 GB/s, less) and the sub-microsecond links add at most
    // 2 S / 450 GB/s + 10 us.
    const double B = 10e9 / 8.0;
    const double t = testing::run_first_job(two_sites("10Gbps")).iteration_time_s;
    const double wan = 2.0 * kWanLatency + kS / B;
    CHECK(t >= wan);
    CHECK(t <= wan + 2.0 * kS / 450e9 + 10e-6);
    // Doubling the WAN halves its bandwidth term and keeps everything else.
    const double t2 = testing::run_first_job(two_sites("20Gbps")).iteration_time_s;
    CHECK(t - t2 == ddlsim::testing::approx(kS / (2.0 * B)).epsilon(1e-3));
}

TEST_CASE("sites and the WAN keys are refused where they do not apply") {
    json no_sites = two_sites("10Gbps");
    no_sites["network"].erase("sites");
    CHECK(refused_at(no_sites) == "$.network.wan_bandwidth");
    json no_latency = two_sites("10Gbps");
    no_latency["network"].erase("wan_latency");
    CHECK(refused_at(no_latency) == "$.network.wan_latency");
    json uneven = two_sites("10Gbps");
    uneven["network"]["num_nodes"] = 3;
    CHECK(refused_at(uneven) == "$.network.sites");
    json star = testing::star_scenario({});
    star["network"]["sites"] = 2;
    CHECK(refused_at(star) == "$.network.sites");
    // Without num_nodes the nodes round up to a multiple of the sites: 8 workers on two sites of one node each.
    json rounded = two_sites("10Gbps");
    rounded["workers"] = 8;
    CHECK(refused_at(rounded) == "accepted");
}
