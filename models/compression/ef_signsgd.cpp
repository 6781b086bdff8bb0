// EF-signSGD: signSGD with error feedback, scale = ||p||_1 / n = mean |p| of the error-corrected gradient
// p = g + e (Karimireddy, Rebjock, Stich, Jaggi, "Error Feedback Fixes SignSGD and other Gradient Compression
// Schemes", ICML 2019, Algorithm 1).
//   wire:    ceil(n / 8) + 4 bytes, summable (as signsgd.cpp)
//   encode:  as signsgd (2Bn + P bytes, 4n flops) + error feedback, always on (5Bn bytes, 2n flops)
//   decode:  once on the reduced payload, read P write Bn bytes, n flops
//   residual: Bn bytes
#include "models/compression/codec_detail.hpp"

namespace ddlsim::models::compression_detail {
namespace {

class EfSignSgd final : public Compressor {
public:
    [[nodiscard]] CompressedTensor compress(const TensorShape& t, double bytes_per_element) const override {
        return sign_compress(static_cast<double>(t.elements), bytes_per_element, 1.0, true);
    }
    [[nodiscard]] std::string describe() const override { return compression_detail::describe("ef_signsgd", "", true); }
};

}  // namespace

static std::unique_ptr<Compressor> make_ef_signsgd(const CompressionSpec& /*spec*/) {
    return std::make_unique<EfSignSgd>();
}

const CompressorInfo& ef_signsgd_compressor() {
    static const CompressorInfo info = [] {
        CompressorInfo c;
        c.name = "ef_signsgd";
        c.description = "EF-signSGD: scaled sign with error feedback (Karimireddy et al., ICML 2019)";
        c.aggregation = Aggregation::summable;
        c.params = lossy_params({}, ErrorFeedbackRule::forced);
        c.error_feedback = ErrorFeedbackRule::forced;
        c.replayable = true;
        c.make = make_ef_signsgd;
        return c;
    }();
    return info;
}

}  // namespace ddlsim::models::compression_detail
