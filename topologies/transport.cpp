// Transport presets (see transport.hpp for the model). Sources:
//  [NCCL-T] NVIDIA/nccl src/graph/tuning.cc @ 5067397c2676d5aed50042fc39e5c8ee96eb0027 (NCCL 2.2x, the version
//           allreduce_auto.hpp's tuner quotes too): NCCL's own cost model. baseLatencies Ring/Simple = 8.4 us per
//           collective; hwLatencies Ring/Simple per step: NVLink 3.4 us, PCI 5.7 us, NET 14.0 us. (Until
//           2026-12-05 these came from NCCL 2.7.5, @01afd20a, whose NET Ring/Simple was 9.6 us.)
//  [NCCL-P] NCCL maintainers' all-reduce bus bandwidths in NVIDIA/nccl-tests issues: #119 "We usually consider
//           24GB/s is the peak performance per 200G NIC (12 GB/s for 100G NICs)" (24 / 25 = 0.96, 12 / 12.5 =
//           0.96); #267 "CX-7 NICs at NDR rate (400Gbps) should achieve up to 48-49GB/s per NIC" (0.96-0.98);
//           #212 "450GB/s is the line rate ... NCCL can get an effective NVLink bandwidth of 370GB/s" for 8 x H100
//           with the ring algorithm (0.82).
//  [NCCL-H] NVIDIA/nccl src/graph/topo.h @ 5067397c2676d5aed50042fc39e5c8ee96eb0027: `#define PCI_BW 12.0 // PCI
//           Gen3 x16` (GB/s; PCI_WIDTH at 01afd20a), against 15.75 GB/s line rate after 128b/130b coding: 0.76.
//  [802.3]  Ethernet framing with a 1500-byte MTU: a TCP segment carries 1448 payload bytes (IPv4 20 +
//           TCP 20 + timestamps 12) in 1538 bytes on the wire (header 14, FCS 4, preamble 8, gap 12):
//           1448 / 1538 = 0.941.
//  [NCCL-82]  NVIDIA/nccl-tests issue #82: broadcast_perf between two V100 hosts over NCCL's socket
//           transport, 8-byte messages: 38-46 us per operation (one step): the per-message cost of the
//           kernel TCP path and NCCL's proxy thread, against ~10 us on InfiniBand [NCCL-T].
//  [NCCL-209] NVIDIA/nccl issue #209: NCCL over TCP reaches no more than ~60 % of a 32 Gbit/s link
//           (~19 Gbit/s) with large messages; a socket is served by one proxy thread, so one stream is
//           CPU-bound near that rate. [NCCL-450] NVIDIA/nccl issue #450: on 100 Gbit/s TCP the all-reduce
//           reaches "4-6GB/s" bus bandwidth at best (32-48 Gbit/s), with 4 channels of one socket per thread
//           (NCCL_MIN_NCHANNELS=4 NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1; more sockets per thread were
//           slower).
//           We take 19 Gbit/s per stream and 2 streams per transfer (38 Gbit/s), which leaves 10-40 GbE
//           at line-rate goodput and caps 100 GbE near [NCCL-450]'s measurement.
//  [NCCL-T] also models NCCL's LL protocol, which it picks for messages of a few kilobytes: a ring all-reduce over
//           r ranks on m nodes costs baseLatencies Ring/LL 6.6 us + 2(r - m) intra-node steps x hwLatencies
//           Ring/LL (NVLink 0.6 us, PCI 1.0 us; when m > 1 at least getNetOverhead's 1.0 us, its figure for Intel
//           and unknown hosts: intraLat = std::max(intraLat, netOverhead)) + 2(m - 1) network steps x 2.7 us, and
//           moves data at half the ring's bus bandwidth (Ring/LL: busBw = std::min(llMaxBw, busBw * .5); llMaxBw,
//           a per-architecture cap of 35-141 GB/s, binds only messages far larger than LL's), an algorithm
//           bandwidth of busBw x r / (2(r - 1)).
#include "topologies/transport.hpp"

#include <algorithm>
#include <stdexcept>

