// The real ddlsim binary against bad and good input (docs/CONTRACT.md §1): exit 2 and exactly one stderr line
// "error: FILE: PATH: MESSAGE" for any bad input, no partial or clobbered --out file, exit 0 on success.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/support.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
namespace testing = ddlsim::testing;

namespace {

using testing::CliRun;
using testing::read_file;
using testing::shell_quote;

// A fresh temporary directory for one test.
struct TempDir : testing::TempDir {
    TempDir() : testing::TempDir("ddlsim_test_cli") {}
};

// A bad-input run: exit 2, nothing on stdout, and stderr exactly one line that starts with `prefix` (which names the
// file and the JSON path) and holds each of `words`.
void expect_bad_input(const CliRun& r, const std::string& prefix, std::initializer_list<std::string> words = {}) {
    INFO("stderr: " << r.err);
    INFO("stdout: " << r.out);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind(prefix, 0) == 0);
    REQUIRE(!r.err.empty());
    CHECK(r.err.back() == '\n');
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    for (const auto& w : words) CHECK_MESSAGE(r.err.find(w) != std::string::npos, "stderr lacks \"" << w << "\"");
}

// 4 ResNet-50 workers on a 10 Gbit/s star, ring all-reduce, BSP, 2 iterations: valid and quick to simulate.
const std::string k_good =
    testing::star_scenario({.iterations = 2, .architecture = testing::ring_allreduce()}).dump(2) + "\n";

const char* const k_unknown_key = R"({
  "workers": 4,
  "model": "resnet50",
  "batch_size": 32,
  "device": "V100",
  "network": {"topology": "star", "bandwith": "10Gbps", "latency": "5us"}
}
)";

}  // namespace

TEST_CASE("cli: a missing scenario file is bad input naming the file") {
    const TempDir dir;
    const std::string missing = dir.file("missing.json");
    expect_bad_input(testing::run_ddlsim({"check", missing}), "error: " + missing + ": $: ", {"no such file"});
    expect_bad_input(testing::run_ddlsim({"run", missing}), "error: " + missing + ": $: ", {"no such file"});
}

TEST_CASE("cli: a directory as scenario is bad input") {
    const TempDir dir;
    expect_bad_input(testing::run_ddlsim({"check", dir.path().string()}),
                     "error: " + dir.path().string() + ": $: ", {"directory"});
}

TEST_CASE("cli: malformed JSON is bad input with line and column") {
    const TempDir dir;
    const std::string file = dir.write("bad.json", "{\n  \"workers\": 4,,\n}\n");
    // Line 2 is `  "workers": 4,,`: the second comma is column 16.
    expect_bad_input(testing::run_ddlsim({"check", file}),
                     "error: " + file + ": $: ", {"malformed JSON", "line 2, column 16"});
    const std::string big = dir.write("big.json", R"({"workers": 1e400})");
    expect_bad_input(testing::run_ddlsim({"check", big}), "error: " + big + ": $.workers: ", {"1e400"});
}

TEST_CASE("cli: an unknown key is bad input naming its JSON path") {
    const TempDir dir;
    const std::string file = dir.write("typo.json", k_unknown_key);
    expect_bad_input(testing::run_ddlsim({"check", file}),
                     "error: " + file + ": $.network.bandwith: ", {"unknown key", "did you mean \"bandwidth\""});
    expect_bad_input(testing::run_ddlsim({"run", file}), "error: " + file + ": $.network.bandwith: ", {"unknown key"});
}

