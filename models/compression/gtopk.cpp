// gTop-k: every worker selects its local top-k pairs as Top-k does, then log2(workers) tree / butterfly steps each
// receive a peer's k pairs, add them to the own ones by index and re-select the top k of the (at most 2k) merged
// pairs, so that every message stays k pairs (Shi, Wang, Chu, Li, "A Distributed Synchronous SGD Algorithm with
// Global Top-k Sparsification for Low Bandwidth Networks", ICDCS 2019). Residuals as Top-k (optional).
//   wire:    ceil(k (value_bits + index_bits) / 8) bytes per message, aggregation gtopk
//   encode:  as topk.cpp (radix select, zeroing the dense buffer), plus scattering the final global k pairs into
//            it (read P, write kB, k flops; it happens once, so it is charged here rather than per step)
//   decode:  per merge step, read the received and the own pairs (2P), merge by index (2k flops), then radix
//            select over the 2k merged values of value_bits / 8 bytes, writing P
//   error feedback (optional): + 5Bn bytes and 2n flops to encode, residual Bn bytes
#include <fmt/format.h>

#include "models/compression/codec_detail.hpp"

namespace ddlsim::models::compression_detail {
namespace {

class GTopK final : public Compressor {
public:
    explicit GTopK(const CompressionSpec& spec) : spec_(spec) {}

    [[nodiscard]] CompressedTensor compress(const TensorShape& t, double bytes_per_element) const override {
        const double n = static_cast<double>(t.elements);
        const double b = bytes_per_element;
        const double k = sparse_k(n, spec_.density);
        CompressedTensor c = topk_compress(spec_, n, b);
        c.aggregation = Aggregation::gtopk;
        c.encode += work(c.payload_bytes, k * b, k);
        c.decode_per_payload = work(2.0 * c.payload_bytes, 0.0, 2.0 * k);
        c.decode_per_payload += radix_select(2.0 * k, spec_.value_bits / 8.0, c.payload_bytes);
        return c;
    }
    [[nodiscard]] std::string describe() const override {
        return compression_detail::describe("gtopk", fmt::format("{}density {:g}", sparse_bits(spec_), spec_.density),
                                            spec_.error_feedback);
    }

private:
    CompressionSpec spec_;
};

}  // namespace

static std::unique_ptr<Compressor> make_gtopk(const CompressionSpec& spec) {
    return std::make_unique<GTopK>(spec);
}

const CompressorInfo& gtopk_compressor() {
    static const CompressorInfo info = [] {
        std::vector<CompressorParam> sparse{density_param()};
        for (const CompressorParam& w : sparse_width_params(true)) sparse.push_back(w);
        CompressorInfo c;
        c.name = "gtopk";
        c.description = "gTop-k: merge and re-select k at every tree step (Shi et al., ICDCS 2019)";
        c.aggregation = Aggregation::gtopk;
        c.params = lossy_params(sparse, ErrorFeedbackRule::optional);
        c.error_feedback = ErrorFeedbackRule::optional;
        c.byteps = false;  // BytePS servers sum; these payloads cannot be summed
        c.architectures = {"allreduce"};
        c.make = make_gtopk;
        return c;
    }();
    return info;
}

}  // namespace ddlsim::models::compression_detail
