// Asynchronous trainers: SSP / ASP on a parameter server, AD-PSGD gossip, and FedAvg.
// See models/trainer.hpp for the schemes.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <span>

#include "models/stragglers.hpp"
#include "models/trainer_detail.hpp"
#include "sim/rng.hpp"
#include "topologies/gossip.hpp"

namespace ddlsim::models::detail {
namespace {

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

// ---------------------------------------------------------------------------------------
// SSP / ASP on a parameter server with k servers (endpoints n..n+k-1), shards of S/k.
class AsyncPsTrainer final : public TrainerBase {
public:
    explicit AsyncPsTrainer(const TrainerEnv& env)
        : TrainerBase(env, false),
          n_(env.job.workers),
          k_(static_cast<std::uint32_t>(env.job.architecture.servers)),
          ws_(n_),
          server_free_(k_) {
        push_ = plan_.payload_bytes();
        pull_ = job_.gradient_bytes();
    }

    void start() override {
        for (std::uint32_t w = 0; w < n_; ++w) begin(w);
    }

    [[nodiscard]] JobResult result() const override {
        JobResult r;
        fill_result(job_, clocks_, job_.iterations, static_cast<double>(n_) * job_.batch_size, r);
        r.bytes_on_wire_per_iteration = 0.0;
        for (std::uint32_t w = 0; w < n_; ++w)
            for (std::uint32_t j = 0; j < k_; ++j)
                if (job_.endpoint_hosts[w] != job_.endpoint_hosts[n_ + j])
                    r.bytes_on_wire_per_iteration += ((push_ + pull_) / k_).value();
        if (!plan_.messages().empty()) {
            const Message& m = plan_.messages().front();
            r.codec_time_s = (plan_.work_time(m.encode, 0) + plan_.work_time(m.decode, 0)).seconds();
        }
        set_staleness(r, histogram_);
        r.breakdown = clock_breakdown(clocks_, job_.iterations, r.codec_time_s);
        r.model_versions = version_;
        r.rounds = version_;
        r.max_lead = max_lead_;
        r.schedule = schedule_;
        return r;
    }

private:
    struct W {
        std::uint32_t iter = 0;
        std::uint64_t read_version = 0;
        std::uint64_t pull_version = 0;
        std::uint32_t shards = 0;
        sim::Time comm_start;
        bool blocked = false;
        sim::Time blocked_at;
    };

    std::uint32_t min_clock() const {
        std::uint32_t m = job_.iterations;
        for (const W& s : ws_) m = std::min(m, s.iter);
        return m;
    }

    void begin(std::uint32_t w) {
        W& s = ws_[w];
        if (s.iter == job_.iterations) {
            clocks_[w].finished = engine_.now();
            return;
        }
        const std::uint32_t slowest = min_clock();
        if (job_.sync.kind == SyncKind::ssp && s.iter > slowest + job_.sync.staleness) {
            s.blocked = true;  // idle until the slowest catches up (waiting, in the breakdown)
            s.blocked_at = engine_.now();
            return;
        }
        max_lead_ = std::max(max_lead_, s.iter - slowest);
        record(OpKind::grad, w, s.iter, engine_.now());
        const sim::Time t = compute_step(env_, clocks_[w], w, s.iter, engine_.now(), false);
        engine_.at(t, [this, w] { push(w); });
    }

    void push(std::uint32_t w) {
        WorkerClock& c = clocks_[w];
        c.comm_begin(engine_.now());
        ws_[w].comm_start = engine_.now();
        const sim::Time enc =
            plan_.messages().empty() ? sim::Time::zero() : plan_.work_time(plan_.messages().front().encode, w);
        engine_.after(enc, [this, w] {
            ws_[w].shards = 0;
            server_exchange(w, true, push_, [this, w](std::uint32_t j) { arrived(w, j); }, {});
        });
    }

    // Server j applies worker w's shard once it is free (summation at aggregation_rate).
    void arrived(std::uint32_t w, std::uint32_t j) {
        const auto& rate = job_.architecture.aggregation_rate;
        const sim::Time apply = rate ? sim::transfer_time(push_ / k_, *rate) : sim::Time::zero();
        const sim::Time start = std::max(engine_.now(), server_free_[j]);
        server_free_[j] = start + apply;
        engine_.at(start + apply, [this, w] {
            if (++ws_[w].shards < k_) return;
            applied(w);
        });
    }

    void applied(std::uint32_t w) {
        W& s = ws_[w];
        const std::uint64_t staleness = version_ - s.read_version;
        count_staleness(histogram_, staleness);
        ++version_;
        s.pull_version = version_;  // the model the pull sends out
        record(OpKind::push, w, s.iter, engine_.now());
        record(OpKind::pull, w, s.iter, engine_.now());
        server_exchange(w, false, pull_, {}, [this, w] { pulled(w); });
    }

