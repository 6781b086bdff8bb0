// Memory per GPU (the model is stated in memory.hpp).
#include "models/memory.hpp"

#include <algorithm>

#include "models/compression.hpp"
#include "models/program/pipeline.hpp"

namespace ddlsim::models {

MemoryEstimate memory_per_gpu(const TrainingJob& job, Optimizer optimizer, std::uint32_t w) {
    const DeviceSpec& d = job.device_of(w);
    // Pipeline parallelism: rank w holds its stage's layers (its chunks' under the interleaved schedule), and the
    // activations of the micro-batches in flight on it: every one with GPipe, at most p - s on stage s with 1F1B
    // (PipeDream-Flush; Narayanan et al. SC'21 §2.2); interleaved, its warm-up's chunks and one more, each 1/v of the
    // stage's (megatron/core/pipeline_parallel/schedules.py; p (1 + (p - 1)/(p v)) micro-batches on the first
    // stage, Korthikanti et al., arXiv 2205.05198, §4.2.3).
    std::vector<program::StageLayers> chunks{
        {0, static_cast<std::uint32_t>(std::max<std::size_t>(1, job.workload.layers.size()) - 1)}};
    double in_flight = 1.0;
    const ParallelismSpec& par = job.parallelism;
    if (par.pipeline > 1) {
        const std::uint32_t p = par.pipeline, s = par.stage_of(w), v = par.chunks();
        const std::uint32_t m = job.gradient_accumulation;
        chunks = program::stage_chunks(program::pipeline_stages(job.workload, par), p, s);
        // The warm-up's forwards and the one more of the steady state (GPipe: all m), in stages' worth.
        in_flight = std::min(program::warmup_forwards(par, s, m) + 1, m * v) / static_cast<double>(v);
    }
    double params = 0.0;
    for (const program::StageLayers& stage : chunks)
        for (std::uint32_t l = stage.first; l <= stage.last && l < job.workload.layers.size(); ++l)
            params += static_cast<double>(job.workload.layers[l].params());
    const bool amp = d.precision == Precision::fp16 || d.precision == Precision::bf16 || d.precision == Precision::fp8;
    MemoryEstimate m;
    const ShardingSpec& sh = job.sharding;
    const double g =
        sh.any() ? static_cast<double>(std::max<std::uint32_t>(1, sh.group_size ? sh.group_size : job.workers)) : 1.0;
    const double weights_share = sh.stage >= 3 ? 1.0 / g : 1.0;  // the working copy
    const double master_share = sh.stage >= 1 ? 1.0 / g : 1.0;   // AMP's fp32 master weights (optimizer state)
    const bool grads_sharded = sh.stage >= 2 && job.gradient_accumulation == 1;
    m.weights = amp ? params * (2.0 * weights_share + 4.0 * master_share) : params * 4.0 * weights_share;
    m.gradients = params * job.bytes_per_param * (grads_sharded ? 1.0 / g : 1.0);
    m.optimizer = 4.0 * optimizer_state_tensors(optimizer) * params * master_share;  // FP32 state tensors
    // DiLoCo's outer optimizer (Douillard et al., arXiv 2311.08105, Algorithm 1): the global parameters of the last
    // outer step and the Nesterov momentum, two FP32 tensors, of the worker's 1/g slice of its island's g workers
    // (each updates its slice, models/diloco.hpp).
    if (job.sync.kind == SyncKind::diloco)
        m.optimizer += 8.0 * params * job.sync.islands / static_cast<double>(std::max<std::uint32_t>(1, job.workers));
    double kept = 0.0;  // activation elements kept per sample
    const auto& layers = job.workload.layers;
    // Selective recomputation keeps nothing of the attention scores (LayerPart::scores): they are recomputed.
    auto layer_kept = [&job](const Layer& l) {
        double k = 0.0;
        for (const LayerPart& p : l.parts)
            if (p.kind != PartKind::elementwise)  // in-place ReLU, adds: nothing new
                k += (p.activations - (job.selective_recomputation ? p.scores : 0.0)) / 2.0;
        return k;
    };
    // Full checkpointing keeps each checkpointed segment's input (a block's, or a layer's: its first kernel's read
    // half) and, during backward, one segment's activations at a time while it is recomputed.
    double segment = 0.0, largest = 0.0;
    const std::vector<bool> ckpt = checkpointed_layers(job.workload);
    for (const program::StageLayers& stage : chunks)
        for (std::size_t i = stage.first; i <= stage.last && i < layers.size(); ++i) {
            const Layer& l = layers[i];
            if (!job.activation_checkpointing || !ckpt[i]) {
                kept += layer_kept(l);
                continue;
            }
            const bool starts = i == stage.first || !ckpt[i - 1] || l.block < 0 || layers[i - 1].block != l.block;
            if (starts) {
                largest = std::max(largest, segment);
                segment = 0.0;
                if (!l.parts.empty()) kept += l.parts.front().activations / 2.0;
            }
            segment += layer_kept(l);
        }
    // Each micro-batch in flight keeps its own; the segment being recomputed is one at a time.
    m.activations = (kept * in_flight + std::max(largest, segment)) * job.batch_size * activation_bytes(d.precision);
    if (sh.stage >= 3) {
        double unit = 0.0;  // the largest unit's parameters
        for (const auto& [f, last] : shard_units(job.workload, sh.wrap)) {
            double u = 0.0;
            for (std::uint32_t l = f; l <= last; ++l) u += static_cast<double>(job.workload.layers[l].params());
            unit = std::max(unit, u);
        }
        m.buffers += unit * job.bytes_per_param * (2.0 + sh.prefetch);
        // ZeRO++ hpZ: the secondary copy, 1/h of the weights at their width (DeepSpeed's ds_secondary_tensor).
        if (sh.hpz(job.workers)) m.weights += params * job.bytes_per_param / sh.hpz_partition_size;
    } else if (sh.any()) {
        if (job.overlap.fusion == Fusion::buffer)
            m.buffers += std::min(job.overlap.bucket_size.value(), params * job.bytes_per_param);
    } else if (job.overlap.fusion == Fusion::buffer) {
        m.buffers += m.gradients;
    }
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
