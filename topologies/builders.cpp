#include "topologies/builders.hpp"

#include <fmt/format.h>

#include <atomic>
#include <stdexcept>

#include "topologies/in_network.hpp"

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
    if (s.sharp) f.set_sharp({*f.find("switch")}, kCollnetEfficiency);
    return f;
}

Fabric build_two_tier(const TwoTierSpec& s);

Fabric build(const TwoTierSpec& s) {
    if (s.sites < 1 || s.nodes % s.sites != 0)
        throw std::invalid_argument("two_tier: the nodes must split evenly into the sites");
    if (s.sharp && s.sites > 1) throw std::invalid_argument("two_tier: SHARP reduces inside one site's fabric");
    Fabric f = build_two_tier(s);
    if (s.sharp) f.set_sharp({*f.find("switch")}, kCollnetEfficiency);
    return f;
}

Fabric build_two_tier(const TwoTierSpec& s) {
    Fabric f;
    // One top switch per site; several sites meet at the WAN core.
    auto site_switch = [&s](std::size_t site) {
        return s.sites == 1 ? std::string("switch") : fmt::format("site{}", site);
    };
    auto top = [&](std::size_t node) { return site_switch(node / (s.nodes / s.sites)); };
    for (std::size_t site = 0; site < s.sites; ++site) f.add_node(site_switch(site), NodeKind::switch_);
    if (s.sites > 1) {
        f.add_node("wan", NodeKind::switch_);
        for (std::size_t site = 0; site < s.sites; ++site)
            f.add_link(site_switch(site), "wan", s.wan_bandwidth, sim::Time::seconds(s.wan_latency.seconds() / 2.0));
    }
    if (s.node) {
        for (std::size_t n = 0; n < s.nodes; ++n)
            for (const std::string& nic : add_node(f, *s.node, n, s.intra_latency))
                f.add_link(nic, top(n), s.bandwidth, s.latency);
        for (std::size_t i = 0; i < s.extra_hosts; ++i) {
            const std::string h = fmt::format("s{}", i);
            f.set_node(f.add_node(h, NodeKind::host), static_cast<std::uint32_t>(s.nodes + i));
            f.add_link(h, top(0), s.bandwidth, s.latency);
        }
        return f;
    }
    for (std::size_t n = 0; n < s.nodes; ++n) {
        const std::string node = fmt::format("n{}", n);
        f.add_node(node, NodeKind::switch_);
        for (std::size_t nic = 0; nic < s.nics_per_node; ++nic) f.add_link(node, top(n), s.bandwidth, s.latency);
        for (std::size_t g = 0; g < s.gpus_per_node; ++g) {
            const std::string gpu = fmt::format("n{}g{}", n, g);
            f.set_node(f.add_node(gpu, NodeKind::host), static_cast<std::uint32_t>(n));
            f.add_link(gpu, node, s.intra_bandwidth, s.intra_latency, LinkClass::intra);
        }
    }
    for (std::size_t i = 0; i < s.extra_hosts; ++i) {
        const std::string h = fmt::format("s{}", i);
        f.add_node(h, NodeKind::host);
        f.add_link(h, top(0), s.bandwidth, s.latency);
    }
    return f;
}

Fabric build(const FatTreeSpec& s) {
    if (s.k < 2 || s.k % 2 != 0) throw std::invalid_argument("fat_tree: k must be even and at least 2");
    const std::size_t half = s.k / 2;
    Fabric f;
    std::size_t host = 0;
    for (std::size_t c = 0; c < half * half; ++c) f.add_node(fmt::format("c{}", c), NodeKind::switch_);
    for (std::size_t p = 0; p < s.k; ++p) {
        for (std::size_t a = 0; a < half; ++a) {
            const std::string agg = fmt::format("a{}_{}", p, a);
            f.add_node(agg, NodeKind::switch_);
            // Aggregation switch a of every pod connects to core switches a*k/2 .. a*k/2 + k/2 - 1.
            for (std::size_t m = 0; m < half; ++m)
                f.add_link(agg, fmt::format("c{}", a * half + m), s.bandwidth, s.latency);
        }
        for (std::size_t e = 0; e < half; ++e) {
            const std::string edge = fmt::format("e{}_{}", p, e);
            f.add_node(edge, NodeKind::switch_);
            for (std::size_t a = 0; a < half; ++a)
                f.add_link(edge, fmt::format("a{}_{}", p, a), s.bandwidth, s.latency);
            for (std::size_t h = 0; h < half; ++h) {
                const std::string name = fmt::format("h{}", host++);
                f.add_node(name, NodeKind::host);
                f.add_link(name, edge, s.bandwidth, s.latency);
            }
        }
    }
    return f;
}

