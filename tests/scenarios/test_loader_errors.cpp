// Bad scenarios, one class of defect per test case: every error is a ScenarioError naming the exact JSON path of the
// offending key and, in its message, how to fix it (docs/CONTRACT.md §1: "names the file, the JSON path of the
// offending key and what was expected"; §2: "unknown keys are errors"). Each case starts from a valid small star
// ring scenario and changes one thing, so the error can only come from that change.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/support.hpp"

using ddlsim::scenario::apply_override;
using ddlsim::scenario::load_scenario;
using ddlsim::scenario::parse_strict;
using ddlsim::scenario::ScenarioError;
using nlohmann::json;
namespace testing = ddlsim::testing;

namespace {

// 4 ResNet-50 workers on a 10 Gbit/s star, ring all-reduce, BSP: hosts h0 .. h3.
json base() {
    json j = testing::star_scenario({.iterations = 2, .architecture = testing::ring_allreduce()});
    j["sync"] = {{"kind", "bsp"}};
    return j;
}

// The base scenario on an explicit star: switch "sw" and hosts h0 .. h3, one link each.
json custom_base() {
    json j = base();
    j["network"] = json::parse(R"({
        "topology": "custom",
        "nodes": [{"name": "sw", "kind": "switch"}, {"name": "h0", "kind": "host"}, {"name": "h1", "kind": "host"},
                  {"name": "h2", "kind": "host"}, {"name": "h3", "kind": "host"}],
        "links": [{"from": "h0", "to": "sw", "bandwidth": "10Gbps", "latency": "1us"},
                  {"from": "h1", "to": "sw", "bandwidth": "10Gbps", "latency": "1us"},
                  {"from": "h2", "to": "sw", "bandwidth": "10Gbps", "latency": "1us"},
                  {"from": "h3", "to": "sw", "bandwidth": "10Gbps", "latency": "1us"}]
    })");
    return j;
}

json with(json j, const json::json_pointer& at, json value) {
    j[at] = std::move(value);
    return j;
}

json without(json j, const json::json_pointer& at) {
    j[at.parent_pointer()].erase(at.back());
    return j;
}

json from_text(const char* s) {
    return json::parse(s);
}

// Checks a caught error: exactly `path`, and every one of `words` in the message.
void check_error(const ScenarioError& e, const std::string& path, std::initializer_list<std::string_view> words) {
    const std::string message = e.what();
    INFO("error: " << e.path() << ": " << message);
    CHECK(e.path() == path);
    for (const std::string_view w : words)
        CHECK_MESSAGE(message.find(w) != std::string::npos, "message lacks \"" << w << "\"");
}

// Loads `j` and checks that it fails with a ScenarioError at exactly `path` whose message holds every one of `words`.
template <typename... Words>
void expect_error(const json& j, const std::string& path, const Words&... words) {
    const std::string scenario = j.dump();
    INFO("scenario: " << scenario);
    try {
        (void)load_scenario(j);
        FAIL_CHECK("loaded without error; expected a ScenarioError at " << path);
    } catch (const ScenarioError& e) {
        check_error(e, path, {std::string_view(words)...});
    } catch (const std::exception& e) {
        FAIL_CHECK("threw a non-ScenarioError (would be an internal error, exit 1): " << std::string(e.what()));
    }
}

// Parses `text` strictly and checks the ScenarioError the same way.
template <typename... Words>
void expect_parse_error(std::string_view text, const std::string& path, const Words&... words) {
    INFO("text: " << text);
    try {
        (void)parse_strict(text);
        FAIL_CHECK("parsed without error; expected a ScenarioError at " << path);
    } catch (const ScenarioError& e) {
        check_error(e, path, {std::string_view(words)...});
    } catch (const std::exception& e) {
        FAIL_CHECK("threw a non-ScenarioError: " << std::string(e.what()));
    }
}

// Applies one --set assignment and checks the ScenarioError the same way.
template <typename... Words>
void expect_override_error(json j, const std::string& assignment, const std::string& path, const Words&... words) {
    INFO("--set " << assignment);
    try {
        apply_override(j, assignment);
        FAIL_CHECK("applied without error; expected a ScenarioError at " << path);
    } catch (const ScenarioError& e) {
        check_error(e, path, {std::string_view(words)...});
    } catch (const std::exception& e) {
        FAIL_CHECK("threw a non-ScenarioError: " << std::string(e.what()));
    }
}

using P = json::json_pointer;

}  // namespace

