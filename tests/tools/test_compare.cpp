// `ddlsim compare`, variants as JSON merge patches, "sharding": null, `-` for standard input and output, and the
// sweep's up-front checks of its --vary values. Oracles: every compared figure is the one `ddlsim run` gives for the
// same scenario (a comparison is its runs, side by side), speed-up and exposed fraction are their quotients, and a
// variant's patch gives what the equivalent --set gives.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/support/support.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
namespace testing = ddlsim::testing;

namespace {

struct TempDir : testing::TempDir {
    TempDir() : testing::TempDir("ddlsim_test_compare") {}
};

json run_result(const std::string& file, const std::vector<std::string>& sets = {}) {
    const TempDir dir;
    std::vector<std::string> args{"run", file, "--out", dir.file("r.json")};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    const auto r = testing::run_ddlsim(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return json::parse(testing::read_file(dir.file("r.json")));
}

// The result without what may differ between two runs of the same scenario (wall time).
json without_wall_time(json r) {
    r.erase("wall_time_s");
    return r;
}

}  // namespace

TEST_CASE("compare: each column is the run of its scenario, speed-up and exposed fraction are their quotients") {
    const TempDir dir;
    const std::string slow = dir.write(
        "slow.json",
        testing::star_scenario({.iterations = 2, .bandwidth = "10Gbps", .architecture = testing::ring_allreduce()})
            .dump());
    const std::string fast = dir.write(
        "fast.json",
        testing::star_scenario({.iterations = 2, .bandwidth = "100Gbps", .architecture = testing::ring_allreduce()})
            .dump());
    const auto r = testing::run_ddlsim({"compare", slow, fast, "--out", dir.file("c.json"), "--jobs", "2"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("time per step") != std::string::npos);
    CHECK(r.out.find("slow") != std::string::npos);
    const json rows = json::parse(testing::read_file(dir.file("c.json")));
    REQUIRE(rows.size() == 2);
    const json a = run_result(slow), b = run_result(fast);
    CHECK(rows[0]["name"] == "slow");
    CHECK(rows[1]["name"] == "fast");
    CHECK(rows[0]["iteration_time_s"].get<double>() == a["iteration_time_s"].get<double>());
    CHECK(rows[1]["iteration_time_s"].get<double>() == b["iteration_time_s"].get<double>());
    CHECK(rows[1]["throughput_samples_per_s"].get<double>() == b["throughput_samples_per_s"].get<double>());
    CHECK(rows[1]["memory_per_gpu_bytes"].get<double>() == b["memory_per_gpu_bytes"]["total"].get<double>());
    CHECK(rows[0]["speedup"].get<double>() == ddlsim::testing::approx(1.0));
    CHECK(rows[1]["speedup"].get<double>() ==
          ddlsim::testing::approx(a["iteration_time_s"].get<double>() / b["iteration_time_s"].get<double>()));
    CHECK(rows[1]["speedup"].get<double>() > 1.0);  // ten times the bandwidth
    CHECK(
        rows[0]["exposed_fraction"].get<double>() ==
        ddlsim::testing::approx(a["exposed_communication_time_s"].get<double>() / a["iteration_time_s"].get<double>()));
    CHECK(rows[0]["tokens_per_s"].is_null());     // an image model: no tokens
    CHECK(rows[0]["time_to_train_s"].is_null());  // no training block

    // The same as CSV: a header and one line per case.
    const auto c = testing::run_ddlsim({"compare", slow, fast, "--out", dir.file("c.csv")});
    REQUIRE(c.code == 0);
    const std::string csv = testing::read_file(dir.file("c.csv"));
    CHECK(csv.rfind("name,scheme,iteration_time_s,", 0) == 0);
    CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);
}

TEST_CASE("compare: a variant's merge patch gives what --set gives, null removes a key") {
    const TempDir dir;
    const std::string base = dir.write(
        "base.json", testing::star_scenario({.iterations = 2, .architecture = testing::ring_allreduce()}).dump());
    const auto r = testing::run_ddlsim({"compare", base, "--variant", "slow={}", "--variant",
                                        R"(fast={"network": {"bandwidth": "40Gbps"}})", "--out", dir.file("c.json")});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json rows = json::parse(testing::read_file(dir.file("c.json")));
    REQUIRE(rows.size() == 2);
    CHECK(rows[0]["name"] == "slow");
    CHECK(rows[1]["name"] == "fast");
    CHECK(rows[1]["iteration_time_s"].get<double>() ==
          run_result(base, {"network.bandwidth=40Gbps"})["iteration_time_s"].get<double>());
    CHECK(rows[0]["iteration_time_s"].get<double>() == run_result(base)["iteration_time_s"].get<double>());
}

TEST_CASE("compare: \"sharding\": null is no sharding, as if absent") {
    const TempDir dir;
    json s = testing::star_scenario({.iterations = 2, .architecture = testing::ring_allreduce()});
    const std::string plain = dir.write("plain.json", s.dump());
    s["sharding"] = nullptr;
    const std::string null_sharding = dir.write("null.json", s.dump());
    json a = without_wall_time(run_result(plain)), b = without_wall_time(run_result(null_sharding));
    CHECK(a == b);
    // And a sharded job's variant with {"sharding": null} is plain data parallelism.
    s["sharding"] = {{"stage", 2}};
    const std::string sharded = dir.write("zero2.json", s.dump());
    const auto r = testing::run_ddlsim(
        {"compare", sharded, "--variant", R"(ddp={"sharding": null})", "--out", dir.file("c.json")});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json rows = json::parse(testing::read_file(dir.file("c.json")));
    CHECK(rows[0]["iteration_time_s"].get<double>() == a["iteration_time_s"].get<double>());
    CHECK(rows[0]["scheme"] == "ring all-reduce");
}

TEST_CASE("compare: bad input in any case is refused before anything runs, naming the file, variant and path") {
    const TempDir dir;
    const std::string base = dir.write(
        "base.json", testing::star_scenario({.iterations = 2, .architecture = testing::ring_allreduce()}).dump());
    auto r = testing::run_ddlsim({"compare", base, "--variant", "ok={}", "--variant",
                                  R"(bad={"network": {"bandwidth": "fast"}})", "--out", dir.file("c.csv")});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("error: " + base + " (variant bad): $.network.bandwidth: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(dir.file("c.csv")));
    r = testing::run_ddlsim({"compare", base, "--variant", "x=[1]"});
    CHECK(r.code == 2);
    CHECK(r.err.find("expected a JSON object") != std::string::npos);
    r = testing::run_ddlsim({"compare", base, "--variant", "a={}", "--variant", "a={}"});
    CHECK(r.code == 2);
    CHECK(r.err.find("two cases are named \"a\"") != std::string::npos);
    r = testing::run_ddlsim({"compare", base, "--set", "network.bandwith=1Gbps"});
    CHECK(r.code == 2);
    CHECK(r.err.find("did you mean \"bandwidth\"") != std::string::npos);
}

TEST_CASE("cli: - reads the scenario from standard input, --out - writes the result JSON to standard output") {
    const TempDir dir;
    const std::string file = dir.write(
        "s.json", testing::star_scenario({.iterations = 2, .architecture = testing::ring_allreduce()}).dump());
    const auto r = testing::run_ddlsim({"run", "-", "--out", "-"}, {.env = "", .timeout_s = 0, .stdin_file = file});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json from_stdout = json::parse(r.out);               // stdout holds the JSON only
    CHECK(r.err.find("iteration time") != std::string::npos);  // the summary went to stderr
    CHECK(without_wall_time(from_stdout) == without_wall_time(run_result(file)));
    CHECK_FALSE(fs::exists(dir.file("-")));
    CHECK_FALSE(fs::exists("-"));
    const auto c = testing::run_ddlsim({"check", "-"}, {.env = "", .timeout_s = 0, .stdin_file = file});
    CHECK(c.code == 0);
    const auto t = testing::run_ddlsim({"run", file, "--out", "-", "--trace", "-"});
    CHECK(t.code == 2);
    // A sweep's results file is its resume record: standard output is refused, and no file "-" appears.
    const auto sw = testing::run_ddlsim({"sweep", file, "--vary", "workers=2,4", "--out", "-"});
    CHECK(sw.code == 2);
    CHECK(sw.err.find("--out -: a sweep writes its results file as it goes") != std::string::npos);
    CHECK_FALSE(fs::exists("-"));
}

TEST_CASE("sweep: a malformed range or a value the key refuses fails before any point runs") {
    const TempDir dir;
    const std::string file = dir.write(
        "s.json", testing::star_scenario({.iterations = 2, .architecture = testing::ring_allreduce()}).dump());
    auto r = testing::run_ddlsim({"sweep", file, "--vary", "workers=8..64x2", "--out", dir.file("r.csv")});
    CHECK(r.code == 2);
    CHECK(r.err.find("\"8..64x2\" is not a range") != std::string::npos);
    CHECK_FALSE(fs::exists(dir.file("r.csv")));
    r = testing::run_ddlsim({"sweep", file, "--vary", "workers=2,4,many", "--out", dir.file("r.csv")});
    CHECK(r.code == 2);
    CHECK(r.err.find("the value many: $.workers: expected an integer") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(dir.file("r.csv")));
    r = testing::run_ddlsim({"sweep", file, "--vary", "network.bandwidth=1Gbps,fast", "--out", dir.file("r.csv")});
    CHECK(r.code == 2);
    CHECK(r.err.find("$.network.bandwidth") != std::string::npos);
    r = testing::run_ddlsim({"sweep", file, "--vary", "workers=2,4", "--out", dir.file("r.csv"), "--no-progress"});
    CHECK(r.code == 0);
}

TEST_CASE("sweep --variant: a variant column, outermost, whose rows are the runs of the patched scenario") {
    const TempDir dir;
    const std::string file = dir.write(
        "s.json", testing::star_scenario({.iterations = 2, .architecture = testing::ring_allreduce()}).dump());
    const std::string ps = R"(ps={"architecture": {"kind": "ps", "algorithm": null}})";
    auto r = testing::run_ddlsim({"sweep", file, "--vary", "workers=2,4", "--variant", "ring={}", "--variant", ps,
                                  "--out", dir.file("r.csv"), "--no-progress", "--format", "json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json points = json::parse(testing::read_file(dir.file("r.csv")));
    REQUIRE(points.size() == 4);
    CHECK(points[0]["values"]["variant"] == "ring");
    CHECK(points[2]["values"]["variant"] == "ps");
    CHECK(points[3]["values"]["workers"] == 4);
    json ps_scenario = testing::star_scenario({.workers = 4, .iterations = 2});
    ps_scenario["architecture"] = {{"kind", "ps"}};
    const std::string ps_file = dir.write("ps.json", ps_scenario.dump());
    CHECK(points[3]["result"]["iteration_time_s"].get<double>() ==
          run_result(ps_file)["iteration_time_s"].get<double>());
    // The patches are part of the sweep's identity: a resume with another patch is refused, nothing touched.
    const std::string before = testing::read_file(dir.file("r.csv"));
    r = testing::run_ddlsim({"sweep", file, "--vary", "workers=2,4", "--variant", "ring={}", "--variant",
                             R"(ps={"architecture": {"kind": "ps", "algorithm": null, "servers": 2}})", "--out",
                             dir.file("r.csv"), "--resume", "--format", "json"});
    CHECK(r.code == 2);
    CHECK(testing::read_file(dir.file("r.csv")) == before);
}

TEST_CASE("run --report writes a self-contained page, a bad --report path is refused before anything runs") {
    const TempDir dir;
    const std::string file = dir.write(
        "s.json", testing::star_scenario({.iterations = 2, .architecture = testing::ring_allreduce()}).dump());
    auto r = testing::run_ddlsim({"run", file, "--report", dir.file("r.html"), "--out", dir.file("r.json")});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const std::string html = testing::read_file(dir.file("r.html"));
    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(html.find("<script") == std::string::npos);
    CHECK(html.find("id=\"summary\"") != std::string::npos);
    CHECK(html.find("Timeline excerpt") != std::string::npos);
    CHECK(html.find("Assumptions and their sources") != std::string::npos);
    const json result = json::parse(testing::read_file(dir.file("r.json")));
    // The report changes nothing in the result, not even how it was simulated: its timeline is recorded beside the
    // run under its flow classes (a run's events and its flow-class period say how it was simulated).
    const json plain = run_result(file);
    CHECK(plain["flow_class_period"] == 1);  // the four workers of the star are one class
    CHECK(result["flow_class_period"] == 1);
    CHECK(without_wall_time(result) == without_wall_time(plain));
    r = testing::run_ddlsim({"run", file, "--report", dir.file("r.txt")});
    CHECK(r.code == 2);
    CHECK(r.err.find("expected a file name ending in .html") != std::string::npos);
    r = testing::run_ddlsim({"run", file, "--report", dir.file("r.html"), "--out", dir.file("r.html")});
    CHECK(r.code == 2);
}

TEST_CASE("run --report draws a pipeline's stages one row each, the trace names each rank by its worker and stage") {
    // 32 H100s, pipeline 4 x data 8 in Megatron's order (data inside pipeline): stage s of replica 0 is rank s and
    // sits on worker 8 s.
    const TempDir dir;
    const std::string file = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/examples/llama3_8b_pipeline_4x8xH100.json";
    auto r = testing::run_ddlsim({"run", file, "--report", dir.file("r.html"), "--trace", dir.file("t.json")});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const std::string html = testing::read_file(dir.file("r.html"));
    CHECK(html.find("<h2>Pipeline timeline</h2>") != std::string::npos);
    for (int st = 0; st < 4; ++st)
        CHECK(html.find(fmt::format("stage {} (worker {}) compute", st, 8 * st)) != std::string::npos);
    // The staircase: each stage's first forward starts after the one before it has sent its first activations.
    const json trace = json::parse(testing::read_file(dir.file("t.json")));
    std::map<long, std::string> names;
    std::map<long, double> first;
    for (const auto& e : trace["traceEvents"]) {
        if (e.value("pid", 0L) != 1) continue;
        if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name")
            names[e.value("tid", 0L)] = e["args"].value("name", "");
        if (e.value("ph", "") == "X" && e.value("cat", "") == "forward" && !first.contains(e.value("tid", 0L)))
            first[e.value("tid", 0L)] = e.value("ts", 0.0);
    }
    for (long rank = 0; rank < 4; ++rank) {
        CHECK(names[2 * rank] == fmt::format("worker {} (stage {}) compute", 8 * rank, rank));
        if (rank > 0) CHECK(first[2 * rank] > first[2 * (rank - 1)]);
    }
}

TEST_CASE("analytic model: --trace changes nothing in the result, events included") {
    const TempDir dir;
    json s = testing::star_scenario(
        {.iterations = 2, .network_model = "analytic", .architecture = testing::ring_allreduce()});
    const std::string file = dir.write("a.json", s.dump());
    const auto r = testing::run_ddlsim({"run", file, "--out", dir.file("t.json"), "--trace", dir.file("trace.json")});
    REQUIRE(r.code == 0);
    CHECK(without_wall_time(json::parse(testing::read_file(dir.file("t.json")))) ==
          without_wall_time(run_result(file)));
    CHECK(json::parse(testing::read_file(dir.file("trace.json")))["traceEvents"].size() > 10);
}

TEST_CASE(
    "run --trace: compact by default (64 workers x 20 iterations of ResNet-50 under 20 MB), --trace-full "
    "keeps every span, link spans name their transfer's endpoints") {
    const TempDir dir;
    json s = testing::star_scenario({.workers = 64,
                                     .batch_size = 64,
                                     .iterations = 20,
                                     .bandwidth = "25Gbps",
                                     .architecture = testing::ring_allreduce()});
    s["overlap"] = {{"wfbp", true}, {"fusion", "buffer"}, {"bucket_size", "25MB"}};
    const std::string file = dir.write("r64.json", s.dump());
    auto r = testing::run_ddlsim({"run", file, "--trace", dir.file("t.json")});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(fs::file_size(dir.file("t.json")) < 20'000'000);
    const json compact = json::parse(testing::read_file(dir.file("t.json")));
    CHECK(compact["otherData"]["compacted"]["detailed_spans_per_track"] == 300);
    // Every worker's 20 updates are there, merged or not: compaction merges only back-to-back spans of one kind.
    std::size_t transfers_named = 0, transfers = 0;
    for (const auto& e : compact["traceEvents"]) {
        if (e["ph"] != "X" || e["cat"] != "transfer") continue;
        ++transfers;
        const std::string name = e["name"];
        if (name.find("->") != std::string::npos && name.find(" MB") != std::string::npos) ++transfers_named;
    }
    CHECK(transfers_named > 0);
    CHECK(transfers_named < transfers);  // later ones are merged
    // The full timeline of a smaller run: every transfer of every link, none merged.
    s["workers"] = 4;
    s["iterations"] = 2;
    const std::string small = dir.write("r4.json", s.dump());
    r = testing::run_ddlsim({"run", small, "--trace", dir.file("full.json"), "--trace-full"});
    REQUIRE(r.code == 0);
    const json full = json::parse(testing::read_file(dir.file("full.json")));
    CHECK_FALSE(full.contains("otherData"));
    for (const auto& e : full["traceEvents"])
        if (e["ph"] == "X") CHECK(e["name"].get<std::string>().find("spans of") == std::string::npos);
}

TEST_CASE("sweep --set: the override is in every point, as run --set gives it, a misspelt key is refused first") {
    const TempDir dir;
    const std::string file = dir.write(
        "s.json", testing::star_scenario({.iterations = 2, .architecture = testing::ring_allreduce()}).dump());
    auto r = testing::run_ddlsim({"sweep", file, "--vary", "workers=2,4", "--set", "network.bandwidth=40Gbps", "--out",
                                  dir.file("r.json"), "--format", "json", "--no-progress"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json points = json::parse(testing::read_file(dir.file("r.json")));
    REQUIRE(points.size() == 2);
    CHECK(points[1]["result"]["iteration_time_s"].get<double>() ==
          run_result(file, {"network.bandwidth=40Gbps", "workers=4"})["iteration_time_s"].get<double>());
    r = testing::run_ddlsim(
        {"sweep", file, "--vary", "workers=2,4", "--set", "network.bandwith=40Gbps", "--out", dir.file("x.csv")});
    CHECK(r.code == 2);
    CHECK_FALSE(fs::exists(dir.file("x.csv")));
}

TEST_CASE("summary: FedAvg's iterations are called rounds, only BSP splits compute into forward, backward, update") {
    const TempDir dir;
    json s = testing::star_scenario({.workers = 4, .iterations = 2});
    s["architecture"] = {{"kind", "ps"}};
    s["sync"] = {{"kind", "fedavg"}, {"clients_per_round", 2}, {"local_steps", 3}};
    const auto r = testing::run_ddlsim({"run", dir.write("f.json", s.dump())});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("per round (mean over 2 rounds)") != std::string::npos);
    CHECK(r.out.find("round time") != std::string::npos);
    CHECK(r.out.find("one step: forward") != std::string::npos);
    CHECK(r.out.find("slowdown beside communication") == std::string::npos);
    CHECK(r.out.find("simulated 2 rounds") != std::string::npos);
}
