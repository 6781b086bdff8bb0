#include "tools/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "tools/run_result.hpp"
#include "tools/sweep.hpp"

namespace ddlsim::tools {

namespace {

using nlohmann::json;

const char* const kStyle = R"(<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}
pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px;line-height:1.35}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f0f0f0}td.l,th.l{text-align:left}.legend span{display:inline-block;margin-right:1.5em}
.sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}
footer{margin-top:3em;font-size:12px;color:#777}
</style>)";

std::string page(const std::string& title, const std::string& body) {
    return fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n{}\n</head>\n"
        "<body>\n<h1>{}</h1>\n{}\n<footer>Written by ddlsim. Self-contained: no script, nothing fetched.</footer>\n"
        "</body>\n</html>\n",
        html_escape(title), kStyle, html_escape(title), body);
}

// The parts of one iteration as a stacked bar (they sum to the iteration time).
std::string breakdown_svg(const json& breakdown, double iteration) {
    static const std::pair<const char*, const char*> parts[] = {
        {"compute", "#4c78a8"}, {"codec", "#f58518"}, {"exposed_communication", "#e45756"}, {"waiting", "#bab0ac"}};
    const double width = 900.0;
    std::string bars, legend;
    double x = 0.0;
    for (const auto& [key, colour] : parts) {
        const double v = breakdown.value(key, 0.0);
        if (!(v > 0.0) || !(iteration > 0.0)) continue;
        const double w = width * v / iteration;
        bars += fmt::format(
            "<rect x=\"{:.2f}\" y=\"0\" width=\"{:.2f}\" height=\"28\" fill=\"{}\"><title>{}: {}"
            "</title></rect>",
            x, w, colour, key, duration_text(v));
        x += w;
        legend += fmt::format("<span><i class=\"sw\" style=\"background:{}\"></i>{} {} ({:.1f} %)</span>", colour,
                              html_escape(key), duration_text(v), 100.0 * v / iteration);
    }
    return fmt::format(
        "<svg width=\"{:.0f}\" height=\"28\" viewBox=\"0 0 {:.0f} 28\" role=\"img\" "
        "aria-label=\"time breakdown\">{}</svg>\n<p class=\"legend\">{}</p>\n",
        width, width, bars, legend);
}

std::string links_table(const json& links) {
    if (!links.is_object() || !links.contains("busiest") || links["busiest"].empty()) return "";
    std::string rows;
    for (const auto& l : links["busiest"]) {
        const double u = l.value("utilization", 0.0);
        rows += fmt::format(
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.1f} %</td><td class=\"l\"><svg width=\"200\" height=\"10\">"
            "<rect width=\"{:.1f}\" height=\"10\" fill=\"#4c78a8\"/></svg></td></tr>\n",
            html_escape(l.value("link", l.value("name", ""))), si_text(l.value("bytes", 0.0), "B"), 100.0 * u,
            200.0 * std::clamp(u, 0.0, 1.0));
    }
    return fmt::format(
        "<h2>Busiest links</h2>\n<p>Mean utilisation of the links in use: {:.1f} %.</p>\n"
        "<table><tr><th class=\"l\">link</th><th>bytes</th><th>utilisation</th><th class=\"l\"></th>"
        "</tr>\n{}</table>\n",
        100.0 * links.value("mean_utilization", 0.0), rows);
}

// A pipeline's tracks for the timeline: one row per stage (tensor, context and data rank 0 of each), its compute
// and, for up to 8 stages, its communication (the sends and receives between stages), labelled with the stage;
// empty for jobs without a pipeline or scenarios with several jobs.
struct Track {
    std::pair<long, long> key;  ///< (pid, tid) in the trace: job 0's ranks are pid 1, rank r's compute tid 2r
    std::string label;
};
std::vector<Track> pipeline_tracks(const scenario::Scenario& s) {
    if (s.jobs.size() != 1 || s.jobs.front().parallelism.pipeline <= 1) return {};
    const auto& job = s.jobs.front();
    const models::ParallelismSpec& par = job.parallelism;
    const std::vector<std::uint32_t> at = par.placement(job.workers);
    const std::uint32_t stages = std::min<std::uint32_t>(par.pipeline, 16);
    std::vector<Track> out;
    for (std::uint32_t st = 0; st < stages; ++st) {
        const std::uint32_t r = par.rank(st, 0, 0, 0);
        out.push_back({{1L, 2L * r}, fmt::format("stage {} (worker {}) compute", st, at[r])});
        if (par.pipeline <= 8) out.push_back({{1L, 2L * r + 1}, fmt::format("stage {} communication", st)});
    }
    return out;
}

