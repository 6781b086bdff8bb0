// Logical communication topologies: who sends what to whom in one synchronisation
// round. Endpoints 0..n-1 are the workers; a parameter server's k servers are
// endpoints n..n+k-1. A Collective starts rounds on the flow network, counts the
// bytes a round puts on the wire and gives its closed-form α-β time.
//
// Reference semantics (docs/CONTRACT.md §4), each checked against a closed form in tests:
//   ring all-reduce  2(n-1) steps; in each every worker sends S/n to its successor;
//                    the next step at a worker starts when it received the previous one
//                    (and its own previous send is out: one chunk in flight per sender).
//                    Idle star: T = 2(n-1)(2L + S/(nB)).  (Patarasuk & Yuan, JPDC 2009)
//   parameter server every worker pushes S/k to each of k servers, a server aggregates
//                    once all pushes reached it, then every worker pulls S/k from each.
//                    Idle star, dedicated, n >= k: T = 2(2L + nS/(kB)). (Li et al., OSDI 2014)
//   gossip (D-PSGD)  every worker sends its S-byte model to each neighbour at once.
//                    Idle star, degree d: T = 2L + dS/B. (Lian et al., NeurIPS 2017)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "sim/enum_info.hpp"
#include "sim/network.hpp"
#include "sim/symmetry.hpp"
#include "sim/transfer_dag.hpp"
#include "sim/units.hpp"

