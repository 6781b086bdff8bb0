// Parameter-server variants (topologies/parameter_server.hpp) against hand-derived closed
// forms on an idle star: bandwidth B per link, per-link latency L, route latency α = 2L;
// full duplex, so pushes (worker uplinks, server downlinks) and pulls (server uplinks,
// worker downlinks) never share a link.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <vector>

#include "tests/support/collective_harness.hpp"
#include "topologies/parameter_server.hpp"

using namespace ddlsim;

namespace {

constexpr double kB = 1.25e9;  // 10 Gbps
constexpr double kL = 5e-6;
constexpr double kA = 2 * kL;  // star route latency
constexpr double kMB = 1e6;

topo::ArchitectureSpec ps_spec(std::size_t k, topo::PsSharding sharding = topo::PsSharding::bytes,
                               bool per_tensor = false) {
    topo::ArchitectureSpec spec;
    spec.kind = topo::ArchKind::ps;
    spec.servers = k;
    spec.sharding = sharding;
    spec.per_tensor = per_tensor;
    return spec;
}

topo::CollectiveContext tensors(std::uint32_t n, const std::vector<double>& t) {
    double sum = 0.0;
    for (double b : t) sum += b;
    auto ctx = testing::context(n, sum);
    ctx.tensor_bytes = t;
    return ctx;
}

testing::RoundResult run(const topo::ArchitectureSpec& spec, const topo::CollectiveContext& ctx) {
    return testing::run_on_star(*topo::make_parameter_server(spec, ctx), kB, kL);
}

// Endpoint e on worker host e; endpoints n.. (colocated servers) on hosts 0, 1, ...
testing::RoundResult run_colocated(const topo::Collective& c, std::uint32_t n) {
    const auto fabric = topo::build_fabric(topo::StarSpec{n, sim::Bandwidth::bytes_per_s(kB), sim::Time::seconds(kL)});
    std::vector<topo::Vertex> hosts;
    for (std::uint32_t e = 0; e < c.endpoints(); ++e) hosts.push_back(fabric.hosts()[e % n]);
    return testing::run_round(c, fabric, hosts);
}

// Largest bytes any endpoint sends or receives in the plan (its busiest NIC direction).
double busiest_link_bytes(const sim::Plan& plan) {
    std::vector<double> out(plan.endpoints, 0.0), in(plan.endpoints, 0.0);
    for (std::size_t s = 0; s < plan.size(); ++s) {
        const auto& step = plan.step(s);
        if (step.src == step.dst) continue;
        out[step.src] += step.bytes.value();
        in[step.dst] += step.bytes.value();
    }
    return std::max(*std::max_element(out.begin(), out.end()), *std::max_element(in.begin(), in.end()));
}

}  // namespace

TEST_CASE("parameter server: even byte shards, dedicated, T = 2(2L + max(S, nS/k)/B)") {
    // Push: a worker uplink carries k flows of S/k, a server downlink n flows of S/k. n >= k:
    // the downlink binds (B/n per flow), a push takes α + nS/(kB). n < k: the uplink binds
    // (B/k per flow), α + S/B. Pulls mirror pushes. Every worker pushes and pulls S: 2nS bytes.
    const double S = 80 * kMB;
    for (std::uint32_t n : {1u, 2u, 3u, 4u, 8u})
        for (std::size_t k : {1u, 2u, 4u, 8u})
            for (bool per_tensor : {false, true}) {
                CAPTURE(n);
                CAPTURE(k);
                CAPTURE(per_tensor);
                const auto r = run(ps_spec(k, topo::PsSharding::bytes, per_tensor), testing::context(n, S));
                const double expected = 2 * (kA + std::max(S, n * S / static_cast<double>(k)) / kB);
                CHECK(r.makespan == ddlsim::testing::approx(expected).epsilon(1e-9));
                CHECK(r.analytic == ddlsim::testing::approx(expected).epsilon(1e-9));
                CHECK(r.wire_bytes == ddlsim::testing::approx(2.0 * n * S));
            }
}

