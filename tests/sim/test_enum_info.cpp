// Every plain enum a scenario names has one table beside the enum (sim/enum_info.hpp); the loader, the schema and
// the resolved scenario read it. Checks: names unique and non-empty, every entry described, name -> value -> name
// round-trips, the schema offers exactly the table's names, and the loader maps each name to its own value.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <variant>

#include "models/compute.hpp"
#include "models/device.hpp"
#include "models/job.hpp"
#include "models/workload.hpp"
#include "scenarios/loader_detail.hpp"
#include "scenarios/scenario.hpp"
#include "sim/enum_info.hpp"
#include "tests/support/support.hpp"
#include "topologies/collectives.hpp"
#include "topologies/fabric.hpp"
#include "topologies/transport.hpp"

using namespace ddlsim;

namespace {

template <typename E>
void check_table(std::size_t expected_entries) {
    const auto table = sim::enum_table<E>();
    CHECK(table.size() == expected_entries);
    std::set<std::string> names;
    std::set<int> values;
    for (const auto& e : table) {
        CHECK_FALSE(e.name.empty());
        CHECK_FALSE(e.description.empty());
        CHECK(names.insert(std::string(e.name)).second);
        CHECK(values.insert(static_cast<int>(e.value)).second);
        CHECK(sim::enum_name(e.value) == e.name);
        REQUIRE(sim::enum_from_name<E>(e.name).has_value());
        CHECK(*sim::enum_from_name<E>(e.name) == e.value);
    }
    CHECK_FALSE(sim::enum_from_name<E>("no such name").has_value());
    CHECK(sim::enum_names<E>().size() == table.size());
}

}  // namespace

TEST_CASE("enum tables: unique names, descriptions, round trips") {
    // Expected sizes: the number of enumerators each enum declares (none of StragglerDistribution is the absence
    // of the key and has no name), so an enumerator added without a table entry fails here.
    check_table<topo::ArchKind>(3);
    check_table<topo::AllreduceAlgorithm>(9);
    check_table<topo::ServerPlacement>(2);
    check_table<topo::PsSharding>(3);
    check_table<topo::PsStyle>(2);
    check_table<topo::GossipGraph>(4);
    check_table<topo::NodeKind>(2);
    check_table<topo::Routing>(2);
    check_table<topo::TransportKind>(5);
    check_table<models::SyncKind>(models::sync_schemes().size());  // each scheme named, each name a descriptor
    for (const auto& e : sim::enum_table<models::SyncKind>()) CHECK(models::sync_scheme(e.value).kind == e.value);
    check_table<models::Fusion>(3);
    check_table<models::StragglerDistribution>(3);
    check_table<models::Precision>(5);
    check_table<models::Optimizer>(5);
    check_table<models::PartKind>(7);
    check_table<scenario::NetworkModel>(2);
    check_table<models::TransformerStyle>(2);
    CHECK_THROWS_AS((void)sim::enum_name(models::StragglerDistribution::none), std::logic_error);
    // The table order is not the enumerators' order for StragglerDistribution (none has no entry): a loader
    // that mapped names by position would read "lognormal" as none.
    CHECK(sim::enum_value<models::StragglerDistribution>("lognormal") == models::StragglerDistribution::lognormal);
}

TEST_CASE("enum tables: the schema offers exactly the tables' names") {
    const auto schema = scenario::scenario_schema();
    auto offered = [&](const char* def, const char* key) {
        return schema.at("$defs").at(def).at("properties").at(key).at("enum").get<std::vector<std::string>>();
    };
    CHECK(offered("architecture", "algorithm") == sim::enum_names<topo::AllreduceAlgorithm>());
    CHECK(offered("architecture", "kind") == sim::enum_names<topo::ArchKind>());
    CHECK(offered("architecture", "graph") == sim::enum_names<topo::GossipGraph>());
    CHECK(offered("architecture", "sharding") == sim::enum_names<topo::PsSharding>());
    CHECK(offered("sync", "kind") == sim::enum_names<models::SyncKind>());
    CHECK(offered("overlap", "fusion") == sim::enum_names<models::Fusion>());
    CHECK(offered("stragglers", "distribution") == sim::enum_names<models::StragglerDistribution>());
    CHECK(offered("device", "precision") == sim::enum_names<models::Precision>());
}

