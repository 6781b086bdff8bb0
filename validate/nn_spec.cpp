// Model shapes, initialisation and the backend factory.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <stdexcept>

#include "sim/rng.hpp"
#include "validate/nn.hpp"
#include "validate/nn_backends.hpp"

namespace ddlsim::validate {
namespace {

class SpecBuilder {
public:
    explicit SpecBuilder(ModelKind k, std::uint32_t c, std::uint32_t h, std::uint32_t w) : c_(c), h_(h), w_(w) {
        spec_.kind = k;
        spec_.input = std::size_t{c} * h * w;
    }
    void linear(const std::string& name, std::uint32_t out) {
        OpSpec op = start(OpKind::linear);
        op.out_c = out;
        op.out_h = op.out_w = 1;
        op.weights = op.in_size() * out;
        op.bias = out;
        add_layer(name, op, 2.0 * static_cast<double>(op.weights));
    }
    void conv(const std::string& name, std::uint32_t out) {
        OpSpec op = start(OpKind::conv);
        op.out_c = out;
        op.out_h = h_;
        op.out_w = w_;
        op.weights = std::size_t{out} * c_ * 9;
        op.bias = out;
        add_layer(name, op, 2.0 * static_cast<double>(op.weights) * h_ * w_);
    }
    void relu() { push(start(OpKind::relu)); }
    void maxpool() {
        OpSpec op = start(OpKind::maxpool);
        op.out_h = h_ / 2;
        op.out_w = w_ / 2;
        push(op);
    }
    ModelSpec finish() { return std::move(spec_); }

private:
    OpSpec start(OpKind k) const {
        OpSpec op;
        op.kind = k;
        op.in_c = c_;
        op.in_h = h_;
        op.in_w = w_;
        op.out_c = c_;
        op.out_h = h_;
        op.out_w = w_;
        op.offset = spec_.params;
        op.layer = spec_.layers.empty() ? 0 : static_cast<std::uint32_t>(spec_.layers.size() - 1);
        return op;
    }
    void add_layer(const std::string& name, OpSpec op, double flops) {
        if (op.kind == OpKind::linear) op.in_c = static_cast<std::uint32_t>(op.in_size()), op.in_h = op.in_w = 1;
        op.layer = static_cast<std::uint32_t>(spec_.layers.size());
        spec_.layers.push_back({name, op.weights + op.bias, spec_.params, flops});
        spec_.params += op.weights + op.bias;
        push(op);
    }
    void push(const OpSpec& op) {
        c_ = op.out_c;
        h_ = op.out_h;
        w_ = op.out_w;
        spec_.ops.push_back(op);
    }
    ModelSpec spec_;
    std::uint32_t c_, h_, w_;
};

}  // namespace

const char* model_name(ModelKind k) {
    return k == ModelKind::mlp ? "mlp" : "cnn";
}
const char* backend_name(Backend b) {
    return b == Backend::cpu ? "cpu" : "cuda";
}

ModelSpec model_spec(ModelKind k) {
    SpecBuilder b(k, 1, 28, 28);
    if (k == ModelKind::mlp) {
        b.linear("fc1", 256);
        b.relu();
        b.linear("fc2", 128);
        b.relu();
        b.linear("fc3", 10);
    } else {
        b.conv("conv1", 16);
        b.relu();
        b.maxpool();
        b.conv("conv2", 32);
        b.relu();
        b.maxpool();
        b.linear("fc", 10);
    }
    return b.finish();
}

std::vector<float> initial_params(const ModelSpec& spec, std::uint64_t seed) {
    std::vector<float> p(spec.params, 0.0F);
    sim::rng::SplitMix64 g(seed, "initial parameters");
    for (const auto& op : spec.ops) {
        if (op.weights == 0) continue;
        const double fan_in = static_cast<double>(op.weights) / op.out_c;
        const double limit = std::sqrt(6.0 / fan_in);
        for (std::size_t i = 0; i < op.weights; ++i)
            p[op.offset + i] = static_cast<float>((2.0 * sim::rng::uniform01(g) - 1.0) * limit);
    }
    return p;
}

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool backend_available(Backend backend, std::string* why) {
    if (backend == Backend::cpu) return true;
    return cuda_backend_available(why);
}

std::unique_ptr<Model> make_model(ModelKind kind, Backend backend, std::uint64_t seed) {
    auto spec = model_spec(kind);
    auto params = initial_params(spec, seed);
    std::unique_ptr<Model> m;
    if (backend == Backend::cpu) {
        m = make_cpu_model(std::move(spec));
    } else {
        std::string why;
        if (!cuda_backend_available(&why)) throw std::runtime_error("CUDA backend unavailable: " + why);
        m = make_cuda_model(std::move(spec));
    }
    m->set_params(params);
    return m;
}

}  // namespace ddlsim::validate
