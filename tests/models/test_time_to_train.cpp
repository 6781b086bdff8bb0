// Time to train (models/time_to_train.hpp). Oracles: MLPerf's reference convergence points recomputed here from
// the raw files (the olympic mean rcp_checker.py takes), the figures the issue quotes from them, the noise-scale
// form E_min (1 + B / B_crit) and its exact fit, and the run's parts derived by hand (fixed samples / throughput,
// evaluations from the forward time, checkpoints from bytes / bandwidth).
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <string>

#include <nlohmann/json.hpp>

#include "models/job.hpp"
#include "models/time_to_train.hpp"

namespace m = ddlsim::models;

namespace {

// Olympic mean, min and max of every reference point of a raw RCP file, by batch.
struct Raw {
    double bs, mean, lo, hi;
};
std::vector<Raw> raw_points(const std::string& file, double scale) {
    std::ifstream in(std::string(DDLSIM_SOURCE_DIR) + "/models/data/mlperf_rcps/" + file);
    REQUIRE(in.good());
    const auto j = nlohmann::json::parse(in);
    std::vector<Raw> out;
    for (const auto& [name, rec] : j.items()) {
        auto runs = rec.at("Epochs to converge").get<std::vector<double>>();
        std::sort(runs.begin(), runs.end());
        const double sum = std::accumulate(runs.begin() + 1, runs.end() - 1, 0.0);
        out.push_back({rec.at("BS").get<double>(), sum / static_cast<double>(runs.size() - 2) * scale,
                       runs.front() * scale, runs.back() * scale});
    }
    return out;
}

}  // namespace

TEST_CASE("time to train: builtin reproduces every MLPerf reference point it cites") {
    const auto* resnet = m::find_convergence("resnet50");
    const auto* bert = m::find_convergence("bert_large");
    REQUIRE(resnet != nullptr);
    REQUIRE(bert != nullptr);
    CHECK(resnet->epoch_samples == 1281167);
    struct Source {
        const m::ConvergenceData* data;
        const char* file;
        double scale;  // samples per unit of the file's counts
    };
    for (const Source& src : {Source{resnet, "training_4.0.0_rcps_resnet.json", 1281167.0},
                              Source{bert, "training_4.1.0_rcps_bert.json", 1.0}}) {
        const m::ConvergenceData* data = src.data;
        const std::string file = src.file;
        const auto raw = raw_points(file, src.scale);
        CHECK(raw.size() == data->points.size());
        for (const Raw& r : raw) {
            const auto s = m::samples_at(data->points, r.bs);
            INFO(file << " batch " << r.bs);
            CHECK(s.samples == ddlsim::testing::approx(r.mean).epsilon(1e-9));
            CHECK(s.low == ddlsim::testing::approx(r.lo).epsilon(1e-9));
            CHECK(s.high == ddlsim::testing::approx(r.hi).epsilon(1e-9));
            CHECK_FALSE(s.extrapolated);
        }
    }
    // The figures quoted from the same files: ResNet-50 about 35 epochs at 1,632 and 3,264, 85.8 at 67,840; BERT
    // 2.41 M samples at 448 and 5.51 M at 16,384.
    CHECK(m::samples_at(resnet->points, 1632).samples / 1281167 == ddlsim::testing::approx(35.0).epsilon(0.01));
    CHECK(m::samples_at(resnet->points, 3264).samples / 1281167 == ddlsim::testing::approx(35.2).epsilon(0.01));
    CHECK(m::samples_at(resnet->points, 67840).samples / 1281167 == ddlsim::testing::approx(85.8).epsilon(0.01));
    CHECK(m::samples_at(bert->points, 448).samples == ddlsim::testing::approx(2.41e6).epsilon(0.01));
    CHECK(m::samples_at(bert->points, 16384).samples == ddlsim::testing::approx(5.51e6).epsilon(0.01));
}

TEST_CASE("time to train: between points linear in the batch, below the first its value, past the last the fit") {
    const std::vector<m::ConvergencePoint> pts{
        {1000, 1e6, 0.9e6, 1.1e6, 5}, {3000, 2e6, 1.8e6, 2.2e6, 5}, {5000, 4e6, 3.6e6, 4.4e6, 5}};
    auto s = m::samples_at(pts, 2000);
    CHECK(s.samples == ddlsim::testing::approx(1.5e6));
    CHECK(s.low == ddlsim::testing::approx(1.35e6));
    CHECK(s.high == ddlsim::testing::approx(1.65e6));
    s = m::samples_at(pts, 4500);
    CHECK(s.samples == ddlsim::testing::approx(2e6 + 0.75 * 2e6));
    s = m::samples_at(pts, 10);
    CHECK(s.samples == 1e6);
    CHECK_FALSE(s.extrapolated);
    // Past the last point: the fit's slope E_min / B_crit (least squares through the three means: slope 750 per
    // unit of batch, by hand) from the last point, the range scaled with it.
    const auto fit = m::fit_noise_scale(pts);
    REQUIRE(fit);
    CHECK(fit->min_samples / fit->critical_batch == ddlsim::testing::approx(750.0));
    s = m::samples_at(pts, 7000);
    CHECK(s.extrapolated);
    CHECK(s.samples == ddlsim::testing::approx(4e6 + 750.0 * 2000));
    CHECK(s.low / s.samples == ddlsim::testing::approx(0.9));
    // Continuous at the last point.
    CHECK(m::samples_at(pts, 5000.000001).samples == ddlsim::testing::approx(4e6));
}

