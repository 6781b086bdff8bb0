// Parameter-server architectures. Endpoints 0..n-1 are workers, n..n+k-1 servers.
//
// Standard PS (Li et al., "Scaling Distributed Machine Learning with the Parameter Server",
// OSDI 2014): every worker pushes its gradient shard to the server holding it, a server
// aggregates once all n pushes of a shard arrived (n * shard / aggregation_rate), then every
// worker pulls the updated shard. How parameters map to servers (`sharding`):
//   bytes        every tensor is cut evenly over the k servers, so each holds S/k exactly.
//   round_robin  whole tensors to servers in turn by key order (key 0 = the first layer's
//                tensor, i.e. the last in backward order): key j -> server j mod k, as PS-Lite
//                style key-to-server assignment and MXNet's kvstore for small arrays.
//   balanced     greedy size balancing (longest-processing-time first): largest tensor first
//                to the least-loaded server (ties: the lower key, the lower server).
// With round_robin/balanced a tensor larger than PsOptions::split_bytes is cut evenly over
// all k servers first, as MXNet's kvstore does for arrays above MXNET_KVSTORE_BIGARRAY_BOUND
// (1e6 elements) and BytePS partitions above BYTEPS_PARTITION_BYTES (4096000); the default
// threshold is infinite (off), so every tensor stays whole.
//
// per_tensor: each tensor's part on a server is its own push, aggregation and pull. A worker
// keeps one ordered message stream per server (PS-Lite's one connection per pair of nodes,
// BytePS's priority queue): the parts it sends to one server go one after another in
// backward order, streams to different servers run concurrently; pulls from a server
// likewise, so a tensor's pulls start as soon as it is aggregated while later tensors are
// still being pushed. A server sums tensors one after another. Each message pays the route
// latency. Without per_tensor a worker pushes one message per server (its whole share).
//
// BytePS (Jiang et al., "A Unified Architecture for Accelerating Distributed DNN Training in
// Heterogeneous GPU/CPU Clusters", OSDI 2020, §3.1/§4): k CPU-only summation servers
// (endpoints n..n+k-1) plus a summation service on every worker host (the worker endpoint
// itself). Each CPU server holds x bytes and each worker host y bytes, kx + ny = S, with the
// paper's optimal split (derived in parameter_server.cpp, byteps_split):
//   x = 2(n-1)S / (n^2 + kn - 2k),  y = (n-k)S / (n^2 + kn - 2k)   (k <= n; k >= n: y = 0, x = S/k)
// so that every worker NIC and every CPU server NIC carries 2n(n-1)S/(n^2 + kn - 2k) bytes per
// direction per iteration: T >= 2n(n-1)S / ((n^2 + kn - 2k) B) on an idle star. The bound
// assumes pushes and pulls overlap fully; with whole shares (no per_tensor) they cannot (a
// server pulls only what it has summed), so the simulated time is above the bound; with
// per_tensor and many tensors it approaches it. BytePS cuts every tensor over all n + k
// servers in proportion x : y (its Hash_Mixed_Mode assigns partitions with those odds);
// `sharding` does not apply. k = 0 is the colocated all-to-all PS: T = 2(n-1)S/(nB).
//
// Switch aggregation (architecture.switch_aggregation; SwitchML, Sapio et al. NSDI 2021; ATP, Lao et al. NSDI 2021):
// the workers' pushes end at the switch they all reach (the SHARP switch of the fabric), which sums them as they pass
// (no rate factor: every leg runs at its links' rate, as SwitchML's and ATP's switch dataplanes aggregate packets at
// line rate), hands the server one sum and multicasts its reply, segment by segment (PsLayout::switch_endpoint). A
// server's link carries S/k each way instead of nS/k: on an idle star with one server, links of rate B and latency L,
// k segments of s = S/k take 4L + (k + 3) s / B (four legs, pipelined, each a stream that pays its latency once),
// against 2nS/B for the plain PS.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "topologies/collectives.hpp"

