#include "topologies/builders.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace ddlsim::topo {
namespace {

Fabric build(const StarSpec& s) {
    Fabric f;
    f.add_node("switch", NodeKind::switch_);
    for (std::size_t i = 0; i < s.hosts; ++i) {
        const std::string h = fmt::format("h{}", i);
        f.add_node(h, NodeKind::host);
        f.add_link(h, "switch", s.bandwidth, s.latency);
    }
    return f;
}

Fabric build(const TwoTierSpec& s) {
    Fabric f;
    f.add_node("switch", NodeKind::switch_);
    for (std::size_t n = 0; n < s.nodes; ++n) {
        const std::string node = fmt::format("n{}", n);
        f.add_node(node, NodeKind::switch_);
        f.add_link(node, "switch", s.bandwidth, s.latency);
        for (std::size_t g = 0; g < s.gpus_per_node; ++g) {
            const std::string gpu = fmt::format("n{}g{}", n, g);
            f.add_node(gpu, NodeKind::host);
            f.add_link(gpu, node, s.intra_bandwidth, s.intra_latency);
        }
    }
    for (std::size_t i = 0; i < s.extra_hosts; ++i) {
        const std::string h = fmt::format("s{}", i);
        f.add_node(h, NodeKind::host);
        f.add_link(h, "switch", s.bandwidth, s.latency);
    }
    return f;
}

Fabric build(const CustomSpec& s) {
    Fabric f;
    for (const auto& n : s.nodes) f.add_node(n.name, n.kind);
    for (const auto& l : s.links) f.add_link(l.from, l.to, l.bandwidth, l.latency);
    return f;
}

}  // namespace

Fabric build_fabric(const TopologySpec& spec) {
    Fabric f = std::visit([](const auto& s) { return build(s); }, spec);
    f.validate();
    return f;
}

}  // namespace ddlsim::topo
