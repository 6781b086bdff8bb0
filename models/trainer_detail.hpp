// Pieces shared by the trainers (internal to models/).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "models/comm_plan.hpp"
#include "models/job.hpp"
#include "models/trainer.hpp"
#include "sim/engine.hpp"
#include "sim/network.hpp"
#include "sim/symmetry.hpp"
#include "sim/trace.hpp"
#include "sim/transfer_dag.hpp"
#include "topologies/collectives.hpp"
#include "topologies/fabric.hpp"

namespace ddlsim::models::detail {

/// One job's access to the network: point-to-point transfers and collective rounds,
/// on the flow network or, in analytic mode, contention-free.
class Comm {
public:
    /// With `quotient`, rounds run per flow class (sim/symmetry.hpp); a round or transfer without a class form throws
    /// sim::SymmetryBroken.
    Comm(sim::Engine& engine, sim::Network& network, const topo::Fabric& fabric, const TrainingJob& job, bool analytic,
         sim::ShiftQuotient* quotient = nullptr);

    /// Moves `bytes` from endpoint a's host to endpoint b's (analytic: latency + bytes / bottleneck bandwidth,
    /// queued behind the transfers already using a's uplink and b's downlink).
    void send(std::uint32_t a, std::uint32_t b, sim::Bytes bytes, std::function<void()> done);
    /// Starts a round of `c`; analytic: every endpoint is done after the closed-form time once all have joined.
    /// `local`: with representatives only, no part of `c` joins a representative to an image (a model replica's
    /// tensor group): the round runs as it is, over the quotient's routes.
    [[nodiscard]] std::unique_ptr<sim::Round> start_round(const topo::Collective& c, sim::EndpointDone on_done,
                                                          std::uint32_t round, bool local = false);
    [[nodiscard]] sim::PathCost path_cost(std::uint32_t a, std::uint32_t b) const;
    [[nodiscard]] sim::Engine& engine() { return engine_; }
    /// With a quotient, only the representatives (endpoints below its period) run, each standing for its class:
    /// their sends and rounds are the classes' (a model-parallel job's replicas, models/trainer_pipeline.cpp). Else
    /// every endpoint runs and the rounds find the classes (the data-parallel trainers).
    void representatives_only() { representatives_only_ = quotient_ != nullptr; }
    /// The period of the representatives that run (0: every endpoint runs).
    [[nodiscard]] std::uint32_t representatives() const { return representatives_only_ ? quotient_->period() : 0; }

private:
    const sim::Route& route(std::uint32_t a, std::uint32_t b) const;

    sim::Engine& engine_;
    sim::Network& network_;
    const topo::Fabric& fabric_;
    const TrainingJob& job_;
    bool analytic_;
    sim::ShiftQuotient* quotient_;
    bool representatives_only_ = false;
    std::map<const topo::Collective*, sim::Time> closed_form_;
    std::vector<sim::Time> out_free_, in_free_;  ///< analytic: per host, when its NIC is free
};

/// One round of `c` alone on an idle copy of `fabric` with the job's routes, every gate open at 0: how long it
/// takes (algorithm auto's prediction, topologies/allreduce_auto.hpp).
[[nodiscard]] sim::Time solo_round_time(const TrainingJob& job, const topo::Fabric& fabric, const topo::Collective& c);

/// Timeline tracks of a job: per worker a compute and a communication track.
struct Timeline {
    sim::Trace* trace = nullptr;
    std::uint32_t pid = 0;

