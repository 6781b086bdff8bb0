// A calibration profile in a scenario: network.profile supplies the transport between machines
// (unless network.transport is given, which wins and says so), device.profile supplies the device
// with its measured overlap_slowdown (unless overlap.compute_slowdown is given); bad values name
// their JSON path; the resolved scenario carries the values and reproduces the result. Temporary
// files only (a per-process folder under the temp directory, removed at the end of each case).
#include <doctest/doctest.h>

#include <unistd.h>
#include "tests/support/approx.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "validate/calibrate.hpp"
#include "validate/dataset.hpp"
#include "validate/netns.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& tag = "a")
        : path(fs::temp_directory_path() / ("ddlsim_profile_test_" + std::to_string(::getpid()) + "_" + tag)) {
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    void write(const std::string& name, const json& j) const { std::ofstream(path / name) << j.dump(2); }
};

// What `ddlsim calibrate` writes (the members a scenario reads).
json profile() {
    return json::parse(R"({"format": "ddlsim-profile-1", "backend": "cpu", "host": "test",
        "device": {"peak_flops": 2.5e10, "efficiency": 1.0, "memory_bandwidth": "30GBps", "overlap_slowdown": 0.05},
        "network": {"latency": 1.8e-05, "bandwidth": "11.95MBps", "link_rate": "100Mbps",
                    "transport": {"kind": "tcp", "efficiency": 0.9563, "message_overhead": "18us",
                                  "collective_overhead": "30us"}},
        "layers": [], "codecs": {}})");
}

json scenario() {
    return json::parse(R"({"workers": 4, "batch_size": 32, "iterations": 4,
        "model": {"layers": [{"name": "fc1", "params": 200960, "fwd_time": "0.5ms", "bwd_time": "1ms"},
                             {"name": "fc2", "params": 32896, "fwd_time": "0.1ms", "bwd_time": "0.2ms"},
                             {"name": "fc3", "params": 1290, "fwd_time": "0.05ms", "bwd_time": "0.1ms"}]},
        "device": {"profile": "calib.json"},
        "network": {"topology": "star", "bandwidth": "100Mbps", "latency": "0us", "profile": "calib.json"},
        "architecture": {"kind": "allreduce", "algorithm": "ring"}})");
}

double iteration_time(const json& j, const fs::path& dir) {
    return ddlsim::scenario::run_scenario(ddlsim::scenario::load_scenario(j, dir.string())).jobs.at(0).iteration_time_s;
}

std::string error_path(const json& j, const fs::path& dir) {
    try {
        (void)ddlsim::scenario::load_scenario(j, dir.string());
    } catch (const ddlsim::scenario::ScenarioError& e) {
        return e.path() + ": " + e.what();
    }
    return "loaded";
}

}  // namespace

TEST_CASE("network.profile supplies the measured transport, network.transport wins and says so") {
    TempDir d;
    d.write("calib.json", profile());
    const auto s = ddlsim::scenario::load_scenario(scenario(), d.path.string());
    REQUIRE(s.transports.inter.has_value());
    CHECK(s.transports.inter->efficiency == ddlsim::testing::approx(0.9563));
    CHECK(s.transports.inter->message_overhead.seconds() == ddlsim::testing::approx(18e-6));
    CHECK(s.transports.inter->collective_overhead.seconds() == ddlsim::testing::approx(30e-6));
    CHECK(s.transport_source == "calibration profile calib.json");
    const json result = ddlsim::scenario::result_json(s, ddlsim::scenario::run_scenario(s));
    CHECK(result.dump().find("calibration profile calib.json") != std::string::npos);

    // The measured transport predicts differently from the tcp preset (40 us per message, 94.1 % goodput).
    json preset = scenario();
    preset["network"].erase("profile");
    CHECK(iteration_time(preset, d.path) > iteration_time(scenario(), d.path));

    json given = scenario();
    given["network"]["transport"] = "ideal";
    const auto g = ddlsim::scenario::load_scenario(given, d.path.string());
    CHECK(g.transports.inter->kind == ddlsim::topo::TransportKind::ideal);
    CHECK(g.transport_source.find("overrides the transport of network.profile") != std::string::npos);
}

TEST_CASE("device overlap_slowdown is the default of overlap.compute_slowdown, the overlap key wins") {
    TempDir d;
    json p = profile();
    p["device"]["overlap_slowdown"] = 1.0;  // large, so that it shows
    d.write("calib.json", p);
    json s = scenario();
    s["overlap"] = {{"wfbp", true}};
    // Backward layers long enough that the later ones run while the earlier ones' messages are in flight.
    s["model"]["layers"][1]["bwd_time"] = "20ms";
    s["model"]["layers"][2]["bwd_time"] = "10ms";
    const double from_device = iteration_time(s, d.path);
    json zero = s;
    zero["device"]["overlap_slowdown"] = 0.0;  // a device key beside the profile overrides the profile's
    const double without = iteration_time(zero, d.path);
    CHECK(from_device > without);
    json given = s;
    given["overlap"]["compute_slowdown"] = 0.0;
    CHECK(iteration_time(given, d.path) == ddlsim::testing::approx(without).epsilon(1e-12));
}

