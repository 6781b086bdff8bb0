// Random-k sparsification: send k = max(1, ceil(d n)) elements at indices drawn from a seed all workers share, so
// every worker picks the same indices, no index is sent and payloads add element-wise (Stich, Cordonnier, Jaggi,
// "Sparsified SGD with Memory", NeurIPS 2018; Wangni, Wang, Liu, Zhang, "Gradient Sparsification for
// Communication-Efficient Distributed Optimization", NeurIPS 2018).
//   wire:    ceil(k value_bits / 8) bytes, summable
//   encode:  draw k indices from a counter-based generator (4k flops), gather k values (read kB, write P)
//   decode:  once on the reduced payload, zero the dense gradient (write Bn), scatter the k values (read P, write
//            kB), k flops (the n / k rescaling of the unbiased variant)
//   error feedback (optional): + 5Bn bytes and 2n flops to encode, residual Bn bytes
#include <fmt/format.h>

#include "models/compression/codec_detail.hpp"

namespace ddlsim::models::compression_detail {
namespace {

constexpr double k_flops_per_index = 4.0;

class RandomK final : public Compressor {
public:
    explicit RandomK(const CompressionSpec& spec) : spec_(spec) {}

    [[nodiscard]] CompressedTensor compress(const TensorShape& t, double bytes_per_element) const override {
        const double n = static_cast<double>(t.elements);
        const double b = bytes_per_element;
        const double k = sparse_k(n, spec_.density);
        CompressedTensor c;
        c.aggregation = Aggregation::summable;
        c.payload_bytes = packed_bytes(k * spec_.value_bits);
        c.encode = work(k * b, c.payload_bytes, k_flops_per_index * k);
        c.decode_per_payload = work(c.payload_bytes, b * n + k * b, k);
        if (spec_.error_feedback) add_error_feedback(c, n, b);
        return c;
    }
    [[nodiscard]] std::string describe() const override {
        const std::string values = spec_.value_bits == 32 ? "" : fmt::format("{}-bit values, ", spec_.value_bits);
        return compression_detail::describe("randomk", fmt::format("{}density {:g}", values, spec_.density),
                                            spec_.error_feedback);
    }

private:
    CompressionSpec spec_;
};

}  // namespace

static std::unique_ptr<Compressor> make_randomk(const CompressionSpec& spec) {
    return std::make_unique<RandomK>(spec);
}

const CompressorInfo& randomk_compressor() {
    static const CompressorInfo info = [] {
        std::vector<CompressorParam> sparse{density_param()};
        for (const CompressorParam& w : sparse_width_params(true)) sparse.push_back(w);
        CompressorInfo c;
        c.name = "randomk";
        c.description = "Random-k sparsification, indices from a shared seed, summable (Stich et al., NeurIPS 2018)";
        c.aggregation = Aggregation::summable;
        c.params = lossy_params(sparse, ErrorFeedbackRule::optional);
        c.error_feedback = ErrorFeedbackRule::optional;
        c.make = make_randomk;
        return c;
    }();
    return info;
}

}  // namespace ddlsim::models::compression_detail
