// The ddlsim command line (docs/CONTRACT.md §1). Only this file (and validate_cli.cpp, for validate and calibrate)
// chooses exit codes: 0 success, 2 bad input of any kind, 1 internal error.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "scenarios/json_reader.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tools/compare.hpp"
#include "tools/output_file.hpp"
#include "tools/plan.hpp"
#include "tools/report.hpp"
#include "tools/run_result.hpp"
#include "tools/summary.hpp"
#include "tools/sweep.hpp"
#include "tools/sweep_plot.hpp"
#include "tools/validate_cli.hpp"
#include "validate/convergence.hpp"

namespace {

using ddlsim::scenario::ScenarioError;

using ddlsim::sim::CliError;

// `run --seeds N`: mean, sample standard deviation, min and max of a key over the seeds' results.
nlohmann::json spread(const std::vector<double>& v) {
    double sum = 0.0, lo = v.front(), hi = v.front();
    for (double x : v) sum += x, lo = std::min(lo, x), hi = std::max(hi, x);
    const double mean = sum / static_cast<double>(v.size());
    double ss = 0.0;
    for (double x : v) ss += (x - mean) * (x - mean);
    const double sd = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
    return {{"mean", mean}, {"stddev", sd}, {"min", lo}, {"max", hi}};
}

// Runs seeds seed, seed + 1, ..., seed + n - 1 of `scenario` and adds a "seeds" block to each job's result
// (the rest of the result is the first seed's); returns the summary lines.
std::string run_seeds(const ddlsim::scenario::Scenario& scenario, std::uint32_t n, nlohmann::json& result) {
    const std::size_t jobs = scenario.jobs.size();
    std::vector<std::vector<double>> times(jobs), rates(jobs);
    std::vector<std::uint64_t> seeds;
    for (std::uint32_t i = 0; i < n; ++i) {
        auto s = scenario;
        s.seed = scenario.seed + i;
        seeds.push_back(s.seed);
        const auto r = ddlsim::scenario::run_scenario(s);
        for (std::size_t j = 0; j < jobs; ++j) {
            times[j].push_back(r.jobs[j].iteration_time_s);
            rates[j].push_back(r.jobs[j].throughput_samples_per_s);
        }
    }
    std::string text;
    for (std::size_t j = 0; j < jobs; ++j) {
        const auto t = spread(times[j]), x = spread(rates[j]);
        const double cv_t = t["mean"].get<double>() > 0 ? t["stddev"].get<double>() / t["mean"].get<double>() : 0.0;
        const double cv_x = x["mean"].get<double>() > 0 ? x["stddev"].get<double>() / x["mean"].get<double>() : 0.0;
        const double cv = std::max(cv_t, cv_x);
        const nlohmann::json block{{"count", n},
                                   {"seeds", seeds},
                                   {"iteration_time_s", t},
                                   {"throughput_samples_per_s", x},
                                   {"relative_spread", cv}};
        (scenario.has_jobs_list ? result["jobs"][j] : result)["seeds"] = block;
        text += fmt::format(
            "\n  over {} seeds ({}..{}){}\n"
            "    iteration time   mean {:.3f} ms, stddev {:.3f} ms, min {:.3f} ms, max {:.3f} ms\n"
            "    throughput       mean {:.1f}, stddev {:.1f}, min {:.1f}, max {:.1f} samples/s\n"
            "    run-to-run spread {:.2f} % (stddev / mean){}\n",
            n, seeds.front(), seeds.back(), scenario.has_jobs_list ? ", job " + scenario.jobs[j].name : "",
            1e3 * t["mean"].get<double>(), 1e3 * t["stddev"].get<double>(), 1e3 * t["min"].get<double>(),
            1e3 * t["max"].get<double>(), x["mean"].get<double>(), x["stddev"].get<double>(), x["min"].get<double>(),
            x["max"].get<double>(), 100.0 * cv,
            cv > 0.01 ? ": exceeds 1 %, so one seed's figures are not representative; report the mean and spread" : "");
    }
    return text;
}

// `--report R.html`: a file name ending in .html (FileRoles checks the rest).
void check_report_path(const std::string& report) {
    if (!report.empty() && !report.ends_with(".html") && !report.ends_with(".htm"))
        throw CliError(fmt::format("--report {}: expected a file name ending in .html", report));
}

// `ddlsim sweep --report`: the sweep, then a page with its plot (--plot's, or one drawn for the page when
// python3-matplotlib is there) and its rows.
int sweep_with_report(ddlsim::tools::SweepOptions opts, const std::string& report) {
    check_report_path(report);
    opts.more_outputs.emplace_back(report, "--report");
    std::string note, temp_plot;
    if (opts.plot.empty()) {
        try {
            (void)ddlsim::tools::find_plotter("--report", "plot_sweep.py", "DDLSIM_PLOT_SCRIPT");
            temp_plot = (std::filesystem::temp_directory_path() /
                         fmt::format("ddlsim-report-{}.png", static_cast<long>(::getpid())))
                            .string();
            opts.plot = temp_plot;
        } catch (const CliError&) {
            note = "No plot: python3-matplotlib is not installed.";
        }
    }
    const int rc = ddlsim::tools::run_sweep(opts, std::cerr);
    if (rc == 0 || rc == ddlsim::tools::kSweepSomePointsFailed) {
        std::ifstream in(opts.out, std::ios::binary);
        std::ostringstream buf;
        buf << in.rdbuf();
        const bool csv = opts.format == ddlsim::tools::SweepFormat::csv;
        if (!csv) note += " The rows are in " + opts.out + " (JSON).";
        std::error_code ec;
        const bool plotted = !opts.plot.empty() && std::filesystem::exists(opts.plot, ec);
        ddlsim::sim::write_file_atomically(
            report, ddlsim::tools::sweep_report_html("ddlsim sweep " + opts.scenario_file, csv ? buf.str() : "",
                                                     plotted ? opts.plot : "", note));
        std::cerr << fmt::format("report: {}\n", report);
    }
    if (!temp_plot.empty()) {
        std::error_code ec;
        std::filesystem::remove(temp_plot, ec);
    }
    return rc;
}

// Compact timelines: spans kept as they are per track, and the gap below which later spans of one kind merge.
constexpr std::size_t kTraceDetailedSpans = 300;
constexpr double kTraceMergeGap = 100e-6;  // 100 us: a transport's per-message latency (tcp 40 us) merges

int run_command(const std::string& file, const std::vector<std::string>& sets, const std::string& out,
                const std::string& trace, bool trace_full, const std::string& plot, const std::string& report,
                std::uint32_t seeds, int progress, bool flow_classes) {
    // `--out -`: the result JSON is standard output, so the summary goes to standard error.
    const bool out_stdout = out == "-";
    if (out_stdout && (trace == "-" || plot == "-"))
        throw CliError("only one output can be standard output: give --trace and --plot file names");
    if (trace == "-" || plot == "-" || report == "-")
        throw CliError(fmt::format("{} -: standard output is for the result JSON (--out -); give a file name",
                                   trace == "-"  ? "--trace"
                                   : plot == "-" ? "--plot"
                                                 : "--report"));
    // Output paths are checked before simulating, so a typo costs nothing; none may replace an input (the scenario,
    // a profile or topology file it reads) or another output.
    const std::string out_file = out_stdout ? std::string() : out;
    if (!plot.empty()) ddlsim::tools::check_plot_path("--plot", plot);
    check_report_path(report);
    ddlsim::sim::FileRoles roles;
    roles.input(file, "the scenario file");
    roles.output(out_file, "--out");
    roles.output(trace, "--trace");
    roles.output(plot, "--plot");
    roles.output(report, "--report");
    roles.check();
    auto scenario = ddlsim::scenario::load_scenario_file(file, sets);
    scenario.flow_classes = flow_classes;
    for (const auto& f : scenario.input_files) roles.input(f, "a file the scenario reads");
    roles.check();
    // --seeds runs the scenario that many times: the loader's limit holds for all of them together.
    if (seeds > 1 && scenario.network_model == ddlsim::scenario::NetworkModel::flow) {
        const double each = ddlsim::scenario::estimated_seconds(scenario);
        if (seeds * each > ddlsim::scenario::kMaxFlowSeconds)
            throw CliError(fmt::format(
                "--seeds {}: {} runs of roughly {} each would take roughly {} (limit {}); "
                "expected at most {} seeds, fewer iterations or \"network\": {{\"model\": "
                "\"analytic\"}}",
                seeds, seeds, ddlsim::tools::duration_text(each), ddlsim::tools::duration_text(seeds * each),
                ddlsim::tools::duration_text(ddlsim::scenario::kMaxFlowSeconds),
                static_cast<std::uint64_t>(ddlsim::scenario::kMaxFlowSeconds / each)));
    }
    const bool converge = scenario.jobs.size() == 1 && scenario.jobs[0].convergence.has_value();
    ddlsim::tools::Plotter plotter;
    if (!plot.empty() && !converge)
        throw CliError("--plot draws the accuracy curve of a scenario with a \"convergence\" block; this one has none");
    if (!plot.empty()) plotter = ddlsim::tools::find_plotter("--plot", "plot_curve.py", "DDLSIM_PLOT_CURVE_SCRIPT");
    std::unique_ptr<ddlsim::sim::Trace> timeline;
    if (!trace.empty()) timeline = std::make_unique<ddlsim::sim::Trace>();
    // The report's timeline excerpt draws the first iteration: a bounded trace is enough.
    if (trace.empty() && !report.empty()) timeline = std::make_unique<ddlsim::sim::Trace>(200'000);
    // Compact by default: every track's first spans as they are (a couple of iterations in full), then runs of
    // back-to-back spans of one kind merged (docs/SCENARIOS.md#timelines); --trace-full keeps every span.
    if (timeline && !trace_full)
        timeline->set_compaction(kTraceDetailedSpans, ddlsim::sim::Time::seconds(kTraceMergeGap));
    // Progress on standard error: on a terminal unless --quiet (progress < 0), always with --progress (> 0).
    const bool terminal = ::isatty(STDERR_FILENO) != 0;
    ddlsim::tools::RunProgress meter(progress > 0 || (progress == 0 && terminal), terminal,
                                     ddlsim::scenario::estimated_events(scenario), std::cerr);
    auto run = ddlsim::tools::run_full(scenario, timeline.get(), meter.callback());
    meter.finish();
    std::ostream& text = out_stdout ? std::cerr : std::cout;
    const std::string summary = ddlsim::tools::run_summary(file, scenario, run.result, sets);
    text << summary << std::flush;
    auto& json = run.json;
    if (seeds > 1) text << run_seeds(scenario, seeds, json) << std::flush;
    if (converge) text << ddlsim::validate::convergence_summary(run.convergence) << std::flush;
    if (out_stdout) std::cout << json.dump(2) << "\n" << std::flush;
    if (!out_file.empty()) ddlsim::sim::write_file_atomically(out_file, json.dump(2) + "\n");
    if (!report.empty()) {
        ddlsim::sim::write_file_atomically(report,
                                           ddlsim::tools::run_report_html("ddlsim run " + file, scenario, json, summary,
                                                                          timeline ? timeline->json() : std::string()));
        text << fmt::format("report: {}\n", report);
    }
    if (timeline && !trace.empty()) {
        ddlsim::sim::write_file_atomically(trace, timeline->json());
        text << fmt::format("timeline: {} ({} events{}; open in https://ui.perfetto.dev or chrome://tracing)\n", trace,
                            timeline->size(),
                            timeline->dropped() > 0 ? fmt::format(", {} more dropped", timeline->dropped()) : "");
    }
    if (!plot.empty()) {
        ddlsim::tools::plot_run_curve(plotter, json, out_file, plot, std::filesystem::path(file).stem().string());
        text << fmt::format("plot: {}\n", plot);
    }
    return 0;
}

// `ddlsim compare`: the scenarios (or one scenario's variants) side by side; every case is loaded before any runs.
int compare_command(const std::vector<std::string>& files, const std::vector<std::string>& sets,
                    const std::vector<std::string>& variant_specs, const std::string& out, const std::string& report,
                    unsigned jobs) {
    const bool out_stdout = out == "-";
    const std::string out_file = out_stdout ? std::string() : out;
    const bool json_out = std::filesystem::path(out).extension() == ".json";
    check_report_path(report);
    ddlsim::sim::FileRoles roles;
    for (const auto& f : files) roles.input(f, "a scenario file");
    roles.output(out_file, "--out");
    roles.output(report, "--report");
    roles.check();
    std::vector<ddlsim::tools::CompareCase> sources;
    std::map<std::string, int> stems;
    for (const auto& f : files) ++stems[std::filesystem::path(f).stem().string()];
    for (const auto& f : files) {
        ddlsim::tools::CompareCase c;
        const std::string stem = std::filesystem::path(f).stem().string();
        c.name = f == "-" ? "stdin" : stems[stem] > 1 ? f : stem;
        c.file = f;
        try {
            c.scenario = ddlsim::scenario::read_json_file(f);
        } catch (const ScenarioError& e) {
            throw ddlsim::tools::CompareInputError(f, e);
        }
        c.base_dir = std::filesystem::path(f).parent_path().string();
        if (c.base_dir.empty()) c.base_dir = ".";
        sources.push_back(std::move(c));
    }
    std::vector<std::pair<std::string, nlohmann::json>> variants;
    for (const auto& v : variant_specs) variants.push_back(ddlsim::tools::parse_variant(v));
    const auto cases = ddlsim::tools::compare_cases(sources, sets, variants);
    const auto rows = ddlsim::tools::run_comparison(cases, jobs, [&](const auto& loaded) {
        for (const auto& s : loaded)
            for (const auto& f : s.input_files) roles.input(f, "a file a scenario reads");
        roles.check();
    });
    std::ostream& text = out_stdout ? std::cerr : std::cout;
    std::string head = "ddlsim compare";
    for (const auto& f : files) head += " " + f;
    for (const auto& a : sets) head += " --set " + a;
    const std::string table = ddlsim::tools::compare_table(rows);
    text << head << "\n" << table << std::flush;
    if (!report.empty()) {
        ddlsim::sim::write_file_atomically(report, ddlsim::tools::compare_report_html(head, rows, table));
        text << fmt::format("report: {}\n", report);
    }
    if (out.empty()) return 0;
    const std::string body = json_out ? nlohmann::json(rows).dump(2) + "\n" : ddlsim::tools::compare_csv(rows);
    if (out_stdout)
        std::cout << body << std::flush;
    else
        ddlsim::sim::write_file_atomically(out_file, body);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    ddlsim::sim::remove_partial_output_on_interrupt();
    CLI::App app{"ddlsim: a discrete-event simulator of data-parallel distributed deep-learning training"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "ddlsim 0.1.0");
    app.footer(R"(Examples:
  ddlsim run scenarios/examples/resnet50_ring_16xV100.json --set network.bandwidth=100Gbps
  ddlsim compare scenarios/examples/llama2_7b_fsdp_4x8xH100.json --variant 'ddp={"sharding": null}' --variant fsdp={}
  ddlsim sweep scenarios/examples/resnet50_ring_16xV100.json --vary workers=2..64:x2 --out r.csv --plot r.png
  ddlsim plan scenarios/examples/llama3_8b_pipeline_4x8xH100.json --top 5 --out layouts.csv
  ddlsim check my.json --print
Scenario keys: ddlsim schema, docs/KEYS.md; exit status 0 success, 2 bad input, 3 some sweep points failed (plan: no
candidate ranked), 1 internal error.)");

    // An output option given an empty name is refused: it would read as "not given" and write nothing.
    const CLI::Validator file_name(
        [](std::string& name) { return name.empty() ? std::string("expected a file name, got an empty one") : ""; },
        "FILE");
    std::string file, out, trace, plot;
    std::vector<std::string> sets;
    std::uint32_t seeds = 1;
    bool print_resolved = false;
    auto* run = app.add_subcommand("run", "simulate one scenario and print a summary");
    run->add_option("scenario", file, "scenario JSON file (- reads standard input)")->required();
    run->add_option("--set", sets, "override a scenario key: PATH=VALUE (repeatable)")->expected(1)->take_all();
    run->add_option("--out", out, "write the result JSON here (-: standard output; the summary then goes to stderr)")
        ->check(file_name);
    run->add_option("--trace", trace,
                    "write a Chrome-trace / Perfetto timeline here (one track per worker and per link; under flow "
                    "classes the links carry each class's representative transfers, and a model-parallel job draws "
                    "its first replicas, which stand for the others: as fast as the run without it)")
        ->check(file_name);
    run->add_option("--plot", plot,
                    "with a convergence block: draw accuracy and loss against simulated time into FILE.png or "
                    "FILE.svg (python3-matplotlib)")
        ->check(file_name);

    bool trace_full = false;
    run->add_flag("--trace-full", trace_full,
                  "with --trace: keep every span (by default each track keeps its first 300 and merges later "
                  "back-to-back spans of one kind)");
    std::string report;
    run->add_option("--report", report,
                    "also write a self-contained HTML page: summary, breakdown, links, timeline excerpt, assumptions "
                    "(its timeline drawn as --trace draws it, as fast as the run without it)")
        ->check(file_name);
    run->add_option("--seeds", seeds,
                    "run N seeds (seed, seed + 1, ...): mean, stddev, min and max of iteration time and throughput")
        ->check(CLI::Range(1U, 10000U));

    bool run_progress = false, run_quiet = false;
    run->add_flag("--progress", run_progress,
                  "print progress and a time estimate on standard error once a run takes over 2 s, even when it is "
                  "not a terminal (a line every 5 s, for logs)");
    run->add_flag("--quiet", run_quiet, "no progress line, even on a terminal")->excludes("--progress");
    bool no_flow_classes = false;
    run->add_flag("--no-flow-classes", no_flow_classes,
                  "simulate every transfer, even where a shift of the workers maps them onto each other (the same "
                  "result, more slowly: for checking; see docs/BENCHMARKS.md)");
    run->footer(R"(Examples:
  ddlsim run scenarios/examples/resnet50_ring_16xV100.json
  ddlsim run s.json --set workers=64 --set network.bandwidth=100Gbps --out result.json --report result.html
  ddlsim run - --out - < s.json          (scenario from stdin, result JSON to stdout, summary to stderr)
  ddlsim run s.json --trace trace.json   (open in https://ui.perfetto.dev))");
    auto* check = app.add_subcommand("check", "validate a scenario without running it");
    check->add_option("scenario", file, "scenario JSON file")->required();
    check->add_option("--set", sets, "override a scenario key: PATH=VALUE (repeatable)")->expected(1)->take_all();
    check->add_flag("--print", print_resolved,
                    "print the resolved scenario (every default applied; `ddlsim run` on it gives the same result)");

    ddlsim::tools::SweepOptions sweep_opts;
    std::string sweep_format = "csv";
    auto* sweep = app.add_subcommand("sweep", "run the cartesian product of varied keys, one CSV row per point");
    sweep->add_option("scenario", sweep_opts.scenario_file, "scenario JSON file")->required();
    sweep->add_option("--vary", sweep_opts.vary, "PATH=V1,V2,... or PATH=A..B[:xF|:+S] (repeatable; first outermost)")
        ->expected(1)
        ->take_all();
    sweep->add_option("--set", sweep_opts.sets, "override a scenario key in every point: PATH=VALUE (repeatable)")
        ->expected(1)
        ->take_all();
    sweep
        ->add_option("--variant", sweep_opts.variants,
                     "NAME=JSON-PATCH: a named variant of the scenario (a JSON merge patch); the variants form a "
                     "\"variant\" column, outermost (repeatable)")
        ->expected(1)
        ->take_all();
    sweep->add_option("--out", sweep_opts.out, "results file (CSV, or JSON with --format json)")->required();
    sweep->add_option("--jobs", sweep_opts.jobs, "points run at once (default: the number of CPU threads)");
    sweep->add_flag("--resume", sweep_opts.resume, "keep the finished points already in --out, run the rest");
    sweep->add_option("--format", sweep_format, "csv (default) or json")->check(CLI::IsMember({"csv", "json"}));
    sweep->add_option("--plot", sweep_opts.plot, "also draw the sweep into FILE.png or FILE.svg (python3-matplotlib)")
        ->check(file_name);
    sweep->add_option("--relative-to", sweep_opts.relative_to,
                      "KEY=VALUE: plot every point divided by the point with KEY=VALUE and the same other values");
    auto* no_progress =
        sweep->add_flag("!--no-progress,!--quiet", sweep_opts.progress, "no progress line, even on a terminal");
    sweep
        ->add_flag("--progress", sweep_opts.force_progress,
                   "progress on standard error even when it is not a terminal (a line every 5 s, for logs)")
        ->excludes(no_progress);
    sweep->add_option("--report", report, "also write a self-contained HTML page with the plot and the rows")
        ->check(file_name);
    sweep->add_option("--objective", sweep_opts.objective,
                      "rank the points by a result column and print the best and its runner-up: time_to_train_s, "
                      "cost, gpu_hours (with a training block), iteration_time_s, ...; max:COLUMN ranks highest first");

    std::vector<std::string> compare_files, variants;
    std::string compare_out;
    unsigned compare_jobs = std::max(1U, std::thread::hardware_concurrency());
    auto* compare =
        app.add_subcommand("compare", "run several scenarios, or named variants of one, and print them side by side");
    compare->add_option("scenarios", compare_files, "scenario JSON files (- reads one from standard input)")
        ->required();
    compare->add_option("--set", sets, "override a key in every case: PATH=VALUE (repeatable)")
        ->expected(1)
        ->take_all();
    compare
        ->add_option("--variant", variants,
                     "NAME=JSON-PATCH: a case made of each scenario with this JSON merge patch (RFC 7386) applied, "
                     "e.g. 'ddp={\"sharding\": null}' or 'fsdp={\"sharding\": {\"stage\": 3}}' (repeatable)")
        ->expected(1)
        ->take_all();
    compare->add_option("--out", compare_out, "also write the table as CSV, or JSON for a .json name (-: stdout)")
        ->check(file_name);
    compare->add_option("--report", report, "also write the comparison as a self-contained HTML page")
        ->check(file_name);
    compare->add_option("--jobs", compare_jobs, "cases run at once (default: the number of CPU threads)")
        ->check(CLI::Range(1U, 4096U));

    compare->footer(R"(Examples:
  ddlsim compare a.json b.json --out table.csv
  ddlsim compare llama.json --variant 'ddp={"sharding": null}' --variant 'zero2={"sharding": {"stage": 2}}' \
      --variant fsdp={} --variant 'hsdp={"sharding": {"group": "node"}}' --report compare.html
A variant is a JSON merge patch (RFC 7386) of each scenario: objects merge, null removes a key.)");
    sweep->footer(R"(Examples:
  ddlsim sweep s.json --vary workers=2..64:x2 --vary network.bandwidth=10Gbps,100Gbps --out r.csv --plot r.png
  ddlsim sweep s.json --vary workers=8..512:x2 --variant 'ddp={"sharding": null}' --variant fsdp={} --out r.csv
  ddlsim sweep ttt.json --vary batch_size=32,64,128 --out r.csv --objective cost
  ddlsim sweep s.json --vary workers=2..64:x2 --out r.csv --resume      (after an interruption))");

    ddlsim::tools::PlanOptions plan_opts;
    auto* plan =
        app.add_subcommand("plan", "search the parallel layouts of a scenario's job by simulation and print the best");
    plan->add_option("scenario", plan_opts.scenario_file, "scenario JSON file (- reads standard input)")->required();
    plan->add_option("--set", plan_opts.sets, "override a scenario key first: PATH=VALUE (repeatable)")
        ->expected(1)
        ->take_all();
    plan->add_option("--objective", plan_opts.objective,
                     "rank by: throughput (default: tokens/s, or samples/s; highest first), time_to_train_s, cost, "
                     "gpu_hours (with a training block), or any numeric result column (max:COLUMN highest first)");
    plan->add_option("--top", plan_opts.top, "layouts printed, best first (default 10)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1000000}));
    plan->add_option("--out", plan_opts.out,
                     "also write every candidate (its layout, status, reason and result columns) as CSV, or JSON for "
                     "a .json name (-: standard output; the report then goes to stderr)")
        ->check(file_name);
    plan->add_option("--jobs", plan_opts.jobs, "candidates simulated at once (default: the number of CPU threads)")
        ->check(CLI::Range(1U, 4096U));
    plan->add_option("--max-tensor", plan_opts.max_tensor,
                     "largest tensor-parallel degree tried (default: the GPUs of one node of the scenario's fabric)")
        ->check(CLI::Range(1U, 1U << 20));
    plan->add_flag("--exhaustive", plan_opts.exhaustive,
                   "simulate every candidate that fits (by default one whose step's lower bound, its busiest rank's "
                   "compute and tensor-parallel collectives, is slower than the --top best steps is bounded, not "
                   "simulated: the same best layouts, sooner)");
    auto* plan_quiet =
        plan->add_flag("!--no-progress,!--quiet", plan_opts.progress, "no progress line, even on a terminal");
    plan->add_flag("--progress", plan_opts.force_progress,
                   "progress on standard error even when it is not a terminal (a line every 5 s, for logs)")
        ->excludes(plan_quiet);
    plan->footer(R"(Fixed: the model, workers, device, network and global batch (sequences per step) of the scenario.
Tried: tensor t (divisors of the workers that divide a node's GPUs or are whole nodes, up to --max-tensor), pipeline p (divisors of workers / t), context c
(1, 2, 4, 8 for transformers on 8,192 tokens or more), expert e (divisors of the routed experts), virtual stages
v (1, 2, 4 with a pipeline: interleaved 1F1B), micro-batch b (1, 2, 4, 8, with m = global batch / (d b) micro-
batches), sharding stage 0 or 1, recompute none, selective or full. The loader refuses what does not divide; what
does not fit the device's memory is dropped; the rest are simulated for one iteration each, lowest bound first (a
step's least time: its busiest rank's compute and tensor-parallel collectives, the pipeline's fill and drain),
until the next bound exceeds the slowest of the --top best steps (bounded: it could not rank there; --exhaustive
simulates them all).
Examples:
  ddlsim plan scenarios/examples/llama3_70b_3d_8x4x4xH100.json
  ddlsim plan s.json --set workers=64 --objective cost --top 5 --out layouts.csv)");

    app.add_subcommand("schema", "print the JSON Schema of scenarios");
    app.add_subcommand("models", "list the built-in model workloads and device profiles");
    ddlsim::tools::ValidateCliOptions validate_opts;
    ddlsim::tools::add_validate_commands(app, validate_opts);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        const bool unknown_command = argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty();
        if (unknown_command)
            std::cerr << fmt::format(
                "error: unknown command \"{}\"; expected run, sweep, compare, plan, check, schema, models, validate "
                "or calibrate "
                "(see ddlsim --help)\n",
                argv[1]);
        else
            std::cerr << "error: " << e.what() << " (see ddlsim --help)\n";
        return 2;
    }

    try {
        if (const auto code = ddlsim::tools::run_validate_commands(validate_opts)) return *code;
        if (run->parsed())
            return run_command(file, sets, out, trace, trace_full, plot, report, seeds,
                               run_quiet      ? -1
                               : run_progress ? 1
                                              : 0,
                               !no_flow_classes);
        if (plan->parsed()) return ddlsim::tools::run_plan(plan_opts, std::cout, std::cerr);
        if (compare->parsed()) return compare_command(compare_files, sets, variants, compare_out, report, compare_jobs);
        if (sweep->parsed()) {
            sweep_opts.extra_keys = [](const ddlsim::scenario::Scenario& s, const ddlsim::scenario::RunResult& r) {
                const bool converge = s.jobs.size() == 1 && s.jobs[0].convergence.has_value();
                return converge ? ddlsim::validate::convergence_result(s, r) : nlohmann::json::object();
            };
            sweep_opts.extra_columns = ddlsim::validate::convergence_columns();
            sweep_opts.format =
                sweep_format == "json" ? ddlsim::tools::SweepFormat::json : ddlsim::tools::SweepFormat::csv;
            if (!report.empty()) return sweep_with_report(sweep_opts, report);
            return ddlsim::tools::run_sweep(sweep_opts, std::cerr);
        }
        if (check->parsed()) {
            const auto s = ddlsim::scenario::load_scenario_file(file, sets);
            if (print_resolved) {
                std::cout << ddlsim::scenario::resolved_scenario(s).dump(2) << "\n";
                return 0;
            }
            std::string jobs;
            for (const auto& j : s.jobs)
                jobs += fmt::format("{}{}: {} workers, model {}, {}", jobs.empty() ? "" : "; ", j.name, j.workers,
                                    j.model_name, ddlsim::scenario::describe_architecture(j));
            std::cout << fmt::format("{}: ok ({})\n", file, jobs);
            // The loader's own up-front estimate (what its limit checks), and the time it means at the measured rate.
            if (s.network_model == ddlsim::scenario::NetworkModel::flow) {
                std::cout << fmt::format(
                    "  estimate: about {:.3g} events on the flow model, roughly {} of "
                    "simulation\n",
                    ddlsim::scenario::estimated_events(s),
                    ddlsim::tools::duration_text(ddlsim::scenario::estimated_seconds(s)));
                // Flow classes (docs/MODEL.md): the estimate above is per class where the run may be symmetric.
                auto full = s;
                full.flow_classes = false;
                if (const double e = ddlsim::scenario::estimated_events(full);
                    e != ddlsim::scenario::estimated_events(s))
                    std::cout << fmt::format(
                        "  (per flow class, if the run proves symmetric; every transfer: about {:.3g} events, roughly "
                        "{})\n",
                        e, ddlsim::tools::duration_text(ddlsim::scenario::estimated_seconds(full)));
            }
            return 0;
        }
        if (app.got_subcommand("schema")) {
            std::cout << ddlsim::scenario::scenario_schema().dump(2) << "\n";
            return 0;
        }
        if (app.got_subcommand("models")) {
            std::cout << ddlsim::tools::catalog_listing();
            return 0;
        }
    } catch (const ddlsim::tools::CompareInputError& e) {
        std::cerr << ddlsim::tools::one_line(fmt::format("error: {}: {}: {}", e.file(), e.path(), e.what())) << "\n";
        return 2;
    } catch (const ScenarioError& e) {
        std::cerr << ddlsim::tools::one_line(fmt::format("error: {}: {}: {}", file, e.path(), e.what())) << "\n";
        return 2;
    } catch (const CliError& e) {
        std::cerr << ddlsim::tools::one_line(std::string("error: ") + e.what()) << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << ddlsim::tools::one_line(std::string("internal error: ") + e.what()) << "\n";
        return 1;
    }
    return 1;
}
