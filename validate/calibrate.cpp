#include "validate/calibrate.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "scenarios/key_tables.hpp"
#include "sim/unit_parse.hpp"
#include "validate/collectives.hpp"
#include "validate/nn_backends.hpp"
#include "validate/processes.hpp"
#include "validate/transport.hpp"

namespace ddlsim::validate {
namespace {

using nlohmann::json;

double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

void profile_layers(const CalibrationOptions& o, const Dataset& train, Calibration& c) {
    auto model = make_model(o.model, o.backend, o.seed);
    ShardSampler sampler(train.size(), 1, 0, o.seed);
    std::vector<float> g(model->size());
    auto step = [&] {
        (void)model->forward_backward(train.gather(sampler.next(o.batch)));
        const auto grad = model->gradient();
        std::copy(grad.begin(), grad.end(), g.begin());
        model->apply_gradient(g, 0.01F);
    };
    for (int i = 0; i < 3; ++i) step();
    model->set_timing(true);
    model->reset_timings();
    const std::uint32_t iters = std::max<std::uint32_t>(o.iterations, 1);
    for (std::uint32_t i = 0; i < iters; ++i) step();
    model->set_timing(false);
    double flops = 0.0, seconds = 0.0;
    for (std::size_t l = 0; l < model->spec().layers.size(); ++l) {
        const auto& info = model->spec().layers[l];
        const auto& t = model->timings()[l];
        LayerProfile p{info.name, info.params, info.fwd_flops, t.fwd_s / iters, t.bwd_s / iters, t.update_s / iters};
        flops += 3.0 * info.fwd_flops * o.batch;
        seconds += p.fwd_time + p.bwd_time;
        c.layers.push_back(p);
    }
    c.peak_flops = seconds > 0 ? flops / seconds : 0.0;
}

double cpu_memory_bandwidth() {
    const std::size_t n = std::size_t{1} << 24;  // 64 MB of floats
    std::vector<float> a(n, 1.0F), b(n, 0.0F);
    double best = 1e30;
    for (int r = 0; r < 5; ++r) {
        const double t0 = now_s();
        std::memcpy(b.data(), a.data(), n * sizeof(float));
        best = std::min(best, now_s() - t0);
        a[static_cast<std::size_t>(r)] = b[n - 1];  // keep the copies observable
    }
    return 2.0 * static_cast<double>(n * sizeof(float)) / best;  // read + write
}

void profile_codecs(const CalibrationOptions& o, const Dataset& train, Calibration& c) {
    auto model = make_model(o.model, o.backend, o.seed);
    ShardSampler sampler(train.size(), 1, 0, o.seed);
    (void)model->forward_backward(train.gather(sampler.next(o.batch)));
    const std::vector<float> g(model->gradient().begin(), model->gradient().end());
    const double n = static_cast<double>(g.size());
    std::vector<float> acc(g.size());
    for (auto kind : {CodecKind::fp16, CodecKind::qsgd, CodecKind::signsgd, CodecKind::topk}) {
        CodecSpec spec{kind};
        spec.density = o.topk_density;
        spec.error_feedback = kind == CodecKind::topk || kind == CodecKind::signsgd;
        auto codec = make_codec(spec, g.size(), o.backend, o.seed);
        std::vector<double> enc, dec;
        for (int r = 0; r < 7; ++r) {
            const double t0 = now_s();
            const auto p = codec->encode(g, model->device_gradient());
            const double t1 = now_s();
            codec->decode_add(p, acc, 1.0F);
            const double t2 = now_s();
            if (r >= 2) enc.push_back(t1 - t0), dec.push_back(t2 - t1);
        }
        c.codecs[codec_name(kind)] = {median(enc) / n, median(dec) / n};
    }
}

// k processes run the compute step over one common window that starts after all of them are
// forked and warmed up; a process's time per step is the window over the steps it completed.
void measure_sharing(const CalibrationOptions& o, const Dataset& train, Calibration& c) {
    const double window = o.iterations >= 40 ? 1.5 : 0.6;
    std::vector<std::uint32_t> counts = o.sharing;
    counts.push_back(1);  // the single process again at the end: the baseline is the mean of both
    std::vector<double> per_step;
    for (std::uint32_t k : counts) {
        const double go = now_s() + 0.3 + 0.05 * k;
        const auto results = run_children(k, 300.0, [&](std::uint32_t i) {
            auto model = make_model(o.model, o.backend, o.seed);
            ShardSampler sampler(train.size(), 1, 0, o.seed + i);
            std::vector<float> g(model->size());
            auto step = [&] {
                (void)model->forward_backward(train.gather(sampler.next(o.batch)));
                const auto grad = model->gradient();
                std::copy(grad.begin(), grad.end(), g.begin());
                model->apply_gradient(g, 0.01F);
            };
            for (int w = 0; w < 2; ++w) step();
            while (now_s() < go) std::this_thread::sleep_for(std::chrono::microseconds(200));
            std::uint32_t steps = 0;
            double t = now_s();
            while (t < go + window || steps < 2) {
                step();
                ++steps;
                t = now_s();
            }
            return fmt::format("{:.9e}", (t - go) / steps);
        });
        double mean = 0.0;
        for (const auto& r : results) mean += std::stod(r) / k;
        per_step.push_back(mean);
    }
    const double base = 0.5 * (per_step.front() + per_step.back());
    for (std::size_t i = 0; i + 1 < counts.size(); ++i) c.sharing.emplace_back(counts[i], per_step[i] / base);
    c.sharing_slots = fit_sharing_slots(c.sharing);
}

// The network, the transport terms and the overlap slowdown, between hosts 0 and 1 of `net`.
// Endpoint 0 drives three phases; endpoint 1 serves them:
//   1. ping-pong: one message of each size, a 1-byte reply (alpha, beta; efficiency and message_overhead)
//   2. back-to-back ring all-reduces of n tiny chunks (collective_overhead)
//   3. the compute step in alternating blocks, alone and while a thread of endpoint 0 moves 1 MB messages
//      (endpoint 1 echoes a 1-byte reply to each) over the shaped link (overlap slowdown)
void measure_network(const CalibrationOptions& o, const Dataset& train, HostNetwork& net, Calibration& c) {
    const std::vector<double> sizes{1, 4096, 16384, 65536, 262144, 524288, 1048576, 2097152};
    constexpr std::uint32_t kRanks = 2;
    constexpr std::size_t kTinyFloats = 2 * kRanks;  // two floats (8 bytes) per ring chunk: no chunk is empty
    const std::uint32_t warm_collectives = 5, collectives = std::max<std::uint32_t>(o.collective_repeats, 3);
    std::vector<Address> addresses(2);
    std::vector<int> fds{net.listen(0, addresses[0]), net.listen(1, addresses[1])};
    std::vector<std::string> results;
    try {
        results = run_children(2, 300.0, [&](std::uint32_t e) -> std::string {
            net.enter(e);
            Mesh mesh(e, fds[e], addresses, {1 - e}, 60.0);
            std::vector<std::uint8_t> in, small(1, 0);
            std::vector<float> tiny(kTinyFloats, 1.0F);
            auto echo_until_empty = [&] {  // a 1-byte reply to every message until an empty one
                for (;;) {
                    mesh.recv(0, in);
                    if (in.empty()) return;
                    mesh.send(0, small);
                }
            };
            if (e == 1) {
                echo_until_empty();
                for (std::uint32_t r = 0; r < warm_collectives + collectives; ++r)
                    ring_allreduce(mesh, 1, kRanks, tiny);
                echo_until_empty();
                return "";
            }
            json out;
            json medians = json::array();
            std::vector<std::uint8_t> msg(static_cast<std::size_t>(sizes.back()), 1);
            for (int warm = 0; warm < 3; ++warm) {  // open the congestion window
                mesh.send(1, std::span<const std::uint8_t>(msg).first(1 << 20));
                mesh.recv(1, in);
            }
            for (double s : sizes) {
                std::vector<double> rtt;
                for (std::uint32_t r = 0; r < std::max<std::uint32_t>(o.pingpong_repeats, 1); ++r) {
                    const double t0 = now_s();
                    mesh.send(1, std::span<const std::uint8_t>(msg).first(static_cast<std::size_t>(s)));
                    mesh.recv(1, in);
                    rtt.push_back(now_s() - t0);
                }
                medians.push_back(median(rtt));
            }
            mesh.send(1, {});
            out["rtt"] = medians;
            // 2. Tiny collectives, back to back: each one's time from its start to the next one's.
            std::vector<double> coll;
            for (std::uint32_t r = 0; r < warm_collectives + collectives; ++r) {
                const double t0 = now_s();
                ring_allreduce(mesh, 0, kRanks, tiny);
                if (r >= warm_collectives) coll.push_back(now_s() - t0);
            }
            out["collective_s"] = median(coll);
            // 3. Compute alone and beside the transport thread.
            auto model = make_model(o.model, o.backend, o.seed);
            ShardSampler sampler(train.size(), 1, 0, o.seed);
            const Batch batch = train.gather(sampler.next(o.batch));
            auto step = [&] {
                (void)model->forward_backward(batch);
                (void)model->gradient();
            };
            for (int w = 0; w < 3; ++w) step();
            const double block_s = o.iterations >= 40 ? 0.5 : 0.25;
            std::vector<double> alone, beside;
            double moved = 0.0, mover_s = 0.0;
            auto block = [&](std::vector<double>& times) {
                const double b0 = now_s();
                for (std::uint32_t k = 0; k < 5 || now_s() - b0 < block_s; ++k) {
                    const double t0 = now_s();
                    step();
                    times.push_back(now_s() - t0);
                }
            };
            for (std::uint32_t b = 0; b < std::max<std::uint32_t>(o.overlap_blocks, 1); ++b) {
                block(alone);
                std::atomic<bool> stop{false};
                std::string error;
                double bytes = 0.0;
                double thread_s = 0.0;
                std::thread mover([&] {
                    const double m0 = now_s();
                    try {
                        std::vector<std::uint8_t> reply;
                        const auto m = std::span<const std::uint8_t>(msg).first(1 << 20);
                        while (!stop.load()) {
                            mesh.send(1, m);
                            mesh.recv(1, reply);
                            bytes += static_cast<double>(m.size());
                        }
                    } catch (const std::exception& ex) {
                        error = ex.what();
                    }
                    thread_s = now_s() - m0;
                });
                std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the transfer is under way
                block(beside);
                stop = true;
                mover.join();
                if (!error.empty()) throw std::runtime_error("overlap calibration: " + error);
                moved += bytes;
                mover_s += thread_s;
            }
            mesh.send(1, {});
            out["alone_s"] = median(alone);
            out["beside_s"] = median(beside);
            out["steps"] = std::min(alone.size(), beside.size());
            out["transport_Bps"] = mover_s > 0 ? moved / mover_s : 0.0;
            return out.dump();
        });
    } catch (...) {
        for (int fd : fds) ::close(fd);
        throw;
    }
    for (int fd : fds) ::close(fd);
    const json measured = json::parse(results[0]);
    const auto rtt = measured.at("rtt").get<std::vector<double>>();
    NetworkFit& f = c.network;
    f.transport = net.namespaced() ? "tcp over veth + bridge (network namespaces, HTB-shaped)" : "tcp over loopback";
    f.rate_bps = net.namespaced() ? net.rate_bps() : 0.0;
    // alpha: the one-way time of the smallest message; beta: least squares over the sizes whose
    // time the bandwidth dominates (>= 64 KB: smaller ones may leave within the token bucket's burst).
    const double reply = rtt[0] / 2.0;  // the 1-byte reply's one-way time
    std::vector<double> x, y, w;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        const double t = std::max(rtt[i] - reply, 1e-7);
        f.points.emplace_back(sizes[i], t);
        if (sizes[i] < 65536) continue;
        x.push_back(sizes[i]);
        y.push_back(t);
        w.push_back(1.0);
    }
    const auto [a, b] = weighted_line_fit(x, y, w);
    f.intercept_s = a;
    f.latency_s = f.points.front().second;
    f.bandwidth_Bps = b > 0.0 ? 1.0 / b : 0.0;
    if (f.bandwidth_Bps <= 0.0) throw std::runtime_error("network calibration: no positive bandwidth fitted");
    f.goodput_fraction = f.rate_bps > 0 ? f.bandwidth_Bps / (f.rate_bps / 8.0) : 0.0;
    double ss = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double r = (f.latency_s + x[i] / f.bandwidth_Bps - y[i]) / y[i];
        ss += r * r;
    }
    f.rms_relative_residual = std::sqrt(ss / static_cast<double>(x.size()));
    // The transport terms (see calibrate.hpp).
    TransportFit& t = c.transport;
    t.measured = f.rate_bps > 0.0;
    t.efficiency = f.goodput_fraction;
    t.link_latency_s = 0.0;  // netns.hpp: no netem on these machines, no latency is configured
    t.p2p_s = f.latency_s;
    t.message_overhead_s = std::max(0.0, f.latency_s - 2.0 * t.link_latency_s - 1.0 / f.bandwidth_Bps);
    t.ranks = kRanks;
    t.repeats = collectives;
    t.collective_s = measured.at("collective_s");
    t.collective_raw_s = t.collective_s - 2.0 * (kRanks - 1) * t.p2p_s;
    t.collective_overhead_s = std::max(0.0, t.collective_raw_s);
    OverlapFit& v = c.overlap;
    v.alone_s = measured.at("alone_s");
    v.beside_s = measured.at("beside_s");
    v.steps = measured.at("steps");
    v.transport_Bps = measured.at("transport_Bps");
    v.raw = v.alone_s > 0.0 ? v.beside_s / v.alone_s - 1.0 : 0.0;
    v.slowdown = std::clamp(v.raw, 0.0, 10.0);
    v.measured = v.alone_s > 0.0;
}