// The first iteration of the trace: the tracks given (a pipeline's stages), or else up to 8 tracks of the workers
// and 4 of the links, one row each.
std::string timeline_svg(const std::string& trace_json, double iteration, const std::vector<Track>& wanted = {}) {
    if (trace_json.empty() || !(iteration > 0.0)) return "";
    const json t = json::parse(trace_json, nullptr, false);
    if (t.is_discarded() || !t.contains("traceEvents")) return "";
    std::map<std::pair<long, long>, std::string> names;
    for (const auto& e : t["traceEvents"])
        if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name")
            names[{e.value("pid", 0L), e.value("tid", 0L)}] = e["args"].value("name", "");
    // The window: the first iteration, or as much of it as a capped trace kept (spans stop where it filled up).
    double last_us = 0.0;
    for (const auto& e : t["traceEvents"])
        if (e.value("ph", "") == "X") last_us = std::max(last_us, e.value("ts", 0.0));
    const bool capped = t.contains("otherData") && t["otherData"].value("dropped_events", 0.0) > 0.0;
    const double end_us = capped ? std::min(iteration * 1e6, last_us) : iteration * 1e6;
    if (!(end_us > 0.0)) return "";
    std::map<std::pair<long, long>, std::vector<const json*>> tracks;
    for (const auto& e : t["traceEvents"])
        if (e.value("ph", "") == "X" && e.value("ts", 0.0) < end_us)
            tracks[{e.value("pid", 0L), e.value("tid", 0L)}].push_back(&e);
    std::vector<std::pair<long, long>> chosen;
    for (const Track& want : wanted)
        if (tracks.contains(want.key)) {
            chosen.push_back(want.key);
            names[want.key] = want.label;
        }
    const bool stages = !chosen.empty();  // the pipeline's rows, else the first tracks
    int workers = 0, links = 0;
    if (!stages)
        for (const auto& [key, _] : tracks) {
            const bool link = key.first >= 1000000;
            if (link ? links++ < 4 : workers++ < 8) chosen.push_back(key);
        }
    static const std::map<std::string, std::string> colours{{"forward", "#4c78a8"},  {"backward", "#72b7b2"},
                                                            {"update", "#54a24b"},   {"communication", "#e45756"},
                                                            {"transfer", "#f58518"}, {"codec", "#b279a2"}};
    const double label_w = 190.0, width = 900.0, row = 18.0;
    std::string svg;
    for (std::size_t i = 0; i < chosen.size(); ++i) {
        const double y = static_cast<double>(i) * row;
        svg +=
            fmt::format("<text x=\"0\" y=\"{:.0f}\" font-size=\"11\">{}</text>", y + 13, html_escape(names[chosen[i]]));
        for (const json* e : tracks[chosen[i]]) {
            const double x0 = e->value("ts", 0.0) / end_us, x1 = std::min(1.0, x0 + e->value("dur", 0.0) / end_us);
            const auto c = colours.find(e->value("cat", ""));
            svg += fmt::format(
                "<rect x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"{:.0f}\" "
                "fill=\"{}\"><title>{}</title></rect>",
                label_w + width * x0, y + 2, std::max(0.5, width * (x1 - x0)), row - 4,
                c == colours.end() ? "#999" : c->second, html_escape(e->value("name", "")));
        }
    }
    std::string legend;
    for (const auto& [cat, colour] : colours)
        legend += fmt::format("<span><i class=\"sw\" style=\"background:{}\"></i>{}</span>", colour, cat);
    // A time axis under the tracks: the window's start, quarters and end.
    const double top = row * static_cast<double>(chosen.size());
    svg += fmt::format("<line x1=\"{0:.0f}\" y1=\"{1:.0f}\" x2=\"{2:.0f}\" y2=\"{1:.0f}\" stroke=\"#555\"/>", label_w,
                       top + 2, label_w + width);
    for (int q = 0; q <= 4; ++q) {
        const double x = label_w + width * q / 4.0;
        svg += fmt::format(
            "<line x1=\"{0:.1f}\" y1=\"{1:.0f}\" x2=\"{0:.1f}\" y2=\"{2:.0f}\" stroke=\"#555\"/>"
            "<text x=\"{0:.1f}\" y=\"{3:.0f}\" font-size=\"11\" text-anchor=\"{4}\">{5}</text>",
            x, top + 2, top + 6, top + 18,
            q == 0   ? "start"
            : q == 4 ? "end"
                     : "middle",
            q == 0 ? std::string("0 s") : duration_text(end_us / 1e6 * q / 4.0));
    }
    const double h = top + 22;
    const std::string window = end_us < iteration * 1e6
                                   ? fmt::format(
                                         "The first {} of the first iteration (of {}; the excerpt keeps 200,000 "
                                         "spans)",
                                         duration_text(end_us / 1e6), duration_text(iteration))
                                   : fmt::format("The first iteration ({})", duration_text(iteration));
    return fmt::format(
        "<h2>{}</h2>\n<p>{}, {} tracks{}; the whole timeline is "
        "<code>ddlsim run --trace</code>'s, for Perfetto.</p>\n<svg width=\"{:.0f}\" height=\"{:.0f}\" "
        "viewBox=\"0 0 {:.0f} {:.0f}\">{}</svg>\n<p class=\"legend\">{}</p>\n",
        stages ? "Pipeline timeline" : "Timeline excerpt", window, chosen.size(),
        stages ? ", one row per stage (its tensor, context and data rank 0): the gaps are the bubble" : "",
        label_w + width, h, label_w + width, h, svg, legend);
}

