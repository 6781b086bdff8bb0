// Property tests with seeds: the incremental network against a full re-solve of every
// active transfer at every event, and the O(n)-state ring against its explicit DAG.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <limits>

#include "sim/max_min.hpp"
#include "sim/network.hpp"
#include "sim/rng.hpp"
#include "topologies/builders.hpp"
#include "topologies/collectives.hpp"
#include "topologies/ring_allreduce.hpp"

using namespace ddlsim;

namespace {

struct Flow {
    double start;
    std::vector<std::uint32_t> route;
    double bytes;
};

struct Instance {
    std::vector<double> capacity;
    std::vector<double> latency;
    std::vector<Flow> flows;
};

Instance random_instance(std::uint64_t seed) {
    sim::rng::SplitMix64 rng(seed);
    auto int_in = [&rng](int lo, int hi) {  // uniform in [lo, hi]
        return lo + static_cast<int>(sim::rng::below(rng, static_cast<std::uint64_t>(hi - lo + 1)));
    };
    auto real_in = [&rng](double lo, double hi) { return lo + (hi - lo) * sim::rng::uniform01(rng); };
    Instance in;
    const int L = int_in(2, 12);
    for (int l = 0; l < L; ++l) {
        in.capacity.push_back(real_in(1e6, 1e9));
        in.latency.push_back(real_in(0.0, 1e-5));
    }
    const int F = int_in(1, 40);
    for (int f = 0; f < F; ++f) {
        Flow fl{real_in(0.0, 5e-3), {}, 0.0};
        fl.bytes = real_in(1e3, 5e6);
        const int len = std::min(int_in(1, 4), L);
        while (static_cast<int>(fl.route.size()) < len) {
            const auto l = static_cast<std::uint32_t>(sim::rng::below(rng, static_cast<std::uint64_t>(L)));
            if (std::find(fl.route.begin(), fl.route.end(), l) == fl.route.end()) fl.route.push_back(l);
        }
        in.flows.push_back(fl);
    }
    return in;
}

// Reference: at every event, solve max-min over all active transfers from scratch.
std::vector<double> reference(const Instance& in) {
    const std::size_t F = in.flows.size();
    std::vector<double> activate(F), remaining(F), done(F, -1.0);
    std::vector<char> active(F, 0);
    for (std::size_t f = 0; f < F; ++f) {
        double lat = 0;
        for (auto l : in.flows[f].route) lat += in.latency[l];
        activate[f] = in.flows[f].start + lat;
        remaining[f] = in.flows[f].bytes;
    }
    sim::MaxMinSolver solver;
    double now = 0.0;
    std::size_t finished = 0;
    while (finished < F) {
        sim::MaxMinProblem p;
        p.capacity = in.capacity;
        std::vector<std::size_t> ids;
        for (std::size_t f = 0; f < F; ++f)
            if (active[f]) {
                p.add_flow(in.flows[f].route);
                ids.push_back(f);
            }
        std::vector<double> rates;
        solver.solve(p, rates);
        double next = std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < ids.size(); ++i) next = std::min(next, now + remaining[ids[i]] / rates[i]);
        for (std::size_t f = 0; f < F; ++f)
            if (!active[f] && done[f] < 0 && activate[f] >= now) next = std::min(next, activate[f]);
        for (std::size_t i = 0; i < ids.size(); ++i) remaining[ids[i]] -= rates[i] * (next - now);
        now = next;
        for (std::size_t i = 0; i < ids.size(); ++i)
            if (remaining[ids[i]] <= 1e-9 * in.flows[ids[i]].bytes) {
                active[ids[i]] = 0;
                done[ids[i]] = now;
                ++finished;
            }
        for (std::size_t f = 0; f < F; ++f)
            if (!active[f] && done[f] < 0 && activate[f] <= now) active[f] = 1;
    }
    return done;
}

std::vector<double> incremental(const Instance& in) {
    sim::Engine engine;
    sim::Network net(engine);
    for (std::size_t l = 0; l < in.capacity.size(); ++l)
        net.add_link({sim::Bandwidth::bytes_per_s(in.capacity[l]), sim::Time::seconds(in.latency[l])});
    std::vector<double> done(in.flows.size(), -1.0);
    for (std::size_t f = 0; f < in.flows.size(); ++f)
        engine.at(sim::Time::seconds(in.flows[f].start), [&, f] {
            net.start(in.flows[f].route, sim::Bytes{in.flows[f].bytes}, [&, f] { done[f] = engine.now().seconds(); });
        });
    engine.run();
    return done;
}

}  // namespace

TEST_CASE("incremental re-solve gives the same completions as a full re-solve (200 seeds)") {
    for (std::uint64_t seed = 1; seed <= 200; ++seed) {
        CAPTURE(seed);
        const Instance in = random_instance(seed);
        const auto want = reference(in);
        const auto got = incremental(in);
        for (std::size_t f = 0; f < want.size(); ++f) {
            CAPTURE(f);
            CHECK(got[f] == ddlsim::testing::approx(want[f]).epsilon(1e-7));
        }
    }
}

TEST_CASE("ring all-reduce: the O(n) state machine matches the explicit DAG (random fabrics and gates)") {
    for (std::uint64_t seed = 1; seed <= 30; ++seed) {
        CAPTURE(seed);
        sim::rng::SplitMix64 rng(seed);
        const auto n = static_cast<std::uint32_t>(2 + rng() % 9);
        // A leaf-spine with oversubscription so that hops contend, random placement (hosts may repeat).
        topo::LeafSpineSpec spec{
            3, 3, 2, 1.0 + static_cast<double>(rng() % 4), sim::Bandwidth::bytes_per_s(1e9), sim::Time::seconds(1e-6)};
        const auto fabric = topo::build_fabric(spec);
        std::vector<topo::Vertex> hosts(n);
        for (auto& h : hosts) h = fabric.hosts()[rng() % fabric.hosts().size()];
        std::vector<double> gate(n);
        for (auto& g : gate) g = static_cast<double>(rng() % 1000) * 1e-6;
        const sim::Bytes bytes{1e6 * static_cast<double>(1 + rng() % 20)};

        auto run = [&](const topo::Collective& c) {
            sim::Engine engine;
            sim::Network net(engine);
            fabric.install(net);
            std::vector<double> done(n, -1.0);
            auto round = c.start_round(
                engine, net,
                [&](std::uint32_t a, std::uint32_t b) -> const sim::Route& {
                    return fabric.route(hosts[a], hosts[b], a * 131 + b);
                },
                [&](std::uint32_t e) { done[e] = engine.now().seconds(); }, 0);
            for (std::uint32_t w = 0; w < n; ++w) engine.at(sim::Time::seconds(gate[w]), [&, w] { round->open(w); });
            engine.run();
            return done;
        };
        const auto dag = run(topo::PlanCollective(topo::ring_allreduce_plan(n, bytes)));
        const auto ring = run(topo::RingAllreduce(n, bytes));
        for (std::uint32_t w = 0; w < n; ++w) {
            CAPTURE(w);
            CHECK(ring[w] > 0.0);
            CHECK(ring[w] == ddlsim::testing::approx(dag[w]).epsilon(1e-9));
        }
        // Same wire bytes and same analytic time.
        const topo::RemoteTest remote = [&](std::uint32_t a, std::uint32_t b) { return hosts[a] != hosts[b]; };
        CHECK(topo::RingAllreduce(n, bytes).wire_bytes(remote).value() ==
              ddlsim::testing::approx(
                  topo::PlanCollective(topo::ring_allreduce_plan(n, bytes)).wire_bytes(remote).value()));
    }
}