    void pulled(std::uint32_t w) {
        W& s = ws_[w];
        WorkerClock& c = clocks_[w];
        s.read_version = s.pull_version;
        const sim::Time dec =
            plan_.messages().empty() ? sim::Time::zero() : plan_.work_time(plan_.messages().front().decode, w);
        const sim::Time u = scaled(job_.compute_of(w).update, straggler(job_.stragglers, job_.seed, w, s.iter).factor);
        engine_.after(dec, [this, w, u] {
            WorkerClock& cl = clocks_[w];
            cl.comm_end(engine_.now());
            env_.timeline.span(Timeline::comm(w), fmt::format("push/pull it{}", ws_[w].iter), "communication",
                               ws_[w].comm_start, engine_.now());
            env_.timeline.span(Timeline::compute(w), "update", "update", engine_.now(), engine_.now() + u);
            cl.busy += u;
            engine_.after(u, [this, w] {
                ++ws_[w].iter;
                ++clocks_[w].iterations;
                ++clocks_[w].updates;
                begin(w);
                // A worker that moved the slowest clock may release blocked ones.
                for (std::uint32_t v = 0; v < n_; ++v)
                    if (ws_[v].blocked && ws_[v].iter <= min_clock() + job_.sync.staleness) {
                        ws_[v].blocked = false;
                        clocks_[v].waited += engine_.now() - ws_[v].blocked_at;
                        begin(v);
                    }
            });
        });
        (void)c;
    }

    std::uint32_t n_, k_;
    std::vector<W> ws_;
    std::vector<sim::Time> server_free_;
    sim::Bytes push_, pull_;
    std::uint64_t version_ = 0;
    std::uint32_t max_lead_ = 0;
    std::vector<std::uint64_t> histogram_;
};

// ---------------------------------------------------------------------------------------
// AD-PSGD: after each step a worker averages with one neighbour (models both ways).
class AsyncGossipTrainer final : public TrainerBase {
public:
    explicit AsyncGossipTrainer(const TrainerEnv& env)
        : TrainerBase(env, true), n_(env.job.workers), passive_(n_, 0), passive_at_start_(n_, 0), iter_(n_, 0) {
        bytes_ = plan_.payload_bytes();
        if (job_.architecture.graph != topo::GossipGraph::random_matching)
            neighbours_ = topo::gossip_neighbours(job_.architecture.graph, n_, job_.seed, 0);
    }

    void start() override {
        for (std::uint32_t w = 0; w < n_; ++w) begin(w);
    }

    [[nodiscard]] JobResult result() const override {
        JobResult r;
        fill_result(job_, clocks_, job_.iterations, static_cast<double>(n_) * job_.batch_size, r);
        r.bytes_on_wire_per_iteration = wire_ / job_.iterations;
        set_staleness(r, histogram_);
        r.breakdown = clock_breakdown(clocks_, job_.iterations, 0.0);
        r.rounds = averagings_;
        r.schedule = schedule_;
        return r;
    }

private:
    std::uint32_t partner(std::uint32_t w, std::uint32_t i) const {
        if (job_.architecture.graph == topo::GossipGraph::random_matching)
            return topo::gossip_matching(n_, job_.seed, i)[w];
        const auto& nb = neighbours_[w];
        if (nb.empty()) return w;
        const std::uint64_t key = sim::rng::substream(sim::rng::stream(job_.seed, "gossip partner"), w);
        return nb[sim::rng::below(key, i, nb.size())];
    }

    void begin(std::uint32_t w) {
        if (iter_[w] == job_.iterations) {
            clocks_[w].finished = engine_.now();
            return;
        }
        passive_at_start_[w] = passive_[w];
        record(OpKind::grad, w, iter_[w], engine_.now());
        const sim::Time t = compute_step(env_, clocks_[w], w, iter_[w], engine_.now(), false);
        engine_.at(t, [this, w] { exchange(w); });
    }

    void exchange(std::uint32_t w) {
        const std::uint32_t j = partner(w, iter_[w]);
        const std::uint64_t s = passive_[w] - passive_at_start_[w];
        count_staleness(histogram_, s);
        if (j == w) {
            update(w);
            return;
        }
        clocks_[w].comm_begin(engine_.now());
        const sim::Time start = engine_.now();
        if (job_.endpoint_hosts[w] != job_.endpoint_hosts[j]) wire_ += 2.0 * bytes_.value();
        auto left = std::make_shared<int>(2);
        auto done = [this, w, j, left, start] {
            if (--*left > 0) return;
            clocks_[w].comm_end(engine_.now());
            env_.timeline.span(Timeline::comm(w), fmt::format("average with {}", j), "communication", start,
                               engine_.now());
            ++passive_[j];
            ++clocks_[j].updates;
            ++averagings_;
            if (schedule_)
                schedule_->add(OpKind::average, w, schedule_->add_set({std::min(w, j), std::max(w, j)}), iter_[w],
                               engine_.now().seconds());
            update(w);
        };
        comm_.send(w, j, bytes_, done);
        comm_.send(j, w, bytes_, done);
    }

