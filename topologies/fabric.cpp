#include "topologies/fabric.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>

namespace ddlsim::topo {

Vertex Fabric::add_node(std::string name, NodeKind kind) {
    if (by_name_.contains(name)) throw std::invalid_argument("duplicate node name \"" + name + "\"");
    const Vertex v = boost::add_vertex(NodeInfo{name, kind}, g_);
    by_name_.emplace(std::move(name), v);
    if (kind == NodeKind::host) hosts_.push_back(v);
    return v;
}

void Fabric::add_link(const std::string& a, const std::string& b, sim::Bandwidth bw, sim::Time latency) {
    const auto va = find(a);
    const auto vb = find(b);
    if (!va) throw std::invalid_argument("link endpoint \"" + a + "\" is not a node");
    if (!vb) throw std::invalid_argument("link endpoint \"" + b + "\" is not a node");
    if (*va == *vb) throw std::invalid_argument("link from \"" + a + "\" to itself");
    if (!(bw.bytes_per_s() > 0.0)) throw std::invalid_argument("link bandwidth must be positive");
    const auto id = static_cast<std::uint32_t>(link_ends_.size());
    boost::add_edge(*va, *vb, LinkInfo{bw, latency, id}, g_);
    link_ends_.emplace_back(*va, *vb);
    link_info_.push_back(LinkInfo{bw, latency, id});
}

std::optional<Vertex> Fabric::find(const std::string& name) const {
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) return std::nullopt;
    return it->second;
}

void Fabric::validate() const {
    if (hosts_.empty()) throw std::invalid_argument("the fabric has no host");
    const auto& parents = parents_from(hosts_.front());
    for (Vertex h : hosts_)
        if (h != hosts_.front() && parents[h] == boost::graph_traits<Graph>::null_vertex())
            throw std::invalid_argument("host \"" + name(h) + "\" cannot reach host \"" + name(hosts_.front()) + "\"");
}

void Fabric::install(sim::Network& net) const {
    for (const LinkInfo& info : link_info_) {
        net.add_link({info.bandwidth, info.latency});
        net.add_link({info.bandwidth, info.latency});
    }
}

// BFS tree from `src`: parent vertex and the link id used to reach each vertex.
const std::vector<Vertex>& Fabric::parents_from(Vertex src) const {
    if (auto it = bfs_parents_.find(src); it != bfs_parents_.end()) return it->second;
    const auto n = boost::num_vertices(g_);
    const Vertex none = boost::graph_traits<Graph>::null_vertex();
    std::vector<Vertex> parent(n, none);
    std::vector<std::uint32_t> via(n, std::numeric_limits<std::uint32_t>::max());
    std::vector<char> seen(n, 0);
    std::deque<Vertex> queue{src};
    seen[src] = 1;
    while (!queue.empty()) {
        const Vertex u = queue.front();
        queue.pop_front();
        for (auto [e, end] = boost::out_edges(u, g_); e != end; ++e) {
            const Vertex v = boost::target(*e, g_);
            if (seen[v]) continue;
            seen[v] = 1;
            parent[v] = u;
            via[v] = g_[*e].id;
            queue.push_back(v);
        }
    }
    bfs_edges_.emplace(src, std::move(via));
    return bfs_parents_.emplace(src, std::move(parent)).first->second;
}

const sim::Route& Fabric::route(Vertex a, Vertex b) const {
    const std::uint64_t key = (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint64_t>(b);
    if (auto it = routes_.find(key); it != routes_.end()) return it->second;
    sim::Route r;
    if (a != b) {
        const auto& parent = parents_from(a);
        const auto& via = bfs_edges_.at(a);
        if (parent[b] == boost::graph_traits<Graph>::null_vertex())
            throw std::invalid_argument("no route from \"" + name(a) + "\" to \"" + name(b) + "\"");
        for (Vertex v = b; v != a; v = parent[v]) {
            const std::uint32_t id = via[v];
            // Directed link 2*id runs first-end -> second-end of the fabric link.
            r.push_back(link_ends_[id].first == parent[v] ? 2 * id : 2 * id + 1);
        }
        std::reverse(r.begin(), r.end());
    }
    return routes_.emplace(key, std::move(r)).first->second;
}

sim::Time Fabric::path_latency(Vertex a, Vertex b) const {
    sim::Time t;
    for (sim::LinkIndex l : route(a, b)) {
        t += link_info_[l / 2].latency;
    }
    return t;
}

sim::Bandwidth Fabric::path_bandwidth(Vertex a, Vertex b) const {
    double bw = std::numeric_limits<double>::infinity();
    for (sim::LinkIndex l : route(a, b)) {
        bw = std::min(bw, link_info_[l / 2].bandwidth.bytes_per_s());
    }
    return sim::Bandwidth::bytes_per_s(bw);
}

std::string Fabric::directed_link_name(sim::LinkIndex l) const {
    const auto [u, v] = link_ends_[l / 2];
    return l % 2 == 0 ? name(u) + "->" + name(v) : name(v) + "->" + name(u);
}

}  // namespace ddlsim::topo
