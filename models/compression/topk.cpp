// Top-k sparsification: send the k = max(1, ceil(d n)) largest-magnitude elements as (value, index) pairs (Aji &
// Heafield, "Sparse Communication for Distributed Gradient Descent", EMNLP 2017), optionally with error feedback,
// the unsent elements accumulated into the next gradient (Stich, Cordonnier, Jaggi, "Sparsified SGD with Memory",
// NeurIPS 2018). Also the shared cost of gtopk.cpp.
//   wire:    ceil(k (value_bits + index_bits) / 8) bytes; allgather (different workers pick different indices, so
//            payloads cannot be added in flight: every worker gathers all of them)
//   encode:  radix select of |g| with 8-bit digits over the B-byte keys (Alabi et al., ACM JEA 2012): B histogram
//            passes (read Bn, 3n flops each) and a compaction pass (read Bn, write the payload, 2n flops); plus
//            zeroing the dense buffer the gathered payloads are added into (write Bn). The select's passes are
//            charged at the measured fraction of streaming bandwidth torch.topk reaches (codec_detail.hpp: 0.14), so
//            for fp32 5Bn / 0.14 + Bn + P bytes, 14n flops
//   decode:  per gathered payload, read P and scatter-add k values into the dense buffer (read and write kB
//            bytes), k flops
//   error feedback (optional): + 5Bn bytes and 2n flops to encode, residual Bn bytes
#include <fmt/format.h>

#include "models/compression/codec_detail.hpp"

namespace ddlsim::models::compression_detail {
namespace {

class TopK final : public Compressor {
public:
    explicit TopK(const CompressionSpec& spec) : spec_(spec) {}

    [[nodiscard]] CompressedTensor compress(const TensorShape& t, double bytes_per_element) const override {
        return topk_compress(spec_, static_cast<double>(t.elements), bytes_per_element);
    }
    [[nodiscard]] std::string describe() const override {
        return compression_detail::describe("topk", fmt::format("{}density {:g}", sparse_bits(spec_), spec_.density),
                                            spec_.error_feedback);
    }

private:
    CompressionSpec spec_;
};

}  // namespace

CompressedTensor topk_compress(const CompressionSpec& spec, double n, double b) {
    const double k = sparse_k(n, spec.density);
    CompressedTensor c;
    c.aggregation = Aggregation::allgather;
    c.payload_bytes = packed_bytes(k * (spec.value_bits + spec.index_bits));
    c.encode = radix_select(n, b, c.payload_bytes);
    c.encode += work(0.0, b * n, 0.0);  // zero the dense receive buffer
    c.decode_per_payload = work(c.payload_bytes + k * b, k * b, k);
    if (spec.error_feedback) add_error_feedback(c, n, b);
    return c;
}

static std::unique_ptr<Compressor> make_topk(const CompressionSpec& spec) {
    return std::make_unique<TopK>(spec);
}

const CompressorInfo& topk_compressor() {
    static const CompressorInfo info = [] {
        std::vector<CompressorParam> sparse{density_param()};
        for (const CompressorParam& w : sparse_width_params(true)) sparse.push_back(w);
        CompressorInfo c;
        c.name = "topk";
        c.description = "Top-k sparsification, (value, index) pairs all-gathered (Aji & Heafield, EMNLP 2017)";
        c.aggregation = Aggregation::allgather;
        c.params = lossy_params(sparse, ErrorFeedbackRule::optional);
        c.error_feedback = ErrorFeedbackRule::optional;
        c.byteps = false;  // BytePS servers sum; these payloads cannot be summed
        c.replayable = true;
        c.make = make_topk;
        return c;
    }();
    return info;
}

}  // namespace ddlsim::models::compression_detail
