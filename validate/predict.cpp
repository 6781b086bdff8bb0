#include "validate/predict.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "models/compression.hpp"
#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/unit_parse.hpp"

namespace ddlsim::validate {
namespace {

using nlohmann::json;

json layers_json(const Calibration& cal, double slowdown, double param_scale, double extra_update_s) {
    json layers = json::array();
    for (std::size_t i = 0; i < cal.layers.size(); ++i) {
        const auto& l = cal.layers[i];
        layers.push_back(
            {{"name", l.name},
             {"params", static_cast<std::uint64_t>(std::llround(static_cast<double>(l.params) * param_scale))},
             {"fwd_time", l.fwd_time * slowdown},
             {"bwd_time", l.bwd_time * slowdown},
             {"update_time", l.update_time * slowdown + (i == 0 ? extra_update_s : 0.0)}});
    }
    return layers;
}

// The simulator derives codec time from memory traffic and arithmetic at the device's rates; its
// `cost_scale` is fitted here so that its encode + decode of the model's tensors takes what the
// calibration measured for the run's codec work (x the sharing slowdown: every worker codes at once).
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
    const auto& cp = cal.codecs.at(codec_name(c.codec.kind));
    const double n = c.workers;
    double measured = elements * (cp.encode_s_per_element + decodes * cp.decode_s_per_element);
    if (summable(c.codec.kind) && c.architecture == topo::ArchKind::allreduce && c.workers > 1)
        measured += elements * (cp.encode_s_per_element + 2.0 * (n - 1.0) / n * cp.decode_s_per_element);
    return modelled > 0.0 ? measured / modelled * cal.slowdown(c.workers) : 1.0;
}

}  // namespace

json scenario_for(const RunConfig& c, const Calibration& cal) {
    const double slowdown = cal.slowdown(c.workers);
    double bandwidth = cal.network.bandwidth_Bps;
    if (cal.network.rate_bps > 0 && c.rate_bps > 0) bandwidth = cal.network.goodput_fraction * c.rate_bps / 8.0;
    // With the transport measured, the links are what was configured (the shaped line rate, no added
    // latency) and the measured transport turns them into goodput and per-message / per-collective costs;
    // otherwise (loopback) the fitted alpha-beta links under the nominal ("ideal") transport.
    json network{{"topology", "star"},
                 {"bandwidth", sim::format_bandwidth(sim::Bandwidth::bytes_per_s(bandwidth))},
                 {"latency", cal.network.latency_s / 2.0},
                 {"transport", "ideal"}};
    if (cal.transport.measured && c.rate_bps > 0) {
        network["bandwidth"] = sim::format_bandwidth(sim::Bandwidth::bits_per_s(c.rate_bps));
        network["latency"] = sim::format_time(sim::Time::seconds(cal.transport.link_latency_s));
        network["transport"] = cal.transport.json();
    }
    json arch;
    switch (c.architecture) {
        case topo::ArchKind::allreduce: arch = {{"kind", "allreduce"}, {"algorithm", "ring"}}; break;
        case topo::ArchKind::ps: arch = {{"kind", "ps"}, {"servers", 1}, {"placement", "dedicated"}}; break;
        case topo::ArchKind::gossip: arch = {{"kind", "gossip"}, {"graph", "ring"}}; break;
    }
    json j{{"description", fmt::format("ddlsim validate: {}", c.name)},
           {"workers", c.workers},
           {"batch_size", c.batch},
           {"iterations", c.sync == models::SyncKind::local_sgd ? 2 * c.period : 6},
           {"model", {{"layers", layers_json(cal, slowdown, 1.0, 0.0)}}},
           {"device",
            {{"peak_flops", cal.peak_flops},
             {"efficiency", 1.0},
             {"memory_bandwidth", sim::format_bandwidth(sim::Bandwidth::bytes_per_s(cal.memory_bandwidth))}}},
           {"network", network},
           {"architecture", arch}};
    if (c.sync == models::SyncKind::local_sgd) j["sync"] = {{"kind", "local_sgd"}, {"period", c.period}};
    if (c.codec.kind != CodecKind::none) {
        json comp{{"kind", codec_name(c.codec.kind)}};
        if (c.codec.kind == CodecKind::qsgd) comp["bits"] = c.codec.bits;
        if (c.codec.kind == CodecKind::topk) comp["density"] = c.codec.density;
        if (c.codec.error_feedback) comp["error_feedback"] = true;
        comp["cost_scale"] = codec_cost_scale(c, cal);
        j["compression"] = comp;
    }
    return j;
}

Prediction predict(const RunConfig& c, const Calibration& cal) {
    json j = scenario_for(c, cal);
    const auto s = scenario::load_scenario(j, ".");
    return {scenario::run_scenario(s).jobs.at(0).iteration_time_s, std::move(j)};
}

}  // namespace ddlsim::validate
