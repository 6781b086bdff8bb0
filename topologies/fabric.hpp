// A physical fabric: hosts and switches joined by full-duplex links, held as a
// Boost.Graph undirected graph. Routes are shortest paths by hop count. Where
// several shortest paths exist (fat-tree, leaf-spine, parallel NIC links), ECMP
// picks one per flow: walking back from the destination, each hop chooses among
// its equal-cost predecessors by a hash of the flow key, so a flow (a connection)
// keeps its path and distinct flows spread. Routes are cached: per pair when the
// shortest path is unique, per (pair, flow key) otherwise.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "sim/enum_info.hpp"
#include "sim/network.hpp"
#include "sim/units.hpp"

namespace ddlsim::topo {

enum class NodeKind { host, switch_ };

/// How a flow picks among equal-cost shortest paths.
///  ecmp:  per flow, by a hash of its flow key (a connection keeps its path; flows spread
///         statistically and may collide, as with hardware ECMP).
///  dmodk: by the destination host's index, as a mixed-radix number whose digits pick the
///         hop at each level walking back from the destination ("D-mod-k", the static
///         routing of InfiniBand fat-trees; contention-free for shift permutations).
enum class Routing { ecmp, dmodk };

inline constexpr sim::EnumEntry<NodeKind> k_node_kinds[]{{NodeKind::host, "host", "runs workers or servers"},
                                                         {NodeKind::switch_, "switch", "forwards only"}};
constexpr std::span<const sim::EnumEntry<NodeKind>> enum_entries(NodeKind) {
    return k_node_kinds;
}

inline constexpr sim::EnumEntry<Routing> k_routings[]{{Routing::ecmp, "ecmp", "per-connection hash of the seed"},
                                                      {Routing::dmodk, "dmodk", "by destination index (D-mod-k)"}};
constexpr std::span<const sim::EnumEntry<Routing>> enum_entries(Routing) {
    return k_routings;
}

struct NodeInfo {
    std::string name;
    NodeKind kind = NodeKind::host;
};

/// Which transport a link belongs to: the fabric inside a machine (two_tier's GPU links to
/// the node switch: NVLink, PCIe) or the network between machines (everything else).
enum class LinkClass : std::uint8_t { inter, intra };

/// What a link inside a machine is made of, where its builder knows (node presets): the transport
/// `auto` then follows the medium instead of guessing it from the line rate (a 25 GB/s NVLink 2
/// link is slower than PCIe Gen5 x16, yet runs NVLink's protocol).
enum class Medium : std::uint8_t { unknown, nvlink, pcie };

struct LinkInfo {
    sim::Bandwidth bandwidth;
    sim::Time latency;
    std::uint32_t id = 0;  ///< insertion order; directed links 2*id (a->b) and 2*id+1 (b->a)
    LinkClass cls = LinkClass::inter;
    sim::Time overhead;  ///< per-transfer software latency of its transport (sim::LinkSpec::overhead)
    double flow_cap = std::numeric_limits<double>::infinity();  ///< per-transfer rate bound, bytes/s
    Medium medium = Medium::unknown;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, NodeInfo, LinkInfo>;
using Vertex = Graph::vertex_descriptor;

/// A node's switch that can reduce inside the fabric (NVLink SHARP): the flows of an in-switch all-reduce end at
/// it and its multicasts start there.
struct ReducingSwitch {
    Vertex vertex = 0;
    /// The fraction of the links' rate its reductions and multicasts sustain (node_type.cpp cites it).
    double efficiency = 1.0;
};

class Fabric {
public:
    /// The first node id of vertices set_node has not placed (builders number their nodes from 0, below it).
    static constexpr std::uint32_t kOwnNode = 0x80000000U;
    /// Adds a node; throws std::invalid_argument on a duplicate name.
    Vertex add_node(std::string name, NodeKind kind);
    /// Adds a full-duplex link; throws on unknown names, self-loops, non-positive bandwidth.
    void add_link(const std::string& a, const std::string& b, sim::Bandwidth bw, sim::Time latency,
                  LinkClass cls = LinkClass::inter, Medium medium = Medium::unknown);
    /// Every link, by id, for transports to adjust (bandwidth, overhead, flow cap); before install().
    template <class F>
    void for_each_link(F&& f) {
        for (LinkInfo& info : link_info_) f(info);
        for (auto [e, end] = boost::edges(g_); e != end; ++e) g_[*e] = link_info_[g_[*e].id];
        pair_routes_.clear();
    }
    [[nodiscard]] const std::vector<LinkInfo>& links() const { return link_info_; }

