// Time to train (models/time_to_train.hpp). The run's parts, each hand-derivable:
//   samples S        the target's samples at the global batch B (data, table, noise-scale form or a number),
//                    times the scheme's statistical-efficiency factor
//   steps            ceil(S / B); training = steps x B / throughput (the simulated step)
//   evaluations      at first_after, first_after + every, ..., up to the first at or past S (the evaluation that
//                    sees the target); each is ceil(ceil(eval_samples / workers) / batch) forward passes of one
//                    micro-batch plus the metric all-reduce (with p pipeline stages: workers / p replicas, each
//                    ceil(ceil(eval_samples / replicas) / batch) + p - 1 stage forwards)
//   checkpoints      floor(steps / every_steps) or floor(training / every_seconds), each bytes / write_bandwidth
//   GPU-hours        total x workers / 3600; cost = GPU-hours x price; energy = GPU-hours x board power
// The low and high figures repeat the sum with the data's fastest and slowest run.
#include "models/time_to_train.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/comm_plan.hpp"
#include "models/job.hpp"

namespace ddlsim::models {

const ConvergenceData* find_convergence(std::string_view model) {
    for (const auto& d : builtin_convergence())
        if (d.model == model) return &d;
    return nullptr;
}

std::vector<std::string> convergence_models() {
    std::vector<std::string> out;
    for (const auto& d : builtin_convergence()) out.push_back(d.model);
    return out;
}

std::optional<NoiseScale> fit_noise_scale(const std::vector<ConvergencePoint>& points) {
    // Ordinary least squares of samples = a + b x batch; E_min = a, B_crit = a / b.
    const double n = static_cast<double>(points.size());
    if (points.size() < 2) return std::nullopt;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& p : points) {
        sx += p.global_batch;
        sy += p.samples;
        sxx += p.global_batch * p.global_batch;
        sxy += p.global_batch * p.samples;
    }
    const double den = n * sxx - sx * sx;
    if (!(den > 0.0)) return std::nullopt;
    const double b = (n * sxy - sx * sy) / den;
    const double a = (sy - b * sx) / n;
    if (!(b > 0.0) || !(a > 0.0)) return std::nullopt;
    return NoiseScale{a / b, a};
}

SamplesEstimate samples_at(const std::vector<ConvergencePoint>& points, double batch) {
    if (points.empty()) throw std::invalid_argument("no convergence points");
    const ConvergencePoint& first = points.front();
    const ConvergencePoint& last = points.back();
    if (batch <= first.global_batch)
        return {first.samples, first.low, first.high, false,
                batch == first.global_batch ? fmt::format("the point at global batch {:g}", first.global_batch)
                                            : fmt::format("the smallest batch's point ({:g})", first.global_batch)};
    if (batch > last.global_batch) {
        const auto fit = fit_noise_scale(points);
        const double slope = fit ? fit->min_samples / fit->critical_batch : 0.0;
        const double s = last.samples + slope * (batch - last.global_batch);
        const double r = s / last.samples;
        return {s, last.low * r, last.high * r, true,
                fmt::format("extrapolated past global batch {:g} along the noise-scale fit", last.global_batch)};
    }
    const auto hi = std::find_if(points.begin(), points.end(), [&](const auto& p) { return p.global_batch >= batch; });
    if (hi->global_batch == batch)
        return {hi->samples, hi->low, hi->high, false, fmt::format("the point at global batch {:g}", batch)};
    const auto lo = hi - 1;
    const double t = (batch - lo->global_batch) / (hi->global_batch - lo->global_batch);
    const auto mix = [t](double a, double b) { return a + t * (b - a); };
    return {mix(lo->samples, hi->samples), mix(lo->low, hi->low), mix(lo->high, hi->high), false,
            fmt::format("interpolated between global batch {:g} and {:g}", lo->global_batch, hi->global_batch)};
}

