// `ddlsim sweep` as a library (tools/sweep.hpp): --vary parsing and ranges, the cartesian product, CSV quoting
// and reading, flattening, and end-to-end sweeps through run_sweep (rows, columns, values equal to a direct
// run and to the docs/CONTRACT.md §4 closed form, failing points, --resume, --jobs 1 vs 4, --format json).
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/support.hpp"
#include "tools/sweep.hpp"
#include "tools/sweep_detail.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace ddlsim;
using tools::parse_vary;

namespace {

struct Table {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
    [[nodiscard]] std::size_t col(const std::string& name) const {
        const auto it = std::find(header.begin(), header.end(), name);
        REQUIRE_MESSAGE(it != header.end(), "no column " << name);
        return static_cast<std::size_t>(it - header.begin());
    }
    [[nodiscard]] const std::string& at(std::size_t row, const std::string& name) const { return rows[row][col(name)]; }
};

Table read_table(const std::string& path) {
    auto recs = tools::parse_csv(testing::read_file(path));
    Table t;
    REQUIRE(!recs.empty());
    t.header = recs.front();
    t.rows.assign(recs.begin() + 1, recs.end());
    for (const auto& r : t.rows) REQUIRE(r.size() == t.header.size());
    return t;
}

// One layer of S bytes with explicit compute times on an idle star (docs/CONTRACT.md §4 ring closed form).
constexpr double kS = 8e6, kFwd = 0.010, kBwd = 0.020, kUpd = 0.001, kL = 5e-6;
json one_layer_ring() {
    return testing::star_scenario({.model = testing::one_layer_model(kS, kFwd, kBwd, kUpd),
                                   .batch_size = 8,
                                   .iterations = 2,
                                   .transport = "ideal",
                                   .architecture = testing::ring_allreduce()});
}

tools::SweepOptions options(const std::string& scenario, std::vector<std::string> vary, const std::string& out) {
    tools::SweepOptions o;
    o.scenario_file = scenario;
    o.vary = std::move(vary);
    o.out = out;
    o.jobs = 2;
    o.progress = false;
    return o;
}

std::string example(const std::string& name) {
    return std::string(DDLSIM_SOURCE_DIR) + "/scenarios/examples/" + name;
}

// The CSV text without one column (wall_time_s differs from run to run).
std::string without_column(const std::string& path, const std::string& column) {
    auto t = read_table(path);
    const auto c = t.col(column);
    std::string out;
    t.rows.insert(t.rows.begin(), t.header);
    for (auto& r : t.rows) {
        r.erase(r.begin() + static_cast<std::ptrdiff_t>(c));
        out += tools::csv_line(r);
    }
    return out;
}

}  // namespace

TEST_CASE("sweep: --vary lists take JSON values or strings, like --set") {
    auto v = parse_vary("network.bandwidth=1Gbps,10Gbps");
    CHECK(v.path == "network.bandwidth");
    CHECK(v.values == std::vector<std::string>{"1Gbps", "10Gbps"});
    CHECK(parse_vary("workers=4,8").values == std::vector<std::string>{"4", "8"});
    CHECK(parse_vary("architecture.kind=ps,allreduce").values == std::vector<std::string>{"ps", "allreduce"});
    // Commas inside JSON arrays, objects and strings do not split.
    v = parse_vary(R"(placement=["a","b"],{"x":[1,2]},"c,d")");
    CHECK(v.values == std::vector<std::string>{R"(["a","b"])", R"({"x":[1,2]})", R"("c,d")"});
    // A relative file name with ".." is a value, not a range.
    CHECK(parse_vary("network.file=../t.json").values == std::vector<std::string>{"../t.json"});
    // Lists and ranges mix.
    CHECK(parse_vary("workers=1,4..16:x2,100").values == std::vector<std::string>{"1", "4", "8", "16", "100"});
}

