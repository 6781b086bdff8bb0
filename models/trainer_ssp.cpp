// SSP / ASP on a parameter server (models/trainer.hpp states the schemes).
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <span>

#include "models/stragglers.hpp"
#include "models/trainer_detail.hpp"
#include "sim/rng.hpp"

namespace ddlsim::models::detail {
namespace {

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
        own_clocks_result(job_, clocks_, static_cast<double>(n_) * job_.batch_size, r.codec_time_s, r);
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

}  // namespace

std::unique_ptr<JobTrainer> make_async_ps_trainer(const TrainerEnv& env) {
    return std::make_unique<AsyncPsTrainer>(env);
}

}  // namespace ddlsim::models::detail
