// `ddlsim sweep --plot` (tools/sweep_plot.hpp, tools/plot_sweep.py): the plot is drawn, and the axes, labels,
// scales, legend and baseline the script chose are checked through its --describe JSON (SweepOptions::
// plot_describe), not by comparing images. Needs python3 with matplotlib; the drawing cases are reported skipped
// where there is none (tests/support/support.hpp). --relative-to's bad input is refused before anything runs.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/support.hpp"
#include "tools/sweep.hpp"
#include "tools/sweep_plot.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace ddlsim;

namespace {

json read_json(const std::string& path) {
    std::ifstream in(path);
    return json::parse(in);
}

// A 1 MB one-layer model on a 10 Gbps star: small and fast for any algorithm and worker count.
std::string write_scenario(const testing::TempDir& dir) {
    const json j = testing::star_scenario({.model = testing::one_layer_model(1e6, 0.001, 0.002, 0.0005),
                                           .batch_size = 8,
                                           .iterations = 2,
                                           .architecture = testing::ring_allreduce()});
    const auto path = dir / "tiny_ring.json";
    std::ofstream(path) << j.dump();
    return path;
}

tools::SweepOptions plot_options(const testing::TempDir& dir, std::vector<std::string> vary) {
    tools::SweepOptions o;
    o.scenario_file = write_scenario(dir);
    o.vary = std::move(vary);
    o.out = dir / "r.csv";
    o.plot = dir / "r.png";
    o.plot_describe = dir / "r.json";
    o.jobs = 2;
    o.progress = false;
    return o;
}

// A python3 that imports matplotlib, as `ddlsim sweep --plot` looks for one; else the drawing cases skip.
bool have_matplotlib() {
    std::string why = "python3-matplotlib not installed (DDLSIM_TEST_PRETEND_NO_MATPLOTLIB)";
    if (!testing::pretend_missing("MATPLOTLIB")) {
        try {
            (void)tools::find_plotter("--plot", "plot_sweep.py", "DDLSIM_PLOT_SCRIPT");
            return true;
        } catch (const std::exception& e) {
            why = e.what();
        }
    }
    return testing::available_or_skip(false, why);
}

// Runs the sweep, which must draw the plot and its description.
void sweep_and_plot(const tools::SweepOptions& o) {
    std::ostringstream err;
    const int rc = tools::run_sweep(o, err);
    REQUIRE_MESSAGE(rc == 0, err.str());
    REQUIRE(fs::is_regular_file(o.plot));
    CHECK(fs::file_size(o.plot) > 1000);
    REQUIRE(fs::is_regular_file(o.plot_describe));
}

std::vector<std::string> strings(const json& j) {
    return j.is_array() ? j.get<std::vector<std::string>>() : std::vector<std::string>{};
}

}  // namespace

TEST_CASE("sweep plot: a categorical key on x, a numeric list in the legend, axes with units") {
    if (!have_matplotlib()) return;
    const testing::TempDir dir("ddlsim_sweep_plot_test");
    const auto o = plot_options(dir, {"architecture.algorithm=ring,tree,halving_doubling", "workers=2,4,8"});
    sweep_and_plot(o);
    const json d = read_json(o.plot_describe);
    CHECK(d["title"].get<std::string>().starts_with("tiny_ring: "));
    CHECK(d["title"].get<std::string>().find("vs architecture.algorithm") != std::string::npos);
    CHECK(d["x"]["scale"] == "category");
    CHECK(d["x"]["lines"] == false);  // categories drawn as points, not joined
    CHECK(strings(d["x"]["tick_labels"]) == std::vector<std::string>{"architecture.algorithm=ring",
                                                                     "architecture.algorithm=tree",
                                                                     "architecture.algorithm=halving_doubling"});
    CHECK(strings(d["legend"]) == std::vector<std::string>{"workers=2", "workers=4", "workers=8"});
    REQUIRE(d["panels"].size() == 3);
    CHECK(d["panels"][0]["y_label"] == "throughput (samples/s)");
    CHECK(d["panels"][1]["y_label"].get<std::string>().starts_with("scaling efficiency"));
    CHECK(d["panels"][2]["y_label"] == "time per iteration (s)");
    CHECK(d["panels"][2]["tick_labels"].size() == 9);
    CHECK(d["points"] == 9);
    CHECK(d["relative_to"].is_null());
}

TEST_CASE("sweep plot: a latency list gets a linear axis, a geometric range or a count of machines a log axis, "
          "units converted") {
    if (!have_matplotlib()) return;
    const testing::TempDir dir("ddlsim_sweep_plot_test");
    SUBCASE("plain list of workers spanning 8x: a log axis (a count of machines), in GPUs") {
        const auto o = plot_options(dir, {"workers=2,4,8,16", "network.bandwidth=10Gbps,1.25GBps"});
        sweep_and_plot(o);
        const json d = read_json(o.plot_describe);
        CHECK(d["x"]["scale"] == "log");
        CHECK(d["x"]["label"] == "workers (GPUs)");
        CHECK(d["x"]["values"] == json::array({2.0, 4.0, 8.0, 16.0}));
        // Two spellings of 10 Gbit/s are two legend entries, each as written.
        CHECK(strings(d["legend"]) ==
              std::vector<std::string>{"network.bandwidth=10Gbps", "network.bandwidth=1.25GBps"});
    }
    SUBCASE("geometric bandwidth range: log axis in Gbit/s; a JSON object legend reads key.field=value") {
        const auto o = plot_options(
            dir, {"network.bandwidth=1.25GBps..5GBps:x2", R"(architecture={"kind":"allreduce","algorithm":"ring"},)"
                                                          R"({"kind":"allreduce","algorithm":"tree"})"});
        sweep_and_plot(o);
        const json d = read_json(o.plot_describe);
        CHECK(d["x"]["scale"] == "log");
        CHECK(d["x"]["label"] == "network.bandwidth (Gbit/s)");
        CHECK(d["x"]["values"] == json::array({10.0, 20.0, 40.0}));
        CHECK(strings(d["legend"]) ==
              std::vector<std::string>{"architecture.algorithm=ring", "architecture.algorithm=tree"});
        for (const auto& label : strings(d["legend"])) CHECK(label.find('{') == std::string::npos);
    }
    SUBCASE("latency list: linear, in the unit that fits (us)") {
        const auto o = plot_options(dir, {"network.latency=5us,20us,50us"});
        sweep_and_plot(o);
        const json d = read_json(o.plot_describe);
        CHECK(d["x"]["scale"] == "linear");
        CHECK(d["x"]["label"] == "network.latency (us)");
        CHECK(d["x"]["values"] == json::array({5.0, 20.0, 50.0}));
        CHECK(d["legend"].empty());
    }
}

