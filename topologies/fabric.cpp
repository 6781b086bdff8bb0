#include "topologies/fabric.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>
#include <unordered_set>

#include "sim/rng.hpp"

namespace ddlsim::topo {

Vertex Fabric::add_node(std::string name, NodeKind kind) {
    if (by_name_.contains(name)) throw std::invalid_argument("duplicate node name \"" + name + "\"");
    const Vertex v = boost::add_vertex(NodeInfo{name, kind}, g_);
    by_name_.emplace(std::move(name), v);
    host_index_.push_back(static_cast<std::uint32_t>(hosts_.size()));
    // Its own machine until set_node says otherwise: an id above any node a builder numbers (0, 1, ...), so that a
    // switch or a lone host never shares a machine with node v's GPUs.
    node_of_.push_back(kOwnNode + static_cast<std::uint32_t>(v));
    transit_.push_back(1);
    transit_adj_.clear();
    if (kind == NodeKind::host) hosts_.push_back(v);
    return v;
}

void Fabric::add_link(const std::string& a, const std::string& b, sim::Bandwidth bw, sim::Time latency, LinkClass cls,
                      Medium medium) {
    const auto va = find(a);
    const auto vb = find(b);
    if (!va) throw std::invalid_argument("link endpoint \"" + a + "\" is not a node");
    if (!vb) throw std::invalid_argument("link endpoint \"" + b + "\" is not a node");
    if (*va == *vb) throw std::invalid_argument("link from \"" + a + "\" to itself");
    if (!(bw.bytes_per_s() > 0.0)) throw std::invalid_argument("link bandwidth must be positive");
    const auto id = static_cast<std::uint32_t>(link_ends_.size());
    const LinkInfo info{bw, latency, id, cls, sim::Time::zero(), std::numeric_limits<double>::infinity(), medium};
    boost::add_edge(*va, *vb, info, g_);
    link_ends_.emplace_back(*va, *vb);
    link_info_.push_back(info);
    transit_adj_.clear();
}

void Fabric::set_host_bandwidth(Vertex host, sim::Bandwidth bw) {
    if (!(bw.bytes_per_s() > 0.0)) throw std::invalid_argument("link bandwidth must be positive");
    for (auto [e, end] = boost::out_edges(host, g_); e != end; ++e) {
        g_[*e].bandwidth = bw;
        link_info_[g_[*e].id].bandwidth = bw;
    }
    pair_routes_.clear();
}

std::optional<Vertex> Fabric::find(const std::string& name) const {
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) return std::nullopt;
    return it->second;
}

void Fabric::validate() const {
    if (hosts_.empty()) throw std::invalid_argument("the fabric has no host");
    // One full BFS from the first host: every other host must be reached.
    bfs(hosts_.front(), boost::graph_traits<Graph>::null_vertex());
    std::string unreachable;
    for (Vertex h : hosts_)
        if (dist_[h] < 0) {
            unreachable = name(h);
            break;
        }
    clear_bfs();
    if (!unreachable.empty())
        throw std::invalid_argument("host \"" + unreachable + "\" cannot reach host \"" + name(hosts_.front()) +
                                    "\" (the network is not connected)");
}

void Fabric::install(sim::Network& net) const {
    for (const LinkInfo& info : link_info_) {
        net.add_link({info.bandwidth, info.latency, info.overhead, info.flow_cap});
        net.add_link({info.bandwidth, info.latency, info.overhead, info.flow_cap});
    }
}

void Fabric::index_transit() const {
    const std::size_t n = boost::num_vertices(g_);
    if (transit_adj_.size() == n) return;
    transit_adj_.assign(n, {});
    core_.assign(n, 0);
    for (Vertex v = 0; v < n; ++v) {
        for (auto [e, end] = boost::out_edges(v, g_); e != end; ++e)
            if (const Vertex u = boost::target(*e, g_); transit_[u] != 0) transit_adj_[v].emplace_back(u, g_[*e].id);
        const auto& adj = transit_adj_[v];
        const bool two = std::any_of(adj.begin(), adj.end(), [&](const auto& x) { return x.first != adj[0].first; });
        core_[v] = transit_[v] != 0 && two ? 1 : 0;
    }
    core_adj_.assign(n, {});
    for (Vertex v = 0; v < n; ++v)
        for (const auto& x : transit_adj_[v])
            if (core_[x.first] != 0) core_adj_[v].push_back(x);
}

