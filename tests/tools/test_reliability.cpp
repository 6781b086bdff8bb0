// Reliability under hostile input (one test per class of defect): outputs compared by file identity and
// never an input of the run, a sweep that checks every file before touching any, resume files read as data (no
// blocking on a FIFO, strict fields, rows kept only when they belong to the sweep), and refusals that name the key
// that is wrong. Each check states the fact; none compares against a stored golden.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/support.hpp"
#include "tools/output_file.hpp"
#include "tools/sweep.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
namespace testing = ddlsim::testing;

namespace {

struct Dir : testing::TempDir {
    Dir() : testing::TempDir("ddlsim_test_reliability") {}
};

testing::CliRun run_cli(const std::vector<std::string>& args) {
    return testing::run_ddlsim(args, {.env = "", .timeout_s = 60, .stdin_file = ""});
}

// Bad input: exit 2 and exactly one stderr line holding each of `words`.
void bad_input(const testing::CliRun& r, std::initializer_list<std::string> words) {
    INFO("stderr: " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.rfind("error: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    for (const auto& w : words) CHECK_MESSAGE(r.err.find(w) != std::string::npos, "stderr lacks \"" << w << "\"");
}

// What `ddlsim calibrate` writes (the members a scenario reads).
const char* const kProfile = R"({"format": "ddlsim-profile-1", "backend": "cpu", "host": "test",
 "device": {"peak_flops": 2.5e10, "efficiency": 1.0, "memory_bandwidth": "30GBps", "overlap_slowdown": 0.05},
 "network": {"latency": 1.8e-05, "bandwidth": "11.95MBps", "link_rate": "100Mbps",
   "transport": {"kind": "tcp", "efficiency": 0.9563, "message_overhead": "18us", "collective_overhead": "30us"}},
 "layers": [], "codecs": {}})";

// A small scenario that reads calib.json twice (device and network profile).
const char* const kWithProfile = R"({"workers": 4, "batch_size": 32, "iterations": 2,
 "model": {"layers": [{"name": "fc1", "params": 200960, "fwd_time": "0.5ms", "bwd_time": "1ms"}]},
 "device": {"profile": "calib.json"},
 "network": {"topology": "star", "bandwidth": "100Mbps", "latency": "0us", "profile": "calib.json"},
 "architecture": {"kind": "allreduce", "algorithm": "ring"}})";

const std::string kSmall = testing::star_scenario({.iterations = 2, .architecture = testing::ring_allreduce()}).dump();

}  // namespace

TEST_CASE("identity: same_file matches every spelling of one file and nothing else") {
    const Dir d;
    const std::string f = d.write("r.json", "x");
    fs::create_directories(d.file("sub"));
    fs::create_symlink("r.json", d.file("link.json"));
    REQUIRE(::link(f.c_str(), d.file("hard.json").c_str()) == 0);
    using ddlsim::sim::same_file;
    const std::string rel = fs::relative(f).string();  // the tests run from the source tree
    for (const std::string& other :
         {d.file("./r.json"), d.file("sub/../r.json"), d.file("link.json"), d.file("hard.json"), rel}) {
        CAPTURE(other);
        CHECK(same_file(f, other));
    }
    CHECK_FALSE(same_file(f, d.file("sub")));
    // Files that do not exist yet: where they would be created.
    CHECK(same_file(d.file("new.json"), d.file("sub/../new.json")));
    CHECK(same_file(fs::relative(d.file("new.json")).string(), d.file("./new.json")));
    CHECK_FALSE(same_file(d.file("new.json"), d.file("new2.json")));
}