TEST_CASE("sweep plot: --relative-to divides by the baseline point") {
    if (!have_matplotlib()) return;
    const testing::TempDir dir("ddlsim_sweep_plot_test");
    auto o = plot_options(dir, {"workers=2,4,8", "architecture.algorithm=ring,tree"});
    o.relative_to = R"(architecture.algorithm=tree)";
    sweep_and_plot(o);
    const json d = read_json(o.plot_describe);
    CHECK(d["relative_to"]["key"] == "architecture.algorithm");
    CHECK(d["relative_to"]["value"] == "tree");
    CHECK(d["panels"][0]["y_label"] == "throughput (x the baseline's)");
    CHECK(d["panels"][1]["y_label"] == "iteration time (x the baseline's)");
    CHECK(d["title"].get<std::string>().find("architecture.algorithm=tree") != std::string::npos);
    CHECK(d["points"] == 6);
}

TEST_CASE("sweep plot: --relative-to names a varied key and one of its values, else exit 2 before running") {
    const std::vector<tools::VarySpec> specs{tools::parse_vary("workers=2,4"),
                                             tools::parse_vary(R"(architecture={"kind":"allreduce"},{"kind":"ps"})")};
    CHECK(tools::resolve_relative_to(specs, "workers=4") == "workers=4");
    CHECK(tools::resolve_relative_to(specs, R"(architecture={ "kind": "ps" })") == R"(architecture={"kind":"ps"})");
    CHECK_THROWS_WITH_AS(tools::resolve_relative_to(specs, "batch_size=8"),
                         doctest::Contains("batch_size is not a varied key; expected one of workers, architecture"),
                         sim::CliError);
    CHECK_THROWS_WITH_AS(tools::resolve_relative_to(specs, "workers=3"),
                         doctest::Contains("3 is not one of the values of workers (2, 4)"), sim::CliError);
    CHECK_THROWS_AS(tools::resolve_relative_to(specs, "workers"), sim::CliError);

    const testing::TempDir dir("ddlsim_sweep_plot_test");
    auto o = plot_options(dir, {"workers=2,4"});
    o.relative_to = "workers=3";
    std::ostringstream err;
    CHECK(tools::run_sweep(o, err) == 2);
    CHECK(err.str().find("--relative-to workers=3") != std::string::npos);
    CHECK_FALSE(fs::exists(o.out));
    o.plot.clear();
    o.relative_to = "workers=2";
    err.str("");
    CHECK(tools::run_sweep(o, err) == 2);
    CHECK(err.str().find("needs --plot") != std::string::npos);
    CHECK_FALSE(fs::exists(o.out));
}

TEST_CASE("sweep plot: parse_vary marks geometric ranges, and only them") {
    CHECK(tools::parse_vary("workers=2..16:x2").geometric);
    CHECK(tools::parse_vary("network.bandwidth=10Gbps..40Gbps:x2,100Gbps..400Gbps:x2").geometric);
    CHECK_FALSE(tools::parse_vary("workers=2,4,8,16").geometric);
    CHECK_FALSE(tools::parse_vary("workers=2..16:+2").geometric);
    CHECK_FALSE(tools::parse_vary("workers=2..16:x2,3").geometric);
}

TEST_CASE("sweep plot: past 10 series the 9 best are named and the rest are one entry, the transport switch is "
          "marked") {
    if (!have_matplotlib()) return;
    const testing::TempDir dir("ddlsim_sweep_plot_test");
    // 12 series (workers 1..12); bandwidths crossing 100 Gbit/s, where auto switches from tcp to rdma.
    const auto o = plot_options(dir, {"network.bandwidth=25Gbps,50Gbps,100Gbps,200Gbps", "workers=1..12"});
    sweep_and_plot(o);
    const json d = read_json(o.plot_describe);
    REQUIRE(d["legend"].size() == 10);
    CHECK(d["legend"][9] == "3 others");
    // The best series by throughput is the largest cluster; it is named.
    CHECK(std::find(d["legend"].begin(), d["legend"].end(), json("workers=12")) != d["legend"].end());
    REQUIRE(d["transport_switches"].size() == 1);
    CHECK(d["transport_switches"][0]["what"] == "transport");
    CHECK(d["transport_switches"][0]["from"] == "tcp");
    CHECK(d["transport_switches"][0]["to"] == "rdma");
    CHECK(d["transport_switches"][0]["between"] == json::array({50.0, 100.0}));
    // 48 points: the breakdown panel draws the best series' 4 only.
    CHECK(d["panels"][2]["tick_labels"].size() == 4);
}
