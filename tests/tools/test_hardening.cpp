// Results a user can trust. Safe output files (no clobbered FIFO, directory or symlink, no temporary
// left by a signal), units refused without their unit and errors naming the key that is wrong, bad input that
// never exits 1, --seeds spread, FedAvg throughput with availability, and the resolved scenario that
// reproduces a run. Each test states the fact it checks; none compares against a stored golden only.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tests/support/approx.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/unit_parse.hpp"
#include "tests/support/support.hpp"
#include "tools/output_file.hpp"
#include "tools/sweep.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
namespace testing = ddlsim::testing;

namespace {

// A fresh temporary directory for one test.
struct Dir : testing::TempDir {
    Dir() : testing::TempDir("ddlsim_test_harden") {}
};

// The built ddlsim with `args` (after the shell assignments `env`), limited to 120 s.
testing::CliRun run_cli(const std::vector<std::string>& args, const std::string& env = "") {
    return testing::run_ddlsim(args, {.env = env, .timeout_s = 120, .stdin_file = ""});
}

// Bad input: exit 2, exactly one stderr line starting with `prefix` and holding each of `words`.
void bad_input(const testing::CliRun& r, const std::string& prefix, std::initializer_list<std::string> words = {}) {
    INFO("stderr: " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.rfind(prefix, 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find("internal error") == std::string::npos);
    for (const auto& w : words) CHECK_MESSAGE(r.err.find(w) != std::string::npos, "stderr lacks \"" << w << "\"");
}

const std::string kGood = testing::star_scenario({.iterations = 2, .architecture = testing::ring_allreduce()}).dump();

fs::file_type type_of(const std::string& p) {
    std::error_code ec;
    return fs::symlink_status(p, ec).type();
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// 1. Safe outputs

TEST_CASE("outputs: a FIFO, a directory or a socket as --out / --trace / sweep --out is refused and kept") {
    const Dir d;
    const std::string scen = d.write("s.json", kGood);
    const std::string fifo = d.file("pipe");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    fs::create_directories(d.file("folder"));
    const std::string sock = d.file("sock");
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
    const bool have_socket =
        sock.size() < sizeof addr.sun_path && ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);

    bad_input(run_cli({"run", scen, "--out", fifo}), "error: " + fifo + ": ", {"FIFO", "expected a regular file"});
    bad_input(run_cli({"run", scen, "--trace", fifo}), "error: " + fifo + ": ", {"FIFO"});
    bad_input(run_cli({"run", scen, "--out", d.file("folder")}), "error: " + d.file("folder") + ": ", {"directory"});
    bad_input(run_cli({"sweep", scen, "--vary", "workers=2,4", "--out", fifo}), "error: " + fifo + ": ", {"FIFO"});
    if (have_socket) {
        bad_input(run_cli({"run", scen, "--out", sock}), "error: " + sock + ": ", {"socket"});
        CHECK(type_of(sock) == fs::file_type::socket);
    }
    // A symbolic link to the FIFO is followed and refused too, naming both.
    fs::create_symlink(fifo, d.file("link_to_pipe"));
    bad_input(run_cli({"run", scen, "--out", d.file("link_to_pipe")}), "error: " + d.file("link_to_pipe"), {"FIFO"});
    // Nothing was replaced and nothing was added.
    CHECK(type_of(fifo) == fs::file_type::fifo);
    CHECK(type_of(d.file("folder")) == fs::file_type::directory);
    CHECK(type_of(d.file("link_to_pipe")) == fs::file_type::symlink);
    std::vector<std::string> want{"folder", "link_to_pipe", "pipe", "s.json"};
    if (have_socket) want.emplace_back("sock");
    std::sort(want.begin(), want.end());
    CHECK(d.entries() == want);
}

TEST_CASE("outputs: a symbolic link is followed: its target is written, the link stays a link") {
    const Dir d;
    const std::string scen = d.write("s.json", kGood);
    fs::create_directories(d.file("real"));
    d.write("real/result.json", "old\n");
    fs::create_symlink("real/result.json", d.file("link.json"));  // relative to the link's folder
    const testing::CliRun r = run_cli({"run", scen, "--out", d.file("link.json")});
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(type_of(d.file("link.json")) == fs::file_type::symlink);
    const json result = json::parse(testing::read_file(d.file("real/result.json")));
    CHECK(result["iteration_time_s"].get<double>() > 0.0);
    // A dangling link: the file it names is created.
    fs::create_symlink("real/new.json", d.file("dangling.json"));
    CHECK(run_cli({"run", scen, "--out", d.file("dangling.json")}).code == 0);
    CHECK(type_of(d.file("dangling.json")) == fs::file_type::symlink);
    CHECK(fs::is_regular_file(d.file("real/new.json")));
    // No temporary file anywhere.
    CHECK(d.entries() == std::vector<std::string>{"dangling.json", "link.json", "real", "s.json"});
    std::vector<std::string> real;
    for (const auto& e : fs::directory_iterator(d.file("real"))) real.push_back(e.path().filename().string());
    std::sort(real.begin(), real.end());
    CHECK(real == std::vector<std::string>{"new.json", "result.json"});
}

TEST_CASE("outputs: --out naming the scenario file itself is refused, the scenario untouched") {
    const Dir d;
    const std::string scen = d.write("s.json", kGood);
    bad_input(run_cli({"run", scen, "--out", scen}), "error: --out " + scen + ": ", {"the scenario file"});
    bad_input(run_cli({"sweep", scen, "--vary", "workers=2", "--out", scen}), "error: --out " + scen + ": ",
              {"the scenario file"});
    CHECK(testing::read_file(scen) == kGood);
}

TEST_CASE("outputs: SIGINT, SIGTERM and SIGHUP during the final write leave no temporary and the old file") {
    // The test hook holds the temporary file open 20 s before the rename; the signal arrives once the
    // temporary exists: the process dies of it, the temporary is gone, the previous --out is intact.
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
        CAPTURE(sig);
        const Dir d;
        const std::string scen = d.write("s.json", kGood);
        const std::string out = d.write("result.json", "previous\n");
        const std::string script = "DDLSIM_TEST_WRITE_PAUSE_MS=20000 " + testing::shell_quote(DDLSIM_BINARY) + " run " +
                                   testing::shell_quote(scen) + " --out " + testing::shell_quote(out) +
                                   " >/dev/null 2>&1 & pid=$!; for i in $(seq 1 600); do ls " +
                                   testing::shell_quote(d.file("")) +
                                   " -a | grep -q ddlsim- && break; sleep 0.05; done; kill -" + std::to_string(sig) +
                                   " $pid; wait $pid; exit $?";
        const int status = std::system(("bash -c " + testing::shell_quote(script)).c_str());
        REQUIRE(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 128 + sig);
        CHECK(d.entries() == std::vector<std::string>{"result.json", "s.json"});
        CHECK(testing::read_file(out) == "previous\n");
    }
}

TEST_CASE("outputs: write_file_atomically keeps an existing file's permissions") {
    const Dir d;
    const std::string f = d.write("r.json", "x");
    fs::permissions(f, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
    ddlsim::sim::write_file_atomically(f, "y");
    CHECK(testing::read_file(f) == "y");
    CHECK((fs::status(f).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
    CHECK(d.entries() == std::vector<std::string>{"r.json"});
}

// ---------------------------------------------------------------------------------------------------------
// 5. Units, and errors naming the key that is wrong

TEST_CASE("units: a bare-number bandwidth is refused, naming the key and both unit forms") {
    const Dir d;
    const std::string scen = d.write("s.json", kGood);
    bad_input(run_cli({"run", scen, "--set", "network.bandwidth=100"}), "error: " + scen + ": $.network.bandwidth: ",
              {"\"10Gbps\"", "\"1.25GBps\"", "bits per second", "got 100"});
    bad_input(run_cli({"check", scen, "--set", "network.bandwidth=10e9"}),
              "error: " + scen + ": $.network.bandwidth: ", {"with its unit"});
}

TEST_CASE("units: format_* write the largest exact unit and parse back to the identical value") {
    using namespace ddlsim::sim;
    CHECK(format_bandwidth(parse_bandwidth("10Gbps")) == "10Gbps");
    CHECK(format_bandwidth(parse_bandwidth("1.25GBps")) == "10Gbps");  // 1.25e9 B/s = 10 Gbit/s exactly
    CHECK(format_time(parse_time("5us")) == "5us");
    CHECK(format_time(Time::ps(1500)) == "1500ps");
    CHECK(format_bytes(parse_bytes("25MB")) == "25MB");
    CHECK(format_bytes(parse_bytes("4MiB")) == "4MiB");
    for (const double v : {1.0, 3.0, 12345.678, 1.195e7, 9.87654321e11, 1e18})
        CHECK(parse_bandwidth(format_bandwidth(Bandwidth::bytes_per_s(v))).bytes_per_s() == v);
    for (const std::int64_t ps : {1LL, 999LL, 1000LL, 123456789LL, 5'000'000'000'000LL})
        CHECK(parse_time(format_time(Time::ps(ps))).ps() == ps);
    for (const double v : {0.0, 1.0, 25e6, 1048576.0, 3.3333}) CHECK(parse_bytes(format_bytes(Bytes{v})).value() == v);
}

TEST_CASE("units: --vary ranges carry units (10Gbps..400Gbps:x2, 1ms..3ms:+1ms)") {
    using ddlsim::tools::parse_vary;
    CHECK(parse_vary("network.bandwidth=10Gbps..400Gbps:x2").values ==
          std::vector<std::string>{"10Gbps", "20Gbps", "40Gbps", "80Gbps", "160Gbps", "320Gbps"});
    CHECK(parse_vary("network.latency=1ms..3ms:+1ms").values == std::vector<std::string>{"1ms", "2ms", "3ms"});
    CHECK(parse_vary("network.latency=1ms..3ms").values == std::vector<std::string>{"1ms", "2ms", "3ms"});
    CHECK_THROWS_AS((void)parse_vary("network.bandwidth=10Gbps..4GBps:x2"), ddlsim::tools::SweepError);
    // Every value is a bandwidth the loader accepts.
    for (const auto& v : parse_vary("network.bandwidth=10Gbps..400Gbps:x2").values)
        CHECK_NOTHROW((void)ddlsim::sim::parse_bandwidth(v));
}

TEST_CASE("units: a sweep over a bandwidth range with units runs every point") {
    const Dir d;
    const std::string scen = d.write("s.json", kGood);
    const testing::CliRun r = run_cli({"sweep", scen, "--vary", "network.bandwidth=10Gbps..40Gbps:x2", "--out",
                                       d.file("o.csv"), "--no-progress", "--jobs", "1"});
    INFO(r.err);
    CHECK(r.code == 0);
    const auto rows = ddlsim::tools::parse_csv(testing::read_file(d.file("o.csv")));
    REQUIRE(rows.size() == 4);
    const auto err_col = std::find(rows[0].begin(), rows[0].end(), "error") - rows[0].begin();
    for (std::size_t i = 1; i < rows.size(); ++i) CHECK(rows[i][static_cast<std::size_t>(err_col)].empty());
}

TEST_CASE("units: a segment size too small is blamed on segment_size, not on workers") {
    const Dir d;
    const std::string scen = d.write("s.json", R"({"workers": 64, "model": "resnet50", "batch_size": 32,
      "iterations": 1, "device": "V100", "network": {"topology": "star", "bandwidth": "10Gbps", "latency": "5us"},
      "architecture": {"kind": "allreduce", "algorithm": "tree", "segment_size": "1B"}})");
    bad_input(run_cli({"check", scen}), "error: " + scen + ": $.architecture.segment_size: ", {"larger segment size"});
    // The same run with a sensible segment size is accepted: the workers were never the problem.
    CHECK(run_cli({"check", scen, "--set", "architecture.segment_size=1MB"}).code == 0);
}

// ---------------------------------------------------------------------------------------------------------
// 6. Bad input never exits 1

TEST_CASE("bad input: overflowing magnitudes, clock overflow, too few samples and memory exit 2 with one line") {
    const Dir d;
    const std::string scen = d.write("s.json", kGood);
    bad_input(run_cli({"run", scen, "--set", "network.bandwidth=1e308Gbps"}),
              "error: " + scen + ": $.network.bandwidth: ", {"8Ebps"});
    // A latency within the time format's range whose sum overflows the event clock.
    bad_input(run_cli({"run", scen, "--set", "network.latency=5e6s"}),
              "error: " + scen + ": $.network.latency: ", {"106 days", "below"});
    const std::string leaf = d.write("leaf.json", R"({"workers": 8, "model": "resnet50", "batch_size": 32,
      "iterations": 1, "device": "V100", "network": {"topology": "leaf_spine", "bandwidth": "10Gbps",
      "latency": "5us", "hosts_per_leaf": 4, "spines": 2, "oversubscription": 1e-300}})");
    bad_input(run_cli({"run", leaf}), "error: " + leaf + ": $.network.oversubscription: ", {"at least"});
    const std::string conv = d.write("conv.json", R"({"workers": 8, "model": "resnet50", "batch_size": 32,
      "device": "V100", "network": {"topology": "star", "bandwidth": "10Gbps", "latency": "5us"},
      "convergence": {"task": "synthetic_mlp", "max_iterations": 4, "train_samples": 4}})");
    bad_input(run_cli({"check", conv}), "error: " + conv + ": $.convergence.train_samples: ", {"at least 8"});
    // Memory estimated up front: a parameter server of 10,000 workers and 1,000 servers (about 5 GB of plans)
    // and a ring with Top-k at 20,000 workers (n^2 all-gather steps) are refused before anything is built.
    const std::string ps = d.write("ps.json", R"({"workers": 10000, "model": "resnet50", "batch_size": 32,
      "iterations": 1, "device": "V100", "network": {"topology": "star", "bandwidth": "10Gbps", "latency": "5us"},
      "architecture": {"kind": "ps", "servers": 1000}})");
    bad_input(run_cli({"run", ps}), "error: " + ps + ": $.workers: ", {"GB of memory", "limit"});
    const std::string topk = d.write("topk.json", R"({"workers": 20000, "model": "resnet50", "batch_size": 32,
      "iterations": 1, "device": "V100",
      "network": {"topology": "star", "bandwidth": "10Gbps", "latency": "5us", "model": "analytic"},
      "compression": {"kind": "topk", "density": 0.01}})");
    bad_input(run_cli({"run", topk}), "error: " + topk + ": $.workers: ", {"GB of memory"});
}

