#include "models/bsp_trainer.hpp"

#include <algorithm>

namespace ddlsim::models {

void finish_result(const TrainingJob& job, double makespan_s, JobResult& r) {
    r.makespan_s = makespan_s;
    r.iteration_time_s = makespan_s / job.iterations;
    r.forward_time_s = job.compute.fwd.seconds();
    r.backward_time_s = job.compute.bwd.seconds();
    r.update_time_s = job.compute.update.seconds();
    r.compute_time_s = job.compute.iteration().seconds();
    r.throughput_samples_per_s =
        r.iteration_time_s > 0.0 ? static_cast<double>(job.workers) * job.batch_size / r.iteration_time_s : 0.0;
    r.scaling_efficiency = r.iteration_time_s > 0.0 ? r.compute_time_s / r.iteration_time_s : 1.0;
}

namespace {

double wire_bytes(const sim::Plan& plan, const TrainingJob& job) {
    double total = 0.0;
    for (const auto& s : plan.steps)
        if (s.src != s.dst && job.endpoint_hosts[s.src] != job.endpoint_hosts[s.dst]) total += s.bytes.value();
    return total;
}

}  // namespace

BspTrainer::BspTrainer(sim::Engine& engine, sim::Network& network, const topo::Fabric& fabric, const TrainingJob& job)
    : engine_(engine),
      network_(network),
      fabric_(fabric),
      job_(job),
      plan_(topo::plan_round(job.architecture, job.workers, job.gradient_bytes())),
      wire_bytes_(wire_bytes(plan_, job)),
      workers_(job.workers) {}

void BspTrainer::start() {
    for (std::uint32_t w = 0; w < job_.workers; ++w) begin_iteration(w);
}

void BspTrainer::begin_iteration(std::uint32_t w) {
    Worker& worker = workers_[w];
    if (worker.iteration == job_.iterations) {
        worker.finished = engine_.now();
        return;
    }
    engine_.after(job_.compute.fwd + job_.compute.bwd, [this, w] { gradient_ready(w); });
}

void BspTrainer::gradient_ready(std::uint32_t w) {
    workers_[w].sync_started = engine_.now();
    round(workers_[w].iteration).runner->open(w);
}

BspTrainer::Round& BspTrainer::round(std::uint32_t iteration) {
    auto it = rounds_.find(iteration);
    if (it != rounds_.end()) return it->second;
    Round& r = rounds_[iteration];
    r.endpoints_left = plan_.endpoints;
    r.runner = std::make_unique<sim::DagRunner>(
        engine_, network_, plan_,
        [this](std::uint32_t a, std::uint32_t b) -> const sim::Route& {
            return fabric_.route(job_.endpoint_hosts[a], job_.endpoint_hosts[b]);
        },
        [this, iteration](std::uint32_t e) { endpoint_done(iteration, e); });
    for (std::uint32_t s = job_.workers; s < plan_.endpoints; ++s) r.runner->open(s);  // servers are always ready
    return r;
}

void BspTrainer::endpoint_done(std::uint32_t iteration, std::uint32_t e) {
    if (e < job_.workers) {
        Worker& worker = workers_[e];
        worker.sync_total += engine_.now() - worker.sync_started;
        engine_.after(job_.compute.update, [this, e] {
            ++workers_[e].iteration;
            begin_iteration(e);
        });
    }
    if (--rounds_[iteration].endpoints_left == 0)  // the runner is still on the stack: drop it later
        engine_.after(sim::Time::zero(), [this, iteration] { rounds_.erase(iteration); });
}

JobResult BspTrainer::result() const {
    JobResult r;
    sim::Time makespan;
    double sync = 0.0;
    for (const Worker& w : workers_) {
        makespan = std::max(makespan, w.finished);
        sync += w.sync_total.seconds();
    }
    finish_result(job_, makespan.seconds(), r);
    r.communication_time_s = sync / job_.workers / job_.iterations;
    r.exposed_communication_time_s = r.communication_time_s;  // no overlap: all of it is exposed
    r.bytes_on_wire_per_iteration = wire_bytes_;
    return r;
}

JobResult simulate_flow(const topo::Fabric& fabric, const TrainingJob& job, std::uint64_t& events) {
    sim::Engine engine;
    sim::Network network(engine);
    fabric.install(network);
    BspTrainer trainer(engine, network, fabric, job);
    trainer.start();
    engine.run();
    events = engine.events_processed();
    return trainer.result();
}

JobResult simulate_analytic(const topo::Fabric& fabric, const TrainingJob& job) {
    const sim::Plan plan = topo::plan_round(job.architecture, job.workers, job.gradient_bytes());
    const sim::Time comm = sim::alpha_beta_time(plan, [&](std::uint32_t a, std::uint32_t b) {
        const topo::Vertex ha = job.endpoint_hosts[a];
        const topo::Vertex hb = job.endpoint_hosts[b];
        if (ha == hb) return sim::PathCost{sim::Time::zero(), sim::Bandwidth{}, true};
        return sim::PathCost{fabric.path_latency(ha, hb), fabric.path_bandwidth(ha, hb), false};
    });
    JobResult r;
    finish_result(job, (job.compute.iteration() + comm).seconds() * job.iterations, r);
    r.communication_time_s = comm.seconds();
    r.exposed_communication_time_s = comm.seconds();
    r.bytes_on_wire_per_iteration = wire_bytes(plan, job);
    return r;
}

}  // namespace ddlsim::models
