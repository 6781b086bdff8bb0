// The gradient compressors (models/compression/): wire sizes, aggregation, codec work and error feedback for one
// tensor, each expected value derived by hand from the formulas at the top of the codec's file; codec_time; the
// registry (names, validation); and the matrix view of tensors (tensor_shape, the catalog's shapes).
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "models/compression.hpp"
#include "models/workload.hpp"

using namespace ddlsim;
using models::Aggregation;
using models::CompressedTensor;
using models::CompressionSpec;
using models::TensorShape;

namespace {

constexpr double k_fp32 = 4.0;

// A spec of that compressor at its descriptor's defaults.
CompressionSpec spec_of(std::string_view kind) {
    const models::CompressorInfo* info = models::find_compressor(kind);
    REQUIRE(info != nullptr);
    return models::default_spec(*info);
}

TensorShape vector_of(std::uint64_t n) {
    return TensorShape{n, n, 1};
}

CompressedTensor compress(const CompressionSpec& s, const TensorShape& t, double bytes = k_fp32) {
    return models::make_compressor(s)->compress(t, bytes);
}

CompressedTensor compress(std::string_view kind, std::uint64_t n, double bytes = k_fp32) {
    return compress(spec_of(kind), vector_of(n), bytes);
}

models::DeviceSpec device(double peak, double efficiency, double memory_bytes_per_s) {
    models::DeviceSpec d;
    d.name = "d";
    d.peak = sim::FlopRate::per_s(peak);
    d.efficiency = efficiency;
    d.memory_bandwidth = sim::Bandwidth::bytes_per_s(memory_bytes_per_s);
    return d;
}

}  // namespace

TEST_CASE("compression: none is the dense gradient, summable, free") {
    const auto c = compress("none", 1000);
    CHECK(c.aggregation == Aggregation::summable);
    CHECK(c.payload_bytes == 4000.0);
    CHECK(c.encode.memory_bytes == 0.0);
    CHECK(c.decode_per_payload.memory_bytes == 0.0);
    CHECK(c.error_feedback_bytes == 0.0);
    CHECK(models::make_compressor(spec_of("none"))->describe() == "none");
}

TEST_CASE("compression: fp16 halves an fp32 gradient and leaves an fp16 one alone") {
    // 1000 fp32 elements: 2000 bytes; encode reads 4000 and writes 2000 bytes, one cast per element; decode the
    // reverse.
    const auto c = compress("fp16", 1000);
    CHECK(c.aggregation == Aggregation::summable);
    CHECK(c.payload_bytes == 2000.0);
    CHECK(c.encode.memory_bytes == 6000.0);
    CHECK(c.encode.flops == 1000.0);
    CHECK(c.decode_per_payload.memory_bytes == 6000.0);
    const auto half = compress("fp16", 1000, 2.0);
    CHECK(half.payload_bytes == 2000.0);
    CHECK(half.encode.memory_bytes == 0.0);
}

TEST_CASE("compression: qsgd sends b bits per element and one norm") {
    // 8 bits: 1000 x 8 / 8 = 1000 bytes, a quarter of the 4000 dense bytes, + a 4-byte norm = 1004.
    const auto c = compress("qsgd", 1000);
    CHECK(c.aggregation == Aggregation::summable);
    CHECK(c.payload_bytes == 1004.0);
    // Norm pass + quantise pass read 2 x 4000 bytes and write the 1004-byte payload; 2n + 5n flops.
    CHECK(c.encode.memory_bytes == 9004.0);
    CHECK(c.encode.flops == 7000.0);
    // Decode reads the payload and writes 4000 bytes.
    CHECK(c.decode_per_payload.memory_bytes == 5004.0);
    // 4 bits: 500 + 4; 3 bits of 1001 elements: ceil(3003 / 8) = 376, + 4.
    auto s = spec_of("qsgd");
    s.bits = 4;
    CHECK(compress(s, vector_of(1000)).payload_bytes == 504.0);
    s.bits = 3;
    CHECK(compress(s, vector_of(1001)).payload_bytes == 380.0);
    CHECK(models::make_compressor(s)->describe() == "qsgd (3 bits)");
}

