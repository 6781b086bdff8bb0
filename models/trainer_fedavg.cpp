// FedAvg: rounds of sampled clients (models/trainer.hpp states the schemes).
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <span>

#include "models/stragglers.hpp"
#include "models/trainer_detail.hpp"
#include "sim/rng.hpp"

namespace ddlsim::models::detail {
namespace {

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
        r.scaling_efficiency = std::min(
            1.0, r.iteration_time_s > 0.0 ? local / r.iteration_time_s : 1.0);  // rounding must not lift it above 1
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

std::unique_ptr<JobTrainer> make_fedavg_trainer(const TrainerEnv& env) {
    return std::make_unique<FedAvgTrainer>(env);
}

}  // namespace ddlsim::models::detail
