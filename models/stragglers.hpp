// Per-worker, per-iteration compute slowdowns (docs/CONTRACT.md §2 `stragglers`). Every draw is a
// pure function of (seed, worker, iteration) — counter-based draws from the "stragglers"
// stream of sim/rng.hpp — so results do not depend on the order in which events happen
// to run, and the same scenario and seed give the same slowdowns on any platform.
//
//   fixed        worker w computes `factor` times slower in every iteration
//   lognormal    factor exp(sigma * |Z|), Z ~ N(0, 1): a log-normal slowdown folded at 1 (median
//                exp(0.674 sigma)), so nobody computes faster than its device allows; the usual
//                heavy-tailed model of step-time jitter (e.g. Dutta et al., AISTATS 2018)
//   exponential  an added delay ~ Exp(mean) before the iteration's compute (system noise)
//   periodic     one iteration in `every` (iteration % every == worker % every, so slow
//                iterations rotate over the workers) is `slowdown` times slower
// Fixed factors and distributions compose: factor = fixed * distribution factor.
#pragma once

#include <cstdint>

#include "models/job.hpp"
#include "sim/units.hpp"

namespace ddlsim::models {

struct StepSlowdown {
    double factor = 1.0;  ///< multiplies forward, backward and update time
    sim::Time delay;      ///< added before the iteration's compute
};

/// The slowdown of `worker`'s iteration `iteration` (a local step).
[[nodiscard]] StepSlowdown straggler(const StragglerSpec& s, std::uint64_t seed, std::uint32_t worker,
                                     std::uint64_t iteration);

}  // namespace ddlsim::models
