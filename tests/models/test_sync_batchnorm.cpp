// SyncBatchNorm (job key bn_group): every BatchNorm layer all-reduces 8 bytes per channel within its group, forward
// and backward, on the critical path, at the cost NCCL's own model gives a small ring all-reduce with its LL protocol
// (topologies/transport.cpp [NCCL-T], NCCL 2.2x: 6.6 us + 2(r - m) x 0.6 us over NVLink (at least 1.0 us when the
// group spans nodes) + 2(m - 1) x 2.7 us over the network; half the bus bandwidth). Every expectation below is derived
// by hand from those constants.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>

#include "models/compute.hpp"
#include "models/workload.hpp"
#include "scenarios/run.hpp"
#include "sim/trace.hpp"
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

namespace {

// ResNet-50's BatchNorms and their channels.
struct BatchNorms {
    double count = 0.0, channels = 0.0;
};
BatchNorms resnet50_batchnorms() {
    const models::Workload rn50 = models::builtin_workload("resnet50").value();
    BatchNorms b;
    double last_cols = 0.0;
    for (const models::Layer& l : rn50.layers)
        for (const models::LayerPart& p : l.parts) {
            if (p.kind == models::PartKind::conv) last_cols = p.cols;
            if (p.kind == models::PartKind::norm) {
                b.count += 1.0;
                b.channels += last_cols;
            }
        }
    return b;
}

// One pass's (forward or backward) SyncBatchNorm all-reduces on two GPUs of one DGX A100 with ideal NVLink (its
// nominal 300 GB/s): each BatchNorm 7.8 us + 8 C x 1 / (0.5 x 300 GB/s), NCCL's LL model derived above.
double pair_pass_s() {
    const BatchNorms b = resnet50_batchnorms();
    return b.count * 7.8e-6 + 8.0 * b.channels / (0.5 * dgx_a100().gpu_bandwidth.bytes_per_s());
}

double iteration_s(const json& j) {
    return testing::run_first_job(j).iteration_time_s;
}

}  // namespace

TEST_CASE("sync batchnorm: on an idle fabric each BatchNorm's all-reduce costs NCCL's LL model, forward and backward") {
    // Without overlap the gradient all-reduce starts when backward ends, so nothing shares the NVLink links with the
    // statistics' rings: bn_group 2 adds to the iteration exactly 2 x the pass's closed form.
    CHECK(resnet50_batchnorms().count == 53);
    const double local = iteration_s(two_gpus(0));
    CHECK(iteration_s(two_gpus(1)) == local);  // 1: each GPU its own statistics
    // Simulated times are whole picoseconds per transfer and kernel, so the difference of two iterations carries up
    // to a nanosecond of rounding: 1e-6 of the 0.83 ms expected.
    const models::JobResult synced = testing::run_first_job(two_gpus(2));
    CHECK(synced.iteration_time_s - local == ddlsim::testing::approx(2.0 * pair_pass_s()).epsilon(1e-6));
    // The waits are communication, not compute: the compute is the same, the statistics' bytes are on the wire
    // (twice 8 C per BatchNorm and pass: LL's flags; a ring of two sends each rank's whole payload once).
    const models::JobResult alone = testing::run_first_job(two_gpus(0));
    CHECK(synced.compute_time_s == alone.compute_time_s);
    CHECK(synced.bytes_on_wire_per_iteration - alone.bytes_on_wire_per_iteration ==
          ddlsim::testing::approx(2.0 * 2.0 * 2.0 * 8.0 * resnet50_batchnorms().channels).epsilon(1e-12));
    CHECK(synced.collectives_per_iteration - alone.collectives_per_iteration == 2.0 * 53.0);
}

TEST_CASE("sync batchnorm: every micro-batch synchronises its statistics") {
    // Gradient accumulation of 2: two forward and two backward passes each wait for the all-reduces.
    json local = two_gpus(0), synced = two_gpus(2);
    local["gradient_accumulation"] = synced["gradient_accumulation"] = 2;
    CHECK(iteration_s(synced) - iteration_s(local) == ddlsim::testing::approx(4.0 * pair_pass_s()).epsilon(1e-6));
}