TEST_CASE("time to train: the noise-scale fit recovers E_min and B_crit of exact points") {
    const m::NoiseScale truth{2500.0, 3e6};
    std::vector<m::ConvergencePoint> pts;
    for (double b : {256.0, 1024.0, 4096.0, 16384.0}) pts.push_back({b, truth.samples(b), 0, 0, 1});
    const auto fit = m::fit_noise_scale(pts);
    REQUIRE(fit);
    CHECK(fit->critical_batch == ddlsim::testing::approx(2500.0));
    CHECK(fit->min_samples == ddlsim::testing::approx(3e6));
    // Points that do not grow with the batch have no critical batch.
    CHECK_FALSE(m::fit_noise_scale({{100, 5e6, 0, 0, 1}, {200, 4e6, 0, 0, 1}}));
    // The built-in ResNet-50 data: E_min near its small-batch 35 epochs, B_crit of tens of thousands.
    const auto r = m::fit_noise_scale(m::find_convergence("resnet50")->points);
    REQUIRE(r);
    CHECK(r->min_samples / 1281167 > 30.0);
    CHECK(r->min_samples / 1281167 < 45.0);
    CHECK(r->critical_batch > 2e4);
    CHECK(r->critical_batch < 2e5);
}

namespace {

m::TrainingRun run_of_8() {
    m::TrainingRun run;
    run.model = "custom";
    run.global_batch = 1000;
    run.samples_per_s = 500;  // a step of 2 s
    run.workers = 8;
    run.batch_size = 32;
    run.forward_s = 0.01;
    run.metric_allreduce_s = 0.001;
    run.rank_state_bytes = 3e9;
    run.board_power_w = 700;
    return run;
}

m::SamplesToTarget fixed(double samples) {
    m::SamplesToTarget t;
    t.samples = samples;
    return t;
}

}  // namespace

TEST_CASE("time to train: fixed samples over the simulated throughput, evaluations, checkpoints, GPU-hours, cost") {
    m::TrainingSpec spec;
    spec.samples_to_target = fixed(1e6);
    auto t = m::time_to_train(spec, run_of_8());
    CHECK(t.optimizer_steps == 1000);
    CHECK(t.training_s == ddlsim::testing::approx(2000.0));
    CHECK(t.total_s == ddlsim::testing::approx(2000.0));
    CHECK(t.total_low_s == t.total_s);  // a number has no spread
    CHECK(t.gpu_hours == ddlsim::testing::approx(2000.0 * 8 / 3600));
    CHECK(t.energy_kwh.value() == ddlsim::testing::approx(2000.0 * 8 / 3600 * 0.7));
    CHECK_FALSE(t.cost);
    CHECK(t.epochs == 0.0);  // no epoch size

    // A partial last step is a whole step: 1,000,001 samples take 1,001 steps.
    spec.samples_to_target = fixed(1e6 + 1);
    CHECK(m::time_to_train(spec, run_of_8()).optimizer_steps == 1001);

    // Evaluations every 100,000 samples from 100,000 up to the one that sees the target at 1e6: 10 of them; each
    // worker's 1,250 of 10,000 samples in 40 forward passes of 32 (0.4 s) plus the 1 ms metric all-reduce.
    spec.samples_to_target = fixed(1e6);
    spec.evaluation = m::EvaluationSpec{};
    spec.evaluation->every_samples = 1e5;
    spec.evaluation->samples = 1e4;
    // Checkpoints every 300 steps: 3 in 1,000 steps, each 3 GB (the default: the rank's state) at 1 GB/s.
    spec.checkpoint = m::CheckpointSpec{};
    spec.checkpoint->every_steps = 300;
    spec.checkpoint->write_bandwidth = ddlsim::sim::Bandwidth::bytes_per_s(1e9);
    spec.price_per_gpu_hour = 2.5;
    t = m::time_to_train(spec, run_of_8());
    CHECK(t.evaluations == 10);
    CHECK(t.evaluation_each_s == ddlsim::testing::approx(40 * 0.01 + 0.001));
    CHECK(t.evaluation_s == ddlsim::testing::approx(10 * 0.401));
    CHECK(t.checkpoints == 3);
    CHECK(t.checkpoint_each_s == ddlsim::testing::approx(3.0));
    CHECK(t.total_s == ddlsim::testing::approx(2000.0 + 4.01 + 9.0));
    CHECK(t.cost.value() == ddlsim::testing::approx((2000.0 + 4.01 + 9.0) * 8 / 3600 * 2.5));

    // The first evaluation later: from 500,000 every 100,000 up to 1e6: 6 of them. Checkpoints by time: every
    // 450 s of training, 4 in 2,000 s; given bytes override the default.
    spec.evaluation->first_after_samples = 5e5;
    spec.checkpoint->every_steps = 0;
    spec.checkpoint->every = ddlsim::sim::Time::seconds(450);
    spec.checkpoint->bytes = ddlsim::sim::Bytes{5e8};
    t = m::time_to_train(spec, run_of_8());
    CHECK(t.evaluations == 6);
    CHECK(t.checkpoints == 4);
    CHECK(t.checkpoint_s == ddlsim::testing::approx(2.0));
}

