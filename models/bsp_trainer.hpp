// Bulk-synchronous data-parallel training on the event engine. Each worker runs
// forward, backward, then joins the iteration's synchronisation round (it opens
// its gate in that round), waits until its part of the round is done, applies the
// update and starts the next iteration. Rounds of different iterations are
// separate, sharing one network, so a fast worker's next round may overlap a slow
// worker's current one. No overlap of compute and communication (SPEC §4:
// iteration = forward + backward + communication + update). Several jobs may
// share one fabric, each with its own trainer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "models/job.hpp"
#include "sim/engine.hpp"
#include "sim/network.hpp"
#include "sim/transfer_dag.hpp"
#include "topologies/collectives.hpp"
#include "topologies/fabric.hpp"

namespace ddlsim::models {

class BspTrainer {
public:
    BspTrainer(sim::Engine& engine, sim::Network& network, const topo::Fabric& fabric, const TrainingJob& job);
    BspTrainer(const BspTrainer&) = delete;
    BspTrainer& operator=(const BspTrainer&) = delete;

    /// Schedules the first iteration of every worker at the current time.
    void start();
    /// Valid once the engine has run to completion.
    [[nodiscard]] JobResult result() const;

private:
    struct Worker {
        std::uint32_t iteration = 0;
        sim::Time sync_started;
        sim::Time sync_total;
        sim::Time finished;
    };
    struct Round {
        std::unique_ptr<sim::Round> runner;
        std::uint32_t endpoints_left = 0;
    };

    void begin_iteration(std::uint32_t w);
    void gradient_ready(std::uint32_t w);
    void endpoint_done(std::uint32_t iteration, std::uint32_t e);
    Round& round(std::uint32_t iteration);
    const sim::Route& route(std::uint32_t a, std::uint32_t b) const;

    sim::Engine& engine_;
    sim::Network& network_;
    const topo::Fabric& fabric_;
    const TrainingJob& job_;
    std::unique_ptr<topo::Collective> collective_;
    std::vector<Worker> workers_;
    std::map<std::uint32_t, Round> rounds_;
};

/// What a flow-model run of one or more jobs on one fabric produced.
struct FlowRun {
    std::vector<JobResult> jobs;
    std::uint64_t events = 0;
    std::uint64_t transfers = 0;
    double makespan_s = 0.0;
    std::vector<sim::LinkStats> links;  ///< per directed link (Fabric numbering)
};

/// Runs the jobs together on `fabric` with the flow model.
[[nodiscard]] FlowRun simulate_flow(const topo::Fabric& fabric, const std::vector<TrainingJob>& jobs);
/// Closed-form α-β estimate of one job alone (no event queue, no contention between flows).
[[nodiscard]] JobResult simulate_analytic(const topo::Fabric& fabric, const TrainingJob& job);

}  // namespace ddlsim::models