TEST_CASE("identity: no output of run, compare or sweep may be a file the scenario reads or another output") {
    const Dir d;
    const std::string calib = d.write("calib.json", kProfile);
    const std::string scen = d.write("s.json", kWithProfile);
    REQUIRE(run_cli({"check", scen}).code == 0);
    const std::string spelled = d.file("sub/../calib.json");
    fs::create_directories(d.file("sub"));
    bad_input(run_cli({"run", scen, "--out", calib}), {"--out", "a file the scenario reads"});
    bad_input(run_cli({"run", scen, "--trace", spelled}), {"--trace", "a file the scenario reads"});
    bad_input(run_cli({"run", scen, "--report", d.file("calib.json")}), {"--report"});  // not .html: refused first
    bad_input(run_cli({"compare", scen, "--out", calib}), {"--out", "a file a scenario reads"});
    bad_input(run_cli({"sweep", scen, "--vary", "workers=2,4", "--out", calib, "--no-progress"}),
              {"--out", "a file the scenario reads"});
    // A profile named only by a varied value is an input too.
    const std::string other = d.write("calib2.json", kProfile);
    bad_input(
        run_cli({"sweep", scen, "--vary", "device.profile=calib.json,calib2.json", "--out", other, "--no-progress"}),
        {"--out", "a file the scenario reads"});
    CHECK(testing::read_file(calib) == kProfile);
    CHECK(testing::read_file(other) == kProfile);
    // Two outputs spelled differently, and through a symbolic link: refused before anything runs.
    fs::create_symlink("r.json", d.file("link.json"));
    for (const std::string& trace : {d.file("./r.json"), d.file("sub/../r.json"), d.file("link.json")}) {
        CAPTURE(trace);
        bad_input(run_cli({"run", scen, "--out", d.file("r.json"), "--trace", trace}), {"--trace", "is also --out"});
    }
    std::vector<std::string> want{"calib.json", "calib2.json", "link.json", "s.json", "sub"};
    CHECK(d.entries() == want);
}

TEST_CASE("sweep: every file it writes is checked before any is touched, a refused sweep leaves the old results") {
    const Dir d;
    const std::string scen = d.write("s.json", kSmall);
    const std::string out = d.write("o.csv", "old results\n");
    // The sweep record and the journal beside the results: a directory there is refused, the CSV untouched.
    for (const std::string side : {".sweep.json", ".rows.jsonl"}) {
        CAPTURE(side);
        fs::create_directories(out + side);
        bad_input(run_cli({"sweep", scen, "--vary", "workers=2,4", "--out", out, "--no-progress"}),
                  {out + side, "directory"});
        CHECK(testing::read_file(out) == "old results\n");
        CHECK(fs::is_directory(out + side));
        fs::remove(out + side);
    }
    // A FIFO there neither blocks nor is replaced.
    REQUIRE(::mkfifo((out + ".rows.jsonl").c_str(), 0600) == 0);
    bad_input(run_cli({"sweep", scen, "--vary", "workers=2,4", "--out", out, "--no-progress", "--resume"}), {"FIFO"});
    CHECK(fs::is_fifo(out + ".rows.jsonl"));
    CHECK(testing::read_file(out) == "old results\n");
    fs::remove(out + ".rows.jsonl");
    // --plot the same file as the results (through another spelling).
    bad_input(run_cli({"sweep", scen, "--vary", "workers=2,4", "--out", d.file("p.svg"), "--plot", d.file("./p.svg"),
                       "--no-progress"}),
              {"is also"});
    CHECK(testing::read_file(out) == "old results\n");
}

TEST_CASE("resume: a tampered record or journal is refused naming the file, line and field, never exit 1") {
    const Dir d;
    const std::string scen = d.write("s.json", kSmall);
    const std::string out = d.file("o.csv");
    const std::vector<std::string> args{"sweep", scen, "--vary", "workers=2,4", "--out", out, "--no-progress"};
    auto resume = [&] {
        auto a = args;
        a.emplace_back("--resume");
        return run_cli(a);
    };
    REQUIRE(run_cli(args).code == 0);
    const std::string csv = testing::read_file(out);
    const std::string record = testing::read_file(out + ".sweep.json");
    json bad_path = json::parse(record);
    bad_path["vary"][0]["path"] = 7;
    json bad_output = json::parse(record);
    bad_output["output"] = 3;
    const std::vector<std::pair<std::string, std::string>> records{
        {R"({"format": "ddlsim-sweep-1", "vary": "x"})", "$.scenario"},
        {R"([1, 2])", "$: expected a sweep record"},
        {"not json", "not JSON"},
        {bad_path.dump(), "$.vary[0].path"},
        {bad_output.dump(), "$.output"}};
    // Each tampered text in place of one resume file: refused naming that file and the field, the CSV untouched.
    auto refuses = [&](const std::string& name, const std::vector<std::pair<std::string, std::string>>& cases) {
        for (const auto& item : cases) {
            CAPTURE(item.first);
            d.write(name, item.first);
            bad_input(resume(), {d.file(name), item.second});
            CHECK(testing::read_file(out) == csv);
        }
    };
    refuses("o.csv.sweep.json", records);
    d.write("o.csv.sweep.json", record);
    const std::vector<std::pair<std::string, std::string>> journals{
        {"{\"point\": \"0\", \"rows\": []}\n", "line 1: $.point"},
        {"{\"point\": 0, \"rows\": [{}]}\n{\"point\": 1, \"rows\": 5}\n", "line 2: $.rows"},
        {"{\"point\": 9, \"rows\": [{}]}\n", "below 2"},
        {"{\"point\": 0, \"rows\": [{\"iteration_time_s\": 1.5}]}\n", "$.rows[0].iteration_time_s"},
        {"[]\n", "line 1"}};
    refuses("o.csv.rows.jsonl", journals);
    // A cut-off last line (a kill mid-write) is not an error: it was never committed.
    d.write("o.csv.rows.jsonl", "{\"point\": 0, \"ro");
    CHECK(resume().code == 0);
}

