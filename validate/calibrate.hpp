// Calibration: the cost-model parameters the simulator needs, measured on this machine.
//   compute   per-layer forward / backward / update seconds of one worker at the calibration
//             batch (timed layer by layer in one process); the effective FLOP rate
//             = sum of 3 x forward FLOPs / sum of forward + backward seconds; memory bandwidth
//             from a large copy
//   sharing   k worker processes computing at once on this machine's cores (or one GPU):
//             slowdown(k) measured for a few k and fitted by max(1, k / slots)
//   codecs    encode and decode seconds per gradient element of every compressor
//   network   ping-pong between two hosts of the transport in use (one size S one way, a tiny
//             reply), sizes 1 B .. 2 MB; one-way time T(S) = RTT(S) - RTT(1 B) / 2; Hockney's model
//             T(S) = alpha + S / beta with alpha = T(1 B) and 1 / beta the least-squares slope over
//             the sizes >= 64 KB (smaller ones partly leave within the token bucket's burst)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/codec.hpp"
#include "validate/dataset.hpp"
#include "validate/netns.hpp"
#include "validate/nn.hpp"

namespace ddlsim::validate {

struct LayerProfile {
    std::string name;
    std::size_t params = 0;
    double fwd_flops = 0.0;  ///< per sample
    double fwd_time = 0.0;   ///< seconds per iteration at the calibration batch
    double bwd_time = 0.0;
    double update_time = 0.0;
};

struct CodecProfile {
    double encode_s_per_element = 0.0;
    double decode_s_per_element = 0.0;  ///< decoding one payload and adding it, per gradient element
};

struct NetworkFit {
    double latency_s = 0.0;                         ///< alpha: one-way host-to-host latency
    double bandwidth_Bps = 0.0;                     ///< beta: payload bytes per second
    double intercept_s = 0.0;                       ///< the fitted alpha before clamping to the small-message latency
    double rate_bps = 0.0;                          ///< the shaped link rate (0: unshaped)
    double goodput_fraction = 0.0;                  ///< beta / (rate / 8); 1448 / 1514 = 0.956 expected for TCP
    double rms_relative_residual = 0.0;             ///< of alpha + S / beta over the fitted sizes
    std::vector<std::pair<double, double>> points;  ///< (bytes, one-way seconds)
    std::string transport;
};

struct Calibration {
    Backend backend = Backend::cpu;
    std::string host;
    ModelKind model = ModelKind::mlp;
    std::uint32_t batch = 32;
    std::vector<LayerProfile> layers;
    double peak_flops = 0.0;
    double memory_bandwidth = 0.0;
    std::map<std::string, CodecProfile> codecs;
    double topk_density = 0.01;
    std::vector<std::pair<std::uint32_t, double>> sharing;  ///< (processes, slowdown)
    double sharing_slots = 1.0;
    NetworkFit network;
    double seconds = 0.0;  ///< how long calibrating took

    /// slowdown(k) = max(1, k / slots).
    [[nodiscard]] double slowdown(std::uint32_t k) const;
    /// The profile file (format "ddlsim-profile-1"; `device` is a scenario device object).
    [[nodiscard]] nlohmann::json profile_json() const;
    /// Reads back the compute part of profile_json() (host, device, layers, codecs).
    void read_compute(const nlohmann::json& profile);
    /// Everything measured, for the report.
    [[nodiscard]] nlohmann::json details_json() const;
};

struct CalibrationOptions {
    Backend backend = Backend::cpu;
    ModelKind model = ModelKind::mlp;
    std::uint32_t batch = 32;
    std::uint32_t iterations = 30;  ///< timed layer-profile iterations
    std::vector<std::uint32_t> sharing{1, 2, 4};
    double topk_density = 0.01;
    std::uint32_t pingpong_repeats = 5;
    bool measure_network = true;
    std::uint64_t seed = 1;
};

/// Measures compute, sharing and codecs on `train`, and the network between hosts 0 and 1 of `net`.
[[nodiscard]] Calibration calibrate(const CalibrationOptions& o, const Dataset& train, HostNetwork& net,
                                    std::ostream& log);

/// Least squares of y = a + b x with weights w; returns {a, b}.
[[nodiscard]] std::pair<double, double> weighted_line_fit(const std::vector<double>& x, const std::vector<double>& y,
                                                          const std::vector<double>& w);
/// The slots s minimising sum (slowdown_k - max(1, k / s))^2.
[[nodiscard]] double fit_sharing_slots(const std::vector<std::pair<std::uint32_t, double>>& slowdowns);

/// Whether `backend` runs here, asked in a child process (see in_child); `why` says why not.
[[nodiscard]] bool probe_backend(Backend backend, std::string* why);

/// A description of this machine ("host: CPU model, N cores" or the GPU's name).
[[nodiscard]] std::string host_description(Backend b);

}  // namespace ddlsim::validate
