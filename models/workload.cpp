// Totals over a workload's layers and tensors; see workload.hpp.
#include "models/workload.hpp"

namespace ddlsim::models {

std::int64_t Layer::params() const {
    std::int64_t total = 0;
    for (const Tensor& tensor : tensors) total += tensor.params;
    return total;
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
