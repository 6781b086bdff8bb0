// Overlap (WFBP, fusion, MG-WFBP, priority), compression on the wire, and
// the timeline, each against a hand-derived expectation.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/trace.hpp"
#include "tests/support/support.hpp"

using nlohmann::json;
using namespace ddlsim;

namespace {

constexpr double kL = 5e-6;  // per-link latency (s)

struct L {
    double bytes, fwd, bwd;
};

json layered(int n, const std::vector<L>& layers, double gbps, const json& overlap) {
    json ls = json::array();
    for (std::size_t i = 0; i < layers.size(); ++i)
        ls.push_back(testing::gradient_layer(fmt::format("l{}", i), layers[i].bytes, layers[i].fwd, layers[i].bwd));
    json j = testing::star_scenario({.workers = n,
                                     .model = {{"layers", ls}},
                                     .batch_size = 1,
                                     .iterations = 5,
                                     .bandwidth = fmt::format("{}Gbps", gbps),
                                     .transport = "ideal",
                                     .architecture = testing::ring_allreduce()});
    j["overlap"] = overlap;
    return j;
}

models::JobResult run(const json& j) {
    return scenario::run_scenario(scenario::load_scenario(j)).jobs.front();
}

double ring_time(int n, double S, double gbps) {
    return 2.0 * (n - 1) * (2 * kL + S / (n * gbps * 1e9 / 8));
}

}  // namespace

TEST_CASE("wfbp: a 3-layer model's iteration follows the pipeline recurrence") {
    // Backward runs l2, l1, l0; layer l's all-reduce starts when its gradient is ready and
    // the previous all-reduce is done: e_l = max(ready_l, e_prev) + c_l; iteration = e_last.
    const int n = 4;
    const double gbps = 10;
    const std::vector<L> layers{{20e6, 0.004, 0.008}, {4e6, 0.003, 0.006}, {40e6, 0.002, 0.004}};
    for (const char* model : {"flow", "analytic"}) {
        CAPTURE(model);
        json j = layered(n, layers, gbps, {{"wfbp", true}});
        j["network"]["model"] = model;
        double fwd = 0.0;
        for (const auto& l : layers) fwd += l.fwd;
        double ready = fwd, end = 0.0;
        for (int l = 2; l >= 0; --l) {
            ready += layers[l].bwd;
            end = std::max(ready, end) + ring_time(n, layers[l].bytes, gbps);
        }
        const auto r = run(j);
        CHECK(r.iteration_time_s == ddlsim::testing::approx(end).epsilon(1e-6));
        CHECK(r.collectives_per_iteration == ddlsim::testing::approx(3));
        // Without WFBP: compute, then one all-reduce of everything.
        j["overlap"] = json::object();
        CHECK(run(j).iteration_time_s == ddlsim::testing::approx(fwd + 0.018 + ring_time(n, 64e6, gbps)).epsilon(1e-6));
    }
}

TEST_CASE("fusion buffer: the number of collectives is the computed bucket count") {
    // Ten 4 MB layers, buckets closed once they hold >= 10 MB: 3 + 3 + 3 + 1 tensors.
    std::vector<L> layers(10, L{4e6, 0.001, 0.002});
    json j = layered(4, layers, 10, {{"wfbp", true}, {"fusion", "buffer"}, {"bucket_size", "10MB"}});
    const auto s = scenario::load_scenario(j);
    const auto rr = scenario::run_scenario(s);
    CHECK(rr.jobs.front().collectives_per_iteration == ddlsim::testing::approx(4));
    // A ring all-reduce is 2(n-1)n transfers: 4 collectives x 24 x 5 iterations.
    CHECK(rr.transfers == 4u * 24u * 5u);
    j["overlap"]["bucket_size"] = "100MB";
    CHECK(run(j).collectives_per_iteration == ddlsim::testing::approx(1));
    j["overlap"] = {{"wfbp", true}};
    CHECK(run(j).collectives_per_iteration == ddlsim::testing::approx(10));
    // Horovod cycles: tensors ready within one 5 ms cycle (backward 2 ms each) are fused.
    j["overlap"] = {{"wfbp", true}, {"fusion", "buffer"}, {"bucket_size", "64MB"}, {"cycle_time", "5ms"}};
    // At 100 Gbit/s a buffer's all-reduce (8-12 MB: under 2 ms) ends within its cycle. Ready at 2,4,...,20 ms:
    // cycles at 5, 10, 15, 20 ms fuse 2 + 3 + 2 + 3 tensors = 4 buffers.
    j["network"]["bandwidth"] = "100Gbps";
    CHECK(run(j).collectives_per_iteration == ddlsim::testing::approx(4));
    // At 10 Gbit/s a collective outlasts the cycle and the next cycle waits for it (Horovod's loop runs one
    // cycle at a time): the 5 ms cycle fuses 2 tensors (8 MB: 2(n-1)/n x 8 MB / 1.25 GB/s = 9.6 ms, ends at
    // 14.66 ms); the next starts then with the 5 tensors ready by 14 ms (20 MB, 24 ms, ends 38.7 ms); the last
    // fuses the remaining 3: 3 buffers.
    j["network"]["bandwidth"] = "10Gbps";
    CHECK(run(j).collectives_per_iteration == ddlsim::testing::approx(3));
}

