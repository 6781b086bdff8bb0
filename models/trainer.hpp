// Data-parallel training on the event engine: the trainers of every synchronisation
// scheme (docs/CONTRACT.md §2 `sync`), with per-worker clocks, compute/communication overlap,
// compression and stragglers. Several jobs may share one fabric.
//
//   bsp        every worker runs forward and backward; its gradient leaves in messages
//              (models/comm_plan.hpp) as backward produces them (with overlap) or at the
//              end (without); each message is a round of the job's collective that every
//              worker joins; when all of a worker's messages are done it updates and starts
//              the next iteration (with priority scheduling: layer by layer, so the next
//              forward starts as soon as the front layers are updated). Rounds are the
//              barrier: a slow worker delays everyone.
//   local_sgd  H local steps (forward, backward, update) then the model is averaged by one
//              round of the collective (Stich, ICLR 2019; Lin et al., ICLR 2020).
//   ssp / asp  parameter server: a worker pushes its gradient (to every server's shard), the
//              server applies it on arrival (version + 1), the worker pulls the latest model
//              and continues; ssp blocks a worker more than `staleness` iterations ahead of the
//              slowest (Ho et al., NeurIPS 2013); asp never blocks (Dean et al., NeurIPS 2012).
//              Staleness of an update = versions applied between the model read and the apply.
//   asp+gossip AD-PSGD (Lian et al., ICML 2018): after each step a worker averages its model
//              with one neighbour (seeded choice), exchanging models both ways, no barrier.
//   fedavg     per round, `clients_per_round` available clients are sampled (seeded); each
//              downloads the model, runs `local_steps` steps, uploads it; the server averages
//              when all uploads arrived (McMahan et al., AISTATS 2017).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "models/job.hpp"
#include "sim/network.hpp"
#include "sim/trace.hpp"
#include "topologies/fabric.hpp"

namespace ddlsim::models {

/// What a run of one or more jobs on one fabric produced.
struct FlowRun {
    std::vector<JobResult> jobs;
    std::uint64_t events = 0;
    std::uint64_t transfers = 0;
    /// Flow classes: the shift P the run simulated per class (sim/symmetry.hpp), 0 where it simulated every transfer.
    std::uint32_t flow_class_period = 0;
    /// Where it simulated every transfer of a flow-network run: why no shift was a symmetry ("" where none was tried
    /// because classes were off: --no-flow-classes, a timeline, the analytic model).
    std::string flow_class_reason;
    double makespan_s = 0.0;
    std::vector<sim::LinkStats> links;  ///< per directed link (Fabric numbering); flow model only
};

struct SimOptions {
    /// Contention-free α-β network: a transfer takes latency + bytes / bottleneck bandwidth,
    /// a collective round its closed-form time once every endpoint has joined.
    bool analytic = false;
    sim::Trace* trace = nullptr;  ///< record a timeline here when set
    /// Called every sim::Engine::kProgressEvents events with the events so far and the simulated seconds.
    std::function<void(std::uint64_t events, double simulated_s)> progress;
    /// Simulate transfers a shift of the workers maps onto each other once per class, where the run is symmetric
    /// (sim/symmetry.hpp; exact, and found while running: any asymmetry reruns with every transfer).
    bool flow_classes = true;
    /// Called before a run that tried flow classes and found no symmetry simulates every transfer (it may throw to
    /// refuse that run).
    std::function<void()> before_full_run;
};

/// Runs the jobs together on `fabric`.
[[nodiscard]] FlowRun simulate(const topo::Fabric& fabric, const std::vector<TrainingJob>& jobs,
                               const SimOptions& options = {});

/// Whether the closed form below applies (bsp, no overlap, identical workers, no stragglers).
[[nodiscard]] bool closed_form_applies(const TrainingJob& job);
/// Closed-form α-β estimate of one job alone: iteration = compute + codec + Σ phase times.
/// Needs closed_form_applies(job).
[[nodiscard]] JobResult simulate_closed_form(const topo::Fabric& fabric, const TrainingJob& job);

/// What the up-front limits know of a sharded job before it is placed.
struct ShardedShape {
    const Workload* workload = nullptr;
    ShardingSpec sharding;
    double workers = 1.0;
    double gpus_per_node = 1.0;  ///< of the topology (1 where it has no nodes)
    double accumulation = 1.0;   ///< micro-batches per step
    double messages = 1.0;       ///< gradient messages per step (stages 1 and 2: the overlap's grouping)
    double nics_per_node = 1.0;  ///< of the topology: rings across nodes run a channel per NIC
};
/// The flow model's events for one step of a sharded job (models/trainer_sharded.cpp's schedule): an estimate
/// of four events per ring transfer and per worker and collective, one per compute step.
[[nodiscard]] double sharded_step_events(const ShardedShape& s);

}  // namespace ddlsim::models
