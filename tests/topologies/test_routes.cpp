// Routes: the search that skips endpoints' ports (Fabric::bfs with a target) against a search over every vertex, the
// way routes were found before it: every route is a shortest walk through transit vertices, and where the search
// decides (three hops or more) it picks the same links under D-mod-k and under per-flow hashing.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sim/rng.hpp"
#include "topologies/builders.hpp"
#include "topologies/node_type.hpp"

using namespace ddlsim;
using topo::Fabric;
using topo::Vertex;

namespace {

struct Reference {
    std::map<Vertex, int> dist;      // hop distance from a, over routes through transit vertices
    std::vector<std::string> route;  // directed links "u->v", a to b; empty when unreachable
    std::uint64_t paths = 0;         // shortest routes from a to b
};

// Every vertex a reaches, level by level; then from b back to a, among the predecessors in b's edge order, the one
// D-mod-k's next digit of b's host index picks (or the switch's hash of the flow).
Reference reference(const Fabric& f, Vertex a, Vertex b, std::uint64_t flow_key) {
    const auto& g = f.graph();
    Reference r;
    std::deque<Vertex> queue{a};
    r.dist[a] = 0;
    while (!queue.empty()) {
        const Vertex u = queue.front();
        queue.pop_front();
        if (u != a && !f.transit(u)) continue;
        for (auto [e, end] = boost::out_edges(u, g); e != end; ++e)
            if (const Vertex v = boost::target(*e, g); !r.dist.contains(v)) {
                r.dist[v] = r.dist[u] + 1;
                queue.push_back(v);
            }
    }
    if (!r.dist.contains(b)) return r;
    auto pred = [&](Vertex v) {
        std::vector<Vertex> out;
        for (auto [e, end] = boost::out_edges(v, g); e != end; ++e)
            if (const Vertex u = boost::target(*e, g);
                r.dist.contains(u) && r.dist[u] == r.dist[v] - 1 && (u == a || f.transit(u)))
                out.push_back(u);
        return out;
    };
    // Path counts through the shortest-path DAG, by ascending distance.
    std::vector<std::pair<int, Vertex>> order;
    for (const auto& [v, d] : r.dist) order.emplace_back(d, v);
    std::sort(order.begin(), order.end());
    std::map<Vertex, std::uint64_t> count{{a, 1}};
    for (const auto& [d, v] : order)
        if (v != a)
            for (Vertex u : pred(v)) count[v] += count[u];
    r.paths = count[b];
    const auto& hosts = f.hosts();
    std::uint64_t digits = static_cast<std::uint64_t>(std::find(hosts.begin(), hosts.end(), b) - hosts.begin());
    for (Vertex v = b; v != a;) {
        const std::vector<Vertex> options = pred(v);
        std::size_t pick = 0;
        if (options.size() > 1) {
            if (f.routing() == topo::Routing::dmodk) {
                pick = digits % options.size();
                digits /= options.size();
            } else {
                pick = sim::rng::substream(flow_key, v) % options.size();
            }
        }
        r.route.insert(r.route.begin(), f.name(options[pick]) + "->" + f.name(v));
        v = options[pick];
    }
    return r;
}

// Checks every ordered pair of hosts: a shortest walk through transit vertices, the reference's links where the
// search decides (three hops or more), its path count. Returns how many pairs the search decided.
int check_all_pairs(const Fabric& f) {
    int searched = 0;
    for (Vertex a : f.hosts())
        for (Vertex b : f.hosts()) {
            if (a == b) continue;
            const std::uint64_t key = a * 1000003ULL + b;
            const Reference ref = reference(f, a, b, key);
            CAPTURE(f.name(a));
            CAPTURE(f.name(b));
            if (!ref.dist.contains(b)) {
                CHECK_THROWS_AS((void)f.route(a, b, key), std::invalid_argument);
                CHECK(f.path_count(a, b) == 0);
                continue;
            }
            const auto& route = f.route(a, b, key);
            REQUIRE(route.size() == static_cast<std::size_t>(ref.dist.at(b)));
            std::vector<std::string> names;
            for (sim::LinkIndex l : route) names.push_back(f.directed_link_name(l));
            // A walk from a to b whose inner vertices routes may pass through.
            for (std::size_t i = 0; i < names.size(); ++i) {
                const auto arrow = names[i].find("->");
                const std::string from = names[i].substr(0, arrow);
                const std::string to = names[i].substr(arrow + 2);
                CHECK(from == (i == 0 ? f.name(a) : names[i - 1].substr(names[i - 1].find("->") + 2)));
                if (i + 1 < names.size()) CHECK(f.transit(*f.find(to)));
            }
            CHECK(names.back().substr(names.back().find("->") + 2) == f.name(b));
            if (ref.dist.at(b) >= 3) {
                ++searched;
                CHECK(names == ref.route);
            }
            CHECK(f.path_count(a, b) == ref.paths);
        }
    return searched;
}

// A random fabric: core switches (a random tree plus chords), stub switches hanging from one core switch (as NICs
// from a rail leaf), a pair of stubs joined only to each other, and hosts on one or two of them, a fifth of them
// relaying (as BCube's servers do), some linked to each other.
Fabric random_fabric(std::uint64_t seed, topo::Routing routing) {
    std::mt19937_64 rng(seed);
    auto below = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    Fabric f;
    f.set_routing(routing);
    std::set<std::pair<std::string, std::string>> linked;
    auto link = [&](const std::string& x, const std::string& y) {
        if (x == y || linked.contains({x, y}) || linked.contains({y, x})) return;
        linked.insert({x, y});
        f.add_link(x, y, sim::Bandwidth::bytes_per_s(1e9), sim::Time::seconds(1e-6));
    };
    const std::size_t cores = 3 + below(8);
    std::vector<std::string> attach;
    for (std::size_t i = 0; i < cores; ++i) {
        f.add_node(fmt::format("s{}", i), topo::NodeKind::switch_);
        attach.push_back(fmt::format("s{}", i));
        if (i > 0) link(attach[i], attach[below(i)]);
    }
    for (std::size_t i = 0, chords = below(cores); i < chords; ++i) link(attach[below(cores)], attach[below(cores)]);
    for (std::size_t i = 0, stubs = 2 + below(8); i < stubs; ++i) {
        const std::string t = fmt::format("t{}", i);
        f.add_node(t, topo::NodeKind::switch_);
        link(t, attach[below(cores)]);
        attach.push_back(t);
    }
    f.add_node("pa", topo::NodeKind::switch_);
    f.add_node("pb", topo::NodeKind::switch_);
    link("pa", "pb");
    attach.push_back("pa");
    attach.push_back("pb");
    std::vector<std::string> hosts;
    for (std::size_t i = 0, n = 6 + below(10); i < n; ++i) {
        hosts.push_back(fmt::format("h{}", i));
        const Vertex v = f.add_node(hosts.back(), topo::NodeKind::host);
        f.set_transit(v, below(5) == 0);
        for (std::size_t k = 0, links = 1 + below(2); k < links; ++k) link(hosts.back(), attach[below(attach.size())]);
        if (i > 0 && below(4) == 0) link(hosts.back(), hosts[below(i)]);
    }
    return f;
}

}  // namespace