TEST_CASE("parameter server: sharding maps tensors 40, 30, 20, 10 MB (backward order) to k = 2 servers") {
    const std::vector<double> t{40 * kMB, 30 * kMB, 20 * kMB, 10 * kMB};
    auto loads = [](const std::vector<std::vector<topo::ShardPiece>>& pieces) {
        std::vector<double> load;
        for (const auto& p : pieces) {
            double sum = 0.0;
            for (const auto& piece : p) sum += piece.bytes;
            load.push_back(sum / kMB);
        }
        return load;
    };
    const double inf = topo::PsOptions{}.split_bytes;
    // Round robin by key (forward) order: keys 10, 20, 30, 40 MB -> servers 0, 1, 0, 1.
    const auto rr = topo::shard_tensors(topo::PsSharding::round_robin, t, 2, inf);
    CHECK(loads(rr) == std::vector<double>{40, 60});
    REQUIRE(rr[0].size() == 2);
    CHECK(rr[0][0].tensor == 1);  // pieces stay in backward order: 30 MB, then 10 MB
    CHECK(rr[0][1].tensor == 3);
    // Balanced (largest first to the least loaded): 40 -> s0, 30 -> s1, 20 -> s1, 10 -> s0.
    const auto bal = topo::shard_tensors(topo::PsSharding::balanced, t, 2, inf);
    CHECK(loads(bal) == std::vector<double>{50, 50});
    CHECK(bal[1][0].tensor == 1);
    CHECK(bal[1][1].tensor == 2);
    // Bytes: every tensor cut in half.
    CHECK(loads(topo::shard_tensors(topo::PsSharding::bytes, t, 2, inf)) == std::vector<double>{50, 50});
    // Split threshold 35 MB: 40 MB is cut 20/20 first. Round robin of 10, 20, 30 -> 0, 1, 0:
    // {20 + 10 + 30, 20 + 20}; balanced: 30 -> s0 (tie), 20 -> s1, 10 -> s1: {50, 50}.
    CHECK(loads(topo::shard_tensors(topo::PsSharding::round_robin, t, 2, 35 * kMB)) == std::vector<double>{60, 40});
    CHECK(loads(topo::shard_tensors(topo::PsSharding::balanced, t, 2, 35 * kMB)) == std::vector<double>{50, 50});
}

TEST_CASE("parameter server: round-robin vs balanced sharding, T = 2(2L + n * max load / B)") {
    // Server loads 60/40 MB (round robin) or 50/50 (balanced). Push: a worker uplink carries
    // 2 flows, a server downlink n >= 2 flows, so every flow gets B/n; the 40 MB flows end
    // first, then the 60 MB flows keep B/n (their server's downlink still has n flows): the
    // pushes to the fuller server end at α + n * 60MB / B. Its pulls take as long again.
    const std::vector<double> t{40 * kMB, 30 * kMB, 20 * kMB, 10 * kMB};
    for (std::uint32_t n : {2u, 4u, 8u}) {
        CAPTURE(n);
        const auto rr = run(ps_spec(2, topo::PsSharding::round_robin), tensors(n, t));
        CHECK(rr.makespan == ddlsim::testing::approx(2 * (kA + n * 60 * kMB / kB)).epsilon(1e-9));
        CHECK(rr.wire_bytes == ddlsim::testing::approx(2.0 * n * 100 * kMB));
        const auto bal = run(ps_spec(2, topo::PsSharding::balanced), tensors(n, t));
        CHECK(bal.makespan == ddlsim::testing::approx(2 * (kA + n * 50 * kMB / kB)).epsilon(1e-9));
        CHECK(bal.wire_bytes == ddlsim::testing::approx(2.0 * n * 100 * kMB));
        CHECK(bal.makespan < rr.makespan);
    }
}

TEST_CASE("parameter server: per-tensor pipelining, one server, tensors a then b") {
    // Whole model: T = 2(α + n(a+b)/B). Per tensor: pushes of a end at t1 = α + na/B (server
    // downlink, n flows at B/n); then pushes of b (t2 = t1 + α + nb/B) overlap the pulls of a
    // (server uplink, done at t1 + α + na/B). Pulls of b start at max(t2, pulls of a done):
    //   T = 3α + n(a + b + max(a, b))/B   < whole model iff α < n min(a, b)/B.
    for (std::uint32_t n : {1u, 2u, 4u})
        for (const auto& ab : {std::pair{30 * kMB, 10 * kMB}, {10 * kMB, 30 * kMB}, {20 * kMB, 20 * kMB}}) {
            const double a = ab.first, b = ab.second;  // not a structured binding: clang 14 cannot capture those
            CAPTURE(n);
            CAPTURE(a);
            const auto ctx = tensors(n, {a, b});
            const auto per = run(ps_spec(1, topo::PsSharding::bytes, true), ctx);
            const auto whole = run(ps_spec(1, topo::PsSharding::bytes, false), ctx);
            CHECK(per.makespan == ddlsim::testing::approx(3 * kA + n * (a + b + std::max(a, b)) / kB).epsilon(1e-9));
            CHECK(whole.makespan == ddlsim::testing::approx(2 * (kA + n * (a + b) / kB)).epsilon(1e-9));
            CHECK(per.makespan < whole.makespan);
            CHECK(per.wire_bytes == ddlsim::testing::approx(whole.wire_bytes));
            CHECK(per.transfers == 4 * n);
        }
}