TEST_CASE("resume: rows that do not belong to the sweep are recomputed, never kept") {
    // A forged row (a varied value not in the sweep, its results made up) in the CSV and in the journal.
    const Dir d;
    const std::string scen = d.write("s.json", kSmall);
    const std::string out = d.file("o.csv");
    const std::vector<std::string> args{"sweep", scen, "--vary", "workers=2,4", "--out", out, "--no-progress"};
    REQUIRE(run_cli(args).code == 0);
    const auto fresh = ddlsim::tools::parse_csv(testing::read_file(out));
    REQUIRE(fresh.size() == 3);
    const auto& head = fresh[0];
    const auto col = [&](const std::string& name) {
        return static_cast<std::size_t>(std::find(head.begin(), head.end(), name) - head.begin());
    };
    auto forged = fresh[2];
    forged[col("workers")] = "999";
    forged[col("iteration_time_s")] = "0.001";
    // The file as a kill leaves it, with point 1 forged in both the CSV and the journal.
    std::string csv =
        ddlsim::tools::csv_line(head) + ddlsim::tools::csv_line(fresh[1]) + ddlsim::tools::csv_line(forged);
    d.write("o.csv", csv);
    json row = json::object();
    for (std::size_t c = 0; c < head.size(); ++c) row[head[c]] = forged[c];
    d.write("o.csv.rows.jsonl", json{{"point", 1}, {"rows", {row}}}.dump() + "\n");
    auto a = args;
    a.emplace_back("--resume");
    REQUIRE(run_cli(a).code == 0);
    const auto resumed = ddlsim::tools::parse_csv(testing::read_file(out));
    REQUIRE(resumed.size() == 3);
    CHECK(resumed[2][col("workers")] == "4");
    CHECK(resumed[2][col("iteration_time_s")] == fresh[2][col("iteration_time_s")]);  // recomputed
    CHECK(resumed[1][col("iteration_time_s")] == fresh[1][col("iteration_time_s")]);  // kept
    // Bytes that are not UTF-8 (ddlsim never writes them; found by the resume fuzzer, they raised a JSON type error,
    // exit 1): in a row, the row is recomputed; in the header, the file is refused naming the column.
    auto broken = fresh[2];
    broken[col("iteration_time_s")] = "0.0\xcf";
    d.write("o.csv",
            ddlsim::tools::csv_line(head) + ddlsim::tools::csv_line(fresh[1]) + ddlsim::tools::csv_line(broken));
    fs::remove(out + ".rows.jsonl");
    REQUIRE(run_cli(a).code == 0);
    CHECK(ddlsim::tools::parse_csv(testing::read_file(out))[2][col("iteration_time_s")] ==
          fresh[2][col("iteration_time_s")]);
    auto bad_head = head;
    bad_head.back() = "error\xff";
    d.write("o.csv", ddlsim::tools::csv_line(bad_head) + ddlsim::tools::csv_line(fresh[1]));
    bad_input(run_cli(a), {out, fmt::format("line 1, column {}", head.size()), "UTF-8"});
}