TEST_CASE("mgwfbp: merges small layers (start-up dominated) and keeps large ones apart") {
    // 20 tiny layers on a high-latency fabric: merging saves 19 start-ups.
    std::vector<L> tiny(20, L{4e3, 0.0001, 0.0002});
    json j = layered(8, tiny, 10, {{"fusion", "mgwfbp"}});
    j["network"]["latency"] = "50us";
    const auto merged = run(j);
    CHECK(merged.collectives_per_iteration < 5);
    j["overlap"] = {{"wfbp", true}};
    const auto wfbp = run(j);
    CHECK(merged.iteration_time_s < wfbp.iteration_time_s);
    // Large layers with long backward gaps: each all-reduce finishes before the next gradient, no merge.
    std::vector<L> big(4, L{4e6, 0.01, 0.05});
    json k = layered(4, big, 100, {{"fusion", "mgwfbp"}});
    CHECK(run(k).collectives_per_iteration == ddlsim::testing::approx(4));
}

TEST_CASE("priority: the next forward starts earlier than with FIFO WFBP") {
    // The first layer is small and produced last: FIFO sends it after the big ones; priority
    // first. Comm-bound on 1 Gbps so the difference is large.
    const std::vector<L> layers{{1e6, 0.002, 0.004}, {30e6, 0.002, 0.004}, {30e6, 0.002, 0.004}};
    auto first_forward_of_second_iteration = [&](const json& overlap) {
        json j = layered(4, layers, 1, overlap);
        j["iterations"] = 2;
        sim::Trace trace;
        (void)scenario::run_scenario(scenario::load_scenario(j), &trace);
        const json t = json::parse(trace.json());
        std::vector<double> starts;
        for (const auto& e : t["traceEvents"])
            if (e["ph"] == "X" && e["name"] == "fwd l0" && e["pid"] == 1 && e["tid"] == 0)
                starts.push_back(e["ts"].get<double>());
        REQUIRE(starts.size() == 2);
        return starts[1];
    };
    const double fifo = first_forward_of_second_iteration({{"wfbp", true}});
    const double prio = first_forward_of_second_iteration({{"priority", true}, {"partition_size", "2MB"}});
    CHECK(prio < fifo);
    // FIFO: l0's all-reduce waits for both 30 MB ones; priority lets it jump the queue once
    // the partition in flight ends, so l0 is updated well before the 60 MB have gone.
    CHECK(fifo - prio > 1e6 * ring_time(4, 30e6, 1) * 0.5);
}

TEST_CASE("topk: all-gather puts (n-1) n 8 d params bytes on the wire") {
    for (int n : {4, 8, 16}) {
        for (double d : {0.01, 0.001}) {
            CAPTURE(n);
            CAPTURE(d);
            const double params = 10e6;
            json j = layered(n, {{params * 4, 0.0, 0.0}}, 10, json::object());
            j["compression"] = {{"kind", "topk"}, {"density", d}};
            CHECK(run(j).bytes_on_wire_per_iteration == ddlsim::testing::approx((n - 1.0) * n * 8 * d * params));
        }
    }
}

TEST_CASE("qsgd at 8 bits moves a quarter of the dense bytes, plus one 4-byte norm per tensor") {
    const int n = 8;
    const double S = 40e6;
    json j = layered(n, {{S, 0.0, 0.0}}, 10, json::object());
    const double dense = run(j).bytes_on_wire_per_iteration;
    CHECK(dense == ddlsim::testing::approx(2.0 * (n - 1) * S));
    j["compression"] = {{"kind", "qsgd"}, {"bits", 8}};
    CHECK(run(j).bytes_on_wire_per_iteration == ddlsim::testing::approx(2.0 * (n - 1) * (S / 4 + 4)));
    j["compression"] = {{"kind", "fp16"}};
    CHECK(run(j).bytes_on_wire_per_iteration == ddlsim::testing::approx(2.0 * (n - 1) * S / 2));
}

