// The trainers' shared pieces, the run driver and the closed form.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>
#include <unordered_map>

#include "models/stragglers.hpp"
#include "models/trainer_detail.hpp"
#include "sim/rng.hpp"

namespace ddlsim::models {

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
    // Ring channels: one per link the first node's workers spread over to reach their rank-mates on the second node (a
    // NIC per GPU, or k NICs each serving m / k GPUs); with one NIC every channel would cross it, so one ring moves as
    // much.
    std::vector<std::vector<std::uint32_t>> by_node;
    for (std::uint32_t w = 0; w < job.workers && by_node.size() <= 2; ++w) {
        if (ctx.node_of[w] >= by_node.size()) by_node.resize(ctx.node_of[w] + 1);
        if (ctx.node_of[w] < 2) by_node[ctx.node_of[w]].push_back(w);
    }
    if (by_node.size() >= 2 && by_node[0].size() >= 2 && by_node[0].size() == by_node[1].size()) {
        const std::size_t m = by_node[0].size();
        std::unordered_map<sim::LinkIndex, std::size_t> used;
        std::size_t most = 0;
        for (std::size_t j = 0; j < m; ++j)
            for (sim::LinkIndex l : fabric.route(job.endpoint_hosts[by_node[0][j]], job.endpoint_hosts[by_node[1][j]]))
                most = std::max(most, ++used[l]);
        ctx.ring_channels = static_cast<std::uint32_t>(m % most == 0 ? m / most : m);
    }
    // In-network reduction: the nodes' reducing switches follow the workers among the endpoints (nvls,
    // reducing_switches), the rails' SHARP switches come last (collnet, sharp_switches).
    // Switch aggregation: the SHARP switch every worker reaches is the last endpoint (scenarios/run.cpp).
    if (summing_switch(job, fabric)) ctx.aggregation_switch = static_cast<std::uint32_t>(job.endpoint_hosts.size() - 1);
    if (job.architecture.kind == topo::ArchKind::allreduce) {
        const auto switches = reducing_switches(job, fabric);
        const std::size_t nodes = dense.size();
        if (!switches.empty() && job.endpoint_hosts.size() >= job.workers + nodes) {
            ctx.switch_reduction = 1.0;
            for (std::size_t j = 0; j < nodes; ++j) {
                if (job.endpoint_hosts[job.workers + j] != switches[j].vertex) ctx.switch_reduction = 0.0;
                ctx.switch_reduction = std::min(ctx.switch_reduction, switches[j].efficiency);
            }
        }
        const auto rails = sharp_switches(job, fabric);
        const std::size_t base = job.endpoint_hosts.size() - rails.size();
        if (!rails.empty() && base >= job.workers &&
            std::equal(rails.begin(), rails.end(), job.endpoint_hosts.begin() + static_cast<std::ptrdiff_t>(base))) {
            ctx.network_reduction = fabric.sharp_efficiency();
            ctx.network_switches = static_cast<std::uint32_t>(base);
        }
    }
    if (job.architecture.kind == topo::ArchKind::allreduce &&
        job.architecture.algorithm == topo::AllreduceAlgorithm::automatic)
        ctx.round_time = [&job, &fabric](const topo::Collective& c) { return detail::solo_round_time(job, fabric, c); };
    return ctx;
}

std::vector<topo::ReducingSwitch> reducing_switches(const TrainingJob& job, const topo::Fabric& fabric) {
    std::vector<topo::ReducingSwitch> out;
    std::unordered_map<std::uint32_t, bool> seen;
    for (std::uint32_t w = 0; w < job.workers && w < job.endpoint_hosts.size(); ++w) {
        const std::uint32_t node = fabric.node_of(job.endpoint_hosts[w]);
        if (!seen.emplace(node, true).second) continue;
        const topo::ReducingSwitch* sw = fabric.reducing_switch(node);
        if (sw == nullptr) return {};
        out.push_back(*sw);
    }
    return out;
}

std::optional<topo::Vertex> summing_switch(const TrainingJob& job, const topo::Fabric& fabric) {
    if (job.architecture.kind != topo::ArchKind::ps || !job.architecture.switch_aggregation ||
        job.endpoint_hosts.size() <= job.workers ||
        fabric.sharp_switch(job.endpoint_hosts.front()) != job.endpoint_hosts.back())
        return std::nullopt;
    return job.endpoint_hosts.back();
}

