// Test helpers: run one round of a collective on a fabric with every gate open at
// time 0 and read back when each endpoint finished, the wire bytes and the analytic
// (alpha-beta) time. For closed-form tests of communication patterns.
#pragma once

#include <algorithm>
#include <vector>

#include "sim/engine.hpp"
#include "sim/network.hpp"
#include "topologies/builders.hpp"
#include "topologies/collectives.hpp"

namespace ddlsim::testing {

struct RoundResult {
    std::vector<double> done;  ///< per endpoint, seconds (-1: never reported)
    double makespan = 0.0;     ///< latest endpoint completion
    double wire_bytes = 0.0;
    double analytic = 0.0;  ///< Collective::alpha_beta on the same fabric
    std::uint64_t transfers = 0;
};

/// Runs round `round` of `c` with endpoint e placed on `hosts[e]` of `fabric`.
inline RoundResult run_round(const topo::Collective& c, const topo::Fabric& fabric,
                             const std::vector<topo::Vertex>& hosts, std::uint32_t round = 0) {
    sim::Engine engine;
    sim::Network net(engine);
    fabric.install(net);
    RoundResult r;
    r.done.assign(c.endpoints(), -1.0);
    auto runner = c.start_round(
        engine, net,
        [&](std::uint32_t a, std::uint32_t b) -> const sim::Route& {
            return fabric.route(hosts[a], hosts[b], (static_cast<std::uint64_t>(a) << 24) ^ b);
        },
        [&](std::uint32_t e) { r.done[e] = engine.now().seconds(); }, round);
    for (std::uint32_t e = 0; e < c.endpoints(); ++e) runner->open(e);
    engine.run();
    for (double d : r.done) r.makespan = std::max(r.makespan, d);
    r.transfers = net.transfers_started();
    r.wire_bytes = c.wire_bytes([&](std::uint32_t a, std::uint32_t b) { return hosts[a] != hosts[b]; }).value();
    r.analytic = c.alpha_beta([&](std::uint32_t a, std::uint32_t b) {
                      if (hosts[a] == hosts[b]) return sim::PathCost{sim::Time::zero(), sim::Bandwidth{}, true};
                      return sim::PathCost{fabric.path_latency(hosts[a], hosts[b]),
                                           fabric.path_bandwidth(hosts[a], hosts[b]), false};
                  }).seconds();
    return r;
}

/// Runs `c` on an idle star with one host per endpoint (h0, h1, ...): bandwidth B bytes/s,
/// per-link latency L seconds (so route latency alpha = 2L).
inline RoundResult run_on_star(const topo::Collective& c, double B, double L, std::uint32_t round = 0) {
    const auto fabric =
        topo::build_fabric(topo::StarSpec{c.endpoints(), sim::Bandwidth::bytes_per_s(B), sim::Time::seconds(L)});
    std::vector<topo::Vertex> hosts(fabric.hosts().begin(), fabric.hosts().end());
    return run_round(c, fabric, hosts, round);
}

/// A context of n workers, `bytes` per worker, one tensor, every worker on its own node.
inline topo::CollectiveContext context(std::uint32_t n, double bytes) {
    topo::CollectiveContext ctx;
    ctx.workers = n;
    ctx.bytes = sim::Bytes{bytes};
    ctx.tensor_bytes = {bytes};
    for (std::uint32_t w = 0; w < n; ++w) ctx.node_of.push_back(w);
    return ctx;
}

}  // namespace ddlsim::testing