namespace ddlsim::topo {

const std::vector<std::string>& transport_names() {
    static const std::vector<std::string> names = sim::enum_names<TransportKind>();
    return names;
}

std::optional<TransportKind> transport_kind(std::string_view name) {
    return sim::enum_from_name<TransportKind>(name);
}

TransportSpec transport_preset(TransportKind kind) {
    TransportSpec t;
    t.kind = kind;
    const sim::Time launch = sim::Time::seconds(8.4e-6);  // [NCCL-T] baseLat Ring/Simple
    switch (kind) {
        case TransportKind::ideal: break;
        case TransportKind::rdma:
            t.efficiency = 0.96;                               // [NCCL-P] HDR 24 of 25 GB/s
            t.message_overhead = sim::Time::seconds(14.0e-6);  // [NCCL-T] hwLat NET Ring/Simple
            t.collective_overhead = launch;
            break;
        case TransportKind::tcp:
            t.efficiency = 1448.0 / 1538.0;                  // [802.3]
            t.message_overhead = sim::Time::seconds(40e-6);  // [NCCL-82]
            t.collective_overhead = launch;
            t.stream_rate = sim::Bandwidth::bits_per_s(19e9);  // [NCCL-209]
            t.streams = 2;                                     // [NCCL-450]
            break;
        case TransportKind::nvlink:
            t.efficiency = 370.0 / 450.0;                     // [NCCL-P] 8 x H100 ring
            t.message_overhead = sim::Time::seconds(3.4e-6);  // [NCCL-T] hwLat NVLink Ring/Simple
            t.collective_overhead = launch;
            break;
        case TransportKind::pcie:
            t.efficiency = 12.0 / 15.75;                      // [NCCL-H]
            t.message_overhead = sim::Time::seconds(5.7e-6);  // [NCCL-T] hwLat PCI Ring/Simple
            t.collective_overhead = launch;
            break;
    }
    return t;
}

TransportKind auto_transport(LinkClass cls, sim::Bandwidth line_rate, Medium medium) {
    if (cls == LinkClass::intra && medium == Medium::nvlink) return TransportKind::nvlink;
    if (cls == LinkClass::intra && medium == Medium::pcie) return TransportKind::pcie;
    if (cls == LinkClass::intra) return line_rate.bytes_per_s() > 64e9 ? TransportKind::nvlink : TransportKind::pcie;
    return line_rate.bits_per_s() >= 100e9 * (1.0 - 1e-9) ? TransportKind::rdma : TransportKind::tcp;
}

TransportSpec transport_for(const FabricTransports& t, LinkClass cls, sim::Bandwidth line_rate, Medium medium) {
    const auto& chosen = cls == LinkClass::intra ? t.intra : t.inter;
    return chosen ? *chosen : transport_preset(auto_transport(cls, line_rate, medium));
}

sim::Time apply_transports(Fabric& fabric, const FabricTransports& t) {
    sim::Time collective;
    fabric.for_each_link([&](LinkInfo& link) {
        const TransportSpec tr = transport_for(t, link.cls, link.bandwidth, link.medium);
        link.bandwidth = sim::Bandwidth::bytes_per_s(link.bandwidth.bytes_per_s() * tr.efficiency);
        link.overhead = tr.message_overhead;
        link.flow_cap = tr.flow_cap();
        collective = std::max(collective, tr.collective_overhead);
    });
    return collective;
}

SmallAllreduce nccl_small_allreduce(const Fabric& fabric, std::span<const Vertex> group) {
    constexpr double kBaseLatLl = 6.6e-6;                                   // [NCCL-T] baseLatencies Ring/LL
    constexpr double kNvlinkLl = 0.6e-6, kPciLl = 1.0e-6, kNetLl = 2.7e-6;  // [NCCL-T] hwLatencies Ring/LL
    constexpr double kNetOverhead = 1.0e-6;                                 // [NCCL-T] getNetOverhead
    constexpr double kLlBandwidth = 0.5;                                    // [NCCL-T] Ring/LL busBw * .5
    SmallAllreduce out;
    const auto r = static_cast<double>(group.size());
    if (group.size() < 2) return out;
    std::vector<std::uint32_t> nodes;
    bool nvlink = false;
    double bus = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < group.size(); ++i) {
        nodes.push_back(fabric.node_of(group[i]));
        const Vertex next = group[(i + 1) % group.size()];  // the ring's hop from member i
        bus = std::min(bus, fabric.path_bandwidth(group[i], next).bytes_per_s());
        if (fabric.node_of(group[i]) == fabric.node_of(next))
            for (const sim::LinkIndex l : fabric.route(group[i], next))
                nvlink = nvlink || fabric.link_info(l / 2).medium == Medium::nvlink;
    }
    std::sort(nodes.begin(), nodes.end());
    const auto m = static_cast<double>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
    const double intra = std::max(nvlink ? kNvlinkLl : kPciLl, m > 1.0 ? kNetOverhead : 0.0);
    out.latency = sim::Time::seconds(kBaseLatLl + 2.0 * (r - m) * intra + 2.0 * (m - 1.0) * kNetLl);
    out.seconds_per_byte = 2.0 * (r - 1.0) / r / (kLlBandwidth * bus);
    return out;
}

}  // namespace ddlsim::topo
