// No compression: the dense gradient is the payload, summed by the configured all-reduce or parameter server.
//   wire:  B n bytes, summable
//   work:  none (error feedback has nothing to keep: there is no compression error)
#include "models/compression/codec_detail.hpp"

namespace ddlsim::models::compression_detail {
namespace {

class NoCompression final : public Compressor {
public:
    [[nodiscard]] CompressedTensor compress(const TensorShape& t, double bytes_per_element) const override {
        CompressedTensor c;
        c.aggregation = Aggregation::summable;
        c.payload_bytes = static_cast<double>(t.elements) * bytes_per_element;
        return c;
    }
    [[nodiscard]] std::string describe() const override { return "none"; }
};

}  // namespace

static std::unique_ptr<Compressor> make_none(const CompressionSpec& /*spec*/) {
    return std::make_unique<NoCompression>();
}

const CompressorInfo& none_compressor() {
    static const CompressorInfo info = [] {
        CompressorInfo c;
        c.name = "none";
        c.description = "no compression: the dense gradient, summed by the configured all-reduce or parameter server";
        c.aggregation = Aggregation::summable;
        c.params = {};
        c.error_feedback = ErrorFeedbackRule::none;
        c.replayable = true;
        c.make = make_none;
        return c;
    }();
    return info;
}

}  // namespace ddlsim::models::compression_detail
