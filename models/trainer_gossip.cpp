// AD-PSGD gossip, asynchronous (models/trainer.hpp states the schemes).
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
        own_clocks_result(job_, clocks_, static_cast<double>(n_) * job_.batch_size, 0.0, r);
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

}  // namespace

std::unique_ptr<JobTrainer> make_async_gossip_trainer(const TrainerEnv& env) {
    return std::make_unique<AsyncGossipTrainer>(env);
}

}  // namespace ddlsim::models::detail
