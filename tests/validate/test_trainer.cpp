// Real multi-process training over loopback TCP on the synthetic set: the averaged gradient of
// ring all-reduce and of the parameter server equals the mean of the workers' own gradients
// (computed here in-process from the same shards), and every scheme trains.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "sim/rng.hpp"
#include "validate/collectives.hpp"
#include "validate/processes.hpp"
#include "validate/trainer.hpp"

using namespace ddlsim::validate;

namespace {

const Dataset& train_set() {
    static const Dataset d = synthetic_dataset(1200, 21);
    return d;
}

RunConfig base(const std::string& name, std::uint32_t workers) {
    RunConfig c;
    c.name = name;
    c.workers = workers;
    c.batch = 16;
    c.warmup = 1;
    c.iterations = 4;
    c.seed = 3;
    return c;
}

// The mean over workers of each worker's gradient on its first batch, computed in one process.
std::vector<float> expected_first_average(const RunConfig& c) {
    std::vector<double> sum(model_spec(c.model).params, 0.0);
    for (std::uint32_t w = 0; w < c.workers; ++w) {
        auto m = make_model(c.model, Backend::cpu, c.seed);
        ShardSampler s(train_set().size(), c.workers, w, c.seed);
        (void)m->forward_backward(train_set().gather(s.next(c.batch)));
        const auto g = m->gradient();
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += g[i];
    }
    std::vector<float> mean(sum.size());
    for (std::size_t i = 0; i < sum.size(); ++i) mean[i] = static_cast<float>(sum[i] / c.workers);
    return mean;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double d = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, double{std::fabs(a[i] - b[i])});
    return d;
}

double max_abs(const std::vector<float>& a) {
    double m = 0.0;
    for (float x : a) m = std::max(m, double{std::fabs(x)});
    return m;
}

}  // namespace

TEST_CASE("ring chunks cover the vector") {
    CHECK(ring_chunk(10, 3, 0) == std::pair<std::size_t, std::size_t>{0, 3});
    CHECK(ring_chunk(10, 3, 2) == std::pair<std::size_t, std::size_t>{6, 10});
    CHECK(ring_peers(0, 2) == std::vector<std::uint32_t>{1});
    CHECK(ring_peers(0, 4) == std::vector<std::uint32_t>{1, 3});
}

TEST_CASE("ring all-reduce and parameter server average the real gradients") {
    HostNetwork net(4, 0.0, false);
    CHECK(!net.namespaced());
    for (auto arch : {topo::ArchKind::allreduce, topo::ArchKind::ps}) {
        RunConfig c = base(architecture_name(arch), 3);
        c.architecture = arch;
        c.keep_first_average = true;
        const auto out = run_training(c, train_set(), train_set(), net);
        REQUIRE(out.workers.size() == 3);
        const auto expected = expected_first_average(c);
        CAPTURE(architecture_name(arch));
        CHECK(max_abs_diff(out.workers[0].first_average, expected) <= 1e-5 * max_abs(expected));
        CHECK(out.iteration_time_s > 0.0);
        CHECK(out.workers[0].losses.size() == 5);
        CHECK(out.network == "loopback");
        // Workers stay identical under BSP: the same loss on every iteration after the first average.
        CHECK(out.workers[1].losses.size() == out.workers[0].losses.size());
    }
}

TEST_CASE("compressed, gossip and local SGD runs train") {
    HostNetwork net(4, 0.0, false);
    std::vector<RunConfig> configs;
    for (auto kind : {CodecKind::fp16, CodecKind::qsgd, CodecKind::signsgd, CodecKind::topk}) {
        RunConfig c = base(codec_name(kind), 3);
        c.codec.kind = kind;
        c.codec.error_feedback = kind == CodecKind::topk || kind == CodecKind::signsgd;
        c.codec.density = 0.05;
        configs.push_back(c);
    }
    RunConfig fp16ps = base("fp16-ps", 2);
    fp16ps.architecture = topo::ArchKind::ps;
    fp16ps.codec.kind = CodecKind::fp16;
    configs.push_back(fp16ps);
    RunConfig gossip = base("gossip", 3);
    gossip.architecture = topo::ArchKind::gossip;
    configs.push_back(gossip);
    RunConfig local = base("local", 2);
    local.sync = models::SyncKind::local_sgd;
    local.period = 2;
    local.iterations = 3;  // rounded up to whole periods
    configs.push_back(local);
    for (const auto& c : configs) {
        CAPTURE(c.name);
        const auto out = run_training(c, train_set(), train_set(), net);
        for (const auto& w : out.workers) {
            CHECK(std::all_of(w.losses.begin(), w.losses.end(), [](double l) { return std::isfinite(l); }));
            CHECK(w.iteration_time_s > 0.0);
            if (c.codec.error_feedback) CHECK(w.residual_norms.back() > 0.0);
        }
        if (c.sync == models::SyncKind::local_sgd) CHECK(out.config.iterations == 4);
    }
}