// The assumptions behind a job's figures and where each came from.
std::string assumptions_table(const json& job) {
    const json& sc = job.value("scenario", json::object());
    const json& cm = sc.value("compute_model", json::object());
    std::vector<std::pair<std::string, std::string>> rows{
        {"model", fmt::format("{} ({} parameters)", sc.value("model", ""), sc.value("parameters", 0.0))},
        {"workers, device",
         fmt::format("{} x {}, batch {}", sc.value("workers", 0), sc.value("device", ""), sc.value("batch_size", 0))},
        {"precision", fmt::format("{} ({})", cm.value("precision", ""), cm.value("precision_source", ""))},
        {"optimizer", fmt::format("{} ({})", cm.value("optimizer", ""), cm.value("optimizer_source", ""))},
        {"sustained compute", fmt::format("matmul {:.3g} of {:.4g} TFLOPS, memory {:.3g} of {:.4g} GB/s ({})",
                                          cm.value("matmul_efficiency", 0.0), cm.value("peak_tflops", 0.0),
                                          cm.value("memory_efficiency", 0.0), cm.value("memory_bandwidth_gbps", 0.0),
                                          cm.value("efficiency_source", ""))},
        {"architecture", sc.value("architecture", "")},
        {"sync, compression, overlap",
         fmt::format("{}; {}; {}", sc.value("sync", ""), sc.value("compression", ""), sc.value("overlap", ""))},
        {"transport", fmt::format("{} ({})", sc.value("transport", ""), sc.value("transport_source", ""))},
        {"network model", sc.value("network_model", "")},
    };
    if (job.contains("time_to_train")) {
        const json& t = job["time_to_train"];
        rows.emplace_back("samples to target", t.value("samples_source", ""));
        if (t.contains("statistical_efficiency"))
            rows.emplace_back("statistical efficiency", t["statistical_efficiency"].dump());
    }
    std::string out = "<table>\n";
    for (const auto& [k, v] : rows)
        out += fmt::format("<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>\n", html_escape(k), html_escape(v));
    return out + "</table>\n";
}

std::string read_binary(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream buf;
    buf << in.rdbuf();
    return buf.str();
}

std::string base64(const std::string& bytes) {
    static const char* const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16U) |
                           (static_cast<unsigned char>(bytes[i + 1]) << 8U) | static_cast<unsigned char>(bytes[i + 2]);
        out += {digits[(v >> 18U) & 63U], digits[(v >> 12U) & 63U], digits[(v >> 6U) & 63U], digits[v & 63U]};
    }
    if (i < bytes.size()) {
        const bool two = i + 1 < bytes.size();
        const unsigned v =
            (static_cast<unsigned char>(bytes[i]) << 16U) | (two ? static_cast<unsigned char>(bytes[i + 1]) << 8U : 0U);
        out += {digits[(v >> 18U) & 63U], digits[(v >> 12U) & 63U], two ? digits[(v >> 6U) & 63U] : '=', '='};
    }
    return out;
}

std::string table_html(const std::vector<std::vector<std::string>>& records, std::size_t max_rows) {
    if (records.empty()) return "";
    std::string out = "<table>\n<tr>";
    for (const auto& h : records.front()) out += "<th>" + html_escape(h) + "</th>";
    out += "</tr>\n";
    for (std::size_t r = 1; r < records.size() && r <= max_rows; ++r) {
        out += "<tr>";
        for (const auto& c : records[r]) out += "<td>" + html_escape(c) + "</td>";
        out += "</tr>\n";
    }
    return out + "</table>\n";
}

}  // namespace