TEST_CASE("compression: terngrad, signsgd, ef_signsgd and onebit bit widths") {
    // TernGrad: 2 bits x 1000 = 250 bytes + 4-byte scale.
    CHECK(compress("terngrad", 1000).payload_bytes == 254.0);
    // signSGD: ceil(1001 / 8) = 126 bytes + 4-byte scale.
    const auto sign = compress("signsgd", 1001);
    CHECK(sign.aggregation == Aggregation::summable);
    CHECK(sign.payload_bytes == 130.0);
    CHECK(sign.error_feedback_bytes == 0.0);
    // Scale pass + sign pass read 2 x 4004 bytes and write 130; (3 + 1) n flops.
    CHECK(sign.encode.memory_bytes == 8138.0);
    CHECK(sign.encode.flops == 4004.0);
    // EF-signSGD: the same payload, error feedback always on: + 5 x 4004 bytes, + 2n flops, residual 4004 bytes.
    const auto ef = compress("ef_signsgd", 1001);
    CHECK(ef.payload_bytes == 130.0);
    CHECK(ef.encode.memory_bytes == 8138.0 + 20020.0);
    CHECK(ef.encode.flops == 4004.0 + 2002.0);
    CHECK(ef.error_feedback_bytes == 4004.0);
    // 1-bit SGD: 126 bytes + two 4-byte reconstruction values; error feedback always on.
    const auto onebit = compress("onebit", 1001);
    CHECK(onebit.aggregation == Aggregation::summable);
    CHECK(onebit.payload_bytes == 134.0);
    CHECK(onebit.error_feedback_bytes == 4004.0);
}

TEST_CASE("compression: error feedback adds its residual and two passes") {
    // qsgd 8 bits on 1000 fp32 elements, with and without: + 3Bn (add) + 2Bn (store) = 20000 bytes, + 2n flops.
    auto s = spec_of("qsgd");
    const auto plain = compress(s, vector_of(1000));
    s.error_feedback = true;
    const auto ef = compress(s, vector_of(1000));
    CHECK(ef.payload_bytes == plain.payload_bytes);
    CHECK(plain.error_feedback_bytes == 0.0);
    CHECK(ef.error_feedback_bytes == 4000.0);
    CHECK(ef.encode.memory_bytes - plain.encode.memory_bytes == 20000.0);
    CHECK(ef.encode.flops - plain.encode.flops == 2000.0);
    CHECK(models::make_compressor(s)->describe() == "qsgd (8 bits, error feedback)");
}

TEST_CASE("compression: topk sends k (value, index) pairs, gathered") {
    // n = 10000, density 0.01: k = 100 pairs of 32 + 32 bits = 800 bytes.
    auto s = spec_of("topk");
    const auto c = compress(s, vector_of(10000));
    CHECK(c.aggregation == Aggregation::allgather);
    CHECK(c.payload_bytes == 800.0);
    // Radix select over 4-byte keys: 4 histogram passes + 1 compaction pass read 5 x 40000 bytes, charged at
    // the 0.50/3.56 of memory bandwidth measured top-k kernels reach (200000 x 3.56/0.5 = 1424000), the payload
    // is written, the receive buffer zeroed (40000): 1464800 bytes; flops (3 x 4 + 2) x 10000.
    CHECK(c.encode.memory_bytes == ddlsim::testing::approx(1464800.0).epsilon(1e-12));
    CHECK(c.encode.flops == 140000.0);
    // Decode per payload: read 800 + scatter-add 100 x 4 bytes read and written; one add each.
    CHECK(c.decode_per_payload.memory_bytes == 1600.0);
    CHECK(c.decode_per_payload.flops == 100.0);
    CHECK(c.error_feedback_bytes == 0.0);
    // k = max(1, ceil(d n)): 0.0001 x 1000 = 0.1 -> 1 pair; 0.07 x 100 = 7 pairs (not 8 from rounding error).
    s.density = 0.0001;
    CHECK(compress(s, vector_of(1000)).payload_bytes == 8.0);
    s.density = 0.07;
    CHECK(compress(s, vector_of(100)).payload_bytes == 56.0);
    s.density = 0.015;
    CHECK(compress(s, vector_of(1001)).payload_bytes == 16.0 * 8.0);  // 15.015 -> 16
    // 16-bit values and indices: 100 x 4 bytes.
    s.density = 0.01;
    s.value_bits = 16;
    s.index_bits = 16;
    CHECK(compress(s, vector_of(10000)).payload_bytes == 400.0);
    s.error_feedback = true;
    CHECK(models::make_compressor(s)->describe() ==
          "topk (16-bit values, 16-bit indices, density 0.01, error feedback)");
    // Error feedback: + 5 x 40000 bytes and 2n flops, residual 40000 bytes.
    s.value_bits = 32;
    s.index_bits = 32;
    const auto ef = compress(s, vector_of(10000));
    CHECK(ef.encode.memory_bytes == ddlsim::testing::approx(1664800.0).epsilon(1e-12));
    CHECK(ef.encode.flops == 160000.0);
    CHECK(ef.error_feedback_bytes == 40000.0);
}

