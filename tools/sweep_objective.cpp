// `ddlsim sweep --objective COLUMN`: the points ranked by one result column, the best printed with its runner-up.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "scenarios/json_reader.hpp"
#include "tools/sweep_detail.hpp"

namespace ddlsim::tools::sweep_detail {

namespace {

// The numeric columns a time to train adds (its result keys flattened, from time_to_train_json itself).
std::vector<std::string> training_columns() {
    models::TimeToTrain t;
    t.cost = t.cost_low = t.cost_high = t.energy_kwh = 0.0;
    t.epoch_samples = 1.0;
    t.fitted = models::NoiseScale{};
    std::map<std::string, json> flat;
    flatten_json(scenario::time_to_train_json(t), "", flat);
    std::vector<std::string> out;
    for (const auto& [k, v] : flat)
        if (v.is_number()) out.push_back(k);
    return out;
}

}  // namespace

Objective resolve_objective(const std::string& given, bool has_training) {
    Objective o;
    std::string name = given;
    if (name.starts_with("max:")) {
        o.maximise = true;
        name = name.substr(4);
    }
    std::vector<std::string> columns = result_columns();
    const std::vector<std::string> training = training_columns();
    columns.insert(columns.end(), training.begin(), training.end());
    // The detail keys also by their own name: "parts_s.evaluation" for "time_to_train.parts_s.evaluation".
    if (std::find(columns.begin(), columns.end(), name) == columns.end() &&
        std::find(training.begin(), training.end(), "time_to_train." + name) != training.end())
        name = "time_to_train." + name;
    if (std::find(columns.begin(), columns.end(), name) == columns.end())
        throw SweepError(
            fmt::format("--objective: \"{}\" is not a numeric result column{}; expected e.g. "
                        "time_to_train_s, cost, iteration_time_s or max:throughput_samples_per_s",
                        given, scenario::did_you_mean(name, columns)));
    if (std::find(training.begin(), training.end(), name) != training.end() && !has_training)
        throw SweepError(
            fmt::format("--objective {}: the scenario has no \"training\" block (expected one, e.g. "
                        "\"training\": {{\"samples_to_target\": \"builtin\"}})",
                        given));
    o.column = name;
    return o;
}

std::string rank_rows(const Objective& o, const std::vector<SweepRow>& rows, const std::vector<VarySpec>& specs) {
    struct Entry {
        double value;
        const SweepRow* row;
    };
    std::vector<Entry> ranked;
    for (const SweepRow& r : rows) {
        const auto it = r.cells.find(o.column);
        if (it == r.cells.end() || it->second.empty()) continue;
        double v = 0.0;
        const auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
        if (ec != std::errc{} || !std::isfinite(v)) continue;
        ranked.push_back({v, &r});
    }
    if (ranked.empty()) return fmt::format("objective {}: no point has a value (every point failed?)\n", o.column);
    std::stable_sort(ranked.begin(), ranked.end(), [&](const Entry& a, const Entry& b) {
        return o.maximise ? a.value > b.value : a.value < b.value;
    });
    const auto describe = [&](const Entry& e) {
        std::string values;
        for (const VarySpec& s : specs) {
            const auto it = e.row->cells.find(s.path);
            values +=
                fmt::format("{}{}={}", values.empty() ? "" : ", ", s.path, it == e.row->cells.end() ? "" : it->second);
        }
        const auto job = e.row->cells.find("job");
        if (job != e.row->cells.end() && !job->second.empty()) values += ", job " + job->second;
        return fmt::format("point {} ({}): {:.6g}", e.row->point, values, e.value);
    };
    std::string out = fmt::format("objective {} ({} of {} rows ranked, {})\n", o.column, ranked.size(), rows.size(),
                                  o.maximise ? "highest first" : "lowest first");
    out += "  best       " + describe(ranked[0]) + "\n";
    if (ranked.size() > 1) {
        const double gap =
            ranked[0].value != 0.0 ? (ranked[1].value - ranked[0].value) / std::abs(ranked[0].value) : 0.0;
        out += "  runner-up  " + describe(ranked[1]) + fmt::format(" ({:+.1f} %)\n", 100.0 * gap);
    }
    return out;
}

}  // namespace ddlsim::tools::sweep_detail