TEST_CASE("sweep: ranges x factor, + step, plain, decimals") {
    CHECK(parse_vary("workers=4..1024:x2").values.size() == 9);
    CHECK(parse_vary("workers=4..1024:x2").values.back() == "1024");
    CHECK(parse_vary("workers=4..1000:x2").values.back() == "512");
    CHECK(parse_vary("workers=2..10:+4").values == std::vector<std::string>{"2", "6", "10"});
    CHECK(parse_vary("workers=2..5").values == std::vector<std::string>{"2", "3", "4", "5"});
    CHECK(parse_vary("sync.x=0.1..0.5:+0.1").values == std::vector<std::string>{"0.1", "0.2", "0.3", "0.4", "0.5"});
    CHECK(parse_vary("a=1..10:x1.5").values ==
          std::vector<std::string>{"1", "1.5", "2.25", "3.375", "5.0625", "7.59375"});
    CHECK(parse_vary("a=-2..2:+2").values == std::vector<std::string>{"-2", "0", "2"});
    CHECK(parse_vary("a=1e6..1e8:x10").values == std::vector<std::string>{"1000000", "10000000", "100000000"});
    CHECK(parse_vary("workers=2..10000:+1").values.size() == 9999);
}

TEST_CASE("sweep: bad --vary specs are rejected") {
    for (const char* bad :
         {"workers", "=4", "workers=", "workers=4,,8", "workers=8..4", "workers=4..8:+0", "workers=4..8:x1",
          "workers=0..8:x2", "workers=4..8:*2", "workers=4..8:x", ".a=1", "a..b=1", "a.=1", "workers=1..100000000"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS((void)parse_vary(bad), tools::SweepError);
    }
    std::vector<tools::VarySpec> huge(3, parse_vary("a=1..1000"));
    CHECK_THROWS_AS((void)tools::sweep_size(huge), tools::SweepError);
}

TEST_CASE("sweep: cartesian product, first --vary outermost") {
    const std::vector<tools::VarySpec> specs{parse_vary("a=1,2"), parse_vary("b=x,y,z")};
    REQUIRE(tools::sweep_size(specs) == 6);
    CHECK(tools::point_values(specs, 0) == std::vector<std::string>{"1", "x"});
    CHECK(tools::point_values(specs, 1) == std::vector<std::string>{"1", "y"});
    CHECK(tools::point_values(specs, 2) == std::vector<std::string>{"1", "z"});
    CHECK(tools::point_values(specs, 3) == std::vector<std::string>{"2", "x"});
    CHECK(tools::point_values(specs, 5) == std::vector<std::string>{"2", "z"});
}

TEST_CASE("sweep: CSV quoting per RFC 4180 round-trips") {
    CHECK(tools::csv_field("plain") == "plain");
    CHECK(tools::csv_field("a,b") == "\"a,b\"");
    CHECK(tools::csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
    CHECK(tools::csv_field("two\nlines") == "\"two\nlines\"");
    CHECK(tools::csv_field("") == "");
    const std::vector<std::string> rec{"1", "a,b", "q\"q", "", "x\ny", "[\"a\",\"b\"]"};
    const auto text = tools::csv_line(rec) + tools::csv_line({"2"});
    const auto parsed = tools::parse_csv(text);
    REQUIRE(parsed.size() == 2);
    CHECK(parsed[0] == rec);
    // A record cut off before its newline (an interrupted write) is dropped.
    CHECK(tools::parse_csv(text + "3,partial").size() == 2);
}

TEST_CASE("sweep: flattening with dots, arrays dropped, one row per job") {
    const json r{{"a", 1}, {"b", {{"c", 2.5}, {"d", {{"e", "s"}}}}}, {"arr", {1, 2}}, {"links", {{"busiest", {1}}}}};
    const auto rows = tools::flatten_result(r);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].at("a") == 1);
    CHECK(rows[0].at("b.c") == 2.5);
    CHECK(rows[0].at("b.d.e") == "s");
    CHECK_FALSE(rows[0].contains("arr"));
    CHECK_FALSE(rows[0].contains("links.busiest"));
    const json multi{
        {"events", 7},
        {"jobs", {{{"x", 1}, {"scenario", {{"name", "j0"}}}}, {{"x", 2}, {"scenario", {{"name", "j1"}}}}}}};
    const auto mrows = tools::flatten_result(multi);
    REQUIRE(mrows.size() == 2);
    CHECK(mrows[1].at("job") == "j1");
    CHECK(mrows[1].at("x") == 2);
    CHECK(mrows[1].at("events") == 7);
    CHECK(tools::cell_text(json(nullptr)).empty());
    CHECK(tools::cell_text(json("10Gbps")) == "10Gbps");
    const auto cols = tools::result_columns();
    CHECK(cols.front() == "iteration_time_s");
    for (const char* k : {"scaling_efficiency", "compute.forward_s", "links.mean_utilization", "wall_time_s"})
        CHECK(std::find(cols.begin(), cols.end(), k) != cols.end());
}