TEST_CASE("loader: the base scenarios are valid, so every defect below is the only one") {
    const auto s = load_scenario(base());
    CHECK(s.jobs.front().workers == 4);
    CHECK(s.jobs.front().placement == std::vector<std::string>{"h0", "h1", "h2", "h3"});
    REQUIRE(std::holds_alternative<ddlsim::topo::StarSpec>(s.topology));
    CHECK(std::get<ddlsim::topo::StarSpec>(s.topology).bandwidth.bits_per_s() == ddlsim::testing::approx(10e9));
    const auto c = load_scenario(custom_base());
    CHECK(c.jobs.front().placement == std::vector<std::string>{"h0", "h1", "h2", "h3"});
    CHECK_NOTHROW((void)load_scenario(with(base(), P("/architecture"), from_text(R"({"kind": "ps", "servers": 2})"))));
    // An integral float is an integer.
    CHECK(load_scenario(with(base(), P("/workers"), 4.0)).jobs.front().workers == 4);
}

TEST_CASE("loader: unknown key at the root, with a did-you-mean hint") {
    json j = base();
    j["worker"] = 4;
    expect_error(j, "$.worker", "unknown key", "did you mean \"workers\"");
    // Far from every key: no hint, but the list of keys that are allowed.
    expect_error(with(base(), P("/xyzzy_frobnicate"), 1), "$.xyzzy_frobnicate", "unknown key", "workers", "network");
}

TEST_CASE("loader: unknown key in a nested object, with a did-you-mean hint") {
    expect_error(with(base(), P("/network/bandwith"), "25Gbps"), "$.network.bandwith", "unknown key",
                 "did you mean \"bandwidth\"");
    expect_error(with(base(), P("/architecture/algorithim"), "ring"), "$.architecture.algorithim", "unknown key",
                 "did you mean \"algorithm\"");
    expect_error(with(base(), P("/device"), from_text(R"({"name": "V100", "efficency": 0.4})")), "$.device.efficency",
                 "unknown key", "did you mean \"efficiency\"");
}

TEST_CASE("loader: a built-in name spelt with another case or separator is suggested before a one-letter neighbour") {
    // "h100" is one letter from both "H100" and "P100": the same name but for case wins; "dgx-h100" likewise is
    // "dgx_h100", not its one-letter neighbour "dgx_a100".
    expect_error(with(base(), P("/device"), "h100"), "$.device", "did you mean \"H100\"");
    expect_error(with(base(), P("/model"), "Llama2-7B"), "$.model", "did you mean \"llama2_7b\"");
    json j = base();
    j["network"] = from_text(R"({"topology": "two_tier", "node": "dgx-h100", "latency": "2us",
                                 "intra_latency": "1us"})");
    expect_error(j, "$.network.node", "did you mean \"dgx_h100\"");
}

TEST_CASE("loader: unknown key in an array element names the element's index") {
    json j = custom_base();
    j["network"]["links"][1].erase("latency");
    j["network"]["links"][1]["latncy"] = "1us";
    expect_error(j, "$.network.links[1].latncy", "unknown key", "did you mean \"latency\"");

    json n = custom_base();
    n["network"]["nodes"][2]["knd"] = "host";
    expect_error(n, "$.network.nodes[2].knd", "unknown key", "did you mean \"kind\"");

    json l = with(base(), P("/model"), from_text(R"({"layers": [{"name": "a", "params": 10},
                                                                 {"name": "b", "params": 10, "fwd_tme": "1ms"}]})"));
    expect_error(l, "$.model.layers[1].fwd_tme", "unknown key", "did you mean \"fwd_time\"");
}

TEST_CASE("loader: missing required keys") {
    expect_error(without(base(), P("/workers")), "$.workers", "required key is missing", "workers");
    expect_error(without(base(), P("/model")), "$.model", "required key is missing");
    expect_error(without(base(), P("/batch_size")), "$.batch_size", "required key is missing");
    expect_error(without(base(), P("/device")), "$.device", "required key is missing");
    expect_error(without(base(), P("/network")), "$.network", "required key is missing");
    expect_error(without(base(), P("/network/topology")), "$.network.topology", "required key is missing");
    expect_error(without(base(), P("/network/bandwidth")), "$.network.bandwidth", "required", "star");
    expect_error(without(base(), P("/network/latency")), "$.network.latency", "required", "star");
    expect_error(without(base(), P("/architecture/kind")), "$.architecture.kind", "required key is missing");
    json link = custom_base();
    link["network"]["links"][2].erase("bandwidth");
    expect_error(link, "$.network.links[2].bandwidth", "required key is missing");
}

TEST_CASE("loader: wrong JSON types") {
    expect_error(with(base(), P("/workers"), "4"), "$.workers", "integer", "\"4\"");
    expect_error(with(base(), P("/workers"), true), "$.workers", "integer", "true");
    expect_error(with(base(), P("/batch_size"), json::array({32})), "$.batch_size", "integer", "array");
    expect_error(with(base(), P("/network"), json::array()), "$.network", "expected an object", "array");
    expect_error(with(base(), P("/architecture"), "ring"), "$.architecture", "expected an object", "\"ring\"");
    expect_error(with(base(), P("/overlap"), from_text(R"({"wfbp": 1})")), "$.overlap.wfbp", "true or false", "1");
    expect_error(with(base(), P("/placement"), "h0"), "$.placement", "array", "\"h0\"");
    expect_error(with(base(), P("/placement"), from_text(R"(["h0", 1, "h2", "h3"])")), "$.placement[1]", "string", "1");
    expect_error(with(base(), P("/description"), 3), "$.description", "string", "3");
}

