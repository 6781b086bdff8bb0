// A physical fabric: hosts and switches joined by full-duplex links, held as a
// Boost.Graph undirected graph. Routes are shortest paths by hop count (BFS,
// ties broken by link insertion order, so they are deterministic), cached per
// pair, and expressed as directed sim::Network links once installed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "sim/network.hpp"
#include "sim/units.hpp"

namespace ddlsim::topo {

enum class NodeKind { host, switch_ };

struct NodeInfo {
    std::string name;
    NodeKind kind = NodeKind::host;
};

struct LinkInfo {
    sim::Bandwidth bandwidth;
    sim::Time latency;
    std::uint32_t id = 0;  ///< insertion order; directed links 2*id (a->b) and 2*id+1 (b->a)
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, NodeInfo, LinkInfo>;
using Vertex = Graph::vertex_descriptor;

class Fabric {
public:
    /// Adds a node; throws std::invalid_argument on a duplicate name.
    Vertex add_node(std::string name, NodeKind kind);
    /// Adds a full-duplex link; throws on unknown names, self-loops, non-positive bandwidth.
    void add_link(const std::string& a, const std::string& b, sim::Bandwidth bw, sim::Time latency);

    /// Throws std::invalid_argument unless every host reaches every other host.
    void validate() const;

    [[nodiscard]] const Graph& graph() const { return g_; }
    [[nodiscard]] std::optional<Vertex> find(const std::string& name) const;
    [[nodiscard]] const std::vector<Vertex>& hosts() const { return hosts_; }
    [[nodiscard]] const std::string& name(Vertex v) const { return g_[v].name; }

    /// Creates the directed links of every fabric link in `net` (indices 2*id, 2*id+1).
    void install(sim::Network& net) const;
    /// The directed links from `a` to `b` (empty when a == b). Cached.
    const sim::Route& route(Vertex a, Vertex b) const;
    /// Sum of link latencies and the smallest bandwidth on the route from a to b.
    [[nodiscard]] sim::Time path_latency(Vertex a, Vertex b) const;
    [[nodiscard]] sim::Bandwidth path_bandwidth(Vertex a, Vertex b) const;
    [[nodiscard]] std::size_t link_count() const { return boost::num_edges(g_); }
    /// The fabric link behind directed link `l`, as "a->b".
    [[nodiscard]] std::string directed_link_name(sim::LinkIndex l) const;

private:
    const std::vector<Vertex>& parents_from(Vertex src) const;

    Graph g_;
    std::map<std::string, Vertex> by_name_;
    std::vector<Vertex> hosts_;
    std::vector<std::pair<Vertex, Vertex>> link_ends_;  ///< by link id
    std::vector<LinkInfo> link_info_;                   ///< by link id
    mutable std::unordered_map<std::uint64_t, sim::Route> routes_;
    mutable std::unordered_map<Vertex, std::vector<Vertex>> bfs_parents_;
    mutable std::unordered_map<Vertex, std::vector<std::uint32_t>> bfs_edges_;
};

}  // namespace ddlsim::topo