TEST_CASE("sweep: end to end on an example, values equal direct runs") {
    const testing::TempDir dir("ddlsim_sweep_test");
    const auto scen = example("resnet50_ring_16xV100.json");
    const auto out = dir / "r.csv";
    std::ostringstream err;
    REQUIRE(tools::run_sweep(options(scen, {"workers=2,4", "network.bandwidth=10Gbps,25Gbps"}, out), err) == 0);
    CHECK(err.str().empty());
    const auto t = read_table(out);
    REQUIRE(t.rows.size() == 4);
    CHECK(t.header[0] == "point");
    CHECK(t.header[1] == "workers");
    CHECK(t.header[2] == "network.bandwidth");
    CHECK(t.header.back() == "error");
    for (const char* c : {"iteration_time_s", "throughput_samples_per_s", "scaling_efficiency", "compute_time_s",
                          "communication_time_s", "exposed_communication_time_s", "bytes_on_wire_per_iteration",
                          "compute.forward_s", "links.mean_utilization", "events", "wall_time_s"})
        CHECK(std::find(t.header.begin(), t.header.end(), c) != t.header.end());
    const char* expect[4][2] = {{"2", "10Gbps"}, {"2", "25Gbps"}, {"4", "10Gbps"}, {"4", "25Gbps"}};
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(t.at(i, "point") == std::to_string(i));
        CHECK(t.at(i, "workers") == expect[i][0]);
        CHECK(t.at(i, "network.bandwidth") == expect[i][1]);
        CHECK(t.at(i, "error").empty());
        const auto direct = scenario::load_scenario_file(
            scen, {std::string("workers=") + expect[i][0], std::string("network.bandwidth=") + expect[i][1]});
        const auto rj = scenario::result_json(direct, scenario::run_scenario(direct));
        for (const char* c : {"iteration_time_s", "throughput_samples_per_s", "scaling_efficiency",
                              "bytes_on_wire_per_iteration", "events"})
            CHECK(t.at(i, c) == rj[c].dump());
        CHECK(t.at(i, "compute.backward_s") == rj["compute"]["backward_s"].dump());
        CHECK(t.at(i, "scenario.workers") == expect[i][0]);
    }
}

TEST_CASE("sweep: iteration time matches the ring closed form compute + 2(n-1)(2L + S/(nB))") {
    const testing::TempDir dir("ddlsim_sweep_test");
    const auto scen = dir / "ring.json";
    testing::write_file(scen, one_layer_ring().dump());
    const auto out = dir / "r.csv";
    std::ostringstream err;
    REQUIRE(tools::run_sweep(options(scen, {"workers=2..8:x2", "network.bandwidth=1Gbps,10Gbps"}, out), err) == 0);
    const auto t = read_table(out);
    REQUIRE(t.rows.size() == 6);
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
        const double n = std::stod(t.at(i, "workers"));
        const double B = (t.at(i, "network.bandwidth") == "1Gbps" ? 1e9 : 10e9) / 8;
        const double expected = kFwd + kBwd + kUpd + 2 * (n - 1) * (2 * kL + kS / (n * B));
        CAPTURE(i);
        CHECK(std::stod(t.at(i, "iteration_time_s")) == ddlsim::testing::approx(expected).epsilon(1e-6));
    }
}

