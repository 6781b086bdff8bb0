// ddlsim._ddlsim: the native half of the Python module (tools/python/src/ddlsim/__init__.py is the documented API).
// Scenarios arrive as JSON text with the directory their relative file names resolve in; results leave as JSON
// text; bad input raises the ScenarioError class the package registers (message, JSON path, file). The GIL is
// released while loading and simulating, so Python threads (and the sweep's own threads) run in parallel.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "scenarios/resolved.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "tools/compare.hpp"
#include "tools/plan.hpp"
#include "tools/run_result.hpp"
#include "tools/summary.hpp"
#include "tools/sweep.hpp"

namespace py = pybind11;
using nlohmann::json;
namespace sc = ddlsim::scenario;
namespace tl = ddlsim::tools;

namespace {

py::object g_scenario_error;  // ddlsim.ScenarioError, set by the package at import

// One scenario as the package hands it over.
struct Input {
    std::string text;      ///< scenario JSON
    std::string base_dir;  ///< relative file names inside it resolve here
    std::string file;      ///< for messages: the path, or "<dict>" / "<string>"
};

[[noreturn]] void raise_scenario_error(const std::string& file, const std::string& path, const std::string& message) {
    py::object err =
        g_scenario_error.is_none() ? py::object(py::module_::import("builtins").attr("ValueError")) : g_scenario_error;
    py::object e =
        g_scenario_error.is_none() ? err(fmt::format("{}: {}: {}", file, path, message)) : err(message, path, file);
    PyErr_SetObject(err.ptr(), e.ptr());
    throw py::error_already_set();
}

// Runs `body` without the GIL and turns bad input into ScenarioError (ValueError for other command-line-style
// input errors); anything else surfaces as RuntimeError.
template <typename Body>
auto guarded(const std::string& file, Body body) -> decltype(body()) {
    std::string err_file, err_path, err_message;
    try {
        py::gil_scoped_release release;
        return body();
    } catch (const tl::CompareInputError& e) {
        err_file = e.file(), err_path = e.path(), err_message = e.what();
    } catch (const sc::ScenarioError& e) {
        err_file = file, err_path = e.path(), err_message = e.what();
    } catch (const ddlsim::sim::CliError& e) {
        err_file = file, err_path = "", err_message = e.what();
    }
    raise_scenario_error(err_file, err_path, err_message);
}

// The scenario JSON: read from `file` when no text came (a path), else parsed from the text.
json scenario_json(const Input& in) {
    if (in.text.empty()) return sc::read_json_file(in.file);
    try {
        return json::parse(in.text);
    } catch (const json::parse_error& e) {
        throw sc::ScenarioError("$", fmt::format("expected a JSON scenario ({})", e.what()));
    }
}

sc::Scenario load(const Input& in, const std::vector<std::string>& sets) {
    json j = scenario_json(in);
    for (const auto& o : sets) {
        sc::apply_override(j, o);
        sc::check_key_path(o.substr(0, o.find('=')), "set " + o);
    }
    return sc::load_scenario(j, in.base_dir);
}

Input input(const std::string& text, const std::string& base_dir, const std::string& file) {
    return {text, base_dir.empty() ? "." : base_dir, file};
}

}  // namespace

