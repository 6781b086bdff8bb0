// The convergence replay (validate/replay.hpp): every op of the schedule against the same
// update computed by hand with the Model API; a simulated BSP schedule against plain
// synchronous SGD; determinism; error feedback; evaluation points and early stop.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "validate/convergence.hpp"
#include "validate/replay.hpp"

using namespace ddlsim;
using namespace ddlsim::validate;
using Op = models::OpKind;
using Vec = std::vector<float>;

namespace {

constexpr std::uint64_t kSeed = 3;
constexpr float kLr = 0.1F;
constexpr std::uint32_t kBatch = 8;

ReplayData tiny_data() {
    scenario::ConvergenceSpec c;
    c.task = "synthetic_mlp";
    c.train_samples = 64;
    c.test_samples = 40;
    return task_data(c);
}

ReplayOptions tiny_options() {
    ReplayOptions o;
    o.model = ModelKind::mlp;
    o.learning_rate = kLr;
    o.batch_size = kBatch;
    o.seed = kSeed;
    return o;
}

// The hand-run side: the model the replay starts from, and each worker's own batch stream.
struct Hand {
    explicit Hand(std::uint32_t workers) : data(tiny_data()), model(make_model(ModelKind::mlp, Backend::cpu, kSeed)) {
        p0.resize(model->size());
        model->get_params(p0);
        for (std::uint32_t w = 0; w < workers; ++w) samplers.emplace_back(data.train_size, workers, w, kSeed);
    }
    // The gradient at `p` on worker w's next batch.
    Vec grad(std::uint32_t w, const Vec& p) {
        const Batch b = data.train->gather(samplers[w].next(kBatch));
        model->set_params(p);
        (void)model->forward_backward(b);
        return Vec(model->gradient().begin(), model->gradient().end());
    }
    // p - lr * g, through Model::apply_gradient.
    Vec step(const Vec& p, const Vec& g, float lr) {
        model->set_params(p);
        model->apply_gradient(g, lr);
        Vec out(p.size());
        model->get_params(out);
        return out;
    }
    ReplayData data;
    std::unique_ptr<Model> model;
    Vec p0;
    std::vector<ShardSampler> samplers;
};

Vec mean(const std::vector<Vec>& vs) {
    Vec m(vs.front().size(), 0.0F);
    for (const auto& v : vs)
        for (std::size_t i = 0; i < m.size(); ++i) m[i] += v[i];
    for (auto& x : m) x /= static_cast<float>(vs.size());
    return m;
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
    REQUIRE(a.size() == b.size());
    double d = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, static_cast<double>(std::fabs(a[i] - b[i])));
    return d;
}

double norm(std::span<const float> a) {
    double s = 0.0;
    for (float x : a) s += static_cast<double>(x) * x;
    return std::sqrt(s);
}

models::Schedule schedule_of(std::uint32_t workers) {
    models::Schedule s;
    s.workers = workers;
    return s;
}

void apply_all(Replayer& r, const models::Schedule& s) {
    for (const auto& op : s.ops) r.apply(op);
}

// A small scenario: `workers` workers of a one-layer custom model on a star, the synthetic task.
nlohmann::json tiny_scenario(std::uint32_t workers, const nlohmann::json& sync, std::uint32_t iterations) {
    return {{"workers", workers},
            {"model", {{"layers", {{{"name", "fc"}, {"params", 235146}, {"fwd_time", "1ms"}, {"bwd_time", "2ms"}}}}}},
            {"batch_size", 32},
            {"device", "V100"},
            {"network", {{"topology", "star"}, {"bandwidth", "10Gbps"}, {"latency", "5us"}}},
            {"architecture", {{"kind", "allreduce"}, {"algorithm", "ring"}}},
            {"sync", sync},
            {"seed", kSeed},
            {"convergence",
             {{"task", "synthetic_mlp"},
              {"target_accuracy", 0.99},
              {"max_iterations", iterations},
              {"learning_rate", kLr},
              {"batch_size", kBatch},
              {"eval_every", 10},
              {"test_samples", 40},
              {"train_samples", 64}}}};
}

}  // namespace