TEST_CASE("sweep: a failing point is recorded and the sweep goes on") {
    const testing::TempDir dir("ddlsim_sweep_test");
    const auto scen = dir / "ring.json";
    testing::write_file(scen, one_layer_ring().dump());
    const auto out = dir / "r.csv";
    std::ostringstream err;
    // A value refused only with the rest of the scenario (ps beside the ring's "algorithm"), so not before the run.
    CHECK(tools::run_sweep(options(scen, {"architecture.kind=ps,allreduce,allreduce"}, out), err) ==
          tools::kSweepSomePointsFailed);
    CHECK(err.str().find("1 of 3 points failed") != std::string::npos);
    const auto t = read_table(out);
    REQUIRE(t.rows.size() == 3);
    CHECK(t.at(0, "error").find("$.architecture.algorithm") == 0);
    CHECK(t.at(0, "iteration_time_s").empty());
    CHECK(t.at(1, "error").empty());
    CHECK(t.at(2, "error").empty());
    CHECK_FALSE(t.at(2, "iteration_time_s").empty());
}

TEST_CASE("sweep: bad input exits 2 with one line and writes nothing") {
    const testing::TempDir dir("ddlsim_sweep_test");
    const auto scen = dir / "ring.json";
    testing::write_file(scen, one_layer_ring().dump());
    const auto out = dir / "r.csv";
    struct Case {
        std::string scenario;
        std::vector<std::string> vary;
        std::string out;
        std::string message;
    };
    const std::vector<Case> cases{
        {scen, {"workers=4..2"}, out, "error: " + scen + ": --vary workers=4..2: "},
        {scen, {"workers=2", "workers=4"}, out, "already varied"},
        {scen, {"workers.x=2"}, out, "--vary workers.x=2: $.workers"},
        // A key the scenario schema does not declare fails before any point runs (the tables' names).
        {scen, {"net.bandwidth=1Gbps,10Gbps"}, out, "unknown key \"net\" in $ (did you mean \"network\"?)"},
        {scen, {"network.bandwdth=1Gbps"}, out, "unknown key \"bandwdth\" in $.network (did you mean \"bandwidth\"?)"},
        {scen, {"sync.kind.x=1"}, out, "$.sync.kind takes no key \"x\""},
        {scen, {}, out, "--vary"},
        {dir / "missing.json", {"workers=2"}, out, "missing.json: $: "},
        {scen, {"workers=2"}, dir / "no/such/r.csv", "does not exist"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.message);
        std::ostringstream err;
        CHECK(tools::run_sweep(options(c.scenario, c.vary, c.out), err) == 2);
        const std::string text = err.str();
        CHECK(text.find(c.message) != std::string::npos);
        CHECK(std::count(text.begin(), text.end(), '\n') == 1);
        CHECK_FALSE(fs::exists(out));
    }
    auto o = options(scen, {"workers=2"}, out);
    o.plot = dir / "p.pdf";
    std::ostringstream err;
    CHECK(tools::run_sweep(o, err) == 2);
    CHECK(err.str().find(".png or .svg") != std::string::npos);
}

