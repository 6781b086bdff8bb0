#include "scenarios/run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <span>
#include <stdexcept>

#include "models/comm_plan.hpp"
#include "models/resolve.hpp"
#include "models/trainer.hpp"
#include "scenarios/json_reader.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/schema_tables.hpp"
#include "topologies/transport.hpp"

namespace ddlsim::scenario {
namespace {

constexpr const char* kTooLong =
    "the simulated time exceeds what picosecond time can hold (about 106 days); "
    "simulate fewer iterations, a smaller batch or a faster device";
constexpr double kLongLatencyS = 86'400.0;  // a link latency above a day is what overflowed, not the iterations

// The scenario's largest link latency and its JSON path.
std::pair<double, std::string> largest_latency(const Scenario& s) {
    const topo::Keyed<sim::Time> latency = topo::largest_latency(s.topology);
    return {latency.value.seconds(), "$.network." + latency.key};
}

// The scenario's slowest link bandwidth and its JSON path (host_bandwidth caps count: they are links too).
std::pair<double, std::string> smallest_bandwidth(const Scenario& s) {
    const topo::Keyed<sim::Bandwidth> slowest = topo::smallest_bandwidth(s.topology);
    std::pair<double, std::string> out{slowest.value.bytes_per_s(), "$.network." + slowest.key};
    for (const auto& [host, bw] : s.host_bandwidth)
        if (bw.bytes_per_s() < out.first) out = {bw.bytes_per_s(), fmt::format("$.network.host_bandwidth.{}", host)};
    // A transport's per-connection cap (stream_rate x streams) binds every transfer like a slower link.
    for (const auto& [t, path] : {std::pair{s.transports.inter, "$.network.transport"},
                                  std::pair{s.transports.intra, "$.network.intra_transport"}})
        if (t && t->flow_cap() < out.first) out = {t->flow_cap(), path};
    return out;
}

// The bad-input error for a run whose simulated time overflowed the event clock, at the key that made it: a latency
// above a day; a link or a device so slow that one iteration alone overflows; otherwise the number of iterations,
// with what one iteration costs at least and how many would fit.
ScenarioError time_overflow_error(const Scenario& s, const std::vector<models::TrainingJob>& jobs) {
    const auto [latency, path] = largest_latency(s);
    if (latency > kLongLatencyS)
        return ScenarioError(path, fmt::format("a latency of {:g} s makes the simulated time exceed what picosecond "
                                               "time can hold (about 106 days); expected a latency below {:g} s",
                                               latency, kLongLatencyS));
    const double limit = sim::Time::max().seconds();
    // Lower bounds of one iteration: a worker's compute, and its gradients once over the slowest link.
    double compute = 0.0, bytes = 0.0;
    for (const auto& job : jobs) {
        const auto& c = job.compute;
        compute = std::max(compute, (c.accumulation + c.fwd + c.bwd + c.update).seconds());
        bytes = std::max(bytes, job.gradient_bytes().value());
    }
    const auto [bw, bw_path] = smallest_bandwidth(s);
    const double comm = bw > 0.0 ? bytes / bw : 0.0;
    const double step = std::max(compute, comm);
    if (comm >= limit || (comm >= compute && comm * 10.0 >= limit))
        return ScenarioError(bw_path,
                             fmt::format("at {:g} bit/s, one iteration's {:g} bytes of gradients take about {:.3g} s, "
                                         "so the simulated time exceeds what picosecond time can hold (about 106 "
                                         "days); expected a faster link",
                                         bw * 8.0, bytes, comm));
    if (compute >= limit || compute * 10.0 >= limit)
        return ScenarioError(
            "$.device", fmt::format("one iteration computes for about {:.3g} s on this device at this batch, so the "
                                    "simulated time exceeds what picosecond time can hold (about 106 days); expected a "
                                    "faster device or a smaller batch",
                                    compute));
    if (step > 0.0)
        return ScenarioError(
            "$.iterations", fmt::format("{} iterations of at least {:.3g} s each (compute {:.3g} s, gradients over the "
                                        "slowest link {:.3g} s) exceed what picosecond time can hold (about 106 days); "
                                        "expected at most about {:.0f} iterations, a faster network or device",
                                        s.iterations, step, compute, comm, std::floor(limit / step)));
    return ScenarioError("$.iterations", kTooLong);
}
constexpr std::size_t kBusiestLinks = 5;
constexpr std::size_t kPerWorkerList = 256;

// The job's own keys (no fabric, no compute profile), for the memory estimate of the job's reference device.
models::TrainingJob job_keys(const JobSpec& j) {
    models::TrainingJob job = models::job_of_keys(j);
    job.worker_devices.clear();  // the estimate is the reference device's (`device`)
    return job;
}

// Staleness, per-worker figures and model versions (the contract's result keys for asynchronous schemes).
void add_schedule_keys(const models::JobResult& j, nlohmann::json& out) {
    if (j.has_staleness) {
        out["staleness"] = {{"mean", j.staleness_mean}, {"max", j.staleness_max}, {"histogram", j.staleness_histogram}};
        out["max_lead_iterations"] = j.max_lead;
    }
    out["collectives_per_iteration"] = j.collectives_per_iteration;
    out["model_versions"] = j.model_versions;
    out["sync_rounds"] = j.rounds;
    if (j.clients_per_round_mean > 0.0) out["clients_per_round_mean"] = j.clients_per_round_mean;
    if (j.workers.empty()) return;
    double idle_min = j.workers.front().idle_s, idle_max = idle_min, idle_sum = 0.0;
    std::uint32_t it_min = j.workers.front().iterations, it_max = it_min;
    std::uint64_t updates = 0;
    for (const auto& w : j.workers) {
        idle_min = std::min(idle_min, w.idle_s);
        idle_max = std::max(idle_max, w.idle_s);
        idle_sum += w.idle_s;
        it_min = std::min(it_min, w.iterations);
        it_max = std::max(it_max, w.iterations);
        updates += w.updates_applied;
    }
    out["workers"] = {{"iterations_min", it_min}, {"iterations_max", it_max},
                      {"idle_s_min", idle_min},   {"idle_s_mean", idle_sum / static_cast<double>(j.workers.size())},
                      {"idle_s_max", idle_max},   {"updates_applied", updates}};
    // The per-worker list for clusters small enough to read (arrays stay out of sweep CSVs).
    if (j.workers.size() <= kPerWorkerList) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& w : j.workers)
            list.push_back(
                {{"iterations", w.iterations}, {"idle_s", w.idle_s}, {"updates_applied", w.updates_applied}});
        out["per_worker"] = std::move(list);
    }
}

