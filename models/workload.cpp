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