TEST_CASE("sweep: --resume after a truncated file recomputes exactly the missing points") {
    const testing::TempDir dir("ddlsim_sweep_test");
    const auto scen = dir / "ring.json";
    testing::write_file(scen, one_layer_ring().dump());
    const auto out = dir / "r.csv";
    const std::vector<std::string> vary{"workers=2..12:+2", "network.bandwidth=1Gbps,10Gbps"};  // 12 points
    std::ostringstream err;
    REQUIRE(tools::run_sweep(options(scen, vary, out), err) == 0);
    const auto full = read_table(out);
    REQUIRE(full.rows.size() == 12);
    // Keep 5 complete rows, marked so that a kept row can be told from a recomputed one; make one of them
    // failed (must be recomputed) and cut the next one off mid-line, as a kill would. The record vouches for the
    // marked rows (their digests), as it would for rows ddlsim wrote: a row it does not vouch for is recomputed.
    auto marked = full;
    marked.rows.resize(6);
    for (auto& r : marked.rows) r[full.col("events")] = "-1";
    marked.rows[2][full.col("error")] = "internal error: simulated";
    json record = json::parse(testing::read_file(out + ".sweep.json"));
    REQUIRE(record["digests"].size() == 12);
    for (std::size_t i = 0; i < marked.rows.size(); ++i) {
        tools::SweepRow row{i, {}};
        for (std::size_t c = 0; c < marked.header.size(); ++c) row.cells[marked.header[c]] = marked.rows[i][c];
        record["digests"][std::to_string(i)] = tools::sweep_detail::rows_digest({row});
    }
    testing::write_file(out + ".sweep.json", record.dump());
    std::string text = tools::csv_line(marked.header);
    for (std::size_t i = 0; i < 5; ++i) text += tools::csv_line(marked.rows[i]);
    const auto last = tools::csv_line(marked.rows[5]);
    text += last.substr(0, last.size() / 2);
    testing::write_file(out, text);

    auto o = options(scen, vary, out);
    o.resume = true;
    REQUIRE(tools::run_sweep(o, err) == 0);
    const auto t = read_table(out);
    REQUIRE(t.rows.size() == 12);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < 12; ++i) {
        CHECK(t.at(i, "point") == std::to_string(i));
        CHECK(t.at(i, "iteration_time_s") == full.at(i, "iteration_time_s"));
        if (t.at(i, "events") == "-1")
            ++kept;
        else
            CHECK(t.at(i, "events") == full.at(i, "events"));
    }
    CHECK(kept == 4);  // 12 points: 4 kept, 8 recomputed (1 failed, 1 cut off, 6 never written)
    CHECK(t.at(2, "events") != "-1");

    // Resuming a finished sweep recomputes nothing; a sweep with other columns is refused.
    const auto before = testing::read_file(out);
    REQUIRE(tools::run_sweep(o, err) == 0);
    CHECK(testing::read_file(out) == before);
    auto other = options(scen, {"network.bandwidth=1Gbps"}, out);
    other.resume = true;
    std::ostringstream err2;
    CHECK(tools::run_sweep(other, err2) == 2);
    CHECK(err2.str().find("--resume") != std::string::npos);
}

TEST_CASE("sweep: --jobs 1 and --jobs 4 give identical files") {
    const testing::TempDir dir("ddlsim_sweep_test");
    const auto scen = dir / "ring.json";
    testing::write_file(scen, one_layer_ring().dump());
    const std::vector<std::string> vary{"workers=2..16:+1",
                                        R"(architecture={"kind":"allreduce","algorithm":"ring"},{"kind":"ps"})"};
    auto o1 = options(scen, vary, dir / "a.csv");
    o1.jobs = 1;
    auto o4 = options(scen, vary, dir / "b.csv");
    o4.jobs = 4;
    std::ostringstream err;
    REQUIRE_MESSAGE(tools::run_sweep(o1, err) == 0, err.str());
    REQUIRE(tools::run_sweep(o4, err) == 0);
    CHECK(read_table(dir / "a.csv").rows.size() == 30);
    CHECK(without_column(dir / "a.csv", "wall_time_s") == without_column(dir / "b.csv", "wall_time_s"));
}

TEST_CASE("sweep: a multi-job scenario gives one row per job with a job column") {
    const testing::TempDir dir("ddlsim_sweep_test");
    const auto out = dir / "r.csv";
    std::ostringstream err;
    auto o = options(example("two_jobs_shared_racks.json"), {"iterations=2,3"}, out);
    REQUIRE(tools::run_sweep(o, err) == 0);
    const auto t = read_table(out);
    REQUIRE(t.rows.size() == 4);
    CHECK(t.header[1] == "job");
    CHECK(t.at(0, "job") == "resnet-a");
    CHECK(t.at(1, "job") == "resnet-b");
    CHECK(t.at(1, "point") == "0");
    CHECK(t.at(2, "iterations") == "3");
}