void link_loads(const topo::Fabric& fabric, const models::FlowRun& run, RunResult& r) {
    std::vector<LinkLoad> loads;
    double total = 0.0;
    for (sim::LinkIndex l = 0; l < run.links.size(); ++l) {
        if (run.links[l].bytes <= 0.0) continue;
        const double capacity = fabric.link_info(l / 2).bandwidth.bytes_per_s();
        const double u = run.makespan_s > 0.0 ? run.links[l].bytes / (capacity * run.makespan_s) : 0.0;
        loads.push_back({fabric.directed_link_name(l), run.links[l].bytes, u});
        total += u;
    }
    r.mean_link_utilization = loads.empty() ? 0.0 : total / static_cast<double>(loads.size());
    const std::size_t top = std::min(kBusiestLinks, loads.size());
    std::partial_sort(loads.begin(), loads.begin() + static_cast<std::ptrdiff_t>(top), loads.end(),
                      [](const LinkLoad& a, const LinkLoad& b) {
                          return a.utilization != b.utilization ? a.utilization > b.utilization : a.name < b.name;
                      });
    loads.resize(top);
    r.busiest_links = std::move(loads);
}

nlohmann::json job_json(const Scenario& s, const JobSpec& spec, const models::JobResult& j,
                        const ComputeAssumptions& compute) {
    nlohmann::json out = {
        {"iteration_time_s", j.iteration_time_s},
        {"throughput_samples_per_s", j.throughput_samples_per_s},
        {"scaling_efficiency", j.scaling_efficiency},
        {"compute_time_s", j.compute_time_s},
        {"communication_time_s", j.communication_time_s},
        {"exposed_communication_time_s", j.exposed_communication_time_s},
        {"bytes_on_wire_per_iteration", j.bytes_on_wire_per_iteration},
        {"codec_time_s", j.codec_time_s},
        {"compute",
         {{"forward_s", j.forward_time_s}, {"backward_s", j.backward_time_s}, {"update_s", j.update_time_s}}},
        {"scenario",
         {{"name", spec.name},
          {"workers", spec.workers},
          {"model", spec.model_name},
          {"parameters", spec.workload.params()},
          {"gradient_bytes", static_cast<double>(spec.workload.params()) * spec.bytes_per_param},
          {"batch_size", spec.batch_size},
          {"iterations", s.iterations},
          {"device", spec.device.name},
          {"architecture", describe_architecture(spec)},
          {"sync", describe_sync(spec)},
          {"compression", describe_compression(spec)},
          {"overlap", describe_overlap(spec)},
          {"network_model", s.network_model == NetworkModel::flow ? "flow" : "analytic"},
          {"transport", describe_transports(s, false)},
          {"transport_source", !s.transport_source.empty() ? s.transport_source
                               : s.transports.inter        ? "scenario"
                                                           : "auto"},
          {"seed", s.seed},
          {"compute_model", compute.to_json()}}},
    };
    // Model parallelism, only where there is some (a data-parallel job's echo stays as it was).
    if (spec.parallelism.any()) out["scenario"]["parallelism"] = describe_parallelism(spec);
    if (j.bytes_by_dimension)
        out["bytes_on_wire_by_dimension"] = {{"tensor", j.bytes_by_dimension->tensor},
                                             {"pipeline", j.bytes_by_dimension->pipeline},
                                             {"data", j.bytes_by_dimension->data},
                                             {"expert", j.bytes_by_dimension->expert},
                                             {"context", j.bytes_by_dimension->context}};
    // The pipeline's bubble (and its sends) as a share of the iteration.
    if (j.exposed_by_dimension && spec.parallelism.pipeline > 1 && j.iteration_time_s > 0.0)
        out["bubble_fraction"] = j.exposed_by_dimension->pipeline / j.iteration_time_s;
    if (j.exposed_by_dimension)
        out["exposed_communication_by_dimension_s"] = {{"tensor", j.exposed_by_dimension->tensor},
                                                       {"pipeline", j.exposed_by_dimension->pipeline},
                                                       {"data", j.exposed_by_dimension->data},
                                                       {"expert", j.exposed_by_dimension->expert},
                                                       {"context", j.exposed_by_dimension->context}};
    if (j.machine_bytes_per_iteration >= 0.0)
        out["bytes_between_machines_per_iteration"] = j.machine_bytes_per_iteration;
    if (!j.algorithm_picks.empty()) {
        // algorithm auto: which algorithm ran which collectives of an iteration (topologies/allreduce_auto.hpp).
        auto& picks = out["algorithm_picks"] = nlohmann::json::array();
        for (const auto& p : j.algorithm_picks)
            picks.push_back({{"algorithm", std::string(sim::enum_name(p.algorithm))},
                             {"messages", p.messages},
                             {"min_bytes", p.min_bytes},
                             {"max_bytes", p.max_bytes}});
        // The same as one scalar (a sweep's CSV keeps scalars only): "ring", or "double_tree+ring" when the
        // pick depends on the message, in the order of the picks.
        std::vector<std::string> names;
        for (const auto& p : j.algorithm_picks)
            if (std::find(names.begin(), names.end(), sim::enum_name(p.algorithm)) == names.end())
                names.emplace_back(sim::enum_name(p.algorithm));
        out["scenario"]["algorithm_picked"] = fmt::format("{}", fmt::join(names, "+"));
    }
    if (const auto t = token_rates(spec, j)) {
        out["tokens_per_s"] = t->tokens_per_s;
        out["mfu"] = t->mfu;
        out["tflops_per_gpu"] = t->tflops_per_gpu;
        out["hfu"] = t->hfu;
    }
    {
        // Where the iteration goes; the four add up to iteration_time_s.
        models::JobResult::Breakdown b;
        if (j.breakdown) {
            b = *j.breakdown;
        } else {
            b.compute = j.compute_time_s;
            b.codec = j.codec_time_s;
            b.exposed_communication = std::max(0.0, j.iteration_time_s - b.compute - b.codec);
        }
        out["time_breakdown_s"] = {{"compute", b.compute},
                                   {"codec", b.codec},
                                   {"exposed_communication", b.exposed_communication},
                                   {"waiting", b.waiting}};
    }
    const auto mem = job_memory(spec);
    out["memory_per_gpu_bytes"] = {{"weights", mem.weights},     {"gradients", mem.gradients},
                                   {"optimizer", mem.optimizer}, {"activations", mem.activations},
                                   {"buffers", mem.buffers},     {"total", mem.total()}};
    if (mem.capacity) {
        out["memory_per_gpu_bytes"]["capacity"] = *mem.capacity;
        out["memory_fits"] = *mem.fits();
    }
    add_schedule_keys(j, out);
    return out;
}

}  // namespace

