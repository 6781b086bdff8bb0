// `ddlsim plan` (tools/plan.hpp) as a library and as a command: the scenario's own layout is searched and the best
// is at least as good, the counts add up, every simulated layout keeps the global batch, refusals name a key, a
// layout that needs more memory than the device is dropped, bad input exits 2 with one line, and two runs agree.
// The expectations come from the definitions (G = b x m x d, 16 bytes per parameter for mixed-precision AdamW), not
// from a recorded output.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/approx.hpp"
#include "tests/support/support.hpp"
#include "tools/plan.hpp"
#include "tools/sweep.hpp"

using nlohmann::json;
using namespace ddlsim;
namespace testing = ddlsim::testing;

namespace {

// tests/tools/plan_llama3_8b_16xH100.json: Llama 3 8B on 2,048-token sequences (no context parallelism tried) on two
// DGX H100 nodes, tensor 2 x pipeline 2 x data 4, 4 micro-batches of 1 sequence: a global batch of 1 x 4 x 4 = 16.
json small_scenario() {
    return json::parse(testing::read_file(std::string(DDLSIM_SOURCE_DIR) + "/tests/tools/plan_llama3_8b_16xH100.json"));
}

struct Fixture {
    testing::TempDir dir{"ddlsim_test_plan"};
    std::string file = dir.write("llama.json", small_scenario().dump(2));
    tools::PlanOptions options() const {
        tools::PlanOptions o;
        o.scenario_file = file;
        o.max_tensor = 2;  // t in {1, 2}: enough layouts to rank, few enough to run in seconds
        o.progress = false;
        return o;
    }
};

const tools::PlanSearch& search_once() {
    static const Fixture f;
    static std::ostringstream err;
    static const tools::PlanSearch p = tools::plan_search(f.options(), err);
    return p;
}

}  // namespace

TEST_CASE("plan: the scenario's own layout is a candidate and the best is at least as good") {
    const tools::PlanSearch& p = search_once();
    const tools::PlanCandidate& mine = p.yours();
    CHECK(mine.layout.tensor == 2);
    CHECK(mine.layout.pipeline == 2);
    CHECK(mine.layout.data == 4);
    CHECK(mine.layout.micro_batch == 1);
    CHECK(mine.layout.micro_batches == 4);
    REQUIRE(mine.status == tools::CandidateStatus::simulated);
    REQUIRE(mine.value.has_value());
    REQUIRE(!p.ranking.empty());
    CHECK(p.objective.column == "tokens_per_s");
    CHECK(p.objective.maximise);
    const tools::PlanCandidate& best = p.candidates[p.ranking.front()];
    CHECK(*best.value >= *mine.value);
    CHECK(best.rank == 1);
    // The ranking is by the objective, highest first.
    for (std::size_t r = 1; r < p.ranking.size(); ++r)
        CHECK(*p.candidates[p.ranking[r - 1]].value >= *p.candidates[p.ranking[r]].value);
    const std::string report = tools::plan_report(p, 5);
    CHECK(report.find("your configuration") != std::string::npos);
}

TEST_CASE("plan: the counts add up and every simulated layout keeps the global batch") {
    const tools::PlanSearch& p = search_once();
    CHECK(p.global_batch == 16);  // 1 sequence x 4 micro-batches x 4 replicas
    const std::size_t total = p.count(tools::CandidateStatus::refused) + p.count(tools::CandidateStatus::does_not_fit) +
                              p.count(tools::CandidateStatus::simulated) + p.count(tools::CandidateStatus::failed) +
                              p.count(tools::CandidateStatus::bounded);
    CHECK(total == p.candidates.size());
    CHECK(p.count(tools::CandidateStatus::simulated) > 1);
    for (const auto& c : p.candidates) {
        if (c.status != tools::CandidateStatus::simulated) continue;
        const auto& l = c.layout;
        CHECK(static_cast<std::uint64_t>(l.micro_batch) * l.micro_batches * l.data == p.global_batch);
        CHECK(l.tensor * l.pipeline * l.context * l.data == p.workers);
        CHECK(l.tensor <= 2);
        // The result is the run of that layout: its echo says so.
        CHECK(c.result.at("scenario.workers").get<std::uint32_t>() == 16);
    }
    // The report's counts are the same numbers.
    const std::string report = tools::plan_report(p, 3);
    CHECK(report.find(std::to_string(p.candidates.size()) + " candidates") != std::string::npos);
}