TEST_CASE("replay: grad 0, grad 1, sync {0,1} gives X - lr * the mean of the two gradients, everywhere") {
    auto s = schedule_of(2);
    const auto all = s.add_set({0, 1});
    s.add(Op::grad, 0, 0, 0, 0.1);
    s.add(Op::grad, 1, 0, 0, 0.1);
    s.add(Op::sync, 0, all, 0, 0.2);
    Replayer r(s, tiny_data(), tiny_options());
    apply_all(r, s);

    Hand h(2);
    const Vec g0 = h.grad(0, h.p0), g1 = h.grad(1, h.p0);
    const Vec expected = h.step(h.p0, mean({g0, g1}), kLr);
    CHECK(max_abs_diff(r.worker_gradient(0), g0) == 0.0);
    CHECK(max_abs_diff(r.worker_gradient(1), g1) == 0.0);
    CHECK(max_abs_diff(r.global_params(), expected) < 1e-6);
    CHECK(max_abs_diff(r.worker_params(0), expected) < 1e-6);
    CHECK(max_abs_diff(r.worker_params(1), expected) < 1e-6);
    CHECK(max_abs_diff(h.p0, expected) > 1e-4);  // the step did move the model
    CHECK(r.gradients() == 2);
}

TEST_CASE("replay: push applies lr times a (stale) gradient to X, pull copies X") {
    auto s = schedule_of(2);
    s.add(Op::grad, 0, 0, 0, 0.1);
    s.add(Op::grad, 1, 0, 0, 0.1);
    s.add(Op::push, 1, 0, 0, 0.2);
    s.add(Op::pull, 1, 0, 0, 0.2);
    s.add(Op::grad, 1, 0, 1, 0.3);  // at X after worker 1's push
    s.add(Op::push, 0, 0, 0, 0.4);  // worker 0's gradient is one update stale
    s.add(Op::pull, 0, 0, 0, 0.4);
    Replayer r(s, tiny_data(), tiny_options());
    apply_all(r, s);

    Hand h(2);
    const Vec g0 = h.grad(0, h.p0), g1 = h.grad(1, h.p0);
    const Vec x1 = h.step(h.p0, g1, kLr);     // X after push 1; pulled by worker 1
    const Vec g1b = h.grad(1, x1);            // worker 1's second gradient, at x1
    const Vec x_final = h.step(x1, g0, kLr);  // push 0 (computed at p0)
    CHECK(max_abs_diff(r.worker_gradient(1), g1b) == 0.0);
    CHECK(max_abs_diff(r.worker_params(1), x1) < 1e-6);
    CHECK(max_abs_diff(r.global_params(), x_final) < 1e-6);
    CHECK(max_abs_diff(r.worker_params(0), x_final) < 1e-6);
    CHECK(max_abs_diff(r.consensus(), x_final) == 0.0);  // X: the schedule pushes
}

TEST_CASE("replay: local steps and averaging (Local SGD), the consensus is the mean of the workers") {
    auto s = schedule_of(2);
    const auto all = s.add_set({0, 1});
    for (std::uint32_t i = 0; i < 2; ++i) {
        s.add(Op::grad, 0, 0, i, 0.1);
        s.add(Op::grad, 1, 0, i, 0.1);
        s.add(Op::local, 0, 0, i, 0.2);
        s.add(Op::local, 1, 0, i, 0.2);
    }
    Replayer r(s, tiny_data(), tiny_options());
    apply_all(r, s);
    Hand h(2);
    Vec x0 = h.p0, x1 = h.p0;
    for (int i = 0; i < 2; ++i) {
        const Vec g0 = h.grad(0, x0), g1 = h.grad(1, x1);
        x0 = h.step(x0, g0, kLr);
        x1 = h.step(x1, g1, kLr);
    }
    CHECK(max_abs_diff(r.worker_params(0), x0) < 1e-6);
    CHECK(max_abs_diff(r.worker_params(1), x1) < 1e-6);
    CHECK(max_abs_diff(r.consensus(), mean({x0, x1})) < 1e-6);  // no sync/push/collect: the mean

    r.apply({Op::average, 0, all, 0, 1, 0.3});
    CHECK(max_abs_diff(r.worker_params(0), mean({x0, x1})) < 1e-6);
    CHECK(max_abs_diff(r.worker_params(1), mean({x0, x1})) < 1e-6);
    CHECK(max_abs_diff(r.global_params(), h.p0) == 0.0);  // X untouched
}

TEST_CASE("replay: FedAvg round: pull, local steps on the clients, collect averages them into X") {
    auto s = schedule_of(3);
    const auto clients = s.add_set({0, 2});
    s.add(Op::pull, 0, 0, 0, 0.0);
    s.add(Op::pull, 2, 0, 0, 0.0);
    for (int e = 0; e < 2; ++e) {  // E = 2 local steps each
        s.add(Op::grad, 0, 0, 0, 0.1);
        s.add(Op::local, 0, 0, 0, 0.1);
        s.add(Op::grad, 2, 0, 0, 0.1);
        s.add(Op::local, 2, 0, 0, 0.1);
    }
    s.add(Op::collect, 0, clients, 0, 0.5);
    Replayer r(s, tiny_data(), tiny_options());
    apply_all(r, s);
    Hand h(3);
    Vec x0 = h.p0, x2 = h.p0;
    for (int e = 0; e < 2; ++e) {
        x0 = h.step(x0, h.grad(0, x0), kLr);
        x2 = h.step(x2, h.grad(2, x2), kLr);
    }
    CHECK(max_abs_diff(r.global_params(), mean({x0, x2})) < 1e-6);
    CHECK(max_abs_diff(r.worker_params(1), h.p0) == 0.0);  // not sampled this round
    CHECK(r.gradients() == 4);
}