TEST_CASE("compression: randomk sends k values at shared indices, summable") {
    // n = 10000, density 0.01: k = 100 values x 4 bytes.
    const auto c = compress("randomk", 10000);
    CHECK(c.aggregation == Aggregation::summable);
    CHECK(c.payload_bytes == 400.0);
    // Gather 100 values (400 read, 400 written), 4 flops per index.
    CHECK(c.encode.memory_bytes == 800.0);
    CHECK(c.encode.flops == 400.0);
    // Decode: read 400, zero 40000, scatter 400.
    CHECK(c.decode_per_payload.memory_bytes == 40800.0);
}

TEST_CASE("compression: dgc samples its threshold, keeps momentum and residual") {
    // n = 10000, density 0.01: k = 100 pairs, 800 bytes; sample s = 100.
    const auto c = compress("dgc", 10000);
    CHECK(c.aggregation == Aggregation::allgather);
    CHECK(c.payload_bytes == 800.0);
    // 10Bn + sB + kB + P = 400000 + 400 + 400 + 800.
    CHECK(c.encode.memory_bytes == 401600.0);
    // Momentum 2n, filter 2n, error feedback 2n, sample 100 log2 100.
    CHECK(c.encode.flops == ddlsim::testing::approx(60000.0 + 100.0 * std::log2(100.0)));
    CHECK(c.error_feedback_bytes == 40000.0);
    CHECK(c.decode_per_payload.memory_bytes == 1600.0);
    CHECK(models::make_compressor(spec_of("dgc"))->describe() == "dgc (density 0.01, error feedback)");
}

TEST_CASE("compression: gtopk merges and re-selects k pairs at each step") {
    // n = 10000, k = 100, P = 800. Per step: read 2 x 800, 200 merge flops; radix select over 200 4-byte values:
    // read 5 x 800 (charged x 3.56/0.5: 28480), write 800, (3 x 4 + 2) x 200 flops.
    const auto c = compress("gtopk", 10000);
    CHECK(c.aggregation == Aggregation::gtopk);
    CHECK(c.payload_bytes == 800.0);
    CHECK(c.decode_per_payload.memory_bytes == ddlsim::testing::approx(1600.0 + 28480.0 + 800.0).epsilon(1e-12));
    CHECK(c.decode_per_payload.flops == 3000.0);
    // Encode: topk's 1464800 bytes + the final scatter (read 800, write 400).
    CHECK(c.encode.memory_bytes == ddlsim::testing::approx(1466000.0).epsilon(1e-12));
}

TEST_CASE("compression: powersgd sends P and Q of a matrix, vectors dense") {
    // 1000 x 500, rank 4: P = 1000 x 4 x 4 bytes, Q = 500 x 4 x 4 bytes.
    const auto s = spec_of("powersgd");
    const auto c = compress(s, TensorShape{500000, 1000, 500});
    CHECK(c.aggregation == Aggregation::lowrank);
    CHECK(c.p_bytes == 16000.0);
    CHECK(c.q_bytes == 8000.0);
    CHECK(c.dense_bytes == 0.0);
    CHECK(c.payload_bytes == 0.0);
    // Encode: error-feedback add (3 x 2e6 bytes, 5e5 flops) and P = M Q (read 2e6 + 8000, write 16000;
    // 2 x 1000 x 500 x 4 = 4e6 flops).
    CHECK(c.encode.memory_bytes == 8024000.0);
    CHECK(c.encode.flops == 4500000.0);
    // Between: Gram-Schmidt 2 x 1000 x 16 = 32000 flops; Q = M^T P 4e6 flops.
    CHECK(c.between.flops == 4032000.0);
    CHECK(c.between.memory_bytes == 32000.0 + 2000000.0 + 16000.0 + 8000.0);
    // Decode: P Q^T 4e6 flops + residual store 5e5.
    CHECK(c.decode_per_payload.flops == 4500000.0);
    CHECK(c.error_feedback_bytes == 2000000.0);
    // A bias of 1000 is sent dense, no work.
    const auto bias = compress(s, vector_of(1000));
    CHECK(bias.aggregation == Aggregation::lowrank);
    CHECK(bias.dense_bytes == 4000.0);
    CHECK(bias.p_bytes == 0.0);
    CHECK(bias.q_bytes == 0.0);
    CHECK(bias.encode.memory_bytes == 0.0);
    CHECK(bias.error_feedback_bytes == 0.0);
    // 10 x 10 at rank 8: (10 + 10) x 8 = 160 >= 100 elements, dense. PyTorch compresses only a twofold saving
    // (min_compression_rate 2): 40 x 40 at rank 8 would send 640 of 1600 elements (2.5x), but 20 x 20 at rank 4
    // 160 of 400 (exactly 2.5x, compressed) and 16 x 16 at rank 4 128 of 256 (2x, not more: dense).
    auto rank8 = s;
    rank8.rank = 8;
    CHECK(compress(rank8, TensorShape{100, 10, 10}).dense_bytes == 400.0);
    CHECK(compress(rank8, TensorShape{1600, 40, 40}).dense_bytes == 0.0);
    CHECK(compress(s, TensorShape{400, 20, 20}).dense_bytes == 0.0);
    CHECK(compress(s, TensorShape{256, 16, 16}).dense_bytes == 1024.0);
    // Unknown shape: 1e6 elements are viewed as 1000 x 1000: P = Q = 16000 bytes.
    const auto unshaped = compress(s, TensorShape{1000000, 0, 1});
    CHECK(unshaped.p_bytes == 16000.0);
    CHECK(unshaped.q_bytes == 16000.0);
    CHECK(models::make_compressor(s)->describe() == "powersgd (rank 4, error feedback)");
}

