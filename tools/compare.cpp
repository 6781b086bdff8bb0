#include "tools/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "scenarios/run.hpp"
#include "tools/run_result.hpp"
#include "tools/sweep.hpp"

namespace ddlsim::tools {

namespace {

using nlohmann::json;

// A number of the flattened result, or null where the result has no such key.
json number_or_null(const std::map<std::string, json>& flat, const std::string& key) {
    const auto it = flat.find(key);
    return it == flat.end() || it->second.is_null() ? json(nullptr) : it->second;
}

// The scheme in words: architecture, then sync, compression and overlap where they are not the defaults.
std::string scheme_text(const json& d) {
    std::string out = d.value("architecture", "");
    const std::string sync = d.value("sync", ""), comp = d.value("compression", ""), ov = d.value("overlap", "");
    if (!sync.empty() && sync != "bsp") out += "; " + sync;
    if (!comp.empty() && comp != "none") out += "; " + comp;
    if (!ov.empty() && ov != "none") out += "; overlap " + ov;
    if (d.contains("parallelism")) out += "; " + d["parallelism"].get<std::string>();
    return out;
}

std::vector<json> rows_of(const std::string& name, const json& result) {
    std::vector<json> rows;
    const bool multi = result.contains("jobs");
    std::size_t index = 0;
    for (const auto& flat : flatten_result(result)) {
        const json& job = multi ? result["jobs"][index] : result;
        ++index;
        json row = json::object();
        row["name"] = name;
        if (multi) row["job"] = job["scenario"].value("name", "");
        row["scheme"] = scheme_text(job["scenario"]);
        const double t = job.value("iteration_time_s", 0.0);
        row["iteration_time_s"] = t;
        row["throughput_samples_per_s"] = number_or_null(flat, "throughput_samples_per_s");
        row["speedup"] = nullptr;  // set once every row is known
        row["tokens_per_s"] = number_or_null(flat, "tokens_per_s");
        row["mfu"] = number_or_null(flat, "mfu");
        row["tflops_per_gpu"] = number_or_null(flat, "tflops_per_gpu");
        row["hfu"] = number_or_null(flat, "hfu");
        row["bubble_fraction"] = number_or_null(flat, "bubble_fraction");
        row["compute_time_s"] = number_or_null(flat, "time_breakdown_s.compute");
        row["exposed_communication_time_s"] = number_or_null(flat, "exposed_communication_time_s");
        row["exposed_fraction"] = t > 0.0 ? json(job.value("exposed_communication_time_s", 0.0) / t) : json(nullptr);
        row["memory_per_gpu_bytes"] = number_or_null(flat, "memory_per_gpu_bytes.total");
        row["memory_fits"] = number_or_null(flat, "memory_fits");
        row["time_to_train_s"] = number_or_null(flat, "time_to_train_s");
        row["gpu_hours"] = number_or_null(flat, "gpu_hours");
        row["cost"] = number_or_null(flat, "cost");
        rows.push_back(std::move(row));
    }
    return rows;
}

// A rate without scientific notation: "67.05 samples/s", "274621 tokens/s".
std::string count_text(double v, const char* unit) {
    return v >= 1e4 ? fmt::format("{:.0f} {}", v, unit) : fmt::format("{:.4g} {}", v, unit);
}

}  // namespace

std::vector<CompareCase> compare_cases(const std::vector<CompareCase>& sources, const std::vector<std::string>& sets,
                                       const std::vector<std::pair<std::string, json>>& variants) {
    std::vector<CompareCase> out;
    for (const auto& src : sources) {
        CompareCase base = src;
        for (const auto& o : sets) {
            try {
                scenario::apply_override(base.scenario, o);
                scenario::check_key_path(o.substr(0, o.find('=')), "--set " + o);
            } catch (const scenario::ScenarioError& e) {
                throw CompareInputError(src.file, e);
            }
        }
        if (variants.empty()) {
            out.push_back(std::move(base));
            continue;
        }
        for (const auto& [name, patch] : variants) {
            CompareCase c = base;
            c.name = sources.size() == 1 ? name : src.name + "/" + name;
            c.file = src.file + " (variant " + name + ")";
            c.scenario.merge_patch(patch);
            out.push_back(std::move(c));
        }
    }
    std::set<std::string> names;
    for (const auto& c : out)
        if (!names.insert(c.name).second)
            throw CliError(
                fmt::format("two cases are named \"{}\"; give the variants or files distinct names", c.name));
    if (out.empty()) throw CliError("nothing to compare: give at least one scenario");
    return out;
}

std::vector<json> run_comparison(const std::vector<CompareCase>& cases, unsigned jobs,
                                 const std::function<void(const std::vector<scenario::Scenario>&)>& on_loaded) {
    std::vector<scenario::Scenario> loaded;
    loaded.reserve(cases.size());
    for (const auto& c : cases) {
        try {
            loaded.push_back(scenario::load_scenario(c.scenario, c.base_dir));
        } catch (const scenario::ScenarioError& e) {
            throw CompareInputError(c.file, e);
        }
    }
    if (on_loaded) on_loaded(loaded);
    std::vector<json> results(cases.size());
    parallel_for(cases.size(), jobs, [&](std::size_t i) {
        try {
            results[i] = run_full(loaded[i]).json;
        } catch (const scenario::ScenarioError& e) {
            throw CompareInputError(cases[i].file, e);
        }
    });
    std::vector<json> rows;
    for (std::size_t i = 0; i < cases.size(); ++i)
        for (auto& r : rows_of(cases[i].name, results[i])) rows.push_back(std::move(r));
    const double first = rows.front()["iteration_time_s"].get<double>();
    for (auto& r : rows) {
        const double t = r["iteration_time_s"].get<double>();
        r["speedup"] = t > 0.0 ? json(first / t) : json(nullptr);
    }
    return rows;
}

const std::vector<std::string>& compare_columns() {
    static const std::vector<std::string> columns{"iteration_time_s",
                                                  "throughput_samples_per_s",
                                                  "speedup",
                                                  "tokens_per_s",
                                                  "mfu",
                                                  "tflops_per_gpu",
                                                  "hfu",
                                                  "bubble_fraction",
                                                  "compute_time_s",
                                                  "exposed_communication_time_s",
                                                  "exposed_fraction",
                                                  "memory_per_gpu_bytes",
                                                  "memory_fits",
                                                  "time_to_train_s",
                                                  "gpu_hours",
                                                  "cost"};
    return columns;
}

std::string compare_table(const std::vector<json>& rows) {
    struct Line {
        const char* label;
        const char* key;
        std::string (*format)(const json&);
    };
    static const Line lines[] = {
        {"time per step", "iteration_time_s", [](const json& v) { return duration_text(v.get<double>()); }},
        {"throughput", "throughput_samples_per_s",
         [](const json& v) { return count_text(v.get<double>(), "samples/s"); }},
        {"speed-up over the first", "speedup", [](const json& v) { return fmt::format("{:.3f}x", v.get<double>()); }},
        {"tokens", "tokens_per_s", [](const json& v) { return count_text(v.get<double>(), "tokens/s"); }},
        {"MFU", "mfu", [](const json& v) { return fmt::format("{:.1f} %", 100.0 * v.get<double>()); }},
        {"model TFLOP/s per GPU", "tflops_per_gpu",
         [](const json& v) { return fmt::format("{:.1f}", v.get<double>()); }},
        {"HFU (with recomputation)", "hfu",
         [](const json& v) { return fmt::format("{:.1f} %", 100.0 * v.get<double>()); }},
        {"pipeline bubble", "bubble_fraction",
         [](const json& v) { return fmt::format("{:.1f} % of the step", 100.0 * v.get<double>()); }},
        {"compute (with overlap slowdown)", "compute_time_s",
         [](const json& v) { return duration_text(v.get<double>()); }},
        {"exposed communication", "exposed_communication_time_s",
         [](const json& v) { return duration_text(v.get<double>()); }},
        {"  of the step", "exposed_fraction",
         [](const json& v) { return fmt::format("{:.1f} %", 100.0 * v.get<double>()); }},
        {"memory per GPU", "memory_per_gpu_bytes", [](const json& v) { return si_text(v.get<double>(), "B"); }},
        {"fits in memory", "memory_fits", [](const json& v) { return std::string(v.get<bool>() ? "yes" : "NO"); }},
        {"time to train", "time_to_train_s", [](const json& v) { return duration_text(v.get<double>()); }},
        {"GPU-hours", "gpu_hours", [](const json& v) { return fmt::format("{:.4g}", v.get<double>()); }},
        {"cost", "cost", [](const json& v) { return fmt::format("{:.4g}", v.get<double>()); }},
    };
    const bool multi = std::any_of(rows.begin(), rows.end(), [](const json& r) { return r.contains("job"); });
    std::vector<std::string> heads;
    for (const auto& r : rows)
        heads.push_back(multi ? r["name"].get<std::string>() + ":" + r["job"].get<std::string>()
                              : r["name"].get<std::string>());
    std::vector<std::vector<std::string>> cells;  // [line][row]
    std::vector<std::string> labels;
    for (const auto& l : lines) {
        std::vector<std::string> c;
        bool any = false;
        for (const auto& r : rows) {
            const json& v = r[l.key];
            any = any || !v.is_null();
            c.push_back(v.is_null() ? "-" : l.format(v));
        }
        if (!any) continue;  // a figure no case has (tokens for images, time to train without a training block)
        labels.emplace_back(l.label);
        cells.push_back(std::move(c));
    }
    std::size_t label_w = 0;
    for (const auto& l : labels) label_w = std::max(label_w, l.size());
    std::vector<std::size_t> w(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        w[i] = heads[i].size();
        for (const auto& c : cells) w[i] = std::max(w[i], c[i].size());
    }
    std::string out = fmt::format("  {:<{}}", "", label_w);
    for (std::size_t i = 0; i < rows.size(); ++i) out += fmt::format("  {:>{}}", heads[i], w[i]);
    out += "\n";
    for (std::size_t k = 0; k < labels.size(); ++k) {
        out += fmt::format("  {:<{}}", labels[k], label_w);
        for (std::size_t i = 0; i < rows.size(); ++i) out += fmt::format("  {:>{}}", cells[k][i], w[i]);
        out += "\n";
    }
    out += "\n  schemes\n";
    for (std::size_t i = 0; i < rows.size(); ++i)
        out += fmt::format("    {}: {}\n", heads[i], rows[i]["scheme"].get<std::string>());
    return out;
}

std::string compare_csv(const std::vector<json>& rows) {
    const bool multi = std::any_of(rows.begin(), rows.end(), [](const json& r) { return r.contains("job"); });
    std::vector<std::string> header{"name"};
    if (multi) header.emplace_back("job");
    header.emplace_back("scheme");
    for (const auto& c : compare_columns()) header.push_back(c);
    std::string out = csv_line(header);
    for (const auto& r : rows) {
        std::vector<std::string> fields;
        for (const auto& h : header) fields.push_back(r.contains(h) ? cell_text(r[h]) : std::string());
        out += csv_line(fields);
    }
    return out;
}

}  // namespace ddlsim::tools