TEST_CASE("parameter server: aggregation rate adds n * shard / rate") {
    // Summing n shards of S/k at rate R takes nS/(kR), between the pushes and the pulls.
    const double S = 40 * kMB, R = 5e9;
    for (std::uint32_t n : {2u, 4u, 8u})
        for (std::size_t k : {1u, 2u}) {
            CAPTURE(n);
            CAPTURE(k);
            auto spec = ps_spec(k);
            spec.aggregation_rate = sim::Bandwidth::bytes_per_s(R);
            const double kd = static_cast<double>(k);
            CHECK(run(spec, testing::context(n, S)).makespan ==
                  ddlsim::testing::approx(2 * (kA + n * S / (kd * kB)) + n * S / (kd * R)).epsilon(1e-9));
            // Balanced 30/10 MB on two servers: the 30 MB server sets the time.
            auto bal = ps_spec(2, topo::PsSharding::balanced);
            bal.aggregation_rate = sim::Bandwidth::bytes_per_s(R);
            CHECK(run(bal, tensors(n, {30 * kMB, 10 * kMB})).makespan ==
                  ddlsim::testing::approx(2 * (kA + n * 30 * kMB / kB) + n * 30 * kMB / R).epsilon(1e-9));
        }
    // Per tensor, one server, a = b = 20 MB: pushes of a end at t1 = α + na/B; sum of a ends at
    // t1 + na/R, overlapping the pushes of b (which end at t2 = 2t1 as na/R < α + na/B); sum of b
    // ends at t2 + nb/R, then its pulls (after those of a, which end earlier): T = 3(α + na/B) + na/R.
    const double a = 20 * kMB;
    for (std::uint32_t n : {2u, 4u}) {
        auto spec = ps_spec(1, topo::PsSharding::bytes, true);
        spec.aggregation_rate = sim::Bandwidth::bytes_per_s(R);
        CHECK(run(spec, tensors(n, {a, a})).makespan ==
              ddlsim::testing::approx(3 * (kA + n * a / kB) + n * a / R).epsilon(1e-9));
    }
}

TEST_CASE("byteps: split x = 2(n-1)S/D, y = (n-k)S/D with D = n^2 + kn - 2k, busiest link 2n(n-1)S/D") {
    const double S = 100 * kMB;
    for (const auto& nk : {std::pair{4u, 1u}, {8u, 2u}, {16u, 4u}}) {
        const std::uint32_t n = nk.first, k = nk.second;
        CAPTURE(n);
        CAPTURE(k);
        const double d = n * n + k * n - 2.0 * k;
        const auto split = topo::byteps_split(n, k, S);
        CHECK(split.cpu == ddlsim::testing::approx(2.0 * (n - 1) * S / d).epsilon(1e-12));
        CHECK(split.worker == ddlsim::testing::approx((n - k) * S / d).epsilon(1e-12));
        CHECK(k * split.cpu + n * split.worker == ddlsim::testing::approx(S).epsilon(1e-12));
        // The paper's time is the busiest NIC direction's bytes over B (pushes and pulls fully
        // overlapped): every worker NIC and every CPU-server NIC carries 2n(n-1)S/D each way.
        const double bound = 2.0 * n * (n - 1) * S / (d * kB);
        for (bool per_tensor : {false, true}) {
            const auto plan = topo::byteps(n, k, std::vector<double>(8, S / 8), per_tensor, std::nullopt);
            CHECK(busiest_link_bytes(plan) / kB == ddlsim::testing::approx(bound).epsilon(1e-6));
            // Wire bytes: each worker pushes kx + (n-1)y and every pull mirrors a push.
            const topo::PlanCollective c(plan);
            const auto r = testing::run_on_star(c, kB, kL);
            CHECK(r.wire_bytes ==
                  ddlsim::testing::approx(2.0 * n * (k * split.cpu + (n - 1) * split.worker)).epsilon(1e-12));
            // Max-min sharing cannot overlap pushes and pulls perfectly: above the bound, but
            // pipelining tensors gets closer than whole shares (which cost about 2x the bound).
            CHECK(r.makespan > bound);
            CHECK(r.makespan < (per_tensor ? 1.6 : 2.2) * bound + 8 * 2 * kA);
        }
    }
}