TEST_CASE("compression: codec_time is memory at bandwidth plus flops at the sustained rate, times cost_scale") {
    // 1e6 bytes at 1e9 B/s = 1 ms; 1e9 flops at 1e12 x 0.5 = 2 ms; total 3 ms, 6 ms at cost_scale 2.
    const auto d = device(1e12, 0.5, 1e9);
    const models::CodecWork w{1e6, 1e9};
    CHECK(models::codec_time(w, d, 1.0).seconds() == ddlsim::testing::approx(3e-3));
    CHECK(models::codec_time(w, d, 2.0).seconds() == ddlsim::testing::approx(6e-3));
    CHECK(models::codec_time(models::CodecWork{}, d, 1.0).ps() == 0);
    // qsgd 8 bits encode of 1000 fp32 elements: 9004 bytes / 1e9 + 7000 flops / 5e11 = 9.004 us + 14 ns.
    const auto c = compress("qsgd", 1000);
    CHECK(models::codec_time(c.encode, d, 1.0).seconds() == ddlsim::testing::approx(9.018e-6));
    CHECK_THROWS_AS((void)models::codec_time(w, d, -1.0), std::invalid_argument);
}

TEST_CASE("compression: every descriptor round-trips through make_compressor, with sane parameters") {
    const auto& all = models::compressors();
    REQUIRE(all.size() == 12);
    CHECK(all.front()->name == "none");
    for (const models::CompressorInfo* info : all) {
        CAPTURE(info->name);
        CHECK(models::find_compressor(info->name) == info);
        CHECK(!info->description.empty());
        const auto compressor = models::make_compressor(models::default_spec(*info));
        REQUIRE(compressor != nullptr);
        const std::string description = compressor->describe();
        CAPTURE(description);
        CHECK(description.substr(0, description.find(' ')) == info->name);
        CHECK(compressor->compress(vector_of(4096), k_fp32).payload_bytes +
                  compressor->compress(vector_of(4096), k_fp32).dense_bytes >
              0.0);
        // What the descriptor says about aggregation is what the compressor does.
        const auto t = compressor->compress(TensorShape{1 << 20, 1024, 1024}, k_fp32);
        CHECK(t.aggregation == info->aggregation);
        for (const models::CompressorParam& p : info->params) {
            CAPTURE(p.key);
            CHECK(!p.description.empty());
            CHECK((p.integer != nullptr) + (p.number != nullptr) + (p.boolean != nullptr) == 1);
            if (p.type != models::CompressorParam::Type::boolean) {
                CHECK(p.min <= p.default_value);
                CHECK(p.default_value <= p.max);
            }
        }
        // Forced error feedback cannot be switched off; a lossless "none" has none to keep.
        if (info->error_feedback == models::ErrorFeedbackRule::forced) {
            auto off = models::default_spec(*info);
            off.error_feedback = false;
            CHECK_THROWS_AS((void)models::make_compressor(off), std::invalid_argument);
        }
        CHECK((info->param("error_feedback") == nullptr) == (info->error_feedback == models::ErrorFeedbackRule::none));
    }
}

