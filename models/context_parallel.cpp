// Context parallelism's split of a workload (context_parallel.hpp states the model).
#include "models/context_parallel.hpp"

namespace ddlsim::models {

Workload context_shard(const Workload& w, std::uint32_t c) {
    if (c <= 1) return w;
    const double inv = 1.0 / c;
    Workload out = w;
    out.tokens_per_sample = w.tokens_per_sample / c;
    for (Layer& layer : out.layers) {
        for (LayerPart& p : layer.parts) {
            p.flops *= inv;
            p.activations *= inv;
            p.scores *= inv;
            p.elements *= inv;
            p.bytes *= inv;
            p.rows_per_sample *= inv;  // a GEMM's rows are tokens; attention's, the rank's queries
        }
        layer.fwd_flops *= inv;
        if (layer.activation_bytes) *layer.activation_bytes *= inv;
    }
    return out;
}

double context_block_bytes_per_sample(const Workload& w, double element_bytes) {
    return static_cast<double>(w.tokens_per_sample) * 2.0 * static_cast<double>(w.kv_dim) * element_bytes;
}

bool attends(const Layer& l) {
    for (const LayerPart& p : l.parts)
        if (p.kind == PartKind::attention) return true;
    return false;
}

}  // namespace ddlsim::models
