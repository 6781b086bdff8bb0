// FP16 cast: every element is rounded to IEEE half precision before it is sent, the usual "compression" of
// mixed-precision data-parallel training (Micikevicius et al., "Mixed Precision Training", ICLR 2018; Horovod's
// hvd.Compression.fp16, Sergeev & Del Balso, arXiv 1802.05799, 2018).
//   wire:    2n bytes, summable (the reduction adds halves)
//   encode:  one pass, read Bn write 2n bytes, n flops (the cast)
//   decode:  once on the reduced payload, read 2n write Bn bytes, n flops
//   error feedback (optional): + 5Bn bytes and 2n flops to encode, residual Bn bytes
// Gradients already at 2 bytes or fewer per element are sent as they are, with no work.
#include "models/compression/codec_detail.hpp"

namespace ddlsim::models::compression_detail {
namespace {

constexpr double k_half_bytes = 2.0;

class Fp16 final : public Compressor {
public:
    explicit Fp16(bool error_feedback) : error_feedback_(error_feedback) {}

    [[nodiscard]] CompressedTensor compress(const TensorShape& t, double bytes_per_element) const override {
        const double n = static_cast<double>(t.elements);
        const double b = bytes_per_element;
        CompressedTensor c;
        c.aggregation = Aggregation::summable;
        if (b <= k_half_bytes) {  // already half precision or narrower: nothing to do
            c.payload_bytes = n * b;
            return c;
        }
        c.payload_bytes = k_half_bytes * n;
        c.encode = work(b * n, c.payload_bytes, n);
        c.decode_per_payload = work(c.payload_bytes, b * n, n);
        if (error_feedback_) add_error_feedback(c, n, b);
        return c;
    }
    [[nodiscard]] std::string describe() const override {
        return compression_detail::describe("fp16", "", error_feedback_);
    }

private:
    bool error_feedback_;
};

}  // namespace

static std::unique_ptr<Compressor> make_fp16(const CompressionSpec& spec) {
    return std::make_unique<Fp16>(spec.error_feedback);
}

const CompressorInfo& fp16_compressor() {
    static const CompressorInfo info = [] {
        CompressorInfo c;
        c.name = "fp16";
        c.description = "fp16 casting (Micikevicius et al., ICLR 2018; Horovod's fp16 compression)";
        c.aggregation = Aggregation::summable;
        c.params = lossy_params({}, ErrorFeedbackRule::optional);
        c.error_feedback = ErrorFeedbackRule::optional;
        c.replayable = true;
        c.make = make_fp16;
        return c;
    }();
    return info;
}

}  // namespace ddlsim::models::compression_detail
