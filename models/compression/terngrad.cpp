// TernGrad: stochastic ternarisation of every element to {-1, 0, +1} x s_t with s_t = max |g| after clipping at
// 2.5 standard deviations, 2 bits per element and one fp32 scale per tensor (Wen, Xu, Yan, Wu, Wang, Chen, Li,
// "TernGrad: Ternary Gradients to Reduce Communication in Distributed Deep Learning", NeurIPS 2017).
//   wire:    ceil(2n / 8) + 4 bytes, summable (each reduction hop re-quantises)
//   encode:  statistics pass (read Bn, 3n flops: max |g|, sum and sum of squares for sigma), ternarise pass
//            (read Bn, write the payload, 5n flops: clip, scale, uniform draw, compare, pack) = 2Bn + P bytes, 8n
//   decode:  once on the reduced payload, read P write Bn bytes, n flops
//   error feedback (optional): + 5Bn bytes and 2n flops to encode, residual Bn bytes
#include "models/compression/codec_detail.hpp"

namespace ddlsim::models::compression_detail {
namespace {

constexpr double k_bits_per_element = 2.0;
constexpr double k_scale_bytes = 4.0;

class TernGrad final : public Compressor {
public:
    explicit TernGrad(bool error_feedback) : error_feedback_(error_feedback) {}

    [[nodiscard]] CompressedTensor compress(const TensorShape& t, double bytes_per_element) const override {
        const double n = static_cast<double>(t.elements);
        const double b = bytes_per_element;
        CompressedTensor c;
        c.aggregation = Aggregation::summable;
        c.payload_bytes = packed_bytes(k_bits_per_element * n) + k_scale_bytes;
        c.encode = work(2.0 * b * n, c.payload_bytes, 8.0 * n);
        c.decode_per_payload = work(c.payload_bytes, b * n, n);
        if (error_feedback_) add_error_feedback(c, n, b);
        return c;
    }
    [[nodiscard]] std::string describe() const override {
        return compression_detail::describe("terngrad", "", error_feedback_);
    }

private:
    bool error_feedback_;
};

}  // namespace

static std::unique_ptr<Compressor> make_terngrad(const CompressionSpec& spec) {
    return std::make_unique<TernGrad>(spec.error_feedback);
}

const CompressorInfo& terngrad_compressor() {
    static const CompressorInfo info = [] {
        CompressorInfo c;
        c.name = "terngrad";
        c.description = "TernGrad ternary quantisation with one scale (Wen et al., NeurIPS 2017)";
        c.aggregation = Aggregation::summable;
        c.params = lossy_params({}, ErrorFeedbackRule::optional);
        c.error_feedback = ErrorFeedbackRule::optional;
        c.make = make_terngrad;
        return c;
    }();
    return info;
}

}  // namespace ddlsim::models::compression_detail