TEST_CASE("bad input: only the event clock's overflow is bad input, other range errors stay internal") {
    using ddlsim::sim::Time;
    CHECK_THROWS_AS((void)(Time::max() + Time::ps(1)), ddlsim::sim::TimeOverflow);
    CHECK_THROWS_AS((void)Time::seconds(1e7), ddlsim::sim::TimeOverflow);
    // A negative time is a bug, not an overflow: a plain out_of_range, which run_scenario does not turn into
    // a ScenarioError (it reaches main as "internal error", exit 1).
    bool overflow = false;
    try {
        (void)Time::seconds(-1.0);
    } catch (const ddlsim::sim::TimeOverflow&) {
        overflow = true;
    } catch (const std::out_of_range&) {
    }
    CHECK_FALSE(overflow);
}

// ---------------------------------------------------------------------------------------------------------
// 8. --seeds

TEST_CASE("seeds: --seeds 3 reports mean, stddev, min and max equal to three single-seed runs") {
    const Dir d;
    const std::string scen = d.write("s.json", R"({"workers": 4, "model": "resnet50", "batch_size": 32,
      "iterations": 3, "device": "V100", "seed": 7,
      "network": {"topology": "star", "bandwidth": "10Gbps", "latency": "5us"},
      "stragglers": {"distribution": "lognormal", "sigma": 0.5}})");
    const testing::CliRun r = run_cli({"run", scen, "--seeds", "3", "--out", d.file("r.json")});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json res = json::parse(testing::read_file(d.file("r.json")));
    REQUIRE(res.contains("seeds"));
    const json& s = res["seeds"];
    CHECK(s["count"] == 3);
    CHECK(s["seeds"] == json::array({7, 8, 9}));
    // The same figures from three separate runs with seed 7, 8, 9 (metamorphic: --seeds is just those runs).
    std::vector<double> t;
    for (int seed : {7, 8, 9}) {
        auto sc = ddlsim::scenario::load_scenario_file(scen, {"seed=" + std::to_string(seed)});
        t.push_back(ddlsim::scenario::run_scenario(sc).jobs[0].iteration_time_s);
    }
    const double mean = (t[0] + t[1] + t[2]) / 3.0;
    double ss = 0.0;
    for (double x : t) ss += (x - mean) * (x - mean);
    CHECK(s["iteration_time_s"]["mean"].get<double>() == ddlsim::testing::approx(mean).epsilon(1e-12));
    CHECK(s["iteration_time_s"]["stddev"].get<double>() == ddlsim::testing::approx(std::sqrt(ss / 2.0)).epsilon(1e-9));
    CHECK(s["iteration_time_s"]["min"].get<double>() == *std::min_element(t.begin(), t.end()));
    CHECK(s["iteration_time_s"]["max"].get<double>() == *std::max_element(t.begin(), t.end()));
    // Throughput is samples / iteration time for each seed: its max comes from the fastest seed.
    CHECK(s["throughput_samples_per_s"]["max"].get<double>() ==
          ddlsim::testing::approx(4 * 32 / *std::min_element(t.begin(), t.end())));
    // The first seed's result is the main result.
    CHECK(res["iteration_time_s"].get<double>() == t[0]);
    // Lognormal stragglers with sigma 0.5 spread more than 1 %: the summary says so.
    CHECK(s["relative_spread"].get<double>() > 0.01);
    CHECK(r.out.find("exceeds 1 %") != std::string::npos);
}