TEST_CASE("loader: null is not a value") {
    expect_error(with(base(), P("/workers"), nullptr), "$.workers", "integer", "null");
    expect_error(with(base(), P("/network/latency"), nullptr), "$.network.latency", "time", "null");
    expect_error(with(base(), P("/network/bandwidth"), nullptr), "$.network.bandwidth", "bandwidth", "null");
    expect_error(with(base(), P("/model"), nullptr), "$.model", "null");
    expect_error(with(base(), P("/network"), nullptr), "$.network", "expected an object", "null");
}

TEST_CASE("loader: workers must be an integer in range") {
    expect_error(with(base(), P("/workers"), 2.5), "$.workers", "integer", "2.5");
    expect_error(with(base(), P("/workers"), -1), "$.workers", "integer", "-1");
    expect_error(with(base(), P("/workers"), 0), "$.workers", "integer", "got 0");
    expect_error(with(base(), P("/workers"), 1e20), "$.workers", "integer", "1 .. 1000000");
    expect_error(with(base(), P("/workers"), 1'000'001), "$.workers", "1 .. 1000000", "1000001");
    // Within the bound but too many transfers to plan: a colocated PS round of n workers and n servers is
    // 2n^2 + n transfers, over the 5e7 limit for n = 6000 (7.2e7); the message says what to change.
    json ps = with(base(), P("/workers"), 6000);
    ps["architecture"] = {{"kind", "ps"}, {"placement", "colocated"}};
    expect_error(ps, "$.workers", "transfers", "fewer workers");
}

TEST_CASE("loader: numbers out of range") {
    expect_error(with(base(), P("/device"), from_text(R"({"efficiency": 0})")), "$.device.efficiency", "(0, 1]",
                 "got 0");
    expect_error(with(base(), P("/device"), from_text(R"({"efficiency": 1.5})")), "$.device.efficiency", "(0, 1]",
                 "1.5");
    expect_error(with(base(), P("/device"), from_text(R"({"samples_per_s": 0})")), "$.device.samples_per_s", "(0,",
                 "got 0");
    expect_error(with(base(), P("/device"), from_text(R"({"samples_per_s": -3})")), "$.device.samples_per_s", "(0,",
                 "-3");
    expect_error(with(base(), P("/iterations"), 0), "$.iterations", "integer", "got 0");
    expect_error(with(base(), P("/batch_size"), 0), "$.batch_size", "integer", "got 0");
    expect_error(with(base(), P("/seed"), -1), "$.seed", "integer", "-1");
    expect_error(with(base(), P("/architecture"), from_text(R"({"kind": "ps", "servers": 0})")),
                 "$.architecture.servers", "integer", "got 0");
    // Too many events for the flow model: the message points at the analytic model. (A straggler keeps every
    // transfer: without it the ring runs per flow class, 1,000 times fewer, and is accepted.)
    json many = with(base(), P("/workers"), 1000);
    many["iterations"] = 10000;
    CHECK_NOTHROW((void)load_scenario(many));
    many["stragglers"] = {{"distribution", "periodic"}, {"every", 2}, {"workers", {3}}};
    expect_error(many, "$.iterations", "fewer iterations", "analytic");
    many["network"]["model"] = "analytic";
    CHECK_NOTHROW((void)load_scenario(many));
}

TEST_CASE("loader: malformed bandwidth and time strings carry the unit hint") {
    const auto bw = [](json v) { return with(base(), P("/network/bandwidth"), std::move(v)); };
    expect_error(bw("10 gigs"), "$.network.bandwidth", "\"10Gbps\"", "\"1.25GBps\"", "got \"10 gigs\"");
    expect_error(bw("10Gb"), "$.network.bandwidth", "\"Gbps\" is bits per second, \"GBps\" bytes per second",
                 "\"10Gb\"");
    expect_error(bw("10gbps"), "$.network.bandwidth", "\"Gbps\" is bits per second", "\"10gbps\"");
    expect_error(bw("-5us"), "$.network.bandwidth", "Gbps", "non-negative", "\"-5us\"");
    expect_error(bw("NaN Gbps"), "$.network.bandwidth", "Gbps", "finite", "\"NaN Gbps\"");
    expect_error(bw("1e400Gbps"), "$.network.bandwidth", "\"10Gbps\"", "\"1e400Gbps\"");
    expect_error(bw("0Gbps"), "$.network.bandwidth", "positive bandwidth", "\"0Gbps\"");
    // A bare number is refused whatever its value (bits or bytes per second?), with the unit hint.
    expect_error(bw(0), "$.network.bandwidth", "\"10Gbps\"", "\"1.25GBps\"", "with its unit", "got 0");
    expect_error(bw(-1), "$.network.bandwidth", "Gbps", "with its unit", "got -1");
    expect_error(bw(10e9), "$.network.bandwidth", "\"Gbps\" is bits per second, \"GBps\" bytes per second",
                 "got 10000000000");
    // Magnitudes that would overflow the arithmetic are refused with the bound.
    expect_error(bw("1e308Gbps"), "$.network.bandwidth", "up to 8Ebps", "\"1e308Gbps\"");
    expect_error(with(base(), P("/network/latency"), "-5us"), "$.network.latency", "time", "non-negative", "\"-5us\"");
    expect_error(with(base(), P("/network/latency"), "5 sec"), "$.network.latency", "us", "ms", "\"5 sec\"");
    expect_error(with(base(), P("/device"), from_text(R"({"peak_flops": 0})")), "$.device.peak_flops", "TFLOPS",
                 "positive", "got 0");
    expect_error(with(base(), P("/device"), from_text(R"({"peak_flops": "125 TFLOP"})")), "$.device.peak_flops",
                 "TFLOPS", "\"125 TFLOP\"");
    json link = custom_base();
    link["network"]["links"][3]["bandwidth"] = "10 gigs";
    expect_error(link, "$.network.links[3].bandwidth", "Gbps", "GBps", "\"10 gigs\"");
}

