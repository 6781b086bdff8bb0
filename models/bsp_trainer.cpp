#include "models/bsp_trainer.hpp"

#include <algorithm>
#include <unordered_map>

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

topo::CollectiveContext collective_context(const TrainingJob& job, const topo::Fabric& fabric) {
    topo::CollectiveContext ctx;
    ctx.workers = job.workers;
    ctx.bytes = job.gradient_bytes();
    ctx.seed = job.seed;
    for (auto l = job.workload.layers.rbegin(); l != job.workload.layers.rend(); ++l)
        for (auto t = l->tensors.rbegin(); t != l->tensors.rend(); ++t)
            ctx.tensor_bytes.push_back(static_cast<double>(t->params) * job.bytes_per_param);
    // Node ids, renumbered densely in order of first appearance among the workers.
    std::unordered_map<std::uint32_t, std::uint32_t> dense;
    for (std::uint32_t w = 0; w < job.workers; ++w) {
        const std::uint32_t node = fabric.node_of(job.endpoint_hosts[w]);
        ctx.node_of.push_back(dense.emplace(node, static_cast<std::uint32_t>(dense.size())).first->second);
    }
    return ctx;
}

namespace {

double wire_bytes(const topo::Collective& c, const TrainingJob& job) {
    return c.wire_bytes(
        [&](std::uint32_t a, std::uint32_t b) { return job.endpoint_hosts[a] != job.endpoint_hosts[b]; });
}

// The ECMP flow key of a connection: stable across iterations, distinct per job and pair.
std::uint64_t flow_key(const TrainingJob& job, std::uint32_t a, std::uint32_t b) {
    return job.seed * 0x9e3779b97f4a7c15ULL ^ (static_cast<std::uint64_t>(job.index) << 48) ^
           (static_cast<std::uint64_t>(a) << 24) ^ static_cast<std::uint64_t>(b);
}

}  // namespace

BspTrainer::BspTrainer(sim::Engine& engine, sim::Network& network, const topo::Fabric& fabric, const TrainingJob& job)
    : engine_(engine),
      network_(network),
      fabric_(fabric),
      job_(job),
      collective_(topo::make_collective(job.architecture, collective_context(job, fabric))),
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

const sim::Route& BspTrainer::route(std::uint32_t a, std::uint32_t b) const {
    return fabric_.route(job_.endpoint_hosts[a], job_.endpoint_hosts[b], flow_key(job_, a, b));
}

BspTrainer::Round& BspTrainer::round(std::uint32_t iteration) {
    auto it = rounds_.find(iteration);
    if (it != rounds_.end()) return it->second;
    Round& r = rounds_[iteration];
    r.endpoints_left = collective_->endpoints();
    r.runner = collective_->start_round(
        engine_, network_, [this](std::uint32_t a, std::uint32_t b) -> const sim::Route& { return route(a, b); },
        [this, iteration](std::uint32_t e) { endpoint_done(iteration, e); }, iteration);
    for (std::uint32_t s = job_.workers; s < collective_->endpoints(); ++s) r.runner->open(s);  // servers are ready
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
    if (--rounds_[iteration].endpoints_left == 0)  // the round is still on the stack: drop it later
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
    r.bytes_on_wire_per_iteration = wire_bytes(*collective_, job_);
    return r;
}

FlowRun simulate_flow(const topo::Fabric& fabric, const std::vector<TrainingJob>& jobs) {
    sim::Engine engine;
    sim::Network network(engine);
    fabric.install(network);
    std::vector<std::unique_ptr<BspTrainer>> trainers;
    for (const TrainingJob& job : jobs) trainers.push_back(std::make_unique<BspTrainer>(engine, network, fabric, job));
    for (auto& t : trainers) t->start();
    engine.run();
    FlowRun run;
    run.events = engine.events_processed();
    run.transfers = network.transfers_started();
    run.makespan_s = engine.now().seconds();
    for (auto& t : trainers) run.jobs.push_back(t->result());
    for (sim::LinkIndex l = 0; l < network.link_count(); ++l) run.links.push_back(network.stats(l));
    return run;
}

JobResult simulate_analytic(const topo::Fabric& fabric, const TrainingJob& job) {
    const auto collective = topo::make_collective(job.architecture, collective_context(job, fabric));
    const sim::Time comm = collective->alpha_beta([&](std::uint32_t a, std::uint32_t b) {
        const topo::Vertex ha = job.endpoint_hosts[a];
        const topo::Vertex hb = job.endpoint_hosts[b];
        if (ha == hb) return sim::PathCost{sim::Time::zero(), sim::Bandwidth{}, true};
        return sim::PathCost{fabric.path_latency(ha, hb), fabric.path_bandwidth(ha, hb), false};
    });
    JobResult r;
    finish_result(job, (job.compute.iteration() + comm).seconds() * job.iterations, r);
    r.communication_time_s = comm.seconds();
    r.exposed_communication_time_s = comm.seconds();
    r.bytes_on_wire_per_iteration = wire_bytes(*collective, job);
    return r;
}

}  // namespace ddlsim::models