std::string cpu_model_name() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return line.substr(colon + 2);
        }
    return "unknown CPU";
}

}  // namespace

std::pair<double, double> weighted_line_fit(const std::vector<double>& x, const std::vector<double>& y,
                                            const std::vector<double>& w) {
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        sw += w[i];
        sx += w[i] * x[i];
        sy += w[i] * y[i];
        sxx += w[i] * x[i] * x[i];
        sxy += w[i] * x[i] * y[i];
    }
    const double det = sw * sxx - sx * sx;
    if (x.size() < 2 || det == 0.0) throw std::invalid_argument("line fit: need two distinct points");
    const double b = (sw * sxy - sx * sy) / det;
    return {(sy - b * sx) / sw, b};
}

double fit_sharing_slots(const std::vector<std::pair<std::uint32_t, double>>& slowdowns) {
    double best = 1.0, best_err = 1e300;
    for (double s = 0.5; s <= 256.0; s *= 1.002) {
        double err = 0.0;
        for (const auto& [k, v] : slowdowns) {
            const double m = std::max(1.0, k / s);
            err += (v - m) * (v - m);
        }
        if (err < best_err - 1e-15) best_err = err, best = s;
    }
    return best;
}

void Calibration::read_compute(const json& p) {
    host = p.at("host");
    peak_flops = p.at("device").at("peak_flops");
    // A unit string since bandwidths need their unit; older profiles hold a number of bytes/s.
    const auto& mb = p.at("device").at("memory_bandwidth");
    memory_bandwidth = mb.is_string() ? sim::parse_bandwidth(mb.get<std::string>()).bytes_per_s() : mb.get<double>();
    layers.clear();
    for (const auto& l : p.at("layers"))
        layers.push_back(
            {l.at("name"), l.at("params"), l.at("fwd_flops"), l.at("fwd_time"), l.at("bwd_time"), l.at("update_time")});
    codecs.clear();
    for (const auto& [name, c] : p.at("codecs").items())
        codecs[name] = {c.at("encode_s_per_element"), c.at("decode_s_per_element")};
}