    void update(std::uint32_t w) {
        record(OpKind::local, w, iter_[w], engine_.now());
        const sim::Time u =
            scaled(job_.compute_of(w).update, straggler(job_.stragglers, job_.seed, w, iter_[w]).factor);
        env_.timeline.span(Timeline::compute(w), "update", "update", engine_.now(), engine_.now() + u);
        clocks_[w].busy += u;
        engine_.after(u, [this, w] {
            ++iter_[w];
            ++clocks_[w].iterations;
            ++clocks_[w].updates;
            begin(w);
        });
    }

    std::uint32_t n_;
    std::vector<std::uint64_t> passive_, passive_at_start_;
    std::vector<std::uint32_t> iter_;
    std::vector<std::vector<std::uint32_t>> neighbours_;
    sim::Bytes bytes_;
    double wire_ = 0.0;
    std::uint64_t averagings_ = 0;
    std::vector<std::uint64_t> histogram_;
};

// ---------------------------------------------------------------------------------------
// FedAvg: rounds of sampled clients, local steps, upload, server averaging.
class FedAvgTrainer final : public TrainerBase {
public:
    explicit FedAvgTrainer(const TrainerEnv& env)
        : TrainerBase(env, true),
          n_(env.job.workers),
          k_(static_cast<std::uint32_t>(env.job.architecture.servers)),
          steps_(n_, 0) {
        upload_ = plan_.payload_bytes();
        download_ = job_.gradient_bytes();
    }

    void start() override { begin_round(); }

    [[nodiscard]] JobResult result() const override {
        JobResult r;
        std::vector<WorkerClock> clocks = clocks_;
        for (WorkerClock& c : clocks) c.finished = engine_.now();
        // Throughput counts the samples actually processed: with availability < 1 a round may have fewer
        // clients than clients_per_round (participations_ counts them all).
        const double c = static_cast<double>(participations_) / std::max<std::uint32_t>(1, job_.iterations);
        fill_result(job_, clocks, job_.iterations, c * job_.sync.local_steps * job_.batch_size, r);
        // Efficiency: the share of a round that a participating client spends computing.
        const double local = job_.sync.local_steps * job_.compute.iteration().seconds();
        r.scaling_efficiency = r.iteration_time_s > 0.0 ? local / r.iteration_time_s : 1.0;
        r.exposed_communication_time_s = std::max(0.0, r.iteration_time_s - local);
        r.communication_time_s = comm_total_.seconds() / std::max(1.0, static_cast<double>(participations_));
        r.bytes_on_wire_per_iteration = wire_ / job_.iterations;
        r.rounds = round_;
        r.model_versions = round_;
        r.clients_per_round_mean = static_cast<double>(participations_) / std::max<std::uint32_t>(1, round_);
        // Breakdown of a round as a participating client sees it: its local steps, its encode, its download and
        // upload plus the servers' averaging (exposed communication), and the rest waiting for the round's
        // slowest client (stragglers, slow links).
        const double p = std::max(1.0, static_cast<double>(participations_));
        double busy = 0.0;
        for (const WorkerClock& w : clocks_) busy += w.busy.seconds();
        JobResult::Breakdown b;
        b.compute = std::min(busy / p, r.iteration_time_s);
        b.codec = std::min(encode_total_.seconds() / p, r.iteration_time_s - b.compute);
        b.exposed_communication =
            std::min(r.communication_time_s + averaging_total_.seconds() / std::max<std::uint32_t>(1, round_),
                     r.iteration_time_s - b.compute - b.codec);
        b.waiting = std::max(0.0, r.iteration_time_s - b.compute - b.codec - b.exposed_communication);
        r.breakdown = b;
        r.schedule = schedule_;
        return r;
    }

private:
    std::vector<std::uint32_t> sample(std::uint32_t r) const {
        std::vector<std::uint32_t> available;
        const std::uint64_t availability = sim::rng::substream(sim::rng::stream(job_.seed, "fedavg availability"), r);
        std::uint32_t best = 0;
        double best_u = 2.0;
        for (std::uint32_t w = 0; w < n_; ++w) {
            const double u = sim::rng::uniform01(availability, w);
            if (u < job_.sync.availability) available.push_back(w);
            if (u < best_u) {
                best_u = u;
                best = w;
            }
        }
        if (available.empty()) available.push_back(best);  // a round needs at least one client
        sim::rng::SplitMix64 g(sim::rng::substream(sim::rng::stream(job_.seed, "fedavg clients"), r));
        const std::size_t c = std::min<std::size_t>(job_.sync.clients_per_round, available.size());
        sim::rng::partial_shuffle(g, std::span(available), c);  // c clients uniformly among the available
        available.resize(c);
        std::sort(available.begin(), available.end());
        return available;
    }

