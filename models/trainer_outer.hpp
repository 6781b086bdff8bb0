// DiLoCo's outer steps as the trainers run them (internal to models/; the schedule is stated in models/diloco.hpp):
// the synchronous trainer (DDP islands, models/trainer_sync.cpp) and the sharded one (sharded islands,
// models/trainer_sharded.cpp) tell it when a worker ends an inner step and ask it whether the next may begin.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/diloco.hpp"
#include "models/trainer_detail.hpp"

namespace ddlsim::models::detail {

class OuterSteps {
public:
    /// `resume(w)` begins worker w's next inner step once an outer step it waited for has landed; `planner`: the
    /// job's, which plans the outer steps' collectives.
    OuterSteps(const TrainerEnv& env, Comm& comm, std::vector<WorkerClock>& clocks, program::Planner& planner,
               std::function<void(std::uint32_t)> resume);

    /// Worker w ended inner step k (0-based): the outer step due after it starts; returns whether w may begin its
    /// next inner step now (otherwise `resume` begins it later).
    [[nodiscard]] bool step_done(std::uint32_t w, std::uint32_t k);
    /// The outer steps' bytes, collectives and rounds of the job's run added to its result.
    void add_to(JobResult& r) const;

private:
    struct Pending {
        std::uint32_t launch = 0;
        std::uint32_t deadline = 0;  ///< applied before this inner step begins
        sim::Time start;
    };
    struct RoundState {
        std::unique_ptr<sim::Round> runner;
        std::uint32_t endpoints_left = 0;
    };
    /// Whether worker w's next inner step waits for an outer step still on its way.
    [[nodiscard]] bool blocked(std::uint32_t w) const;
    void phase(std::uint32_t w, std::uint32_t launch, std::uint32_t p);
    RoundState& round(std::uint32_t launch, std::uint32_t part, const topo::Collective& c);
    void done(std::uint32_t w, std::uint32_t launch);

    TrainerEnv env_;
    const TrainingJob& job_;
    Comm& comm_;
    std::vector<WorkerClock>& clocks_;
    OuterPlan plan_;
    std::function<void(std::uint32_t)> resume_;
    std::vector<std::uint32_t> next_;  ///< per worker: the inner step it begins next
    std::vector<std::vector<Pending>> pending_;
    std::vector<char> waiting_;
    std::unordered_map<std::uint64_t, RoundState> rounds_;
};

}  // namespace ddlsim::models::detail