void Fabric::bfs(Vertex a, Vertex b) const {
    if (dist_.size() != boost::num_vertices(g_)) dist_.assign(boost::num_vertices(g_), -1);
    std::size_t head = touched_.size();
    dist_[a] = 0;
    touched_.push_back(a);
    if (b == boost::graph_traits<Graph>::null_vertex()) {  // everything a reaches
        while (head < touched_.size()) {
            const Vertex u = touched_[head++];
            if (u != a && transit_[u] == 0) continue;  // reached, but routes do not pass through it
            for (auto [e, end] = boost::out_edges(u, g_); e != end; ++e)
                if (const Vertex v = boost::target(*e, g_); dist_[v] < 0) {
                    dist_[v] = dist_[u] + 1;
                    touched_.push_back(v);
                }
        }
        return;
    }
    index_transit();
    // A shortest route passes only through transit vertices, and a transit vertex that is not core (one transit
    // neighbour t) only as the hop after a or before b: in its middle it would be entered from t and left to t.
    // So past a's own links the search follows core_adj_, and reaches b through b's neighbours (near_b_ 1), a non-core
    // one of them through its transit neighbour (near_b_ 2). The distances of every vertex on a shortest route are
    // those of the full search, so walk_back finds the same routes.
    if (near_b_.size() != dist_.size()) near_b_.assign(dist_.size(), 0);
    std::vector<Vertex> entries;  // b's neighbours, and the transit neighbour of each that is not core
    if (core_[b] == 0)
        for (auto [e, end] = boost::out_edges(b, g_); e != end; ++e) {
            const Vertex s = boost::target(*e, g_);
            near_b_[s] = 1;
            entries.push_back(s);
        }
    for (std::size_t i = 0, k = entries.size(); i < k; ++i)
        if (const Vertex s = entries[i]; transit_[s] != 0 && core_[s] == 0)
            for (const auto& [t, id] : transit_adj_[s])
                if (near_b_[t] == 0) {
                    near_b_[t] = 2;
                    entries.push_back(t);
                }
    auto label = [&](Vertex v, Vertex from) {
        dist_[v] = dist_[from] + 1;
        touched_.push_back(v);
        // Every vertex one hop closer than b is already labelled when b is first found, so the shortest-path DAG
        // into b is complete: stop here.
        return v == b;
    };
    bool found = false;
    for (auto [e, end] = boost::out_edges(a, g_); e != end && !found; ++e)
        if (const Vertex v = boost::target(*e, g_); dist_[v] < 0) found = label(v, a);
    while (!found && head + 1 < touched_.size()) {
        const Vertex u = touched_[++head];
        if (transit_[u] == 0) continue;  // reached, but routes do not pass through it
        for (const auto& [v, id] : core_adj_[u])
            if (dist_[v] < 0 && (found = label(v, u))) break;
        if (found || near_b_[u] == 0) continue;
        for (const auto& [v, id] : transit_adj_[u])  // u leads to a non-core neighbour of b (a rail leaf to b's NIC)
            if (dist_[v] < 0 && near_b_[v] == 1 && core_[v] == 0) label(v, u);
        if (near_b_[u] == 1 && dist_[b] < 0) found = label(b, u);
    }
    for (Vertex v : entries) near_b_[v] = 0;
}

