// Transports: what the software between a collective and the wire makes of a link's nominal
// speed. A fabric link carries its line rate and propagation latency; a transport says how
// much of that rate transfers reach and what each transfer and each collective costs on top:
//
//   goodput      = efficiency x line rate                       (framing, protocol, DMA overheads)
//   one transfer = link latencies + overhead + bytes / min(shared rate, streams x stream_rate)
//   a collective = collective_overhead (kernel launch / negotiation) before its first transfer
//
// A transfer pays the largest `overhead` among the links it crosses, once (the software stack
// is crossed once per message, however many switches it passes). `stream_rate` bounds what one
// TCP connection moves (it is processed by one CPU core); a transfer uses `streams` connections.
// This is why TCP collectives slow down as machines are added: a ring all-reduce of n ranks
// takes 2(n-1) steps, each one transfer paying the transport's per-message overhead (tens of
// microseconds in a kernel TCP stack against a few for RDMA), so the latency term grows with
// n while the bandwidth term 2(n-1)/n x S/B stays flat; with fused buffers and per-layer
// messages it is paid once per message per step.
//
// Presets and their sources (each number is cited again beside it in transport.cpp):
//   ideal   nominal link speed, no overheads: the closed forms and the SimGrid comparison.
//   rdma    InfiniBand / RoCE through NCCL's IB transport.
//   tcp     kernel TCP sockets (NCCL's socket transport, Gloo, MPI over TCP, PS-Lite/ZeroMQ).
//   nvlink  NVLink / NVSwitch inside a machine.
//   pcie    PCIe (Gen3 x16 reference) inside a machine.
#pragma once

#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/units.hpp"
#include "topologies/fabric.hpp"

namespace ddlsim::topo {

enum class TransportKind { ideal, rdma, tcp, nvlink, pcie };

inline constexpr sim::EnumEntry<TransportKind> k_transport_kinds[]{
    {TransportKind::ideal, "ideal", "nominal links, free overlap (the closed forms)"},
    {TransportKind::rdma, "rdma", "InfiniBand / RoCE verbs"},
    {TransportKind::tcp, "tcp", "kernel TCP sockets"},
    {TransportKind::nvlink, "nvlink", "NVLink inside a machine"},
    {TransportKind::pcie, "pcie", "PCIe inside a machine"}};
constexpr std::span<const sim::EnumEntry<TransportKind>> enum_entries(TransportKind) {
    return k_transport_kinds;
}

struct TransportSpec {
    TransportKind kind = TransportKind::ideal;
    double efficiency = 1.0;                    ///< goodput as a fraction of line rate
    sim::Time message_overhead;                 ///< per transfer (message, ring step)
    sim::Time collective_overhead;              ///< per collective (launch, negotiation)
    std::optional<sim::Bandwidth> stream_rate;  ///< one connection's most (none: unbounded)
    std::uint32_t streams = 1;                  ///< connections one transfer uses

    /// The per-transfer rate bound in bytes/s (infinity when unbounded).
    [[nodiscard]] double flow_cap() const {
        return stream_rate ? stream_rate->bytes_per_s() * streams : std::numeric_limits<double>::infinity();
    }
};

/// Names of the presets (k_transport_kinds, in table order).
[[nodiscard]] const std::vector<std::string>& transport_names();
/// The preset of `kind` with its cited defaults.
[[nodiscard]] TransportSpec transport_preset(TransportKind kind);
/// The preset named `name`, or nullopt.
[[nodiscard]] std::optional<TransportKind> transport_kind(std::string_view name);

/// What `auto` picks for links of `line_rate` in class `cls`: between machines RDMA at
/// 100 Gbit/s and above (InfiniBand EDR/HDR/NDR, RoCE on GPU clusters), TCP below (1/10/25/40
/// GbE); inside a machine NVLink above 64 GB/s (faster than PCIe Gen5 x16), PCIe otherwise, unless
/// the link's builder named its medium (node presets), which then decides.
[[nodiscard]] TransportKind auto_transport(LinkClass cls, sim::Bandwidth line_rate, Medium medium = Medium::unknown);

/// The transports a fabric runs: explicit ones per class, or `auto` (nullopt) per link.
struct FabricTransports {
    std::optional<TransportSpec> inter;
    std::optional<TransportSpec> intra;
};

/// Applies the transports to every link (goodput, per-transfer overhead, flow cap); returns
/// the largest collective overhead among the transports in use.
sim::Time apply_transports(Fabric& fabric, const FabricTransports& t);

/// The transport a link of class `cls` and `line_rate` runs under `t`.
[[nodiscard]] TransportSpec transport_for(const FabricTransports& t, LinkClass cls, sim::Bandwidth line_rate,
                                          Medium medium = Medium::unknown);

/// What one small all-reduce among `group` costs (SyncBatchNorm's statistics: kilobytes), by NCCL's own model of a
/// ring with its LL protocol, the one it picks for messages this small (transport.cpp [NCCL-T]): a latency, and the
/// seconds each byte adds.
struct SmallAllreduce {
    sim::Time latency;
    double seconds_per_byte = 0.0;
};
[[nodiscard]] SmallAllreduce nccl_small_allreduce(const Fabric& fabric, std::span<const Vertex> group);

}  // namespace ddlsim::topo