TEST_CASE("sync batchnorm: a sharded job waits for the same all-reduces") {
    // ZeRO-1: the reduce-scatter starts when backward ends, the all-gather after the update, so the statistics'
    // rings run alone, as in the replicated job.
    json local = two_gpus(0), synced = two_gpus(2);
    local["sharding"] = synced["sharding"] = {{"stage", 1}};
    CHECK(iteration_s(synced) - iteration_s(local) == ddlsim::testing::approx(2.0 * pair_pass_s()).epsilon(1e-6));
}

TEST_CASE("sync batchnorm: the statistics share the links with the gradients' buckets") {
    // Two single-GPU nodes on 10 Gbit/s NICs, DDP's buckets leaving during backward: a BatchNorm all-reduce issued
    // while a bucket's flows hold the NICs gets a max-min fair share of them and takes longer than the same layer's
    // forward all-reduce, which runs on the idle fabric (nothing else travels in the first forward). Folded into
    // compute, as before, both took the closed form.
    json j = {{"workers", 2},
              {"model", "resnet50"},
              {"batch_size", 16},
              {"iterations", 1},
              {"bn_group", 2},
              {"device", {{"name", "A100"}, {"precision", "fp16"}}},
              {"overlap", {{"fusion", "buffer"}, {"bucket_size", "25MB"}, {"compute_slowdown", 0}}},
              {"network",
               {{"topology", "two_tier"},
                {"gpus_per_node", 1},
                {"intra_bandwidth", "100GBps"},
                {"intra_latency", "1us"},
                {"bandwidth", "10Gbps"},
                {"latency", "2us"}}}};
    sim::Trace trace;
    (void)scenario::run_scenario(scenario::load_scenario(j), &trace);
    const json t = json::parse(trace.json());
    std::map<std::string, double> forward, backward;  // rank 0's calls by layer: duration in us
    for (const json& e : t.is_object() ? t.at("traceEvents") : t) {
        if (e.value("ph", "") != "X" || e.value("tid", -1) != 1) continue;
        const std::string name = e.value("name", "");
        for (const auto& [prefix, into] : {std::pair{std::string("batchnorm it0 forward "), &forward},
                                           std::pair{std::string("batchnorm it0 backward "), &backward}})
            if (name.rfind(prefix, 0) == 0) (*into)[name.substr(prefix.size())] = e.at("dur").get<double>();
    }
    REQUIRE(forward.size() == 53);
    REQUIRE(backward.size() == 53);
    // Each of the ring's two steps sends half the call's 2 x 8 C bytes (LL's lines) through a NIC of 10 Gbit/s x TCP's
    // 1448/1538 goodput; beside one bucket's flow it gets half of it, so a call the bucket overlaps throughout takes
    // 2 x 8 C / B longer; one overlapped in part, less; one before the first bucket leaves, nothing longer.
    const double nic = 10e9 / 8.0 * 1448.0 / 1538.0;
    std::size_t shared_throughout = 0;
    for (const auto& [layer, fwd] : forward) {
        const double channels = std::stod(layer.substr(layer.find('(') + 1));
        const double extra = backward.at(layer) - fwd, shared = 2.0 * 8.0 * channels / nic * 1e6;
        CHECK(extra >= -1e-9);
        CHECK(extra <= shared * (1.0 + 1e-4));
        if (extra == ddlsim::testing::approx(shared).epsilon(1e-4)) ++shared_throughout;  // picosecond rounding
    }
    // All but the last layers' (the first in backward: no bucket has left yet) and the one a bucket starts under.
    CHECK(shared_throughout >= 49);
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

TEST_CASE("sync batchnorm: a step whose all-reduces would not fit in the programs' memory is refused") {
    // 10^6 micro-batches x 53 BatchNorms x 2 passes: a hundred million calls.
    json j = two_gpus(2);
    j["gradient_accumulation"] = 1000000;
    CHECK(testing::refused_at(j) == "$.gradient_accumulation");
    j["gradient_accumulation"] = 8;
    CHECK(testing::refused_at(j) == "accepted");
}