TEST_CASE("time to train: the noise-scale form, tokens, epochs, a user table's range and the efficiency factor") {
    m::TrainingSpec spec;
    m::SamplesToTarget noise;
    noise.form = m::TargetForm::noise_scale;
    noise.noise = {1000.0, 1e6};
    spec.samples_to_target = noise;
    auto t = m::time_to_train(spec, run_of_8());  // B = 1000 = B_crit: twice E_min
    CHECK(t.samples.samples == ddlsim::testing::approx(2e6));
    CHECK(t.training_s == ddlsim::testing::approx(4000.0));

    spec.samples_to_target.reset();
    spec.tokens_to_target = 2e9;
    auto run = run_of_8();
    run.tokens_per_sample = 2000;
    CHECK(m::time_to_train(spec, run).samples.samples == ddlsim::testing::approx(1e6));
    run.tokens_per_sample = 0;
    CHECK_THROWS_AS((void)m::time_to_train(spec, run), std::invalid_argument);

    spec.tokens_to_target = 0;
    m::SamplesToTarget table;
    table.form = m::TargetForm::table;
    table.table = {{500, 1.5e6, 1.5e6, 1.5e6, 0}, {2000, 4.5e6, 4.5e6, 4.5e6, 0}};
    spec.samples_to_target = table;
    spec.epoch_samples = 5e5;
    spec.statistical_efficiency = 1.5;
    t = m::time_to_train(spec, run_of_8());  // B = 1000: 1.5e6 + (500 / 1500) x 3e6 = 2.5e6, x 1.5
    CHECK(t.samples.samples == ddlsim::testing::approx(3.75e6));
    CHECK(t.epochs == ddlsim::testing::approx(7.5));
    CHECK(t.efficiency.source == "scenario");
    // The fit through the two points: slope 2000 per unit of batch, E_min = 1.5e6 - 500 x 2000 = 5e5.
    REQUIRE(t.fitted.has_value());
    CHECK(t.fitted->min_samples == ddlsim::testing::approx(5e5));
    CHECK(t.fitted->critical_batch == ddlsim::testing::approx(250.0));
}

TEST_CASE("time to train: builtin for a model without data is refused, BSP's factor is 1 by definition") {
    m::TrainingSpec spec;
    m::SamplesToTarget b;
    b.form = m::TargetForm::builtin;
    spec.samples_to_target = b;
    CHECK_THROWS_AS((void)m::time_to_train(spec, run_of_8()), std::invalid_argument);
    auto run = run_of_8();
    run.model = "resnet50";
    run.global_batch = 3264;
    run.samples_per_s = 3264;  // one step a second
    const auto t = m::time_to_train(spec, run);
    CHECK(t.epochs == ddlsim::testing::approx(35.2).epsilon(0.01));
    CHECK(t.training_s == ddlsim::testing::approx(std::ceil(t.samples.samples / 3264)));
    CHECK(t.total_low_s < t.total_s);
    CHECK(t.total_high_s > t.total_s);
}

TEST_CASE("time to train: diloco's factor is published down to 4-bit outer gradients and assumed below") {
    m::TrainingJob job;
    job.sync.kind = m::SyncKind::diloco;
    job.sync.outer_bits = 4;  // Streaming DiLoCo's FP4 outer gradients
    auto e = m::statistical_efficiency(job);
    CHECK(e.factor == 1.0);
    CHECK_FALSE(e.assumed);
    CHECK(e.source.find("2501.18512") != std::string::npos);
    job.sync.outer_bits = 2;
    e = m::statistical_efficiency(job);
    CHECK(e.assumed);
    CHECK(e.source.find("2-bit outer gradients") != std::string::npos);
}
