#include "scenarios/run.hpp"

#include <fmt/format.h>

#include <chrono>

#include "models/bsp_trainer.hpp"
#include "scenarios/json_reader.hpp"

namespace ddlsim::scenario {
namespace {
constexpr const char* kTooLong =
    "the simulated time exceeds what picosecond time can hold (about 106 days); "
    "simulate fewer iterations, a smaller batch or a faster device";
}  // namespace

RunResult run_scenario(const Scenario& s) {
    const auto t0 = std::chrono::steady_clock::now();
    topo::Fabric fabric;
    try {
        fabric = topo::build_fabric(s.topology);
    } catch (const std::invalid_argument& e) {
        throw ScenarioError("$.network", e.what());
    }
    models::TrainingJob job;
    job.workload = s.workload;
    job.workers = s.workers;
    job.batch_size = s.batch_size;
    job.iterations = s.iterations;
    job.bytes_per_param = s.bytes_per_param;
    job.architecture = s.architecture;
    try {
        job.compute = models::compute_profile(s.workload, s.device, s.batch_size, s.bytes_per_param);
    } catch (const std::invalid_argument& e) {
        throw ScenarioError("$.device", e.what());
    }
    for (const auto& h : s.placement) job.endpoint_hosts.push_back(*fabric.find(h));
    for (const auto& h : s.server_placement) job.endpoint_hosts.push_back(*fabric.find(h));

    RunResult r;
    try {
        if (s.network_model == NetworkModel::analytic) {
            r.job = models::simulate_analytic(fabric, job);
        } else {
            r.job = models::simulate_flow(fabric, job, r.events);
        }
    } catch (const std::overflow_error&) {
        throw ScenarioError("$.iterations", kTooLong);
    } catch (const std::out_of_range&) {
        throw ScenarioError("$.iterations", kTooLong);
    }
    r.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

std::string describe_architecture(const Scenario& s) {
    const auto& a = s.architecture;
    switch (a.kind) {
        case topo::ArchKind::allreduce: return "ring all-reduce";
        case topo::ArchKind::gossip: return "gossip (D-PSGD, ring graph)";
        case topo::ArchKind::ps:
            return fmt::format("parameter server ({} {} server{})", a.servers,
                               a.placement == topo::ServerPlacement::dedicated ? "dedicated" : "colocated",
                               a.servers == 1 ? "" : "s");
    }
    return "?";
}

nlohmann::json result_json(const Scenario& s, const RunResult& r) {
    const models::JobResult& j = r.job;
    nlohmann::json out{
        {"iteration_time_s", j.iteration_time_s},
        {"throughput_samples_per_s", j.throughput_samples_per_s},
        {"scaling_efficiency", j.scaling_efficiency},
        {"compute_time_s", j.compute_time_s},
        {"communication_time_s", j.communication_time_s},
        {"exposed_communication_time_s", j.exposed_communication_time_s},
        {"bytes_on_wire_per_iteration", j.bytes_on_wire_per_iteration},
        {"events", r.events},
        {"wall_time_s", r.wall_time_s},
        {"simulated_time_s", j.makespan_s},
        {"compute",
         {{"forward_s", j.forward_time_s}, {"backward_s", j.backward_time_s}, {"update_s", j.update_time_s}}},
        {"scenario",
         {{"workers", s.workers},
          {"model", s.model_name},
          {"parameters", s.workload.params()},
          {"gradient_bytes", static_cast<double>(s.workload.params()) * s.bytes_per_param},
          {"batch_size", s.batch_size},
          {"iterations", s.iterations},
          {"device", s.device.name},
          {"architecture", describe_architecture(s)},
          {"sync", "bsp"},
          {"network_model", s.network_model == NetworkModel::flow ? "flow" : "analytic"},
          {"seed", s.seed}}},
    };
    return out;
}

}  // namespace ddlsim::scenario
