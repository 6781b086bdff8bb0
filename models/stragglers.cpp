#include "models/stragglers.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ddlsim::models {

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

}  // namespace

double counter_uniform(std::uint64_t key, std::uint64_t n) {
    const std::uint64_t bits = splitmix64(splitmix64(key) ^ (n * 0xd1b54a32d192ed03ULL));
    return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53;  // in (0, 1)
}

StepSlowdown straggler(const StragglerSpec& s, std::uint64_t seed, std::uint32_t worker, std::uint64_t iteration) {
    StepSlowdown out;
    for (const auto& f : s.fixed)
        if (f.first == worker) out.factor *= f.second;
    if (s.distribution == StragglerDistribution::none) return out;
    if (!s.workers.empty() && std::find(s.workers.begin(), s.workers.end(), worker) == s.workers.end()) return out;
    const std::uint64_t key = seed ^ (static_cast<std::uint64_t>(worker) << 40) ^ 0x5717a66e5ULL;
    switch (s.distribution) {
        case StragglerDistribution::lognormal: {
            // Box–Muller from two independent uniforms.
            const double u1 = counter_uniform(key, 2 * iteration);
            const double u2 = counter_uniform(key, 2 * iteration + 1);
            const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
            out.factor *= std::exp(s.sigma * std::abs(z));  // a slowdown, never a speed-up
            break;
        }
        case StragglerDistribution::exponential:
            out.delay = sim::Time::seconds(-std::log(counter_uniform(key, iteration)) * s.mean_delay.seconds());
            break;
        case StragglerDistribution::periodic:
            if (iteration % s.every == worker % s.every) out.factor *= s.slowdown;
            break;
        case StragglerDistribution::none: break;
    }
    return out;
}

}  // namespace ddlsim::models