TEST_CASE("sparse all-gather beats the dense ring only below a density of about 1/n") {
    const int n = 16;
    const double S = 100e6;
    json j = layered(n, {{S, 0.0, 0.0}}, 10, json::object());
    const double dense = run(j).iteration_time_s;
    auto topk = [&](double d) {
        j["compression"] = {{"kind", "topk"}, {"density", d}, {"cost_scale", 1e-9}};
        return run(j).iteration_time_s;
    };
    // (n-1)(2L + 8 d N / B) vs 2(n-1)(2L + 4N/(nB)): equal bandwidth terms at d = 1/n.
    CHECK(topk(0.5 / n) < dense);
    CHECK(topk(2.0 / n) > dense);
    CHECK(topk(0.5 / n) ==
          ddlsim::testing::approx((n - 1) * (2 * kL + 8 * (0.5 / n) * (S / 4) / 1.25e9)).epsilon(1e-4));
}

TEST_CASE("codec work is on the critical path: encode + decode add to the iteration") {
    json j = layered(4, {{40e6, 0.0, 0.0}}, 10, json::object());
    j["compression"] = {{"kind", "topk"}, {"density", 0.01}};
    const auto r1 = run(j);
    j["compression"]["cost_scale"] = 2.0;
    const auto r2 = run(j);
    CHECK(r1.codec_time_s > 0.0);
    CHECK(r2.codec_time_s == ddlsim::testing::approx(2 * r1.codec_time_s));
    CHECK(r2.iteration_time_s - r1.iteration_time_s == ddlsim::testing::approx(r1.codec_time_s).epsilon(1e-6));
}

TEST_CASE("powersgd: two all-reduces of P and Q, gtopk: a tree of k-sparse messages") {
    json j = layered(4, {{4e6, 0.0, 0.0}}, 10, json::object());
    j["compression"] = {{"kind", "powersgd"}, {"rank", 4}};
    const auto p = run(j);
    CHECK(p.collectives_per_iteration == ddlsim::testing::approx(2));
    CHECK(p.bytes_on_wire_per_iteration < 0.05 * 2 * 3 * 4e6);
    j["compression"] = {{"kind", "gtopk"}, {"density", 0.01}};
    const auto g = run(j);
    // gTopKAllReduce: 2(n-1) messages of k pairs (8 bytes each).
    CHECK(g.bytes_on_wire_per_iteration == ddlsim::testing::approx(2.0 * 3 * 8 * 0.01 * 1e6));
}

TEST_CASE("trace: per-worker and per-link tracks, WFBP communication overlaps backward") {
    const std::vector<L> layers{{20e6, 0.004, 0.008}, {20e6, 0.004, 0.008}, {20e6, 0.004, 0.008}};
    json j = layered(2, layers, 10, {{"wfbp", true}});
    sim::Trace trace;
    (void)scenario::run_scenario(scenario::load_scenario(j), &trace);
    const json t = json::parse(trace.json());
    int names = 0, link_spans = 0, worker1_spans = 0;
    double bwd_end_l0 = 0.0, first_comm_start = 1e18;
    for (const auto& e : t["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "thread_name") ++names;
        if (e["ph"] != "X") continue;
        if (e["pid"] == 1000000) ++link_spans;
        if (e["pid"] == 1 && e["tid"] == 2) ++worker1_spans;
        if (e["pid"] == 1 && e["tid"] == 0 && e["name"] == "bwd l0" && bwd_end_l0 == 0.0)
            bwd_end_l0 = e["ts"].get<double>() + e["dur"].get<double>();
        if (e["pid"] == 1 && e["tid"] == 1 && e["cat"] == "communication")
            first_comm_start = std::min(first_comm_start, e["ts"].get<double>());
    }
    // 2 workers x (compute, communication), and the directed host links the run drew: under flow classes (the two
    // workers are one class) those of the representative's transfers, its link to the switch and back.
    CHECK(names >= 4 + 2);
    CHECK(link_spans > 0);
    CHECK(worker1_spans > 0);  // every worker of a data-parallel job computes, and is drawn
    // The first gradient message left before backward finished: overlap is visible.
    CHECK(first_comm_start < bwd_end_l0);
}