std::vector<topo::Vertex> sharp_switches(const TrainingJob& job, const topo::Fabric& fabric) {
    if (fabric.sharp_efficiency() <= 0.0) return {};
    std::vector<std::vector<topo::Vertex>> nodes;  // per node, in order of its first worker: its workers' hosts
    std::unordered_map<std::uint32_t, std::size_t> index;
    for (std::uint32_t w = 0; w < job.workers && w < job.endpoint_hosts.size(); ++w) {
        const topo::Vertex host = job.endpoint_hosts[w];
        const auto [it, fresh] = index.emplace(fabric.node_of(host), nodes.size());
        if (fresh) nodes.emplace_back();
        nodes[it->second].push_back(host);
    }
    if (nodes.size() < 2) return {};
    std::vector<topo::Vertex> rails;
    for (const auto& node : nodes) {
        if (node.size() != nodes.front().size()) return {};
        for (std::size_t j = 0; j < node.size(); ++j) {
            const std::optional<topo::Vertex> sw = fabric.sharp_switch(node[j]);
            if (!sw) return {};
            if (rails.size() == j) rails.push_back(*sw);
            if (rails[j] != *sw) return {};
        }
    }
    return rails;
}

namespace detail {

namespace {

// The ECMP flow key of a connection: stable across iterations, distinct per job and pair.
std::uint64_t flow_key(const TrainingJob& job, std::uint32_t a, std::uint32_t b) {
    // Not a random draw but the flow's identity, which each switch hashes (sim::rng::substream) to pick a port.
    return job.seed * sim::rng::kGamma ^ (static_cast<std::uint64_t>(job.index) << 48) ^
           (static_cast<std::uint64_t>(a) << 24) ^ static_cast<std::uint64_t>(b);
}

// A round without a network: once every endpoint has joined, all are done after `t`.
class TimedRound final : public sim::Round {
public:
    TimedRound(sim::Engine& engine, std::uint32_t endpoints, sim::Time t, sim::EndpointDone done)
        : engine_(engine), left_(endpoints), endpoints_(endpoints), t_(t), done_(std::move(done)) {}
    void open(std::uint32_t) override {
        if (--left_ > 0) return;
        engine_.after(t_, [this] {
            for (std::uint32_t e = 0; e < endpoints_; ++e) done_(e);
        });
    }

private:
    sim::Engine& engine_;
    std::uint32_t left_, endpoints_;
    sim::Time t_;
    sim::EndpointDone done_;
};

}  // namespace

Comm::Comm(sim::Engine& engine, sim::Network& network, const topo::Fabric& fabric, const TrainingJob& job,
           bool analytic, sim::ShiftQuotient* quotient)
    : engine_(engine), network_(network), fabric_(fabric), job_(job), analytic_(analytic), quotient_(quotient) {}

const sim::Route& Comm::route(std::uint32_t a, std::uint32_t b) const {
    return fabric_.route(job_.endpoint_hosts[a], job_.endpoint_hosts[b], flow_key(job_, a, b));
}

sim::PathCost Comm::path_cost(std::uint32_t a, std::uint32_t b) const {
    return endpoint_path_cost(job_, fabric_, a, b);
}

void Comm::send(std::uint32_t a, std::uint32_t b, sim::Bytes bytes, std::function<void()> done) {
    if (representatives_only_) {  // a representative's transfer stands for its class's (sim/symmetry.hpp)
        network_.start(quotient_->route(a, b), bytes, std::move(done));
        return;
    }
    if (quotient_ != nullptr) throw sim::SymmetryBroken("a point-to-point transfer has no class form");
    if (!analytic_) {
        network_.start(route(a, b), bytes, std::move(done));
        return;
    }
    const sim::PathCost c = path_cost(a, b);
    if (c.local) {
        engine_.after(sim::Time::zero(), std::move(done));
        return;
    }
    // Contention-free but not capacity-free: each host's uplink and downlink drain their transfers
    // one after another at the path's bottleneck bandwidth (two independent queues, as the α-β closed
    // forms' per-endpoint serialisation); a transfer is through when both its queues have passed it.
    if (out_free_.empty()) {
        out_free_.assign(fabric_.node_count(), sim::Time::zero());
        in_free_.assign(fabric_.node_count(), sim::Time::zero());
    }
    const topo::Vertex ha = job_.endpoint_hosts[a];
    const topo::Vertex hb = job_.endpoint_hosts[b];
    const sim::Time serial = sim::transfer_time(bytes, c.bandwidth);
    out_free_[ha] = std::max(engine_.now(), out_free_[ha]) + serial;
    in_free_[hb] = std::max(engine_.now(), in_free_[hb]) + serial;
    const sim::Time end = std::max(out_free_[ha], in_free_[hb]);
    engine_.at(end + c.latency, std::move(done));
}

std::unique_ptr<sim::Round> Comm::start_round(const topo::Collective& c, sim::EndpointDone on_done, std::uint32_t round,
                                              bool local) {
    if (representatives_only_ && local)
        return c.start_round(
            engine_, network_,
            [this](std::uint32_t a, std::uint32_t b) -> const sim::Route& { return quotient_->route(a, b); },
            std::move(on_done), round);
    if (quotient_ != nullptr) {
        auto r = std::make_unique<sim::ClassRound>(engine_, c.endpoints(), quotient_->period(), std::move(on_done),
                                                   representatives_only_);
        sim::ClassRound* self = r.get();
        // No shift gives a collective without a class form one (trees, PS, gossip): every transfer at once, not
        // every longer shift first (each attempt builds the trainer again: auto's picks simulate every candidate).
        if (!c.has_class_form() || c.endpoints() != quotient_->endpoints())
            throw sim::SymmetryBroken("a collective without a class form");
        auto inner = c.start_class_round(
            engine_, network_, *quotient_, [self](std::uint32_t cls) { self->class_done(cls); }, round);
        if (!inner) throw sim::SymmetryBroken("a collective not periodic under this shift", true);
        r->set_inner(std::move(inner));
        return r;
    }
    if (!analytic_)
        return c.start_round(
            engine_, network_, [this](std::uint32_t a, std::uint32_t b) -> const sim::Route& { return route(a, b); },
            std::move(on_done), round);
    auto it = closed_form_.find(&c);
    if (it == closed_form_.end())
        it =
            closed_form_.emplace(&c, c.alpha_beta([this](std::uint32_t a, std::uint32_t b) { return path_cost(a, b); }))
                .first;
    return std::make_unique<TimedRound>(engine_, c.endpoints(), it->second, std::move(on_done));
}

sim::Time solo_round_time(const TrainingJob& job, const topo::Fabric& fabric, const topo::Collective& c) {
    sim::Engine engine;
    sim::Network network(engine);
    fabric.install(network);
    Comm comm(engine, network, fabric, job, false);
    sim::Time last;
    const auto round = comm.start_round(
        c, [&](std::uint32_t) { last = std::max(last, engine.now()); }, 0);
    for (std::uint32_t e = 0; e < c.endpoints(); ++e) round->open(e);
    engine.run();
    return last;
}

TrainerBase::TrainerBase(const TrainerEnv& env, bool model_sync)
    : env_(env),
      job_(env.job),
      engine_(env.engine),
      comm_(env.engine, env.network, env.fabric, env.job, env.analytic, env.quotient),
      plan_(env.job, env.fabric, model_sync, env.picks),
      clocks_(env.job.workers) {
    if (!env.job.record_schedule) return;
    schedule_ = std::make_shared<Schedule>();
    schedule_->workers = env.job.workers;
}

void TrainerBase::server_exchange(std::uint32_t w, bool to_servers, sim::Bytes bytes,
                                  std::function<void(std::uint32_t j)> on_shard, std::function<void()> on_all,
                                  double* wire) {
    const std::uint32_t n = job_.workers;
    const auto k = static_cast<std::uint32_t>(job_.architecture.servers);
    auto left = std::make_shared<std::uint32_t>(k);
    auto shard_done = std::make_shared<std::function<void(std::uint32_t)>>(std::move(on_shard));
    auto all_done = std::make_shared<std::function<void()>>(std::move(on_all));
    for (std::uint32_t j = 0; j < k; ++j) {
        if (wire != nullptr && job_.endpoint_hosts[w] != job_.endpoint_hosts[n + j]) *wire += (bytes / k).value();
        const std::uint32_t from = to_servers ? w : n + j, to = to_servers ? n + j : w;
        comm_.send(from, to, bytes / k, [left, shard_done, all_done, j] {
            if (--*left == 0 && *all_done) (*all_done)();
            if (*shard_done) (*shard_done)(j);
        });
    }
}

void TrainerBase::record(OpKind k, std::uint32_t w, std::uint32_t i, sim::Time t) {
    if (schedule_) schedule_->add(k, w, 0, i, t.seconds());
}

void count_staleness(std::vector<std::uint64_t>& histogram, std::uint64_t s) {
    if (histogram.size() <= s) histogram.resize(s + 1, 0);
    ++histogram[s];
}

void set_staleness(JobResult& r, const std::vector<std::uint64_t>& histogram) {
    r.has_staleness = true;
    r.staleness_histogram = histogram;
    std::uint64_t count = 0;
    double sum = 0.0;
    for (std::size_t s = 0; s < histogram.size(); ++s) {
        count += histogram[s];
        sum += static_cast<double>(s) * static_cast<double>(histogram[s]);
        if (histogram[s] > 0) r.staleness_max = s;
    }
    r.staleness_mean = count > 0 ? sum / static_cast<double>(count) : 0.0;
}

// The samples per second of the job's workers each training alone (the denominator of scaling efficiency).
static double alone_samples_per_s(const TrainingJob& job) {
    double single = 0.0;
    for (std::uint32_t w = 0; w < job.workers; ++w)
        single +=
            static_cast<double>(job.batch_size) * job.gradient_accumulation / job.compute_of(w).iteration().seconds();
    return single;
}

JobResult::Breakdown busy_breakdown(const TrainingJob& job, const std::vector<WorkerClock>& clocks,
                                    double iteration_time_s) {
    double busy = 0.0;
    for (std::uint32_t w = 0; w < job.workers; ++w) busy += clocks[w].busy.seconds();
    JobResult::Breakdown b;
    b.compute = busy / (static_cast<double>(job.workers) * job.iterations);
    b.exposed_communication = std::max(0.0, iteration_time_s - b.compute);
    return b;
}

void fill_result(const TrainingJob& job, const std::vector<WorkerClock>& clocks, std::uint32_t iterations,
                 double samples_per_iteration, JobResult& r) {
    sim::Time makespan;
    double comm = 0.0, exposed = 0.0;
    for (std::uint32_t w = 0; w < clocks.size(); ++w) {
        const WorkerClock& c = clocks[w];
        makespan = std::max(makespan, c.finished);
        comm += c.comm.seconds();
        const double idle = std::max(0.0, (c.finished - c.busy).seconds());
        exposed += idle;
        r.workers.push_back({c.iterations, idle, c.updates});
    }
    const double single = alone_samples_per_s(job);
    const double n = static_cast<double>(std::max<std::size_t>(1, clocks.size()));
    r.makespan_s = makespan.seconds();
    r.iteration_time_s = iterations > 0 ? r.makespan_s / iterations : 0.0;
    r.forward_time_s = job.compute.fwd.seconds();
    r.backward_time_s = job.compute.bwd.seconds();
    r.update_time_s = job.compute.update.seconds();
    r.compute_time_s = job.compute.iteration().seconds();
    // An iteration is an optimizer step: gradient_accumulation micro-batches of samples_per_iteration.
    r.throughput_samples_per_s =
        r.iteration_time_s > 0.0 ? samples_per_iteration * job.gradient_accumulation / r.iteration_time_s : 0.0;
    r.scaling_efficiency =
        std::min(1.0, single > 0.0 && r.iteration_time_s > 0.0 ? r.throughput_samples_per_s / single
                                                               : 1.0);  // rounding must not lift it above 1
    r.communication_time_s = iterations > 0 ? comm / n / iterations : 0.0;
    r.exposed_communication_time_s = iterations > 0 ? exposed / n / iterations : 0.0;
}

void own_clocks_result(const TrainingJob& job, const std::vector<WorkerClock>& clocks, double samples_per_iteration,
                       double codec_s, JobResult& r) {
    double rate = 0.0;  // worker steps per second, summed
    std::size_t counted = 0;
    for (const WorkerClock& c : clocks)
        if (c.iterations > 0 && c.finished > sim::Time::zero()) {
            rate += c.iterations / c.finished.seconds();
            ++counted;
        }
    if (counted == 0 || rate <= 0.0) return;
    const double iteration = static_cast<double>(counted) / rate;
    double busy = 0.0, waited = 0.0, idle = 0.0;
    for (const WorkerClock& c : clocks) {
        if (c.iterations == 0 || c.finished <= sim::Time::zero()) continue;
        // The worker's share of the steps (its rate over the sum) times its time per step.
        const double share = c.iterations / c.finished.seconds() / rate / c.iterations;
        busy += share * c.busy.seconds();
        waited += share * c.waited.seconds();
        idle += share * std::max(0.0, (c.finished - c.busy).seconds());
    }
    r.iteration_time_s = iteration;
    const double single = alone_samples_per_s(job);
    r.throughput_samples_per_s = samples_per_iteration * job.gradient_accumulation / iteration;
    r.scaling_efficiency =
        std::min(1.0, single > 0.0 ? r.throughput_samples_per_s / single : 1.0);  // rounding must not lift it above 1
    r.exposed_communication_time_s = idle;
    JobResult::Breakdown b;
    b.compute = std::min(busy, iteration);
    b.waiting = std::min(waited, iteration - b.compute);
    b.codec = std::min(codec_s, iteration - b.compute - b.waiting);
    b.exposed_communication = std::max(0.0, iteration - b.compute - b.waiting - b.codec);
    r.breakdown = b;
}

// Forward + backward of one step of worker w (slowdowns applied), as timeline spans from `t`;
// returns the end time and adds the compute to the worker's busy time.
sim::Time compute_step(const TrainerEnv& env, WorkerClock& clock, std::uint32_t w, std::uint64_t step, sim::Time t,
                       bool with_update) {
    const TrainingJob& job = env.job;
    const ComputeProfile& cp = job.compute_of(w);
    const StepSlowdown slow = straggler(job.stragglers, job.seed, w, step);
    const sim::Time start = t;
    t += slow.delay;
    const sim::Time f = scaled(cp.fwd, slow.factor);
    const sim::Time b = scaled(cp.bwd, slow.factor);
    const sim::Time u = with_update ? scaled(cp.update, slow.factor) : sim::Time::zero();
    env.timeline.span(Timeline::compute(w), "forward", "forward", t, t + f);
    env.timeline.span(Timeline::compute(w), "backward", "backward", t + f, t + f + b);
    env.timeline.span(Timeline::compute(w), "update", "update", t + f + b, t + f + b + u);
    t += f + b + u;
    clock.busy += t - start;
    return t;
}

}  // namespace detail