bool probe_backend(Backend backend, std::string* why) {
    if (backend == Backend::cpu) return true;
    const std::string r = in_child(120.0, [&] {
        std::string w;
        return backend_available(backend, &w) ? std::string("ok") : w;
    });
    if (r == "ok") return true;
    if (why != nullptr) *why = r;
    return false;
}

double Calibration::slowdown(std::uint32_t k) const {
    return std::max(1.0, k / sharing_slots);
}

std::string host_description(Backend b) {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    if (b == Backend::cuda) return fmt::format("{}: {}", name, cuda_device_name());
    return fmt::format("{}: {}, {} cores", name, cpu_model_name(), std::thread::hardware_concurrency());
}

json Calibration::profile_json() const {
    json layers_json = json::array();
    for (const auto& l : layers)
        layers_json.push_back({{"name", l.name},
                               {"params", l.params},
                               {"fwd_flops", l.fwd_flops},
                               {"fwd_time", l.fwd_time},
                               {"bwd_time", l.bwd_time},
                               {"update_time", l.update_time}});
    json codecs_json = json::object();
    for (const auto& [name, p] : codecs)
        codecs_json[name] = {{"encode_s_per_element", p.encode_s_per_element},
                             {"decode_s_per_element", p.decode_s_per_element}};
    json device{{"peak_flops", peak_flops},
                {"efficiency", 1.0},
                {"memory_bandwidth", sim::format_bandwidth(sim::Bandwidth::bytes_per_s(memory_bandwidth))}};
    if (overlap.measured) device["overlap_slowdown"] = overlap.slowdown;  // the default of overlap.compute_slowdown
    json net{{"latency", network.latency_s},
             {"bandwidth", sim::format_bandwidth(sim::Bandwidth::bytes_per_s(network.bandwidth_Bps))}};
    if (transport.measured) {
        net["transport"] = transport.json();  // what a scenario's network.profile reads
        net["link_rate"] = sim::format_bandwidth(sim::Bandwidth::bits_per_s(network.rate_bps));
    }
    return {{"format", "ddlsim-profile-1"},
            {"backend", backend_name(backend)},
            {"host", host},
            // A scenario device object: no "name", which scenarios reserve for the built-in profiles.
            {"device", device},
            {"network", net},
            {"layers", layers_json},
            {"codecs", codecs_json}};
}