ComputeAssumptions compute_assumptions(const JobSpec& j, const models::ComputeProfile* profile) {
    const models::DeviceSpec& d = j.device;
    ComputeAssumptions out;
    out.precision = models::precision_name(d.precision);
    out.fp32_matmuls = d.tf32_convolutions_only;
    out.precision_source = models::source_name(d.precision_source);
    out.optimizer = models::optimizer_name(j.optimizer);
    out.optimizer_source = models::source_name(j.optimizer_source);
    out.peak_tflops = d.peak.per_s() / 1e12;
    out.memory_bandwidth_gbps = d.memory_bandwidth.bytes_per_s() / 1e9;
    out.matmul_efficiency = d.matmul_efficiency();
    out.memory_efficiency = d.memory_efficiency();
    out.software = sim::enum_name(d.software);
    out.efficiency_source = d.samples_per_s     ? std::string("samples_per_s")
                            : d.uses_measured() ? std::string("default")
                                                : std::string(models::source_name(d.efficiency_source));
    models::ComputeProfile built;
    if (profile == nullptr) {
        try {
            built = models::compute_profile(models::job_of_keys(j).workload, d, j.batch_size, j.bytes_per_param,
                                            j.optimizer);
        } catch (const std::invalid_argument&) {
            return out;  // run_scenario reports it
        }
    }
    // The kinds and the scale are the derived profile's; the run's additions (recomputation, accumulation) change
    // neither.
    const models::ComputeProfile& p = profile != nullptr ? *profile : built;
    out.profiled = true;
    double flops = 0.0, seconds = 0.0;
    for (std::size_t k = 0; k < p.kinds.size(); ++k) {
        const models::KindTotals& t = p.kinds[k];
        if (t.seconds <= 0.0) continue;
        const double s = t.seconds * p.scale;
        out.kinds.push_back(
            {std::string(models::part_kind_name(static_cast<models::PartKind>(k))), s, t.flops / s / 1e12});
        flops += t.flops;
        seconds += s;
    }
    out.effective_tflops = seconds > 0.0 ? flops / seconds / 1e12 : 0.0;
    return out;
}

