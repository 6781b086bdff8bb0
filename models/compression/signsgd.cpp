// signSGD: the sign of every element, 1 bit, plus one fp32 scale per tensor (the mean |g|, so that the summed
// signs decode to a gradient of the right magnitude) (Bernstein, Wang, Azizzadenesheli, Anandkumar, "signSGD:
// Compressed Optimisation for Non-Convex Problems", ICML 2018). Also the shared cost of the sign family
// (ef_signsgd.cpp, onebit.cpp), which differ in their reconstruction values and error feedback.
//   wire:    ceil(n / 8) + 4 s bytes for s reconstruction values (signsgd: s = 1), summable (the reduction adds
//            the signs: a majority vote, Bernstein et al., ICLR 2019, re-quantised at each hop)
//   encode:  statistics pass (read Bn, (1 + s) n flops: signsgd |g| and add; onebit sign test, add, count), sign
//            pass (read Bn, write the payload, 2n flops: sign, pack) = 2Bn + P bytes, (3 + s) n flops
//   decode:  once on the reduced payload, read P write Bn bytes, n flops
//   error feedback (optional here): + 5Bn bytes and 2n flops to encode, residual Bn bytes
#include "models/compression/codec_detail.hpp"

namespace ddlsim::models::compression_detail {
namespace {

constexpr double k_scale_bytes = 4.0;

class SignSgd final : public Compressor {
public:
    explicit SignSgd(bool error_feedback) : error_feedback_(error_feedback) {}

    [[nodiscard]] CompressedTensor compress(const TensorShape& t, double bytes_per_element) const override {
        return sign_compress(static_cast<double>(t.elements), bytes_per_element, 1.0, error_feedback_);
    }
    [[nodiscard]] std::string describe() const override {
        return compression_detail::describe("signsgd", "", error_feedback_);
    }

private:
    bool error_feedback_;
};

}  // namespace

CompressedTensor sign_compress(double n, double b, double scales, bool error_feedback) {
    CompressedTensor c;
    c.aggregation = Aggregation::summable;
    c.payload_bytes = packed_bytes(n) + k_scale_bytes * scales;
    c.encode = work(2.0 * b * n, c.payload_bytes, (3.0 + scales) * n);
    c.decode_per_payload = work(c.payload_bytes, b * n, n);
    if (error_feedback) add_error_feedback(c, n, b);
    return c;
}

static std::unique_ptr<Compressor> make_signsgd(const CompressionSpec& spec) {
    return std::make_unique<SignSgd>(spec.error_feedback);
}

const CompressorInfo& signsgd_compressor() {
    static const CompressorInfo info = [] {
        CompressorInfo c;
        c.name = "signsgd";
        c.description = "signSGD with majority vote (Bernstein et al., ICML 2018 / ICLR 2019)";
        c.aggregation = Aggregation::summable;
        c.params = lossy_params({}, ErrorFeedbackRule::optional);
        c.error_feedback = ErrorFeedbackRule::optional;
        c.replayable = true;
        c.make = make_signsgd;
        return c;
    }();
    return info;
}

}  // namespace ddlsim::models::compression_detail