TEST_CASE("loader: unknown names list the valid ones") {
    expect_error(with(base(), P("/model"), "resnet5"), "$.model", "built-in model", "\"resnet50\"", "\"resnet5\"");
    expect_error(with(base(), P("/model"), from_text(R"({"name": "resnet5"})")), "$.model.name", "built-in model",
                 "\"resnet50\"");
    expect_error(with(base(), P("/device"), "V1000"), "$.device", "built-in device", "\"V100\"", "\"V1000\"");
    expect_error(with(base(), P("/device"), from_text(R"({"name": "V1000"})")), "$.device.name", "built-in device",
                 "\"H200\"");
    expect_error(with(base(), P("/network/topology"), "mesh"), "$.network.topology", "\"star\"", "\"custom\"",
                 "\"mesh\"");
    expect_error(with(base(), P("/architecture/kind"), "ring"), "$.architecture.kind", "\"allreduce\"", "\"ps\"",
                 "\"gossip\"");
    expect_error(with(base(), P("/architecture/algorithm"), "butterfly"), "$.architecture.algorithm", "\"ring\"",
                 "\"butterfly\"");
    expect_error(with(base(), P("/model"), from_text(R"({"name": "resnet50", "dtype": "int8"})")), "$.model.dtype",
                 "\"fp32\"", "\"fp16\"", "\"int8\"");
    expect_error(with(base(), P("/network/model"), "fluid"), "$.network.model", "\"flow\"", "\"analytic\"");
    json node = custom_base();
    node["network"]["nodes"][0]["kind"] = "router";
    expect_error(node, "$.network.nodes[0].kind", "\"host\"", "\"switch\"", "\"router\"");
}

