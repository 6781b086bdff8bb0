// Example scenarios: each runs, matches its reviewed golden result, and is deterministic.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/job.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"

using namespace ddlsim;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json result_of(const std::string& file) {
    const auto s = scenario::load_scenario_file(file, {});
    json r = scenario::result_json(s, scenario::run_scenario(s));
    r.erase("wall_time_s");
    return r;
}

// What a golden result leaves out (tools/update-golden.sh): wall times, and the per-worker arrays, which the
// invariants below check instead.
bool curated_out(const std::string& key) {
    return key == "wall_time_s" || key == "per_worker";
}

// Structured comparison: same keys, arrays element by element, equal strings, numbers within a relative tolerance.
void compare(const json& got, const json& want, const std::string& path) {
    CAPTURE(path);
    if (want.is_number()) {
        REQUIRE(got.is_number());
        CHECK(got.get<double>() == ddlsim::testing::approx(want.get<double>()).epsilon(1e-9));
    } else if (want.is_object()) {
        REQUIRE(got.is_object());
        for (const auto& item : want.items()) {
            const std::string k = item.key();  // not a structured binding: clang 14 cannot capture those
            const json& v = item.value();
            if (curated_out(k)) continue;
            CAPTURE(k);
            REQUIRE(got.contains(k));
            compare(got.at(k), v, path + "." + k);
        }
        for (const auto& item : got.items())
            CHECK_MESSAGE((want.contains(item.key()) || curated_out(item.key())),
                          "new key " << path << "." << item.key());
    } else if (want.is_array()) {
        REQUIRE(got.is_array());
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < want.size(); ++i) compare(got[i], want[i], path + "[" + std::to_string(i) + "]");
    } else {
        CHECK(got == want);
    }
}

std::vector<fs::path> examples() {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(fs::path(DDLSIM_SOURCE_DIR) / "scenarios" / "examples"))
        if (e.path().extension() == ".json") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("examples: every example matches its golden result (tools/update-golden.sh)") {
    const auto files = examples();
    REQUIRE(files.size() >= 5);
    for (const auto& f : files) {
        CAPTURE(f.string());
        const fs::path golden = fs::path(DDLSIM_SOURCE_DIR) / "tests" / "golden" / (f.stem().string() + ".json");
        REQUIRE_MESSAGE(fs::exists(golden), "no golden result; run tools/update-golden.sh and review it");
        std::ifstream in(golden);
        compare(result_of(f.string()), json::parse(in), "$");
    }
}

TEST_CASE("determinism: the same scenario twice gives identical JSON but for wall_time_s") {
    for (const auto& f : examples()) {
        CAPTURE(f.string());
        CHECK(result_of(f.string()).dump() == result_of(f.string()).dump());
    }
}