TEST_CASE("seeds: a deterministic scenario has zero spread and no warning") {
    const Dir d;
    const std::string scen = d.write("s.json", kGood);
    const testing::CliRun r = run_cli({"run", scen, "--seeds", "2", "--out", d.file("r.json")});
    REQUIRE(r.code == 0);
    const json s = json::parse(testing::read_file(d.file("r.json")))["seeds"];
    CHECK(s["iteration_time_s"]["stddev"].get<double>() == 0.0);
    CHECK(s["iteration_time_s"]["min"] == s["iteration_time_s"]["max"]);
    CHECK(r.out.find("exceeds 1 %") == std::string::npos);
    bad_input(run_cli({"run", scen, "--seeds", "0"}), "error: ");
}

// ---------------------------------------------------------------------------------------------------------
// 9. FedAvg counts the samples actually processed

TEST_CASE("fedavg: throughput = clients that took part x local steps x batch / round time") {
    // With availability < 1 fewer than clients_per_round may take part; the throughput counts those that did.
    for (const double availability : {1.0, 0.5, 1e-9}) {
        CAPTURE(availability);
        json j = json::parse(R"({"workers": 8, "model": "resnet50", "batch_size": 16, "iterations": 20,
          "device": "V100", "network": {"topology": "star", "bandwidth": "10Gbps", "latency": "5us"},
          "architecture": {"kind": "ps", "servers": 1},
          "sync": {"kind": "fedavg", "clients_per_round": 8, "local_steps": 2}})");
        j["sync"]["availability"] = availability;
        const auto s = ddlsim::scenario::load_scenario(j);
        const auto r = ddlsim::scenario::run_scenario(s).jobs[0];
        REQUIRE(r.clients_per_round_mean > 0.0);
        CHECK(r.throughput_samples_per_s ==
              ddlsim::testing::approx(r.clients_per_round_mean * 2 * 16 / r.iteration_time_s).epsilon(1e-12));
        if (availability == 1e-9) CHECK(r.clients_per_round_mean == 1.0);  // a round needs one client
        if (availability == 1.0) CHECK(r.clients_per_round_mean == 8.0);
    }
}