TEST_CASE("cli: a bad --set is bad input") {
    const TempDir dir;
    const std::string file = dir.write("good.json", k_good);
    expect_bad_input(testing::run_ddlsim({"check", file, "--set", "workers"}),
                     "error: " + file + ": --set workers: ", {"PATH=VALUE"});
    // A control character in what the message quotes is written escaped: the message stays one line.
    expect_bad_input(testing::run_ddlsim({"check", file, "--set", "netw\nork.bandwidth=1Gbps"}),
                     "error: " + file + ": --set netw\\nork.bandwidth=1Gbps: ", {"\"netw\\nork\""});
    expect_bad_input(testing::run_ddlsim({"check", file, "--set", "network..bandwidth=1Gbps"}),
                     "error: " + file + ": --set network..bandwidth=1Gbps: ", {"dotted key path"});
    expect_bad_input(testing::run_ddlsim({"check", file, "--set", "workers.x=1"}),
                     "error: " + file + ": $.workers: ", {"cannot set a key inside 4"});
    // A well-formed override to a bad value is reported at the value's path.
    expect_bad_input(testing::run_ddlsim({"run", file, "--set", "network.bandwidth=10 gigs"}),
                     "error: " + file + ": $.network.bandwidth: ", {"\"10Gbps\"", "\"10 gigs\""});
    expect_bad_input(testing::run_ddlsim({"check", file, "--set", "workers=0"}),
                     "error: " + file + ": $.workers: ", {"integer"});
    // A path the scenario schema (generated from the key tables) does not declare, with a did-you-mean.
    expect_bad_input(testing::run_ddlsim({"check", file, "--set", "network.bandwdth=1Gbps"}),
                     "error: " + file + ": --set network.bandwdth=1Gbps: ",
                     {"unknown key \"bandwdth\" in $.network", "did you mean \"bandwidth\""});
}

TEST_CASE("cli: usage errors exit 2 with one error line") {
    const TempDir dir;
    const std::string file = dir.write("good.json", k_good);
    expect_bad_input(testing::run_ddlsim({}), "error: ", {"--help"});
    expect_bad_input(testing::run_ddlsim({"frobnicate"}), "error: ", {"--help"});
    expect_bad_input(testing::run_ddlsim({"run", file, "--bogus"}), "error: ", {"--bogus"});
    expect_bad_input(testing::run_ddlsim({"check"}), "error: ", {"scenario"});
    expect_bad_input(testing::run_ddlsim({"run", file, "--out"}), "error: ", {"--out"});
}

