// `--report R.html` of run, compare and sweep: one self-contained HTML page (inline CSS and SVG, images as data
// URIs, no script and no network fetch) with what a reader needs to judge a prediction: the summary, the time
// breakdown as a bar, the busiest links, a timeline excerpt, the assumptions and their sources, and for sweeps
// the plot and the rows.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.hpp"

namespace ddlsim::tools {

/// `ddlsim run --report`: `result` is the result JSON, `summary` the printed text, `trace_json` a Chrome trace of
/// the run (the timeline excerpt draws its first iteration; empty: no excerpt).
[[nodiscard]] std::string run_report_html(const std::string& title, const scenario::Scenario& s,
                                          const nlohmann::json& result, const std::string& summary,
                                          const std::string& trace_json);
/// `ddlsim compare --report`: the rows of run_comparison and the printed table.
[[nodiscard]] std::string compare_report_html(const std::string& title, const std::vector<nlohmann::json>& rows,
                                              const std::string& table);
/// `ddlsim sweep --report`: the results file's CSV text, and the plot file (PNG or SVG; empty: none, with `note`
/// saying why).
[[nodiscard]] std::string sweep_report_html(const std::string& title, const std::string& csv_text,
                                            const std::string& plot_file, const std::string& note);

/// `text` with &, <, >, " and ' escaped for HTML.
[[nodiscard]] std::string html_escape(const std::string& text);

}  // namespace ddlsim::tools
