#include "validate/predict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "models/compression.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/unit_parse.hpp"

namespace ddlsim::validate {
namespace {

using nlohmann::json;

// The calibrated layers as a custom model's layers, each time x `slowdown` (several workers share the machine).
std::vector<models::Layer> layers_of(const Calibration& cal, double slowdown) {
    std::vector<models::Layer> out;
    for (const auto& l : cal.layers) {
        models::Layer layer;
        layer.name = l.name;
        layer.tensors = {{l.name, static_cast<std::int64_t>(l.params)}};
        layer.fwd_time = sim::Time::seconds(l.fwd_time * slowdown);
        layer.bwd_time = sim::Time::seconds(l.bwd_time * slowdown);
        layer.update_time = sim::Time::seconds(l.update_time * slowdown);
        out.push_back(std::move(layer));
    }
    return out;
}

// The simulator derives codec time from memory traffic and arithmetic at the device's rates; its
// `cost_scale` is fitted here so that its encode + decode of the model's tensors takes what the
// calibration measured for the run's codec work, each part x the slowdown of what runs it while every worker codes
// at once: on the CPU backend both parts share the cores (the measured sharing slowdown); on the CUDA backend the
// encode shares the one GPU (the measured slowdown) while the decode runs on the host (nn_cuda.cpp: CudaCodec's
// decode_add is the CPU decoder), whose cores the workers share only beyond their count. Measured on an H200 before
// this split (2026-12-04): qsgd +90 % and signsgd +116 % off, the host's decode slowed as if it ran on the GPU.
double codec_cost_scale(const RunConfig& c, const Calibration& cal) {
    models::CompressionSpec ms;
    if (c.codec.kind == CodecKind::none) return 1.0;
    ms.kind = codec_name(c.codec.kind);  // the real codecs carry the simulator's compressor names
    ms.bits = c.codec.bits;
    ms.density = c.codec.density;
    ms.error_feedback = c.codec.error_feedback;
    const auto compressor = models::make_compressor(ms);
    models::DeviceSpec d;
    d.name = "measured";
    d.peak = sim::FlopRate::per_s(cal.peak_flops);
    d.efficiency = 1.0;
    d.memory_bandwidth = sim::Bandwidth::bytes_per_s(cal.memory_bandwidth);
    const double decodes = summable(c.codec.kind) ? 1.0 : static_cast<double>(c.workers);
    double modelled = 0.0, elements = 0.0;
    for (const auto& l : cal.layers) {
        const auto t = compressor->compress({l.params, l.params, 1}, 4.0);
        modelled += models::codec_time(t.encode, d, 1.0).seconds() +
                    decodes * models::codec_time(t.decode_per_payload, d, 1.0).seconds();
        elements += static_cast<double>(l.params);
    }
    // Measured: the worker's own encode and decode, and for summable payloads the ring's in-flight
    // work too (each hop decodes and re-encodes a chunk, the all-gather decodes the others' chunks:
    // one more encode and 2(n-1)/n more decodes of the whole gradient), which the simulator leaves out.
    // The ring's in-flight work runs on the host on either backend (collectives.cpp codes the CPU buffers).
    const auto& cp = cal.codecs.at(codec_name(c.codec.kind));
    const double n = c.workers;
    const double device = cal.slowdown(c.workers);
    const double cores = std::max(1U, std::thread::hardware_concurrency());
    const double host = cal.backend == Backend::cuda ? std::max(1.0, n / cores) : device;
    double measured = elements * (cp.encode_s_per_element * device + decodes * cp.decode_s_per_element * host);
    if (summable(c.codec.kind) && c.architecture == topo::ArchKind::allreduce && c.workers > 1)
        measured += elements * host * (cp.encode_s_per_element + 2.0 * (n - 1.0) / n * cp.decode_s_per_element);
    return modelled > 0.0 ? measured / modelled : 1.0;
}

}  // namespace

json scenario_for(const RunConfig& c, const Calibration& cal) {
    // The scenario as typed blocks, written out by the loader's key tables (scenario::resolved_scenario): every
    // key is spelt once, in its table, and the file reruns to the same result.
    scenario::JobSpec job;
    job.workers = c.workers;
    job.batch_size = c.batch;
    job.model_name = "custom";
    job.workload.layers = layers_of(cal, cal.slowdown(c.workers));
    job.device.name = "custom";
    job.device.peak = sim::FlopRate::per_s(cal.peak_flops);
    job.device.efficiency = 1.0;
    job.device.memory_bandwidth = sim::Bandwidth::bytes_per_s(cal.memory_bandwidth);
    job.architecture.kind = c.architecture;  // allreduce: ring; ps: one dedicated server; gossip: a ring
    job.sync.kind = c.sync;
    job.sync.period = c.period;
    if (c.codec.kind != CodecKind::none) {
        job.compression.kind = codec_name(c.codec.kind);
        job.compression.bits = c.codec.bits;
        job.compression.density = c.codec.density;
        job.compression.error_feedback = c.codec.error_feedback;
        job.compression.cost_scale = codec_cost_scale(c, cal);
    }
    scenario::Scenario s;
    s.iterations = c.sync == models::SyncKind::local_sgd ? 2 * c.period : 6;
    // With the transport measured, the links are what was configured (the shaped line rate, no added latency)
    // and the measured transport turns them into goodput and per-message / per-collective costs; otherwise
    // (loopback) the fitted alpha-beta links under the nominal ("ideal") transport.
    double bandwidth = cal.network.bandwidth_Bps;
    if (cal.network.rate_bps > 0 && c.rate_bps > 0) bandwidth = cal.network.goodput_fraction * c.rate_bps / 8.0;
    topo::StarSpec star{c.workers + (c.architecture == topo::ArchKind::ps ? 1U : 0U),
                        sim::Bandwidth::bytes_per_s(bandwidth), sim::Time::seconds(cal.network.latency_s / 2.0)};
    s.transports.inter = topo::transport_preset(topo::TransportKind::ideal);
    if (cal.transport.measured && c.rate_bps > 0) {
        star.bandwidth = sim::Bandwidth::bits_per_s(c.rate_bps);
        star.latency = sim::Time::seconds(cal.transport.link_latency_s);
        s.transports.inter = cal.transport.spec();
    }
    s.topology = star;
    s.jobs.push_back(std::move(job));
    return scenario::resolved_scenario(s);
}

Prediction predict(const RunConfig& c, const Calibration& cal) {
    json j = scenario_for(c, cal);
    const auto s = scenario::load_scenario(j, ".");
    return {scenario::run_scenario(s).jobs.at(0).iteration_time_s, std::move(j)};
}

}  // namespace ddlsim::validate
