#include "tools/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/device.hpp"
#include "models/workload.hpp"
#include "scenarios/run.hpp"
#include "tools/run_result.hpp"

namespace ddlsim::tools {
namespace {

std::string ms(double s) {
    return fmt::format("{:.3f} ms", s * 1e3);
}

std::string latency(double s) {
    if (s < 1e-3) return fmt::format("{:.4g} us", s * 1e6);
    return fmt::format("{:.4g} ms", s * 1e3);
}

// "dgx_h100 (8 GPUs, NVSwitch ..., 450 GB/s per GPU, 8 NICs)" or, key by key, "of 8 GPUs (...)".
std::string node_line(const topo::NodeType& n) {
    return fmt::format("{}({} GPUs, {}, {:.4g} GB/s per GPU per direction, {} NICs)",
                       n.preset.empty() ? "of " : n.preset + " ", n.gpus, n.fabric, n.gpu_bandwidth.bytes_per_s() / 1e9,
                       n.nics);
}

std::string topology_line(const scenario::Scenario& s) {
    return topo::summary(s.topology, {[](sim::Bandwidth b) { return si_text(b.bits_per_s(), "bit/s"); },
                                      [](sim::Time t) { return latency(t.seconds()); }, node_line});
}

// What would make a job fit, largest part first, only what the job does not do already.
std::string memory_advice(const scenario::JobSpec& spec, const models::MemoryEstimate& m) {
    std::vector<std::string> tips;
    const double state = m.weights + m.gradients + m.optimizer;
    const bool activations_first = m.activations > state;
    const std::string checkpoint = "activation checkpointing (\"activation_checkpointing\": \"full\")";
    const std::string batch = "a smaller batch with gradient accumulation";
    std::string shard;
    if (spec.parallelism.any())  // sharding is not modelled with model parallelism yet: more ranks split the state
        shard = "more tensor ranks or pipeline stages (\"parallelism\": {\"tensor\": " +
                std::to_string(2 * spec.parallelism.tensor) +
                "} or {\"pipeline\": " + std::to_string(2 * spec.parallelism.pipeline) +
                "}, where they divide the model and the workers)";
    else if (!spec.sharding.any())
        shard = "sharding the weights, gradients and optimizer state (\"sharding\": {\"stage\": 3})";
    else if (spec.sharding.stage < 3)
        shard = "a higher sharding stage (\"sharding\": {\"stage\": 3})";
    if (activations_first) {
        if (!spec.activation_checkpointing) tips.push_back(checkpoint);
        tips.push_back(batch);
        if (!shard.empty()) tips.push_back(shard);
    } else {
        if (!shard.empty()) tips.push_back(shard);
        if (!spec.activation_checkpointing && m.activations > 0.0) tips.push_back(checkpoint);
    }
    if (spec.bytes_per_param > 2.0) tips.emplace_back("bf16 or fp16 (\"model\": {\"dtype\": \"bf16\"})");
    tips.emplace_back("a device with more memory");
    std::string out = "try ";
    for (std::size_t i = 0; i < tips.size(); ++i)
        out += (i == 0 ? "" : i + 1 == tips.size() ? ", or " : ", ") + tips[i];
    return out;
}

std::string job_block(const scenario::Scenario& s, const scenario::JobSpec& spec, const models::JobResult& j,
                      const scenario::ComputeAssumptions& c) {
    const double exposed_share = j.iteration_time_s > 0 ? j.exposed_communication_time_s / j.iteration_time_s : 0.0;
    std::string out;
    out += fmt::format("  model         {} ({:.1f} M parameters, {} gradient tensors, {} per iteration)\n",
                       spec.model_name, static_cast<double>(spec.workload.params()) / 1e6, spec.workload.tensor_count(),
                       si_text(static_cast<double>(spec.workload.params()) * spec.bytes_per_param, "B"));
    out += fmt::format(
        "  workers       {}, batch {} per {}{}, device {}\n", spec.workers, spec.batch_size,
        spec.parallelism.any() ? "model replica" : "worker",
        spec.gradient_accumulation > 1
            ? fmt::format(" x {} micro-batches per step (gradient accumulation)", spec.gradient_accumulation)
            : std::string(),
        spec.device.name);
    {
        // Transformer Engine's FP8 leaves attention in BF16 (models/device.cpp).
        const std::string precision = c.fp32_matmuls ? fmt::format("{} convolutions, fp32 matmuls", c.precision)
                                      : spec.device.bf16_speed != 1.0
                                          ? fmt::format("{} GEMMs, bf16 attention", c.precision)
                                          : c.precision;
        out += fmt::format(
            "  compute       {} ({}), optimizer {} ({}), {} kernels; matmul {:.3g} of {:.4g} TFLOPS, memory {:.2g} "
            "of {:.4g} GB/s ({}); effective {:.3g} TFLOPS\n",
            precision, c.precision_source, c.optimizer, c.optimizer_source, c.software, c.matmul_efficiency,
            c.peak_tflops, c.memory_efficiency, c.memory_bandwidth_gbps, c.efficiency_source, c.effective_tflops);
    }
    out += fmt::format("  scheme        {}, sync {}\n", scenario::describe_architecture(spec),
                       scenario::describe_sync(spec));
    if (spec.parallelism.any()) {
        // What each stage's data ranks do with its gradients (models/program/pipeline.cpp).
        const bool dist_opt = spec.sharding.stage == 1;
        std::string sync =
            fmt::format("each stage's data ranks {} its gradients {}", dist_opt ? "reduce-scatter" : "all-reduce",
                        spec.overlap.wfbp ? "during the last micro-batch's backward" : "after the drain");
        if (dist_opt)
            sync += spec.parallelism.overlap_param_gather ? ", all-gather the parameters beside the next forward"
                                                          : ", all-gather the parameters after the update";
        out += fmt::format("  parallelism   {}, {} micro-batch{} per step; {}\n", scenario::describe_parallelism(spec),
                           spec.gradient_accumulation, spec.gradient_accumulation == 1 ? "" : "es", sync);
    }
    out += fmt::format("  compression   {}; overlap {}\n", scenario::describe_compression(spec),
                       scenario::describe_overlap(spec));
    for (const auto& p : j.algorithm_picks)
        out += fmt::format("  auto picked   {} for {} message{} of {} .. {}\n", sim::enum_name(p.algorithm), p.messages,
                           p.messages == 1 ? "" : "s", si_text(p.min_bytes, "B"), si_text(p.max_bytes, "B"));
    {
        const auto m = scenario::job_memory(spec);
        out += fmt::format(
            "  memory        {} per GPU (weights {}, gradients {}, optimizer {}, activations {}, buffers {}){}\n",
            si_text(m.total(), "B"), si_text(m.weights, "B"), si_text(m.gradients, "B"), si_text(m.optimizer, "B"),
            si_text(m.activations, "B"), si_text(m.buffers, "B"),
            m.capacity ? fmt::format(" of {}", si_text(*m.capacity, "B")) : std::string());
        if (m.fits() && !*m.fits())
            out += fmt::format("  WARNING       the job needs {} per GPU but the {} has {}: it would not fit ({})\n",
                               si_text(m.total(), "B"), spec.device.name, si_text(*m.capacity, "B"),
                               memory_advice(spec, m));
    }
    if (!spec.worker_devices.empty()) out += fmt::format("  devices       heterogeneous (worker_devices)\n");
    if (spec.stragglers.any()) out += "  stragglers    yes (see the scenario's stragglers block)\n";
    out += "\n";
    // FedAvg's iterations are rounds (each client's local steps, then the average): name them so.
    const bool rounds = spec.sync.kind == models::SyncKind::fedavg;
    const char* unit = rounds ? "round" : "iteration";
    out += fmt::format("  per {} (mean over {} {}s)\n", unit, s.iterations, unit);
    // One compute and one exposed figure: the parts of the iteration (they sum to it), compute with its slowdown
    // beside overlapped communication shown as its own line.
    const double compute = j.breakdown ? j.breakdown->compute : j.compute_time_s;
    const double exposed = j.breakdown ? j.breakdown->exposed_communication : j.exposed_communication_time_s;
    const double slowdown = compute - j.compute_time_s;
    auto line = [&](const std::string& label, double seconds, const std::string& note = "") {
        out += fmt::format("  {:<34}{:>16}{}\n", label, duration_text(seconds), note.empty() ? "" : "   " + note);
    };
    line(fmt::format("{} time", unit), j.iteration_time_s);
    line("  compute", compute);
    // Under BSP an iteration is one step of every worker, so its compute is forward + backward + update, stretched
    // beside overlapped communication. The other schemes run several local steps (or none) per iteration.
    if (spec.sync.kind == models::SyncKind::bsp) {
        line("    forward", j.forward_time_s);
        line("    backward", j.backward_time_s);
        line("    update", j.update_time_s);
        if (slowdown > 1e-9 * compute)
            line("    slowdown beside communication", slowdown,
                 fmt::format("({:.1f} % more compute time under overlap)", 100.0 * slowdown / j.compute_time_s));
    } else {
        out += fmt::format("      one step: forward {}, backward {}, update {}\n", duration_text(j.forward_time_s),
                           duration_text(j.backward_time_s), duration_text(j.update_time_s));
    }
    const double codec = j.breakdown ? j.breakdown->codec : j.codec_time_s;
    if (codec > 0.0) line("  encode + decode", codec);
    // A pipeline's stages also wait for each other's micro-batches (the bubble): split by what the ranks waited for.
    line(spec.parallelism.any() ? "  bubble + exposed comm." : "  exposed communication", exposed,
         fmt::format("({:.1f} % of the {})", 100.0 * exposed_share, unit));
    if (const auto& e = j.exposed_by_dimension) {
        if (spec.parallelism.tensor > 1) line("    tensor-parallel collectives", e->tensor);
        if (spec.parallelism.context > 1) line("    context-parallel rings", e->context);
        if (spec.parallelism.expert > 1) line("    expert all-to-alls", e->expert);
        if (spec.parallelism.pipeline > 1) line("    pipeline bubble and sends", e->pipeline);
        line("    data-parallel all-reduces", e->data);
    }
    if (j.breakdown) line("  waiting for peers", j.breakdown->waiting);
    line("communication in flight", j.communication_time_s,
         j.communication_time_s > exposed * (1.0 + 1e-6)
             ? fmt::format("({:.1f} % of it hidden under compute)", 100.0 * (1.0 - exposed / j.communication_time_s))
             : std::string());
    out += fmt::format("  {:<34}{:>16}\n", "bytes on the wire", si_text(j.bytes_on_wire_per_iteration, "B"));
    out += fmt::format("  {:<34}{:>16}\n", "throughput", fmt::format("{:.1f} samples/s", j.throughput_samples_per_s));
    out += fmt::format("  {:<34}{:>16}\n", "scaling efficiency", fmt::format("{:.1f} %", 100.0 * j.scaling_efficiency));
    if (const auto t = scenario::token_rates(spec, j)) {
        out += fmt::format("  {:<34}{:>16}\n", "tokens",
                           t->tokens_per_s >= 1e4 ? fmt::format("{:.0f} tokens/s", t->tokens_per_s)
                                                  : fmt::format("{:.4g} tokens/s", t->tokens_per_s));
        out += fmt::format("  {:<34}{:>16}\n", "model FLOPs utilisation", fmt::format("{:.1f} %", 100.0 * t->mfu));
        out += fmt::format("  {:<34}{:>16}\n", "model TFLOP/s per GPU", fmt::format("{:.1f}", t->tflops_per_gpu));
        if (t->hfu > t->mfu * (1.0 + 1e-9))
            out += fmt::format("  {:<34}{:>16}   (recomputation included)\n", "hardware FLOPs utilisation",
                               fmt::format("{:.1f} %", 100.0 * t->hfu));
    }
    if (j.has_staleness)
        out += fmt::format("  {:<34}{:>16}\n", "staleness (mean / max)",
                           fmt::format("{:.2f} / {}", j.staleness_mean, j.staleness_max));
    if (!j.workers.empty() &&
        (spec.sync.kind != models::SyncKind::bsp || spec.stragglers.any() || !spec.worker_devices.empty())) {
        double idle_max = 0.0, idle_sum = 0.0;
        std::uint32_t it_min = j.workers.front().iterations, it_max = it_min;
        for (const auto& w : j.workers) {
            idle_max = std::max(idle_max, w.idle_s);
            idle_sum += w.idle_s;
            it_min = std::min(it_min, w.iterations);
            it_max = std::max(it_max, w.iterations);
        }
        out += fmt::format("  {:<34}{:>16}\n", "worker steps (min / max)", fmt::format("{} / {}", it_min, it_max));
        out +=
            fmt::format("  {:<34}{:>16}\n", "worker idle (mean / max)",
                        fmt::format("{:.3g} / {:.3g} s", idle_sum / static_cast<double>(j.workers.size()), idle_max));
        out += fmt::format("  {:<34}{:>16}\n", "model versions / sync rounds",
                           fmt::format("{} / {}", j.model_versions, j.rounds));
    }
    return out;
}

std::string training_block(const models::TimeToTrain& t) {
    std::string out = "\n  time to train\n";
    out += fmt::format("  {:<24}{} at global batch {:.0f} ({}; {})\n", "samples to target",
                       si_text(t.samples.samples, ""), t.global_batch, t.samples.how, t.samples_source);
    if (t.epochs > 0.0)
        out += fmt::format("  {:<24}{:.1f} (range {:.1f} .. {:.1f})\n", "epochs", t.epochs,
                           t.samples.low / t.epoch_samples, t.samples.high / t.epoch_samples);
    if (t.samples.extrapolated)
        out += "  WARNING                 the global batch is past the data's largest: samples extrapolated\n";
    out += fmt::format("  {:<24}{:.4g} ({})\n", "statistical efficiency", t.efficiency.factor, t.efficiency.source);
    out += fmt::format("  {:<24}{:.0f} of {}\n", "optimizer steps", t.optimizer_steps, ms(t.step_s));
    out += fmt::format("  {:<24}{} (range {} .. {})\n", "total", duration_text(t.total_s), duration_text(t.total_low_s),
                       duration_text(t.total_high_s));
    out += fmt::format("  {:<24}{}\n", "  training steps", duration_text(t.training_s));
    if (t.evaluations > 0)
        out += fmt::format("  {:<24}{} ({:.0f} x {})\n", "  evaluation", duration_text(t.evaluation_s), t.evaluations,
                           ms(t.evaluation_each_s));
    if (t.checkpoints > 0)
        out += fmt::format("  {:<24}{} ({:.0f} x {})\n", "  checkpoints", duration_text(t.checkpoint_s), t.checkpoints,
                           ms(t.checkpoint_each_s));
    out += fmt::format("  {:<24}{:.4g}", "GPU-hours", t.gpu_hours);
    if (t.cost) out += fmt::format("; cost {:.4g} (range {:.4g} .. {:.4g})", *t.cost, *t.cost_low, *t.cost_high);
    if (t.energy_kwh) out += fmt::format("; energy {:.4g} kWh at board power", *t.energy_kwh);
    out += "\n";
    if (t.fitted)
        out += fmt::format("  {:<24}B_crit {:.0f}, E_min {} (E(B) = E_min (1 + B / B_crit))\n", "noise-scale fit",
                           t.fitted->critical_batch, si_text(t.fitted->min_samples, "") + " samples");
    return out;
}

}  // namespace

std::string run_summary(const std::string& file, const scenario::Scenario& s, const scenario::RunResult& r,
                        const std::vector<std::string>& sets) {
    std::string out = fmt::format("ddlsim run {}\n", file);
    if (!sets.empty()) {
        std::string list;
        for (const auto& a : sets) list += (list.empty() ? "--set " : " --set ") + a;
        out += fmt::format("  overrides     {}\n", list);
    }
    out += fmt::format("  network       {}; model {}\n", topology_line(s),
                       s.network_model == scenario::NetworkModel::flow ? "flow (max-min)" : "analytic (alpha-beta)");
    out += fmt::format("  transport     {}\n", scenario::describe_transports(s));
    for (std::size_t i = 0; i < s.jobs.size(); ++i) {
        if (s.has_jobs_list) out += fmt::format("\n job {} ({} of {})\n", s.jobs[i].name, i + 1, s.jobs.size());
        out += job_block(s, s.jobs[i], r.jobs[i],
                         i < r.compute.size() ? r.compute[i] : scenario::compute_assumptions(s.jobs[i]));
        if (i < r.time_to_train.size() && r.time_to_train[i]) out += training_block(*r.time_to_train[i]);
    }
    if (!r.busiest_links.empty()) {
        out += fmt::format("\n  busiest links (mean utilisation of links in use {:.1f} %)\n",
                           100.0 * r.mean_link_utilization);
        for (const auto& l : r.busiest_links)
            out += fmt::format("    {:<28}{:>12}{:>10.1f} %\n", l.name, si_text(l.bytes, "B"), 100.0 * l.utilization);
    }
    const bool all_rounds = std::all_of(s.jobs.begin(), s.jobs.end(),
                                        [](const auto& j) { return j.sync.kind == models::SyncKind::fedavg; });
    // With flow classes each simulated transfer stood for its class's m = workers / P (docs/BENCHMARKS.md).
    const std::string classes =
        r.flow_class_period > 0 && !s.jobs.empty()
            ? fmt::format(" (flow classes: 1 in {} simulated)", s.jobs.front().workers / r.flow_class_period)
        : !r.flow_class_reason.empty() ? fmt::format(" (every one simulated, no flow classes: {})", r.flow_class_reason)
                                       : std::string();
    out += fmt::format("\n  simulated {} {} ({:.4g} s): {} transfers{}, {} events in {:.3f} s wall time\n",
                       s.iterations, all_rounds ? "rounds" : "iterations", r.simulated_time_s, r.transfers, classes,
                       r.events, r.wall_time_s);
    return out;
}

std::string catalog_listing() {
    std::string out = "Built-in models (ddlsim \"model\" key)\n";
    out += fmt::format("  {:<14}{:>16}{:>9}{:>14}  {}\n", "name", "parameters", "tensors", "fwd GFLOP/smp", "sample");
    for (const auto& name : models::builtin_workload_names()) {
        const auto w = *models::builtin_workload(name);
        out += fmt::format("  {:<14}{:>16}{:>9}{:>14.2f}  {}\n", name, w.params(), w.tensor_count(),
                           w.fwd_flops() / 1e9, w.input);
    }
    out += "\nBuilt-in devices (ddlsim \"device\" key; dense peaks from the vendors' datasheets)\n";
    out += fmt::format("  {:<16}{:>10}{:>11}{:>11}{:>10}{:>9}  {}\n", "name", "FP32 TF/s", "TF32 TF/s", "FP16 TF/s",
                       "mem GB/s", "mem GB", "part");
    for (const auto& d : models::builtin_devices())
        out += fmt::format("  {:<16}{:>10.1f}{:>11.1f}{:>11.1f}{:>10.0f}{:>9.0f}  {}\n", d.name, d.fp32.per_s() / 1e12,
                           d.tf32.per_s() / 1e12, d.fp16.per_s() / 1e12, d.memory_bandwidth.bytes_per_s() / 1e9,
                           d.memory_capacity.value() / 1e9, d.description);
    return out;
}

nlohmann::json catalog_json() {
    nlohmann::json models = nlohmann::json::object(), devices = nlohmann::json::object();
    for (const auto& name : models::builtin_workload_names()) {
        const auto w = *models::builtin_workload(name);
        models[name] = {{"parameters", w.params()},
                        {"tensors", w.tensor_count()},
                        {"forward_flops_per_sample", w.fwd_flops()},
                        {"sample", w.input}};
    }
    for (const auto& d : models::builtin_devices())
        devices[d.name] = {{"fp32_flops", d.fp32.per_s()},
                           {"tf32_flops", d.tf32.per_s()},
                           {"fp16_flops", d.fp16.per_s()},
                           {"memory_bandwidth_bytes_per_s", d.memory_bandwidth.bytes_per_s()},
                           {"description", d.description}};
    return {{"models", models}, {"devices", devices}};
}

}  // namespace ddlsim::tools
