#include "validate/trainer.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "sim/rng.hpp"
#include "validate/collectives.hpp"
#include "validate/processes.hpp"

namespace ddlsim::validate {
namespace {

using nlohmann::json;

double norm2(std::span<const float> v) {
    double s = 0.0;
    for (float x : v) s += double{x} * x;
    return std::sqrt(s);
}

std::string serialize(const WorkerReport& r) {
    json j{{"rank", r.rank},
           {"iteration_time_s", r.iteration_time_s},
           {"compute_s", r.compute_s},
           {"codec_s", r.codec_s},
           {"comm_s", r.comm_s},
           {"update_s", r.update_s},
           {"losses", r.losses},
           {"residual_norms", r.residual_norms},
           {"gradient_norms", r.gradient_norms},
           {"bytes_sent", r.bytes_sent},
           {"accuracy", r.accuracy}};
    const std::string text = j.dump();
    std::string out(8, '\0');
    const std::uint64_t len = text.size();
    std::memcpy(out.data(), &len, 8);
    out += text;
    if (!r.first_average.empty())
        out.append(reinterpret_cast<const char*>(r.first_average.data()), r.first_average.size() * sizeof(float));
    return out;
}

WorkerReport deserialize(const std::string& s) {
    std::uint64_t len = 0;
    if (s.size() < 8) throw std::runtime_error("worker report truncated");
    std::memcpy(&len, s.data(), 8);
    if (s.size() < 8 + len || (s.size() - 8 - len) % sizeof(float) != 0)
        throw std::runtime_error("worker report malformed");
    const json j = json::parse(s.substr(8, len));
    WorkerReport r;
    r.rank = j.at("rank");
    r.iteration_time_s = j.at("iteration_time_s");
    r.compute_s = j.at("compute_s");
    r.codec_s = j.at("codec_s");
    r.comm_s = j.at("comm_s");
    r.update_s = j.at("update_s");
    r.losses = j.at("losses").get<std::vector<double>>();
    r.residual_norms = j.at("residual_norms").get<std::vector<double>>();
    r.gradient_norms = j.at("gradient_norms").get<std::vector<double>>();
    r.bytes_sent = j.at("bytes_sent");
    r.accuracy = j.at("accuracy");
    r.first_average.resize((s.size() - 8 - len) / sizeof(float));
    if (!r.first_average.empty())
        std::memcpy(r.first_average.data(), s.data() + 8 + len, r.first_average.size() * sizeof(float));
    return r;
}

Dataset head(const Dataset& d, std::size_t n) {
    Dataset h = d;
    n = std::min(n, d.size());
    h.images.resize(n * d.dim());
    h.labels.resize(n);
    return h;
}

// The parameter server: every iteration, the average of the workers' payloads, in the format they sent.
void serve(Mesh& mesh, const RunConfig& c, std::size_t params) {
    CodecSpec plain = c.codec;
    plain.error_feedback = false;
    auto decoder = make_codec(plain, params, Backend::cpu, 0);
    auto encoder = c.codec.kind != CodecKind::none
                       ? make_codec(plain, params, Backend::cpu, sim::rng::stream(c.seed, "server codec"))
                       : nullptr;
    std::vector<float> sum(params);
    const float scale = 1.0F / static_cast<float>(c.workers);
    for (std::uint32_t it = 0; it < c.warmup + c.iterations; ++it) {
        ps_serve(mesh, c.workers, [&](const std::vector<std::vector<std::uint8_t>>& in) {
            std::fill(sum.begin(), sum.end(), 0.0F);
            for (const auto& p : in) decoder->decode_add(p, sum, 1.0F);
            for (float& x : sum) x *= scale;
            if (encoder) return encoder->encode(sum);
            const auto b = float_bytes(sum);
            std::vector<std::uint8_t> out(b.begin(), b.end());
            return out;
        });
    }
}

WorkerReport work(Mesh& mesh, const RunConfig& c, std::uint32_t rank, const Dataset& train, const Dataset& test) {
    const std::uint32_t n = c.workers;
    auto model = make_model(c.model, c.backend, c.seed);
    const std::size_t size = model->size();
    ShardSampler sampler(train.size(), n, rank, c.seed);
    const bool compressed = c.codec.kind != CodecKind::none;
    auto codec = compressed ? make_codec(c.codec, size, c.backend,
                                         sim::rng::substream(sim::rng::stream(c.seed, "worker codec"), rank))
                            : nullptr;
    std::vector<float> avg(size), params(size);
    const float inv_n = 1.0F / static_cast<float>(n);
    WorkerReport r;
    r.rank = rank;
    const std::uint32_t total = c.warmup + c.iterations;
    double t_start = now_s(), compute = 0.0, codec_s = 0.0, comm = 0.0, update = 0.0;
    for (std::uint32_t it = 0; it < total; ++it) {
        if (it == c.warmup) {
            t_start = now_s();
            compute = codec_s = comm = update = 0.0;
        }
        const Batch batch = train.gather(sampler.next(c.batch));
        const double t0 = now_s();
        const double loss = model->forward_backward(batch);
        const std::span<const float> grad = model->gradient();
        const double t1 = now_s();
        double t_codec = 0.0;
        if (c.architecture == topo::ArchKind::gossip) {
            model->get_params(params);
            gossip_average(mesh, rank, n, params);
            model->set_params(params);
            avg.assign(grad.begin(), grad.end());
        } else if (c.sync == models::SyncKind::local_sgd) {
            avg.assign(grad.begin(), grad.end());
        } else if (!compressed) {
            if (c.architecture == topo::ArchKind::allreduce) {
                avg.assign(grad.begin(), grad.end());
                ring_allreduce(mesh, rank, n, avg);
                for (float& x : avg) x *= inv_n;
            } else {
                to_floats(ps_push_pull(mesh, n, float_bytes(grad)), avg);  // the server sends the mean
            }
        } else {
            const double e0 = now_s();
            const auto payload = codec->encode(grad, model->device_gradient());
            t_codec += now_s() - e0;
            if (c.architecture == topo::ArchKind::ps) {  // the server sends the mean, compressed alike
                const auto reply = ps_push_pull(mesh, n, payload);
                const double d0 = now_s();
                std::fill(avg.begin(), avg.end(), 0.0F);
                codec->decode_add(reply, avg, 1.0F);
                t_codec += now_s() - d0;
            } else if (summable(c.codec.kind)) {  // summed in flight: decoded, added, re-encoded hop by hop
                const double d0 = now_s();
                std::fill(avg.begin(), avg.end(), 0.0F);
                codec->decode_add(payload, avg, 1.0F);
                t_codec += now_s() - d0;
                ring_allreduce(mesh, rank, n, avg, &c.codec,
                               sim::rng::substream(sim::rng::stream(c.seed, "ring allreduce codec"), it));
                for (float& x : avg) x *= inv_n;
            } else {  // payloads cannot be added: all-gather them, decode each
                const auto all = ring_allgather(mesh, rank, n, payload);
                const double d0 = now_s();
                std::fill(avg.begin(), avg.end(), 0.0F);
                for (const auto& p : all) codec->decode_add(p, avg, inv_n);
                t_codec += now_s() - d0;
            }
        }
        const double t2 = now_s();
        model->apply_gradient(avg, c.lr);
        const double t3 = now_s();
        if (c.sync == models::SyncKind::local_sgd && (it + 1) % c.period == 0) {  // average the models
            model->get_params(params);
            ring_allreduce(mesh, rank, n, params);
            for (float& x : params) x *= inv_n;
            model->set_params(params);
            comm += now_s() - t3;
        }
        compute += t1 - t0;
        codec_s += t_codec;
        comm += t2 - t1 - t_codec;
        update += t3 - t2;
        r.losses.push_back(loss);
        r.gradient_norms.push_back(norm2(grad));
        if (codec) r.residual_norms.push_back(codec->residual_norm());
        if (it == 0 && rank == 0 && c.keep_first_average) r.first_average = avg;
    }
    const double elapsed = now_s() - t_start;
    const double iters = std::max<std::uint32_t>(c.iterations, 1);
    r.iteration_time_s = elapsed / iters;
    r.compute_s = compute / iters;
    r.codec_s = codec_s / iters;
    r.comm_s = comm / iters;
    r.update_s = update / iters;
    r.bytes_sent = mesh.bytes_sent();
    if (rank == 0 && c.eval_samples > 0) r.accuracy = model->evaluate(head(test, c.eval_samples));
    return r;
}

void check_config(const RunConfig& c) {
    auto bad = [&](const std::string& why) { throw std::invalid_argument(fmt::format("{}: {}", c.name, why)); };
    if (c.workers < 1) bad("needs at least one worker");
    if (c.iterations < 1) bad("needs at least one measured iteration");
    if (c.architecture == topo::ArchKind::gossip && c.workers < 3) bad("gossip on a ring needs at least 3 workers");
    if (c.sync == models::SyncKind::local_sgd && (c.architecture != topo::ArchKind::allreduce || c.period < 1))
        bad("local SGD runs on ring all-reduce with a period of at least 1");
    if (c.codec.kind != CodecKind::none && c.architecture == topo::ArchKind::gossip) bad("gossip sends whole models");
    if (c.codec.kind != CodecKind::none && c.sync == models::SyncKind::local_sgd)
        bad("local SGD averages whole models");
    if (c.architecture == topo::ArchKind::ps && !summable(c.codec.kind))
        bad("the parameter server sums payloads: top-k runs on ring all-reduce (all-gather)");
}

}  // namespace

const char* architecture_name(topo::ArchKind a) {
    switch (a) {
        case topo::ArchKind::allreduce: return "ring";  // the one all-reduce validate runs
        case topo::ArchKind::ps: return "ps";
        case topo::ArchKind::gossip: return "gossip";
    }
    return "?";
}

CpuSample cpu_sample() {
    std::ifstream f("/proc/stat");
    std::string cpu;
    f >> cpu;
    CpuSample s;
    if (cpu != "cpu") return s;
    // user nice system idle iowait irq softirq steal
    double v[8] = {};
    for (double& x : v) f >> x;
    s.total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    s.busy = s.total - v[3] - v[4];
    return s;
}

double cpu_load_between(const CpuSample& a, const CpuSample& b) {
    const double total = b.total - a.total;
    return total > 0 ? (b.busy - a.busy) / total : 0.0;
}

RunOutcome run_training(const RunConfig& c, const Dataset& train, const Dataset& test, HostNetwork& net,
                        double timeout_s) {
    check_config(c);
    RunConfig cfg = c;
    if (cfg.sync == models::SyncKind::local_sgd) {  // whole periods only, so every window holds the same syncs
        cfg.warmup = (cfg.warmup + cfg.period - 1) / cfg.period * cfg.period;
        cfg.iterations = (cfg.iterations + cfg.period - 1) / cfg.period * cfg.period;
    }
    const bool ps = cfg.architecture == topo::ArchKind::ps;
    const std::uint32_t endpoints = cfg.workers + (ps ? 1 : 0);
    if (endpoints > net.hosts())
        throw std::invalid_argument(
            fmt::format("{}: {} endpoints, the network has {} hosts", cfg.name, endpoints, net.hosts()));
    if (net.namespaced() && net.rate_bps() != cfg.rate_bps) net.set_rate(cfg.rate_bps);
    std::vector<Address> addresses(endpoints);
    std::vector<int> fds;
    for (std::uint32_t e = 0; e < endpoints; ++e) fds.push_back(net.listen(e, addresses[e]));
    std::vector<std::vector<std::uint32_t>> peers(endpoints);
    for (std::uint32_t w = 0; w < cfg.workers; ++w)
        peers[w] = ps ? std::vector<std::uint32_t>{cfg.workers} : ring_peers(w, cfg.workers);
    if (ps)
        for (std::uint32_t w = 0; w < cfg.workers; ++w) peers[cfg.workers].push_back(w);

    const std::size_t params = model_spec(cfg.model).params;
    rusage ru0{};
    ::getrusage(RUSAGE_CHILDREN, &ru0);
    const CpuSample cpu0 = cpu_sample();
    const double t0 = now_s();
    std::vector<std::string> raw;
    try {
        raw = run_children(endpoints, timeout_s, [&](std::uint32_t e) -> std::string {
            net.enter(e);
            Mesh mesh(e, fds[e], addresses, peers[e], 60.0);
            if (ps && e == cfg.workers) {
                serve(mesh, cfg, params);
                return "";
            }
            return serialize(work(mesh, cfg, e, train, test));
        });
    } catch (...) {
        for (int fd : fds) ::close(fd);
        throw;
    }
    for (int fd : fds) ::close(fd);
    RunOutcome out;
    out.wall_s = now_s() - t0;
    out.cpu_load = cpu_load_between(cpu0, cpu_sample());
    rusage ru1{};
    ::getrusage(RUSAGE_CHILDREN, &ru1);
    auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
    out.worker_cpu_s = secs(ru1.ru_utime) + secs(ru1.ru_stime) - secs(ru0.ru_utime) - secs(ru0.ru_stime);
    out.config = cfg;
    out.network = net.namespaced() ? "netns" : "loopback";
    for (std::uint32_t w = 0; w < cfg.workers; ++w) {
        out.workers.push_back(deserialize(raw[w]));
        out.iteration_time_s += out.workers.back().iteration_time_s / cfg.workers;
    }
    return out;
}

}  // namespace ddlsim::validate
