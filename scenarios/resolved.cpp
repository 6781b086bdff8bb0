#include "scenarios/resolved.hpp"

#include "scenarios/key_tables.hpp"

namespace ddlsim::scenario {

using nlohmann::json;

nlohmann::json resolved_scenario(const Scenario& s) {
    json out = root_keys().echo(s);
    out["network"] = network_echo(s);
    if (s.has_jobs_list) {
        out["jobs"] = json::array();
        for (const auto& j : s.jobs) out["jobs"].push_back(job_object_keys().echo(j));
    } else if (!s.jobs.empty()) {
        out.update(job_keys().echo(s.jobs.front()));
        if (s.jobs.front().convergence) out["convergence"] = convergence_keys().echo(*s.jobs.front().convergence);
    }
    return out;
}

}  // namespace ddlsim::scenario