namespace {

// Published statistical-efficiency factors: samples to target relative to BSP at equal batch, from accuracy
// reached at equal epochs (a factor of 1 where the scheme matched or beat the baseline's accuracy in the same
// number of epochs).
struct PublishedFactor {
    const char* compressor;  // a compression kind, with error feedback
    double factor;
    const char* source;
};
constexpr PublishedFactor kPublished[]{
    // Lin et al., "Deep Gradient Compression", ICLR 2018 (arXiv 1712.01887), Table 4: ResNet-50 on ImageNet at
    // 99.9 % sparsity, top-1 76.15 % vs 75.96 % for the baseline in the same epochs.
    {"dgc", 1.0,
     "published: Lin et al. 2018 (DGC), Table 4, ResNet-50 ImageNet top-1 76.15 % vs 75.96 % at equal epochs"},
    // Vogels et al., "PowerSGD", NeurIPS 2019 (arXiv 1905.13727), Table 3: ResNet-18 on CIFAR-10, rank 2 reaches
    // 94.4 % vs 94.3 % for SGD in the same epochs (error feedback on, as PowerSGD always runs it).
    {"powersgd", 1.0,
     "published: Vogels et al. 2019 (PowerSGD), Table 3, ResNet-18 CIFAR-10 94.4 % vs 94.3 % at equal epochs"},
};

}  // namespace

StatisticalEfficiency statistical_efficiency(const TrainingJob& job) {
    const bool dense = job.compression.kind == "none";
    if (job.sync.kind == SyncKind::bsp && dense) return {1.0, "bsp: the reference scheme, factor 1", false};
    // DiLoCo at equal tokens: Douillard et al., "DiLoCo", arXiv 2311.08105 (2023), abstract: 8 workers (H = 500) on
    // C4 perform as well as fully synchronous optimization; Streaming DiLoCo, arXiv 2501.18512 (2025), abstract: its
    // fragments with overlap reach similar quality at billion-parameter scale.
    // Its outer gradients at 4 bits and more: Streaming DiLoCo (§2) sent 4-bit floats with no loss; fewer bits have
    // no published factor.
    if (job.sync.kind == SyncKind::diloco && dense && job.sync.outer_bits > 0.0 && job.sync.outer_bits < 4.0)
        return {1.0,
                fmt::format("assumed 1: no published factor for diloco with {:g}-bit outer gradients (Streaming DiLoCo "
                            "published 4 bits); give training.statistical_efficiency",
                            job.sync.outer_bits),
                true};
    if (job.sync.kind == SyncKind::diloco && dense)
        return {1.0,
                job.sync.fragments > 1 || job.sync.overlap_steps > 0 || job.sync.outer_bits > 0.0
                    ? "published: Douillard et al. 2025 (Streaming DiLoCo, arXiv 2501.18512), abstract: similar "
                      "quality to data-parallel training at equal tokens"
                    : "published: Douillard et al. 2023 (DiLoCo, arXiv 2311.08105), abstract: 8 workers, H = 500, "
                      "C4: as well as fully synchronous optimization at equal tokens",
                false};
    if (job.sync.kind == SyncKind::bsp)
        for (const auto& p : kPublished)
            if (job.compression.kind == p.compressor) return {p.factor, p.source, false};
    const std::string scheme = dense ? std::string(sim::enum_name(job.sync.kind))
                                     : fmt::format("{} with {}{}", sim::enum_name(job.sync.kind), job.compression.kind,
                                                   job.compression.error_feedback ? " and error feedback" : "");
    return {1.0, fmt::format("assumed 1: no published factor for {}; give training.statistical_efficiency", scheme),
            true};
}

