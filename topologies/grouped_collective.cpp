// Groups of workers running their own collectives at once (grouped_collective.hpp).
#include "topologies/grouped_collective.hpp"

#include <limits>
#include <stdexcept>

namespace ddlsim::topo {
namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

class GroupedRound final : public sim::Round {
public:
    explicit GroupedRound(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& where) : where_(where) {}
    void add(std::unique_ptr<sim::Round> r) { rounds_.push_back(std::move(r)); }
    void open(std::uint32_t e) override {
        const auto [g, i] = where_.at(e);
        if (g != kNone) rounds_[g]->open(i);
    }

private:
    const std::vector<std::pair<std::uint32_t, std::uint32_t>>& where_;
    std::vector<std::unique_ptr<sim::Round>> rounds_;
};

// One group's map from its own endpoints to the job's.
sim::RouteLookup mapped(const sim::RouteLookup& routes, const std::vector<std::uint32_t>& members) {
    return [routes, &members](std::uint32_t a, std::uint32_t b) -> const sim::Route& {
        return routes(members[a], members[b]);
    };
}

class ViewCollective final : public Collective {
public:
    ViewCollective(const Collective& inner, std::vector<std::uint32_t> members, std::uint32_t n)
        : inner_(inner), members_(std::move(members)), where_(n, {kNone, 0}) {
        for (std::uint32_t i = 0; i < members_.size(); ++i) where_.at(members_[i]) = {0, i};
    }
    [[nodiscard]] std::uint32_t endpoints() const override { return static_cast<std::uint32_t>(where_.size()); }
    [[nodiscard]] std::unique_ptr<sim::Round> start_round(sim::Engine& engine, sim::Network& network,
                                                          sim::RouteLookup routes, sim::EndpointDone on_done,
                                                          std::uint32_t round) const override {
        auto r = std::make_unique<GroupedRound>(where_);
        r->add(inner_.start_round(
            engine, network, mapped(routes, members_),
            [this, on_done = std::move(on_done)](std::uint32_t i) { on_done(members_[i]); }, round));
        return r;
    }
    [[nodiscard]] sim::Bytes wire_bytes(const RemoteTest& remote) const override {
        return inner_.wire_bytes([&](std::uint32_t a, std::uint32_t b) { return remote(members_[a], members_[b]); });
    }
    [[nodiscard]] sim::Time alpha_beta(const sim::PathCostLookup& cost) const override {
        return inner_.alpha_beta([&](std::uint32_t a, std::uint32_t b) { return cost(members_[a], members_[b]); });
    }

private:
    const Collective& inner_;
    std::vector<std::uint32_t> members_;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> where_;
};

}  // namespace

GroupedCollective::GroupedCollective(std::vector<std::vector<std::uint32_t>> groups,
                                     std::vector<std::unique_ptr<Collective>> parts, std::uint32_t n)
    : groups_(std::move(groups)), parts_(std::move(parts)), n_(n), where_(n, {kNone, 0}) {
    if (groups_.empty() || groups_.size() != parts_.size())
        throw std::invalid_argument("a grouped collective needs one collective per group");
    for (std::uint32_t g = 0; g < groups_.size(); ++g) {
        if (parts_[g]->endpoints() != groups_[g].size())
            throw std::invalid_argument("a group's collective must span exactly the group's endpoints");
        for (std::uint32_t i = 0; i < groups_[g].size(); ++i) {
            auto& slot = where_.at(groups_[g][i]);
            if (slot.first != kNone) throw std::invalid_argument("an endpoint in two groups");
            slot = {g, i};
        }
    }
}

std::unique_ptr<sim::Round> GroupedCollective::start_round(sim::Engine& engine, sim::Network& network,
                                                           sim::RouteLookup routes, sim::EndpointDone on_done,
                                                           std::uint32_t round) const {
    auto r = std::make_unique<GroupedRound>(where_);
    for (std::uint32_t g = 0; g < groups_.size(); ++g) {
        const auto& members = groups_[g];
        r->add(parts_[g]->start_round(
            engine, network, mapped(routes, members), [&members, on_done](std::uint32_t i) { on_done(members[i]); },
            round));
    }
    return r;
}

sim::Bytes GroupedCollective::wire_bytes(const RemoteTest& remote) const {
    sim::Bytes b{0.0};
    for (std::uint32_t g = 0; g < groups_.size(); ++g) {
        const auto& m = groups_[g];
        b = b + parts_[g]->wire_bytes([&](std::uint32_t a, std::uint32_t c) { return remote(m[a], m[c]); });
    }
    return b;
}

sim::Time GroupedCollective::alpha_beta(const sim::PathCostLookup& cost) const {
    sim::Time t;
    for (std::uint32_t g = 0; g < groups_.size(); ++g) {
        const auto& m = groups_[g];
        t = std::max(t, parts_[g]->alpha_beta([&](std::uint32_t a, std::uint32_t c) { return cost(m[a], m[c]); }));
    }
    return t;
}

std::unique_ptr<Collective> view_over(const Collective& inner, std::vector<std::uint32_t> members, std::uint32_t n) {
    return std::make_unique<ViewCollective>(inner, std::move(members), n);
}

}  // namespace ddlsim::topo