// ---------------------------------------------------------------------------------------------------------
// 4. The resolved scenario

namespace {

// The result without what legitimately differs between two runs: wall time, and where a value came from
// (a default in the original, the scenario in the resolved one).
json comparable(json j) {
    j.erase("wall_time_s");
    std::vector<std::string> drop;
    const auto flat = j.flatten();
    for (const auto& [k, v] : flat.items())
        if (k.size() > 7 && k.compare(k.size() - 7, 7, "_source") == 0) drop.push_back(k);
    json f = flat;
    for (const auto& k : drop) f.erase(k);
    return f.unflatten();
}

}  // namespace

TEST_CASE("resolved: every example's resolved scenario reproduces its result and resolves to itself") {
    const fs::path examples = fs::path(DDLSIM_SOURCE_DIR) / "scenarios" / "examples";
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(examples))
        if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    REQUIRE(files.size() > 10);
    for (const auto& f : files) {
        CAPTURE(f.filename().string());
        json j = ddlsim::scenario::read_json_file(f.string());
        if (!j.contains("convergence")) j["iterations"] = 2;  // quick; iterations are resolved like any key
        const auto s = ddlsim::scenario::load_scenario(j, examples.string());
        const json resolved = ddlsim::scenario::resolved_scenario(s);
        const auto again = ddlsim::scenario::load_scenario(resolved, examples.string());
        CHECK(ddlsim::scenario::resolved_scenario(again) == resolved);  // a fixed point
        const json a = ddlsim::scenario::result_json(s, ddlsim::scenario::run_scenario(s));
        const json b = ddlsim::scenario::result_json(again, ddlsim::scenario::run_scenario(again));
        CHECK(a["resolved_scenario"] == resolved);
        CHECK(comparable(a) == comparable(b));
    }
}