TEST_CASE("resume: a result cell or column changed by hand is recomputed, in the CSV, the journal or a JSON file") {
    // Each file ddlsim wrote carries its rows' digests (the record, or the journal's lines): a cell that is not what
    // it wrote (a word, a forged -1e308 that --objective would rank first, a foreign column) is not kept.
    const Dir d;
    const std::string scen = d.write("s.json", kSmall);
    for (const char* format : {"csv", "json"}) {
        CAPTURE(format);
        const std::string out = d.file(std::string("o.") + format);
        const std::vector<std::string> args{"sweep",         scen,       "--vary", "workers=2,4", "--out", out,
                                            "--no-progress", "--format", format};
        REQUIRE(run_cli(args).code == 0);
        const std::string fresh = testing::read_file(out);
        auto resumed = [&](const std::string& text, const std::string& journal = "") {
            d.write(fs::path(out).filename().string(), text);
            if (!journal.empty()) d.write(fs::path(out).filename().string() + ".rows.jsonl", journal);
            auto a = args;
            a.emplace_back("--resume");
            a.emplace_back("--objective");
            a.emplace_back("iteration_time_s");
            const auto r = run_cli(a);
            CHECK(r.code == 0);
            return r;
        };
        if (std::string(format) == "json") {
            for (const char* forged : {R"("banana")", "-1e308", "null"}) {
                CAPTURE(forged);
                json arr = json::parse(fresh);
                arr[1]["result"]["iteration_time_s"] = json::parse(forged);
                const auto r = resumed(arr.dump(2) + "\n");
                const json again = json::parse(testing::read_file(out));
                REQUIRE(again.size() == 2);
                CHECK(again[1]["result"]["iteration_time_s"] == json::parse(fresh)[1]["result"]["iteration_time_s"]);
                CHECK(r.out.find("e+308") == std::string::npos);
            }
            json extra = json::parse(fresh);
            extra[0]["result"]["forged"] = 1;
            resumed(extra.dump(2) + "\n");
            CHECK_FALSE(json::parse(testing::read_file(out))[0]["result"].contains("forged"));
            continue;
        }
        const auto rows = ddlsim::tools::parse_csv(fresh);
        REQUIRE(rows.size() == 3);
        const auto& head = rows[0];
        const auto col = [&](const std::string& name) {
            return static_cast<std::size_t>(std::find(head.begin(), head.end(), name) - head.begin());
        };
        for (const char* forged : {"banana", "-1e308", "nan", ""}) {
            CAPTURE(forged);
            auto row = rows[2];
            row[col("iteration_time_s")] = forged;
            const auto r = resumed(ddlsim::tools::csv_line(head) + ddlsim::tools::csv_line(rows[1]) +
                                   ddlsim::tools::csv_line(row));
            const auto again = ddlsim::tools::parse_csv(testing::read_file(out));
            REQUIRE(again.size() == 3);
            CHECK(again[2][col("iteration_time_s")] == rows[2][col("iteration_time_s")]);
            CHECK(r.out.find("e+308") == std::string::npos);
        }
        // A foreign column, in the file and in the journal of a sweep a kill interrupted: recomputed and dropped.
        auto wider = head;
        wider.insert(wider.end() - 1, "forged");
        auto row = rows[1];
        row.insert(row.end() - 1, "7");
        json cells = json::object();
        for (std::size_t c = 0; c < wider.size(); ++c) cells[wider[c]] = row[c];
        resumed(ddlsim::tools::csv_line(wider) + ddlsim::tools::csv_line(row),
                json{{"point", 0}, {"rows", {cells}}, {"digest", "0123456789abcdef"}}.dump() + "\n");
        const auto again = ddlsim::tools::parse_csv(testing::read_file(out));
        REQUIRE(again.size() == 3);
        CHECK(again[0] == head);
        CHECK(again[1][col("iteration_time_s")] == rows[1][col("iteration_time_s")]);
    }
}

TEST_CASE("exit 2, not 1: a profile naming a profile, a profile's bad key, and a plot of a sweep with no result") {
    const Dir d;
    json nested = json::parse(kProfile);
    nested["device"]["profile"] = "calib.json";
    d.write("calib.json", nested.dump());
    const std::string scen = d.write("s.json", kWithProfile);
    // The error names the scenario's key and the profile file with the key inside it.
    bad_input(run_cli({"check", scen}), {"$.device.profile", "calib.json: $.device.profile", "another profile"});
    json bad = json::parse(kProfile);
    bad["device"]["peak_flops"] = "fast";
    d.write("calib.json", bad.dump());
    bad_input(run_cli({"check", scen}), {"$.device.profile", "calib.json: $.device.peak_flops"});
    // A key the scenario gives itself beside the profile is blamed on the scenario.
    d.write("calib.json", kProfile);
    json own = json::parse(kWithProfile);
    own["device"]["peak_flops"] = "fast";
    bad_input(run_cli({"check", d.write("own.json", own.dump())}), {": $.device.peak_flops:"});
    // Every point fails: exit 3 with the failures, no plot and no exit 1 from the plotter.
    const testing::CliRun r = run_cli({"sweep", d.write("small.json", kSmall), "--vary", "network.bandwidth=1bps,2bps",
                                       "--out", d.file("o.csv"), "--plot", d.file("o.png"), "--no-progress"});
    INFO(r.err);
    if (r.err.find("matplotlib") != std::string::npos) return;  // --plot needs python3-matplotlib
    CHECK(r.code == ddlsim::tools::kSweepSomePointsFailed);
    CHECK(r.err.find("was not drawn") != std::string::npos);
    CHECK_FALSE(fs::exists(d.file("o.png")));
}

