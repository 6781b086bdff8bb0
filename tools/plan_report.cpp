// `ddlsim plan`'s outputs (tools/plan.hpp): the printed report, every candidate's row as CSV or JSON, and the
// command itself with its exit codes.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <set>

#include "scenarios/json_reader.hpp"
#include "tools/plan.hpp"
#include "tools/sweep.hpp"

namespace ddlsim::tools {

namespace {

using nlohmann::json;

std::optional<double> number(const PlanCandidate& c, const std::string& key) {
    const auto it = c.result.find(key);
    if (it == c.result.end() || !it->second.is_number()) return std::nullopt;
    return it->second.get<double>();
}

std::string cell(const std::optional<double>& v, const char* format_spec) {
    return v ? fmt::format(fmt::runtime(format_spec), *v) : std::string("-");
}

std::optional<double> scaled(const std::optional<double>& v, double f) {
    return v ? std::optional<double>(*v * f) : std::nullopt;
}

// A reason cut to one readable line of the report.
std::string shorten(const std::string& s, std::size_t n = 110) {
    return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

std::string layout_text(const PlanLayout& l) {
    std::string s = fmt::format("t{} p{} c{} e{} v{} b{} m{} d{}", l.tensor, l.pipeline, l.context, l.expert,
                                l.virtual_stages, l.micro_batch, l.micro_batches, l.data);
    if (!l.schedule.empty() && l.schedule != "1f1b" && l.schedule != "interleaved_1f1b") s += " " + l.schedule;
    s += l.sharding > 0 ? fmt::format(" zero-{}", l.sharding) : "";
    s += l.recompute != models::Checkpointing::none ? fmt::format(" recompute {}", sim::enum_name(l.recompute)) : "";
    return s;
}

}  // namespace

std::string plan_report(const PlanSearch& p, std::size_t top) {
    std::string out = fmt::format("ddlsim plan {}\n", p.file);
    const bool tokens = p.tokens_per_sample > 0;
    out += fmt::format(
        "  fixed: {} workers ({} per node), {}{}, global batch {} {} per step; each candidate simulated for one "
        "iteration\n",
        p.workers, p.gpus_per_node, p.device,
        p.capacity_bytes ? fmt::format(" ({:.0f} GB)", *p.capacity_bytes / 1e9) : std::string(), p.global_batch,
        tokens ? fmt::format("sequences of {} tokens", p.tokens_per_sample) : std::string("samples"));
    out += fmt::format("  objective: {} ({}); tensor parallelism up to {}{}\n", p.objective.column,
                       p.objective.maximise ? "highest first" : "lowest first", p.max_tensor,
                       p.max_tensor == p.gpus_per_node ? " (one node; --max-tensor for more)" : "");
    const std::size_t refused = p.count(CandidateStatus::refused), unfit = p.count(CandidateStatus::does_not_fit),
                      simulated = p.count(CandidateStatus::simulated), failed = p.count(CandidateStatus::failed),
                      bounded = p.count(CandidateStatus::bounded);
    out += fmt::format(
        "  {} candidates: {} refused, {} do not fit in memory, {} simulated, {} failed, {} bounded ({:.1f} s)\n",
        p.candidates.size(), refused, unfit, simulated, failed, bounded, p.wall_time_s);
    if (bounded > 0)
        out += fmt::format(
            "    bounded {:>6}  not simulated: each one's step takes longer, at least, than the slowest of the best {} "
            "steps simulated, so none could rank among them (--exhaustive simulates them)\n",
            bounded, top);
    // The refusals grouped by the key the loader named, most frequent first, each with its first message.
    std::map<std::string, std::pair<std::size_t, std::string>> by_key;
    for (const auto& c : p.candidates)
        if (c.status == CandidateStatus::refused) {
            auto& [n, first] = by_key[c.reason_key];
            if (n++ == 0) first = c.reason;
        }
    std::vector<std::pair<std::string, std::pair<std::size_t, std::string>>> groups(by_key.begin(), by_key.end());
    std::stable_sort(groups.begin(), groups.end(),
                     [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    for (const auto& [key, v] : groups)
        out += fmt::format("    refused {:>6}  {}: {}\n", v.first, key, shorten(v.second));
    if (unfit > 0) {
        double least = 0.0;
        for (const auto& c : p.candidates)
            if (c.status == CandidateStatus::does_not_fit && c.memory_bytes &&
                (least == 0.0 || *c.memory_bytes < least))
                least = *c.memory_bytes;
        out += fmt::format(
            "    no fit  {:>6}  more memory per GPU than the device's {:.0f} GB (the least of them "
            "{:.1f} GB)\n",
            unfit, p.capacity_bytes.value_or(0.0) / 1e9, least / 1e9);
    }
    for (const auto& c : p.candidates)
        if (c.status == CandidateStatus::failed) {
            out += fmt::format("    failed: {}: {}\n", layout_text(c.layout), shorten(c.reason));
            break;
        }
    if (p.ranking.empty()) {
        out += fmt::format("  no candidate has a value of {}\n", p.objective.column);
        return out;
    }
    const std::set<std::string> shown{"iteration_time_s", "tokens_per_s", "throughput_samples_per_s", "mfu"};
    const bool extra = !shown.contains(p.objective.column);
    out += fmt::format("\n  best {} of {} ranked by {}:\n", std::min(top, p.ranking.size()), p.ranking.size(),
                       p.objective.column);
    out += fmt::format(
        "  {:>4}  {:>3} {:>3} {:>2} {:>2} {:>2} {:>2} {:>4} {:>4}  {:>5}  {:>9}  {:>10}  {:>12}  {:>5}  "
        "{:>6}  {:>7}  {:>6}{}\n",
        "rank", "t", "p", "c", "e", "v", "b", "m", "d", "shard", "recompute", "iter (s)",
        tokens ? "tokens/s" : "samples/s", "MFU", "mem GB", "exposed", "bubble",
        extra ? fmt::format("  {:>12}", p.objective.column) : std::string());
    const auto row = [&](const PlanCandidate& c) {
        const PlanLayout& l = c.layout;
        const auto it = number(c, "iteration_time_s");
        const auto share = [&](const char* key) -> std::optional<double> {
            const auto v = number(c, key);
            if (!v || !it || *it <= 0.0) return std::nullopt;
            return 100.0 * *v / *it;
        };
        return fmt::format(
            "  {:>4}  {:>3} {:>3} {:>2} {:>2} {:>2} {:>2} {:>4} {:>4}  {:>5}  {:>9}  {:>10}  {:>12}  {:>5}  {:>6}  "
            "{:>7}  {:>6}{}{}\n",
            c.rank, l.tensor, l.pipeline, l.context, l.expert, l.virtual_stages, l.micro_batch, l.micro_batches, l.data,
            l.sharding, std::string(sim::enum_name(l.recompute)), cell(it, "{:.4g}"),
            cell(number(c, tokens ? "tokens_per_s" : "throughput_samples_per_s"), "{:.4g}"),
            cell(scaled(number(c, "mfu"), 100.0), "{:.1f}%"), cell(scaled(c.memory_bytes, 1e-9), "{:.1f}"),
            cell(share("time_breakdown_s.exposed_communication"), "{:.1f}%"),
            cell(share("exposed_communication_by_dimension_s.pipeline"), "{:.1f}%"),
            extra ? fmt::format("  {:>12}", cell(c.value, "{:.5g}")) : std::string(),
            c.yours ? "  <- yours" + (l.schedule.empty() || l.schedule == "1f1b" || l.schedule == "interleaved_1f1b"
                                          ? std::string()
                                          : " (" + l.schedule + ")")
                    : std::string());
    };
    for (std::size_t r = 0; r < std::min(top, p.ranking.size()); ++r) out += row(p.candidates[p.ranking[r]]);
    const PlanCandidate& mine = p.yours();
    if (mine.rank > top) out += "   ...\n" + row(mine);
    const PlanCandidate& best = p.candidates[p.ranking.front()];
    if (mine.rank > 0) {
        const double gap = *best.value != 0.0 ? (*mine.value - *best.value) / std::abs(*best.value) : 0.0;
        const bool worse = p.objective.maximise ? *mine.value < *best.value : *mine.value > *best.value;
        // Bounded layouts whose bound is below this step were not simulated and might rank above it.
        const auto step = mine.result.find("iteration_time_s");
        const double own_step =
            step != mine.result.end() && step->second.is_number() ? step->second.get<double>() : 0.0;
        const auto unsure = std::count_if(p.candidates.begin(), p.candidates.end(), [&](const PlanCandidate& c) {
            return c.status == CandidateStatus::bounded && c.bound_s < own_step;
        });
        out += fmt::format("  your configuration ({}): rank {} of {}{}{}\n", layout_text(mine.layout), mine.rank,
                           p.ranking.size(),
                           mine.rank == 1 || !worse ? std::string(", the best found")
                                                    : fmt::format(", {} {:.1f} % {} than the best", p.objective.column,
                                                                  100.0 * std::abs(gap), gap < 0 ? "lower" : "higher"),
                           unsure > 0 ? fmt::format(" ({} bounded layouts not simulated might rank above it: "
                                                    "--exhaustive for its exact rank)",
                                                    unsure)
                                      : std::string());
    } else {
        out += fmt::format("  your configuration ({}): {}{}\n", layout_text(mine.layout), status_name(mine.status),
                           mine.reason.empty() ? std::string() : ": " + shorten(mine.reason));
    }
    return out;
}

std::vector<std::string> plan_columns(const PlanSearch& p) {
    std::vector<std::string> cols{
        "rank",        "candidate",     "yours",   "status",   "reason_key",     "reason",
        "tensor",      "pipeline",      "context", "expert",   "virtual_stages", "schedule",
        "micro_batch", "micro_batches", "data",    "sharding", "recompute",      "sequence_parallel",
        "objective",   "step_bound_s"};
    std::set<std::string> seen(cols.begin(), cols.end());
    for (const auto& c : result_columns())
        if (c != "wall_time_s" && c != "replay_wall_time_s" && seen.insert(c).second) cols.push_back(c);
    std::set<std::string> more;  // result keys the probe did not know (e.g. a time to train's)
    for (const auto& c : p.candidates)
        for (const auto& [k, v] : c.result)
            if (!seen.contains(k)) more.insert(k);
    cols.insert(cols.end(), more.begin(), more.end());
    return cols;
}

std::vector<json> plan_rows(const PlanSearch& p) {
    std::vector<std::size_t> order = p.ranking;
    for (std::size_t i = 0; i < p.candidates.size(); ++i)
        if (p.candidates[i].rank == 0) order.push_back(i);
    std::vector<json> rows;
    for (const std::size_t i : order) {
        const PlanCandidate& c = p.candidates[i];
        const PlanLayout& l = c.layout;
        json r = json::object();
        r["rank"] = c.rank > 0 ? json(c.rank) : json(nullptr);
        r["candidate"] = c.index;
        r["yours"] = c.yours;
        r["status"] = status_name(c.status);
        r["reason_key"] = c.reason_key;
        r["reason"] = c.reason;
        r["tensor"] = l.tensor;
        r["pipeline"] = l.pipeline;
        r["context"] = l.context;
        r["expert"] = l.expert;
        r["virtual_stages"] = l.virtual_stages;
        r["schedule"] = l.schedule;
        r["micro_batch"] = l.micro_batch;
        r["micro_batches"] = l.micro_batches;
        r["data"] = l.data;
        r["sharding"] = l.sharding;
        r["recompute"] = std::string(sim::enum_name(l.recompute));
        r["sequence_parallel"] = l.sequence_parallel;
        r["objective"] = c.value ? json(*c.value) : json(nullptr);
        r["step_bound_s"] = c.bound_s > 0.0 ? json(c.bound_s) : json(nullptr);
        for (const auto& [k, v] : c.result) r[k] = v;
        if (c.result.empty() && c.memory_bytes) r["memory_per_gpu_bytes.total"] = *c.memory_bytes;
        rows.push_back(std::move(r));
    }
    return rows;
}

std::string plan_csv(const PlanSearch& p) {
    const std::vector<std::string> cols = plan_columns(p);
    std::string out = csv_line(cols);
    for (const json& r : plan_rows(p)) {
        std::vector<std::string> fields;
        fields.reserve(cols.size());
        for (const auto& c : cols) fields.push_back(r.contains(c) ? cell_text(r[c]) : std::string());
        out += csv_line(fields);
    }
    return out;
}

std::string plan_json(const PlanSearch& p) {
    return json(plan_rows(p)).dump(2) + "\n";
}

int run_plan(const PlanOptions& opts, std::ostream& out, std::ostream& err) {
    try {
        const bool out_stdout = opts.out == "-";
        const std::string out_file = out_stdout ? std::string() : opts.out;
        sim::FileRoles roles;
        roles.input(opts.scenario_file, "the scenario file");
        roles.output(out_file, "--out");
        roles.check();
        const PlanSearch p = [&] {
            const scenario::InputFileLog inputs;  // a profile or topology file the scenario reads is no output
            PlanSearch search = plan_search(opts, err);
            for (const auto& f : inputs.files()) roles.input(f, "a file the scenario reads");
            roles.check();
            return search;
        }();
        (out_stdout ? err : out) << plan_report(p, opts.top) << std::flush;
        if (!opts.out.empty()) {
            const bool as_json = std::filesystem::path(opts.out).extension() == ".json";
            const std::string body = as_json ? plan_json(p) : plan_csv(p);
            if (out_stdout)
                out << body << std::flush;
            else
                write_file_atomically(out_file, body);
        }
        return p.ranking.empty() ? kPlanNothingRanked : 0;
    } catch (const scenario::ScenarioError& e) {
        err << one_line(fmt::format("error: {}: {}: {}", opts.scenario_file, e.path(), e.what())) << "\n";
        return 2;
    } catch (const CliError& e) {
        err << one_line(std::string("error: ") + e.what()) << "\n";
        return 2;
    } catch (const std::exception& e) {
        err << one_line(std::string("internal error: ") + e.what()) << "\n";
        return 1;
    }
}

}  // namespace ddlsim::tools
