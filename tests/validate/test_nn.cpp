// The network library: shapes, gradients against finite differences, learning, timing.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tests/support/support.hpp"
#include "validate/nn.hpp"

using namespace ddlsim::validate;

namespace {

Batch small_batch(std::size_t n, std::uint64_t seed) {
    return synthetic_dataset(n, seed).slice(0, n);
}

// Central differences on the `count` parameters of largest |gradient| in every layer.
void check_gradient(ModelKind kind) {
    auto m = make_model(kind, Backend::cpu, 7);
    const Batch b = small_batch(4, 11);
    (void)m->forward_backward(b);
    const std::vector<float> g(m->gradient().begin(), m->gradient().end());
    std::vector<float> p(m->size());
    m->get_params(p);
    for (const auto& layer : m->spec().layers) {
        std::vector<std::size_t> idx(layer.params);
        std::iota(idx.begin(), idx.end(), layer.offset);
        std::partial_sort(idx.begin(), idx.begin() + 3, idx.end(),
                          [&](std::size_t a, std::size_t c) { return std::fabs(g[a]) > std::fabs(g[c]); });
        for (int j = 0; j < 3; ++j) {
            const std::size_t i = idx[static_cast<std::size_t>(j)];
            const float eps = 1e-2F;
            auto q = p;
            q[i] = p[i] + eps;
            m->set_params(q);
            const double up = m->loss(b);
            q[i] = p[i] - eps;
            m->set_params(q);
            const double down = m->loss(b);
            const double numeric = (up - down) / (2.0 * eps);
            CAPTURE(layer.name);
            CAPTURE(i);
            CHECK(numeric == ddlsim::testing::approx(g[i]).epsilon(0.03).scale(0.0));
        }
        m->set_params(p);
    }
}

}  // namespace

TEST_CASE("model shapes: parameter counts and FLOPs per sample") {
    const auto mlp = model_spec(ModelKind::mlp);
    // 784*256+256 + 256*128+128 + 128*10+10
    CHECK(mlp.params == 235146);
    REQUIRE(mlp.layers.size() == 3);
    CHECK(mlp.layers[0].params == 200960);
    CHECK(mlp.layers[0].fwd_flops == 2.0 * 784 * 256);
    const auto cnn = model_spec(ModelKind::cnn);
    // conv1 16*1*9+16, conv2 32*16*9+32, fc 32*7*7*10+10
    CHECK(cnn.params == 160 + 4640 + 15690);
    REQUIRE(cnn.layers.size() == 3);
    CHECK(cnn.layers[1].fwd_flops == 2.0 * 32 * 16 * 9 * 14 * 14);
    CHECK(cnn.layers[2].offset == 4800);
}

TEST_CASE("initial parameters: He-uniform weights, zero biases, deterministic") {
    const auto spec = model_spec(ModelKind::mlp);
    const auto a = initial_params(spec, 1), b = initial_params(spec, 1), c = initial_params(spec, 2);
    CHECK(a == b);
    CHECK(a != c);
    const float limit = std::sqrt(6.0F / 784.0F);
    CHECK(std::all_of(a.begin(), a.begin() + 200704, [&](float v) { return std::fabs(v) <= limit; }));
    CHECK(std::all_of(a.begin() + 200704, a.begin() + 200960, [](float v) { return v == 0.0F; }));
}

TEST_CASE("MLP gradient matches central differences") {
    check_gradient(ModelKind::mlp);
}
TEST_CASE("CNN gradient matches central differences") {
    check_gradient(ModelKind::cnn);
}

TEST_CASE("SGD on a synthetic set: the loss falls and accuracy rises") {
    const Dataset train = synthetic_dataset(2000, 3);
    for (auto kind : {ModelKind::mlp, ModelKind::cnn}) {
        auto m = make_model(kind, Backend::cpu, 5);
        ShardSampler sampler(train.size(), 1, 0, 9);
        const double before = m->evaluate(train);
        double first = 0.0, last = 0.0;
        for (int step = 0; step < 60; ++step) {
            const double loss = m->forward_backward(train.gather(sampler.next(32)));
            const std::vector<float> g(m->gradient().begin(), m->gradient().end());
            m->apply_gradient(g, 0.05F);
            if (step == 0) first = loss;
            last = loss;
        }
        CAPTURE(model_name(kind));
        CHECK(last < 0.5 * first);
        CHECK(m->evaluate(train) > std::max(0.8, before));
    }
}

TEST_CASE("timing: every layer's forward, backward and update is measured") {
    auto m = make_model(ModelKind::cnn, Backend::cpu, 1);
    m->set_timing(true);
    (void)m->forward_backward(small_batch(8, 1));
    m->apply_gradient(std::vector<float>(m->size(), 0.0F), 0.1F);
    for (const auto& t : m->timings()) {
        CHECK(t.fwd_s > 0.0);
        CHECK(t.bwd_s > 0.0);
        CHECK(t.update_s > 0.0);
    }
    m->reset_timings();
    CHECK(m->timings()[0].fwd_s == 0.0);
}

TEST_CASE("shard sampler: disjoint shards, every sample once per epoch") {
    ShardSampler a(10, 2, 0, 1), b(10, 2, 1, 1);
    auto ea = a.next(5), eb = b.next(5);
    std::sort(ea.begin(), ea.end());
    std::sort(eb.begin(), eb.end());
    CHECK(ea == std::vector<std::uint32_t>{0, 2, 4, 6, 8});
    CHECK(eb == std::vector<std::uint32_t>{1, 3, 5, 7, 9});
    CHECK_THROWS(ShardSampler(1, 2, 0, 1));
}

TEST_CASE("Fashion-MNIST from the Debian package, when installed") {
    const bool installed =
        !ddlsim::testing::pretend_missing("FASHION_MNIST") && fashion_mnist_available(kFashionMnistDir);
    if (!ddlsim::testing::available_or_skip(installed, "dataset-fashion-mnist not installed")) return;
    const Dataset d = load_fashion_mnist(kFashionMnistDir, "t10k", 1000);
    CHECK(d.size() == 1000);
    CHECK(d.images.size() == 1000 * 784);
    CHECK(d.labels[0] == 9);  // the first test image is an ankle boot
    CHECK_THROWS_AS((void)load_fashion_mnist("/nonexistent", "train"), std::runtime_error);
}

TEST_CASE("CUDA backend: unavailable without a GPU, with a reason") {
    std::string why;
    const bool gpu = backend_available(Backend::cuda, &why);
    if (!ddlsim::testing::available_or_skip(!gpu, "a GPU is present: test_cuda.cpp checks the CUDA backend")) return;
    CHECK(!why.empty());
    CHECK_THROWS_AS((void)make_model(ModelKind::mlp, Backend::cuda, 1), std::runtime_error);
}