TEST_CASE("blame: a clock overflow names the key that made it, with the numbers") {
    const Dir d;
    const std::string scen = d.write("s.json", kSmall);
    // One iteration's gradients over a 1 bit/s link take longer than the clock holds: the bandwidth.
    bad_input(run_cli({"run", scen, "--set", "network.bandwidth=1bps"}), {"$.network.bandwidth", "bit/s"});
    // A link of a day: the latency.
    bad_input(run_cli({"run", scen, "--set", "network.latency=1000000s"}), {"$.network.latency"});
    // A quantity below its minimum shows the value it was read as (1KB is 1000 bytes, below 1 KiB).
    json ps = json::parse(kSmall);
    ps["architecture"] = {{"kind", "ps"}, {"style", "byteps"}, {"servers", 2}, {"partition_size", "1KB"}};
    bad_input(run_cli({"check", d.write("ps.json", ps.dump())}),
              {"$.architecture.partition_size", "at least 1024 bytes", "(1000 bytes)"});
}

TEST_CASE("third hostile corpus: silently altered input is refused (exit 2, one line, the key named)") {
    const Dir d;
    const std::string scen = d.write("s.json", kSmall);
    // An empty output name would read as "not given": nothing written, exit 0.
    for (const char* option : {"--out", "--trace", "--report"}) {
        CAPTURE(option);
        bad_input(run_cli({"run", scen, option, ""}), {option, "empty"});
    }
    bad_input(run_cli({"compare", scen, "--out", ""}), {"--out", "empty"});
    // 2^64 as a seed wrapped to 0.
    bad_input(run_cli({"check", scen, "--set", "seed=18446744073709551616"}), {"$.seed"});
    // Two spellings of one worker index: one factor silently lost.
    json j = json::parse(kSmall);
    j["stragglers"] = {{"fixed", {{"1", 3}, {"01", 2}}}};
    bad_input(run_cli({"check", d.write("f.json", j.dump())}), {"$.stragglers.fixed.01", "leading zeros"});
    // A variant removing a misspelled key ran as the base.
    bad_input(run_cli({"compare", scen, "--variant", R"(a={"shardng": null})", "--variant", "b={}"}),
              {"--variant", "shardng", "did you mean"});
}

TEST_CASE("third hostile corpus: a clock overflow made by a transport's stream rate names the transport") {
    const Dir d;
    json j = json::parse(kSmall);
    j["network"]["transport"] = {{"kind", "tcp"}, {"stream_rate", "1bps"}};
    bad_input(run_cli({"run", d.write("s.json", j.dump())}), {"$.network.transport", "faster link"});
}

TEST_CASE("third hostile corpus: resolved_scenario reruns to the same result where auto picks transports per link") {
    // A 10 Gbit/s host on a 100 Gbit/s star (tcp on its link, rdma elsewhere), and a DGX H100 preset at 10 Gbit/s
    // (tcp on the NIC ports, rdma on the GPUs' PCIe links to their NICs): the echo pinned one transport for all.
    for (const char* text : {R"({"workers": 2, "model": "resnet50", "batch_size": 8, "iterations": 1, "device": "V100",
              "network": {"topology": "star", "bandwidth": "100Gbps", "latency": "5us", "host_bandwidth": {"h0": "10Gbps"}}})",
                             R"({"workers": 16, "model": "resnet50", "batch_size": 8, "iterations": 1, "device": "H100",
              "network": {"topology": "two_tier", "node": "dgx_h100", "bandwidth": "10Gbps"}})"}) {
        CAPTURE(text);
        const auto s = ddlsim::scenario::load_scenario(json::parse(text));
        json first = ddlsim::scenario::result_json(s, ddlsim::scenario::run_scenario(s));
        const auto again = ddlsim::scenario::load_scenario(first.at("resolved_scenario"));
        json second = ddlsim::scenario::result_json(again, ddlsim::scenario::run_scenario(again));
        first.erase("wall_time_s");
        second.erase("wall_time_s");
        CHECK(first.at("iteration_time_s") == second.at("iteration_time_s"));
        CHECK(first.at("links") == second.at("links"));
    }
}