TEST_CASE("enum tables: the loader maps every algorithm and sync name to its own value") {
    for (const auto& e : sim::enum_table<topo::AllreduceAlgorithm>()) {
        nlohmann::json j{{"workers", 4},
                         {"model", "resnet50"},
                         {"batch_size", 32},
                         {"device", "V100"},
                         {"network", ddlsim::testing::star_network({.latency = "1us"})},
                         {"architecture", {{"kind", "allreduce"}, {"algorithm", std::string(e.name)}}}};
        if (e.value == topo::AllreduceAlgorithm::torus2d)
            j["network"] = {{"topology", "torus2d"}, {"dims", {2, 2}}, {"bandwidth", "10Gbps"}, {"latency", "1us"}};
        if (e.value == topo::AllreduceAlgorithm::nvls)  // the node switch must reduce (NVLink SHARP)
            j["network"] = {
                {"topology", "two_tier"}, {"node", "dgx_h100"}, {"bandwidth", "400Gbps"}, {"latency", "1us"}};
        if (e.value == topo::AllreduceAlgorithm::collnet)  // the switches between nodes must reduce (SHARP)
            j["network"] = {{"topology", "rail_optimized"}, {"gpus_per_node", 2}, {"nics_per_node", 2},
                            {"bandwidth", "100Gbps"},       {"latency", "1us"},   {"intra_bandwidth", "100GBps"},
                            {"intra_latency", "1us"},       {"sharp", true}};
        if (e.value == topo::AllreduceAlgorithm::hierarchical)
            j["network"] = {{"topology", "two_tier"}, {"gpus_per_node", 2},           {"bandwidth", "10Gbps"},
                            {"latency", "1us"},       {"intra_bandwidth", "100GBps"}, {"intra_latency", "1us"}};
        INFO(e.name);
        const auto sc = scenario::load_scenario(j);
        CHECK(sc.jobs.at(0).architecture.algorithm == e.value);
    }
    // Each scheme on its first architecture, its required keys at 2 (of 4 workers) from its descriptor.
    for (const models::SyncSchemeInfo& info : models::sync_schemes()) {
        nlohmann::json sync{{"kind", std::string(sim::enum_name(info.kind))}};
        for (std::string_view k : info.keys)
            if (k.ends_with('*')) sync[std::string(k.substr(0, k.size() - 1))] = 2;
        nlohmann::json arch{{"kind", std::string(sim::enum_name(info.architectures.front()))}};
        if (info.architectures.front() == topo::ArchKind::ps) arch["servers"] = 1;
        const nlohmann::json j{{"workers", 4},
                               {"model", "resnet50"},
                               {"batch_size", 32},
                               {"device", "V100"},
                               {"network", ddlsim::testing::star_network({.latency = "1us"})},
                               {"architecture", arch},
                               {"sync", sync}};
        INFO(sim::enum_name(info.kind));
        CHECK(scenario::load_scenario(j).jobs.at(0).sync.kind == info.kind);
    }
}

TEST_CASE("topology table: one reader per topology spec, named by the spec, offered by the schema") {
    const auto& readers = scenario::detail::topology_readers();
    REQUIRE(readers.size() == std::variant_size_v<topo::TopologySpec>);
    std::set<std::string_view> names;
    for (const auto& r : readers) {
        CHECK(names.insert(r.name).second);
        CHECK_FALSE(r.description.empty());
        CHECK(static_cast<bool>(r.build));
    }
    // Every alternative of the variant has exactly one reader under its kName.
    auto has = [&](std::string_view n) { return names.contains(n); };
    CHECK(has(topo::StarSpec::kName));
    CHECK(has(topo::TwoTierSpec::kName));
    CHECK(has(topo::FatTreeSpec::kName));
    CHECK(has(topo::LeafSpineSpec::kName));
    CHECK(has(topo::RingSpec::kName));
    CHECK(has(topo::Torus2dSpec::kName));
    CHECK(has(topo::CustomSpec::kName));
    const auto schema = scenario::scenario_schema();
    const auto offered =
        schema.at("$defs").at("network").at("properties").at("topology").at("enum").get<std::vector<std::string>>();
    CHECK(offered.size() == readers.size());
    for (std::size_t i = 0; i < readers.size(); ++i) CHECK(offered.at(i) == readers[i].name);
    // The resolved scenario names the topology it was loaded with.
    const nlohmann::json j{{"workers", 4},
                           {"model", "resnet50"},
                           {"batch_size", 32},
                           {"device", "V100"},
                           {"network", {{"topology", "ring"}, {"bandwidth", "10Gbps"}, {"latency", "1us"}}}};
    CHECK(topo::topology_name(scenario::load_scenario(j).topology) == "ring");
}

TEST_CASE("sync schemes: the loader accepts a scheme on exactly the architectures its descriptor lists") {
    REQUIRE(models::sync_schemes().size() == sim::enum_table<models::SyncKind>().size());
    for (const auto& info : models::sync_schemes())
        for (const auto& arch : sim::enum_table<topo::ArchKind>()) {
            nlohmann::json sync{{"kind", std::string(sim::enum_name(info.kind))}};
            for (std::string_view k : info.keys)
                if (k.back() == '*') sync[std::string(k.substr(0, k.size() - 1))] = 2;
            const nlohmann::json j{{"workers", 4},
                                   {"model", "resnet50"},
                                   {"batch_size", 32},
                                   {"device", "V100"},
                                   {"network", ddlsim::testing::star_network({.latency = "1us"})},
                                   {"architecture", {{"kind", std::string(arch.name)}}},
                                   {"sync", sync}};
            const bool listed =
                std::find(info.architectures.begin(), info.architectures.end(), arch.value) != info.architectures.end();
            bool loaded = true;
            try {
                (void)scenario::load_scenario(j);
            } catch (const scenario::ScenarioError&) {
                loaded = false;
            }
            INFO(sim::enum_name(info.kind), " on ", arch.name);
            CHECK(loaded == listed);
            CHECK(models::sync_scheme(info.kind).kind == info.kind);
        }
}
