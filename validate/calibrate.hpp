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
//   transport the terms of the simulator's transport (topologies/transport.hpp), from the same two hosts:
//             efficiency = beta / line rate (the shaped rate); message_overhead = alpha - 2 x the
//             configured link latency (0 here: no netem) - the 1-byte message / beta; collective_overhead
//             = the time of a ring all-reduce of n tiny chunks (back to back, median) - 2(n-1) x the
//             one-way time of a tiny point-to-point message (clamped at 0; the raw value is reported)
//   overlap   compute slowdown beside communication: the compute step (the model's forward + backward:
//             GEMMs on the CPU backend, cuBLAS on CUDA) timed in alternating blocks alone and while a
//             thread of the same process moves 1 MB messages over the shaped link; slowdown = median
//             beside / median alone - 1 (clamped at 0; raw value reported)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "topologies/transport.hpp"
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

/// The transport terms of topologies/transport.hpp, measured (kind "tcp").
struct TransportFit {
    bool measured = false;               ///< false on loopback (no line rate to compare with)
    double efficiency = 0.0;             ///< beta / (line rate / 8)
    double link_latency_s = 0.0;         ///< configured one-way latency of one link (no netem here: 0)
    double message_overhead_s = 0.0;     ///< alpha - 2 x link latency - 1 B / beta
    double collective_overhead_s = 0.0;  ///< max(0, collective_raw_s)
    double collective_raw_s = 0.0;       ///< collective_s - 2(n-1) x p2p_s
    double collective_s = 0.0;           ///< median ring all-reduce time of n tiny chunks
    double p2p_s = 0.0;                  ///< one-way time of a tiny message (alpha)
    std::uint32_t ranks = 2;
    std::uint32_t repeats = 0;
    /// The tcp preset with the measured efficiency and overheads (stream_rate and streams keep the preset's cited
    /// values, topologies/transport.cpp).
    [[nodiscard]] topo::TransportSpec spec() const;
    /// The profile's "network"."transport" object (what `network.profile` reads): spec() as the key table
    /// writes it.
    [[nodiscard]] nlohmann::json json() const;
};

/// Compute slowdown while the same process's transport thread moves data.
struct OverlapFit {
    bool measured = false;
    double alone_s = 0.0;        ///< median compute step alone
    double beside_s = 0.0;       ///< median compute step while the transport thread sends
    double raw = 0.0;            ///< beside / alone - 1
    double slowdown = 0.0;       ///< max(0, raw)
    double transport_Bps = 0.0;  ///< payload bytes/s the thread moved while it ran
    std::uint32_t steps = 0;     ///< compute steps per condition
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
    TransportFit transport;
    OverlapFit overlap;
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
    std::uint32_t collective_repeats = 40;  ///< tiny ring all-reduces timed for the collective overhead
    std::uint32_t overlap_blocks = 4;       ///< alternating alone / beside blocks of the overlap measurement
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