TEST_CASE("cli: --out into a nonexistent directory is bad input and creates nothing") {
    const TempDir dir;
    const std::string file = dir.write("good.json", k_good);
    const std::string out = dir.file("no_such_dir/result.json");
    const CliRun r = testing::run_ddlsim({"run", file, "--out", out});
    INFO("stderr: " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.rfind("error: " + out + ": ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(dir.file("no_such_dir")));
    CHECK(dir.entries() == std::vector<std::string>{"good.json"});
    // A directory is not a result file either.
    const CliRun d = testing::run_ddlsim({"run", file, "--out", dir.path().string()});
    CHECK(d.code == 2);
    CHECK(d.err.rfind("error: " + dir.path().string() + ": ", 0) == 0);
    CHECK(dir.entries() == std::vector<std::string>{"good.json"});
}

TEST_CASE("cli: bad input never leaves an --out file behind") {
    const TempDir dir;
    const std::string good = dir.write("good.json", k_good);
    const std::string typo = dir.write("typo.json", k_unknown_key);
    const std::string out = dir.file("result.json");
    expect_bad_input(testing::run_ddlsim({"run", typo, "--out", out}), "error: " + typo + ": $.network.bandwith: ");
    expect_bad_input(testing::run_ddlsim({"run", good, "--set", "workers=-3", "--out", out}),
                     "error: " + good + ": $.workers: ");
    expect_bad_input(testing::run_ddlsim({"run", dir.file("missing.json"), "--out", out}),
                     "error: " + dir.file("missing.json"));
    // No result and no temporary file beside it.
    CHECK_FALSE(fs::exists(out));
    CHECK(dir.entries() == std::vector<std::string>{"good.json", "typo.json"});
}

TEST_CASE("cli: a failing run leaves an existing --out file untouched") {
    const TempDir dir;
    const std::string good = dir.write("good.json", k_good);
    const std::string typo = dir.write("typo.json", k_unknown_key);
    const std::string previous = "{\"iteration_time_s\": 42, \"note\": \"from an earlier run\"}\n";
    const std::string out = dir.write("result.json", previous);
    expect_bad_input(testing::run_ddlsim({"run", typo, "--out", out}), "error: " + typo + ": $.network.bandwith: ");
    expect_bad_input(testing::run_ddlsim({"run", good, "--set", "sync.kind=ssp", "--out", out}),
                     "error: " + good + ": $.sync.kind: ", {"does not apply"});
    CHECK(read_file(out) == previous);
    CHECK(dir.entries() == std::vector<std::string>{"good.json", "result.json", "typo.json"});
}

TEST_CASE("cli: check accepts every example scenario") {
    const fs::path examples = fs::path(DDLSIM_SOURCE_DIR) / "scenarios" / "examples";
    int checked = 0;
    for (const auto& e : fs::directory_iterator(examples)) {
        if (e.path().extension() != ".json") continue;
        const CliRun r = testing::run_ddlsim({"check", e.path().string()});
        INFO(e.path().string() << ": " << r.err);
        CHECK(r.code == 0);
        CHECK(r.err.empty());
        CHECK(r.out.find("ok") != std::string::npos);
        ++checked;
    }
    CHECK(checked >= 1);
}

TEST_CASE("cli: schema prints a JSON Schema describing the network") {
    const CliRun r = testing::run_ddlsim({"schema"});
    INFO("stderr: " << r.err);
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    json schema;
    REQUIRE_NOTHROW(schema = json::parse(r.out));
    REQUIRE(schema.contains("$defs"));
    CHECK(schema["$defs"].contains("network"));
    CHECK(schema["$defs"]["network"]["properties"].contains("bandwidth"));
    CHECK(schema["properties"].contains("workers"));
    CHECK(schema["additionalProperties"] == false);
}

TEST_CASE("cli: models lists the built-in workloads and devices") {
    const CliRun r = testing::run_ddlsim({"models"});
    INFO("stderr: " << r.err);
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out.find("gpt2_xl") != std::string::npos);
    CHECK(r.out.find("resnet50") != std::string::npos);
    CHECK(r.out.find("H200") != std::string::npos);
    CHECK(r.out.find("V100") != std::string::npos);
}

TEST_CASE("cli: run --out writes the result JSON") {
    const TempDir dir;
    const std::string file = dir.write("good.json", k_good);
    const std::string out = dir.file("result.json");
    const CliRun r = testing::run_ddlsim({"run", file, "--set", "network.bandwidth=25Gbps", "--out", out});
    INFO("stderr: " << r.err);
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK_FALSE(r.out.empty());
    REQUIRE(fs::exists(out));
    json result;
    REQUIRE_NOTHROW(result = json::parse(read_file(out)));
    REQUIRE(result.contains("iteration_time_s"));
    CHECK(result["iteration_time_s"].is_number());
    CHECK(result["iteration_time_s"].get<double>() > 0.0);
    // Only the result itself, no temporary file left beside it.
    CHECK(dir.entries() == std::vector<std::string>{"good.json", "result.json"});
    // A second run replaces the file.
    const std::string before = read_file(out);
    const CliRun again = testing::run_ddlsim({"run", file, "--out", out});
    CHECK(again.code == 0);
    CHECK(read_file(out) != before);  // 10 Gbit/s instead of 25: a different iteration time
}

TEST_CASE("cli: run --progress reports events against the estimate on stderr, --quiet and a pipe keep it silent") {
    // The DiLoCo example processes about 400,000 events: a report is due every 65,536 once the threshold (here 0 s
    // instead of 2) has passed. Standard error is a file here, not a terminal.
    const std::string example =
        (fs::path(DDLSIM_SOURCE_DIR) / "scenarios" / "examples" / "diloco_gpt2_xl_two_sites.json").string();
    const testing::CliOptions now{.env = "DDLSIM_PROGRESS_AFTER=0", .timeout_s = 60, .stdin_file = ""};
    const CliRun forced = testing::run_ddlsim({"run", example, "--progress"}, now);
    CHECK(forced.code == 0);
    CHECK(forced.err.find("run: ") != std::string::npos);
    CHECK(forced.err.find(" events (") != std::string::npos);
    CHECK(forced.err.find('\r') == std::string::npos);  // not a terminal: whole lines for a log
    CHECK(testing::run_ddlsim({"run", example}, now).err.find("run: ") == std::string::npos);
    CHECK(testing::run_ddlsim({"run", example, "--quiet"}, now).err.find("run: ") == std::string::npos);
    CHECK(testing::run_ddlsim({"run", example, "--quiet", "--progress"}, now).code == 2);
    // A sweep likewise: forced, whole lines ending with the time taken; --quiet (or --no-progress) silences it.
    const TempDir dir;
    const std::vector<std::string> sweep{"sweep", example,        "--vary", "network.wan_bandwidth=10Gbps,20Gbps",
                                         "--set", "iterations=4", "--jobs", "1"};
    auto with = [&](const std::vector<std::string>& extra, const std::string& out) {
        std::vector<std::string> args = sweep;
        args.insert(args.end(), {"--out", dir.file(out)});
        args.insert(args.end(), extra.begin(), extra.end());
        return testing::run_ddlsim(args, {.env = "", .timeout_s = 60, .stdin_file = ""});
    };
    const CliRun logged = with({"--progress"}, "a.csv");
    CHECK(logged.code == 0);
    CHECK(logged.err.find("sweep: 2/2 points") != std::string::npos);
    CHECK(logged.err.find('\r') == std::string::npos);
    CHECK(with({}, "b.csv").err.find("sweep: ") == std::string::npos);
    CHECK(with({"--quiet"}, "c.csv").err.find("sweep: ") == std::string::npos);
    CHECK(with({"--quiet", "--progress"}, "d.csv").code == 2);
}

TEST_CASE("cli: an interrupted run leaves no output file and dies of the signal") {
    // A 2,048-worker ring takes seconds to simulate (a straggler keeps it from running per flow class); SIGINT
    // arrives after 0.3 s, before the result exists: the process ends by the signal, and neither the --out file nor
    // a temporary is left.
    const TempDir dir;
    const std::string file = dir.write("big.json", R"({"workers": 2048, "model": "resnet50", "batch_size": 1,
        "iterations": 2, "device": "V100", "network": {"topology": "star", "bandwidth": "10Gbps", "latency": "5us"},
        "stragglers": {"distribution": "periodic", "every": 2, "workers": [3]}})");
    const std::string out = dir.file("result.json");
    const std::string cmd = "timeout -s INT 0.3 " + shell_quote(DDLSIM_BINARY) + " run " + shell_quote(file) +
                            " --out " + shell_quote(out) + " >/dev/null 2>&1";
    CHECK(testing::run_shell(cmd) == 124);  // timeout(1): the command was interrupted, not finished
    CHECK(dir.entries() == std::vector<std::string>{"big.json"});
}