void Fabric::predecessors(Vertex a, Vertex b, Vertex v, std::vector<std::pair<Vertex, std::uint32_t>>& out) const {
    out.clear();
    auto add = [&](const std::vector<std::pair<Vertex, std::uint32_t>>& adj) {
        for (const auto& x : adj)
            if (dist_[x.first] >= 0 && dist_[x.first] == dist_[v] - 1) out.push_back(x);
    };
    if (dist_[v] == 1) {  // the links between v and a
        for (auto [e, end] = boost::out_edges(a, g_); e != end; ++e)
            if (boost::target(*e, g_) == v) out.emplace_back(a, g_[*e].id);
        return;
    }
    if (v == b || core_[v] == 0) {  // b, or the non-core hop before it: every transit neighbour (few)
        add(transit_adj_[v]);
        return;
    }
    // A core vertex: its core predecessors, and at distance 2 the non-core neighbours of a too (a's NIC).
    add(core_adj_[v]);
    if (dist_[v] != 2) return;
    const std::size_t core = out.size();
    for (auto [e, end] = boost::out_edges(a, g_); e != end; ++e)
        if (const Vertex s = boost::target(*e, g_); transit_[s] != 0 && core_[s] == 0 && dist_[s] == 1)
            for (const auto& x : transit_adj_[s])
                if (x.first == v) out.emplace_back(s, x.second);
    // v's edge order is the order links were added, so by link id; a's neighbours may hold one link twice (parallel
    // links to a reach s twice).
    if (out.size() > core) {
        std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
        out.erase(std::unique(out.begin(), out.end()), out.end());
    }
}

void Fabric::clear_bfs() const {
    for (Vertex v : touched_) dist_[v] = -1;
    touched_.clear();
}

sim::Route Fabric::walk_back(Vertex a, Vertex b, std::uint64_t flow_key, bool& unique) const {
    sim::Route r;
    unique = true;
    std::vector<std::pair<Vertex, std::uint32_t>> options;  // (predecessor, link id)
    std::uint64_t digits = host_index_[b];                  // dmodk: destination index, one digit per choice
    for (Vertex v = b; v != a;) {
        predecessors(a, b, v, options);
        std::size_t pick = 0;
        if (const auto nic = nic_choice(a, b, v, options); nic) {
            pick = *nic;  // a node's NICs: fixed by the GPU's place in its node, not hashed
        } else if (options.size() > 1) {
            unique = false;
            if (routing_ == Routing::dmodk) {
                pick = digits % options.size();
                digits /= options.size();
            } else {
                pick = sim::rng::substream(flow_key, v) % options.size();  // a switch's hash of the flow, mod the ports
            }
        }
        const auto [u, id] = options[pick];
        // Directed link 2*id runs first-end -> second-end of the fabric link.
        r.push_back(link_ends_[id].first == u ? 2 * id : 2 * id + 1);
        v = u;
    }
    std::reverse(r.begin(), r.end());
    return r;
}

void Fabric::index_nodes() const {
    if (node_rank_.size() == boost::num_vertices(g_)) return;
    node_rank_.assign(boost::num_vertices(g_), 0);
    node_size_.clear();
    node_hosts_.clear();
    for (Vertex h : hosts_) {
        node_rank_[h] = node_size_[node_of_[h]]++;
        node_hosts_[node_of_[h]].push_back(h);
    }
}

std::optional<Vertex> Fabric::pxn_relay(Vertex a, Vertex b) const {
    if (rails_ < 2 || a == b || g_[a].kind != NodeKind::host || g_[b].kind != NodeKind::host) return std::nullopt;
    const std::uint32_t na = node_of_[a], nb = node_of_[b];
    if (na == nb || na >= kOwnNode || nb >= kOwnNode) return std::nullopt;
    index_nodes();
    const std::uint32_t ma = node_size_.at(na), mb = node_size_.at(nb);
    if (ma < rails_ || mb < rails_) return std::nullopt;
    const std::uint32_t rail_a = node_rank_[a] * rails_ / ma, rail_b = node_rank_[b] * rails_ / mb;
    if (rail_a == rail_b) return std::nullopt;
    return node_hosts_.at(na).at(rail_b * ma / rails_);
}