    void set_routing(Routing r) { routing_ = r; }
    /// A rail-optimized fabric's NICs per node (rail k joins every node's NIC k): a transfer between GPUs of different
    /// nodes on different rails then crosses over NVLink to the GPU on the destination's rail first and leaves by its
    /// NIC (NCCL's PXN, on by default: NVIDIA/nccl src/graph/search.cc `P2P_PXN_LEVEL` 2, "use PXN as much as
    /// possible", and src/graph/paths.cc's NVLink relay to a non-local NIC, @ 5067397c), so it never leaves its rail
    /// for a spine. 0 or 1: no rails, routes as found.
    void set_rails(std::uint32_t rails) { rails_ = rails; }
    [[nodiscard]] std::uint32_t rails() const { return rails_; }
    /// Sets the bandwidth of every link attached to `host` (per-host link speeds); before install().
    void set_host_bandwidth(Vertex host, sim::Bandwidth bw);
    [[nodiscard]] Routing routing() const { return routing_; }

    /// Throws std::invalid_argument unless every host reaches every other host.
    void validate() const;

    [[nodiscard]] const Graph& graph() const { return g_; }
    [[nodiscard]] std::optional<Vertex> find(const std::string& name) const;
    [[nodiscard]] const std::vector<Vertex>& hosts() const { return hosts_; }
    [[nodiscard]] const std::string& name(Vertex v) const { return g_[v].name; }

