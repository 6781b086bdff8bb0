#include "models/stragglers.hpp"

#include <algorithm>
#include <cmath>

#include "sim/rng.hpp"

namespace ddlsim::models {

StepSlowdown straggler(const StragglerSpec& s, std::uint64_t seed, std::uint32_t worker, std::uint64_t iteration) {
    StepSlowdown out;
    for (const auto& f : s.fixed)
        if (f.first == worker) out.factor *= f.second;
    if (s.distribution == StragglerDistribution::none) return out;
    if (!s.workers.empty() && std::find(s.workers.begin(), s.workers.end(), worker) == s.workers.end()) return out;
    // The draws of (seed, worker, iteration): one key per worker in the "stragglers" stream, counter = iteration.
    const std::uint64_t key = sim::rng::substream(sim::rng::stream(seed, "stragglers"), worker);
    switch (s.distribution) {
        case StragglerDistribution::lognormal:
            out.factor *= std::exp(s.sigma * std::abs(sim::rng::normal(key, iteration)));  // never a speed-up
            break;
        case StragglerDistribution::exponential:
            out.delay = sim::Time::seconds(sim::rng::exponential(key, iteration) * s.mean_delay.seconds());
            break;
        case StragglerDistribution::periodic:
            if (iteration % s.every == worker % s.every) out.factor *= s.slowdown;
            break;
        case StragglerDistribution::none: break;
    }
    return out;
}

}  // namespace ddlsim::models