    /// `name` is the span's name, or a callable that makes it: per layer and per message, a name is built only
    /// when a trace records it (a 16,384-GPU step otherwise formats millions of strings it drops).
    template <class Name>
    void span(std::uint32_t tid, Name&& name, const char* cat, sim::Time a, sim::Time b) const {
        if (trace == nullptr || !(b > a)) return;
        if constexpr (std::is_invocable_v<Name>)
            trace->span(pid, tid, name(), cat, a, b);
        else
            trace->span(pid, tid, std::string(std::forward<Name>(name)), cat, a, b);
    }
    [[nodiscard]] static std::uint32_t compute(std::uint32_t w) { return 2 * w; }
    [[nodiscard]] static std::uint32_t comm(std::uint32_t w) { return 2 * w + 1; }
};

class JobTrainer {
public:
    virtual ~JobTrainer() = default;
    virtual void start() = 0;
    [[nodiscard]] virtual JobResult result() const = 0;
};

struct TrainerEnv {
    sim::Engine& engine;
    sim::Network& network;
    const topo::Fabric& fabric;
    const TrainingJob& job;
    bool analytic = false;
    Timeline timeline;
    sim::ShiftQuotient* quotient = nullptr;  ///< flow classes (models::simulate decides)
    CommPlan::Picks* picks = nullptr;        ///< auto's picks, kept across simulate's attempts
};

[[nodiscard]] std::unique_ptr<JobTrainer> make_sync_trainer(const TrainerEnv& env);          // bsp, local_sgd
[[nodiscard]] std::unique_ptr<JobTrainer> make_pipeline_trainer(const TrainerEnv& env);      // parallelism.pipeline > 1
[[nodiscard]] std::unique_ptr<JobTrainer> make_sharded_trainer(const TrainerEnv& env);       // bsp with sharding
[[nodiscard]] std::unique_ptr<JobTrainer> make_async_ps_trainer(const TrainerEnv& env);      // ssp, asp (ps)
[[nodiscard]] std::unique_ptr<JobTrainer> make_async_gossip_trainer(const TrainerEnv& env);  // asp (gossip)
[[nodiscard]] std::unique_ptr<JobTrainer> make_fedavg_trainer(const TrainerEnv& env);        // fedavg
[[nodiscard]] std::unique_ptr<JobTrainer> make_priority_trainer(const TrainerEnv& env);      // bsp, overlap.priority

/// Adds one update of staleness `s` to a histogram.
void count_staleness(std::vector<std::uint64_t>& histogram, std::uint64_t s);
/// Staleness statistics from a histogram.
void set_staleness(JobResult& r, const std::vector<std::uint64_t>& histogram);

/// Per-worker compute busy time, finish time, communication time: the common figures.
struct WorkerClock {
    sim::Time busy;        ///< computing (incl. straggler delays and codec work)
    sim::Time comm;        ///< with traffic in flight
    sim::Time comm_since;  ///< start of the current in-flight interval
    std::uint32_t in_flight = 0;
    sim::Time finished;
    sim::Time waited;  ///< held back by a staleness bound (waiting for peers, not for bytes)
    std::uint32_t iterations = 0;
    std::uint64_t updates = 0;

    void comm_begin(sim::Time now) {
        if (in_flight++ == 0) comm_since = now;
    }
    void comm_end(sim::Time now) {
        if (--in_flight == 0) comm += now - comm_since;
    }
};

/// What every trainer holds: its job, the network access, the communication plan (`model_sync`:
/// the payload is the model, one message) and a clock per worker.
class TrainerBase : public JobTrainer {
protected:
    TrainerBase(const TrainerEnv& env, bool model_sync);
    /// Appends a worker op to the schedule, when one is recorded.
    void record(OpKind k, std::uint32_t w, std::uint32_t i, sim::Time t);

    /// One worker's exchange with every parameter server, as the asynchronous schemes (SSP, ASP, FedAvg) run it:
    /// worker w pushes (to_servers) or pulls `bytes` cut evenly over the k servers (endpoints n..n+k-1), one
    /// message per server. As shard j lands, on_shard(j) runs, preceded for the last one by on_all(). Bytes between
    /// different hosts are added to *wire when given. Either callback may be empty.
    void server_exchange(std::uint32_t w, bool to_servers, sim::Bytes bytes,
                         std::function<void(std::uint32_t j)> on_shard, std::function<void()> on_all,
                         double* wire = nullptr);