TEST_CASE("loader: values and keys the SPEC defines but this version lacks say not implemented") {
    // Topologies: a missing size parameter is named.
    expect_error(with(base(), P("/network/topology"), "fat_tree"), "$.network.k", "required by topology");
    expect_error(with(base(), P("/network"), from_text(R"({"topology": "leaf_spine", "oversubscription": 2})")),
                 "$.network.bandwidth", "required by topology");
    // Architecture keys of another kind, and unknown algorithm names.
    expect_error(with(base(), P("/architecture/algorithm"), "butterfly"), "$.architecture.algorithm",
                 "\"halving_doubling\"", "\"butterfly\"");
    expect_error(with(base(), P("/architecture"), from_text(R"({"kind": "gossip", "sharding": "balanced"})")),
                 "$.architecture.sharding", "applies to kind \"ps\" only");
    expect_error(with(base(), P("/architecture"), from_text(R"({"kind": "ps", "segment_size": "4MB"})")),
                 "$.architecture.segment_size", "applies to kind \"allreduce\" only");
    expect_error(with(base(), P("/architecture"),
                      from_text(R"({"kind": "ps", "style": "byteps", "placement": "colocated", "servers": 2})")),
                 "$.architecture.servers", "one server on every worker machine");
    expect_error(with(base(), P("/architecture"), from_text(R"({"kind": "ps", "partition_size": "4MB"})")),
                 "$.architecture.partition_size", "byteps");
    expect_error(with(base(), P("/overlap"), from_text(R"({"fusion": "mgwfbp", "wfbp": false})")), "$.overlap.wfbp",
                 "expected true");
    // Sync schemes that the architecture cannot run, and parameters of other kinds.
    expect_error(with(base(), P("/sync"), from_text(R"({"kind": "ssp", "staleness": 2})")), "$.sync.kind",
                 "does not apply to architecture \"allreduce\"", "\"local_sgd\"");
    expect_error(with(base(), P("/sync"), from_text(R"({"kind": "local_sgd", "staleness": 2})")), "$.sync.staleness",
                 "applies to kind \"ssp\" only");
    expect_error(with(base(), P("/sync"), from_text(R"({"kind": "local_sgd"})")), "$.sync.period", "required");
    expect_error(with(base(), P("/compression"), from_text(R"({"kind": "topk", "bits": 4})")), "$.compression.bits",
                 "applies to kind \"qsgd\" only");
    expect_error(with(base(), P("/compression"), from_text(R"({"kind": "topk", "density": 0})")),
                 "$.compression.density");
    expect_error(with(base(), P("/compression"), from_text(R"({"kind": "onebit", "error_feedback": false})")),
                 "$.compression.error_feedback", "expected true");
    expect_error(with(base(), P("/overlap"), from_text(R"({"wfbp": true, "partition_size": "4MB"})")),
                 "$.overlap.partition_size", "\"priority\": true only");
    expect_error(with(base(), P("/overlap"), from_text(R"({"priority": true, "fusion": "buffer"})")),
                 "$.overlap.fusion", "expected \"none\"");
    expect_error(with(base(), P("/stragglers"), from_text(R"({"fixed": {"7": 2.0}})")), "$.stragglers.fixed.7",
                 "worker index 0..3");
    expect_error(with(base(), P("/stragglers"), from_text(R"({"distribution": "exponential"})")),
                 "$.stragglers.mean_delay", "required");
    expect_error(with(base(), P("/stragglers"), from_text(R"({"sigma": 0.5})")), "$.stragglers.sigma",
                 "with a \"distribution\" only");
    expect_error(with(base(), P("/worker_devices"), from_text(R"(["V100", "A100"])")), "$.worker_devices",
                 "expected 4 devices");
    expect_error(with(base(), P("/network/host_bandwidth"), from_text(R"({"h9": "1Gbps"})")),
                 "$.network.host_bandwidth.h9", "host of the network");
    expect_error(with(base(), P("/device"), from_text(R"({"profile": "calib.json"})")), "$.device.profile",
                 "no such file");
    // Convergence: one job, and only what the replay can run.
    expect_error(with(base(), P("/convergence"), from_text(R"({"task": "mnist"})")), "$.convergence.task",
                 "\"fashion_mnist_mlp\"");
    expect_error(with(with(base(), P("/convergence"), from_text(R"({"max_iterations": 5})")), P("/compression"),
                      from_text(R"({"kind": "powersgd"})")),
                 "$.compression.kind", "not replayed");
    // With a jobs list the per-job keys belong inside each job.
    expect_error(with(base(), P("/jobs"), json::array()), "$.workers", "inside each job");
}

TEST_CASE("loader: placement names hosts of the network, one per worker") {
    expect_error(with(base(), P("/placement"), from_text(R"(["h0", "h1", "h2", "nope"])")), "$.placement[3]",
                 "host of the network", "\"nope\"");
    expect_error(with(base(), P("/placement"), from_text(R"(["h0", "h1"])")), "$.placement", "expected 4 host names",
                 "got 2");
    expect_error(with(base(), P("/placement"), json::array()), "$.placement", "at least 1");
    // A switch is not a host.
    expect_error(with(custom_base(), P("/placement"), from_text(R"(["h0", "h1", "h2", "sw"])")), "$.placement[3]",
                 "host of the network", "\"sw\"");
    expect_error(with(base(), P("/architecture"), from_text(R"({"kind": "ps", "server_placement": ["h9"]})")),
                 "$.architecture.server_placement[0]", "host of the network", "\"h9\"");
    expect_error(
        with(base(), P("/architecture"), from_text(R"({"kind": "ps", "servers": 2, "server_placement": ["h0"]})")),
        "$.architecture.server_placement", "expected 2 host names", "got 1");
    // Without a placement the network must have a host per worker.
    expect_error(with(base(), P("/network/hosts"), 2), "$.network", "2 hosts", "4 workers");
}

TEST_CASE("loader: keys of another architecture kind or topology are inconsistent") {
    expect_error(with(base(), P("/architecture/servers"), 2), "$.architecture.servers", "\"ps\" only", "\"allreduce\"");
    expect_error(with(base(), P("/architecture/placement"), "colocated"), "$.architecture.placement", "\"ps\" only");
    expect_error(with(base(), P("/architecture"), from_text(R"({"kind": "ps", "graph": "ring"})")),
                 "$.architecture.graph", "\"gossip\" only", "\"ps\"");
    expect_error(with(base(), P("/architecture"), from_text(R"({"kind": "gossip", "algorithm": "ring"})")),
                 "$.architecture.algorithm", "\"allreduce\" only");
    expect_error(with(base(), P("/network/gpus_per_node"), 4), "$.network.gpus_per_node",
                 "not used by topology \"star\"");
    expect_error(with(base(), P("/network/intra_bandwidth"), "100GBps"), "$.network.intra_bandwidth",
                 "not used by topology \"star\"");
    expect_error(with(custom_base(), P("/network/bandwidth"), "10Gbps"), "$.network.bandwidth",
                 "not used by topology \"custom\"");
    expect_error(with(base(), P("/network"), from_text(R"({"topology": "two_tier", "bandwidth": "10Gbps",
                 "latency": "1us", "gpus_per_node": 2, "intra_latency": "1us"})")),
                 "$.network.intra_bandwidth", "required by topology \"two_tier\"");
}

