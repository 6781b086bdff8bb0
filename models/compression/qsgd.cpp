// QSGD: stochastic quantisation of g / ||g||_2 to s = 2^(b-1) - 1 levels plus a sign, b bits per element, one
// fp32 norm per tensor (Alistarh, Grubic, Li, Tomioka, Vojnovic, "QSGD: Communication-Efficient SGD via Gradient
// Quantization and Encoding", NeurIPS 2017; we pack fixed-width levels, not the paper's Elias coding, and use
// one bucket per tensor).
//   wire:    ceil(n b / 8) + 4 bytes, summable (each reduction hop re-quantises, as compressed all-reduces do)
//   encode:  norm pass (read Bn, 2n flops: square, add), quantise pass (read Bn, write the payload, 5n flops:
//            scale, uniform draw, compare, round, pack) = 2Bn + P bytes, 7n flops
//   decode:  once on the reduced payload, read P write Bn bytes, 2n flops (level x norm / s)
//   error feedback (optional): + 5Bn bytes and 2n flops to encode, residual Bn bytes
#include <fmt/format.h>

#include "models/compression/codec_detail.hpp"

namespace ddlsim::models::compression_detail {
namespace {

constexpr double k_norm_bytes = 4.0;

class Qsgd final : public Compressor {
public:
    Qsgd(std::uint32_t bits, bool error_feedback) : bits_(bits), error_feedback_(error_feedback) {}

    [[nodiscard]] CompressedTensor compress(const TensorShape& t, double bytes_per_element) const override {
        const double n = static_cast<double>(t.elements);
        const double b = bytes_per_element;
        CompressedTensor c;
        c.aggregation = Aggregation::summable;
        c.payload_bytes = packed_bytes(n * bits_) + k_norm_bytes;
        c.encode = work(2.0 * b * n, c.payload_bytes, 7.0 * n);
        c.decode_per_payload = work(c.payload_bytes, b * n, 2.0 * n);
        if (error_feedback_) add_error_feedback(c, n, b);
        return c;
    }
    [[nodiscard]] std::string describe() const override {
        return compression_detail::describe("qsgd", fmt::format("{} bits", bits_), error_feedback_);
    }

private:
    std::uint32_t bits_;
    bool error_feedback_;
};

}  // namespace

static std::unique_ptr<Compressor> make_qsgd(const CompressionSpec& spec) {
    return std::make_unique<Qsgd>(spec.bits, spec.error_feedback);
}

const CompressorInfo& qsgd_compressor() {
    static const CompressorInfo info = [] {
        CompressorParam bits{"bits", CompressorParam::Type::integer,       2, false, 16, 8,
                             "bits", "bits per element including the sign"};
        bits.integer = &CompressionSpec::bits;
        CompressorInfo c;
        c.name = "qsgd";
        c.description = "QSGD stochastic quantisation with one norm (Alistarh et al., NeurIPS 2017)";
        c.aggregation = Aggregation::summable;
        c.params = lossy_params({bits}, ErrorFeedbackRule::optional);
        c.error_feedback = ErrorFeedbackRule::optional;
        c.replayable = true;
        c.replay_fixed = {{"bits", 8.0}};  // validate's real QSGD is the 8-bit codec
        c.make = make_qsgd;
        return c;
    }();
    return info;
}

}  // namespace ddlsim::models::compression_detail
