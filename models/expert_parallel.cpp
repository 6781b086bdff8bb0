// Expert parallelism's split of a workload (expert_parallel.hpp states the model).
#include "models/expert_parallel.hpp"

#include <algorithm>

namespace ddlsim::models {

double expert_rank_load(const Workload& w, std::uint32_t e, double imbalance) {
    if (w.experts <= 0 || e == 0) return 1.0;
    const double cap = w.capacity_factor > 0.0 ? w.capacity_factor : imbalance;
    const double hot = std::max(1.0, std::min(imbalance, cap));
    const double local = static_cast<double>(w.experts) / e;
    // At most e: the busiest rank cannot take more than every rank's tokens.
    return std::min((hot + local - 1.0) / local, static_cast<double>(e));
}

Workload expert_shard(const Workload& w, std::uint32_t e, double load) {
    if (e <= 1 && load == 1.0) return w;
    Workload out = w;
    const double ranks = std::max<std::uint32_t>(e, 1);
    for (Layer& layer : out.layers) {
        if (!layer.routed_experts) continue;
        for (Tensor& t : layer.tensors)
            if (t.expert) {
                t.rows /= static_cast<std::int64_t>(ranks);
                t.params = t.rows * t.cols;
            }
        for (LayerPart& p : layer.parts) {
            if (p.gemms_per_sample > 0.0) {  // the grouped GEMM of the rank's experts, each over e ranks' tokens
                p.weights /= ranks;
                p.gemms_per_sample /= ranks;
                p.rows_per_sample *= ranks * load;
            }
            p.flops *= load;
            p.activations *= load;
            p.elements *= load;
            p.bytes *= load;
        }
        layer.fwd_flops *= load;
    }
    return out;
}

double expert_all_to_all_bytes_per_sample(const Workload& w, double element_bytes) {
    return static_cast<double>(w.tokens_per_sample * w.experts_per_token * w.hidden) * element_bytes;
}

double expert_params(const Workload& w) {
    double n = 0.0;
    for (const Layer& l : w.layers)
        for (const Tensor& t : l.tensors)
            if (t.expert) n += static_cast<double>(t.params);
    return n;
}

}  // namespace ddlsim::models