TEST_CASE("examples: results are physically sane") {
    for (const auto& f : examples()) {
        CAPTURE(f.string());
        const json r = result_of(f.string());
        const json scenario = json::parse(std::ifstream(f));
        const json jobs = r.contains("jobs") ? r["jobs"] : json::array({r});
        for (const json& job : jobs) {
            const double it = job["iteration_time_s"], compute = job["compute_time_s"];
            const double comm = job["communication_time_s"], codec = job["codec_time_s"];
            const double exposed = job["exposed_communication_time_s"];
            CHECK(it > 0);
            CHECK(job["scaling_efficiency"].get<double>() > 0);
            CHECK(job["scaling_efficiency"].get<double>() <= 1.0 + 1e-12);
            CHECK(exposed <= it * (1 + 1e-12));
            // The breakdown's four parts are never negative and add up to the iteration.
            double parts = 0.0;
            for (const auto& item : job["time_breakdown_s"].items()) {
                CAPTURE(item.key());
                CHECK(item.value().get<double>() >= 0.0);
                parts += item.value().get<double>();
            }
            CHECK(parts == ddlsim::testing::approx(it).epsilon(1e-9));
            const std::string sync = job["scenario"]["sync"];
            if (sync.rfind("fedavg", 0) == 0) continue;  // a round is E local steps, not one iteration
            CHECK(it >= compute * (1 - 1e-12));
            const bool plain = sync == "bsp" && !scenario.contains("stragglers") &&
                               !scenario.contains("worker_devices") && !scenario.contains("jobs");
            if (!plain) continue;
            if (scenario.contains("parallelism")) {
                // Model parallelism: the busiest stage's m micro-batches at least, and at most the 1F1B/GPipe makespan
                // (m + p - 1) of its micro-batches, each with its share of the rank's communication (a micro-batch's
                // tensor-parallel collectives wait on every stage the fill and the drain pass through), then its
                // update.
                const double m = scenario["gradient_accumulation"];
                const double p = scenario["parallelism"].value("pipeline", 1.0);
                const json& c = job["compute"];
                const double per_mb = c["forward_s"].get<double>() + c["backward_s"].get<double>();
                const double update = c["update_s"];
                CHECK(compute == ddlsim::testing::approx(m * per_mb + update).epsilon(1e-9));
                CHECK(it <= ((m + p - 1.0) * per_mb + update + comm * (m + p - 1.0) / m) * (1 + 1e-9));
                continue;
            }
            if (scenario.contains("sharding")) {
                // Sharded steps overlap per unit; compute beside communication runs up to (1 + slowdown) longer.
                CHECK(it <= (compute * (1.0 + ddlsim::models::kDefaultOverlapSlowdown) + comm) * (1 + 1e-9));
                continue;
            }
            if (job["scenario"]["overlap"] == "none") {
                // No overlap: iteration = compute + communication (which includes encode/decode).
                CHECK(exposed <= comm * (1 + 1e-12));
                CHECK(it == ddlsim::testing::approx(compute + comm).epsilon(0.05));
            } else {
                // Overlap hides some communication, never adds any; compute running beside communication takes up
                // to (1 + slowdown) longer (the breakdown's compute includes it; compute_time_s does not), and the
                // iteration is at least compute plus what stays exposed.
                const double slowed = compute * (1.0 + ddlsim::models::kDefaultOverlapSlowdown);
                const double breakdown_compute = job["time_breakdown_s"]["compute"];
                CHECK(breakdown_compute >= compute * (1 - 1e-9));
                CHECK(breakdown_compute <= slowed * (1 + 1e-9));
                CHECK(it >= (compute + exposed) * (1 - 1e-9));
                CHECK(it <= (slowed + comm + codec) * (1 + 1e-9));
            }
        }
        // The per-worker arrays (left out of the goldens) agree with the per-job summary the goldens keep.
        for (const json& job : jobs) {
            if (!job.contains("per_worker")) continue;  // listed for small clusters only
            const json& pw = job["per_worker"];
            const json& sum = job["workers"];
            CHECK(pw.size() == job["scenario"]["workers"].get<std::size_t>());
            std::uint64_t updates = 0;
            for (const json& w : pw) {
                CHECK(w["idle_s"].get<double>() >= sum["idle_s_min"].get<double>());
                CHECK(w["idle_s"].get<double>() <= sum["idle_s_max"].get<double>());
                CHECK(w["iterations"].get<std::uint64_t>() >= sum["iterations_min"].get<std::uint64_t>());
                CHECK(w["iterations"].get<std::uint64_t>() <= sum["iterations_max"].get<std::uint64_t>());
                updates += w["updates_applied"].get<std::uint64_t>();
            }
            CHECK(updates == sum["updates_applied"].get<std::uint64_t>());
        }
        CHECK(r["events"].get<std::uint64_t>() > 0);
        if (r.contains("links"))
            for (const json& l : r["links"]["busiest"]) CHECK(l["utilization"].get<double>() <= 1.0 + 1e-9);
    }
}