TEST_CASE("replay: mix on a ring of 4 averages each model with its two neighbours, weight 1/3 each") {
    // Metropolis-Hastings on the 2-regular ring: w_ij = 1 / (1 + max(2, 2)) = 1/3, w_ii = 1 - 2/3 = 1/3.
    auto s = schedule_of(4);
    for (std::uint32_t w = 0; w < 4; ++w) s.add(Op::grad, w, 0, 0, 0.1);
    for (std::uint32_t w = 0; w < 4; ++w) s.add(Op::local, w, 0, 0, 0.2);
    s.add(Op::mix, 0, 0, 0, 0.3, 0);
    auto o = tiny_options();
    o.graph = topo::GossipGraph::ring;
    Replayer r(s, tiny_data(), o);
    apply_all(r, s);
    Hand h(4);
    std::vector<Vec> x(4);
    for (std::uint32_t w = 0; w < 4; ++w) x[w] = h.step(h.p0, h.grad(w, h.p0), kLr);
    for (std::uint32_t w = 0; w < 4; ++w) {
        CAPTURE(w);
        const Vec expected = mean({x[(w + 3) % 4], x[w], x[(w + 1) % 4]});
        CHECK(max_abs_diff(r.worker_params(w), expected) < 1e-6);
    }
    CHECK(max_abs_diff(r.worker_params(0), r.worker_params(2)) > 1e-6);  // 1 and 3 are not 0's neighbours' average
}

TEST_CASE("replay: sync through signSGD sends mean|g| * sign(g) per worker") {
    auto s = schedule_of(2);
    const auto all = s.add_set({0, 1});
    s.add(Op::grad, 0, 0, 0, 0.1);
    s.add(Op::grad, 1, 0, 0, 0.1);
    s.add(Op::sync, 0, all, 0, 0.2);
    auto o = tiny_options();
    o.codec.kind = CodecKind::signsgd;
    Replayer r(s, tiny_data(), o);
    apply_all(r, s);
    Hand h(2);
    std::vector<Vec> sent;
    for (std::uint32_t w = 0; w < 2; ++w) {
        const Vec g = h.grad(w, h.p0);
        double l1 = 0.0;
        for (float v : g) l1 += std::fabs(v);
        const auto scale = static_cast<float>(l1 / static_cast<double>(g.size()));
        Vec d(g.size());
        for (std::size_t i = 0; i < g.size(); ++i) d[i] = g[i] < 0.0F ? -scale : scale;
        sent.push_back(d);
    }
    CHECK(max_abs_diff(r.global_params(), h.step(h.p0, mean(sent), kLr)) < 1e-6);
    CHECK(r.residual_norm(0) == 0.0);  // no error feedback
}

TEST_CASE("replay: a simulated BSP schedule replays exactly as synchronous SGD run by hand") {
    constexpr std::uint32_t kWorkers = 3, kIters = 6;
    const auto sc = scenario::load_scenario(tiny_scenario(kWorkers, {{"kind", "bsp"}}, kIters));
    const auto run = scenario::run_scenario(sc);
    REQUIRE(run.jobs.size() == 1);
    REQUIRE(run.jobs[0].schedule);
    const auto& sched = *run.jobs[0].schedule;
    // Per iteration: one grad per worker, then one sync of everyone.
    REQUIRE(sched.ops.size() == kIters * (kWorkers + 1));
    for (std::uint32_t i = 0; i < kIters; ++i) {
        for (std::uint32_t k = 0; k < kWorkers; ++k) CHECK(sched.ops[i * (kWorkers + 1) + k].kind == Op::grad);
        CHECK(sched.ops[i * (kWorkers + 1) + kWorkers].kind == Op::sync);
        CHECK(sched.ops[i * (kWorkers + 1) + kWorkers].iteration == i);
    }

    Replayer r(sched, task_data(*sc.jobs[0].convergence), replay_options(sc));
    apply_all(r, sched);
    Hand h(kWorkers);
    Vec x = h.p0;
    for (std::uint32_t i = 0; i < kIters; ++i) {
        std::vector<Vec> gs;
        for (std::uint32_t w = 0; w < kWorkers; ++w) gs.push_back(h.grad(w, x));
        x = h.step(x, mean(gs), kLr);
    }
    CHECK(max_abs_diff(r.global_params(), x) < 1e-5);
    for (std::uint32_t w = 0; w < kWorkers; ++w) CHECK(max_abs_diff(r.worker_params(w), x) < 1e-5);
}