std::optional<std::size_t> Fabric::nic_choice(Vertex a, Vertex b, Vertex v,
                                              const std::vector<std::pair<Vertex, std::uint32_t>>& options) const {
    if (options.size() < 2) return std::nullopt;
    const Vertex u = options.front().first;
    for (const auto& o : options)
        if (o.first != u) return std::nullopt;  // not parallel links: a switch's choice of port
    index_nodes();
    // The bundle leaves a's first switch (u is one hop from a) or enters b's (v is one hop before b).
    for (const auto& [host, near] : {std::pair{a, dist_[u] == 1}, std::pair{b, dist_[v] == dist_[b] - 1}}) {
        if (!near) continue;
        const std::uint32_t m = node_size_.at(node_of_[host]);
        if (m >= options.size()) return static_cast<std::size_t>(node_rank_[host]) * options.size() / m;
    }
    return std::nullopt;
}

// Shortest routes of one or two hops found from the endpoints' own (small) adjacency, without
// a BFS through a switch of large degree: a star of 100,000 hosts costs O(1) per pair. Returns
// false when neither a direct link nor a common neighbour exists (the BFS then decides).
bool Fabric::short_route(Vertex a, Vertex b, std::uint64_t flow_key, sim::Route& r, bool& unique) const {
    constexpr std::size_t kSmall = 64;
    if (boost::out_degree(a, g_) > kSmall || boost::out_degree(b, g_) > kSmall) return false;
    auto directed = [&](std::uint32_t id, Vertex from) { return link_ends_[id].first == from ? 2 * id : 2 * id + 1; };
    auto choose = [&](std::size_t options) {
        if (options == 1) return std::size_t{0};
        unique = false;
        return static_cast<std::size_t>(routing_ == Routing::dmodk ? host_index_[b] % options
                                                                   : sim::rng::substream(flow_key, b) % options);
    };
    unique = true;
    std::vector<std::uint32_t> direct;
    for (auto [e, end] = boost::out_edges(a, g_); e != end; ++e)
        if (boost::target(*e, g_) == b) direct.push_back(g_[*e].id);
    if (!direct.empty()) {
        r = {directed(direct[choose(direct.size())], a)};
        return true;
    }
    std::vector<std::pair<std::uint32_t, std::uint32_t>> two;  // (link a-u, link u-b)
    for (auto [e, end] = boost::out_edges(a, g_); e != end; ++e) {
        const Vertex u = boost::target(*e, g_);
        if (transit_[u] == 0) continue;
        for (auto [f, fend] = boost::out_edges(b, g_); f != fend; ++f)
            if (boost::target(*f, g_) == u) two.emplace_back(g_[*e].id, g_[*f].id);
    }
    if (two.empty()) return false;
    const auto [first, second] = two[choose(two.size())];
    const Vertex u = link_ends_[first].first == a ? link_ends_[first].second : link_ends_[first].first;
    r = {directed(first, a), directed(second, u)};
    return true;
}