TEST_CASE("resolved: it states the defaults (bandwidth, algorithm, precision, seed) and check --print prints it") {
    const Dir d;
    const std::string scen = d.write("s.json", R"({"workers": 4, "model": "resnet50", "batch_size": 32,
      "device": "V100", "network": {"topology": "star", "bandwidth": "10Gbps", "latency": "5us"}})");
    const testing::CliRun p = run_cli({"check", scen, "--print", "--set", "network.bandwidth=25Gbps"});
    REQUIRE(p.code == 0);
    const json printed = json::parse(p.out);
    CHECK(printed["network"]["bandwidth"] == "25Gbps");
    CHECK(printed["network"]["model"] == "flow");
    CHECK(printed["network"]["hosts"] == 4);
    CHECK(printed["architecture"]["kind"] == "allreduce");
    CHECK(printed["architecture"]["algorithm"] == "ring");
    CHECK(printed["device"]["precision"] == "fp32");
    CHECK(printed["iterations"] == 10);
    CHECK(printed["seed"] == 0);
    CHECK(printed["sync"]["kind"] == "bsp");
    // `run` on the printed scenario gives the same result as the original with the override.
    const std::string resolved = d.write("resolved.json", p.out);
    REQUIRE(
        run_cli({"run", scen, "--set", "network.bandwidth=25Gbps", "--set", "iterations=2", "--out", d.file("a.json")})
            .code == 0);
    REQUIRE(run_cli({"run", resolved, "--set", "iterations=2", "--out", d.file("b.json")}).code == 0);
    CHECK(comparable(json::parse(testing::read_file(d.file("a.json")))) ==
          comparable(json::parse(testing::read_file(d.file("b.json")))));
}

