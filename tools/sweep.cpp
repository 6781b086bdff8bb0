// `ddlsim sweep` (docs/CONTRACT.md §1): runs the product of the --vary values in parallel (threads, and MPI ranks
// when built with DDLSIM_HAVE_MPI), streams one CSV row per finished point (whole lines, flushed, so an
// interrupted sweep leaves a valid CSV), and finally rewrites the file sorted by point (temp + rename).
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <iostream>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>

#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tools/parallel_points.hpp"
#include "tools/sweep.hpp"
#include "tools/sweep_detail.hpp"
#include "tools/sweep_plot.hpp"
#include "tools/sweep_ranks.hpp"

namespace ddlsim::tools {

namespace sweep_detail {

json override_value(const std::string& text) {
    json tmp = json::object();
    scenario::apply_override(tmp, "v=" + text);
    return tmp["v"];
}

std::string row_line(const std::vector<std::string>& header, const SweepRow& row) {
    std::vector<std::string> fields;
    fields.reserve(header.size());
    for (const auto& c : header) {
        const auto it = row.cells.find(c);
        fields.push_back(it == row.cells.end() ? std::string() : it->second);
    }
    return csv_line(fields);
}

}  // namespace sweep_detail

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using sweep_detail::check_resume_identity;
using sweep_detail::journal_path;
using sweep_detail::journal_text;
using sweep_detail::meta_path;
using sweep_detail::Objective;
using sweep_detail::override_value;
using sweep_detail::Plan;
using sweep_detail::rank_rows;
using sweep_detail::resolve_objective;
using sweep_detail::resume_csv;
using sweep_detail::resume_json;
using sweep_detail::row_line;

// One finished point: its CSV rows, or its JSON object.
struct PointResult {
    std::size_t point = 0;
    bool failed = false;
    std::string error;
    std::vector<SweepRow> rows;
    json object;
};

PointResult compute_point(const Plan& plan, std::size_t index) {
    PointResult pr;
    pr.point = index;
    const auto values = point_values(plan.specs, index);
    json result;
    try {
        json j = plan.base;
        for (std::size_t k = 0; k < plan.specs.size(); ++k) apply_point_value(j, plan.specs[k], values[k]);
        const auto s = scenario::load_scenario(j, plan.base_dir);
        const auto run = scenario::run_scenario(s);
        result = scenario::result_json(s, run);
        if (plan.extra_keys) result.update(plan.extra_keys(s, run));
    } catch (const scenario::ScenarioError& e) {
        pr.failed = true;
        pr.error = one_line(fmt::format("{}: {}", e.path(), e.what()));
    } catch (const std::exception& e) {
        pr.failed = true;
        pr.error = one_line(fmt::format("internal error: {}", e.what()));
    }
    if (plan.format == SweepFormat::json) {
        json vals = json::object();
        for (std::size_t k = 0; k < plan.specs.size(); ++k) vals[plan.specs[k].path] = override_value(values[k]);
        pr.object = {{"point", index},
                     {"values", vals},
                     {"result", pr.failed ? json(nullptr) : result},
                     {"error", pr.failed ? json(pr.error) : json(nullptr)}};
        return pr;
    }
    auto base_row = [&] {
        SweepRow row;
        row.point = index;
        row.cells["point"] = std::to_string(index);
        for (std::size_t k = 0; k < plan.specs.size(); ++k) row.cells[plan.specs[k].path] = values[k];
        row.cells["error"] = pr.error;
        return row;
    };
    if (pr.failed) {
        pr.rows.push_back(base_row());
        return pr;
    }
    for (const auto& flat : flatten_result(result)) {
        SweepRow row = base_row();
        for (const auto& [k, v] : flat)
            if (!row.cells.contains(k)) row.cells[k] = cell_text(v);
        pr.rows.push_back(std::move(row));
    }
    return pr;
}

// Appends whole records with one write(2) each, so a kill leaves complete lines (at worst one cut-off last line,
// which --resume drops).
class Appender {
public:
    explicit Appender(const std::string& path) : fd_(::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC)) {
        if (fd_ < 0) throw SweepError(fmt::format("{}: cannot open for appending", path));
    }
    Appender(const Appender&) = delete;
    Appender& operator=(const Appender&) = delete;
    ~Appender() { ::close(fd_); }
    [[nodiscard]] bool write(std::string_view s) {
        while (!s.empty()) {
            const ssize_t n = ::write(fd_, s.data(), s.size());
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            s.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }

private:
    int fd_;
};

// Runs `todo` on `threads` threads; `sink` is called under a lock as each point finishes.
template <class Sink>
void run_points(const Plan& plan, const std::vector<std::size_t>& todo, unsigned threads, Sink&& sink) {
    std::mutex mu;
    parallel_for(todo.size(), threads, [&](std::size_t i) {
        PointResult pr = compute_point(plan, todo[i]);
        const std::lock_guard lock(mu);
        sink(std::move(pr));
    });
}

void check_out_path(const std::string& out) {
    if (out.empty()) throw SweepError("--out: required (the RESULTS.csv to write)");
    if (out == "-")
        throw SweepError(
            "--out -: a sweep writes its results file as it goes, so that an interrupted sweep can "
            "--resume; give a file name (and read it when the sweep ends)");
}

json point_to_json(const PointResult& pr) {
    json rows = json::array();
    for (const auto& r : pr.rows) rows.push_back(r.cells);
    return {{"p", pr.point}, {"f", pr.failed}, {"e", pr.error}, {"r", rows}, {"o", pr.object}};
}

PointResult point_from_json(const json& j) {
    PointResult pr;
    pr.point = j.at("p").get<std::size_t>();
    pr.failed = j.at("f").get<bool>();
    pr.error = j.at("e").get<std::string>();
    for (const auto& r : j.at("r")) pr.rows.push_back({pr.point, r.get<std::map<std::string, std::string>>()});
    pr.object = j.at("o");
    return pr;
}

// "jobs.0.workers" -> "$.jobs[0].workers": the JSON path the loader's errors name.
std::string json_path_of(const std::string& dotted) {
    std::string out = "$";
    std::size_t start = 0;
    while (start <= dotted.size()) {
        const auto dot = std::min(dotted.find('.', start), dotted.size());
        const std::string seg = dotted.substr(start, dot - start);
        const bool index =
            !seg.empty() && std::all_of(seg.begin(), seg.end(), [](char c) { return c >= '0' && c <= '9'; });
        out += index ? "[" + seg + "]" : "." + seg;
        start = dot + 1;
    }
    return out;
}

}  // namespace

