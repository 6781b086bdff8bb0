// DiLoCo's outer step (Douillard et al., "DiLoCo: Distributed Low-Communication Training of Language Models",
// arXiv 2311.08105, 2023, Algorithm 1) and Streaming DiLoCo's fragments (Douillard et al., "Streaming DiLoCo with
// overlapping communication", arXiv 2501.18512, 2025, §2).
//
// The job's workers form `islands` equal groups of consecutive workers. Inside an island the workers train by BSP
// with DDP (every step's gradients all-reduced in the island only: models/comm_plan.cpp builds the collectives per
// island) or sharded inside the island (models/trainer_sharded.cpp: the shard groups are the islands). Every period /
// fragments steps one fragment of the model (consecutive layers, the fragments of about equal size, taken in turn) gets
// its outer step:
//   1. outer gradient   the island's change of the fragment since its last outer step, identical on the island's
//                       g workers after BSP; worker j takes its 1/g slice and all-reduces it with rank j of every
//                       other island (rings across the islands, HSDP's replica all-reduce: 2(R-1)/R x S_f/g per
//                       worker for R islands, at the gradients' width)
//   2. outer update     Nesterov momentum on that slice: the inner optimizer's update time scaled to S_f / S and
//                       divided by g (memory-bound, like the inner update)
//   3. all-gather       the island's workers gather the updated fragment from their slices (a ring over the island);
//                       not with sharded islands of stage 3, whose next forward gathers the parameters anyway
// Islands may shard their model state (sharding stage 1-3 over the island's workers, INTELLECT-1's FSDP islands:
// Jaghouar et al., arXiv 2412.01152): their workers then hold the slices the outer step works on.
// With overlap_steps = tau the workers run tau more inner steps while it travels and apply it before the next one
// (Streaming DiLoCo's overlap); with tau = 0 they wait for it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "models/job.hpp"
#include "models/program/planner.hpp"
#include "topologies/collectives.hpp"
#include "topologies/fabric.hpp"

namespace ddlsim::models {

class OuterPlan {
public:
    struct Fragment {
        double bytes = 0.0;  ///< S_f: the fragment's parameters at the gradients' width
        /// The collectives in order, before and after the outer update (none where nothing moves: one island, or
        /// one worker per island), planned by the job's planner.
        std::optional<program::CommOp> across, gather;
        double wire_bytes = 0.0, machine_bytes = 0.0;  ///< one outer step of this fragment
    };

    /// `planner`: the job's, which builds the collectives (over its context's channels).
    OuterPlan(const TrainingJob& job, program::Planner& planner);
    [[nodiscard]] const topo::Collective& collective(const program::CommOp& op) const {
        return planner_.collective(op);
    }

    /// Whether an outer step starts after inner step k (0-based), and which launch it is.
    [[nodiscard]] bool launches_after(std::uint32_t k) const { return !fragments_.empty() && (k + 1) % spacing_ == 0; }
    [[nodiscard]] std::uint32_t launch_after(std::uint32_t k) const { return (k + 1) / spacing_ - 1; }
    [[nodiscard]] const Fragment& fragment_of(std::uint32_t launch) const {
        return fragments_[launch % fragments_.size()];
    }
    /// Outer steps in `iterations` inner steps.
    [[nodiscard]] std::uint32_t launches(std::uint32_t iterations) const {
        return fragments_.empty() ? 0 : iterations / spacing_;
    }
    /// Bytes on the wire (and between machines) of the outer steps of `iterations` inner steps.
    [[nodiscard]] double wire_bytes(std::uint32_t iterations) const;
    [[nodiscard]] double machine_bytes(std::uint32_t iterations) const;
    /// Collective rounds of the outer steps of `iterations` inner steps.
    [[nodiscard]] double collectives(std::uint32_t iterations) const;
    /// Worker w's outer update of fragment f's slice.
    [[nodiscard]] sim::Time update_time(const Fragment& f, std::uint32_t w) const;
    [[nodiscard]] std::uint32_t overlap_steps() const { return overlap_steps_; }

private:
    template <typename F>
    [[nodiscard]] double over_launches(std::uint32_t iterations, F per_fragment) const;

    const TrainingJob& job_;
    program::Planner& planner_;
    std::uint32_t spacing_ = 1;
    std::uint32_t overlap_steps_ = 0;
    double island_size_ = 1.0;
    std::vector<Fragment> fragments_;
};

}  // namespace ddlsim::models