TEST_CASE("byteps: k = 1 whole shares, T = 2(2L + 2nS/((n+2)B)) exactly") {
    // k = 1: x = 2S/(n+2). Push: a worker uplink has 1 + (n-1) = n flows, the CPU downlink n:
    // B/n each; the CPU pushes end at α + nx/B (the worker-host pushes, y < x, earlier; their
    // pulls share the worker uplinks without slowing the CPU pushes below B/n). The CPU pulls
    // (n flows on its uplink) take α + nx/B more: T = 2(α + nx/B) = 2× the bound nx/B, plus 4L.
    const double S = 60 * kMB;
    for (std::uint32_t n : {2u, 4u, 8u, 16u}) {
        CAPTURE(n);
        auto spec = ps_spec(1);
        spec.style = topo::PsStyle::byteps;
        const auto r = run(spec, testing::context(n, S));
        CHECK(r.makespan == ddlsim::testing::approx(2 * (kA + 2.0 * n * S / ((n + 2) * kB))).epsilon(1e-9));
    }
}

TEST_CASE("byteps: k = 0 is the colocated all-to-all PS, T = 2(2L + (n-1)S/(nB))") {
    const double S = 64 * kMB;
    for (std::uint32_t n : {2u, 4u, 8u})
        for (bool per_tensor : {false, true}) {
            CAPTURE(n);
            CAPTURE(per_tensor);
            auto spec = ps_spec(0, topo::PsSharding::bytes, per_tensor);
            spec.style = topo::PsStyle::byteps;
            const auto ctx = tensors(n, {S / 2, S / 4, S / 4});
            const auto bps = run(spec, ctx);
            auto colo_spec = ps_spec(n, topo::PsSharding::bytes, per_tensor);
            colo_spec.placement = topo::ServerPlacement::colocated;
            const auto colo = run_colocated(*topo::make_parameter_server(colo_spec, ctx), n);
            const double bound = 2 * (kA + (n - 1) * S / (n * kB));
            if (!per_tensor) {
                CHECK(bps.makespan == ddlsim::testing::approx(bound).epsilon(1e-9));
                CHECK(bps.analytic == ddlsim::testing::approx(bps.makespan).epsilon(1e-9));
                CHECK(bps.makespan == ddlsim::testing::approx(colo.makespan).epsilon(1e-9));
            } else {
                // Partitions (4 MB) pushed and pulled one by one: pulls of early partitions overlap pushes
                // of later ones, so the round approaches the one-way bound (n-1)S/(nB) from above.
                CHECK(bps.makespan >= (n - 1) * S / (n * kB));
                CHECK(bps.makespan <= 1.1 * bound);
            }
            CHECK(bps.wire_bytes == ddlsim::testing::approx(2.0 * (n - 1) * S));
            CHECK(colo.wire_bytes == ddlsim::testing::approx(2.0 * (n - 1) * S));
        }
}

TEST_CASE("byteps: aggregation at the worker hosts, k = 0: T = 2(2L + (n-1)S/(nB)) + S/R") {
    // Each worker host sums n shares of S/n: S/R.
    const double S = 32 * kMB, R = 4e9;
    auto spec = ps_spec(0);
    spec.style = topo::PsStyle::byteps;
    spec.aggregation_rate = sim::Bandwidth::bytes_per_s(R);
    for (std::uint32_t n : {2u, 4u}) {
        CHECK(run(spec, testing::context(n, S)).makespan ==
              ddlsim::testing::approx(2 * (kA + (n - 1) * S / (n * kB)) + S / R).epsilon(1e-9));
    }
}

TEST_CASE("parameter server: tensor sizes must sum to the synchronised bytes") {
    auto ctx = testing::context(2, 10 * kMB);
    ctx.tensor_bytes = {4 * kMB, 4 * kMB};
    CHECK_THROWS_AS((void)topo::make_parameter_server(ps_spec(2, topo::PsSharding::balanced), ctx),
                    std::invalid_argument);
    CHECK_THROWS_AS((void)topo::make_parameter_server(ps_spec(0), testing::context(2, kMB)), std::invalid_argument);
}
