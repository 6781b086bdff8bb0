// Tensor parallelism's split of a workload (tensor_parallel.hpp states the model).
#include "models/tensor_parallel.hpp"

#include <algorithm>
#include <cmath>

namespace ddlsim::models {
namespace {

enum class Split : std::uint8_t { whole, outside, column, row, inside };

bool is_gemm(const LayerPart& p) {
    return p.kind == PartKind::matmul || p.kind == PartKind::conv;
}

bool token_embedding(const Layer& l) {
    for (const LayerPart& p : l.parts)
        if (p.kind == PartKind::embedding && p.weights > 0.0) return true;
    return false;
}

bool holds_gemm(const Layer& l) {
    for (const LayerPart& p : l.parts)
        if (is_gemm(p)) return true;
    return false;
}

/// How each part of each layer splits, and the layers' regions.
struct Plan {
    std::vector<std::vector<Split>> parts;
    std::vector<TensorRegion> regions;
};

Plan plan(const Workload& w) {
    Plan out;
    out.parts.resize(w.layers.size());
    out.regions.resize(w.layers.size());
    std::int64_t first_block = -1, last_block = -1;
    for (std::size_t l = 0; l < w.layers.size(); ++l)
        if (w.layers[l].block >= 0) {
            if (first_block < 0) first_block = static_cast<std::int64_t>(l);
            last_block = static_cast<std::int64_t>(l);
        }
    if (first_block < 0) {  // no blocks: nothing splits
        for (std::size_t l = 0; l < w.layers.size(); ++l) out.parts[l].assign(w.layers[l].parts.size(), Split::whole);
        return out;
    }
    bool inside = false, mixed = false;  // inside a region; non-GEMM work seen since its column GEMMs
    std::int32_t block = -1;
    for (std::size_t l = 0; l < w.layers.size(); ++l) {
        const Layer& layer = w.layers[l];
        auto& parts = out.parts[l];
        const auto at = static_cast<std::int64_t>(l);
        if (layer.block < 0) {
            const bool head = at > last_block && holds_gemm(layer);
            const bool embedding = at < first_block && token_embedding(layer);
            out.regions[l].ends = embedding;
            bool seen_gemm = false;
            for (const LayerPart& p : layer.parts) {
                if (head && is_gemm(p)) {
                    parts.push_back(Split::column);
                    seen_gemm = true;
                    out.regions[l].starts = true;
                } else if (head && seen_gemm) {
                    parts.push_back(Split::inside);  // the loss over the rank's share of the vocabulary's logits
                } else if (embedding && p.kind == PartKind::embedding && p.weights > 0.0) {
                    parts.push_back(Split::column);  // the rank's rows of the table
                } else {
                    parts.push_back(Split::outside);
                }
            }
            continue;
        }
        if (layer.block != block) {
            block = layer.block;
            inside = false;
        }
        for (const LayerPart& p : layer.parts) {
            if (is_gemm(p)) {
                if (!inside) {
                    inside = true;
                    mixed = false;
                    out.regions[l].starts = true;
                    parts.push_back(Split::column);
                } else if (mixed) {
                    inside = false;
                    out.regions[l].ends = true;
                    parts.push_back(Split::row);
                } else {
                    parts.push_back(Split::column);
                }
                continue;
            }
            if (inside) {
                mixed = true;
                parts.push_back(Split::inside);
            } else {
                parts.push_back(Split::outside);
            }
        }
    }
    return out;
}

std::int64_t ceil_div(std::int64_t a, std::uint32_t t) {
    return (a + static_cast<std::int64_t>(t) - 1) / static_cast<std::int64_t>(t);
}

}  // namespace

std::vector<TensorRegion> tensor_regions(const Workload& w) {
    return plan(w).regions;
}

Workload tensor_shard(const Workload& w, std::uint32_t t, bool sequence_parallel) {
    if (t <= 1) return w;
    const Plan pl = plan(w);
    const double inv = 1.0 / t;
    Workload out = w;
    out.kv_dim = w.kv_dim / t;  // the rank's key/value heads
    for (std::size_t l = 0; l < out.layers.size(); ++l) {
        Layer& layer = out.layers[l];
        const bool split_layer = layer.block >= 0 || pl.regions[l].starts || pl.regions[l].ends;
        double flops = 0.0;
        for (std::size_t i = 0; i < layer.parts.size(); ++i) {
            LayerPart& p = layer.parts[i];
            const Split s = pl.parts[l][i];
            // A GEMM reads its input and writes its output: rows x (in + out) elements per sample.
            const double in =
                p.rows_per_sample > 0.0 && p.cols > 0.0 ? p.activations / p.rows_per_sample - p.cols : 0.0;
            switch (s) {
                case Split::whole: break;
                case Split::outside:
                    if (sequence_parallel) {
                        p.activations *= inv;
                        p.elements *= inv;
                        p.bytes *= inv;
                    }
                    break;
                case Split::column:  // each rank computes 1/t of the output's columns from the whole input
                    p.flops *= inv;
                    p.weights *= inv;
                    if (p.kind == PartKind::embedding) break;  // the masked lookup writes the whole output
                    if (in > 0.0)
                        p.activations = p.rows_per_sample * (in + p.cols * inv);
                    else
                        p.activations *= inv;
                    p.cols *= inv;
                    break;
                case Split::row:  // each rank multiplies its 1/t of the input's columns into partial sums
                    p.flops *= inv;
                    p.weights *= inv;
                    if (in > 0.0)
                        p.activations = p.rows_per_sample * (in * inv + p.cols);
                    else
                        p.activations *= inv;
                    break;
                case Split::inside:  // attention heads, or element-wise work on the rank's share of the width
                    p.flops *= inv;
                    p.weights *= inv;
                    p.activations *= inv;
                    p.scores *= inv;
                    p.elements *= inv;
                    p.bytes *= inv;
                    p.gemms_per_sample *= inv;
                    break;
            }
            flops += p.flops;
        }
        if (!layer.parts.empty()) layer.fwd_flops = flops;
        if (!split_layer) continue;
        // Weight matrices split (the token embedding's and the head's by the vocabulary); vectors stay whole, except
        // a position table outside the regions (replicated, as Megatron's position embeddings).
        for (Tensor& tensor : layer.tensors) {
            if (tensor.rows > 1 && tensor.cols > 1 &&
                (layer.block >= 0 || pl.regions[l].starts ||
                 std::any_of(layer.parts.begin(), layer.parts.end(), [&](const LayerPart& p) {
                     return p.kind == PartKind::embedding &&
                            std::abs(p.weights * t - static_cast<double>(tensor.params)) < 0.5 * t;
                 }))) {
                tensor.rows = ceil_div(tensor.rows, t);
                tensor.params = tensor.rows * tensor.cols;
            }
        }
    }
    return out;
}

double tensor_collective_bytes_per_sample(const Workload& w, double element_bytes) {
    return static_cast<double>(w.tokens_per_sample) * static_cast<double>(w.hidden) * element_bytes;
}

}  // namespace ddlsim::models