Fabric build(const LeafSpineSpec& s) {
    Fabric f;
    const sim::Bandwidth up = leaf_uplink_bandwidth(s);
    for (std::size_t j = 0; j < s.spines; ++j) f.add_node(fmt::format("spine{}", j), NodeKind::switch_);
    std::size_t host = 0;
    for (std::size_t i = 0; i < s.leaves; ++i) {
        const std::string leaf = fmt::format("leaf{}", i);
        f.add_node(leaf, NodeKind::switch_);
        for (std::size_t j = 0; j < s.spines; ++j) f.add_link(leaf, fmt::format("spine{}", j), up, s.latency);
        for (std::size_t h = 0; h < s.hosts_per_leaf; ++h) {
            const std::string name = fmt::format("h{}", host++);
            f.add_node(name, NodeKind::host);
            f.add_link(name, leaf, s.bandwidth, s.latency);
        }
    }
    return f;
}

Fabric build(const RingSpec& s) {
    Fabric f;
    for (std::size_t i = 0; i < s.hosts; ++i) f.add_node(fmt::format("h{}", i), NodeKind::host);
    if (s.hosts == 2) f.add_link("h0", "h1", s.bandwidth, s.latency);
    if (s.hosts > 2)
        for (std::size_t i = 0; i < s.hosts; ++i)
            f.add_link(fmt::format("h{}", i), fmt::format("h{}", (i + 1) % s.hosts), s.bandwidth, s.latency);
    return f;
}

Fabric build(const Torus2dSpec& s) {
    Fabric f;
    for (std::size_t y = 0; y < s.y; ++y)
        for (std::size_t x = 0; x < s.x; ++x) f.add_node(fmt::format("h{}_{}", x, y), NodeKind::host);
    // Wrap-around neighbours; a dimension of 2 gets one link (no duplicate), of 1 none.
    for (std::size_t y = 0; y < s.y; ++y)
        for (std::size_t x = 0; x < s.x; ++x) {
            if (s.x > 2 || (s.x == 2 && x == 0))
                f.add_link(fmt::format("h{}_{}", x, y), fmt::format("h{}_{}", (x + 1) % s.x, y), s.bandwidth,
                           s.latency);
            if (s.y > 2 || (s.y == 2 && y == 0))
                f.add_link(fmt::format("h{}_{}", x, y), fmt::format("h{}_{}", x, (y + 1) % s.y), s.bandwidth,
                           s.latency);
        }
    return f;
}