bool closed_form_applies(const TrainingJob& job) {
    return job.sync.kind == SyncKind::bsp && !job.overlap.any() && !job.stragglers.any() &&
           job.worker_compute.empty() && !job.record_schedule && !job.sharding.any();
}

JobResult simulate_closed_form(const topo::Fabric& fabric, const TrainingJob& job) {
    const CommPlan plan(job, fabric, job.architecture.kind == topo::ArchKind::gossip);
    sim::Time comm;
    for (const Message& m : plan.messages()) comm += plan.alpha_beta(m);
    const sim::Time iteration = job.compute.iteration() + comm;
    JobResult r;
    std::vector<detail::WorkerClock> one(1);
    one[0].busy = scaled(job.compute.iteration(), job.iterations);
    one[0].finished = scaled(iteration, job.iterations);
    one[0].comm = scaled(comm, job.iterations);
    one[0].iterations = job.iterations;
    one[0].updates = job.iterations;
    detail::fill_result(job, one, job.iterations, static_cast<double>(job.workers) * job.batch_size, r);
    // One worker stands for all (identical workers): efficiency against n of them.
    r.scaling_efficiency = std::min(1.0, r.iteration_time_s > 0.0 ? r.compute_time_s / r.iteration_time_s
                                                                  : 1.0);  // rounding must not lift it above 1
    r.workers.assign(job.workers, r.workers.front());
    r.bytes_on_wire_per_iteration = plan.wire_bytes();
    r.machine_bytes_per_iteration = plan.machine_bytes();
    r.codec_time_s = plan.codec_time(0).seconds();
    r.model_versions = job.iterations;
    r.rounds = job.iterations;
    r.collectives_per_iteration = plan.collectives();
    r.algorithm_picks = plan.algorithm_picks();
    return r;
}

