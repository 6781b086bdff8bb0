// Deep Gradient Compression: Top-k-style sparsification whose threshold is estimated from a random sample, with
// momentum correction and local gradient accumulation (error feedback, always on) (Lin, Han, Mao, Wang, Dally,
// "Deep Gradient Compression: Reducing the Communication Bandwidth for Distributed Training", ICLR 2018, §3).
// Local gradient clipping is left to the training step; the rare second selection round the paper runs when the
// estimated threshold lets through more than k elements is not modelled.
//   wire:    ceil(k (value_bits + index_bits) / 8) bytes, k = max(1, ceil(d n)), allgather (as topk.cpp)
//   encode:  momentum correction u = m u + g (read 2Bn, write Bn, 2n flops); accumulation v = v + u and, after
//            sending, v masked at the sent indices (the two error-feedback passes, 5Bn bytes, 2n flops); threshold
//            from a random sample of s = min(n, max(1, ceil(0.01 n))) elements (read sB, s log2 s flops to select
//            its top d s); one filtering pass (read Bn, write the payload, 2n flops); u masked at the sent indices
//            (write kB); zeroing the dense receive buffer (write Bn). Total 10Bn + sB + kB + P bytes
//   decode:  per gathered payload, read P and scatter-add k values (read and write kB bytes), k flops
//   residual: Bn bytes (v; u replaces the optimizer's own momentum buffer)
#include <fmt/format.h>

#include "models/compression/codec_detail.hpp"

namespace ddlsim::models::compression_detail {
namespace {

// synxlin/deep-gradient-compression @24673d4 dgc/compression.py: sample_ratio=0.01
constexpr double k_sample_fraction = 0.01;

class Dgc final : public Compressor {
public:
    explicit Dgc(const CompressionSpec& spec) : spec_(spec) {}

    [[nodiscard]] CompressedTensor compress(const TensorShape& t, double bytes_per_element) const override {
        const double n = static_cast<double>(t.elements);
        const double b = bytes_per_element;
        const double k = sparse_k(n, spec_.density);
        const double s = std::min(n, std::max(1.0, std::ceil(k_sample_fraction * n)));
        CompressedTensor c;
        c.aggregation = Aggregation::allgather;
        c.payload_bytes = packed_bytes(k * (spec_.value_bits + spec_.index_bits));
        c.encode = work(2.0 * b * n, b * n, 2.0 * n);                   // momentum correction
        c.encode += work(s * b, 0.0, s * std::log2(std::max(2.0, s)));  // sampled threshold
        c.encode += work(b * n, c.payload_bytes, 2.0 * n);              // filtering pass
        c.encode += work(0.0, k * b + b * n, 0.0);                      // mask u, zero the receive buffer
        c.decode_per_payload = work(c.payload_bytes + k * b, k * b, k);
        add_error_feedback(c, n, b);  // accumulation v and its masking
        return c;
    }
    [[nodiscard]] std::string describe() const override {
        return compression_detail::describe("dgc", fmt::format("{}density {:g}", sparse_bits(spec_), spec_.density),
                                            true);
    }

private:
    CompressionSpec spec_;
};

}  // namespace

static std::unique_ptr<Compressor> make_dgc(const CompressionSpec& spec) {
    return std::make_unique<Dgc>(spec);
}

const CompressorInfo& dgc_compressor() {
    static const CompressorInfo info = [] {
        std::vector<CompressorParam> sparse{density_param()};
        for (const CompressorParam& w : sparse_width_params(true)) sparse.push_back(w);
        CompressorInfo c;
        c.name = "dgc";
        c.description = "Deep Gradient Compression: sampled threshold, momentum correction (Lin et al., ICLR 2018)";
        c.aggregation = Aggregation::allgather;
        c.params = lossy_params(sparse, ErrorFeedbackRule::on);
        c.error_feedback = ErrorFeedbackRule::on;
        c.byteps = false;  // BytePS servers sum; these payloads cannot be summed
        c.make = make_dgc;
        return c;
    }();
    return info;
}

}  // namespace ddlsim::models::compression_detail