Fabric build(const RailOptimizedSpec& s) {
    Fabric f;
    const sim::Bandwidth up = rail_uplink_bandwidth(s);
    for (std::size_t j = 0; j < s.spines; ++j) f.add_node(fmt::format("spine{}", j), NodeKind::switch_);
    for (std::size_t k = 0; k < s.node.nics; ++k) {
        const std::string rail = fmt::format("rail{}", k);
        f.add_node(rail, NodeKind::switch_);
        for (std::size_t j = 0; j < s.spines; ++j) f.add_link(rail, fmt::format("spine{}", j), up, s.latency);
    }
    for (std::size_t n = 0; n < s.nodes; ++n) {
        const std::vector<std::string> nics = add_node(f, s.node, n, s.intra_latency);
        for (std::size_t k = 0; k < nics.size(); ++k)
            f.add_link(nics[k], fmt::format("rail{}", k), s.bandwidth, s.latency);
    }
    f.set_rails(static_cast<std::uint32_t>(s.node.nics));
    if (s.sharp) {
        std::vector<Vertex> rails;
        for (std::size_t k = 0; k < s.node.nics; ++k) rails.push_back(*f.find(fmt::format("rail{}", k)));
        f.set_sharp(std::move(rails), kCollnetEfficiency);
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

sim::Bandwidth leaf_uplink_bandwidth(const LeafSpineSpec& s) {
    return s.bandwidth * (static_cast<double>(s.hosts_per_leaf) / (static_cast<double>(s.spines) * s.oversubscription));
}

sim::Bandwidth rail_uplink_bandwidth(const RailOptimizedSpec& s) {
    return s.bandwidth * (static_cast<double>(s.nodes) / (static_cast<double>(s.spines) * s.oversubscription));
}

// The specs' answers (builders.hpp).

namespace {
// A node type's links between machines' parts (a GPU's PCIe link to its NIC): `auto` picks for their own speed.
void add_inter_links(const NodeType& node, std::vector<sim::Bandwidth>& out) {
    for (const auto& link : node.links)
        if (link.cls == LinkClass::inter) out.push_back(link.bandwidth);
}
}  // namespace

std::string StarSpec::summary(const SummaryWords& w) const {
    return fmt::format("star, {} hosts, {} links, {} latency", hosts, w.bandwidth(bandwidth), w.latency(latency));
}

std::optional<LinkSpeeds> TwoTierSpec::link_speeds() const {
    LinkSpeeds out{bandwidth, {}, IntraLinks{intra_bandwidth, node.has_value()}};
    if (sites > 1) out.inter.push_back(wan_bandwidth);  // sites' WAN links (tcp below 100 Gbit/s)
    if (node) add_inter_links(*node, out.inter);
    return out;
}

std::string TwoTierSpec::summary(const SummaryWords& w) const {
    if (node)
        return fmt::format("two_tier, {} nodes {}, NICs {} / {}", nodes, w.node(*node), w.bandwidth(bandwidth),
                           w.latency(latency));
    return fmt::format("two_tier, {} nodes x {} GPUs, {} x NIC {} / {}, intra {} / {}", nodes, gpus_per_node,
                       nics_per_node, w.bandwidth(bandwidth), w.latency(latency), w.bandwidth(intra_bandwidth),
                       w.latency(intra_latency));
}

std::optional<LinkSpeeds> RailOptimizedSpec::link_speeds() const {
    LinkSpeeds out{bandwidth, {rail_uplink_bandwidth(*this)}, IntraLinks{node.gpu_bandwidth, !node.preset.empty()}};
    add_inter_links(node, out.inter);
    return out;
}

std::string RailOptimizedSpec::summary(const SummaryWords& w) const {
    return fmt::format("rail_optimized, {} nodes {}, {} rails of {} / {}, {} spines, uplinks {} ({}:1)", nodes,
                       w.node(node), node.nics, w.bandwidth(bandwidth), w.latency(latency), spines,
                       w.bandwidth(rail_uplink_bandwidth(*this)), oversubscription);
}

std::string FatTreeSpec::summary(const SummaryWords& w) const {
    return fmt::format("fat_tree k={}, {} hosts, {} links, {} latency", k, k * k * k / 4, w.bandwidth(bandwidth),
                       w.latency(latency));
}

std::optional<LinkSpeeds> LeafSpineSpec::link_speeds() const {
    return LinkSpeeds{bandwidth, {leaf_uplink_bandwidth(*this)}, std::nullopt};
}

std::string LeafSpineSpec::summary(const SummaryWords& w) const {
    return fmt::format("leaf_spine, {} leaves x {} hosts, {} spines, hosts {}, uplinks {} ({}:1)", leaves,
                       hosts_per_leaf, spines, w.bandwidth(bandwidth), w.bandwidth(leaf_uplink_bandwidth(*this)),
                       oversubscription);
}

std::string RingSpec::summary(const SummaryWords& w) const {
    return fmt::format("ring of {} hosts, {} links, {} latency", hosts, w.bandwidth(bandwidth), w.latency(latency));
}

std::string Torus2dSpec::summary(const SummaryWords& w) const {
    return fmt::format("torus2d {} x {}, {} links, {} latency", x, y, w.bandwidth(bandwidth), w.latency(latency));
}

Keyed<sim::Time> CustomSpec::largest_latency() const {
    Keyed<sim::Time> out{sim::Time::zero(), "latency"};
    for (std::size_t i = 0; i < links.size(); ++i)
        if (links[i].latency.seconds() > out.value.seconds())
            out = {links[i].latency, fmt::format("links[{}].latency", i)};
    return out;
}

Keyed<sim::Bandwidth> CustomSpec::smallest_bandwidth() const {
    Keyed<sim::Bandwidth> out{sim::Bandwidth{}, "bandwidth"};
    for (std::size_t i = 0; i < links.size(); ++i)
        if (out.value.bytes_per_s() == 0.0 || links[i].bandwidth < out.value)
            out = {links[i].bandwidth, fmt::format("links[{}].bandwidth", i)};
    return out;
}

std::string CustomSpec::summary(const SummaryWords& /*its line writes no figure*/) const {
    return fmt::format("custom, {} nodes, {} links", nodes.size(), links.size());
}

namespace {
std::atomic<std::uint64_t> g_fabrics_built{0};
}

std::uint64_t fabrics_built() {
    return g_fabrics_built.load();
}

Fabric build_fabric(const TopologySpec& spec) {
    ++g_fabrics_built;
    Fabric f = std::visit([](const auto& s) { return build(s); }, spec);
    f.validate();
    return f;
}

}  // namespace ddlsim::topo