topo::TransportSpec TransportFit::spec() const {
    topo::TransportSpec t = topo::transport_preset(topo::TransportKind::tcp);
    t.efficiency = std::clamp(efficiency, 1e-6, 1.0);
    t.message_overhead = sim::Time::seconds(std::round(message_overhead_s * 1e9) / 1e9);
    t.collective_overhead = sim::Time::seconds(std::round(collective_overhead_s * 1e9) / 1e9);
    return t;
}

json TransportFit::json() const {
    return scenario::transport_keys().echo(spec());
}

json Calibration::details_json() const {
    json points = json::array();
    for (const auto& [bytes, s] : network.points) points.push_back({{"bytes", bytes}, {"one_way_s", s}});
    json share = json::array();
    for (const auto& [k, s] : sharing) share.push_back({{"processes", k}, {"slowdown", s}});
    return {{"model", model_name(model)},
            {"batch_size", batch},
            {"backend", backend_name(backend)},
            {"seconds", seconds},
            {"effective_flops", peak_flops},
            {"memory_bandwidth", memory_bandwidth},
            {"sharing", {{"measured", share}, {"slots", sharing_slots}}},
            {"network",
             {{"transport", network.transport},
              {"link_rate_bps", network.rate_bps},
              {"alpha_s", network.latency_s},
              {"fit_intercept_s", network.intercept_s},
              {"beta_Bps", network.bandwidth_Bps},
              {"goodput_fraction", network.goodput_fraction},
              {"expected_goodput_fraction_tcp", 1448.0 / 1514.0},
              {"rms_relative_residual", network.rms_relative_residual},
              {"points", points}}},
            {"transport",
             {{"measured", transport.measured},
              {"efficiency", transport.efficiency},
              {"link_latency_s", transport.link_latency_s},
              {"message_overhead_s", transport.message_overhead_s},
              {"collective_overhead_s", transport.collective_overhead_s},
              {"collective_raw_s", transport.collective_raw_s},
              {"tiny_collective_s", transport.collective_s},
              {"tiny_p2p_one_way_s", transport.p2p_s},
              {"collective_ranks", transport.ranks},
              {"collective_repeats", transport.repeats}}},
            {"overlap",
             {{"measured", overlap.measured},
              {"compute_alone_s", overlap.alone_s},
              {"compute_beside_transport_s", overlap.beside_s},
              {"raw_slowdown", overlap.raw},
              {"slowdown", overlap.slowdown},
              {"transport_Bps", overlap.transport_Bps},
              {"steps_per_condition", overlap.steps}}}};
}

Calibration calibrate(const CalibrationOptions& o, const Dataset& train, HostNetwork& net, std::ostream& log) {
    const double t0 = now_s();
    Calibration c;
    c.backend = o.backend;
    c.model = o.model;
    c.batch = o.batch;
    c.topk_density = o.topk_density;
    log << fmt::format("calibrating {} on {} (batch {}): per-layer compute and codecs", model_name(o.model),
                       backend_name(o.backend), o.batch)
        << std::flush;
    c.read_compute(json::parse(in_child(600.0, [&] {
        Calibration m = c;
        m.host = host_description(o.backend);
        profile_layers(o, train, m);
        m.memory_bandwidth = o.backend == Backend::cuda ? cuda_memory_bandwidth() : cpu_memory_bandwidth();
        profile_codecs(o, train, m);
        return m.profile_json().dump();
    })));
    log << ", sharing" << std::flush;
    measure_sharing(o, train, c);
    if (o.measure_network && net.hosts() >= 2) {
        log << ", network" << std::flush;
        measure_network(o, train, net, c);
    }
    c.seconds = now_s() - t0;
    log << fmt::format(" ({:.1f} s)\n", c.seconds);
    return c;
}

}  // namespace ddlsim::validate