TEST_CASE("plan: bounding by each step's lower bound finds the same best layouts as simulating every one, sooner") {
    // The bound is the busiest rank's program at its least (models/program/step_bound.hpp), which a simulated step can
    // only exceed (an invariant on every simulated candidate); a bounded candidate's bound exceeds the top-th best
    // step, so simulating everything (--exhaustive) ranks the same layouts first with the same values (a metamorphic
    // relation), and the scenario's own rank can only be lower when some bounded ones might be faster.
    const Fixture f;
    std::ostringstream err;
    tools::PlanOptions o = f.options();
    o.top = 5;
    const tools::PlanSearch bounded = tools::plan_search(o, err);
    o.exhaustive = true;
    const tools::PlanSearch all = tools::plan_search(o, err);
    CHECK(all.count(tools::CandidateStatus::bounded) == 0);
    REQUIRE(bounded.count(tools::CandidateStatus::bounded) > 0);
    CHECK(bounded.count(tools::CandidateStatus::simulated) + bounded.count(tools::CandidateStatus::bounded) ==
          all.count(tools::CandidateStatus::simulated));
    REQUIRE(bounded.ranking.size() >= 5);
    for (std::size_t r = 0; r < 5; ++r) {
        const tools::PlanCandidate &x = bounded.candidates[bounded.ranking[r]], &y = all.candidates[all.ranking[r]];
        CHECK(x.layout == y.layout);
        CHECK(*x.value == *y.value);
    }
    const double fifth = bounded.candidates[bounded.ranking[4]].result.at("iteration_time_s").get<double>();
    for (const auto& c : all.candidates) {
        if (c.status != tools::CandidateStatus::simulated) continue;
        CHECK(c.bound_s > 0.0);
        CHECK(c.result.at("iteration_time_s").get<double>() >= c.bound_s);
    }
    for (const auto& c : bounded.candidates)
        if (c.status == tools::CandidateStatus::bounded) {
            CHECK(c.bound_s > fifth);
            CHECK(c.reason_key == "bound");
        }
    CHECK(bounded.yours().rank <= all.yours().rank);
    CHECK(tools::plan_report(bounded, 5).find("bounded") != std::string::npos);
}

TEST_CASE("plan: a refused layout names the parallelism or batch key that does not divide") {
    const tools::PlanSearch& p = search_once();
    std::size_t refused = 0;
    for (const auto& c : p.candidates) {
        if (c.status != tools::CandidateStatus::refused) continue;
        ++refused;
        INFO(c.reason_key << ": " << c.reason);
        CHECK(!c.reason.empty());
        const bool names_key = c.reason_key == "global batch" || c.reason_key.starts_with("$.parallelism") ||
                               c.reason_key == "$.gradient_accumulation" || c.reason_key == "$.batch_size";
        CHECK(names_key);
    }
    CHECK(refused > 0);
    // b = 8 on 4 replicas is 32 sequences a micro-batch step, more than the 16 of the global batch.
    const auto it = std::find_if(p.candidates.begin(), p.candidates.end(), [](const tools::PlanCandidate& c) {
        return c.layout.tensor == 2 && c.layout.pipeline == 2 && c.layout.micro_batch == 8;
    });
    REQUIRE(it != p.candidates.end());
    CHECK(it->status == tools::CandidateStatus::refused);
    CHECK(it->reason_key == "global batch");
}