TEST_CASE("cli: a time to train with a convergence block takes the proxy's ratio to BSP as its factor") {
    // Local SGD has no published factor: with the proxy replay on, `run` replays BSP on the same job and uses the
    // ratio of the iterations to the target (synthetic task: no dataset needed).
    const testing::TempDir dir("ddlsim_cli_test");
    json j = json::parse(R"({"workers": 4, "model": "resnet50", "batch_size": 32, "device": "V100",
        "network": {"topology": "star", "bandwidth": "10Gbps", "latency": "5us"},
        "sync": {"kind": "local_sgd", "period": 8},
        "convergence": {"task": "synthetic_mlp", "target_accuracy": 0.97, "max_iterations": 200, "eval_every": 1},
        "training": {"samples_to_target": 1000000}})");
    const auto scen = dir.write("local.json", j.dump());
    const CliRun r = testing::run_ddlsim({"run", scen, "--out", dir / "o.json"});
    REQUIRE(r.code == 0);
    const json out = json::parse(read_file(dir / "o.json"));
    // The oracle: the same job under BSP, run on its own.
    j["sync"] = {{"kind", "bsp"}};
    j.erase("training");
    const auto bsp_scen = dir.write("bsp.json", j.dump());
    REQUIRE(testing::run_ddlsim({"run", bsp_scen, "--out", dir / "b.json"}).code == 0);
    const json bsp = json::parse(read_file(dir / "b.json"));
    const double factor = out["iterations_to_accuracy"].get<double>() / bsp["iterations_to_accuracy"].get<double>();
    const json& eff = out["time_to_train"]["statistical_efficiency"];
    CHECK(eff["source"].get<std::string>().rfind("proxy: ", 0) == 0);
    CHECK_FALSE(eff["assumed"].get<bool>());
    CHECK(eff["factor"].get<double>() == ddlsim::testing::approx(factor));
    CHECK(out["samples_to_target"].get<double>() == ddlsim::testing::approx(1e6 * factor));
    CHECK(r.out.find("(proxy: ") != std::string::npos);
}
