// The key tables of how gradients move: the architecture block (topologies/collectives.hpp ArchitectureSpec) and
// the transport objects of the network block (topologies/transport.hpp TransportSpec).
#include "scenarios/key_tables.hpp"

namespace ddlsim::scenario {

using keys::key;
using keys::KeyTable;

const KeyTable<topo::ArchitectureSpec>& architecture_keys() {
    using A = topo::ArchitectureSpec;
    using topo::ArchKind;
    const auto ps = keys::only(&A::kind, "kind", {ArchKind::ps});
    const auto allreduce = keys::only(&A::kind, "kind", {ArchKind::allreduce});
    auto byteps_colocated = [](const A& a) {
        return a.style == topo::PsStyle::byteps && a.placement == topo::ServerPlacement::colocated;
    };
    static const KeyTable<A> t{
        "architecture",
        "how gradients are aggregated",
        {
            key("kind", &A::kind, "allreduce, ps (parameter server) or gossip (D-PSGD)").mandatory(),
            key("algorithm", &A::algorithm,
                "allreduce: ring (default), tree (binary tree reduce + broadcast), double_tree (NCCL's double "
                "binary tree), halving_doubling (Rabenseifner, MPICH for non-powers of two), hierarchical "
                "(intra-node reduce-scatter, inter-node rings, intra-node all-gather), torus2d (rings in X then "
                "Y), auto (per message the fastest of ring, double_tree and, on equal multi-GPU nodes, "
                "hierarchical, as NCCL's tuner picks per call)")
                .when(allreduce)
                .with_default("ring"),
            key("segment_size", &A::segment_size, "allreduce: pipelining segment for large messages (default: none)")
                .when(allreduce)
                .echo_when([](const A& a) { return a.segment_size.value() > 0.0; }),
            key("style", &A::style,
                "ps: standard (default) or byteps (k CPU summation servers plus every worker host serving, with "
                "BytePS's optimal load split)")
                .when(ps)
                .with_default("standard"),
            key("placement", &A::placement,
                "ps: dedicated server hosts or colocated on worker hosts (default dedicated)")
                .when(ps)
                .with_default("dedicated"),
            // Its default and its bounds depend on the style, the placement and the workers (read_architecture).
            keys::custom<A>("servers",
                            {{"type", "integer"},
                             {"minimum", 0},
                             {"description",
                              "ps: number of servers k (default 1 dedicated, workers colocated; byteps: CPU "
                              "summation servers, may be 0)"}},
                            nullptr, [](const A& a) { return json(a.servers); })
                .when(ps)
                // Colocated BytePS has no CPU server: one server process on every worker machine.
                .echo_when([byteps_colocated](const A& a) { return !byteps_colocated(a); }),
            key("aggregation_rate", &A::aggregation_rate, "ps: a server's summation throughput (default unlimited)")
                .when(ps),
            // One host per server (read_architecture checks the count); echoed only when given: default
            // dedicated servers also size the network (two_tier).
            keys::custom<A>(
                "server_placement",
                {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", "ps: host of each server"}},
                nullptr,
                [](const A& a) { return a.server_placement.empty() ? json(nullptr) : json(a.server_placement); })
                .when(ps),
            key("sharding", &A::sharding,
                "ps: bytes (even shards, default), round_robin (whole tensors in turn, PS-Lite) or balanced "
                "(size-balanced tensors)")
                .when(ps)
                .with_default("bytes"),
            key("split_size", &A::split_size,
                "ps round_robin/balanced: tensors larger than this are cut evenly over all servers first, as "
                "MXNet's BIGARRAY_BOUND and BytePS's partitions (default: never)")
                .when(keys::also<A>(
                    ps, [](const A& a) { return a.sharding != topo::PsSharding::bytes; },
                    "applies to sharding \"round_robin\" or \"balanced\" (\"bytes\" already cuts every tensor over "
                    "all servers)")),
            // BytePS pipelines push and pull per partition unless told otherwise.
            key("per_tensor", &A::per_tensor,
                "ps: push and pull each tensor (byteps: each partition) separately, so pulls of early ones overlap "
                "pushes of later ones (default false; true for byteps)")
                .when(ps)
                .when_absent([](A& a) { a.per_tensor = a.style == topo::PsStyle::byteps; }),
            key("local_aggregation", &A::local_aggregation,
                "ps: GPUs of a machine first reduce over the machine's own fabric, each pushes and pulls a 1/g slice "
                "through the NIC, then they all-gather (BytePS, TensorFlow's replicated PS); default true")
                .when(ps)
                .with_default(true),
            key("partition_size", &A::partition_size,
                "byteps: tensors are cut into partitions of at most this size, each pushed and pulled on its own "
                "(default 4096000 bytes, BYTEPS_PARTITION_BYTES)",
                {1024})
                .when(keys::also<A>(
                    ps, [](const A& a) { return a.style == topo::PsStyle::byteps && a.per_tensor; },
                    "applies to style \"byteps\" with per-partition push/pull (per_tensor true)"))
                .with_default("4096000B"),
            key("switch_aggregation", &A::switch_aggregation,
                "ps: the workers' pushes are summed in the switch they all reach (network.sharp), which hands each "
                "server one sum and multicasts the server's reply to every worker, segment by segment (SwitchML, "
                "ATP); synchronous schemes only (default false)")
                .when(keys::also<A>(
                    ps, [](const A& a) { return a.style == topo::PsStyle::standard; },
                    "applies to style \"standard\" (BytePS sums on its own servers)"))
                .echo_when([](const A& a) { return a.switch_aggregation; }),
            key("graph", &A::graph,
                "gossip: ring (default), torus, exponential (peers at distance 2^i) or random_matching (a seeded "
                "random matching per step)")
                .when(keys::only(&A::kind, "kind", {ArchKind::gossip}))
                .with_default("ring"),
        }};
    return t;
}

const KeyTable<topo::TransportSpec>& transport_keys() {
    using T = topo::TransportSpec;
    static const KeyTable<T> t{
        "transport",
        "a transport preset with overrides (topologies/transport.cpp cites every default)",
        {
            // The preset the other keys override: reading it resets every field to the preset's.
            keys::custom<T>(
                "kind", enum_schema(topo::transport_names(), "the preset the other keys override"),
                [](T& s, const json& j, const std::string& path) {
                    s = topo::transport_preset(read_enum<topo::TransportKind>(j, path));
                },
                [](const T& s) { return json(std::string(sim::enum_name(s.kind))); })
                .mandatory(),
            key("efficiency", &T::efficiency, "goodput as a fraction of line rate", {0, 1, true}),
            key("message_overhead", &T::message_overhead, "software latency each transfer (message, ring step) pays"),
            key("collective_overhead", &T::collective_overhead,
                "cost of launching one collective (kernel launch, negotiation)"),
            key("stream_rate", &T::stream_rate, "the most one connection moves (tcp: one CPU core's worth)"),
            key("streams", &T::streams, "connections one transfer uses (NCCL channels x sockets)", {1, 1024}),
        }};
    return t;
}

}  // namespace ddlsim::scenario