    void begin_round() {
        if (round_ == job_.iterations) return;
        clients_ = sample(round_);
        participations_ += clients_.size();
        uploads_left_ = static_cast<std::uint32_t>(clients_.size()) * k_;
        server_arrivals_.assign(k_, 0);
        for (std::uint32_t w : clients_) {
            record(OpKind::pull, w, round_, engine_.now());
            clocks_[w].comm_begin(engine_.now());
            const sim::Time start = engine_.now();
            server_exchange(
                w, false, download_, {},
                [this, w, start] {
                    clocks_[w].comm_end(engine_.now());
                    comm_total_ += engine_.now() - start;
                    env_.timeline.span(Timeline::comm(w), fmt::format("download r{}", round_), "communication", start,
                                       engine_.now());
                    ++clocks_[w].updates;
                    local_training(w);
                },
                &wire_);
        }
    }

    void local_training(std::uint32_t w) {
        sim::Time t = engine_.now();
        for (std::uint32_t e = 0; e < job_.sync.local_steps; ++e) {
            record(OpKind::grad, w, round_, t);
            t = compute_step(env_, clocks_[w], w, steps_[w]++, t, true);
            record(OpKind::local, w, round_, t);
        }
        clocks_[w].iterations += job_.sync.local_steps;
        clocks_[w].updates += job_.sync.local_steps;
        const sim::Time enc =
            plan_.messages().empty() ? sim::Time::zero() : plan_.work_time(plan_.messages().front().encode, w);
        encode_total_ += enc;
        engine_.at(t + enc, [this, w] {
            clocks_[w].comm_begin(engine_.now());
            const sim::Time start = engine_.now();
            server_exchange(
                w, true, upload_, [this](std::uint32_t j) { uploaded(j); },
                [this, w, start] {
                    clocks_[w].comm_end(engine_.now());
                    comm_total_ += engine_.now() - start;
                    env_.timeline.span(Timeline::comm(w), fmt::format("upload r{}", round_), "communication", start,
                                       engine_.now());
                },
                &wire_);
        });
    }

    void uploaded(std::uint32_t j) {
        last_upload_ = engine_.now();
        ++server_arrivals_[j];
        --uploads_left_;
        if (server_arrivals_[j] < clients_.size()) return;
        // Server j averages its shard of all client models.
        const auto& rate = job_.architecture.aggregation_rate;
        const sim::Time avg =
            rate ? sim::transfer_time(upload_ * static_cast<double>(clients_.size()) / k_, *rate) : sim::Time::zero();
        ++servers_waiting_;
        averaging_end_ = std::max(averaging_end_, engine_.now() + avg);
        engine_.after(avg, [this] {
            if (--servers_waiting_ > 0 || uploads_left_ > 0) return;
            if (schedule_)
                schedule_->add(OpKind::collect, 0, schedule_->add_set(clients_), round_, engine_.now().seconds());
            averaging_total_ += averaging_end_ - last_upload_;
            ++round_;
            begin_round();
        });
    }

    std::uint32_t n_, k_;
    std::vector<std::uint64_t> steps_;
    std::vector<std::uint32_t> clients_;
    std::vector<std::uint32_t> server_arrivals_;
    std::uint32_t uploads_left_ = 0;
    std::uint32_t servers_waiting_ = 0;
    std::uint32_t round_ = 0;
    std::uint64_t participations_ = 0;
    sim::Bytes upload_, download_;
    double wire_ = 0.0;
    sim::Time comm_total_;
    sim::Time encode_total_;     ///< clients' encodes, summed over participations
    sim::Time averaging_total_;  ///< from a round's last upload to the end of the servers' averaging
    sim::Time last_upload_, averaging_end_;
};

}  // namespace

std::unique_ptr<JobTrainer> make_async_ps_trainer(const TrainerEnv& env) {
    return std::make_unique<AsyncPsTrainer>(env);
}
std::unique_ptr<JobTrainer> make_async_gossip_trainer(const TrainerEnv& env) {
    return std::make_unique<AsyncGossipTrainer>(env);
}
std::unique_ptr<JobTrainer> make_fedavg_trainer(const TrainerEnv& env) {
    return std::make_unique<FedAvgTrainer>(env);
}

}  // namespace ddlsim::models::detail
