// SyncBatchNorm (job key bn_group): every BatchNorm layer all-reduces 8 bytes per channel within its group, forward
// and backward, on the critical path, at the cost NCCL's own model gives a small ring all-reduce with its LL protocol
// (topologies/transport.cpp [NCCL-T], NCCL 2.2x: 6.6 us + 2(r - m) x 0.6 us over NVLink (at least 1.0 us when the
// group spans nodes) + 2(m - 1) x 2.7 us over the network; half the bus bandwidth). Every expectation below is derived
// by hand from those constants.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include "models/compute.hpp"
#include "models/workload.hpp"
#include "scenarios/run.hpp"
#include "tests/support/scenario_harness.hpp"
#include "topologies/builders.hpp"
#include "topologies/node_type.hpp"
#include "topologies/transport.hpp"

using namespace ddlsim;
using nlohmann::json;

namespace {

const topo::NodeType& dgx_a100() {
    const topo::NodeType* t = topo::find_node_preset("dgx_a100");
    REQUIRE(t != nullptr);
    return *t;
}

topo::Fabric two_dgx_a100() {
    const topo::NodeType& node = dgx_a100();
    topo::TwoTierSpec s;
    s.nodes = 2;
    s.gpus_per_node = node.gpus;
    s.nics_per_node = node.nics;
    s.bandwidth = node.nic_bandwidth;
    s.latency = sim::Time::seconds(2e-6);
    s.intra_bandwidth = node.gpu_bandwidth;
    s.intra_latency = sim::Time::seconds(1e-6);
    s.node = node;
    return topo::build_fabric(s);
}

double small_allreduce_us(const topo::Fabric& f, std::initializer_list<const char*> names) {
    std::vector<topo::Vertex> group;
    for (const char* n : names) group.push_back(*f.find(n));
    return topo::nccl_small_allreduce(f, group).latency.seconds() * 1e6;
}

json two_gpus(int bn_group) {
    json j = {{"workers", 2},
              {"model", "resnet50"},
              {"batch_size", 16},
              {"iterations", 1},
              {"device", {{"name", "A100"}, {"precision", "fp16"}}},
              {"network",
               {{"topology", "two_tier"},
                {"node", "dgx_a100"},
                {"latency", "2us"},
                {"intra_latency", "1us"},
                {"intra_transport", "ideal"}}}};
    if (bn_group > 0) j["bn_group"] = bn_group;
    return j;
}

}  // namespace

TEST_CASE("sync batchnorm: NCCL's LL ring latency inside a node, across nodes and both") {
    const topo::Fabric f = two_dgx_a100();
    // Two GPUs over NVLink: 6.6 + 2 x 1 x 0.6 = 7.8 us.
    CHECK(small_allreduce_us(f, {"n0g0", "n0g1"}) == ddlsim::testing::approx(7.8).epsilon(1e-9));
    // The same GPU of two nodes: no intra-node step, 2 network steps: 6.6 + 2 x 2.7 = 12.0 us.
    CHECK(small_allreduce_us(f, {"n0g0", "n1g0"}) == ddlsim::testing::approx(12.0).epsilon(1e-9));
    // Four GPUs, two per node: 2 x 3 steps, 2 of them between the nodes, the other 4 NVLink steps raised to the
    // network overhead's 1.0 us: 6.6 + 4 x 1.0 + 2 x 2.7 = 16.0 us.
    CHECK(small_allreduce_us(f, {"n0g0", "n0g1", "n1g0", "n1g1"}) == ddlsim::testing::approx(16.0).epsilon(1e-9));
    // One GPU: nothing to wait for.
    CHECK(small_allreduce_us(f, {"n0g0"}) == 0.0);
    // The bandwidth term: 2(r - 1)/r bytes per byte at half the hop's bandwidth; r = 2 over one node's links.
    std::vector<topo::Vertex> pair{*f.find("n0g0"), *f.find("n0g1")};
    const double hop = f.path_bandwidth(pair[0], pair[1]).bytes_per_s();
    CHECK(topo::nccl_small_allreduce(f, pair).seconds_per_byte ==
          ddlsim::testing::approx(1.0 / (0.5 * hop)).epsilon(1e-12));
}

TEST_CASE("sync batchnorm: each BatchNorm layer pays one small all-reduce forward and one backward") {
    // ResNet-50 on two GPUs of one DGX A100, the NVLink links ideal (their nominal 300 GB/s): bn_group 2 adds to the
    // compute of an iteration 2 x sum over BatchNorms of (7.8 us + 8 C x 1 / (0.5 x 300 GB/s)), C each one's
    // channels.
    const models::Workload rn50 = models::builtin_workload("resnet50").value();
    double batchnorms = 0.0, channels = 0.0, last_cols = 0.0;
    for (const models::Layer& l : rn50.layers)
        for (const models::LayerPart& p : l.parts) {
            if (p.kind == models::PartKind::conv) last_cols = p.cols;
            if (p.kind == models::PartKind::norm) {
                batchnorms += 1.0;
                channels += last_cols;
            }
        }
    CHECK(batchnorms == 53);
    const double bandwidth = dgx_a100().gpu_bandwidth.bytes_per_s();
    const double expected = 2.0 * (batchnorms * 7.8e-6 + 8.0 * channels / (0.5 * bandwidth));
    const double local = testing::run_first_job(two_gpus(0)).compute_time_s;
    CHECK(testing::run_first_job(two_gpus(1)).compute_time_s == local);  // 1: each GPU its own statistics
    // Simulated times are whole picoseconds per kernel, so the difference of two iterations carries up to a
    // nanosecond of rounding: 1e-6 of the 0.84 ms expected.
    CHECK(testing::run_first_job(two_gpus(2)).compute_time_s - local ==
          ddlsim::testing::approx(expected).epsilon(1e-6));
}

TEST_CASE("sync batchnorm: an evaluation's forward does not wait for the group") {
    // Evaluation runs BatchNorm on its running statistics: each evaluation costs the same forward passes with and
    // without bn_group, while training steps pay the waits.
    auto with_training = [](int bn_group) {
        json j = two_gpus(bn_group);
        j["training"] = {{"samples_to_target", 1000000},
                         {"epoch_samples", 100000},
                         {"evaluation", {{"every_epochs", 1}, {"samples", 50000}}}};
        return scenario::run_scenario(scenario::load_scenario(j));
    };
    const auto local = with_training(1).time_to_train.at(0);
    const auto synced = with_training(2).time_to_train.at(0);
    REQUIRE(local.has_value());
    REQUIRE(synced.has_value());
    CHECK(local->evaluation_each_s > 0.0);
    CHECK(synced->evaluation_each_s == ddlsim::testing::approx(local->evaluation_each_s).epsilon(1e-12));
    CHECK(synced->training_s > local->training_s);
}

TEST_CASE("sync batchnorm: refused where it cannot apply") {
    json j = two_gpus(2);
    j["model"] = "vgg16";  // no BatchNorm
    CHECK(testing::refused_at(j) == "$.bn_group");
    j = two_gpus(2);
    j["workers"] = 3;
    j["bn_group"] = 2;  // not a divisor of the workers
    CHECK(testing::refused_at(j) == "$.bn_group");
    j = two_gpus(2);
    j["architecture"] = {{"kind", "ps"}};
    j["sync"] = {{"kind", "asp"}};  // a group steps together
    CHECK(testing::refused_at(j) == "$.bn_group");
    j = two_gpus(2);
    j["bn_group"] = 0;
    CHECK(testing::refused_at(j) == "$.bn_group");
}