TEST_CASE("loader: custom topologies must be complete, named uniquely and connected") {
    expect_error(without(custom_base(), P("/network/links")), "$.network.links", "required by topology \"custom\"");
    expect_error(with(custom_base(), P("/network/links"), json::array()), "$.network.links", "at least 1");
    json unknown = custom_base();
    unknown["network"]["links"][3]["to"] = "sw2";
    expect_error(unknown, "$.network.links[3].to", "node name", "\"sw2\"");
    json from = custom_base();
    from["network"]["links"][0]["from"] = "h9";
    expect_error(from, "$.network.links[0].from", "node name", "\"h9\"");
    json self = custom_base();
    self["network"]["links"][3]["to"] = "h3";
    expect_error(self, "$.network.links[3].to", "two different nodes");
    // h3's link replaced by a second h2 link: h3 is isolated.
    json disconnected = custom_base();
    disconnected["network"]["links"][3]["from"] = "h2";
    expect_error(disconnected, "$.network", "\"h3\"", "cannot reach");
    json dup = custom_base();
    dup["network"]["nodes"][2]["name"] = "h0";
    expect_error(dup, "$.network.nodes[2].name", "duplicate node name", "\"h0\"");
    json no_hosts = custom_base();
    no_hosts["network"]["nodes"] = from_text(R"([{"name": "s", "kind": "switch"}, {"name": "t", "kind": "switch"}])");
    no_hosts["network"]["links"] = from_text(R"([{"from": "s", "to": "t", "bandwidth": "8bps", "latency": 0}])");
    expect_error(no_hosts, "$.network", "no host");
}

TEST_CASE("loader: parameter-server servers must fit on the hosts") {
    expect_error(
        with(base(), P("/architecture"), from_text(R"({"kind": "ps", "placement": "colocated", "servers": 5})")),
        "$.architecture.servers", "colocated", "at most 4", "got 5");
    // network.hosts = 5 leaves one host besides the 4 workers, but 2 dedicated servers need two.
    json j = with(base(), P("/architecture"), from_text(R"({"kind": "ps", "servers": 2})"));
    j["network"]["hosts"] = 5;
    expect_error(j, "$.architecture.servers", "2 dedicated servers", "1 free");
    j["network"]["hosts"] = 6;
    CHECK(load_scenario(j).jobs.front().server_placement == std::vector<std::string>{"h4", "h5"});
}

TEST_CASE("loader: a model object holds exactly one of name and layers") {
    expect_error(
        with(base(), P("/model"), from_text(R"({"name": "resnet50", "layers": [{"name": "a", "params": 1}]})")),
        "$.model", "exactly one of", "\"name\"", "\"layers\"");
    expect_error(with(base(), P("/model"), json::object()), "$.model", "exactly one of");
    expect_error(with(base(), P("/model"), from_text(R"({"dtype": "fp16"})")), "$.model", "exactly one of");
    expect_error(with(base(), P("/model"), from_text(R"({"layers": []})")), "$.model.layers", "at least 1");
    expect_error(with(base(), P("/model"), from_text(R"({"layers": [{"name": "a", "params": -4}]})")),
                 "$.model.layers[0].params", "integer", "-4");
}

TEST_CASE("loader: parse_strict rejects duplicate keys with their path and NUL bytes with their position") {
    expect_parse_error(R"({"workers": 4, "workers": 5})", "$.workers", "duplicate key");
    // A NUL byte ends nlohmann's input: text after the value must not hide behind one.
    using namespace std::string_view_literals;
    expect_parse_error("{\"workers\": 4}\0garbage"sv, "$", "line 1, column 15", "NUL byte");
    expect_parse_error("{\"workers\": 4}\n\0"sv, "$", "line 2, column 1", "NUL byte");
    expect_parse_error(R"({"network": {"topology": "star", "topology": "custom"}})", "$.network.topology",
                       "duplicate key");
    expect_parse_error(R"({"a": [1, {"b": 2, "b": 3}]})", "$.a[1].b", "duplicate key");
    // The same key in two different objects is fine.
    const json ok = parse_strict(R"({"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 3}, {"k": 4}]})");
    CHECK(ok["c"][1]["k"] == 4);
}