TEST_CASE("replay: evaluation points at iteration 0, every eval_every iterations, at the end, and early stop") {
    const auto sc = scenario::load_scenario(tiny_scenario(2, {{"kind", "bsp"}}, 25));
    const auto run = scenario::run_scenario(sc);
    const auto& sched = *run.jobs[0].schedule;
    auto o = replay_options(sc);
    o.target_accuracy = 1.1;  // never reached
    auto res = replay(sched, task_data(*sc.jobs[0].convergence), o);
    REQUIRE(res.curve.size() == 4);
    CHECK(res.curve[0].iteration == 0);
    CHECK(res.curve[0].time_s == 0.0);
    CHECK(res.curve[1].iteration == 10);
    CHECK(res.curve[2].iteration == 20);
    CHECK(res.curve[3].iteration == 25);
    // The point at iteration 10 comes after iteration 9's sync, the last op before iteration 10 begins.
    double t9 = 0.0;
    for (const auto& op : sched.ops)
        if (op.iteration <= 9) t9 = std::max(t9, op.time_s);
    CHECK(res.curve[1].time_s == t9);
    double t_last = 0.0;
    for (const auto& op : sched.ops) t_last = std::max(t_last, op.time_s);
    CHECK(res.curve[3].time_s == t_last);
    CHECK(t_last <= run.simulated_time_s);
    CHECK_FALSE(res.time_to_accuracy_s.has_value());
    CHECK(res.gradients == 50);
    CHECK(res.ops_applied == sched.ops.size());
    CHECK(res.curve[3].accuracy > res.curve[0].accuracy);  // it learns
    CHECK(res.curve[3].loss < res.curve[0].loss);

    // A target the first point already meets (its own accuracy): no op is applied.
    const double first_accuracy = res.curve[0].accuracy;
    o.target_accuracy = first_accuracy;
    res = replay(sched, task_data(*sc.jobs[0].convergence), o);
    REQUIRE(res.curve.size() == 1);
    REQUIRE(res.time_to_accuracy_s.has_value());
    CHECK(*res.time_to_accuracy_s == 0.0);
    CHECK(*res.iterations_to_accuracy == 0);
    CHECK(res.ops_applied == 0);

    // A reachable target: the replay stops at the first point at or above it.
    o.target_accuracy = 0.5 * (first_accuracy + 1.0);
    res = replay(sched, task_data(*sc.jobs[0].convergence), o);
    REQUIRE(res.iterations_to_accuracy.has_value());
    CHECK(res.curve.back().accuracy >= o.target_accuracy);
    CHECK(res.curve.back().iteration == *res.iterations_to_accuracy);
    CHECK(res.curve.back().time_s == *res.time_to_accuracy_s);
    for (std::size_t k = 0; k + 1 < res.curve.size(); ++k) CHECK(res.curve[k].accuracy < o.target_accuracy);
}

TEST_CASE("replay: the same scenario and seed give the same curve, another seed another") {
    const auto j = tiny_scenario(4, {{"kind", "asp"}}, 20);
    auto jps = j;
    jps["architecture"] = {{"kind", "ps"}, {"servers", 1}};
    const auto sc = scenario::load_scenario(jps);
    const auto a = convergence_result(sc, scenario::run_scenario(sc));
    const auto b = convergence_result(sc, scenario::run_scenario(sc));
    // Compared as text: a diverging asynchronous run has NaN losses, which are never equal to themselves.
    CHECK(a.at("curve").dump() == b.at("curve").dump());
    CHECK(a.at("gradients") == b.at("gradients"));
    CHECK(a.at("gradients").get<std::uint64_t>() <= 4 * 20);  // fewer when the target stops it early
    CHECK(a.at("curve").size() >= 2);
    jps["seed"] = kSeed + 1;
    const auto sc2 = scenario::load_scenario(jps);
    const auto c = convergence_result(sc2, scenario::run_scenario(sc2));
    CHECK(a.at("curve").dump() != c.at("curve").dump());
    for (const char* k : {"task", "target_accuracy", "time_to_accuracy_s", "iterations_to_accuracy", "final_accuracy",
                          "curve", "gradients", "replay_wall_time_s"})
        CHECK(a.contains(k));
}