TEST_CASE("resolved: the summary header lists the --set overrides") {
    const Dir d;
    const std::string scen = d.write("s.json", kGood);
    const testing::CliRun r = run_cli({"run", scen, "--set", "network.bandwidth=25Gbps", "--set", "iterations=1"});
    REQUIRE(r.code == 0);
    const auto first_blank = r.out.find("\n\n");
    const std::string header = r.out.substr(0, first_blank);
    CHECK(header.find("--set network.bandwidth=25Gbps --set iterations=1") != std::string::npos);
    CHECK(run_cli({"run", scen}).out.find("--set") == std::string::npos);
}

// ---------------------------------------------------------------------------------------------------------
// 2. --resume only resumes the same sweep, and kept rows keep every column

namespace {

const char* const kPs = R"({"workers": 4, "model": "resnet50", "batch_size": 32, "iterations": 3, "device": "V100",
  "network": {"topology": "star", "bandwidth": "10Gbps", "latency": "5us"},
  "architecture": {"kind": "ps", "servers": 1}})";

}  // namespace

TEST_CASE("resume: another --vary set, other values or a changed scenario are refused, the CSV untouched") {
    const Dir d;
    const std::string scen = d.write("s.json", kPs);
    const std::string out = d.file("o.csv");
    REQUIRE(run_cli({"sweep", scen, "--vary", "workers=2,4", "--vary", "network.bandwidth=10Gbps,25Gbps", "--out", out,
                     "--no-progress"})
                .code == 0);
    const std::string before = testing::read_file(out);
    bad_input(run_cli({"sweep", scen, "--vary", "workers=2,4", "--out", out, "--resume", "--no-progress"}),
              "error: " + out + ": --resume: ", {"varying workers, network.bandwidth"});
    bad_input(run_cli({"sweep", scen, "--vary", "workers=2,4,8", "--vary", "network.bandwidth=10Gbps,25Gbps", "--out",
                       out, "--resume", "--no-progress"}),
              "error: " + out + ": --resume: ", {"values differ"});
    d.write("s.json", std::string(kPs).replace(std::string(kPs).find("\"iterations\": 3"), 15, "\"iterations\": 4"));
    bad_input(run_cli({"sweep", scen, "--vary", "workers=2,4", "--vary", "network.bandwidth=10Gbps,25Gbps", "--out",
                       out, "--resume", "--no-progress"}),
              "error: " + out + ": --resume: ", {"changed"});
    CHECK(testing::read_file(out) == before);
    // The same sweep on the original scenario resumes (nothing to do) and leaves the file as it was.
    d.write("s.json", kPs);
    CHECK(run_cli({"sweep", scen, "--vary", "workers=2,4", "--vary", "network.bandwidth=10Gbps,25Gbps", "--out", out,
                   "--resume", "--no-progress"})
              .code == 0);
    CHECK(testing::read_file(out) == before);
}