TEST_CASE("loader: parse_strict reports malformed JSON at line and column") {
    // Line 2 is `  "model": "resnet50",,`: the second comma is column 23.
    expect_parse_error("{\"workers\": 4,\n  \"model\": \"resnet50\",,\n}", "$", "malformed JSON", "line 2, column 23");
    // An unterminated string: the offending raw newline is line 2, column 21, and no other position is quoted.
    try {
        (void)parse_strict("{\"workers\": 4,\n  \"model\": \"resnet50\n}");
        FAIL_CHECK("parsed an unterminated string");
    } catch (const ScenarioError& e) {
        const std::string message = e.what();
        CHECK(e.path() == "$");
        CHECK(message.find("line 2, column 21") != std::string::npos);
        CHECK(message.find("line 3") == std::string::npos);
        CHECK(message.find("json.exception") == std::string::npos);
    }
    expect_parse_error("", "$", "malformed JSON", "line 1, column 1");
    expect_parse_error(R"({"workers": 4} x)", "$", "malformed JSON", "line 1, column 16");
    expect_parse_error("{\"workers\": 4,\n\n", "$", "malformed JSON", "line 3");
    // Valid syntax, but beyond a double: the value's path, not an internal error.
    expect_parse_error(R"({"workers": 1e400})", "$.workers", "range", "1e400");
    expect_parse_error(R"({"a": [1, -1e400]})", "$.a[1]", "range", "-1e400");
}

TEST_CASE("loader: apply_override rejects malformed assignments") {
    expect_override_error(base(), "workers", "--set workers", "PATH=VALUE");
    expect_override_error(base(), "=5", "--set =5", "PATH=VALUE");
    expect_override_error(base(), "network..bandwidth=1Gbps", "--set network..bandwidth=1Gbps", "dotted key path");
    expect_override_error(base(), "network.=1Gbps", "--set network.=1Gbps", "dotted key path");
    expect_override_error(base(), ".workers=1", "--set .workers=1", "dotted key path");
    expect_override_error(base(), "workers.x=1", "$.workers", "cannot set a key inside 4");
    expect_override_error(base(), "model.name=vgg16", "$.model", "cannot set a key inside \"resnet50\"");
    json placed = with(base(), P("/placement"), from_text(R"(["h0", "h1", "h2", "h3"])"));
    expect_override_error(placed, "placement.4=h0", "$.placement", "index below 4", "\"4\"");
    expect_override_error(placed, "placement.x=h0", "$.placement", "index below 4", "\"x\"");
}

TEST_CASE("loader: apply_override creates keys and parses values as JSON, else as strings") {
    json j = json::object();
    apply_override(j, "a.b.c=1");
    CHECK(j == from_text(R"({"a": {"b": {"c": 1}}})"));
    CHECK(j["a"]["b"]["c"].is_number_integer());

    json s = base();
    apply_override(s, "seed=7");
    apply_override(s, "overlap.wfbp=false");
    apply_override(s, "network.bandwidth=25Gbps");
    CHECK(s["seed"] == 7);
    CHECK(s["overlap"]["wfbp"].is_boolean());
    CHECK(s["overlap"]["wfbp"] == false);
    CHECK(s["network"]["bandwidth"] == "25Gbps");
    CHECK(s["network"]["latency"] == "5us");  // siblings untouched

    json t = base();
    apply_override(t, "description=\"quoted\"");
    apply_override(t, "network.bandwidth=1e400Gbps");
    apply_override(t, "iterations=null");
    apply_override(t, "architecture={\"kind\": \"ps\", \"servers\": 2}");
    CHECK(t["description"] == "quoted");
    CHECK(t["network"]["bandwidth"] == "1e400Gbps");
    CHECK(t["iterations"].is_null());
    CHECK(t["architecture"]["servers"] == 2);

    json p = with(base(), P("/placement"), from_text(R"(["h0", "h1", "h2", "h3"])"));
    apply_override(p, "placement.1=h3");
    CHECK(p["placement"] == from_text(R"(["h0", "h3", "h2", "h3"])"));

    // An override is seen by the loader.
    json q = base();
    apply_override(q, "network.bandwidth=25Gbps");
    const auto loaded = load_scenario(q);
    CHECK(std::get<ddlsim::topo::StarSpec>(loaded.topology).bandwidth.bits_per_s() == ddlsim::testing::approx(25e9));
}