nlohmann::json ComputeAssumptions::to_json() const {
    nlohmann::json out = {
        {"precision", precision},
        {"precision_source", precision_source},
        {"optimizer", optimizer},
        {"optimizer_source", optimizer_source},
        {"peak_tflops", peak_tflops},
        {"memory_bandwidth_gbps", memory_bandwidth_gbps},
        {"matmul_efficiency", matmul_efficiency},
        {"memory_efficiency", memory_efficiency},
        {"efficiency_source", efficiency_source},
        {"software", software},
    };
    if (fp32_matmuls) out["matmul_precision"] = "fp32";
    if (!profiled) return out;
    nlohmann::json by_kind = nlohmann::json::object();
    for (const Kind& k : kinds) by_kind[k.name] = {{"seconds", k.seconds}, {"effective_tflops", k.effective_tflops}};
    out["kinds"] = by_kind;
    out["effective_tflops"] = effective_tflops;
    return out;
}

RunResult run_scenario(const Scenario& s, sim::Trace* trace,
                       const std::function<void(std::uint64_t, double)>& progress) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!s.resolved) throw std::logic_error("run_scenario: expected a scenario from load_scenario, which resolves it");
    const topo::Fabric& fabric = s.resolved->fabric;
    // The jobs as loaded, with the run-level keys a caller may change between runs of one loaded scenario
    // (`run --seeds` runs it again with the next seeds).
    std::vector<models::TrainingJob> jobs = s.resolved->jobs;
    for (models::TrainingJob& job : jobs) {
        job.seed = s.seed;
        job.iterations = s.iterations;
    }

    RunResult r;
    try {
        if (s.network_model == NetworkModel::analytic) {
            // Each job alone on a contention-free network: the closed form when it applies, else the
            // event-driven trainers with α-β transfers. A timeline of a closed-form job comes from the event-driven
            // run, which only draws it: the result is the closed form's with or without --trace.
            for (const auto& job : jobs) {
                if (models::closed_form_applies(job)) {
                    r.jobs.push_back(models::simulate_closed_form(fabric, job));
                    if (trace != nullptr) (void)models::simulate(fabric, {job}, {true, trace, {}, true, {}});
                } else {
                    const models::FlowRun run = models::simulate(fabric, {job}, {true, trace, progress, true, {}});
                    r.jobs.push_back(run.jobs.front());
                    r.events += run.events;
                }
                r.simulated_time_s = std::max(r.simulated_time_s, r.jobs.back().makespan_s);
            }
        } else {
            if (!s.flow_classes) check_full_run(s);
            const models::FlowRun run =
                models::simulate(fabric, jobs, {false, trace, progress, s.flow_classes, [&s] { check_full_run(s); }});
            r.jobs = run.jobs;
            r.events = run.events;
            r.transfers = run.transfers;
            r.flow_class_period = run.flow_class_period;
            r.flow_class_reason = run.flow_class_reason;
            r.simulated_time_s = run.makespan_s;
            link_loads(fabric, run, r);
        }
    } catch (const sim::TimeOverflow&) {
        // Only the event clock's own overflow is bad input; any other range error is a bug (exit 1).
        throw time_overflow_error(s, jobs);
    }
    for (std::size_t i = 0; i < jobs.size(); ++i) r.compute.push_back(compute_assumptions(s.jobs[i], &jobs[i].compute));
    for (std::size_t i = 0; i < jobs.size(); ++i)
        r.time_to_train.push_back(
            job_time_to_train(s.jobs[i], jobs[i], fabric, r.jobs[i],
                              s.has_jobs_list ? fmt::format("$.jobs[{}].training", i) : std::string("$.training")));
    r.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