namespace ddlsim::topo {

/// Knobs of the PS model that the scenario format does not (yet) expose.
struct PsOptions {
    double split_bytes = std::numeric_limits<double>::infinity();  ///< round_robin/balanced: cut larger tensors
};

/// One tensor's part on one server.
struct ShardPiece {
    std::uint32_t tensor = 0;  ///< index into the backward-ordered tensor list
    double bytes = 0.0;
};

/// BytePS per-server shares of S bytes: x on each of k CPU servers, y on each of n worker hosts.
struct BytePsSplit {
    double cpu = 0.0;
    double worker = 0.0;
};

/// Sharded parameter server: n workers, k servers (endpoints n..n+k-1), even shards.
[[nodiscard]] sim::Plan parameter_server(std::uint32_t n, std::uint32_t k, sim::Bytes bytes,
                                         std::optional<sim::Bandwidth> aggregation_rate);
/// The same exchange with pushes and pulls of different sizes: every worker pushes push/k to each server, a
/// server sums its n shards, every worker pulls pull/k from each (sparse payloads: the aggregate of n sparse
/// pushes is up to n times larger; models/comm_plan.cpp).
[[nodiscard]] sim::Plan parameter_server(std::uint32_t n, std::uint32_t k, sim::Bytes push, sim::Bytes pull,
                                         std::optional<sim::Bandwidth> aggregation_rate);

/// Per tensor (backward order): the server that holds it whole, or kCutOverAll, by the sharding mode. Keys
/// run in forward order over the given tensors, so pass the whole model's tensors: a message's tensors alone
/// would restart the round-robin (or the balancing) at server 0 for every message.
[[nodiscard]] std::vector<std::uint32_t> tensor_owners(PsSharding sharding, const std::vector<double>& tensors,
                                                       std::uint32_t k, double split_bytes);

/// Per server (0..k-1): its pieces of the tensors (backward order), given each tensor's owner.
[[nodiscard]] std::vector<std::vector<ShardPiece>> shard_by_owner(const std::vector<double>& tensors,
                                                                  const std::vector<std::uint32_t>& owner,
                                                                  std::uint32_t k);

/// Per server (0..k-1): its pieces of the tensors (backward order), by the sharding mode.
[[nodiscard]] std::vector<std::vector<ShardPiece>> shard_tensors(PsSharding sharding,
                                                                 const std::vector<double>& tensors, std::uint32_t k,
                                                                 double split_bytes);

/// The BytePS split of S bytes among k CPU servers and n worker-host servers.
[[nodiscard]] BytePsSplit byteps_split(std::uint32_t n, std::uint32_t k, double bytes);
/// The worker hosts that serve in a BytePS job: one per machine under local aggregation, else one per worker.
[[nodiscard]] std::uint32_t byteps_hosts(const ArchitectureSpec& spec, const CollectiveContext& ctx);

/// A parameter-server round: n workers (endpoints 0..n-1); server s is endpoint server_endpoint[s] and holds
/// pieces[s]. `groups` (optional): the workers of each machine, for local aggregation — a ring reduce-scatter
/// inside the machine, each GPU pushing and pulling its 1/g slice of every piece through the machine's NIC, a
/// server summing one contribution per machine, then a ring all-gather inside the machine (BytePS on
/// NVLink machines, Jiang et al. OSDI 2020 §4; TensorFlow's replicated PS; Horovod's hierarchical mode).
struct PsLayout {
    std::uint32_t workers = 0;
    std::uint32_t endpoints = 0;
    std::vector<std::uint32_t> server_endpoint;
    std::vector<std::vector<ShardPiece>> pieces;
    bool per_tensor = false;
    std::optional<sim::Bandwidth> aggregation_rate;
    std::vector<std::vector<std::uint32_t>> groups;
    /// Switch aggregation (SwitchML, ATP): endpoint of the switch every push goes to (none: pushes go to the servers).
    /// Each message travels in segments of `segment` bytes: every worker pushes its part of a segment to the switch,
    /// which, once all have, sends the sum to the server (no summation work there); the server returns the segment to
    /// the switch, which multicasts it to every worker. Each of the four legs is a stream per pair of back-to-back
    /// segments (sim::Plan::set_follows): it pays its route's latency once, not once per segment.
    std::optional<std::uint32_t> switch_endpoint = std::nullopt;
    double segment = 0.0;
    /// The switch's aggregation memory this job holds, in bytes (0: unbounded). A server's stream may have
    /// floor(memory / servers / segment) + kStoreAndForwardSegments segments in flight: a segment's pushes wait until
    /// the multicast of the segment that many places earlier has ended. The switch sums and forwards packets as they
    /// pass (cut-through), so its memory holds what is on the wire between a packet's push and its multicast; the
    /// flow model moves whole segments store-and-forward through the four legs, which keeps up to four segments in
    /// flight where the switch would hold a few packets of each: they are counted beside the memory's own slots.
    /// So the memory binds where it is below the legs' bandwidth-delay product (B x 4 L on a star), as it does on
    /// the switch, and a segment that waited on it pays the route latency again.
    double memory = 0.0;
    /// Per server (empty: 1 each): how many flows each push to it and pull from it counts as in max-min sharing
    /// (sim::Plan::set_share). BytePS (byteps_stream_shares): a worker keeps as many of a server's partitions in
    /// flight as that server holds of the model (BytePS pushes every ready partition at once, ZPush being
    /// asynchronous, and its Hash_Mixed_Mode gives a CPU server x / y times a worker host's partitions), so every
    /// stream of a worker's NIC progresses in proportion to its bytes -- the schedule the BytePS bound assumes.
    std::vector<double> stream_share = {};
};
/// BytePS's stream shares for PsLayout: per server (worker hosts 0..hosts-1, then the k CPU servers) its share of
/// the model over the mean share, y (n + k) / S for a worker host and x (n + k) / S for a CPU server (1 where a share
/// is 0: such a server holds nothing).};
[[nodiscard]] std::vector<double> byteps_stream_shares(std::uint32_t hosts, std::uint32_t k);
/// Segments the four store-and-forward legs of switch aggregation keep in flight beside the memory's slots (PsLayout).
inline constexpr std::uint32_t kStoreAndForwardSegments = 4;
/// The default aggregation memory of a summing switch (network.aggregation_memory): SwitchML on a Tofino 1
/// (p4lang/p4app-switchML dev_root/p4/configuration.p4 @27a09911: 16,384 64-bit registers per stage, two per slot for
/// the shadow copy, 8,192 slots of one 256-byte packet -- dev_root/p4/README.md, "a payload that is either 256B or
/// 1024B" -- "enough for a single 2MB message in flight").
inline constexpr double kSwitchAggregationMemory = 2.0 * 1024.0 * 1024.0;
/// The default segment of switch aggregation: NCCL's CollNet chunk (kCollnetChunk, in_network.hpp), the unit a SHARP
/// switch sums for NCCL.
[[nodiscard]] double switch_aggregation_segment();
[[nodiscard]] sim::Plan ps_plan(const PsLayout& layout);

/// BytePS partitions: every tensor cut into partitions of at most `partition` bytes (BYTEPS_PARTITION_BYTES,
/// 4096000 by default, byteps/common/global.cc), each assigned whole to one of `hosts` worker-host servers
/// or k CPU servers so that loads follow byteps_split's shares. Pushed and pulled per partition.
/// (A round that holds one message of several, ctx.tensor_server given, takes the placement made over the whole model
/// instead: models/comm_plan.cpp calls this once on every message's pieces in order, as BytePS assigns its
/// partitions' keys to servers once for the model, not per message.)
[[nodiscard]] std::vector<std::vector<ShardPiece>> byteps_partitions(std::uint32_t hosts, std::uint32_t k,
                                                                     const std::vector<double>& tensors,
                                                                     double partition);

/// BytePS plan: n workers that also serve, k CPU servers (endpoints n..n+k-1).
[[nodiscard]] sim::Plan byteps(std::uint32_t n, std::uint32_t k, const std::vector<double>& tensors, bool per_tensor,
                               std::optional<sim::Bandwidth> aggregation_rate);

/// round_size for a parameter server (collectives.hpp): per server a piece costs n pushes, one summation and n
/// pulls; byte sharding cuts every piece over all k servers, round-robin and balanced sharding keep whole tensors
/// on one server each, BytePS partitions go whole to one server each (whole shares: every server); per_tensor:
/// one piece per tensor (BytePS: per partition). SSP, ASP and FedAvg exchange each worker's whole payload with
/// every server once per iteration (models/trainer_ssp.cpp): n x k pushes and pulls.
[[nodiscard]] RoundSize parameter_server_round_size(const ArchitectureSpec& spec, const RoundShape& shape);

/// The PS collective of an `architecture` block of kind "ps".

[[nodiscard]] std::unique_ptr<Collective> make_parameter_server(const ArchitectureSpec& spec,
                                                                const CollectiveContext& ctx,
                                                                const PsOptions& options = {});

}  // namespace ddlsim::topo
