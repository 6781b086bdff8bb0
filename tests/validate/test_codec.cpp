// Compressors: payload sizes, exact round trips where the format is exact, the error-feedback
// identity, and bounds derived from each scheme's definition.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/rng.hpp"
#include "validate/codec.hpp"

using namespace ddlsim::validate;

namespace {

std::vector<float> random_vector(std::size_t n, std::uint64_t seed) {
    std::vector<float> v(n);
    ddlsim::sim::rng::SplitMix64 g(seed);
    for (auto& x : v) x = static_cast<float>(2.0 * ddlsim::sim::rng::uniform01(g) - 1.0);
    return v;
}

std::vector<float> decode(const Codec& c, const std::vector<std::uint8_t>& p) {
    std::vector<float> out(c.size(), 0.0F);
    c.decode_add(p, out, 1.0F);
    return out;
}

}  // namespace

TEST_CASE("fp16 conversion: exact values, rounding to nearest even, subnormals, overflow") {
    for (float f : {0.0F, 1.0F, -2.5F, 65504.0F, 0.000061035156F /* 2^-14 */, 5.9604645e-08F /* 2^-24 */})
        CHECK(half_to_float(float_to_half(f)) == f);
    CHECK(float_to_half(1.0F) == 0x3C00);
    // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1.0).
    CHECK(float_to_half(1.0F + 0x1.0p-11F) == 0x3C00);
    CHECK(float_to_half(1.0F + 3 * 0x1.0p-11F) == 0x3C02);
    CHECK(float_to_half(1e6F) == 0x7C00);  // overflow to +inf
    CHECK(float_to_half(1e-9F) == 0);      // below half the smallest subnormal
    CHECK(std::isnan(half_to_float(float_to_half(std::nanf("")))));
}

TEST_CASE("payload sizes") {
    const std::size_t n = 1000;
    CHECK(payload_bytes({CodecKind::none}, n) == 4000);
    CHECK(payload_bytes({CodecKind::fp16}, n) == 2000);
    CHECK(payload_bytes({CodecKind::qsgd}, n) == 2 * 4 + 1000);  // 2 buckets of 512
    CHECK(payload_bytes({CodecKind::signsgd}, n) == 4 + 125);
    CHECK(payload_bytes({CodecKind::topk, 8, 0.01}, n) == 10 * 8);
    for (auto k : {CodecKind::none, CodecKind::fp16, CodecKind::qsgd, CodecKind::signsgd, CodecKind::topk}) {
        CodecSpec s{k};
        s.density = 0.01;
        auto c = make_codec(s, n, Backend::cpu, 1);
        CHECK(c->encode(random_vector(n, 2)).size() == payload_bytes(s, n));
    }
}

TEST_CASE("none is exact, fp16 within half an ulp") {
    const auto g = random_vector(777, 3);
    auto none = make_codec({CodecKind::none}, g.size(), Backend::cpu, 1);
    CHECK(decode(*none, none->encode(g)) == g);
    auto half = make_codec({CodecKind::fp16}, g.size(), Backend::cpu, 1);
    const auto d = decode(*half, half->encode(g));
    for (std::size_t i = 0; i < g.size(); ++i) CHECK(std::fabs(d[i] - g[i]) <= std::fabs(g[i]) * 0x1.0p-11F);
}

TEST_CASE("topk keeps exactly the k largest magnitudes") {
    std::vector<float> g{0.1F, -5.0F, 0.3F, 4.0F, -0.2F, 0.0F, 3.0F, -0.05F, 0.01F, 2.0F};
    CodecSpec s{CodecKind::topk};
    s.density = 0.3;  // k = 3
    auto c = make_codec(s, g.size(), Backend::cpu, 1);
    const auto d = decode(*c, c->encode(g));
    CHECK(d == std::vector<float>{0, -5.0F, 0, 4.0F, 0, 0, 3.0F, 0, 0, 0});
}

TEST_CASE("signsgd sends the signs scaled by the mean magnitude") {
    std::vector<float> g{1.0F, -3.0F, 0.5F, -0.5F};
    auto c = make_codec({CodecKind::signsgd}, g.size(), Backend::cpu, 1);
    // mean |g| = 5 / 4
    CHECK(decode(*c, c->encode(g)) == std::vector<float>{1.25F, -1.25F, 1.25F, -1.25F});
}

TEST_CASE("qsgd: levels within one step of the value, unbiased on average") {
    const auto g = random_vector(1024, 5);
    auto c = make_codec({CodecKind::qsgd}, g.size(), Backend::cpu, 9);
    std::vector<double> mean(g.size(), 0.0);
    const int trials = 400;
    for (int t = 0; t < trials; ++t) {
        const auto d = decode(*c, c->encode(g));
        for (std::size_t b = 0; b < 2; ++b) {
            double ss = 0.0;
            for (std::size_t i = 512 * b; i < 512 * (b + 1); ++i) ss += double{g[i]} * g[i];
            const double step = std::sqrt(ss) / 127.0;  // one quantisation level
            for (std::size_t i = 512 * b; i < 512 * (b + 1); ++i) CHECK(std::fabs(d[i] - g[i]) <= step * 1.0001);
        }
        for (std::size_t i = 0; i < g.size(); ++i) mean[i] += d[i] / trials;
    }
    double err = 0.0;
    for (std::size_t i = 0; i < g.size(); ++i) err = std::max(err, std::fabs(mean[i] - g[i]));
    CHECK(err < 0.02);  // step ~ 0.15, standard error of 400 trials <= 0.0075
}

TEST_CASE("error feedback: what was sent plus the residual equals every gradient summed") {
    // e_T = sum_t g_t - sum_t D(C(g_t + e_{t-1})): the telescoping identity of error feedback.
    for (auto k : {CodecKind::topk, CodecKind::signsgd, CodecKind::qsgd, CodecKind::fp16}) {
        CodecSpec s{k};
        s.density = 0.05;
        s.error_feedback = true;
        const std::size_t n = 600;
        auto c = make_codec(s, n, Backend::cpu, 4);
        std::vector<double> sum_g(n, 0.0), sum_sent(n, 0.0);
        for (int t = 0; t < 30; ++t) {
            const auto g = random_vector(n, 100 + static_cast<std::uint64_t>(t));
            const auto d = decode(*c, c->encode(g));
            for (std::size_t i = 0; i < n; ++i) sum_g[i] += g[i], sum_sent[i] += d[i];
        }
        double norm = 0.0;
        for (std::size_t i = 0; i < n; ++i) norm += (sum_g[i] - sum_sent[i]) * (sum_g[i] - sum_sent[i]);
        CAPTURE(codec_name(k));
        CHECK(c->residual_norm() == ddlsim::testing::approx(std::sqrt(norm)).epsilon(1e-4));
        CHECK(std::isfinite(c->residual_norm()));
    }
}

TEST_CASE("codec input validation") {
    CHECK_THROWS((void)make_codec({CodecKind::qsgd, 4}, 10, Backend::cpu, 1));
    CodecSpec s{CodecKind::topk};
    s.density = 0.0;
    CHECK_THROWS((void)make_codec(s, 10, Backend::cpu, 1));
    auto c = make_codec({CodecKind::fp16}, 10, Backend::cpu, 1);
    std::vector<float> acc(10);
    CHECK_THROWS(c->decode_add(std::vector<std::uint8_t>(7), acc, 1.0F));
}