    /// Creates the directed links of every fabric link in `net` (indices 2*id, 2*id+1).
    void install(sim::Network& net) const;
    /// The directed links from `a` to `b` (empty when a == b) for flow `flow_key`. Cached.
    const sim::Route& route(Vertex a, Vertex b, std::uint64_t flow_key = 0) const;
    /// Number of shortest paths from a to b (saturating at 2^63), for tests and reports.
    [[nodiscard]] std::uint64_t path_count(Vertex a, Vertex b) const;
    [[nodiscard]] std::size_t node_count() const { return boost::num_vertices(g_); }
    [[nodiscard]] const LinkInfo& link_info(std::uint32_t id) const { return link_info_[id]; }
    /// The node (machine) a host belongs to: hosts of one node share a fast local fabric
    /// (two_tier: the GPUs of a node). By default every vertex is its own node, kOwnNode + its index.
    [[nodiscard]] std::uint32_t node_of(Vertex host) const { return node_of_[host]; }
    void set_node(Vertex host, std::uint32_t node) {
        node_of_[host] = node;
        node_rank_.clear();
    }
    /// Whether routes may pass through `v` on their way elsewhere (default: yes). The GPUs of a node
    /// preset do not: a GPU is an endpoint, not a switch, so its NIC carries only its own traffic.
    void set_transit(Vertex v, bool transit) {
        transit_[v] = transit ? 1 : 0;
        transit_adj_.clear();
    }
    [[nodiscard]] bool transit(Vertex v) const { return transit_[v] != 0; }
    /// Marks `sw` as node `node`'s switch that can reduce (node presets with NVLink SHARP).
    void set_reducing_switch(std::uint32_t node, Vertex sw, double efficiency) { reducing_[node] = {sw, efficiency}; }
    /// Node `node`'s reducing switch, or nullptr when it has none.
    [[nodiscard]] const ReducingSwitch* reducing_switch(std::uint32_t node) const {
        const auto it = reducing_.find(node);
        return it == reducing_.end() ? nullptr : &it->second;
    }
    /// Marks `switches` as switches between nodes that reduce (InfiniBand SHARP, network.sharp) at `efficiency` of
    /// their links' rate: collnet's flows end at them.
    void set_sharp(std::vector<Vertex> switches, double efficiency) {
        sharp_ = std::move(switches);
        sharp_efficiency_ = efficiency;
    }
    /// The SHARP switches' efficiency, 0 when the fabric has none.
    [[nodiscard]] double sharp_efficiency() const { return sharp_.empty() ? 0.0 : sharp_efficiency_; }
    /// The SHARP switch `host` reaches in the fewest hops (a rail leaf through the host's own NIC; ties: the first
    /// marked), walking through switches only; none when the fabric has none.
    [[nodiscard]] std::optional<Vertex> sharp_switch(Vertex host) const;
    /// Sum of link latencies (plus the largest per-transfer overhead) and the smallest bandwidth
    /// (or flow cap) on the route from a to b: what one transfer alone sees.
    [[nodiscard]] sim::Time path_latency(Vertex a, Vertex b) const;
    [[nodiscard]] sim::Bandwidth path_bandwidth(Vertex a, Vertex b) const;
    [[nodiscard]] std::size_t link_count() const { return boost::num_edges(g_); }
    /// The fabric link behind directed link `l`, as "a->b".
    [[nodiscard]] std::string directed_link_name(sim::LinkIndex l) const;

private:
    /// pair_routes_'s key of a -> b.
    static std::uint64_t pair_key(Vertex a, Vertex b) {
        return (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint64_t>(b);
    }
    struct Cached {
        sim::Route route;
        bool unique = true;
    };
    /// BFS from a until b is found; leaves hop distances in dist_ (-1 = unseen). With b given, it labels only what a
    /// shortest route from a to b can pass through (see index_transit), so a switch's ports to endpoints (a rail
    /// leaf's thousands of NICs) are never scanned; with b = null_vertex, every vertex a reaches.
    void bfs(Vertex a, Vertex b) const;
    /// Fills transit_adj_ and core_adj_ when stale.
    void index_transit() const;
    /// The links from v to its predecessors on the shortest routes from a (dist_ one lower), in v's edge order.
    void predecessors(Vertex a, Vertex b, Vertex v, std::vector<std::pair<Vertex, std::uint32_t>>& out) const;
    void clear_bfs() const;
    bool short_route(Vertex a, Vertex b, std::uint64_t flow_key, sim::Route& r, bool& unique) const;
    sim::Route walk_back(Vertex a, Vertex b, std::uint64_t flow_key, bool& unique) const;
    /// Which of the parallel links `options` (all to one predecessor of v) a route from a to b takes when they are a
    /// node's NICs: the bundle leaves a's first switch or enters b's, and that host's node has at least as many hosts
    /// as the bundle has links. Host r of a node of m then uses link r * k / m, as a GPU uses the NIC beside it (NCCL
    /// binds each GPU's channels to its nearest NIC). None otherwise (hashed or D-mod-k, as any switch's choice).
    [[nodiscard]] std::optional<std::size_t> nic_choice(
        Vertex a, Vertex b, Vertex v, const std::vector<std::pair<Vertex, std::uint32_t>>& options) const;
    /// Fills node_rank_ and node_size_ (a host's place among its node's hosts, in host order) when stale.
    void index_nodes() const;
    /// The GPU of a's node that relays a -> b onto b's rail (set_rails), if the two are hosts of different nodes on
    /// different rails (host r of a node of m sits on rail r * rails / m, as nic_choice binds it).
    [[nodiscard]] std::optional<Vertex> pxn_relay(Vertex a, Vertex b) const;

    Graph g_;
    std::map<std::string, Vertex> by_name_;
    std::vector<Vertex> hosts_;
    std::vector<std::pair<Vertex, Vertex>> link_ends_;  ///< by link id
    std::vector<LinkInfo> link_info_;                   ///< by link id
    std::vector<std::uint32_t> host_index_;             ///< by vertex: position in hosts_
    std::vector<std::uint32_t> node_of_;                ///< by vertex: node (machine) id
    std::vector<std::uint8_t> transit_;                 ///< by vertex: 1 when routes may pass through it
    std::map<std::uint32_t, ReducingSwitch> reducing_;  ///< by node: its switch that reduces, if any
    std::vector<Vertex> sharp_;                         ///< switches between nodes that reduce (SHARP)
    double sharp_efficiency_ = 0.0;
    Routing routing_ = Routing::ecmp;
    std::uint32_t rails_ = 0;
    mutable std::unordered_map<std::uint64_t, Cached> pair_routes_;
    /// Routes through a PXN relay (set_rails): by pair where both parts are unique, else by (a, b, flow key).
    mutable std::unordered_map<std::uint64_t, sim::Route> relay_pairs_;
    mutable std::map<std::tuple<Vertex, Vertex, std::uint64_t>, sim::Route> relay_routes_;
    mutable std::map<std::tuple<Vertex, Vertex, std::uint64_t>, sim::Route> flow_routes_;
    mutable std::vector<std::uint32_t> node_rank_;                               ///< by vertex (index_nodes)
    mutable std::unordered_map<std::uint32_t, std::uint32_t> node_size_;         ///< hosts per node id (index_nodes)
    mutable std::unordered_map<std::uint32_t, std::vector<Vertex>> node_hosts_;  ///< by node id: hosts by rank
    mutable std::vector<std::int32_t> dist_;
    mutable std::vector<Vertex> touched_;
    /// By vertex: its links to vertices routes may pass through (neighbour, link id), in edge order (index_transit).
    mutable std::vector<std::vector<std::pair<Vertex, std::uint32_t>>> transit_adj_;
    /// The same, only to core vertices: transit ones with at least two transit neighbours. The others (a NIC
    /// between its GPU and its rail leaf) lie on a shortest route only next to its source or its destination.
    mutable std::vector<std::vector<std::pair<Vertex, std::uint32_t>>> core_adj_;
    mutable std::vector<std::uint8_t> core_;    ///< by vertex: 1 when core
    mutable std::vector<std::uint8_t> near_b_;  ///< by vertex: 1 neighbours the BFS's target, 2 leads to one that does
};

}  // namespace ddlsim::topo