namespace {

// The shifts worth trying for flow classes (sim/symmetry.hpp): one job on the flow network (a timeline then draws
// the transfers of each class's representative on its links, and the ranks that run: every worker of a
// data-parallel job, a model-parallel job's first replicas), no stragglers, workers placed in equal blocks of g per
// node; P = g, 2g, 4g, ... while at least two periods remain. Whether a shift is a symmetry is found while running: the
// first period whose routes map onto each other wins; none, and every transfer is simulated.
std::vector<std::uint32_t> class_periods(const topo::Fabric& fabric, const std::vector<TrainingJob>& jobs,
                                         const SimOptions& options, std::string& why) {
    if (options.analytic || !options.flow_classes) return {};
    why = "several jobs share the fabric";
    if (jobs.size() != 1) return {};
    const TrainingJob& job = jobs.front();
    const std::uint32_t n = job.workers;
    why = n < 2 ? "one worker" : "stragglers make the workers unlike";
    if (n < 2 || job.stragglers.any()) return {};
    if (job.parallelism.any()) {
        // A model-parallel job (models/trainer_pipeline.cpp): a shift of the ranks by q model replicas (q: an expert
        // group's data ranks) maps its programs onto each other (ParallelismSpec::rank), so its first replicas run
        // for all, where devices are alike and nothing per worker is recorded; the fabric's routes are checked while
        // running (a shift by more replicas where they are not symmetric).
        const ParallelismSpec& par = job.parallelism;
        const std::uint32_t q = job.workload.experts > 0 ? par.expert : 1;
        why = !job.worker_compute.empty() ? "the workers' devices differ"
              : job.record_schedule       ? "every worker's schedule is recorded"
                                          : "the data ranks do not split into whole expert groups";
        if (!job.worker_compute.empty() || job.record_schedule || par.data(n) % q != 0) return {};
        why = "no shift of whole model replicas (or expert groups) leaves two periods";
        std::vector<std::uint32_t> periods;
        for (std::uint32_t p = q * par.replica_ranks(); p <= n / 2 && n % p == 0 && periods.size() < 6; p *= 2)
            periods.push_back(p);
        return periods;
    }
    auto node = [&](std::uint32_t w) { return fabric.node_of(job.endpoint_hosts[w]); };
    std::uint32_t g = 1;
    while (g < n && node(g) == node(0)) ++g;
    why = "the workers do not sit in equal blocks per node";
    if (n % g != 0) return {};
    for (std::uint32_t w = 0; w < n; ++w)
        if (node(w) != node(w - w % g) || (w >= g && w % g == 0 && node(w) == node(w - g))) return {};
    why = "no shift of whole nodes leaves two periods";
    std::vector<std::uint32_t> periods;
    for (std::uint32_t p = g; p <= n / 2 && periods.size() < 6; p *= 2)
        if (n % p == 0) periods.push_back(p);
    return periods;
}

/// `picks`: per job, auto's picks so far (each attempt would otherwise simulate every candidate again).
FlowRun simulate_once(const topo::Fabric& fabric, const std::vector<TrainingJob>& jobs, const SimOptions& options,
                      std::uint32_t period, std::vector<CommPlan::Picks>& picks);

}  // namespace