std::string html_escape(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

std::string run_report_html(const std::string& title, const scenario::Scenario& s, const json& result,
                            const std::string& summary, const std::string& trace_json) {
    std::string body = "<h2 id=\"summary\">Summary</h2>\n<pre>" + html_escape(summary) + "</pre>\n";
    const bool multi = result.contains("jobs");
    for (std::size_t i = 0; i < (multi ? result["jobs"].size() : 1); ++i) {
        const json& job = multi ? result["jobs"][i] : result;
        const std::string name = multi ? " — job " + s.jobs[i].name : "";
        const double t = job.value("iteration_time_s", 0.0);
        body += fmt::format("<h2>Where an iteration's {} go{}</h2>\n", duration_text(t), html_escape(name));
        body += breakdown_svg(job.value("time_breakdown_s", json::object()), t);
        body += fmt::format("<h2>Assumptions and their sources{}</h2>\n", html_escape(name));
        body += assumptions_table(job);
    }
    body += links_table(result.value("links", json::object()));
    const json& first = multi ? result["jobs"][0] : result;
    body += timeline_svg(trace_json, first.value("iteration_time_s", 0.0), pipeline_tracks(s));
    return page(title, body);
}

std::string compare_report_html(const std::string& title, const std::vector<json>& rows, const std::string& table) {
    std::string body = "<h2 id=\"summary\">Side by side</h2>\n<pre>" + html_escape(table) + "</pre>\n";
    for (const auto& r : rows) {
        const double t = r.value("iteration_time_s", 0.0);
        const double compute = r["compute_time_s"].is_number() ? r["compute_time_s"].get<double>() : 0.0;
        const double exposed =
            r["exposed_communication_time_s"].is_number() ? r["exposed_communication_time_s"].get<double>() : 0.0;
        body += fmt::format("<h2>{}: {}</h2>\n", html_escape(r.value("name", "")), duration_text(t));
        body += breakdown_svg({{"compute", compute},
                               {"exposed_communication", exposed},
                               {"waiting", std::max(0.0, t - compute - exposed)}},
                              t);
    }
    return page(title, body);
}

std::string sweep_report_html(const std::string& title, const std::string& csv_text, const std::string& plot_file,
                              const std::string& note) {
    const auto records = parse_csv(csv_text);
    std::string body =
        fmt::format("<h2 id=\"summary\">Sweep</h2>\n<p>{} rows.</p>\n", records.empty() ? 0 : records.size() - 1);
    if (!plot_file.empty()) {
        const std::string bytes = read_binary(plot_file);
        if (plot_file.ends_with(".svg"))
            body += "<h2>Plot</h2>\n<img alt=\"sweep plot\" src=\"data:image/svg+xml;base64," + base64(bytes) +
                    "\" style=\"max-width:100%\">\n";
        else
            body += "<h2>Plot</h2>\n<img alt=\"sweep plot\" src=\"data:image/png;base64," + base64(bytes) +
                    "\" style=\"max-width:100%\">\n";
    } else if (!note.empty()) {
        body += "<p>" + html_escape(note) + "</p>\n";
    }
    // The varied values and the headline columns of the first 200 rows (the CSV has every column).
    if (!records.empty()) {
        static const std::vector<std::string> headline{"iteration_time_s",
                                                       "throughput_samples_per_s",
                                                       "scaling_efficiency",
                                                       "exposed_communication_time_s",
                                                       "tokens_per_s",
                                                       "mfu",
                                                       "time_to_train_s",
                                                       "cost",
                                                       "error"};
        const auto& header = records.front();
        const auto iteration = std::find(header.begin(), header.end(), "iteration_time_s");
        std::vector<std::size_t> keep;
        for (std::size_t c = 0; c < header.size(); ++c)
            if (header.begin() + static_cast<std::ptrdiff_t>(c) < iteration ||
                std::find(headline.begin(), headline.end(), header[c]) != headline.end())
                keep.push_back(c);
        std::vector<std::vector<std::string>> cut;
        for (const auto& r : records) {
            std::vector<std::string> row;
            for (std::size_t c : keep) row.push_back(c < r.size() ? r[c] : "");
            cut.push_back(std::move(row));
        }
        body += "<h2>Rows</h2>\n" + table_html(cut, 200);
        if (records.size() > 201) body += fmt::format("<p>... {} more rows in the CSV.</p>\n", records.size() - 201);
    }
    return page(title, body);
}

}  // namespace ddlsim::tools
