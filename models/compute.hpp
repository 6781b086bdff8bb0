// The compute model. Per layer and per iteration (a local batch of b samples):
//   forward  = fwd_flops * b / (peak * efficiency)
//   backward = 2 * forward                      (weight and input gradients)
//   update   = parameter bytes / memory bandwidth
// Times a layer gives explicitly are used exactly. With device.samples_per_s the
// derived times are scaled by one factor so that a single worker with no
// communication runs b / samples_per_s seconds per iteration.
#pragma once

#include <vector>

#include "models/device.hpp"
#include "models/workload.hpp"
#include "sim/units.hpp"

namespace ddlsim::models {

struct LayerTimes {
    sim::Time fwd;
    sim::Time bwd;
    sim::Time update;
};

/// Per-layer compute times of one iteration of one worker.
struct ComputeProfile {
    std::vector<LayerTimes> layers;  ///< forward order
    sim::Time fwd;                   ///< totals over layers
    sim::Time bwd;
    sim::Time update;

    [[nodiscard]] sim::Time iteration() const { return fwd + bwd + update; }
};

/// Derives the compute profile; throws std::invalid_argument when samples_per_s
/// cannot be met (all times explicit, explicit times already too long, or no work).
[[nodiscard]] ComputeProfile compute_profile(const Workload& w, const DeviceSpec& d, std::uint32_t batch,
                                             double bytes_per_param);

}  // namespace ddlsim::models
