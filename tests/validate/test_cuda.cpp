// The CUDA backend against the CPU backend on the same data and parameters (GPU machines only; reported
// skipped elsewhere).
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <cmath>

#include "sim/rng.hpp"
#include "tests/support/support.hpp"
#include "validate/codec.hpp"
#include "validate/nn.hpp"

using namespace ddlsim::validate;

namespace {

// True with a usable GPU; otherwise the case is reported skipped (tests/support/support.hpp).
// validate/gpu_check.sh fails when it reads "CUDA backend skipped".
bool gpu_or_skip() {
    std::string why = "DDLSIM_TEST_PRETEND_NO_GPU";
    const bool gpu = !ddlsim::testing::pretend_missing("GPU") && backend_available(Backend::cuda, &why);
    return ddlsim::testing::available_or_skip(gpu, "CUDA backend skipped: " + why);
}

double max_rel_diff(std::span<const float> a, std::span<const float> b) {
    double m = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        m = std::max(m, double{std::fabs(a[i] - b[i])});
        scale = std::max(scale, double{std::fabs(a[i])});
    }
    return scale > 0 ? m / scale : m;
}

}  // namespace

TEST_CASE("CUDA and CPU backends compute the same loss and gradient") {
    if (!gpu_or_skip()) return;
    const Batch b = synthetic_dataset(64, 5).slice(0, 64);
    for (auto kind : {ModelKind::mlp, ModelKind::cnn}) {
        CAPTURE(model_name(kind));
        auto cpu = make_model(kind, Backend::cpu, 9);
        auto gpu = make_model(kind, Backend::cuda, 9);
        const double lc = cpu->forward_backward(b), lg = gpu->forward_backward(b);
        CHECK(lg == ddlsim::testing::approx(lc).epsilon(1e-4));
        CHECK(max_rel_diff(cpu->gradient(), gpu->gradient()) < 1e-3);
        // One SGD step with the CPU gradient keeps the two models together.
        const std::vector<float> g(cpu->gradient().begin(), cpu->gradient().end());
        cpu->apply_gradient(g, 0.1F);
        gpu->apply_gradient(g, 0.1F);
        std::vector<float> pc(cpu->size()), pg(gpu->size());
        cpu->get_params(pc);
        gpu->get_params(pg);
        CHECK(max_rel_diff(pc, pg) < 1e-5);
        const Dataset d = synthetic_dataset(300, 6);
        CHECK(gpu->evaluate(d) == ddlsim::testing::approx(cpu->evaluate(d)).epsilon(0.02));
    }
}

TEST_CASE("CUDA codecs write the CPU codecs' payloads") {
    if (!gpu_or_skip()) return;
    std::vector<float> g(10000);
    ddlsim::sim::rng::SplitMix64 s(3);
    for (auto& x : g) x = static_cast<float>(2.0 * ddlsim::sim::rng::uniform01(s) - 1.0);
    for (auto kind : {CodecKind::none, CodecKind::fp16, CodecKind::signsgd, CodecKind::topk}) {
        CAPTURE(codec_name(kind));
        CodecSpec spec{kind};
        spec.density = 0.01;
        spec.error_feedback = kind != CodecKind::none;
        auto cpu = make_codec(spec, g.size(), Backend::cpu, 1);
        auto gpu = make_codec(spec, g.size(), Backend::cuda, 1);
        for (int t = 0; t < 3; ++t) {  // error feedback carries the residual into later rounds
            const auto pc = cpu->encode(g), pg = gpu->encode(g);
            REQUIRE(pc.size() == pg.size());
            std::vector<float> dc(g.size(), 0.0F), dg(g.size(), 0.0F);
            cpu->decode_add(pc, dc, 1.0F);
            cpu->decode_add(pg, dg, 1.0F);
            CHECK(max_rel_diff(dc, dg) < 1e-5);
            CHECK(gpu->residual_norm() == ddlsim::testing::approx(cpu->residual_norm()).epsilon(1e-4));
        }
    }
    // QSGD rounds stochastically with its own random stream: check the bound of one level.
    CodecSpec q{CodecKind::qsgd};
    auto gpu = make_codec(q, g.size(), Backend::cuda, 1);
    std::vector<float> d(g.size(), 0.0F);
    gpu->decode_add(gpu->encode(g), d, 1.0F);
    double worst = 0.0;
    for (std::size_t i = 0; i < g.size(); ++i) worst = std::max(worst, double{std::fabs(d[i] - g[i])});
    CHECK(worst <= std::sqrt(512.0) / 127.0);  // |g| <= 1: a bucket norm <= sqrt(512), one level = norm / 127
}
