// 1-bit SGD: the sign of every element, 1 bit, with two fp32 reconstruction values (the means of the positive and
// of the negative elements; per tensor here, per column in the paper) and error feedback always on, the
// quantisation error carried into the next minibatch (Seide, Fu, Droppo, Li, Yu, "1-Bit Stochastic Gradient Descent
// and its Application to Data-Parallel Distributed Training of Speech DNNs", Interspeech 2014).
//   wire:    ceil(n / 8) + 8 bytes, summable (re-quantised at each hop, as in 1-bit Adam's compressed all-reduce,
//            Tang et al., ICML 2021)
//   encode:  statistics pass (read Bn, 3n flops: sign test, add, count), sign pass (read Bn, write the payload,
//            2n flops) = 2Bn + P bytes, 5n flops; + error feedback (5Bn bytes, 2n flops)
//   decode:  once on the reduced payload, read P write Bn bytes, n flops
//   residual: Bn bytes
#include "models/compression/codec_detail.hpp"

namespace ddlsim::models::compression_detail {
namespace {

constexpr double k_reconstruction_values = 2.0;

class OneBit final : public Compressor {
public:
    [[nodiscard]] CompressedTensor compress(const TensorShape& t, double bytes_per_element) const override {
        return sign_compress(static_cast<double>(t.elements), bytes_per_element, k_reconstruction_values, true);
    }
    [[nodiscard]] std::string describe() const override { return compression_detail::describe("onebit", "", true); }
};

}  // namespace

static std::unique_ptr<Compressor> make_onebit(const CompressionSpec& /*spec*/) {
    return std::make_unique<OneBit>();
}

const CompressorInfo& onebit_compressor() {
    static const CompressorInfo info = [] {
        CompressorInfo c;
        c.name = "onebit";
        c.description = "1-bit SGD with two reconstruction means and error feedback (Seide et al., Interspeech 2014)";
        c.aggregation = Aggregation::summable;
        c.params = lossy_params({}, ErrorFeedbackRule::forced);
        c.error_feedback = ErrorFeedbackRule::forced;
        c.make = make_onebit;
        return c;
    }();
    return info;
}

}  // namespace ddlsim::models::compression_detail