FlowRun simulate(const topo::Fabric& fabric, const std::vector<TrainingJob>& jobs, const SimOptions& options) {
    std::string why;
    const std::vector<std::uint32_t> periods = class_periods(fabric, jobs, options, why);
    std::vector<CommPlan::Picks> picks(jobs.size());
    for (std::uint32_t p : periods) {
        try {
            return simulate_once(fabric, jobs, options, p, picks);
        } catch (const sim::SymmetryBroken& e) {
            why = fmt::format("{}, shifting by {}", e.what(), p);
            if (options.trace != nullptr) options.trace->clear();  // the attempt's timeline, up to where it broke
            if (!e.period_specific) break;  // no longer shift fixes asymmetric workers or collectives
        }
    }
    if (!periods.empty() && options.before_full_run) options.before_full_run();
    FlowRun run = simulate_once(fabric, jobs, options, 0, picks);
    run.flow_class_reason = why;
    return run;
}

namespace {

FlowRun simulate_once(const topo::Fabric& fabric, const std::vector<TrainingJob>& jobs, const SimOptions& options,
                      std::uint32_t period, std::vector<CommPlan::Picks>& picks) {
    sim::Engine engine;
    sim::Network network(engine);
    fabric.install(network);
    std::unique_ptr<sim::ShiftQuotient> quotient;
    if (period > 0) {
        const TrainingJob& job = jobs.front();
        quotient = std::make_unique<sim::ShiftQuotient>(
            network, job.workers, period, [&fabric, &job](std::uint32_t a, std::uint32_t b) -> const sim::Route& {
                return fabric.route(job.endpoint_hosts[a], job.endpoint_hosts[b], detail::flow_key(job, a, b));
            });
    }
    if (options.trace != nullptr) {
        options.trace->name_process(1'000'000, "network links", 1'000'000);
        sim::Trace* trace = options.trace;
        // Each link's track named once, each transfer's name made once per endpoints and size (a collective repeats
        // them every round): recording costs little beside the run.
        auto named = std::make_shared<std::vector<char>>(network.link_count(), 0);
        auto names = std::make_shared<std::map<std::tuple<sim::LinkIndex, sim::LinkIndex, double>, std::string>>();
        network.set_observer(
            [&fabric, trace, named, names](const sim::Route& route, double bytes, sim::Time a, sim::Time b) {
                if (route.empty()) return;
                auto [it, fresh] = names->try_emplace({route.front(), route.back(), bytes});
                if (fresh) {  // "src->dst 6.4 MB": the first link's tail and the last link's head
                    const std::string first = fabric.directed_link_name(route.front()),
                                      last = fabric.directed_link_name(route.back());
                    it->second = fmt::format("{}->{} {:.4g} MB", first.substr(0, first.find("->")),
                                             last.substr(last.find("->") + 2), bytes / 1e6);
                }
                for (sim::LinkIndex l : route) {
                    if ((*named)[l] == 0) {
                        (*named)[l] = 1;
                        trace->name_track(1'000'000, l, fabric.directed_link_name(l));
                    }
                    trace->span(1'000'000, l, it->second, "transfer", a, b);
                }
            });
    }
    std::vector<std::unique_ptr<detail::JobTrainer>> trainers;
    for (const TrainingJob& job : jobs) {
        detail::TrainerEnv env{engine,           network,
                               fabric,           job,
                               options.analytic, {options.trace, job.index + 1},
                               quotient.get(),   &picks[static_cast<std::size_t>(&job - jobs.data())]};
        if (options.trace != nullptr) {
            options.trace->name_process(env.timeline.pid, fmt::format("job{} workers", job.index),
                                        static_cast<int>(job.index));
            // Tracks are the simulation's ranks; a model-parallel rank is named by the worker its placement puts it
            // on (and a pipeline's by its stage), as the results name it.
            const models::ParallelismSpec& par = job.parallelism;
            const std::vector<std::uint32_t> at = par.any() ? par.placement(job.workers) : std::vector<std::uint32_t>{};
            for (std::uint32_t w = 0; w < job.workers; ++w) {
                const std::string who = at.empty()         ? fmt::format("worker {}", w)
                                        : par.pipeline > 1 ? fmt::format("worker {} (stage {})", at[w], par.stage_of(w))
                                                           : fmt::format("worker {}", at[w]);
                options.trace->name_track(env.timeline.pid, detail::Timeline::compute(w), who + " compute");
                options.trace->name_track(env.timeline.pid, detail::Timeline::comm(w), who + " communication");
            }
        }
        trainers.push_back(sync_scheme(job.sync.kind).make_trainer(env));
    }
    for (auto& t : trainers) t->start();
    if (options.progress)
        engine.set_progress(
            [&engine, &options] { options.progress(engine.events_processed(), engine.now().seconds()); });
    engine.run();
    FlowRun run;
    run.events = engine.events_processed();
    // Each simulated transfer stands for its class's m; every link carries what its cycle's representative did.
    run.transfers = network.transfers_started() * (quotient ? quotient->multiplicity() : 1U);
    run.flow_class_period = period;
    run.makespan_s = engine.now().seconds();
    for (auto& t : trainers) run.jobs.push_back(t->result());
    if (!options.analytic)
        for (sim::LinkIndex l = 0; l < network.link_count(); ++l)
            run.links.push_back(network.stats(quotient ? quotient->representative(l) : l));
    return run;
}

}  // namespace

}  // namespace ddlsim::models