sim::Time metric_allreduce_time(const TrainingJob& job, const topo::Fabric& fabric) {
    // The job's own collective over its own hosts, for two FP32 numbers (correct and seen), uncompressed and
    // unsharded: the launch overhead and the latency terms of its rounds.
    TrainingJob m = job;
    Layer metric;
    metric.name = "metric";
    metric.tensors = {Tensor{"metric", 2, 0, 0}};
    m.workload = Workload{};
    m.workload.name = "metric";
    m.workload.layers = {metric};
    m.bytes_per_param = 4.0;
    m.compression = CompressionSpec{};
    m.sharding = ShardingSpec{};
    m.sync = SyncSpec{};
    m.overlap = OverlapSpec{};
    const CommPlan plan(m, fabric, false);
    sim::Time t;
    for (const auto& msg : plan.messages()) t += plan.alpha_beta(msg);
    return t;
}

namespace {

struct Parts {
    double steps = 0, training_s = 0, evaluations = 0, evaluation_s = 0, checkpoints = 0, checkpoint_s = 0;
    [[nodiscard]] double total() const { return training_s + evaluation_s + checkpoint_s; }
};

Parts parts(double samples, const TrainingSpec& spec, const TrainingRun& run, double epoch_samples, double eval_each_s,
            double ckpt_each_s) {
    Parts p;
    p.steps = std::ceil(samples / run.global_batch - 1e-9);
    p.training_s = p.steps * run.global_batch / run.samples_per_s;
    if (spec.evaluation) {
        const EvaluationSpec& e = *spec.evaluation;
        const double every = e.every_samples > 0.0 ? e.every_samples : e.every_epochs * epoch_samples;
        const double first = e.first_after_samples.value_or(every);
        p.evaluations = samples <= first ? 1.0 : 1.0 + std::ceil((samples - first) / every - 1e-9);
        p.evaluation_s = p.evaluations * eval_each_s;
    }
    if (spec.checkpoint) {
        const CheckpointSpec& c = *spec.checkpoint;
        p.checkpoints = c.every_steps > 0 ? std::floor(p.steps / static_cast<double>(c.every_steps))
                                          : std::floor(p.training_s / c.every.seconds());
        p.checkpoint_s = p.checkpoints * ckpt_each_s;
    }
    return p;
}

}  // namespace