TEST_CASE("loader: the training block's bad input, each at its key") {
    json j = base();
    j["training"] = {{"samples_to_target", 1e6}};
    (void)load_scenario(j);  // valid as given
    expect_error(with(j, json::json_pointer("/training/samples_to_target"), -5), "$.training.samples_to_target",
                 "expected a number in (0,");
    expect_error(with(j, json::json_pointer("/training/samples_to_target"), 0), "$.training.samples_to_target",
                 "expected a number in (0,");
    expect_error(with(j, json::json_pointer("/training/samples_to_target"), "builtn"), "$.training.samples_to_target",
                 "\"builtin\"");
    // A table not increasing in batch: at the second entry's batch.
    expect_error(with(j, json::json_pointer("/training/samples_to_target"),
                      json::parse(R"([{"global_batch": 512, "samples": 2e6}, {"global_batch": 256, "samples": 1e6}])")),
                 "$.training.samples_to_target[1].global_batch", "increasing");
    expect_error(with(j, json::json_pointer("/training/samples_to_target"),
                      json::parse(R"([{"global_batch": 512, "sample": 2e6}])")),
                 "$.training.samples_to_target[0].sample", "unknown key");
    expect_error(with(j, json::json_pointer("/training/samples_to_target"), json::parse(R"({"critical_batch": 100})")),
                 "$.training.samples_to_target.min_samples", "missing");
    // Built-in data for a model without it (VGG-16 has no MLPerf reference points).
    expect_error(with(with(j, json::json_pointer("/training/samples_to_target"), "builtin"),
                      json::json_pointer("/model"), "vgg16"),
                 "$.training.samples_to_target", "no built-in convergence data", "resnet50");
    // A target given twice, and none.
    expect_error(with(j, json::json_pointer("/training/tokens_to_target"), 1e9), "$.training.tokens_to_target",
                 "twice");
    expect_error(with(j, json::json_pointer("/training"), json::object({{"price_per_gpu_hour", 2}})),
                 "$.training.tokens_to_target", "samples_to_target or tokens_to_target");
    // Tokens for a model without a sequence.
    expect_error(with(j, json::json_pointer("/training"), json::object({{"tokens_to_target", 1e9}})),
                 "$.training.tokens_to_target", "sequence");
    // Evaluation: one interval, the eval set, epochs only with an epoch size.
    expect_error(with(j, json::json_pointer("/training/evaluation"), json::parse(R"({"every_samples": 1e5})")),
                 "$.training.evaluation.samples", "missing");
    expect_error(with(j, json::json_pointer("/training/evaluation"),
                      json::parse(R"({"every_samples": 1e5, "every_epochs": 1, "samples": 1000})")),
                 "$.training.evaluation.every_epochs", "not both");
    expect_error(
        with(j, json::json_pointer("/training/evaluation"), json::parse(R"({"every_epochs": 1, "samples": 1000})")),
        "$.training.evaluation.every_epochs", "epoch_samples");
    // Checkpoints need a write bandwidth.
    expect_error(with(j, json::json_pointer("/training/checkpoint"), json::parse(R"({"every_steps": 100})")),
                 "$.training.checkpoint.write_bandwidth", "missing");
    expect_error(with(j, json::json_pointer("/training/pricee_per_gpu_hour"), 2), "$.training.pricee_per_gpu_hour",
                 "did you mean", "price_per_gpu_hour");
}

TEST_CASE("loader: a node preset needs only the node and the NIC speed, without one the latencies stay required") {
    // With network.node: the inter-node link latency (500 ns), the intra-node one (25 ns) and, for rail_optimized,
    // one non-blocking spine are the cited defaults (scenarios/keys_network.cpp).
    for (const char* topology : {"two_tier", "rail_optimized"}) {
        CAPTURE(topology);
        json j = base();
        j["workers"] = 16;
        j["network"] = {{"topology", topology}, {"node", "dgx_h100"}, {"bandwidth", "400Gbps"}};
        const auto s = load_scenario(j);
        const auto check = [](const auto& t) {
            CHECK(t.latency.seconds() == ddlsim::testing::approx(500e-9));
            CHECK(t.intra_latency.seconds() == ddlsim::testing::approx(25e-9));
        };
        if (std::string(topology) == "two_tier") {
            check(std::get<ddlsim::topo::TwoTierSpec>(s.topology));
        } else {
            const auto& r = std::get<ddlsim::topo::RailOptimizedSpec>(s.topology);
            check(r);
            CHECK(r.spines == 1);
            CHECK(r.oversubscription == ddlsim::testing::approx(1.0));  // non-blocking
        }
        // A given value still wins over the default.
        j["network"]["latency"] = "2us";
        const auto given = load_scenario(j);
        std::visit(
            [](const auto& t) {
                if constexpr (requires { t.intra_latency; })
                    CHECK(t.latency.seconds() == ddlsim::testing::approx(2e-6));
            },
            given.topology);
    }
    // Without a preset the node is unknown: its latencies are the user's to give.
    expect_error(with(base(), P("/network"), from_text(R"({"topology": "two_tier", "bandwidth": "10Gbps",
                 "gpus_per_node": 2, "intra_bandwidth": "100GBps", "intra_latency": "1us"})")),
                 "$.network.latency", "required by topology \"two_tier\" without network.node");
    // leaf_spine has no preset: its spines stay required.
    expect_error(with(base(), P("/network"), from_text(R"({"topology": "leaf_spine", "bandwidth": "10Gbps",
                 "latency": "1us", "hosts_per_leaf": 4})")),
                 "$.network.spines", "required by topology \"leaf_spine\"");
}