TEST_CASE("plan: a layout that needs more memory than the device is dropped") {
    const tools::PlanSearch& p = search_once();
    // No split at all (t = p = 1: 16 replicas of micro-batches of 1, m = 1; no sharding): mixed-precision AdamW keeps
    // 2 + 2 + 12 = 16 bytes per parameter, over 16 x 8.0e9 = 128 GB on an 80 GB H100 before any activation.
    const auto it = std::find_if(p.candidates.begin(), p.candidates.end(), [](const tools::PlanCandidate& c) {
        return c.layout.tensor == 1 && c.layout.pipeline == 1 && c.layout.sharding == 0 && c.layout.micro_batch == 1;
    });
    REQUIRE(it != p.candidates.end());
    CHECK(it->status == tools::CandidateStatus::does_not_fit);
    REQUIRE(it->memory_bytes.has_value());
    CHECK(*it->memory_bytes > 16.0 * 8.0e9);
    // And no simulated layout exceeds the device's memory.
    REQUIRE(p.capacity_bytes.has_value());
    for (const auto& c : p.candidates)
        if (c.status == tools::CandidateStatus::simulated) CHECK(*c.memory_bytes <= *p.capacity_bytes);
    CHECK(p.count(tools::CandidateStatus::does_not_fit) > 0);
}

TEST_CASE("plan: the layouts enumerated follow the rules") {
    const tools::PlanSearch& p = search_once();
    for (const auto& c : p.candidates) {
        const auto& l = c.layout;
        CHECK(l.context == 1);  // 2,048 tokens: context parallelism is not tried
        CHECK(l.expert == 1);   // a dense model
        CHECK(l.sequence_parallel == (l.tensor > 1));
        if (l.pipeline == 1) CHECK(l.virtual_stages == 1);
        CHECK(l.schedule == (l.pipeline == 1 ? "" : l.virtual_stages > 1 ? "interleaved_1f1b" : "1f1b"));
    }
    // A patch is the scenario with the layout's keys and one iteration.
    tools::PlanLayout l;
    l.tensor = 2;
    l.pipeline = 4;
    l.virtual_stages = 2;
    l.schedule = "interleaved_1f1b";
    l.micro_batch = 1;
    l.micro_batches = 4;
    l.sharding = 1;
    l.recompute = models::Checkpointing::full;
    l.sequence_parallel = true;
    const json j = tools::layout_patch(small_scenario(), l);
    CHECK(j["iterations"] == 1);
    CHECK(j["parallelism"]["pipeline"] == 4);
    CHECK(j["parallelism"]["virtual_stages"] == 2);
    CHECK(j["parallelism"]["schedule"] == "interleaved_1f1b");
    CHECK(j["sharding"]["stage"] == 1);
    CHECK(j["activation_checkpointing"] == "full");
    CHECK(j["gradient_accumulation"] == 4);
}