TEST_CASE("sweep: --format json writes one object per point") {
    const testing::TempDir dir("ddlsim_sweep_test");
    const auto scen = dir / "ring.json";
    testing::write_file(scen, one_layer_ring().dump());
    const auto out = dir / "r.json";
    auto o = options(scen, {"architecture.kind=ps,allreduce", "network.bandwidth=1Gbps"}, out);
    o.format = tools::SweepFormat::json;
    std::ostringstream err;
    CHECK(tools::run_sweep(o, err) == tools::kSweepSomePointsFailed);
    const json j = json::parse(testing::read_file(out));
    REQUIRE(j.size() == 2);
    CHECK(j[0]["values"]["architecture.kind"] == "ps");
    CHECK(j[0]["error"].is_string());
    CHECK(j[1]["values"]["network.bandwidth"] == "1Gbps");
    CHECK(j[1]["result"]["iteration_time_s"].is_number());
    o.resume = true;
    CHECK(tools::run_sweep(o, err) == tools::kSweepSomePointsFailed);
    CHECK(json::parse(testing::read_file(out)).size() == 2);
}

TEST_CASE("sweep: --objective ranks the points and prints the best and its runner-up") {
    const testing::TempDir dir("ddlsim_sweep_test");
    json j = testing::star_scenario({.iterations = 2, .architecture = testing::ring_allreduce()});
    j["training"] = {{"samples_to_target", 2e6}, {"price_per_gpu_hour", 2}};
    const auto scen = dir.write("ttt.json", j.dump());
    const auto out = dir / "r.csv";
    std::ostringstream err, report;
    auto o = options(scen, {"workers=2,4,8", "network.bandwidth=1Gbps,100Gbps"}, out);
    o.objective = "cost";
    o.report = &report;
    REQUIRE(tools::run_sweep(o, err) == 0);
    // The oracle: the smallest and second-smallest cost cells of the file itself.
    const auto t = read_table(out);
    std::vector<std::pair<double, std::string>> costs;
    for (std::size_t i = 0; i < t.rows.size(); ++i) costs.emplace_back(std::stod(t.at(i, "cost")), t.at(i, "point"));
    std::sort(costs.begin(), costs.end());
    const std::string text = report.str();
    INFO(text);
    CHECK(text.find("objective cost (6 of 6 rows ranked, lowest first)") == 0);
    CHECK(text.find("best       point " + costs[0].second + " (") != std::string::npos);
    CHECK(text.find("runner-up  point " + costs[1].second + " (") != std::string::npos);
    // Cost is GPU-hours x price: more workers at 100 Gbit/s still cost more GPU-hours here only if scaling is
    // below linear; whichever wins, the 1 Gbit/s points cannot beat the same worker count at 100 Gbit/s.
    for (std::size_t i = 0; i < t.rows.size(); i += 2)
        CHECK(std::stod(t.at(i + 1, "cost")) <= std::stod(t.at(i, "cost")));

    // max: ranks highest first; an unknown column and a time-to-train column without a training block are bad
    // input before anything runs.
    o.objective = "max:throughput_samples_per_s";
    std::ostringstream report2;
    o.report = &report2;
    REQUIRE(tools::run_sweep(o, err) == 0);
    CHECK(report2.str().find("highest first") != std::string::npos);
    o.objective = "costs";
    std::ostringstream err2;
    CHECK(tools::run_sweep(o, err2) == 2);
    CHECK(err2.str().find("did you mean") != std::string::npos);
    const auto plain = dir.write("plain.json", one_layer_ring().dump());
    auto p = options(plain, {"workers=2,4"}, dir / "p.csv");
    p.objective = "time_to_train_s";
    std::ostringstream err3;
    CHECK(tools::run_sweep(p, err3) == 2);
    CHECK(err3.str().find("no \"training\" block") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "p.csv"));
}