TEST_CASE("replay: error feedback keeps the residual bounded while training on compressed gradients") {
    constexpr std::uint32_t kWorkers = 2, kIters = 60;
    for (const std::string kind : {"ef_signsgd", "topk"}) {
        CAPTURE(kind);
        auto j = tiny_scenario(kWorkers, {{"kind", "bsp"}}, kIters);
        j["compression"] = {{"kind", kind}};
        if (kind == "topk") j["compression"] = {{"kind", kind}, {"density", 0.01}, {"error_feedback", true}};
        const auto sc = scenario::load_scenario(j);
        const auto run = scenario::run_scenario(sc);
        const auto& sched = *run.jobs[0].schedule;
        auto o = replay_options(sc);
        REQUIRE(o.codec.error_feedback);
        Replayer r(sched, task_data(*sc.jobs[0].convergence), o);
        std::vector<double> residual;  // worker 0's ||e|| after every sync
        double grad_sum = 0.0;         // sum of worker 0's ||g||
        for (const auto& op : sched.ops) {
            r.apply(op);
            if (op.kind == Op::grad && op.worker == 0) grad_sum += norm(r.worker_gradient(0));
            if (op.kind == Op::sync) residual.push_back(r.residual_norm(0));
        }
        REQUIRE(residual.size() == kIters);
        const double early = *std::max_element(residual.begin(), residual.begin() + 20);
        const double late = *std::max_element(residual.begin() + 40, residual.end());
        CHECK(std::isfinite(late));
        CHECK(early > 0.0);
        CHECK(late <= 2.0 * early);     // it does not grow with the number of steps
        CHECK(late < 0.25 * grad_sum);  // nor accumulate the gradients it withholds
        const auto loss_accuracy = r.evaluate(r.consensus());
        CHECK(loss_accuracy.second > 0.5);  // and the model trains
    }
}

TEST_CASE("replay: a Fashion-MNIST task without the data files is a scenario error naming the package") {
    scenario::ConvergenceSpec c;
    c.task = "fashion_mnist_mlp";
    try {
        (void)task_data(c, "/nonexistent/fashion-mnist");
        FAIL("no error");
    } catch (const scenario::ScenarioError& e) {
        CHECK(e.path() == "$.convergence.task");
        CHECK(std::string(e.what()).find("dataset-fashion-mnist") != std::string::npos);
    }
}

TEST_CASE("replay: a bad op is refused") {
    auto s = schedule_of(2);
    s.add(Op::local, 0, 0, 0, 0.1);  // no gradient yet
    Replayer r(s, tiny_data(), tiny_options());
    CHECK_THROWS_AS(r.apply(s.ops[0]), std::invalid_argument);
    CHECK_THROWS_AS(r.apply({Op::grad, 5, 0, 0, 0, 0.0}), std::invalid_argument);
    CHECK_THROWS_AS(r.apply({Op::sync, 0, 7, 0, 0, 0.0}), std::invalid_argument);
}

TEST_CASE("replay: a simulated FedAvg round is pull, E local steps per sampled client, then collect") {
    constexpr std::uint32_t kRounds = 3, kClients = 2, kSteps = 3;
    auto j = tiny_scenario(4, {{"kind", "fedavg"}, {"clients_per_round", kClients}, {"local_steps", kSteps}}, kRounds);
    j["architecture"] = {{"kind", "ps"}, {"servers", 1}};
    const auto sc = scenario::load_scenario(j);
    const auto run = scenario::run_scenario(sc);
    const auto& sched = *run.jobs[0].schedule;
    for (std::uint32_t r = 0; r < kRounds; ++r) {
        CAPTURE(r);
        std::size_t pulls = 0, grads = 0, locals = 0, collects = 0;
        for (const auto& op : sched.ops) {
            if (op.iteration != r) continue;
            pulls += op.kind == Op::pull ? 1 : 0;
            grads += op.kind == Op::grad ? 1 : 0;
            locals += op.kind == Op::local ? 1 : 0;
            collects += op.kind == Op::collect ? 1 : 0;
        }
        CHECK(pulls == kClients);
        CHECK(grads == kClients * kSteps);
        CHECK(locals == kClients * kSteps);
        CHECK(collects == 1);
    }
    CHECK(sched.ops.back().kind == Op::collect);
    auto o = replay_options(sc);
    o.target_accuracy = 1.1;
    const auto res = replay(sched, task_data(*sc.jobs[0].convergence), o);
    CHECK(res.gradients == kRounds * kClients * kSteps);
    CHECK(res.curve.back().iteration == kRounds);
}