TEST_CASE("plan: the command ranks, writes every candidate and gives the same CSV twice") {
    const Fixture f;
    const std::string a = f.dir / "a.csv", b = f.dir / "b.csv";
    const auto r1 = testing::run_ddlsim({"plan", f.file, "--max-tensor", "2", "--top", "3", "--jobs", "2", "--out", a});
    INFO(r1.err);
    REQUIRE(r1.code == 0);
    CHECK(r1.out.find("your configuration") != std::string::npos);
    CHECK(r1.out.find("rank") != std::string::npos);
    // The same search on one thread: the same rows, bounded ones included (what is bounded depends on --top only).
    const auto r2 = testing::run_ddlsim({"plan", f.file, "--max-tensor", "2", "--top", "3", "--jobs", "1", "--out", b});
    REQUIRE(r2.code == 0);
    const std::string csv = testing::read_file(a);
    CHECK(!csv.empty());
    CHECK(csv == testing::read_file(b));
    const auto rows = tools::parse_csv(csv);
    REQUIRE(rows.size() > 2);
    const auto& header = rows.front();
    const auto col = [&](const std::string& name) {
        return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    REQUIRE(col("status") < header.size());
    REQUIRE(col("tokens_per_s") < header.size());
    CHECK(header.end() == std::find(header.begin(), header.end(), "wall_time_s"));
    CHECK(rows[1][col("rank")] == "1");
    CHECK(rows[1][col("status")] == "simulated");
    std::size_t yours = 0;
    for (std::size_t i = 1; i < rows.size(); ++i) yours += rows[i][col("yours")] == "true" ? 1 : 0;
    CHECK(yours == 1);
    // JSON for a .json name: the same candidates.
    const std::string j = f.dir / "c.json";
    const auto r3 = testing::run_ddlsim({"plan", f.file, "--max-tensor", "2", "--quiet", "--out", j});
    REQUIRE(r3.code == 0);
    const json arr = json::parse(testing::read_file(j));
    CHECK(arr.size() == rows.size() - 1);
}

TEST_CASE("plan: bad input exits 2 with one line") {
    const Fixture f;
    const auto one_line = [](const testing::CliRun& r) {
        INFO(r.err);
        CHECK(r.code == 2);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.err.starts_with("error: "));
    };
    const auto missing = testing::run_ddlsim({"plan", f.dir / "nope.json"});
    one_line(missing);
    CHECK(missing.err.find("nope.json") != std::string::npos);
    const auto key = testing::run_ddlsim({"plan", f.file, "--set", "parallelism.tensorr=2"});
    one_line(key);
    CHECK(key.err.find("tensorr") != std::string::npos);
    one_line(testing::run_ddlsim({"plan", f.file, "--top", "0"}));
    one_line(testing::run_ddlsim({"plan", f.file, "--objective", "speed"}));
    one_line(testing::run_ddlsim({"plan", f.file, "--objective", "cost"}));           // no training block
    one_line(testing::run_ddlsim({"plan", f.file, "--out", f.dir.path().string()}));  // a directory
    one_line(testing::run_ddlsim({"plan", f.file, "--out", f.file}));                 // the scenario itself
}

TEST_CASE("plan: SC'21's weak-scaling configurations load with the paper's parameters, layouts and batches") {
    // scenarios/plan/sc21_*.json, the shapes of Narayanan et al. SC'21 (arXiv 2104.04473) Table 1, whose searches
    // docs/MODEL.md times: each loads with the paper's GPUs, tensor and pipeline degrees and global batch, and the
    // model's parameters come within 4 % of the paper's column (which it rounds to 0.1 B: 1.7 for 1.65 B).
    struct Row {
        const char* file;
        double billions;
        std::uint32_t gpus, tensor, pipeline;
        std::uint64_t batch;
    };
    constexpr Row kRows[] = {{"sc21_1_7b", 1.7, 32, 1, 1, 512},         {"sc21_3_6b", 3.6, 64, 2, 1, 512},
                             {"sc21_7_5b", 7.5, 128, 4, 1, 512},        {"sc21_18_4b", 18.4, 256, 8, 1, 1024},
                             {"sc21_39_1b", 39.1, 512, 8, 2, 1536},     {"sc21_76_1b", 76.1, 1024, 8, 4, 1792},
                             {"sc21_145_6b", 145.6, 1536, 8, 8, 2304},  {"sc21_310_1b", 310.1, 1920, 8, 16, 2160},
                             {"sc21_529_6b", 529.6, 2520, 8, 35, 2520}, {"sc21_1008_0b", 1008.0, 3072, 8, 64, 3072}};
    const std::string dir = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/plan";
    for (const Row& r : kRows) {
        CAPTURE(r.file);
        const scenario::Scenario s =
            scenario::load_scenario(json::parse(testing::read_file(dir + "/" + r.file + ".json")), dir);
        const scenario::JobSpec& job = s.jobs.front();
        CHECK(job.workers == r.gpus);
        CHECK(job.parallelism.tensor == r.tensor);
        CHECK(job.parallelism.pipeline == r.pipeline);
        CHECK(tools::global_batch(job) == r.batch);
        CHECK(static_cast<double>(job.workload.params()) / 1e9 == testing::approx(r.billions).epsilon(0.04));
    }
}