PYBIND11_MODULE(_ddlsim, m) {
    m.doc() = "native half of the ddlsim Python module; use the functions of the ddlsim package";

    m.def("_set_error_class", [](py::object cls) { g_scenario_error = std::move(cls); });

    m.def(
        "run",
        [](const std::string& text, const std::string& base_dir, const std::string& file,
           const std::vector<std::string>& sets) {
            const auto in = input(text, base_dir, file);
            return guarded(file, [&] { return tl::run_full(load(in, sets)).json.dump(); });
        },
        py::arg("text"), py::arg("base_dir"), py::arg("file"), py::arg("sets"));

    m.def(
        "summary",
        [](const std::string& text, const std::string& base_dir, const std::string& file,
           const std::vector<std::string>& sets) {
            const auto in = input(text, base_dir, file);
            return guarded(file, [&] {
                const auto s = load(in, sets);
                return tl::run_summary(file, s, tl::run_full(s).result, sets);
            });
        },
        py::arg("text"), py::arg("base_dir"), py::arg("file"), py::arg("sets"));

    m.def(
        "check",
        [](const std::string& text, const std::string& base_dir, const std::string& file,
           const std::vector<std::string>& sets) {
            const auto in = input(text, base_dir, file);
            return guarded(file, [&] { return sc::resolved_scenario(load(in, sets)).dump(); });
        },
        py::arg("text"), py::arg("base_dir"), py::arg("file"), py::arg("sets"));

    // One flattened row per point (and job): "point", the varied keys (their values as JSON text), the result
    // columns, "error" (empty when the point ran). Every --vary key and value is checked before any point runs.
    m.def(
        "sweep",
        [](const std::string& text, const std::string& base_dir, const std::string& file,
           const std::vector<std::string>& sets, const std::vector<std::string>& vary,
           const std::vector<std::string>& variants, unsigned jobs) {
            const auto in = input(text, base_dir, file);
            return guarded(file, [&] {
                json base = scenario_json(in);
                for (const auto& o : sets) {
                    sc::apply_override(base, o);
                    sc::check_key_path(o.substr(0, o.find('=')), "set " + o);
                }
                if (vary.empty() && variants.empty())
                    throw ddlsim::sim::CliError("vary: give at least one key and its values (or variants)");
                std::vector<tl::VarySpec> specs;
                std::vector<std::string> labels;
                if (!variants.empty()) {
                    specs.push_back(tl::variant_spec(variants));
                    labels.push_back("variants");
                }
                for (const auto& v : vary) {
                    try {
                        specs.push_back(tl::parse_vary(v));
                    } catch (const ddlsim::sim::CliError& e) {
                        throw sc::ScenarioError("vary " + v, e.what());
                    }
                }
                for (const auto& v : vary) labels.push_back("vary " + v);
                tl::check_vary(base, in.base_dir, specs, labels);
                const std::size_t total = tl::sweep_size(specs);
                std::vector<json> points(total);
                tl::parallel_for(total, jobs, [&](std::size_t p) {
                    const auto values = tl::point_values(specs, p);
                    json row = json::object();
                    row["point"] = p;
                    for (std::size_t k = 0; k < specs.size(); ++k) row[specs[k].path] = values[k];
                    json rows = json::array();
                    try {
                        json j = base;
                        for (std::size_t k = 0; k < specs.size(); ++k) tl::apply_point_value(j, specs[k], values[k]);
                        const auto full = tl::run_full(sc::load_scenario(j, in.base_dir));
                        for (const auto& flat : tl::flatten_result(full.json)) {
                            json r = row;
                            for (const auto& [key, value] : flat)
                                if (!r.contains(key)) r[key] = value;
                            r["error"] = "";
                            rows.push_back(std::move(r));
                        }
                    } catch (const sc::ScenarioError& e) {
                        row["error"] = tl::one_line(fmt::format("{}: {}", e.path(), e.what()));
                        rows.push_back(row);
                    }
                    points[p] = std::move(rows);
                });
                json all = json::array();
                for (auto& p : points)
                    for (auto& r : p) all.push_back(std::move(r));
                return all.dump();
            });
        },
        py::arg("text"), py::arg("base_dir"), py::arg("file"), py::arg("sets"), py::arg("vary"), py::arg("variants"),
        py::arg("jobs"));

    // `ddlsim plan`: every candidate's row (as --out writes them, ranked first) as JSON text, and the report.
    m.def(
        "plan",
        [](const std::string& text, const std::string& base_dir, const std::string& file,
           const std::vector<std::string>& sets, const std::string& objective, std::size_t top, unsigned jobs,
           std::uint32_t max_tensor, bool exhaustive) {
            const auto in = input(text, base_dir, file);
            return guarded(file, [&] {
                tl::PlanOptions o;
                o.scenario_file = file;
                o.sets = sets;
                o.objective = objective;
                o.top = top;
                o.jobs = jobs;
                o.max_tensor = max_tensor;
                o.exhaustive = exhaustive;
                o.progress = false;
                std::ostringstream quiet;
                const tl::PlanSearch p = tl::plan_search(scenario_json(in), in.base_dir, o, quiet);
                return std::tuple<std::string, std::vector<std::string>, std::string>(
                    json(tl::plan_rows(p)).dump(), tl::plan_columns(p), tl::plan_report(p, top));
            });
        },
        py::arg("text"), py::arg("base_dir"), py::arg("file"), py::arg("sets"), py::arg("objective"), py::arg("top"),
        py::arg("jobs"), py::arg("max_tensor"), py::arg("exhaustive"));

    // Cases: (name, text, base_dir, file); variants: (name, patch JSON text).
    m.def(
        "compare",
        [](const std::vector<std::tuple<std::string, std::string, std::string, std::string>>& cases,
           const std::vector<std::string>& sets, const std::vector<std::pair<std::string, std::string>>& variants,
           unsigned jobs) {
            return guarded("", [&] {
                std::vector<tl::CompareCase> sources;
                for (const auto& [name, text, dir, file] : cases) {
                    const auto in = input(text, dir, file);
                    try {
                        sources.push_back({name, file, scenario_json(in), in.base_dir});
                    } catch (const sc::ScenarioError& e) {
                        throw tl::CompareInputError(file, e);
                    }
                }
                std::vector<std::pair<std::string, json>> patches;
                for (const auto& [name, patch] : variants) patches.push_back(tl::parse_variant(name + "=" + patch));
                const auto rows = tl::run_comparison(tl::compare_cases(sources, sets, patches), jobs);
                return std::pair<std::string, std::string>(json(rows).dump(), tl::compare_table(rows));
            });
        },
        py::arg("cases"), py::arg("sets"), py::arg("variants"), py::arg("jobs"));

    m.def("schema", [] { return sc::scenario_schema().dump(); });
    m.def("catalog", [] { return tl::catalog_json().dump(); });
    m.def("compare_columns", [] { return tl::compare_columns(); });
    m.def("result_columns", [] { return tl::result_columns(); });
}
