#include "scenarios/run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "models/bsp_trainer.hpp"
#include "scenarios/json_reader.hpp"
#include "scenarios/schema_tables.hpp"

namespace ddlsim::scenario {
namespace {

constexpr const char* kTooLong =
    "the simulated time exceeds what picosecond time can hold (about 106 days); "
    "simulate fewer iterations, a smaller batch or a faster device";
constexpr std::size_t kBusiestLinks = 5;

models::TrainingJob make_job(const Scenario& s, std::size_t index, const topo::Fabric& fabric) {
    const JobSpec& j = s.jobs[index];
    const std::string path = s.has_jobs_list ? fmt::format("$.jobs[{}].device", index) : "$.device";
    models::TrainingJob job;
    job.workload = j.workload;
    job.workers = j.workers;
    job.batch_size = j.batch_size;
    job.iterations = s.iterations;
    job.bytes_per_param = j.bytes_per_param;
    job.architecture = j.architecture;
    job.index = static_cast<std::uint32_t>(index);
    job.seed = s.seed;
    try {
        job.compute = models::compute_profile(j.workload, j.device, j.batch_size, j.bytes_per_param);
    } catch (const std::invalid_argument& e) {
        throw ScenarioError(path, e.what());
    }
    for (const auto& h : j.placement) job.endpoint_hosts.push_back(*fabric.find(h));
    for (const auto& h : j.server_placement) job.endpoint_hosts.push_back(*fabric.find(h));
    return job;
}

void link_loads(const topo::Fabric& fabric, const models::FlowRun& run, RunResult& r) {
    std::vector<LinkLoad> loads;
    double total = 0.0;
    for (sim::LinkIndex l = 0; l < run.links.size(); ++l) {
        if (run.links[l].bytes <= 0.0) continue;
        const double capacity = fabric.link_info(l / 2).bandwidth.bytes_per_s();
        const double u = run.makespan_s > 0.0 ? run.links[l].bytes / (capacity * run.makespan_s) : 0.0;
        loads.push_back({fabric.directed_link_name(l), run.links[l].bytes, u});
        total += u;
    }
    r.mean_link_utilization = loads.empty() ? 0.0 : total / static_cast<double>(loads.size());
    const std::size_t top = std::min(kBusiestLinks, loads.size());
    std::partial_sort(loads.begin(), loads.begin() + static_cast<std::ptrdiff_t>(top), loads.end(),
                      [](const LinkLoad& a, const LinkLoad& b) {
                          return a.utilization != b.utilization ? a.utilization > b.utilization : a.name < b.name;
                      });
    loads.resize(top);
    r.busiest_links = std::move(loads);
}

nlohmann::json job_json(const Scenario& s, const JobSpec& spec, const models::JobResult& j) {
    return {
        {"iteration_time_s", j.iteration_time_s},
        {"throughput_samples_per_s", j.throughput_samples_per_s},
        {"scaling_efficiency", j.scaling_efficiency},
        {"compute_time_s", j.compute_time_s},
        {"communication_time_s", j.communication_time_s},
        {"exposed_communication_time_s", j.exposed_communication_time_s},
        {"bytes_on_wire_per_iteration", j.bytes_on_wire_per_iteration},
        {"compute",
         {{"forward_s", j.forward_time_s}, {"backward_s", j.backward_time_s}, {"update_s", j.update_time_s}}},
        {"scenario",
         {{"name", spec.name},
          {"workers", spec.workers},
          {"model", spec.model_name},
          {"parameters", spec.workload.params()},
          {"gradient_bytes", static_cast<double>(spec.workload.params()) * spec.bytes_per_param},
          {"batch_size", spec.batch_size},
          {"iterations", s.iterations},
          {"device", spec.device.name},
          {"architecture", describe_architecture(spec)},
          {"sync", "bsp"},
          {"network_model", s.network_model == NetworkModel::flow ? "flow" : "analytic"},
          {"seed", s.seed}}},
    };
}

}  // namespace

RunResult run_scenario(const Scenario& s) {
    const auto t0 = std::chrono::steady_clock::now();
    topo::Fabric fabric;
    try {
        fabric = topo::build_fabric(s.topology);
        fabric.set_routing(s.routing);
    } catch (const std::invalid_argument& e) {
        throw ScenarioError("$.network", e.what());
    }
    std::vector<models::TrainingJob> jobs;
    for (std::size_t i = 0; i < s.jobs.size(); ++i) jobs.push_back(make_job(s, i, fabric));

    RunResult r;
    try {
        if (s.network_model == NetworkModel::analytic) {
            for (const auto& job : jobs) {
                r.jobs.push_back(models::simulate_analytic(fabric, job));
                r.simulated_time_s = std::max(r.simulated_time_s, r.jobs.back().makespan_s);
            }
        } else {
            const models::FlowRun run = models::simulate_flow(fabric, jobs);
            r.jobs = run.jobs;
            r.events = run.events;
            r.transfers = run.transfers;
            r.simulated_time_s = run.makespan_s;
            link_loads(fabric, run, r);
        }
    } catch (const std::overflow_error&) {
        throw ScenarioError("$.iterations", kTooLong);
    } catch (const std::out_of_range&) {
        throw ScenarioError("$.iterations", kTooLong);
    }
    r.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

std::string describe_architecture(const JobSpec& j) {
    const auto& a = j.architecture;
    const auto& c = tables().choices;
    switch (a.kind) {
        case topo::ArchKind::allreduce: {
            std::string out = c.algorithms[static_cast<std::size_t>(a.algorithm)] + " all-reduce";
            if (a.segment_size.value() > 0.0) out += fmt::format(" ({:.4g} MB segments)", a.segment_size.value() / 1e6);
            return out;
        }
        case topo::ArchKind::gossip:
            return fmt::format("gossip (D-PSGD, {} graph)", c.gossip_graphs[static_cast<std::size_t>(a.graph)]);
        case topo::ArchKind::ps: {
            if (a.style == topo::PsStyle::byteps)
                return fmt::format("BytePS ({} CPU summation server{} + every worker host)", a.servers,
                                   a.servers == 1 ? "" : "s");
            std::string out = fmt::format("parameter server ({} {} server{}", a.servers,
                                          a.placement == topo::ServerPlacement::dedicated ? "dedicated" : "colocated",
                                          a.servers == 1 ? "" : "s");
            if (a.sharding != topo::PsSharding::bytes)
                out += ", " + c.ps_shardings[static_cast<std::size_t>(a.sharding)] + " sharding";
            if (a.per_tensor) out += ", per-tensor push/pull";
            return out + ")";
        }
    }
    return "?";
}

nlohmann::json result_json(const Scenario& s, const RunResult& r) {
    nlohmann::json out;
    if (s.has_jobs_list) {
        out["jobs"] = nlohmann::json::array();
        for (std::size_t i = 0; i < s.jobs.size(); ++i) out["jobs"].push_back(job_json(s, s.jobs[i], r.jobs[i]));
    } else {
        out = job_json(s, s.jobs.front(), r.jobs.front());
    }
    out["events"] = r.events;
    out["transfers"] = r.transfers;
    out["wall_time_s"] = r.wall_time_s;
    out["simulated_time_s"] = r.simulated_time_s;
    if (s.network_model == NetworkModel::flow) {
        nlohmann::json busiest = nlohmann::json::array();
        for (const auto& l : r.busiest_links)
            busiest.push_back({{"link", l.name}, {"bytes", l.bytes}, {"utilization", l.utilization}});
        out["links"] = {{"mean_utilization", r.mean_link_utilization}, {"busiest", busiest}};
    }
    return out;
}

}  // namespace ddlsim::scenario