TEST_CASE("routes: on random fabrics the search finds the routes a search over every vertex finds") {
    int searched = 0;
    for (std::uint64_t seed = 1; seed <= 40; ++seed)
        for (const auto routing : {topo::Routing::dmodk, topo::Routing::ecmp}) {
            CAPTURE(seed);
            searched += check_all_pairs(random_fabric(seed, routing));
        }
    CHECK(searched > 1000);  // the cases the search decides are most of them, not a corner
}

TEST_CASE("routes: a rail-optimized fabric's GPUs, across rails and spines, by the reference's links") {
    for (const auto routing : {topo::Routing::dmodk, topo::Routing::ecmp}) {
        topo::RailOptimizedSpec s;
        s.nodes = 3;
        s.node = *topo::find_node_preset("dgx_h100");
        s.bandwidth = sim::Bandwidth::bytes_per_s(50e9);
        s.latency = sim::Time::seconds(1e-6);
        s.spines = 2;
        Fabric f = topo::build_fabric(s);
        f.set_routing(routing);
        f.set_rails(0);  // the search itself, not NCCL's relay onto the destination's rail (test_node_presets)
        // GPU to GPU across nodes: GPU, NIC, rail leaf, (spine, rail leaf,) NIC, GPU: 4 or 6 hops, all searched.
        CHECK(check_all_pairs(f) == 24 * 16);
    }
}
