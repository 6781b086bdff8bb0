// `ddlsim plan` (tools/plan.hpp): the layouts enumerated, patched into the scenario, loaded, checked against the
// device's memory and simulated for one iteration each on threads.
#include "tools/plan.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <mutex>
#include <set>

#include "models/program/step_bound.hpp"
#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "sim/enum_info.hpp"
#include "tools/parallel_points.hpp"
#include "tools/sweep.hpp"

namespace ddlsim::tools {

namespace {

using nlohmann::json;

constexpr std::int64_t kContextMinTokens = 8192;  // context parallelism pays off on long sequences only

std::vector<std::uint32_t> divisors(std::uint64_t n) {
    std::vector<std::uint32_t> out;
    for (std::uint64_t k = 1; k <= n; ++k)
        if (n % k == 0) out.push_back(static_cast<std::uint32_t>(k));
    return out;
}

// The result keys that differ between two identical runs: left out, so that a plan's output is reproducible.
bool wall_clock_key(const std::string& k) {
    return k == "wall_time_s" || k == "replay_wall_time_s";
}

// Loads the layout's scenario and checks its memory. Without `run_if`: a candidate that fits is left "failed" with
// no reason and its compute bound, for the caller to order by. With it: its step's lower bound from its programs too,
// and it is simulated when run_if(that bound) says so (else left as before, with both bounds).
PlanCandidate evaluate(const json& base, const std::string& base_dir, const PlanLayout& layout, bool yours,
                       std::uint64_t global, const sweep_detail::Objective& objective,
                       const std::function<bool(double)>* run_if) {
    PlanCandidate c;
    c.layout = layout;
    c.yours = yours;
    if (!yours && static_cast<std::uint64_t>(layout.micro_batches) * layout.micro_batch * layout.data != global) {
        c.status = CandidateStatus::refused;
        c.reason_key = "global batch";
        c.reason = fmt::format("{} sequences per step do not split into {} replicas x micro-batches of {}", global,
                               layout.data, layout.micro_batch);
        return c;
    }
    json j = yours ? base : layout_patch(base, layout);
    j["iterations"] = 1;
    try {
        const scenario::Scenario s = scenario::load_scenario(j, base_dir);
        const models::MemoryEstimate mem = scenario::job_memory(s.jobs.front());
        c.memory_bytes = mem.total();
        if (mem.fits() == false) {
            c.status = CandidateStatus::does_not_fit;
            c.reason = fmt::format("needs {:.1f} GB per GPU of {:.0f} GB", mem.total() / 1e9, *mem.capacity / 1e9);
            return c;
        }
        const models::TrainingJob& resolved = s.resolved->jobs.front();
        c.compute_bound_s = c.bound_s = models::program::compute_lower_bound_s(resolved);
        if (run_if == nullptr) return c;
        c.bound_s = models::program::step_lower_bound_s(resolved, s.resolved->fabric);
        if (!(*run_if)(c.bound_s)) return c;
        const scenario::RunResult run = scenario::run_scenario(s);
        const auto rows = flatten_result(scenario::result_json(s, run));
        for (const auto& [k, v] : rows.front())
            if (!wall_clock_key(k)) c.result.emplace(k, v);
        c.status = CandidateStatus::simulated;
        const auto it = c.result.find(objective.column);
        if (it != c.result.end() && it->second.is_number() && std::isfinite(it->second.get<double>()))
            c.value = it->second.get<double>();
    } catch (const scenario::ScenarioError& e) {
        c.status = CandidateStatus::refused;
        c.reason_key = e.path();
        c.reason = one_line(e.what());
    } catch (const std::exception& e) {
        c.status = CandidateStatus::failed;
        c.reason = one_line(fmt::format("internal error: {}", e.what()));
    }
    return c;
}

}  // namespace

std::string status_name(CandidateStatus s) {
    switch (s) {
        case CandidateStatus::simulated: return "simulated";
        case CandidateStatus::refused: return "refused";
        case CandidateStatus::does_not_fit: return "does-not-fit";
        case CandidateStatus::failed: return "failed";
        case CandidateStatus::bounded: return "bounded";
    }
    return "failed";
}

std::size_t PlanSearch::count(CandidateStatus s) const {
    return static_cast<std::size_t>(
        std::count_if(candidates.begin(), candidates.end(), [&](const PlanCandidate& c) { return c.status == s; }));
}

const PlanCandidate& PlanSearch::yours() const {
    const auto it = std::find_if(candidates.begin(), candidates.end(), [](const PlanCandidate& c) { return c.yours; });
    if (it == candidates.end()) throw std::logic_error("plan: the scenario's own layout is not among the candidates");
    return *it;
}

std::uint64_t global_batch(const scenario::JobSpec& job) {
    return static_cast<std::uint64_t>(job.batch_size) * job.gradient_accumulation * job.parallelism.data(job.workers);
}

std::uint32_t gpus_per_node(const scenario::Scenario& s) {
    if (!s.resolved || s.resolved->jobs.empty()) return 1;
    const models::TrainingJob& job = s.resolved->jobs.front();
    const topo::Fabric& fabric = s.resolved->fabric;
    if (job.endpoint_hosts.empty()) return 1;
    const std::uint32_t node = fabric.node_of(job.endpoint_hosts.front());
    std::uint32_t n = 0;
    for (std::uint32_t w = 0; w < job.workers && w < job.endpoint_hosts.size(); ++w)
        if (fabric.node_of(job.endpoint_hosts[w]) == node) ++n;
    return std::max(1U, n);
}

PlanLayout layout_of(const scenario::JobSpec& job) {
    const models::ParallelismSpec& p = job.parallelism;
    PlanLayout l;
    l.tensor = p.tensor;
    l.pipeline = p.pipeline;
    l.context = p.context;
    l.expert = p.expert;
    l.virtual_stages = p.chunks();
    l.schedule = p.pipeline > 1 ? std::string(sim::enum_name(p.schedule)) : std::string();
    l.micro_batch = job.batch_size;
    l.micro_batches = job.gradient_accumulation;
    l.data = p.data(job.workers);
    l.sharding = job.sharding.stage;
    l.recompute = job.activation_checkpointing  ? models::Checkpointing::full
                  : job.selective_recomputation ? models::Checkpointing::selective
                                                : models::Checkpointing::none;
    l.sequence_parallel = p.sequence_parallel;
    return l;
}

std::vector<PlanLayout> enumerate_layouts(const scenario::Scenario& s, std::uint32_t max_tensor) {
    const scenario::JobSpec& job = s.jobs.front();
    const std::uint32_t workers = job.workers;
    const std::uint64_t global = global_batch(job);
    const models::Workload& w = job.workload;
    const bool transformer = w.kv_dim > 0 && w.has_blocks();
    std::vector<std::uint32_t> contexts{1};
    if (transformer && w.tokens_per_sample >= kContextMinTokens) contexts = {1, 2, 4, 8};
    const std::vector<std::uint32_t> experts =
        w.experts > 0 ? divisors(static_cast<std::uint64_t>(w.experts)) : std::vector<std::uint32_t>{1};
    // A tensor group inside one machine (t divides its GPUs) or over whole machines (a multiple of them): one that
    // straddles machines unevenly (t = 3 or 6 on 8 GPUs) runs its all-reduces over the NICs, which no one chooses.
    const std::uint32_t node = gpus_per_node(s);
    std::vector<PlanLayout> out;
    for (const std::uint32_t t : divisors(workers)) {
        if (t > max_tensor) break;
        if (t <= node ? node % t != 0 : t % node != 0) continue;
        for (const std::uint32_t p : divisors(workers / t))
            for (const std::uint32_t c : contexts) {
                if ((workers / t / p) % c != 0) continue;
                const std::uint32_t d = workers / (t * p * c);
                for (const std::uint32_t e : experts)
                    for (const std::uint32_t v : {1U, 2U, 4U}) {
                        if (p == 1 && v > 1) continue;
                        for (const std::uint32_t b : {1U, 2U, 4U, 8U})
                            for (const std::uint32_t sharding : {0U, 1U})
                                for (const models::Checkpointing recompute :
                                     {models::Checkpointing::none, models::Checkpointing::selective,
                                      models::Checkpointing::full}) {
                                    PlanLayout l;
                                    l.tensor = t;
                                    l.pipeline = p;
                                    l.context = c;
                                    l.expert = e;
                                    l.virtual_stages = v;
                                    l.schedule = p == 1 ? "" : v > 1 ? "interleaved_1f1b" : "1f1b";
                                    l.micro_batch = b;
                                    l.data = d;
                                    const std::uint64_t per_micro = static_cast<std::uint64_t>(d) * b;
                                    l.micro_batches =
                                        global % per_micro == 0 ? static_cast<std::uint32_t>(global / per_micro) : 0;
                                    l.sharding = sharding;
                                    l.recompute = recompute;
                                    l.sequence_parallel = t > 1;
                                    out.push_back(l);
                                }
                    }
            }
    }
    return out;
}

json layout_patch(const json& base, const PlanLayout& l) {
    json j = base;
    j["iterations"] = 1;
    j["batch_size"] = l.micro_batch;
    j["gradient_accumulation"] = l.micro_batches;
    j["activation_checkpointing"] = std::string(sim::enum_name(l.recompute));
    const bool base_stage1 =
        base.contains("sharding") && base["sharding"].is_object() && base["sharding"].value("stage", 0) == 1;
    if (l.sharding == 0)
        j.erase("sharding");
    else if (!base_stage1)
        j["sharding"] = {{"stage", l.sharding}};
    json p = base.contains("parallelism") && base["parallelism"].is_object() ? base["parallelism"] : json::object();
    // Stage sizes given for another pipeline would not fit this one.
    if (p.value("pipeline", 1U) != l.pipeline) {
        p.erase("first_stage_layers");
        p.erase("last_stage_layers");
    }
    p["tensor"] = l.tensor;
    p["pipeline"] = l.pipeline;
    p["context"] = l.context;
    p["expert"] = l.expert;
    if (l.sequence_parallel) {
        p["sequence_parallel"] = true;
    } else {
        p.erase("sequence_parallel");
        p.erase("tp_overlap");  // the scenario's TP overlap, where this layout has sequence parallelism to overlap
    }
    if (l.context == 1) p.erase("context_algorithm");  // the scenario's, where this layout splits the sequence
    // The scenario's overlap_param_gather, where this layout has a distributed optimizer and model parallelism.
    if (l.sharding != 1 || (l.tensor == 1 && l.pipeline == 1 && l.context == 1 && l.expert == 1))
        p.erase("overlap_param_gather");
    if (l.pipeline > 1)
        p["schedule"] = l.schedule;
    else
        p.erase("schedule");
    if (l.virtual_stages > 1)
        p["virtual_stages"] = l.virtual_stages;
    else
        p.erase("virtual_stages");
    j["parallelism"] = p;
    return j;
}

sweep_detail::Objective plan_objective(const std::string& given, bool sequence_model, bool has_training) {
    if (given.empty() || given == "throughput")
        return {sequence_model ? "tokens_per_s" : "throughput_samples_per_s", true};
    sweep_detail::Objective o = sweep_detail::resolve_objective(given, has_training);
    static const std::set<std::string> higher_is_better{"throughput_samples_per_s", "tokens_per_s", "mfu",
                                                        "scaling_efficiency"};
    if (higher_is_better.contains(o.column)) o.maximise = true;
    return o;
}

PlanSearch plan_search(const PlanOptions& opts, std::ostream& progress) {
    std::string base_dir =
        opts.scenario_file == "-" ? std::string(".") : std::filesystem::path(opts.scenario_file).parent_path().string();
    if (base_dir.empty()) base_dir = ".";
    return plan_search(scenario::read_json_file(opts.scenario_file), base_dir, opts, progress);
}

PlanSearch plan_search(json base, const std::string& base_dir, const PlanOptions& opts, std::ostream& progress_out) {
    const auto t0 = std::chrono::steady_clock::now();
    if (opts.jobs == 0) throw CliError("--jobs: expected at least 1");
    if (opts.top == 0) throw CliError("--top: expected at least 1");
    PlanSearch plan;
    plan.file = opts.scenario_file;
    for (const auto& o : opts.sets) {
        scenario::apply_override(base, o);
        scenario::check_key_path(o.substr(0, o.find('=')), "--set " + o);
    }
    if (base.is_object() && base.contains("jobs"))
        throw scenario::ScenarioError("$.jobs",
                                      "ddlsim plan searches the layouts of one job; expected a scenario "
                                      "without a \"jobs\" list (plan each job on its own)");
    const scenario::Scenario s = scenario::load_scenario(base, base_dir);
    const scenario::JobSpec& job = s.jobs.front();
    plan.workers = job.workers;
    plan.global_batch = global_batch(job);
    plan.tokens_per_sample = job.workload.tokens_per_sample;
    plan.device = job.device.name;
    plan.capacity_bytes = scenario::job_memory(job).capacity;
    plan.gpus_per_node = gpus_per_node(s);
    const PlanLayout own = layout_of(job);
    plan.max_tensor = opts.max_tensor > 0 ? opts.max_tensor : std::max(plan.gpus_per_node, own.tensor);
    plan.objective = plan_objective(opts.objective, job.workload.tokens_per_sample > 0, job.training.has_value());

    std::vector<PlanLayout> layouts = enumerate_layouts(s, plan.max_tensor);
    const auto mine = std::find(layouts.begin(), layouts.end(), own);
    const std::size_t own_index = static_cast<std::size_t>(mine - layouts.begin());
    if (mine == layouts.end()) layouts.push_back(own);  // e.g. a gpipe schedule, or tensor above --max-tensor

    plan.candidates.resize(layouts.size());
    const bool terminal = ::isatty(STDERR_FILENO) != 0;
    Progress progress(opts.progress && (terminal || opts.force_progress), terminal, layouts.size(), progress_out,
                      "plan", "candidates");
    std::size_t done = 0;
    std::mutex mu;
    // Every layout loaded and its memory checked; those that fit keep their bound and are pending: status "failed"
    // with no reason until simulated.
    const auto pending = [](const PlanCandidate& c) { return c.status == CandidateStatus::failed && c.reason.empty(); };
    parallel_for(layouts.size(), opts.jobs, [&](std::size_t i) {
        PlanCandidate c =
            evaluate(base, base_dir, layouts[i], i == own_index, plan.global_batch, plan.objective, nullptr);
        c.index = i;
        const std::lock_guard lock(mu);
        plan.candidates[i] = std::move(c);
        if (!pending(plan.candidates[i])) progress.update(++done);
    });
    // Then the ones that fit, in order of their compute bound (the scenario's own first, always simulated), each
    // thread taking the next one while that bound is within the threshold, the top-th best step simulated so far, then
    // compiling its programs for its step's bound and simulating it while that one is within the threshold too. Each
    // candidate left is slower than that, so the top is that of simulating everything (the own rank may then count
    // fewer above it: the report says how many bounded ones might). With a step-time objective only (throughput or
    // the iteration time: the global batch is fixed); --exhaustive simulates all.
    const std::string& col = plan.objective.column;
    const bool boundable =
        !opts.exhaustive && (col == "tokens_per_s" || col == "throughput_samples_per_s" || col == "iteration_time_s");
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < plan.candidates.size(); ++i)
        if (pending(plan.candidates[i])) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const PlanCandidate &x = plan.candidates[a], &y = plan.candidates[b];
        if (x.yours != y.yours) return x.yours;
        return x.compute_bound_s < y.compute_bound_s;
    });
    const auto step = [&](const PlanCandidate& c) -> std::optional<double> {
        const auto it = c.result.find("iteration_time_s");
        if (c.status != CandidateStatus::simulated || it == c.result.end() || !it->second.is_number())
            return std::nullopt;
        return it->second.get<double>();
    };
    const auto threshold = [&]() {
        if (!boundable) return std::numeric_limits<double>::infinity();
        std::vector<double> steps;
        for (const std::size_t i : order)
            if (const auto t = step(plan.candidates[i])) steps.push_back(*t);
        if (steps.size() < opts.top) return std::numeric_limits<double>::infinity();
        std::nth_element(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(opts.top - 1), steps.end());
        return steps[opts.top - 1];
    };
    // The threshold only falls, so a candidate over it when taken stays over the final one: which ones a thread skips
    // depends on timing, but not which are left bounded below.
    parallel_for(order.size(), opts.jobs, [&](std::size_t k) {
        const std::size_t i = order[k];
        const bool yours = plan.candidates[i].yours;
        const std::function<bool(double)> run_if = [&](double bound) {
            const std::lock_guard lock(mu);
            return yours || bound <= threshold();
        };
        if (!run_if(plan.candidates[i].compute_bound_s)) return;
        PlanCandidate c =
            evaluate(base, base_dir, layouts[i], i == own_index, plan.global_batch, plan.objective, &run_if);
        c.index = i;
        const std::lock_guard lock(mu);
        plan.candidates[i] = std::move(c);
        if (!pending(plan.candidates[i])) progress.update(++done);
    });
    // What was not simulated, and what was simulated past the final threshold (so that --jobs and timing change
    // nothing): bounded, with the figures that rule it out.
    const double limit = threshold();
    for (const std::size_t i : order) {
        PlanCandidate& c = plan.candidates[i];
        // The bound reported: the programs' where the compute bound left the choice to it (it was computed then, at
        // whatever time the thread took it), else the compute bound (whether the programs' was computed depends on
        // timing), so that the output does not.
        if (!c.yours && c.compute_bound_s > limit) c.bound_s = c.compute_bound_s;
        const bool failed_run = c.status == CandidateStatus::failed && !pending(c);
        if (c.yours || c.bound_s <= limit || failed_run) continue;
        c.status = CandidateStatus::bounded;
        c.result.clear();
        c.value.reset();
        c.reason_key = "bound";
        c.reason = fmt::format(
            "its step takes at least {:.4g} s, more than the slowest of the best {} "
            "steps ({:.4g} s)",
            c.bound_s, opts.top, limit);
    }
    progress.update(done, true);

    // The ranking: by the objective, ties by the layout (then the scenario's own first), so equal input gives
    // equal output.
    for (std::size_t i = 0; i < plan.candidates.size(); ++i)
        if (plan.candidates[i].value) plan.ranking.push_back(i);
    std::sort(plan.ranking.begin(), plan.ranking.end(), [&](std::size_t a, std::size_t b) {
        const PlanCandidate &x = plan.candidates[a], &y = plan.candidates[b];
        if (*x.value != *y.value) return plan.objective.maximise ? *x.value > *y.value : *x.value < *y.value;
        if (x.layout != y.layout) return x.layout < y.layout;
        return x.index < y.index;
    });
    for (std::size_t r = 0; r < plan.ranking.size(); ++r) plan.candidates[plan.ranking[r]].rank = r + 1;
    plan.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return plan;
}

}  // namespace ddlsim::tools