TEST_CASE("bad configurations are refused before anything runs") {
    HostNetwork net(3, 0.0, false);
    RunConfig g = base("gossip2", 2);
    g.architecture = topo::ArchKind::gossip;
    CHECK_THROWS_AS((void)run_training(g, train_set(), train_set(), net), std::invalid_argument);
    RunConfig p = base("topk-ps", 2);
    p.architecture = topo::ArchKind::ps;
    p.codec.kind = CodecKind::topk;
    CHECK_THROWS_AS((void)run_training(p, train_set(), train_set(), net), std::invalid_argument);
    RunConfig big = base("too-big", 4);
    CHECK_THROWS_AS((void)run_training(big, train_set(), train_set(), net), std::invalid_argument);
}

TEST_CASE("compressed ring all-reduce: every worker ends with the same values, near the true sum") {
    const std::uint32_t n = 3;
    const std::size_t size = 1000;
    auto vector_of = [&](std::uint32_t w) {
        std::vector<float> v(size);
        ddlsim::sim::rng::SplitMix64 s(100 + w);
        for (auto& x : v) x = static_cast<float>(2.0 * ddlsim::sim::rng::uniform01(s) - 1.0);
        return v;
    };
    std::vector<double> exact(size, 0.0);
    for (std::uint32_t w = 0; w < n; ++w) {
        const auto v = vector_of(w);
        for (std::size_t i = 0; i < size; ++i) exact[i] += v[i];
    }
    for (auto kind : {CodecKind::none, CodecKind::fp16, CodecKind::qsgd, CodecKind::signsgd}) {
        CAPTURE(codec_name(kind));
        HostNetwork net(n, 0.0, false);
        std::vector<Address> addresses(n);
        std::vector<int> fds;
        for (std::uint32_t w = 0; w < n; ++w) fds.push_back(net.listen(w, addresses[w]));
        const CodecSpec spec{kind};
        const auto results = run_children(n, 60.0, [&](std::uint32_t w) {
            Mesh mesh(w, fds[w], addresses, ring_peers(w, n), 30.0);
            auto v = vector_of(w);
            ring_allreduce(mesh, w, n, v, kind == CodecKind::none ? nullptr : &spec, 7);
            const auto b = float_bytes(v);
            return std::string(b.begin(), b.end());
        });
        for (int fd : fds) ::close(fd);
        CHECK(results[1] == results[0]);
        CHECK(results[2] == results[0]);
        std::vector<float> sum;
        to_floats({reinterpret_cast<const std::uint8_t*>(results[0].data()), results[0].size()}, sum);
        double worst = 0.0;
        for (std::size_t i = 0; i < size; ++i) worst = std::max(worst, std::fabs(sum[i] - exact[i]));
        // none: float rounding; fp16: a few half ulps of |sum| <= 3; qsgd: a level (bucket norm / 127) per hop.
        if (kind == CodecKind::none) CHECK(worst < 1e-5);
        if (kind == CodecKind::fp16) CHECK(worst < 5e-3);
        if (kind == CodecKind::qsgd) CHECK(worst < 3 * 3.0 * std::sqrt(512.0) / 127.0);
    }
}

TEST_CASE("processes: a worker never outlives the run that forked it, even one killed with SIGKILL") {
    // A middle process runs two workers that would sleep for a minute and writes their pids to a pipe; it is then
    // SIGKILLed (no handler can run). The workers must be gone within a few seconds (PR_SET_PDEATHSIG), not left
    // running for the minute.
    int p[2];
    REQUIRE(::pipe(p) == 0);
    const pid_t middle = ::fork();
    REQUIRE(middle >= 0);
    if (middle == 0) {
        ::close(p[0]);
        (void)run_children(2, 120.0, [&](std::uint32_t) {
            const pid_t self = ::getpid();
            (void)!::write(p[1], &self, sizeof self);
            ::sleep(60);
            return std::string();
        });
        ::_exit(0);
    }
    ::close(p[1]);
    pid_t workers[2] = {0, 0};
    for (pid_t& w : workers) REQUIRE(::read(p[0], &w, sizeof w) == static_cast<ssize_t>(sizeof w));
    ::close(p[0]);
    ::kill(middle, SIGKILL);
    int status = 0;
    ::waitpid(middle, &status, 0);
    const auto gone = [](pid_t pid) {
        // Gone, or a zombie waiting for init to reap it.
        char path[64];
        std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
        FILE* f = std::fopen(path, "r");
        if (f == nullptr) return true;
        int id = 0;
        char comm[256] = {}, state = '?';
        const int n = std::fscanf(f, "%d %255s %c", &id, comm, &state);
        std::fclose(f);
        return n == 3 && state == 'Z';
    };
    for (pid_t w : workers) {
        bool dead = false;
        for (int i = 0; i < 100 && !dead; ++i) {
            dead = gone(w);
            if (!dead) ::usleep(50'000);
        }
        CHECK_MESSAGE(dead, "worker " << w << " outlived its parent");
        if (!dead) ::kill(w, SIGKILL);
    }
}
