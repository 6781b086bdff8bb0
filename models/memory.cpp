// Memory per GPU (the model is stated in memory.hpp).
#include "models/memory.hpp"

#include "models/compression.hpp"

namespace ddlsim::models {

MemoryEstimate memory_per_gpu(const TrainingJob& job, Optimizer optimizer, std::uint32_t w) {
    const DeviceSpec& d = job.device_of(w);
    const double params = static_cast<double>(job.workload.params());
    const bool amp = d.precision == Precision::fp16 || d.precision == Precision::bf16 || d.precision == Precision::fp8;
    MemoryEstimate m;
    m.weights = params * (amp ? 2.0 + 4.0 : 4.0);
    m.gradients = params * job.bytes_per_param;
    switch (optimizer) {
        case Optimizer::sgd: m.optimizer = 0.0; break;
        case Optimizer::momentum: m.optimizer = 4.0 * params; break;
        case Optimizer::adam:
        case Optimizer::adamw:
        case Optimizer::lamb: m.optimizer = 8.0 * params; break;
    }
    double kept = 0.0;  // activation elements kept per sample
    for (const Layer& l : job.workload.layers)
        for (const LayerPart& p : l.parts)
            if (p.kind != PartKind::elementwise) kept += p.activations / 2.0;  // in-place ReLU, adds: nothing new
    m.activations = kept * job.batch_size * activation_bytes(d.precision);
    if (job.overlap.fusion == Fusion::buffer) m.buffers += m.gradients;
    if (job.compression.kind != "none") {
        const auto c = make_compressor(job.compression);
        for (const Layer& l : job.workload.layers)
            for (const Tensor& t : l.tensors)
                if (t.params > 0) m.buffers += c->compress(tensor_shape(t), job.bytes_per_param).error_feedback_bytes;
    }
    m.capacity = d.memory_capacity;
    return m;
}

}  // namespace ddlsim::models