TEST_CASE("the resolved scenario carries the profile's transport and overlap slowdown") {
    TempDir d;
    d.write("calib.json", profile());
    json s = scenario();
    s["overlap"] = {{"wfbp", true}};
    const auto loaded = ddlsim::scenario::load_scenario(s, d.path.string());
    const json resolved = ddlsim::scenario::resolved_scenario(loaded);
    CHECK(resolved.dump().find("calib.json") == std::string::npos);  // values, not the file
    CHECK(resolved.at("device").at("overlap_slowdown").get<double>() == ddlsim::testing::approx(0.05));
    CHECK(resolved.at("network").at("transport").at("efficiency").get<double>() == ddlsim::testing::approx(0.9563));
    TempDir other("b");  // elsewhere: no profile file needed
    CHECK_FALSE(fs::exists(other.path / "calib.json"));
    CHECK(iteration_time(resolved, other.path) ==
          ddlsim::testing::approx(ddlsim::scenario::run_scenario(loaded).jobs.at(0).iteration_time_s).epsilon(1e-12));
}

TEST_CASE("bad profiles and values name their JSON path") {
    TempDir d;
    json s = scenario();
    s["device"] = "V100";
    s["network"]["profile"] = "missing.json";
    CHECK(error_path(s, d.path).rfind("$.network.profile: ", 0) == 0);
    json no_transport = profile();
    no_transport["network"].erase("transport");
    d.write("calib.json", no_transport);
    s["network"]["profile"] = "calib.json";
    CHECK(error_path(s, d.path).find("$.network.profile: ") == 0);
    CHECK(error_path(s, d.path).find("\"transport\"") != std::string::npos);
    json bad = profile();
    bad["network"]["transport"]["efficiency"] = 1.5;
    d.write("calib.json", bad);
    const std::string e = error_path(s, d.path);
    CHECK(e.rfind("$.network.profile: ", 0) == 0);
    CHECK(e.find("$.network.transport.efficiency") != std::string::npos);
    s["network"]["profile"] = 3;
    CHECK(error_path(s, d.path).rfind("$.network.profile: ", 0) == 0);
    d.write("calib.json", profile());
    json dev = scenario();
    dev["device"]["overlap_slowdown"] = -0.1;
    CHECK(error_path(dev, d.path).rfind("$.device.overlap_slowdown: ", 0) == 0);
    dev["device"]["overlap_slowdown"] = "a lot";
    CHECK(error_path(dev, d.path).rfind("$.device.overlap_slowdown: ", 0) == 0);
}

TEST_CASE("calibrate measures the overlap slowdown, the transport it writes loads as network.profile") {
    // Loopback (no shaping, so no line rate to measure the transport against): the overlap slowdown
    // is still measured and written; the transport is not.
    ddlsim::validate::HostNetwork net(2, 100e6, false);
    ddlsim::validate::CalibrationOptions o;
    o.iterations = 5;
    o.sharing = {1};
    o.pingpong_repeats = 2;
    o.collective_repeats = 5;
    o.overlap_blocks = 1;
    std::ostringstream log;
    const auto c = ddlsim::validate::calibrate(o, ddlsim::validate::synthetic_dataset(256, 1), net, log);
    CHECK(c.overlap.measured);
    CHECK(c.overlap.alone_s > 0.0);
    CHECK(c.overlap.beside_s > 0.0);
    CHECK(c.overlap.transport_Bps > 0.0);
    CHECK(c.overlap.slowdown >= 0.0);
    CHECK(c.transport.collective_s > 0.0);
    CHECK(c.transport.collective_overhead_s >= 0.0);
    CHECK_FALSE(c.transport.measured);
    const json p = c.profile_json();
    CHECK(p.at("device").at("overlap_slowdown").get<double>() == ddlsim::testing::approx(c.overlap.slowdown));
    CHECK_FALSE(p.at("network").contains("transport"));

    // A measured transport as calibrate writes it, read back by the loader.
    ddlsim::validate::TransportFit t;
    t.measured = true;
    t.efficiency = 0.9566;
    t.message_overhead_s = 11.52e-6;
    t.collective_overhead_s = 15.13e-6;
    json written = p;
    written["network"]["transport"] = t.json();
    TempDir d;
    d.write("calib.json", written);
    const auto s = ddlsim::scenario::load_scenario(scenario(), d.path.string());
    CHECK(s.transports.inter->efficiency == ddlsim::testing::approx(0.9566));
    CHECK(s.transports.inter->message_overhead.seconds() == ddlsim::testing::approx(11.52e-6));
    CHECK(s.transports.inter->collective_overhead.seconds() == ddlsim::testing::approx(15.13e-6));
    CHECK(s.jobs.at(0).device.overlap_slowdown.value() == ddlsim::testing::approx(c.overlap.slowdown));
}