void check_vary(const json& base, const std::string& base_dir, const std::vector<VarySpec>& specs,
                const std::vector<std::string>& labels) {
    for (std::size_t k = 0; k < specs.size(); ++k) {
        if (!specs[k].patches.empty()) continue;  // named variants: checked whole, below
        const std::string& what = labels[k];
        // A path that cannot be set at all (e.g. a key inside a number) is wrong for every point.
        json probe = base;
        try {
            scenario::apply_override(probe, specs[k].path + "=" + specs[k].values.front());
        } catch (const scenario::ScenarioError& e) {
            throw scenario::ScenarioError(what, fmt::format("{}: {}", e.path(), e.what()));
        }
        // A key the scenario schema (the key tables) does not declare is wrong for every point too.
        scenario::check_key_path(specs[k].path, what);
    }
    // Each value on the scenario as given: one the loader refuses at the varied key itself (a type, a range, an
    // unknown name) is wrong in every point that has it. Refusals elsewhere may depend on the other varied keys,
    // so those points run and report their error.
    // A variant's patch is wrong where the loader refuses a key the patch sets.
    for (std::size_t k = 0; k < specs.size(); ++k) {
        std::vector<std::string> at{json_path_of(specs[k].path)};
        std::set<std::string> seen;
        for (std::size_t i = 0; i < specs[k].values.size(); ++i) {
            const auto& v = specs[k].values[i];
            if (!seen.insert(v).second) continue;
            if (!specs[k].patches.empty()) {
                at.clear();
                for (const auto& [key, _] : specs[k].patches[i].items()) at.push_back("$." + key);
            }
            json j = base;
            apply_point_value(j, specs[k], v);
            try {
                (void)scenario::load_scenario(j, base_dir);
            } catch (const scenario::ScenarioError& e) {
                const std::string& p = e.path();
                if (std::any_of(at.begin(), at.end(), [&](const std::string& a) {
                        return p == a || p.starts_with(a + ".") || p.starts_with(a + "[");
                    }))
                    throw scenario::ScenarioError(
                        specs[k].patches.empty() ? labels[k] : "--variant " + v,
                        fmt::format("{} {}: {}: {}", specs[k].patches.empty() ? "the value" : "the variant", v,
                                    e.path(), e.what()));
            }
        }
    }
}