TimeToTrain time_to_train(const TrainingSpec& spec, const TrainingRun& run) {
    if (!(run.samples_per_s > 0.0) || !(run.global_batch > 0.0))
        throw TrainingInputError("", "time to train needs a positive simulated throughput");
    TimeToTrain t;
    t.efficiency = spec.statistical_efficiency ? StatisticalEfficiency{*spec.statistical_efficiency, "scenario", false}
                                               : run.efficiency;
    const ConvergenceData* data = nullptr;
    SamplesEstimate s;
    if (spec.tokens_to_target > 0.0) {
        if (run.tokens_per_sample <= 0)
            throw TrainingInputError("tokens_to_target", "needs a sequence model (tokens per sample)");
        const double samples = spec.tokens_to_target / static_cast<double>(run.tokens_per_sample);
        s = {samples, samples, samples, false,
             fmt::format("{:g} tokens of {} per sample", spec.tokens_to_target, run.tokens_per_sample)};
        t.samples_source = "tokens_to_target";
    } else {
        const SamplesToTarget& target = *spec.samples_to_target;
        switch (target.form) {
            case TargetForm::samples:
                s = {target.samples, target.samples, target.samples, false, "the scenario's number"};
                t.samples_source = "scenario";
                break;
            case TargetForm::builtin:
                data = find_convergence(run.model);
                if (!data)
                    throw TrainingInputError("samples_to_target",
                                             fmt::format("no built-in convergence data for model \"{}\"", run.model));
                s = samples_at(data->points, run.global_batch);
                t.samples_source = data->source;
                t.fitted = fit_noise_scale(data->points);
                break;
            case TargetForm::table:
                s = samples_at(target.table, run.global_batch);
                t.samples_source = "scenario table";
                t.fitted = fit_noise_scale(target.table);
                break;
            case TargetForm::noise_scale: {
                const double v = target.noise.samples(run.global_batch);
                s = {v, v, v, false, "E_min (1 + B / B_crit)"};
                t.samples_source = "noise scale";
                break;
            }
        }
    }
    s.samples *= t.efficiency.factor;
    s.low *= t.efficiency.factor;
    s.high *= t.efficiency.factor;
    t.samples = s;
    t.epoch_samples = spec.epoch_samples > 0.0 ? spec.epoch_samples : data ? data->epoch_samples : 0.0;
    if (spec.evaluation && spec.evaluation->every_epochs > 0.0 && !(t.epoch_samples > 0.0))
        throw TrainingInputError("evaluation", "every_epochs needs training.epoch_samples");
    t.epochs = t.epoch_samples > 0.0 ? s.samples / t.epoch_samples : 0.0;

    if (spec.evaluation) {
        const double stages = std::max<std::uint32_t>(1, run.pipeline_stages);
        const double per_replica = std::ceil(spec.evaluation->samples / (run.workers / stages));
        t.evaluation_each_s =
            (std::ceil(per_replica / run.batch_size) + stages - 1.0) * run.forward_s + run.metric_allreduce_s;
    }
    if (spec.checkpoint) {
        const double bytes = spec.checkpoint->bytes ? spec.checkpoint->bytes->value() : run.rank_state_bytes;
        t.checkpoint_each_s = bytes / spec.checkpoint->write_bandwidth.bytes_per_s();
    }
    const Parts mid = parts(s.samples, spec, run, t.epoch_samples, t.evaluation_each_s, t.checkpoint_each_s);
    t.optimizer_steps = mid.steps;
    t.global_batch = run.global_batch;
    t.step_s = run.global_batch / run.samples_per_s;
    t.training_s = mid.training_s;
    t.evaluations = mid.evaluations;
    t.evaluation_s = mid.evaluation_s;
    t.checkpoints = mid.checkpoints;
    t.checkpoint_s = mid.checkpoint_s;
    t.total_s = mid.total();
    t.total_low_s = parts(s.low, spec, run, t.epoch_samples, t.evaluation_each_s, t.checkpoint_each_s).total();
    t.total_high_s = parts(s.high, spec, run, t.epoch_samples, t.evaluation_each_s, t.checkpoint_each_s).total();
    // Inputs no training run has (a sample count of 1e18, an evaluation every 1e-300 samples) are refused at the
    // key responsible rather than printed as infinities.
    if (mid.evaluations > 1e12)
        throw TrainingInputError("evaluation", fmt::format("would evaluate {:.3g} times (limit 1e12); expected a "
                                                           "larger interval",
                                                           mid.evaluations));
    if (mid.checkpoints > 1e12)
        throw TrainingInputError("checkpoint", fmt::format("would write {:.3g} checkpoints (limit 1e12); expected a "
                                                           "larger interval",
                                                           mid.checkpoints));
    if (!(t.total_high_s <= kMaxTrainingSeconds))
        throw TrainingInputError(
            mid.evaluation_s > mid.training_s ? "evaluation" : "samples_to_target",
            fmt::format("the run to the target would take {:.3g} s (limit {:.0e} s, about 31,700 years); expected "
                        "fewer samples or a faster job",
                        t.total_high_s, kMaxTrainingSeconds));
    const double gpus = static_cast<double>(run.workers);
    t.gpu_hours = t.total_s * gpus / 3600.0;
    if (spec.price_per_gpu_hour) {
        t.cost = t.gpu_hours * *spec.price_per_gpu_hour;
        t.cost_low = t.total_low_s * gpus / 3600.0 * *spec.price_per_gpu_hour;
        t.cost_high = t.total_high_s * gpus / 3600.0 * *spec.price_per_gpu_hour;
    }
    if (run.board_power_w > 0.0) t.energy_kwh = t.gpu_hours * run.board_power_w / 1000.0;
    return t;
}

}  // namespace ddlsim::models