TEST_CASE("compression: invalid parameters throw") {
    auto qsgd = spec_of("qsgd");
    for (const std::uint32_t bits : {0U, 1U, 17U}) {
        qsgd.bits = bits;
        CHECK_THROWS_AS((void)models::make_compressor(qsgd), std::invalid_argument);
    }
    qsgd.bits = 2;
    CHECK_NOTHROW((void)models::make_compressor(qsgd));
    qsgd.bits = 16;
    CHECK_NOTHROW((void)models::make_compressor(qsgd));
    for (const char* kind : {"topk", "randomk", "dgc", "gtopk"}) {
        auto s = spec_of(kind);
        for (const double density : {0.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
            s.density = density;
            CHECK_THROWS_AS((void)models::make_compressor(s), std::invalid_argument);
        }
        s.density = 1.0;
        CHECK_NOTHROW((void)models::make_compressor(s));
        s.value_bits = 0;
        CHECK_THROWS_AS((void)models::make_compressor(s), std::invalid_argument);
    }
    auto powersgd = spec_of("powersgd");
    powersgd.rank = 0;
    CHECK_THROWS_AS((void)models::make_compressor(powersgd), std::invalid_argument);
    auto scaled = spec_of("fp16");
    scaled.cost_scale = -1.0;
    CHECK_THROWS_AS((void)models::make_compressor(scaled), std::invalid_argument);
    CompressionSpec unknown;
    unknown.kind = "bogus";
    CHECK_THROWS_AS((void)models::make_compressor(unknown), std::invalid_argument);
}

TEST_CASE("compression: tensor_shape of unshaped tensors") {
    const auto shape = [](std::int64_t n) { return models::tensor_shape(models::Tensor{"t", n, 0, 0}); };
    // Under 1024 elements: a vector.
    CHECK(shape(1000).rows == 1000);
    CHECK(shape(1000).cols == 1);
    // A perfect square: 1000 x 1000.
    CHECK(shape(1000000).rows == 1000);
    CHECK(shape(1000000).cols == 1000);
    // 1023 x 1024 = 1047552: floor(sqrt) = 1023 divides it.
    CHECK(shape(1047552).rows == 1023);
    CHECK(shape(1047552).cols == 1024);
    // 12288 = 2^12 x 3: floor(sqrt) = 110; the largest divisor not above it is 96 (>= 110 / 4): 96 x 128.
    CHECK(shape(12288).rows == 96);
    CHECK(shape(12288).cols == 128);
    // 1031 is prime: floor(sqrt) = 32, padded 32 x ceil(1031 / 32) = 32 x 33.
    CHECK(shape(1031).rows == 32);
    CHECK(shape(1031).cols == 33);
    CHECK(shape(1031).elements == 1031);
    // 2062 = 2 x 1031: no divisor in [12, 45], so 45 x ceil(2062 / 45) = 45 x 46.
    CHECK(shape(2062).rows == 45);
    CHECK(shape(2062).cols == 46);
    // A known shape is kept; one that does not hold the parameters is an error.
    const auto known = models::tensor_shape(models::Tensor{"w", 6, 2, 3});
    CHECK(known.rows == 2);
    CHECK(known.cols == 3);
    CHECK_THROWS_AS((void)models::tensor_shape(models::Tensor{"w", 6, 4, 2}), std::invalid_argument);
}

TEST_CASE("compression: every built-in tensor has a matrix view holding its parameters") {
    for (const auto& name : models::builtin_workload_names()) {
        const auto workload = models::builtin_workload(name);
        REQUIRE(workload.has_value());
        for (const auto& layer : workload->layers) {
            for (const auto& tensor : layer.tensors) {
                CAPTURE(tensor.name);
                CHECK(tensor.rows > 0);
                CHECK(tensor.cols > 0);
                CHECK(tensor.rows * tensor.cols == tensor.params);
            }
        }
    }
    // Spot checks: conv out x (in kh kw), linear out x in, GPT-2 Conv1D in x out, embeddings vocab x hidden.
    const auto find = [](const char* model, const char* tensor) {
        const auto workload = models::builtin_workload(model);
        REQUIRE(workload.has_value());
        for (const auto& layer : workload->layers)
            for (const auto& t : layer.tensors)
                if (t.name == tensor) return t;
        return models::Tensor{};
    };
    const auto conv1 = find("resnet50", "conv1.weight");
    CHECK(conv1.rows == 64);
    CHECK(conv1.cols == 3 * 7 * 7);
    const auto fc = find("resnet50", "fc.weight");
    CHECK(fc.rows == 1000);
    CHECK(fc.cols == 2048);
    const auto bn = find("resnet50", "bn1.weight");
    CHECK(bn.rows == 64);
    CHECK(bn.cols == 1);
    const auto c_attn = find("gpt2", "transformer.h.0.attn.c_attn.weight");
    CHECK(c_attn.rows == 768);
    CHECK(c_attn.cols == 3 * 768);
    const auto words = find("bert_base", "embeddings.word_embeddings.weight");
    CHECK(words.rows == 30522);
    CHECK(words.cols == 768);
}