namespace {

// Builds the plan (every rank does this identically); throws SweepError / ScenarioError on bad input.
Plan make_plan(const SweepOptions& opts) {
    Plan plan;
    plan.file = opts.scenario_file;
    plan.format = opts.format;
    if (opts.vary.empty() && opts.variants.empty())
        throw SweepError("--vary: give at least one PATH=V1,V2,... (or --variant NAME=PATCH) to sweep");
    if (opts.jobs == 0) throw SweepError("--jobs: expected at least 1");
    std::vector<std::string> labels;
    if (!opts.variants.empty()) {
        plan.specs.push_back(variant_spec(opts.variants));
        labels.push_back("--variant " + opts.variants.front());
    }
    std::set<std::string> paths;
    for (const auto& v : opts.vary) {
        try {
            plan.specs.push_back(parse_vary(v));
        } catch (const CliError& e) {
            throw scenario::ScenarioError("--vary " + v, e.what());
        }
        if (!paths.insert(plan.specs.back().path).second)
            throw scenario::ScenarioError("--vary " + v, "this key is already varied by an earlier --vary");
    }
    plan.total = sweep_size(plan.specs);
    plan.base = scenario::read_json_file(opts.scenario_file);
    for (const auto& o : opts.sets) {  // the base of every point (and of the sweep's identity)
        scenario::apply_override(plan.base, o);
        scenario::check_key_path(o.substr(0, o.find('=')), "--set " + o);
    }
    plan.base_dir = fs::path(opts.scenario_file).parent_path().string();
    if (plan.base_dir.empty()) plan.base_dir = ".";
    for (const auto& v : opts.vary) labels.push_back("--vary " + v);
    {
        const scenario::InputFileLog inputs;  // the files the points read (profiles, topology files)
        check_vary(plan.base, plan.base_dir, plan.specs, labels);
        try {
            (void)scenario::load_scenario(plan.base, plan.base_dir);
        } catch (const scenario::ScenarioError&) {  // the base alone may lack what the varied keys supply
        }
        plan.inputs = inputs.files();
    }
    plan.multi_job = plan.base.is_object() && plan.base.contains("jobs") && plan.base["jobs"].is_array();
    plan.rows_per_point = plan.multi_job ? std::max<std::size_t>(1, plan.base["jobs"].size()) : 1;
    plan.header = {"point"};
    if (plan.multi_job) plan.header.emplace_back("job");
    for (const auto& s : plan.specs) plan.header.push_back(s.path);
    auto columns = result_columns();
    plan.extra_keys = opts.extra_keys;
    if (plan.base.is_object() && plan.base.contains("convergence"))
        columns.insert(columns.end(), opts.extra_columns.begin(), opts.extra_columns.end());
    for (const auto& c : columns)
        if (std::find(plan.header.begin(), plan.header.end(), c) == plan.header.end()) plan.header.push_back(c);
    plan.header.emplace_back("error");
    return plan;
}

std::string serialize_todo(const std::vector<std::size_t>& todo) {
    return json(todo).dump();
}

int sweep(const SweepOptions& opts, std::ostream& err, const Ranks& ranks) {
    const bool root = ranks.rank() == 0;
    Plan plan;
    std::vector<SweepRow> kept_rows;
    std::vector<json> kept_objects;
    std::vector<std::size_t> todo;
    Plotter plotter;
    Objective objective;
    // Set-up: validation everywhere, files on rank 0 only; rank 0's verdict decides for all.
    int status = 0;
    std::string message;
    try {
        plan = make_plan(opts);
        if (!opts.objective.empty()) {
            bool training = plan.base.is_object() && plan.base.contains("training");
            if (plan.multi_job)
                for (const auto& j : plan.base["jobs"])
                    training = training || (j.is_object() && j.contains("training"));
            for (const auto& v : plan.specs) training = training || v.path.find("training") != std::string::npos;
            objective = resolve_objective(opts.objective, training);
        }
        if (root) {
            // Every file the sweep writes is checked before any is touched: writable, none an input or another.
            check_out_path(opts.out);
            sim::FileRoles roles;
            roles.input(opts.scenario_file, "the scenario file");
            for (const auto& f : plan.inputs) roles.input(f, "a file the scenario reads");
            roles.output(opts.out, "--out");
            roles.output(meta_path(opts.out), "the sweep record (" + meta_path(opts.out) + ")");
            if (plan.format == SweepFormat::csv)
                roles.output(journal_path(opts.out), "the row journal (" + journal_path(opts.out) + ")");
            if (!opts.plot.empty()) {
                check_plot_path("--plot", opts.plot);
                roles.output(opts.plot, "--plot");
                roles.output(opts.plot_describe, "--plot-describe");
                if (!opts.relative_to.empty()) (void)resolve_relative_to(plan.specs, opts.relative_to);
                plotter = find_plotter("--plot", "plot_sweep.py", "DDLSIM_PLOT_SCRIPT");
            } else if (!opts.relative_to.empty()) {
                throw SweepError("--relative-to chooses the baseline of the plot; it needs --plot FILE.png");
            }
            for (const auto& [path, what] : opts.more_outputs) roles.output(path, what);
            roles.check();
            // The resume files are read and validated in full before anything is written.
            std::set<std::size_t> done;
            std::error_code ec;
            const bool resumed = opts.resume && fs::exists(opts.out, ec);
            if (resumed) {
                const json record = check_resume_identity(plan, opts.out);
                if (plan.format == SweepFormat::csv) kept_rows = resume_csv(plan, opts.out, record, done);
                if (plan.format == SweepFormat::json) kept_objects = resume_json(plan, opts.out, record, done);
            }
            // Now the files: the CSV (its header, or the rows kept), the record, the journal (its kept rows).
            if (plan.format == SweepFormat::csv) {
                std::string text = csv_line(plan.header);
                for (const auto& r : kept_rows) text += row_line(plan.header, r);
                write_file_atomically(opts.out, text);
                write_file_atomically(journal_path(opts.out), journal_text(kept_rows));
            }
            sweep_detail::write_sweep_record(plan, opts.out,
                                             plan.format == SweepFormat::csv ? sweep_detail::digests_of(kept_rows)
                                                                             : sweep_detail::digests_of(kept_objects));
            for (std::size_t p = 0; p < plan.total; ++p)
                if (!done.contains(p)) todo.push_back(p);
        }
    } catch (const scenario::ScenarioError& e) {
        status = 2;
        message = fmt::format("error: {}: {}: {}", opts.scenario_file, e.path(), e.what());
    } catch (const CliError& e) {
        status = 2;
        message = fmt::format("error: {}", e.what());
    }
    status = ranks.broadcast(status);
    if (status != 0) {
        if (root) err << one_line(message) << "\n";
        return status;
    }
    if (ranks.parallel()) {
        const json t = json::parse(ranks.broadcast(root ? serialize_todo(todo) : std::string()));
        todo.clear();
        for (const auto& v : t) {
            const auto p = v.get<std::size_t>();
            if (p % static_cast<std::size_t>(ranks.size()) == static_cast<std::size_t>(ranks.rank())) todo.push_back(p);
        }
        plan.header = json::parse(ranks.broadcast(root ? json(plan.header).dump() : std::string()))
                          .get<std::vector<std::string>>();
    }

    // The points: rank 0 streams its rows to the file as they finish; other ranks keep theirs for the gather.
    std::vector<PointResult> results;
    bool write_failed = false;
    {
        std::unique_ptr<Appender> appender, journal;
        if (root && plan.format == SweepFormat::csv) {
            appender = std::make_unique<Appender>(opts.out);
            journal = std::make_unique<Appender>(journal_path(opts.out));
        }
        auto journal_line = [&](const PointResult& pr) {
            if (!journal || pr.failed) return;
            if (!journal->write(sweep_detail::journal_line(pr.point, pr.rows) + "\n")) write_failed = true;
        };
        const bool terminal = ::isatty(STDERR_FILENO) != 0;
        Progress progress(root && opts.progress && (terminal || opts.force_progress), terminal, todo.size(), err);
        run_points(plan, todo, opts.jobs, [&](PointResult pr) {
            if (appender) {
                std::string text;
                for (const auto& r : pr.rows) text += row_line(plan.header, r);
                journal_line(pr);  // first: a row in the CSV always has its complete cells in the journal
                if (!appender->write(text)) write_failed = true;
            }
            results.push_back(std::move(pr));
            progress.update(results.size());
        });
        progress.update(results.size(), true);
        if (ranks.parallel()) {
            json mine = json::array();
            if (!root)
                for (const auto& pr : results) mine.push_back(point_to_json(pr));
            const auto all = ranks.gather(mine.dump());
            for (std::size_t r = 1; r < all.size(); ++r)
                for (const auto& j : json::parse(all[r])) {
                    PointResult pr = point_from_json(j);
                    if (appender) {
                        std::string text;
                        for (const auto& row : pr.rows) text += row_line(plan.header, row);
                        journal_line(pr);
                        if (!appender->write(text)) write_failed = true;
                    }
                    results.push_back(std::move(pr));
                }
        }
    }
    if (!root) return ranks.broadcast(0);
    // Rank 0 finishes; every rank returns its exit code (so a failure here cannot leave the others waiting).
    std::string ranking;
    auto finish = [&]() -> int {
        if (write_failed) {
            err << fmt::format("error: {}: writing a row failed (disk full?)\n", opts.out);
            return 1;
        }

        const bool any_kept = !kept_rows.empty() || !kept_objects.empty();
        // The final file, sorted by point, replaced atomically.
        std::sort(results.begin(), results.end(), [](const auto& a, const auto& b) { return a.point < b.point; });
        std::size_t failed = 0;
        const PointResult* first_failure = nullptr;
        for (const auto& pr : results)
            if (pr.failed && ++failed == 1) first_failure = &pr;
        if (plan.format == SweepFormat::csv) {
            std::vector<SweepRow> rows = std::move(kept_rows);
            for (auto& pr : results)
                for (auto& r : pr.rows) rows.push_back(std::move(r));
            std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.point < b.point; });
            std::vector<std::string> header = plan.header;  // plus any result key the probe did not know
            header.erase(std::find(header.begin(), header.end(), "error"));
            std::set<std::string> known(plan.header.begin(), plan.header.end());
            for (const auto& r : rows)
                for (const auto& [k, v] : r.cells)
                    if (known.insert(k).second) header.push_back(k);
            header.emplace_back("error");
            // The record first: a kill between the two leaves rows it vouches for, or the journal does.
            sweep_detail::write_sweep_record(plan, opts.out, sweep_detail::digests_of(rows));
            std::string text = csv_line(header);
            for (const auto& r : rows) text += row_line(header, r);
            write_file_atomically(opts.out, text);
            std::error_code rm;
            fs::remove(journal_path(opts.out), rm);  // the final CSV holds every column of every row
            if (!objective.column.empty()) ranking = rank_rows(objective, rows, plan.specs);
        } else {
            std::vector<json> objects = std::move(kept_objects);
            for (auto& pr : results) objects.push_back(std::move(pr.object));
            std::stable_sort(objects.begin(), objects.end(), [](const json& a, const json& b) {
                return a["point"].get<std::size_t>() < b["point"].get<std::size_t>();
            });
            sweep_detail::write_sweep_record(plan, opts.out, sweep_detail::digests_of(objects));
            write_file_atomically(opts.out, json(objects).dump(2) + "\n");
            if (!objective.column.empty()) {
                std::vector<SweepRow> rows;
                for (const json& o : objects) {
                    if (o["result"].is_null()) continue;
                    for (const auto& flat : flatten_result(o["result"])) {
                        SweepRow row;
                        row.point = o["point"].get<std::size_t>();
                        for (const auto& [k, v] : o["values"].items()) row.cells[k] = cell_text(v);
                        for (const auto& [k, v] : flat) row.cells.emplace(k, cell_text(v));
                        rows.push_back(std::move(row));
                    }
                }
                ranking = rank_rows(objective, rows, plan.specs);
            }
        }
        if (!ranking.empty()) (opts.report != nullptr ? *opts.report : std::cout) << ranking << std::flush;
        const bool none_succeeded = failed == results.size() && !any_kept;
        if (!opts.plot.empty() && none_succeeded)
            err << fmt::format("warning: no point succeeded, so {} was not drawn\n", opts.plot);
        if (!opts.plot.empty() && !none_succeeded) {
            const int rc = run_plotter(plotter, sweep_plot_args(plan.specs, opts));
            if (rc != 0) {
                err << fmt::format("internal error: {} {} failed (exit {})\n", plotter.python, plotter.script, rc);
                return 1;
            }
        }
        if (failed > 0) {
            err << one_line(
                       fmt::format("warning: {} of {} points failed (see the error column of {}); first: point {}: {}",
                                   failed, results.size(), opts.out, first_failure->point, first_failure->error))
                << "\n";
            return kSweepSomePointsFailed;
        }
        return 0;
    };
    int rc = 1;
    try {
        rc = finish();
    } catch (const CliError& e) {
        err << "error: " << one_line(e.what()) << "\n";
        rc = 2;
    } catch (const std::exception& e) {
        err << "internal error: " << one_line(e.what()) << "\n";
    }
    return ranks.broadcast(rc);
}

}  // namespace

int run_sweep(const SweepOptions& opts, std::ostream& err) {
    const Ranks ranks;
    try {
        return sweep(opts, err, ranks);
    } catch (const CliError& e) {
        err << "error: " << one_line(e.what()) << "\n";
        return 2;
    } catch (const std::exception& e) {
        err << "internal error: " << one_line(e.what()) << "\n";
        return 1;
    }
}

}  // namespace ddlsim::tools
