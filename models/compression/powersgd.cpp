// PowerSGD: rank-r approximation of every matrix-shaped gradient M (rows x cols) by one step of power iteration,
// warm-started from the previous step's Q, with error feedback (Vogels, Karimireddy, Jaggi, "PowerSGD: Practical
// Low-Rank Gradient Compression for Distributed Optimization", NeurIPS 2019, Algorithm 1; error feedback is part
// of the algorithm there, so it is always on here). P and Q are linear in M, so both are summed by the configured
// all-reduce.
//   wire:    P = rows x r and Q = cols x r elements of B bytes (p_bytes, q_bytes), aggregation lowrank: all-reduce
//            P, orthogonalise, all-reduce Q. Vectors (cols == 1) and matrices that would not shrink at least
//            twofold (2 (rows + cols) r >= rows cols) are sent dense (dense_bytes = Bn, summed, no work, no
//            residual), as PyTorch's powerSGD_hook does by default (torch/distributed/algorithms/ddp_comm_hooks/
//            powerSGD_hook.py @00c22ce5, _should_compress: compressed_size * min_compression_rate <
//            uncompressed_size, PowerSGDState(min_compression_rate=2))
//   encode:  error-feedback add (3Bn bytes, n flops); P = M Q (read M and Q, write P; 2 rows cols r flops)
//   between: Gram-Schmidt orthogonalisation of P (read and write P, 2 rows r^2 flops); Q = M^T P (read M and P,
//            write Q; 2 rows cols r flops)
//   decode:  once on the reduced Q, M' = P Q^T (read P and Q, write M'; 2 rows cols r flops) fused with the
//            error-feedback store e = M - M' (read M, write e: 2Bn bytes, n flops)
//   residual: Bn bytes (the warm-start Q, cols r B bytes, is not counted)
// M is rows x cols as tensor_shape() gives it; a zero-padded view computes on all rows x cols entries.
#include <fmt/format.h>

#include "models/compression/codec_detail.hpp"

namespace ddlsim::models::compression_detail {
namespace {

class PowerSgd final : public Compressor {
public:
    explicit PowerSgd(std::uint32_t rank) : rank_(rank) {}

    [[nodiscard]] CompressedTensor compress(const TensorShape& t, double bytes_per_element) const override {
        const TensorShape shape = t.rows == 0 ? matrix_view(t.elements) : t;
        const double n = static_cast<double>(t.elements);
        const double b = bytes_per_element;
        const double rows = static_cast<double>(shape.rows);
        const double cols = static_cast<double>(shape.cols);
        const double r = rank_;
        const double m = rows * cols;
        CompressedTensor c;
        c.aggregation = Aggregation::lowrank;
        constexpr double kMinCompressionRate = 2.0;  // PyTorch's default (above)
        if (shape.cols <= 1 || shape.rows <= 1 || kMinCompressionRate * (rows + cols) * r >= m) {
            c.dense_bytes = b * n;
            return c;
        }
        c.p_bytes = rows * r * b;
        c.q_bytes = cols * r * b;
        const double matmul_flops = 2.0 * rows * cols * r;
        c.encode = error_feedback_add(n, b);
        c.encode += work(b * m + c.q_bytes, c.p_bytes, matmul_flops);             // P = M Q
        c.between = work(c.p_bytes, c.p_bytes, 2.0 * rows * r * r);               // orthogonalise P
        c.between += work(b * m + c.p_bytes, c.q_bytes, matmul_flops);            // Q = M^T P
        c.decode_per_payload = work(c.p_bytes + c.q_bytes, b * m, matmul_flops);  // M' = P Q^T
        c.decode_per_payload += error_feedback_store(n, b);                       // e = M - M'
        c.error_feedback_bytes = b * n;
        return c;
    }
    [[nodiscard]] std::string describe() const override {
        return compression_detail::describe("powersgd", fmt::format("rank {}", rank_), true);
    }

private:
    std::uint32_t rank_;
};

}  // namespace

static std::unique_ptr<Compressor> make_powersgd(const CompressionSpec& spec) {
    return std::make_unique<PowerSgd>(spec.rank);
}

const CompressorInfo& powersgd_compressor() {
    static const CompressorInfo info = [] {
        CompressorParam rank{"rank", CompressorParam::Type::integer,
                             1,      false,
                             1e6,    4,
                             "",     "rank r of the P (rows x r) and Q (cols x r) factors"};
        rank.integer = &CompressionSpec::rank;
        CompressorInfo c;
        c.name = "powersgd";
        c.description = "PowerSGD rank-r power iteration, P and Q all-reduced (Vogels et al., NeurIPS 2019)";
        c.aggregation = Aggregation::lowrank;
        c.params = lossy_params({rank}, ErrorFeedbackRule::on);
        c.error_feedback = ErrorFeedbackRule::on;
        c.architectures = {"allreduce", "ps"};
        c.collectives_per_sync = 3.0;  // all-reduce P, all-reduce Q, and the dense parts
        c.make = make_powersgd;
        return c;
    }();
    return info;
}

}  // namespace ddlsim::models::compression_detail
