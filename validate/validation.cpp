#include "validate/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "validate/predict.hpp"
#include "validate/processes.hpp"

namespace ddlsim::validate {
namespace {

using nlohmann::json;

struct Data {
    Dataset train;
    Dataset test;
    std::string name;
};

Data load_data(const std::string& dir, std::ostream& log) {
    if (fashion_mnist_available(dir)) {
        log << "data: Fashion-MNIST from " << dir << "\n";
        return {load_fashion_mnist(dir, "train"), load_fashion_mnist(dir, "t10k"), "fashion-mnist"};
    }
    log << "data: " << dir << " has no Fashion-MNIST (Debian package dataset-fashion-mnist); using a synthetic set\n";
    return {synthetic_dataset(12000, 1), synthetic_dataset(2000, 2), "synthetic"};
}

RunConfig make(const std::string& name, ModelKind model, std::uint32_t workers, topo::ArchKind arch, double rate_bps) {
    RunConfig c;
    c.name = name;
    c.model = model;
    c.workers = workers;
    c.architecture = arch;
    c.rate_bps = rate_bps;
    return c;
}

std::string rate_label(double bps) {
    return bps >= 1e9 ? fmt::format("{:g}G", bps / 1e9) : fmt::format("{:g}M", bps / 1e6);
}

double mean_of(const std::vector<double>& v, std::size_t first, std::size_t count) {
    double s = 0.0;
    std::size_t n = 0;
    for (std::size_t i = first; i < std::min(v.size(), first + count); ++i) s += v[i], ++n;
    return n ? s / static_cast<double>(n) : 0.0;
}

double norm2(std::span<const float> v) {
    double s = 0.0;
    for (float x : v) s += double{x} * x;
    return std::sqrt(s);
}

std::string profile_path_for(const std::string& profile, ModelKind m) {
    if (m == ModelKind::mlp) return profile;
    std::filesystem::path p(profile);
    const std::string ext = p.has_extension() ? p.extension().string() : ".json";
    p.replace_extension();
    return p.string() + "." + model_name(m) + ext;
}

json config_json(const PlannedRun& p, const RunOutcome& o, const Prediction& pred) {
    const RunConfig& c = o.config;
    const double measured = o.iteration_time_s, predicted = pred.iteration_time_s;
    const double err = measured > 0 ? (predicted - measured) / measured : std::nan("");
    double compute = 0, codec = 0, comm = 0, update = 0, residual = 0, bytes = 0;
    std::vector<double> losses;
    for (const auto& w : o.workers) {
        compute += w.compute_s / c.workers, codec += w.codec_s / c.workers;
        comm += w.comm_s / c.workers, update += w.update_s / c.workers;
        bytes += static_cast<double>(w.bytes_sent) / c.workers / (c.warmup + c.iterations);
        for (double r : w.residual_norms) residual = std::max(residual, r);
    }
    const auto& l = o.workers.at(0).losses;
    json j{
        {"name", c.name},
        {"held_out", p.held_out},
        {"model", model_name(c.model)},
        {"backend", backend_name(c.backend)},
        {"workers", c.workers},
        {"batch_size", c.batch},
        {"architecture", architecture_name(c.architecture)},
        {"sync",
         c.sync == models::SyncKind::bsp ? json{{"kind", "bsp"}} : json{{"kind", "local_sgd"}, {"period", c.period}}},
        {"compression",
         {{"kind", codec_name(c.codec.kind)},
          {"description", describe(c.codec)},
          {"error_feedback", c.codec.error_feedback}}},
        {"link_rate_bps", c.rate_bps},
        {"network", o.network},
        {"iterations", c.iterations},
        {"warmup_iterations", c.warmup},
        {"measured_iteration_time_s", measured},
        {"predicted_iteration_time_s", predicted},
        {"relative_error", err},
        {"cpu_load", o.cpu_load},
        {"cpu_load_workers",
         o.wall_s > 0 ? o.worker_cpu_s / o.wall_s / std::max(1U, std::thread::hardware_concurrency()) : 0.0},
        {"worker_cpu_s", o.worker_cpu_s},
        {"wall_s", o.wall_s},
        {"measured_breakdown_s", {{"compute", compute}, {"codec", codec}, {"communication", comm}, {"update", update}}},
        {"bytes_sent_per_worker_per_iteration", bytes},
        {"loss", {{"first", l.empty() ? 0.0 : l.front()}, {"last", l.empty() ? 0.0 : l.back()}}}};
    if (c.codec.error_feedback) j["residual_norm_max"] = residual;
    j["scenario"] = pred.scenario;  // what the simulator was given
    if (o.workers[0].accuracy >= 0) j["test_accuracy"] = o.workers[0].accuracy;
    return j;
}

void print_row(std::ostream& out, const json& c) {
    const double err = c["relative_error"];
    out << fmt::format("  {:<24} {:<8} {:>10.1f} {:>10.1f} {:>+8.1f}%  {:>5.2f} {:>5.2f}  \n",
                       c["name"].get<std::string>(), c["held_out"].get<bool>() ? "yes" : "no (fit)",
                       1e3 * c["measured_iteration_time_s"].get<double>(),
                       1e3 * c["predicted_iteration_time_s"].get<double>(), 100.0 * err, c["cpu_load"].get<double>(),
                       c["cpu_load_workers"].get<double>());
}

json error_summary(const json& configs, bool held_out) {
    std::vector<double> e;
    for (const auto& c : configs)
        if (c["held_out"].get<bool>() == held_out) e.push_back(std::fabs(c["relative_error"].get<double>()));
    if (e.empty()) return {{"count", 0}};
    std::sort(e.begin(), e.end());
    const double med = e.size() % 2 ? e[e.size() / 2] : 0.5 * (e[e.size() / 2 - 1] + e[e.size() / 2]);
    return {{"count", e.size()}, {"median_abs_relative_error", med}, {"max_abs_relative_error", e.back()}};
}

json ef_to_json(const EfStudy& s) {
    return {{"codec", s.codec},
            {"steps", s.steps},
            {"contraction", s.contraction},
            {"theory", s.theory},
            {"max_residual", s.max_residual},
            {"max_gradient", s.max_gradient},
            {"bound", s.bound},
            {"residuals", s.residuals}};
}

EfStudy ef_from_json(const json& j) {
    EfStudy s;
    s.codec = j.at("codec");
    s.steps = j.at("steps");
    s.contraction = j.at("contraction");
    s.theory = j.at("theory");
    s.max_residual = j.at("max_residual");
    s.max_gradient = j.at("max_gradient");
    s.bound = j.at("bound").is_number() ? j.at("bound").get<double>() : INFINITY;
    s.residuals = j.at("residuals").get<std::vector<double>>();
    return s;
}

}  // namespace

bool ValidationResult::passed() const {
    return std::all_of(checks.begin(), checks.end(), [](const Check& c) { return c.passed; });
}

bool EfStudy::passed() const {
    const bool theory_ok = theory <= 0.0 || contraction <= theory + 1e-6;
    return std::isfinite(max_residual) && contraction < 1.0 && max_residual <= bound * (1.0 + 1e-6) && theory_ok;
}

std::vector<PlannedRun> validation_plan(bool quick, double rate, Backend backend) {
    const auto mlp = ModelKind::mlp, cnn = ModelKind::cnn;
    const auto ring = topo::ArchKind::allreduce, ps = topo::ArchKind::ps, gossip = topo::ArchKind::gossip;
    std::vector<PlannedRun> plan;
    auto add = [&](RunConfig c, bool held_out = true) {
        c.backend = backend;
        plan.push_back({c, held_out});
        return &plan.back().config;
    };
    auto codec = [&](const std::string& name, CodecKind k, bool ef, std::uint32_t n) {
        RunConfig c = make(name, mlp, n, ring, rate);
        c.codec.kind = k;
        c.codec.error_feedback = ef;
        c.codec.density = 0.01;
        return c;
    };
    // The fitted configuration: the calibration's own conditions (two hosts, its link rate); it
    // also trains longest, for the loss curve and the test accuracy.
    RunConfig fit = make("mlp-ring-n2", mlp, 2, ring, rate);
    fit.iterations = quick ? 30 : 60;
    fit.eval_samples = quick ? 2000 : 10000;
    add(fit, false);
    RunConfig ring4 = make("mlp-ring-n4", mlp, 4, ring, rate);
    ring4.keep_first_average = true;
    add(ring4);
    add(make("mlp-ring-n8", mlp, 8, ring, rate));
    add(make("mlp-ring-n4-" + rate_label(rate / 2), mlp, 4, ring, rate / 2));
    RunConfig ps4 = make("mlp-ps-n4", mlp, 4, ps, rate);
    ps4.keep_first_average = true;
    add(ps4);
    add(make("mlp-gossip-n4", mlp, 4, gossip, rate));
    RunConfig local = make("mlp-localsgd4-n4", mlp, 4, ring, rate);
    local.sync = models::SyncKind::local_sgd;
    local.period = 4;
    add(local);
    add(codec("mlp-fp16-n4", CodecKind::fp16, false, 4));
    add(codec("mlp-qsgd8-n4", CodecKind::qsgd, false, 4));
    add(codec("mlp-topk-ef-n4", CodecKind::topk, true, 4));
    add(codec("mlp-signsgd-ef-n4", CodecKind::signsgd, true, 4));
    add(make("cnn-ring-n4", cnn, 4, ring, rate));
    if (!quick) {
        add(make("mlp-ring-n3", mlp, 3, ring, rate));
        add(make("mlp-ring-n6", mlp, 6, ring, rate));
        add(make("mlp-ring-n4-" + rate_label(rate * 2), mlp, 4, ring, rate * 2));
        add(make("mlp-ps-n2", mlp, 2, ps, rate));
        add(make("mlp-ps-n8-" + rate_label(rate * 2), mlp, 8, ps, rate * 2));
        add(make("mlp-gossip-n8", mlp, 8, gossip, rate));
        RunConfig local8 = make("mlp-localsgd8-n8", mlp, 8, ring, rate);
        local8.sync = models::SyncKind::local_sgd;
        local8.period = 8;
        add(local8);
        add(codec("mlp-topk-n4", CodecKind::topk, false, 4));
        add(codec("mlp-signsgd-n4", CodecKind::signsgd, false, 4));
        add(codec("mlp-topk-ef-n8", CodecKind::topk, true, 8));
        RunConfig fp16ps = codec("mlp-fp16-ps-n4", CodecKind::fp16, false, 4);
        fp16ps.architecture = ps;
        add(fp16ps);
        add(make("cnn-ring-n2", cnn, 2, ring, rate));
        add(make("cnn-ring-n8", cnn, 8, ring, rate));
        add(make("cnn-ps-n4", cnn, 4, ps, rate));
    }
    for (auto& p : plan) {
        if (p.config.name == "mlp-ring-n2") continue;
        p.config.warmup = quick ? 2 : 3;
        p.config.iterations = quick ? 15 : 30;
        if (p.config.architecture == ps) p.config.iterations = quick ? 8 : 16;  // ~0.6 s per iteration
    }
    return plan;
}

EfStudy error_feedback_study(const CodecSpec& spec, Backend backend, const Dataset& train, std::uint32_t steps,
                             std::uint32_t batch, std::uint64_t seed) {
    EfStudy s;
    s.codec = describe(spec);
    s.steps = steps;
    auto model = make_model(ModelKind::mlp, backend, seed);
    const std::size_t n = model->size();
    auto codec = make_codec(spec, n, backend, seed);
    ShardSampler sampler(train.size(), 1, 0, seed);
    std::vector<float> e(n, 0.0F), p(n), decoded(n);
    if (spec.kind == CodecKind::topk) s.theory = std::sqrt(1.0 - std::max(1.0, std::round(spec.density * n)) / n);
    for (std::uint32_t t = 0; t < steps; ++t) {
        (void)model->forward_backward(train.gather(sampler.next(batch)));
        const auto g = model->gradient();
        for (std::size_t i = 0; i < n; ++i) p[i] = g[i] + e[i];
        const auto payload = codec->encode(g, model->device_gradient());
        std::fill(decoded.begin(), decoded.end(), 0.0F);
        codec->decode_add(payload, decoded, 1.0F);
        for (std::size_t i = 0; i < n; ++i) e[i] = p[i] - decoded[i];
        const double pn = norm2(p), en = norm2(e);
        if (pn > 0) s.contraction = std::max(s.contraction, en / pn);
        s.max_gradient = std::max(s.max_gradient, norm2(g));
        s.max_residual = std::max(s.max_residual, codec->residual_norm());
        s.residuals.push_back(codec->residual_norm());
        model->apply_gradient(decoded, 0.05F);
    }
    s.bound = s.contraction < 1.0 ? s.contraction / (1.0 - s.contraction) * s.max_gradient : INFINITY;
    return s;
}

namespace {

// run_validation in four steps: plan (data, configurations, network, calibration) -> run (predict,
// then measure every configuration) -> checks -> report.

struct Plan {
    Data data;
    std::vector<PlannedRun> runs;
    std::unique_ptr<HostNetwork> net;
    std::map<ModelKind, Calibration> cal;  ///< per model; the network measured once (with the first)
};

Plan make_plan(const ValidateOptions& o, std::ostream& log) {
    Plan p{load_data(o.data_dir, log), validation_plan(o.quick, o.rate_bps, o.backend), nullptr, {}};
    std::uint32_t hosts = 2;
    for (const auto& r : p.runs)
        hosts = std::max(hosts, r.config.workers + (r.config.architecture == topo::ArchKind::ps ? 1U : 0U));
    p.net = std::make_unique<HostNetwork>(hosts, o.rate_bps, o.namespaces);
    HostNetwork& net = *p.net;
    log << "network: " << net.note() << "\n";

    for (auto m : {ModelKind::mlp, ModelKind::cnn}) {
        if (std::none_of(p.runs.begin(), p.runs.end(), [&](const PlannedRun& r) { return r.config.model == m; }))
            continue;
        CalibrationOptions co;
        co.backend = o.backend;
        co.model = m;
        co.iterations = o.quick ? (m == ModelKind::mlp ? 30 : 10) : 60;
        co.sharing = o.quick ? std::vector<std::uint32_t>{1, 2, 4} : std::vector<std::uint32_t>{1, 2, 4, 8};
        co.pingpong_repeats = o.quick ? 3 : 7;
        co.measure_network = p.cal.empty();
        if (net.namespaced()) net.set_rate(o.rate_bps);
        Calibration c = calibrate(co, p.data.train, net, log);
        if (!p.cal.empty()) {
            c.network = p.cal.begin()->second.network;
            c.transport = p.cal.begin()->second.transport;  // the overlap slowdown stays per model (its compute step)
        }
        p.cal.emplace(m, std::move(c));  // the profile files are written once the whole run is complete
    }
    const Calibration& mlp = p.cal.at(ModelKind::mlp);
    log << fmt::format("network fit: alpha {:.1f} us, beta {:.3f} MB/s ({:.1f}% of the {:.0f} Mbit/s link)\n",
                       mlp.network.latency_s * 1e6, mlp.network.bandwidth_Bps / 1e6,
                       100.0 * mlp.network.goodput_fraction, mlp.network.rate_bps / 1e6);
    return p;
}

struct Measured {
    json configs = json::array();  ///< one report row per configuration run
    std::map<std::string, RunOutcome> outcomes;
};

Measured run_plan(const ValidateOptions& o, Plan& plan, std::ostream& out, std::ostream& log) {
    Measured m;
    out << fmt::format("\n  {:<24} {:<8} {:>10} {:>10} {:>9}  {:>11}\n", "configuration", "held out", "measured",
                       "predicted", "error", "cpu load");
    out << fmt::format("  {:<24} {:<8} {:>10} {:>10} {:>9}  {:>5} {:>5}\n", "", "", "ms/iter", "ms/iter", "", "all",
                       "ours");
    for (const auto& p : plan.runs) {
        if (!plan.net->namespaced() && p.config.rate_bps != o.rate_bps) {
            log << p.config.name << ": skipped (loopback: link rates cannot be shaped)\n";
            continue;
        }
        const Prediction pred = predict(p.config, plan.cal.at(p.config.model));  // before measuring
        log << p.config.name << ": running" << std::flush;
        const RunOutcome run = run_training(p.config, plan.data.train, plan.data.test, *plan.net);
        log << fmt::format(" ({:.1f} s)\n", run.wall_s);
        const json row = config_json(p, run, pred);
        print_row(out, row);
        out << std::flush;
        m.configs.push_back(row);
        m.outcomes.emplace(p.config.name, run);
    }
    return m;
}

struct Checked {
    std::vector<Check> checks;
    std::vector<double> mean_loss;  ///< of the fitted configuration, per iteration
    double first_loss = 0.0, last_loss = 0.0;
    json error_feedback = json::array();
};

Check loss_check(const RunOutcome& fit, Checked& c) {
    c.mean_loss.assign(fit.workers[0].losses.size(), 0.0);
    for (const auto& w : fit.workers)
        for (std::size_t i = 0; i < c.mean_loss.size(); ++i) c.mean_loss[i] += w.losses[i] / fit.workers.size();
    c.first_loss = mean_of(c.mean_loss, 0, 3);
    c.last_loss = mean_of(c.mean_loss, c.mean_loss.size() - 3, 3);
    return {"loss_decreases", std::isfinite(c.last_loss) && c.last_loss < c.first_loss,
            fmt::format("mean loss of the first 3 iterations {:.3f}, of the last 3 {:.3f}", c.first_loss, c.last_loss)};
}

Check same_average_check(const Measured& m) {
    const auto& ra = m.outcomes.at("mlp-ring-n4").workers[0].first_average;
    const auto& pa = m.outcomes.at("mlp-ps-n4").workers[0].first_average;
    double diff = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < std::min(ra.size(), pa.size()); ++i)
        diff = std::max(diff, double{std::fabs(ra[i] - pa[i])}), scale = std::max(scale, double{std::fabs(ra[i])});
    return {"ring_ps_same_average", !ra.empty() && ra.size() == pa.size() && diff <= 1e-5 * scale,
            fmt::format("max |ring - ps| = {:.3g} over {} elements (max |g| = {:.3g})", diff, ra.size(), scale)};
}

Check error_feedback_check(const ValidateOptions& o, const Dataset& train, const Measured& m, json& report_rows) {
    bool ef_ok = true;
    std::string ef_detail;
    for (auto kind : {CodecKind::topk, CodecKind::signsgd}) {
        CodecSpec spec{kind};
        spec.density = 0.01;
        spec.error_feedback = true;
        const EfStudy s = ef_from_json(json::parse(in_child(600.0, [&] {
            return ef_to_json(error_feedback_study(spec, o.backend, train, o.quick ? 80 : 200, 32, 5)).dump();
        })));
        // The TCP runs of the same compressor: residual within the study's bound at their gradients.
        double run_residual = 0.0, run_gradient = 0.0;
        for (const auto& [name, run] : m.outcomes)
            if (run.config.codec.kind == kind && run.config.codec.error_feedback)
                for (const auto& w : run.workers) {
                    for (double r : w.residual_norms) run_residual = std::max(run_residual, r);
                    for (double g : w.gradient_norms) run_gradient = std::max(run_gradient, g);
                }
        const double run_bound = s.contraction < 1.0 ? s.contraction / (1.0 - s.contraction) * run_gradient : INFINITY;
        const bool ok = s.passed() && std::isfinite(run_residual) && run_residual <= run_bound;
        ef_ok = ef_ok && ok;
        ef_detail += fmt::format(
            "{}{}: q = {:.4f}{}, max ||e|| = {:.3g} <= {:.3g} (in-process, {} steps); "
            "TCP runs max ||e|| = {:.3g} <= {:.3g}",
            ef_detail.empty() ? "" : "; ", s.codec, s.contraction,
            s.theory > 0 ? fmt::format(" (theory <= {:.4f})", s.theory) : "", s.max_residual, s.bound, s.steps,
            run_residual, run_bound);
        report_rows.push_back({{"compressor", s.codec},
                               {"steps", s.steps},
                               {"contraction", s.contraction},
                               {"contraction_theory", s.theory},
                               {"max_residual_norm", s.max_residual},
                               {"max_gradient_norm", s.max_gradient},
                               {"bound", s.bound},
                               {"residual_norms", s.residuals},
                               {"tcp_runs_max_residual_norm", run_residual},
                               {"tcp_runs_bound", run_bound},
                               {"passed", ok}});
    }
    return {"error_feedback_bounded", ef_ok, ef_detail};
}

Check finite_errors_check(const json& configs) {
    bool finite = !configs.empty();
    for (const auto& c : configs)
        finite = finite && std::isfinite(c["relative_error"].get<double>()) &&
                 c["measured_iteration_time_s"].get<double>() > 0 && c["predicted_iteration_time_s"].get<double>() > 0;
    return {"finite_errors", finite, fmt::format("{} configurations", configs.size())};
}

Checked run_checks(const ValidateOptions& o, const Plan& plan, const Measured& m) {
    Checked c;
    c.checks.push_back(loss_check(m.outcomes.at("mlp-ring-n2"), c));
    c.checks.push_back(same_average_check(m));
    c.checks.push_back(error_feedback_check(o, plan.data.train, m, c.error_feedback));
    c.checks.push_back(finite_errors_check(m.configs));
    return c;
}

json make_report(const ValidateOptions& o, const Plan& plan, const Measured& m, const Checked& c, double t0) {
    json checks = json::array();
    for (const auto& k : c.checks) checks.push_back({{"name", k.name}, {"passed", k.passed}, {"detail", k.detail}});
    json calibration = json::object();
    json profiles = json::object();
    for (const auto& [model, cal] : plan.cal) {
        calibration[model_name(model)] = cal.details_json();
        profiles[model_name(model)] = profile_path_for(o.profile, model);
    }
    const HostNetwork& net = *plan.net;
    return {{"format", "ddlsim-validation-1"},
            {"backend", backend_name(o.backend)},
            {"quick", o.quick},
            {"host", plan.cal.at(ModelKind::mlp).host},
            {"network",
             {{"mode", net.namespaced() ? "netns" : "loopback"},
              {"note", net.note()},
              {"calibration_link_rate_bps", o.rate_bps}}},
            {"dataset", {{"name", plan.data.name}, {"train", plan.data.train.size()}, {"test", plan.data.test.size()}}},
            {"profile", o.profile},
            {"profiles", profiles},
            {"calibration", calibration},
            {"configurations", m.configs},
            {"summary", {{"held_out", error_summary(m.configs, true)}, {"fitted", error_summary(m.configs, false)}}},
            {"loss",
             {{"first", c.first_loss},
              {"last", c.last_loss},
              {"configuration", "mlp-ring-n2"},
              {"iterations", c.mean_loss.size()},
              {"curve", c.mean_loss},
              {"test_accuracy", m.outcomes.at("mlp-ring-n2").workers[0].accuracy}}},
            {"error_feedback", c.error_feedback},
            {"checks", checks},
            {"wall_time_s", now_s() - t0}};
}

void print_summary(std::ostream& out, const json& report, const Measured& m, const Checked& c, const HostNetwork& net,
                   double t0) {
    const json& held = report["summary"]["held_out"];
    out << "\n";
    if (held.value("count", 0) > 0)
        out << fmt::format("  held-out configurations: {}, median |error| {:.1f}%, max {:.1f}%\n",
                           held["count"].get<int>(), 100 * held["median_abs_relative_error"].get<double>(),
                           100 * held["max_abs_relative_error"].get<double>());
    out << fmt::format("  loss {:.3f} -> {:.3f} over {} iterations of mlp-ring-n2, test accuracy {:.3f}\n",
                       c.first_loss, c.last_loss, c.mean_loss.size(), m.outcomes.at("mlp-ring-n2").workers[0].accuracy);
    for (const auto& k : c.checks)
        out << fmt::format("  check {:<24} {}  {}\n", k.name, k.passed ? "passed" : "FAILED", k.detail);
    out << fmt::format("  network: {}\n  wall time {:.1f} s\n", net.note(), now_s() - t0);
}

}  // namespace

