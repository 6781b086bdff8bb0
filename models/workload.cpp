// Totals over a workload's layers and tensors; see workload.hpp.
#include "models/workload.hpp"

#include <algorithm>

namespace ddlsim::models {

std::int64_t Layer::params() const {
    std::int64_t total = 0;
    for (const Tensor& tensor : tensors) total += tensor.params;
    return total;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> shard_units(const Workload& w, std::uint32_t wrap) {
    wrap = std::max<std::uint32_t>(1, wrap);
    // A unit key per layer: its block / wrap, or (for layers outside blocks) its own position / wrap among the
    // consecutive layers without a block.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> units;
    std::int64_t key = -1;
    std::uint32_t run = 0;  // position among consecutive block-less layers
    for (std::uint32_t l = 0; l < w.layers.size(); ++l) {
        const std::int32_t b = w.layers[l].block;
        std::int64_t k = 0;
        if (b >= 0) {
            run = 0;
            k = static_cast<std::int64_t>(b / wrap) * 2;
        } else {
            k = -1 - static_cast<std::int64_t>(l - (run % wrap));  // groups of wrap consecutive block-less layers
            ++run;
        }
        if (units.empty() || k != key) {
            units.emplace_back(l, l);
            key = k;
        } else {
            units.back().second = l;
        }
    }
    return units;
}

bool Workload::has_blocks() const {
    return std::any_of(layers.begin(), layers.end(), [](const Layer& x) { return x.block >= 0; });
}

std::vector<bool> checkpointed_layers(const Workload& w) {
    const bool blocks = w.has_blocks();
    std::vector<bool> out;
    for (const Layer& l : w.layers) out.push_back(!blocks || l.block >= 0);
    return out;
}

std::int64_t Workload::params() const {
    std::int64_t total = 0;
    for (const Layer& layer : layers) total += layer.params();
    return total;
}

std::size_t Workload::tensor_count() const {
    std::size_t total = 0;
    for (const Layer& layer : layers) total += layer.tensors.size();
    return total;
}

double Workload::fwd_flops() const {
    double total = 0.0;
    for (const Layer& layer : layers) total += layer.fwd_flops;
    return total;
}

}  // namespace ddlsim::models

namespace ddlsim::models {

const std::vector<std::string>& part_kind_names() {
    static const std::vector<std::string> names = sim::enum_names<PartKind>();
    return names;
}

std::string_view part_kind_name(PartKind k) {
    return sim::enum_name(k);
}

}  // namespace ddlsim::models