models::MemoryEstimate job_memory(const JobSpec& j) {
    const models::TrainingJob job = job_keys(j);
    models::MemoryEstimate m = models::memory_per_gpu(job, j.optimizer);
    // With pipeline stages, the most loaded stage (the first keeps the most micro-batches, the last the head).
    for (std::uint32_t s = 1; s < j.parallelism.pipeline; ++s) {
        const models::MemoryEstimate e = models::memory_per_gpu(job, j.optimizer, j.parallelism.rank(s, 0, 0, 0));
        if (e.total() > m.total()) m = e;
    }
    return m;
}

nlohmann::json result_json(const Scenario& s, const RunResult& r) {
    const auto one = [&](std::size_t i) {
        nlohmann::json j =
            job_json(s, s.jobs[i], r.jobs[i], i < r.compute.size() ? r.compute[i] : compute_assumptions(s.jobs[i]));
        if (i < r.time_to_train.size() && r.time_to_train[i]) j.update(time_to_train_json(*r.time_to_train[i]));
        return j;
    };
    nlohmann::json out;
    if (s.has_jobs_list) {
        out["jobs"] = nlohmann::json::array();
        for (std::size_t i = 0; i < s.jobs.size(); ++i) out["jobs"].push_back(one(i));
    } else {
        out = one(0);
    }
    out["resolved_scenario"] = resolved_scenario(s);  // running it reproduces this result
    out["events"] = r.events;
    out["transfers"] = r.transfers;
    if (s.network_model == NetworkModel::flow) out["flow_class_period"] = r.flow_class_period;
    out["wall_time_s"] = r.wall_time_s;
    out["simulated_time_s"] = r.simulated_time_s;
    if (s.network_model == NetworkModel::flow) {
        nlohmann::json busiest = nlohmann::json::array();
        for (const auto& l : r.busiest_links)
            busiest.push_back({{"link", l.name}, {"bytes", l.bytes}, {"utilization", l.utilization}});
        out["links"] = {{"mean_utilization", r.mean_link_utilization}, {"busiest", busiest}};
    }
    return out;
}

std::optional<TokenRates> token_rates(const JobSpec& spec, const models::JobResult& j) {
    const auto& w = spec.workload;
    if (w.tokens_per_sample <= 0 || w.model_flops_per_token <= 0.0) return std::nullopt;
    TokenRates t;
    t.tokens_per_s = j.throughput_samples_per_s * static_cast<double>(w.tokens_per_sample);
    // Against the dense peak of every worker's device at its precision (heterogeneous clusters: each its own).
    double peak = 0.0;
    for (std::uint32_t k = 0; k < spec.workers; ++k)
        peak += (spec.worker_devices.empty() ? spec.device : spec.worker_devices[k]).peak.per_s();
    t.mfu = peak > 0.0 ? t.tokens_per_s * w.model_flops_per_token / peak : 0.0;
    t.tflops_per_gpu = t.tokens_per_s * w.model_flops_per_token / std::max<std::uint32_t>(1, spec.workers) / 1e12;
    // The hardware's FLOPs: the model's forward and backward (3 x the forwards' FLOPs) and what is recomputed.
    double forward = 0.0, again = 0.0;
    const std::vector<bool> recomputed = models::checkpointed_layers(w);
    for (std::size_t l = 0; l < w.layers.size(); ++l) {
        forward += w.layers[l].fwd_flops;
        if (!recomputed[l]) continue;
        if (spec.activation_checkpointing) {
            again += w.layers[l].fwd_flops;
        } else if (spec.selective_recomputation) {
            for (const models::LayerPart& part : w.layers[l].parts)
                if (part.attention_core) again += part.flops;
        }
    }
    t.hfu = forward > 0.0 ? t.mfu * (1.0 + again / (3.0 * forward)) : t.mfu;
    return t;
}

}  // namespace ddlsim::scenario