ValidationResult run_validation(const ValidateOptions& o, std::ostream& out, std::ostream& log) {
    const double t0 = now_s();
    std::string why;
    if (!probe_backend(o.backend, &why)) throw std::runtime_error(fmt::format("--backend cuda: {}", why));
    Plan plan = make_plan(o, log);
    const Measured measured = run_plan(o, plan, out, log);
    Checked checked = run_checks(o, plan, measured);
    ValidationResult result;
    result.report = make_report(o, plan, measured, checked, t0);
    for (const auto& [m, c] : plan.cal)
        result.profiles.emplace_back(profile_path_for(o.profile, m), c.profile_json().dump(2) + "\n");
    print_summary(out, result.report, measured, checked, *plan.net, t0);
    result.checks = std::move(checked.checks);
    return result;
}

json run_calibration(const CalibrateOptions& o, std::ostream& out, std::ostream& log) {
    std::string why;
    if (!probe_backend(o.backend, &why)) throw std::runtime_error(fmt::format("--backend cuda: {}", why));
    const Data data = load_data(o.data_dir, log);
    HostNetwork net(2, o.rate_bps, o.namespaces);
    log << "network: " << net.note() << "\n";
    CalibrationOptions co;
    co.backend = o.backend;
    co.model = o.model;
    co.batch = o.batch;
    co.iterations = o.quick ? 20 : 60;
    co.sharing = o.quick ? std::vector<std::uint32_t>{1, 2} : std::vector<std::uint32_t>{1, 2, 4, 8};
    co.pingpong_repeats = o.quick ? 3 : 7;
    const Calibration c = calibrate(co, data.train, net, log);
    out << fmt::format("{} on {} ({}), batch {}\n", model_name(o.model), c.host, backend_name(o.backend), o.batch);
    out << fmt::format("  {:<8} {:>10} {:>12} {:>12} {:>12}\n", "layer", "params", "forward ms", "backward ms",
                       "update ms");
    for (const auto& l : c.layers)
        out << fmt::format("  {:<8} {:>10} {:>12.3f} {:>12.3f} {:>12.3f}\n", l.name, l.params, l.fwd_time * 1e3,
                           l.bwd_time * 1e3, l.update_time * 1e3);
    out << fmt::format("  effective FLOP rate {:.2f} GFLOP/s, memory bandwidth {:.2f} GB/s\n", c.peak_flops / 1e9,
                       c.memory_bandwidth / 1e9);
    std::string sharing;
    for (const auto& [k, s] : c.sharing) sharing += fmt::format(" {}:{:.2f}", k, s);
    out << fmt::format("  sharing (processes:slowdown){} -> {:.2f} slots\n", sharing, c.sharing_slots);
    for (const auto& [name, p] : c.codecs)
        out << fmt::format("  codec {:<8} encode {:.2f} ns/element, decode {:.2f} ns/element\n", name,
                           p.encode_s_per_element * 1e9, p.decode_s_per_element * 1e9);
    out << fmt::format("  network ({}): alpha {:.1f} us, beta {:.3f} MB/s", c.network.transport,
                       c.network.latency_s * 1e6, c.network.bandwidth_Bps / 1e6);
    if (c.network.rate_bps > 0)
        out << fmt::format(" = {:.1f}% of {:.0f} Mbit/s (TCP over Ethernet carries at most 1448/1514 = 95.6%)",
                           100 * c.network.goodput_fraction, c.network.rate_bps / 1e6);
    out << fmt::format(", rms relative residual {:.1f}%\n", 100 * c.network.rms_relative_residual);
    if (c.transport.measured)
        out << fmt::format(
            "  transport tcp: efficiency {:.4f}, message overhead {:.1f} us, collective overhead {:.1f} us (ring of {} "
            "tiny chunks {:.1f} us - 2({}-1) x one-way {:.1f} us = {:+.1f} us)\n",
            c.transport.efficiency, c.transport.message_overhead_s * 1e6, c.transport.collective_overhead_s * 1e6,
            c.transport.ranks, c.transport.collective_s * 1e6, c.transport.ranks, c.transport.p2p_s * 1e6,
            c.transport.collective_raw_s * 1e6);
    if (c.overlap.measured)
        out << fmt::format(
            "  overlap: compute step {:.3f} ms alone, {:.3f} ms beside the transport thread ({:.2f} MB/s "
            "moved): slowdown {:.3f} (raw {:+.3f})\n",
            c.overlap.alone_s * 1e3, c.overlap.beside_s * 1e3, c.overlap.transport_Bps / 1e6, c.overlap.slowdown,
            c.overlap.raw);
    json profile = c.profile_json();
    return profile;
}

}  // namespace ddlsim::validate