    TrainerEnv env_;
    const TrainingJob& job_;
    sim::Engine& engine_;
    Comm comm_;
    CommPlan plan_;
    std::vector<WorkerClock> clocks_;
    std::shared_ptr<Schedule> schedule_;  ///< with TrainingJob::record_schedule, else null
};

/// Forward + backward (+ the update when `with_update`) of step `step` of worker w, slowdowns applied, as timeline
/// spans from `t`; returns the end time and adds the compute to the worker's busy time (the asynchronous
/// trainers: SSP/ASP, AD-PSGD, FedAvg).
sim::Time compute_step(const TrainerEnv& env, WorkerClock& clock, std::uint32_t w, std::uint64_t step, sim::Time t,
                       bool with_update);

/// The breakdown of a step whose ranks compute on the event clock: compute their mean busy time, the rest of the
/// iteration exposed communication (and, for a pipeline, its bubble).
[[nodiscard]] JobResult::Breakdown busy_breakdown(const TrainingJob& job, const std::vector<WorkerClock>& clocks,
                                                  double iteration_time_s);
/// Fills makespan, iteration time, throughput, efficiency, per-worker stats and the
/// communication figures from the clocks; `samples_per_iteration` is the cluster's.
void fill_result(const TrainingJob& job, const std::vector<WorkerClock>& clocks, std::uint32_t iterations,
                 double samples_per_iteration, JobResult& r);
/// For trainers whose workers run on their own clocks (SSP, ASP, AD-PSGD), after fill_result: nobody waits for a
/// slower worker beyond a staleness bound, so each worker trains at its own rate, 1 / T_w with T_w = its finish
/// time over its iterations, and a fast worker's idle tail after its last iteration (a finite run's artefact: it
/// would keep training) is not time of the job. The cluster's iteration (n worker steps) is n / sum(1 / T_w), the
/// harmonic mean of the T_w; throughput and scaling efficiency follow from it. Where it goes: each worker's busy
/// time (compute), time held back by a staleness bound (waiting), `codec_s` and the rest (exposed communication)
/// per step, weighted by the worker's share of the steps — the four add up to the iteration.
void own_clocks_result(const TrainingJob& job, const std::vector<WorkerClock>& clocks, double samples_per_iteration,
                       double codec_s, JobResult& r);

// When each worker's gradients (or model) of one synchronisation round were ready. The waiting figure sums each
// worker's lag behind the last one exactly (picoseconds) and in worker order, so it depends neither on the order
// the workers got there nor on the size of the clock (count x last - sum of the times cancelled digits).
struct Readiness {
    std::vector<sim::Time> at;  ///< per worker (Time::max(): not yet)

    void note(std::uint32_t w, std::uint32_t workers, sim::Time t) {
        if (at.empty()) at.assign(workers, sim::Time::max());
        at[w] = t;
    }
    [[nodiscard]] double waiting_s() const {
        sim::Time last;
        for (sim::Time t : at)
            if (t != sim::Time::max()) last = std::max(last, t);
        double sum = 0.0;
        for (sim::Time t : at)
            if (t != sim::Time::max()) sum += (last - t).seconds();
        return sum;
    }
};

class OuterSteps;
/// The figures of a synchronous replicated run (trainer_sync.cpp, trainer_priority.cpp): one synchronisation every
/// `period` iterations; `averaging`: the averaged model replaces the local one (Local SGD), so it makes the versions.
[[nodiscard]] JobResult sync_result(const TrainingJob& job, const CommPlan& plan, std::uint32_t period, bool averaging,
                                    const std::vector<WorkerClock>& clocks,
                                    const std::map<std::uint32_t, Readiness>& ready,
                                    const std::shared_ptr<Schedule>& schedule, const OuterSteps* outer);

}  // namespace ddlsim::models::detail