TEST_CASE("resume: rows kept from an interrupted sweep carry the columns found after the header was written") {
    // ASP's staleness columns are not known when the streamed header is written. The sweep is stopped by
    // SIGTERM during its final rewrite (test hook), which leaves what a kill leaves: the streamed CSV and the
    // journal. The resumed file must hold the staleness of the kept ASP rows, equal to a fresh sweep's.
    const Dir d;
    const std::string scen = d.write("s.json", kPs);
    const std::string out = d.file("o.csv");
    const std::string fresh = d.file("fresh.csv");
    const std::vector<std::string> vary{"--vary", "sync.kind=bsp,asp", "--vary", "workers=2,4"};
    std::vector<std::string> args{"sweep", scen};
    args.insert(args.end(), vary.begin(), vary.end());
    auto with = [&](std::vector<std::string> extra) {
        auto a = args;
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    };
    REQUIRE(run_cli(with({"--out", fresh, "--no-progress", "--jobs", "1"})).code == 0);
    std::string cmd = "DDLSIM_TEST_WRITE_PAUSE_MS=1500 " + testing::shell_quote(DDLSIM_BINARY);
    for (const auto& a : with({"--out", out, "--no-progress", "--jobs", "1"})) cmd += " " + testing::shell_quote(a);
    const std::string script = cmd + " >/dev/null 2>&1 & pid=$!; for i in $(seq 1 1200); do " + "[ \"$(wc -l < " +
                               testing::shell_quote(out + ".rows.jsonl") + " 2>/dev/null)\" = 4 ] && ls -a " +
                               testing::shell_quote(d.file("")) +
                               " | grep -q 'o.csv.ddlsim-' && break; sleep 0.05; done; kill -TERM " +
                               "$pid; wait $pid; exit $?";
    const int status = std::system(("bash -c " + testing::shell_quote(script)).c_str());
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 128 + SIGTERM);
    const auto streamed = ddlsim::tools::parse_csv(testing::read_file(out));
    REQUIRE(streamed.size() == 5);
    CHECK(std::find(streamed[0].begin(), streamed[0].end(), "staleness.mean") == streamed[0].end());
    REQUIRE(run_cli(with({"--out", out, "--no-progress", "--resume"})).code == 0);
    const auto a = ddlsim::tools::parse_csv(testing::read_file(out));
    const auto b = ddlsim::tools::parse_csv(testing::read_file(fresh));
    REQUIRE(a.size() == 5);
    REQUIRE(a[0] == b[0]);  // the same, final header
    const auto col = static_cast<std::size_t>(std::find(a[0].begin(), a[0].end(), "staleness.mean") - a[0].begin());
    REQUIRE(col < a[0].size());
    const auto wall = static_cast<std::size_t>(std::find(a[0].begin(), a[0].end(), "wall_time_s") - a[0].begin());
    for (std::size_t r = 1; r < 5; ++r) {
        CAPTURE(r);
        auto x = a[r], y = b[r];
        x[wall] = y[wall] = "";
        CHECK(x == y);  // every column, staleness included
    }
    CHECK_FALSE(a[3][col].empty());  // point 2: asp, 2 workers
    CHECK_FALSE(fs::exists(out + ".rows.jsonl"));
}
