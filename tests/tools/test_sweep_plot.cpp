// `ddlsim sweep --plot` (tools/sweep_plot.hpp, tools/plot_sweep.py): the plot is drawn, and the axes, labels,
// scales, legend and baseline the script chose are checked through its --describe JSON (SweepOptions::
// plot_describe), not by comparing images. Needs python3 with matplotlib; the drawing cases are skipped (with a
// message) where there is none. --relative-to's bad input is refused before anything runs.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/sweep.hpp"
#include "tools/sweep_plot.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace ddlsim;

namespace {

class TempDir {
public:
    TempDir() {
        static std::atomic<int> counter{0};
        path_ = fs::temp_directory_path() /
                ("ddlsim_sweep_plot_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        fs::create_directories(path_);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    [[nodiscard]] std::string operator/(const std::string& name) const { return (path_ / name).string(); }

private:
    fs::path path_;
};

json read_json(const std::string& path) {
    std::ifstream in(path);
    return json::parse(in);
}

// A 1 MB one-layer model on a 10 Gbps star: small and fast for any algorithm and worker count.
std::string write_scenario(const TempDir& dir) {
    const json j{{"workers", 4},
                 {"model",
                  {{"layers", json::array({{{"name", "g"},
                                            {"params", std::int64_t{250'000}},
                                            {"fwd_time", 0.001},
                                            {"bwd_time", 0.002},
                                            {"update_time", 0.0005}}})}}},
                 {"batch_size", 8},
                 {"iterations", 2},
                 {"device", "V100"},
                 {"network", {{"topology", "star"}, {"bandwidth", "10Gbps"}, {"latency", "5us"}}},
                 {"architecture", {{"kind", "allreduce"}, {"algorithm", "ring"}}}};
    const auto path = dir / "tiny_ring.json";
    std::ofstream(path) << j.dump();
    return path;
}

tools::SweepOptions plot_options(const TempDir& dir, std::vector<std::string> vary) {
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

// Runs the sweep; false (with a message) when there is no python3 with matplotlib to draw with.
bool sweep_and_plot(const tools::SweepOptions& o) {
    std::ostringstream err;
    const int rc = tools::run_sweep(o, err);
    if (rc == 2 && err.str().find("matplotlib") != std::string::npos) {
        MESSAGE("skipped: " << err.str());
        return false;
    }
    REQUIRE_MESSAGE(rc == 0, err.str());
    REQUIRE(fs::is_regular_file(o.plot));
    CHECK(fs::file_size(o.plot) > 1000);
    REQUIRE(fs::is_regular_file(o.plot_describe));
    return true;
}

std::vector<std::string> strings(const json& j) {
    return j.is_array() ? j.get<std::vector<std::string>>() : std::vector<std::string>{};
}

}  // namespace

TEST_CASE("sweep plot: a categorical key on x, a numeric list in the legend, axes with units") {
    TempDir dir;
    const auto o = plot_options(dir, {"architecture.algorithm=ring,tree,halving_doubling", "workers=2,4,8"});
    if (!sweep_and_plot(o)) return;
    const json d = read_json(o.plot_describe);
    CHECK(d["title"].get<std::string>().starts_with("tiny_ring: "));
    CHECK(d["title"].get<std::string>().find("vs architecture.algorithm") != std::string::npos);
    CHECK(d["x"]["scale"] == "category");
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

TEST_CASE("sweep plot: a plain numeric list gets a linear axis, a geometric range a log axis, units converted") {
    TempDir dir;
    SUBCASE("plain list of workers: linear, in GPUs") {
        const auto o = plot_options(dir, {"workers=2,4,8,16", "network.bandwidth=10Gbps,1.25GBps"});
        if (!sweep_and_plot(o)) return;
        const json d = read_json(o.plot_describe);
        CHECK(d["x"]["scale"] == "linear");
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
        if (!sweep_and_plot(o)) return;
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
        if (!sweep_and_plot(o)) return;
        const json d = read_json(o.plot_describe);
        CHECK(d["x"]["scale"] == "linear");
        CHECK(d["x"]["label"] == "network.latency (us)");
        CHECK(d["x"]["values"] == json::array({5.0, 20.0, 50.0}));
        CHECK(d["legend"].empty());
    }
}

TEST_CASE("sweep plot: --relative-to divides by the baseline point") {
    TempDir dir;
    auto o = plot_options(dir, {"workers=2,4,8", "architecture.algorithm=ring,tree"});
    o.relative_to = R"(architecture.algorithm=tree)";
    if (!sweep_and_plot(o)) return;
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

    TempDir dir;
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