const sim::Route& Fabric::route(Vertex a, Vertex b, std::uint64_t flow_key) const {
    if (rails_ >= 2) {
        // A relayed pair whose two parts are unique is cached per pair: one lookup, whatever the connection.
        if (const auto hit = relay_pairs_.find(pair_key(a, b)); hit != relay_pairs_.end()) return hit->second;
        if (const std::optional<Vertex> relay = pxn_relay(a, b)) {
            const sim::Route& first = route(a, *relay, flow_key);
            const sim::Route& second = route(*relay, b, flow_key);
            const auto unique = [this](Vertex x, Vertex y) {
                const auto c = pair_routes_.find(pair_key(x, y));
                return c != pair_routes_.end() && (c->second.unique || routing_ == Routing::dmodk);
            };
            const bool per_pair = unique(a, *relay) && unique(*relay, b);
            if (!per_pair)
                if (const auto hit = relay_routes_.find({a, b, flow_key}); hit != relay_routes_.end())
                    return hit->second;
            sim::Route r = first;
            r.insert(r.end(), second.begin(), second.end());
            if (per_pair) return relay_pairs_.emplace(pair_key(a, b), std::move(r)).first->second;
            return relay_routes_.emplace(std::make_tuple(a, b, flow_key), std::move(r)).first->second;
        }
    }
    const std::uint64_t key = pair_key(a, b);
    auto it = pair_routes_.find(key);
    if (it == pair_routes_.end()) {
        Cached c;
        if (a != b && short_route(a, b, 0, c.route, c.unique)) {
            // found from the endpoints' adjacency
        } else if (a != b) {
            bfs(a, b);
            if (dist_[b] < 0) {
                clear_bfs();
                throw std::invalid_argument("no route from \"" + name(a) + "\" to \"" + name(b) + "\"");
            }
            c.route = walk_back(a, b, 0, c.unique);
            clear_bfs();
        }
        it = pair_routes_.emplace(key, std::move(c)).first;
    }
    if (it->second.unique || routing_ == Routing::dmodk) return it->second.route;
    const auto fk = std::make_tuple(a, b, flow_key);
    auto f = flow_routes_.find(fk);
    if (f != flow_routes_.end()) return f->second;
    bool unique = false;
    sim::Route r;
    if (!short_route(a, b, flow_key, r, unique)) {
        bfs(a, b);
        r = walk_back(a, b, flow_key, unique);
        clear_bfs();
    }
    return flow_routes_.emplace(fk, std::move(r)).first->second;
}

std::optional<Vertex> Fabric::sharp_switch(Vertex host) const {
    if (sharp_.empty()) return std::nullopt;
    // Breadth first through switches only, level by level, until a level holds a SHARP switch.
    std::vector<Vertex> level{host}, next;
    std::unordered_set<Vertex> seen{host};  // a host's neighbourhood, not the whole fabric
    while (!level.empty()) {
        next.clear();
        for (Vertex v : level)
            for (auto [e, end] = boost::out_edges(v, g_); e != end; ++e) {
                const Vertex u = boost::target(*e, g_);
                if (g_[u].kind == NodeKind::switch_ && seen.insert(u).second) next.push_back(u);
            }
        for (Vertex sw : sharp_)
            if (seen.contains(sw)) return sw;
        level.swap(next);
    }
    return std::nullopt;
}

std::uint64_t Fabric::path_count(Vertex a, Vertex b) const {
    if (a == b) return 1;
    bfs(a, b);
    if (dist_[b] < 0) {
        clear_bfs();
        return 0;
    }
    // Count paths through the shortest-path DAG, in BFS order (distances ascending).
    std::unordered_map<Vertex, std::uint64_t> count{{a, 1}};
    std::vector<std::pair<Vertex, std::uint32_t>> preds;
    for (Vertex u : touched_) {
        if (u == a || dist_[u] > dist_[b]) continue;
        predecessors(a, b, u, preds);
        std::uint64_t c = 0;
        for (const auto& [p, id] : preds) c = std::min<std::uint64_t>(c + count[p], 1ULL << 63);
        count[u] = c;
    }
    const std::uint64_t n = count[b];
    clear_bfs();
    return n;
}

sim::Time Fabric::path_latency(Vertex a, Vertex b) const {
    sim::Time t;
    sim::Time overhead;
    for (sim::LinkIndex l : route(a, b)) {
        t += link_info_[l / 2].latency;
        overhead = std::max(overhead, link_info_[l / 2].overhead);
    }
    return t + overhead;
}

sim::Bandwidth Fabric::path_bandwidth(Vertex a, Vertex b) const {
    double bw = std::numeric_limits<double>::infinity();
    for (sim::LinkIndex l : route(a, b)) {
        bw = std::min({bw, link_info_[l / 2].bandwidth.bytes_per_s(), link_info_[l / 2].flow_cap});
    }
    return sim::Bandwidth::bytes_per_s(bw);
}

std::string Fabric::directed_link_name(sim::LinkIndex l) const {
    const auto [u, v] = link_ends_[l / 2];
    return l % 2 == 0 ? name(u) + "->" + name(v) : name(v) + "->" + name(u);
}

}  // namespace ddlsim::topo
