#include "models/compute.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace ddlsim::models {

ComputeProfile compute_profile(const Workload& w, const DeviceSpec& d, std::uint32_t batch, double bytes_per_param) {
    struct Seconds {
        double fwd, bwd, update;
        bool fwd_fixed, bwd_fixed, update_fixed;
    };
    const double rate = d.sustained().per_s();
    std::vector<Seconds> raw;
    raw.reserve(w.layers.size());
    double fixed = 0.0;
    double derived = 0.0;
    for (const Layer& l : w.layers) {
        Seconds s{};
        s.fwd_fixed = l.fwd_time.has_value();
        s.fwd = s.fwd_fixed ? l.fwd_time->seconds() : l.fwd_flops * batch / rate;
        s.bwd_fixed = l.bwd_time.has_value();
        s.bwd = s.bwd_fixed ? l.bwd_time->seconds() : 2.0 * s.fwd;
        s.update_fixed = l.update_time.has_value();
        s.update = s.update_fixed
                       ? l.update_time->seconds()
                       : static_cast<double>(l.params()) * bytes_per_param / d.memory_bandwidth.bytes_per_s();
        for (auto [t, f] : {std::pair{s.fwd, s.fwd_fixed}, {s.bwd, s.bwd_fixed}, {s.update, s.update_fixed}})
            (f ? fixed : derived) += t;
        raw.push_back(s);
    }

    double scale = 1.0;
    if (d.samples_per_s) {
        const double target = batch / *d.samples_per_s;
        if (derived <= 0.0)
            throw std::invalid_argument(
                "device.samples_per_s needs layers whose times are derived (fwd_flops or parameters), not all fixed");
        if (fixed >= target)
            throw std::invalid_argument(
                fmt::format("device.samples_per_s = {} means {:.6g} s per iteration, but explicit layer times already "
                            "take {:.6g} s",
                            *d.samples_per_s, target, fixed));
        scale = (target - fixed) / derived;
    }

    if (!(fixed + derived * scale < 1e6))
        throw std::invalid_argument(
            fmt::format("one iteration would compute for {:.3g} s; expected under 1e6 s "
                        "(check batch_size, efficiency and peak_flops)",
                        fixed + derived * scale));
    ComputeProfile p;
    for (const Seconds& s : raw) {
        const LayerTimes lt{sim::Time::seconds(s.fwd_fixed ? s.fwd : s.fwd * scale),
                            sim::Time::seconds(s.bwd_fixed ? s.bwd : s.bwd * scale),
                            sim::Time::seconds(s.update_fixed ? s.update : s.update * scale)};
        p.fwd += lt.fwd;
        p.bwd += lt.bwd;
        p.update += lt.update;
        p.layers.push_back(lt);
    }
    return p;
}

}  // namespace ddlsim::models