namespace ddlsim::topo {

enum class ArchKind { allreduce, ps, gossip };
/// `automatic` ("auto") is no algorithm of its own: each collective picks one (allreduce_auto.hpp).
enum class AllreduceAlgorithm {
    ring,
    tree,
    double_tree,
    halving_doubling,
    hierarchical,
    torus2d,
    nvls,
    collnet,
    automatic
};
enum class ServerPlacement { dedicated, colocated };
enum class PsSharding { bytes, round_robin, balanced };
enum class PsStyle { standard, byteps };
enum class GossipGraph { ring, torus, exponential, random_matching };

// Their names and descriptions (sim/enum_info.hpp): the scenario loader, the schema and the summary read these.
inline constexpr sim::EnumEntry<ArchKind> k_arch_kinds[]{
    {ArchKind::allreduce, "allreduce", "a collective all-reduce among the workers"},
    {ArchKind::ps, "ps", "parameter servers: workers push gradients and pull parameters"},
    {ArchKind::gossip, "gossip", "decentralised averaging with graph neighbours (D-PSGD)"}};
constexpr std::span<const sim::EnumEntry<ArchKind>> enum_entries(ArchKind) {
    return k_arch_kinds;
}

inline constexpr sim::EnumEntry<AllreduceAlgorithm> k_allreduce_algorithms[]{
    {AllreduceAlgorithm::ring, "ring", "ring reduce-scatter + all-gather (Patarasuk & Yuan, JPDC 2009)"},
    {AllreduceAlgorithm::tree, "tree", "binary tree reduce + broadcast"},
    {AllreduceAlgorithm::double_tree, "double_tree", "NCCL's double binary tree (Sanders et al. 2009)"},
    {AllreduceAlgorithm::halving_doubling, "halving_doubling",
     "recursive halving/doubling (Rabenseifner; MPICH for non-powers of two)"},
    {AllreduceAlgorithm::hierarchical, "hierarchical",
     "intra-node reduce-scatter, inter-node rings, intra-node all-gather"},
    {AllreduceAlgorithm::torus2d, "torus2d", "rings in X then in Y (2D torus)"},
    {AllreduceAlgorithm::nvls, "nvls",
     "NVLink SHARP: the node's NVSwitch sums and multicasts; rings along rails between nodes (nodes whose "
     "preset says the switch reduces)"},
    {AllreduceAlgorithm::collnet, "collnet",
     "InfiniBand SHARP (NCCL's CollNetDirect): the node's GPUs reduce-scatter, each sends its share to its rail's "
     "switch, which sums the nodes' shares and returns them; the node all-gathers (fabrics with network.sharp)"},
    {AllreduceAlgorithm::automatic, "auto",
     "per message, the fastest of NCCL's algorithms (ring, double binary tree, hierarchical, nvls and collnet where "
     "the "
     "switches reduce) on this fabric"}};
constexpr std::span<const sim::EnumEntry<AllreduceAlgorithm>> enum_entries(AllreduceAlgorithm) {
    return k_allreduce_algorithms;
}

inline constexpr sim::EnumEntry<ServerPlacement> k_server_placements[]{
    {ServerPlacement::dedicated, "dedicated", "servers on hosts of their own"},
    {ServerPlacement::colocated, "colocated", "servers on worker hosts"}};
constexpr std::span<const sim::EnumEntry<ServerPlacement>> enum_entries(ServerPlacement) {
    return k_server_placements;
}

inline constexpr sim::EnumEntry<PsSharding> k_ps_shardings[]{
    {PsSharding::bytes, "bytes", "even shards of the flattened model"},
    {PsSharding::round_robin, "round_robin", "whole tensors to servers in turn (PS-Lite)"},
    {PsSharding::balanced, "balanced", "size-balanced whole tensors"}};
constexpr std::span<const sim::EnumEntry<PsSharding>> enum_entries(PsSharding) {
    return k_ps_shardings;
}

inline constexpr sim::EnumEntry<PsStyle> k_ps_styles[]{
    {PsStyle::standard, "standard", "every worker pushes to and pulls from the servers"},
    {PsStyle::byteps, "byteps",
     "k CPU summation servers plus every worker host serving, with BytePS's optimal load split"}};
constexpr std::span<const sim::EnumEntry<PsStyle>> enum_entries(PsStyle) {
    return k_ps_styles;
}

inline constexpr sim::EnumEntry<GossipGraph> k_gossip_graphs[]{
    {GossipGraph::ring, "ring", "two neighbours on a ring"},
    {GossipGraph::torus, "torus", "four neighbours on a 2D torus"},
    {GossipGraph::exponential, "exponential", "peers at distance 2^i"},
    {GossipGraph::random_matching, "random_matching", "a seeded random matching per step"}};
constexpr std::span<const sim::EnumEntry<GossipGraph>> enum_entries(GossipGraph) {
    return k_gossip_graphs;
}

/// The `architecture` block of a scenario.
struct ArchitectureSpec {
    ArchKind kind = ArchKind::allreduce;
    AllreduceAlgorithm algorithm = AllreduceAlgorithm::ring;
    sim::Bytes segment_size{0.0};  ///< allreduce: pipelining segment (0 = whole chunks)
    std::size_t servers = 1;       ///< ps: k
    ServerPlacement placement = ServerPlacement::dedicated;
    std::optional<sim::Bandwidth> aggregation_rate;  ///< ps: summation throughput per server
    std::vector<std::string> server_placement;       ///< ps: hosts of the servers, when given
    PsSharding sharding = PsSharding::bytes;         ///< ps: how parameters map to servers
    sim::Bytes split_size{0.0};                      ///< ps round_robin/balanced: cut larger tensors (0 = never)
    bool per_tensor = false;                         ///< ps: push/pull each tensor as its own transfer
    PsStyle style = PsStyle::standard;               ///< ps: BytePS summation servers + worker hosts
    bool local_aggregation = true;         ///< ps: GPUs of a machine reduce inside it, one push/pull per machine
    sim::Bytes partition_size{4096000.0};  ///< byteps per_tensor: partitions (BYTEPS_PARTITION_BYTES)
    GossipGraph graph = GossipGraph::ring;
    bool switch_aggregation = false;  ///< ps: pushes are summed in the SHARP switch on their way (SwitchML, ATP)
    /// switch_aggregation: bytes of the switch's aggregation memory this job may hold, its equal share among the jobs
    /// summing in that switch (scenarios/run.cpp); 0: unbounded. Set by the run, not read from the scenario.
    double switch_memory = 0.0;
};

/// A tensor cut evenly over every server rather than held whole by one.
inline constexpr std::uint32_t kCutOverAll = 0xffffffffU;

class Collective;

/// What a collective needs to know about its job.
struct CollectiveContext {
    std::uint32_t workers = 1;
    sim::Bytes bytes;                    ///< synchronised per worker per round
    std::vector<double> tensor_bytes;    ///< gradient tensors in backward order (they sum to bytes)
    std::vector<std::uint32_t> node_of;  ///< per worker: its node (workers on one node share a fast fabric)
    /// ps round_robin/balanced: per tensor of tensor_bytes, the server that holds it, assigned over the
    /// whole model (kCutOverAll: cut over every server). Empty: this round's tensors are the whole model.
    std::vector<std::uint32_t> tensor_server;
    std::uint64_t seed = 0;  ///< for seeded choices (random matchings)
    /// Rings run this many channels (topo::ring_channels), one per NIC a node's workers use to reach another node's:
    /// m workers whose routes to their rank-mates share each link at most u times run m / u (m with a NIC per GPU,
    /// k with k NICs each serving m / k GPUs); 1 where one link carries them all (one NIC per node), as a closed form
    /// cannot share a link among channels.
    std::uint32_t ring_channels = 1;
    /// nvls: the efficiency of every node's reducing switch (topo::ReducingSwitch; 0 when some node of the job has
    /// none). Node j's switch (j as in node_of) is then endpoint workers + j.
    double switch_reduction = 0.0;
    /// collnet: the efficiency of the SHARP switches between nodes (0 when the fabric has none, or some rail of the
    /// job's nodes reaches none or several); rail j's switch is then endpoint network_switches + j.
    double network_reduction = 0.0;
    std::uint32_t network_switches = 0;
    /// ps with switch_aggregation: the endpoint of the switch that sums the pushes (0: none; endpoint 0 is a worker).
    std::uint32_t aggregation_switch = 0;
    /// algorithm auto: the time one round of a candidate takes alone on the job's fabric (empty: auto refuses).
    std::function<sim::Time(const Collective&)> round_time;
};

/// Whether two endpoints sit on different hosts.
using RemoteTest = std::function<bool(std::uint32_t a, std::uint32_t b)>;

/// The synchronisation pattern of one job.
class Collective {
public:
    virtual ~Collective() = default;
    /// Workers plus server endpoints.
    [[nodiscard]] virtual std::uint32_t endpoints() const = 0;
    /// Starts round `round` (0, 1, ...) on the network; endpoints open their gates when their data is ready.
    [[nodiscard]] virtual std::unique_ptr<sim::Round> start_round(sim::Engine& engine, sim::Network& network,
                                                                  sim::RouteLookup routes, sim::EndpointDone on_done,
                                                                  std::uint32_t round) const = 0;
    /// Starts round `round` over the classes of `q` (sim/symmetry.hpp): endpoints 0..P-1, endpoint c standing for
    /// c, c+P, ..., its transfers on q's representative routes. nullptr where this collective cannot (it is not
    /// periodic under the shift, or has no class form): the run then simulates every endpoint.
    [[nodiscard]] virtual std::unique_ptr<sim::Round> start_class_round(sim::Engine& /*engine*/,
                                                                        sim::Network& /*network*/,
                                                                        sim::ShiftQuotient& /*q*/,
                                                                        sim::EndpointDone /*on_done*/,
                                                                        std::uint32_t /*round*/) const {
        return nullptr;
    }
    /// Whether start_class_round can succeed for some shift (rings, and channels of rings); false: no shift helps,
    /// and models::simulate goes straight to every transfer instead of trying longer shifts.
    [[nodiscard]] virtual bool has_class_form() const { return false; }
    /// Bytes one round puts on the wire (transfers between different hosts, each counted once).
    [[nodiscard]] virtual sim::Bytes wire_bytes(const RemoteTest& remote) const = 0;
    /// Closed-form α-β time of one round without contention (sim::alpha_beta_time semantics).
    [[nodiscard]] virtual sim::Time alpha_beta(const sim::PathCostLookup& cost) const = 0;
    /// A time endpoint `e` cannot beat in a round, from its open to its done, whatever else shares the fabric and
    /// whenever the others open (0: none known): a lower bound (models/program/step_bound.hpp), not an estimate.
    [[nodiscard]] virtual sim::Time least_time(const sim::PathCostLookup& /*cost*/, std::uint32_t /*e*/) const {
        return sim::Time::zero();
    }
};

/// A collective given as an explicit transfer DAG, run by sim::DagRunner (a subclass may give its own closed form).
class PlanCollective : public Collective {
public:
    explicit PlanCollective(sim::Plan plan);
    [[nodiscard]] std::uint32_t endpoints() const override { return plan_.endpoints; }
    [[nodiscard]] std::unique_ptr<sim::Round> start_round(sim::Engine& engine, sim::Network& network,
                                                          sim::RouteLookup routes, sim::EndpointDone on_done,
                                                          std::uint32_t round) const override;
    [[nodiscard]] sim::Bytes wire_bytes(const RemoteTest& remote) const override;
    [[nodiscard]] sim::Time alpha_beta(const sim::PathCostLookup& cost) const override;
    [[nodiscard]] const sim::Plan& plan() const { return plan_; }

private:
    sim::Plan plan_;
};

/// Ring all-reduce of `bytes` among `n` workers as an explicit DAG (2(n-1)n steps);
/// the reference the O(n)-state RingAllreduce is tested against.
[[nodiscard]] sim::Plan ring_allreduce_plan(std::uint32_t n, sim::Bytes bytes);

/// How a context's workers sit on nodes: how many nodes, and the workers on each when every node holds the same
/// number (0 when they differ or node_of does not name every worker's node).
struct NodeShape {
    std::size_t nodes = 0;
    std::uint32_t per_node = 0;
};
[[nodiscard]] NodeShape node_shape(const CollectiveContext& ctx);

/// The collective the job's rounds run.
[[nodiscard]] std::unique_ptr<Collective> make_collective(const ArchitectureSpec& spec, const CollectiveContext& ctx);

/// The size of one round, as the up-front limits see it before anything is built.
struct RoundShape {
    double workers = 1.0;
    sim::Bytes bytes;      ///< synchronised per worker in this round (after compression)
    double tensors = 1.0;  ///< gradient tensors the round holds
    /// Every worker exchanges its whole payload with every server once (SSP, ASP, FedAvg on a PS).
    bool whole_payload_exchange = false;
    double machine_gpus = 1.0;  ///< GPUs per machine (at most): a PS's local aggregation rings run inside each
    double machine_nics = 1.0;  ///< NICs per machine: with one per GPU a ring all-reduce runs a channel per GPU
};

/// How large one round of `spec` is: the transfers it holds (an upper estimate, asked of each architecture's own
/// code: allreduce_algorithms.cpp, parameter_server.cpp, gossip.cpp) and whether it is held as an explicit DAG
/// (every transfer in memory) rather than a state machine.
struct RoundSize {
    double transfers = 0.0;
    bool explicit_dag = true;
    /// Flows in flight together that share links, so that each event re-solves them all (the max-min solver's
    /// cost per event grows with it): a parameter server's streams; 1 where flows are pairwise disjoint or few.
    double coupled_flows = 1.0;
    /// Of `transfers`, those held in memory as explicit DAGs, when not all or none of them (algorithm auto: only
    /// some candidates are DAGs; 0: `transfers` if explicit_dag, else none).
    double dag_transfers = 0.0;
};
[[nodiscard]] RoundSize round_size(const ArchitectureSpec& spec, const RoundShape& shape);

}  // namespace ddlsim::topo
