// The CUDA backend: cuBLAS for the matrix products (row-major products mapped onto column-major
// cuBLAS by computing C^T = B^T A^T), the kernels of cuda_kernels.cu for everything else. The
// model's parameters, gradient and activations live on the GPU; the trainer sees the gradient
// in host memory (copied once per backward) and hands back the averaged gradient (copied once).
// The codecs encode on the GPU from the model's device gradient and keep the error-feedback
// residual there; decoding a received payload (host memory) is the CPU codec's.
//
// A CUDA context does not survive fork(): the validation calls all of this in child processes.
//
// This file and cuda_kernels.cu make libddlsim_cuda.so, which ddlsim opens only for --backend cuda
// (nn_cuda_loader.cpp); it exports nothing but ddlsim_cuda_backend() (the table of nn_backends.hpp).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "sim/rng.hpp"
#include "validate/cuda_kernels.hpp"
#include "validate/nn_backends.hpp"

namespace ddlsim::validate {
namespace {

namespace k = cuda;

void ck(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(fmt::format("CUDA {}: {}", what, cudaGetErrorString(e)));
}
void ckb(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(fmt::format("cuBLAS {}: status {}", what, int{s}));
}

template <typename T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t n) { resize(n); }
    ~DeviceBuffer() { cudaFree(p_); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_), cap_(o.cap_) { o.p_ = nullptr, o.n_ = o.cap_ = 0; }
    DeviceBuffer& operator=(DeviceBuffer&&) = delete;

    void resize(std::size_t n) {  // keeps the allocation when it is large enough; contents undefined
        if (n <= cap_) {
            n_ = n;
            return;
        }
        cudaFree(p_);
        p_ = nullptr;
        void* raw = nullptr;
        ck(cudaMalloc(&raw, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc");
        p_ = static_cast<T*>(raw);
        n_ = cap_ = n;
    }
    [[nodiscard]] T* data() const { return p_; }
    [[nodiscard]] std::size_t size() const { return n_; }
    void upload(const T* host, std::size_t n) {
        resize(n);
        ck(cudaMemcpy(p_, host, n * sizeof(T), cudaMemcpyHostToDevice), "upload");
    }
    void download(T* host, std::size_t n) const {
        ck(cudaMemcpy(host, p_, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
    }

private:
    T* p_ = nullptr;
    std::size_t n_ = 0;
    std::size_t cap_ = 0;
};

class Cublas {
public:
    Cublas() { ckb(cublasCreate(&h_), "cublasCreate"); }
    ~Cublas() { cublasDestroy(h_); }
    Cublas(const Cublas&) = delete;
    Cublas& operator=(const Cublas&) = delete;
    [[nodiscard]] cublasHandle_t get() const { return h_; }

private:
    cublasHandle_t h_ = nullptr;
};

// Row-major C (m x n) = op(A) (m x k) . op(B) (k x n) + beta C, `batch` times with element strides.
void gemm(cublasHandle_t h, bool ta, bool tb, int m, int n, int kk, const float* a, const float* b, float* c,
          float beta, int batch = 1, long long sa = 0, long long sb = 0, long long sc = 0) {
    const float alpha = 1.0F;
    const int lda = ta ? m : kk, ldb = tb ? kk : n;
    ckb(cublasSgemmStridedBatched(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, kk, &alpha,
                                  b, ldb, sb, a, lda, sa, &beta, c, n, sc, batch),
        "sgemm");
}

int as_int(std::size_t v) {
    return static_cast<int>(v);
}

class CudaModel final : public Model {
public:
    explicit CudaModel(ModelSpec spec)
        : Model(std::move(spec)),
          params_(spec_.params),
          grad_(spec_.params),
          step_(spec_.params),
          host_grad_(spec_.params, 0.0F),
          acts_(spec_.ops.size() + 1),
          dacts_(spec_.ops.size() + 1),
          cols_(spec_.ops.size()),
          args_(spec_.ops.size()) {}

    Backend backend() const override { return Backend::cuda; }

    void set_params(std::span<const float> p) override {
        check_size(p.size());
        params_.upload(p.data(), p.size());
    }
    void get_params(std::span<float> out) const override {
        check_size(out.size());
        params_.download(out.data(), out.size());
    }
    double forward_backward(const Batch& b) override {
        const double loss = forward(b, true);
        backward();
        dirty_ = true;
        return loss;
    }
    double loss(const Batch& b) override { return forward(b, false); }
    std::span<const float> gradient() override {
        if (dirty_) grad_.download(host_grad_.data(), host_grad_.size()), dirty_ = false;
        return host_grad_;
    }
    const float* device_gradient() const override { return grad_.data(); }
    void apply_gradient(std::span<const float> g, float lr) override {
        check_size(g.size());
        step_.upload(g.data(), g.size());
        for (std::size_t l = 0; l < spec_.layers.size(); ++l) {
            const double t0 = timing_ ? sync_now() : 0.0;
            const auto& info = spec_.layers[l];
            k::sgd(params_.data() + info.offset, step_.data() + info.offset, lr, info.params);
            if (timing_) timings_[l].update_s += sync_now() - t0;
        }
    }
    double evaluate(const Dataset& d) override {
        std::size_t correct = 0;
        constexpr std::size_t kChunk = 500;
        std::vector<int> pred;
        for (std::size_t first = 0; first < d.size(); first += kChunk) {
            const Batch b = d.slice(first, kChunk);
            (void)forward(b, false);
            argmax_.resize(b.size);
            k::argmax_rows(acts_.back().data(), argmax_.data(), as_int(b.size), as_int(spec_.classes));
            pred.resize(b.size);
            argmax_.download(pred.data(), b.size);
            for (std::size_t i = 0; i < b.size; ++i) correct += pred[i] == b.y[i] ? 1 : 0;
        }
        return d.size() == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(d.size());
    }

private:
    void check_size(std::size_t n) const {
        if (n != spec_.params)
            throw std::invalid_argument(fmt::format("expected {} parameters, got {}", spec_.params, n));
    }
    static double sync_now() {
        ck(cudaDeviceSynchronize(), "synchronize");
        return now_s();
    }

    double forward(const Batch& b, bool keep) {
        if (b.size == 0 || b.x.size() != b.size * spec_.input)
            throw std::invalid_argument(
                fmt::format("batch of {} floats for {} samples of {}", b.x.size(), b.size, spec_.input));
        rows_ = as_int(b.size);
        acts_[0].upload(b.x.data(), b.x.size());
        labels_.upload(b.y.data(), b.y.size());
        const bool timed = timing_ && keep;
        for (std::size_t i = 0; i < spec_.ops.size(); ++i) {
            const double t0 = timed ? sync_now() : 0.0;
            forward_op(i);
            if (timed) timings_[spec_.ops[i].layer].fwd_s += sync_now() - t0;
        }
        const double t0 = timed ? sync_now() : 0.0;
        const int classes = as_int(spec_.classes);
        row_loss_.resize(b.size);
        if (keep) dacts_.back().resize(b.size * spec_.classes);
        k::softmax_xent(acts_.back().data(), labels_.data(), keep ? dacts_.back().data() : nullptr, row_loss_.data(),
                        rows_, classes);
        std::vector<float> losses(b.size);
        row_loss_.download(losses.data(), b.size);
        if (timed) timings_[spec_.ops.back().layer].fwd_s += now_s() - t0;
        double sum = 0.0;
        for (float l : losses) sum += l;
        return sum / static_cast<double>(b.size);
    }

    void forward_op(std::size_t i) {
        const OpSpec& op = spec_.ops[i];
        const float* in = acts_[i].data();
        DeviceBuffer<float>& out = acts_[i + 1];
        out.resize(static_cast<std::size_t>(rows_) * op.out_size());
        const float* w = params_.data() + op.offset;
        const float* bias = w + op.weights;
        switch (op.kind) {
            case OpKind::linear:
                gemm(blas_.get(), false, true, rows_, as_int(op.out_c), as_int(op.in_size()), in, w, out.data(), 0.0F);
                k::add_bias_rows(out.data(), bias, rows_, as_int(op.out_c));
                break;
            case OpKind::conv: {
                const int hw = as_int(op.in_h * op.in_w), kk = as_int(op.in_c * 9);
                cols_[i].resize(static_cast<std::size_t>(rows_) * kk * hw);
                k::im2col(in, cols_[i].data(), rows_, as_int(op.in_c), as_int(op.in_h), as_int(op.in_w));
                gemm(blas_.get(), false, false, as_int(op.out_c), hw, kk, w, cols_[i].data(), out.data(), 0.0F, rows_,
                     0, static_cast<long long>(kk) * hw, static_cast<long long>(op.out_c) * hw);
                k::add_bias_channels(out.data(), bias, rows_, as_int(op.out_c), hw);
                break;
            }
            case OpKind::relu: k::relu_forward(in, out.data(), out.size()); break;
            case OpKind::maxpool:
                args_[i].resize(out.size());
                k::maxpool_forward(in, out.data(), args_[i].data(), rows_, as_int(op.in_c), as_int(op.in_h),
                                   as_int(op.in_w));
                break;
        }
    }

    void backward() {
        for (std::size_t i = spec_.ops.size(); i-- > 0;) {
            const double t0 = timing_ ? sync_now() : 0.0;
            backward_op(i);
            if (timing_) timings_[spec_.ops[i].layer].bwd_s += sync_now() - t0;
        }
    }

    void backward_op(std::size_t i) {
        const OpSpec& op = spec_.ops[i];
        const float* in = acts_[i].data();
        const float* dout = dacts_[i + 1].data();
        DeviceBuffer<float>& din = dacts_[i];
        const bool need_din = i > 0;
        if (need_din) din.resize(static_cast<std::size_t>(rows_) * op.in_size());
        const float* w = params_.data() + op.offset;
        float* dw = grad_.data() + op.offset;
        float* db = dw + op.weights;
        switch (op.kind) {
            case OpKind::linear: {
                const int out_n = as_int(op.out_c), in_n = as_int(op.in_size());
                gemm(blas_.get(), true, false, out_n, in_n, rows_, dout, in, dw, 0.0F);
                k::column_sums(dout, db, rows_, out_n);
                if (need_din) gemm(blas_.get(), false, false, rows_, in_n, out_n, dout, w, din.data(), 0.0F);
                break;
            }
            case OpKind::conv: {
                const int hw = as_int(op.in_h * op.in_w), kk = as_int(op.in_c * 9), cout = as_int(op.out_c);
                for (int s = 0; s < rows_; ++s)
                    gemm(blas_.get(), false, true, cout, kk, hw, dout + static_cast<std::size_t>(s) * cout * hw,
                         cols_[i].data() + static_cast<std::size_t>(s) * kk * hw, dw, s == 0 ? 0.0F : 1.0F);
                k::channel_sums(dout, db, rows_, cout, hw);
                if (need_din) {
                    dcol_.resize(static_cast<std::size_t>(rows_) * kk * hw);
                    gemm(blas_.get(), true, false, kk, hw, cout, w, dout, dcol_.data(), 0.0F, rows_, 0,
                         static_cast<long long>(cout) * hw, static_cast<long long>(kk) * hw);
                    k::col2im(dcol_.data(), din.data(), rows_, as_int(op.in_c), as_int(op.in_h), as_int(op.in_w));
                }
                break;
            }
            case OpKind::relu:
                k::relu_backward(acts_[i + 1].data(), dout, din.data(), static_cast<std::size_t>(rows_) * op.in_size());
                break;
            case OpKind::maxpool:
                k::maxpool_backward(dout, args_[i].data(), din.data(), rows_, as_int(op.in_c), as_int(op.in_h),
                                    as_int(op.in_w));
                break;
        }
    }

    Cublas blas_;
    DeviceBuffer<float> params_, grad_, step_;
    std::vector<float> host_grad_;
    bool dirty_ = false;
    int rows_ = 0;
    std::vector<DeviceBuffer<float>> acts_, dacts_, cols_;
    std::vector<DeviceBuffer<std::uint32_t>> args_;
    DeviceBuffer<float> dcol_, row_loss_;
    DeviceBuffer<std::uint8_t> labels_;
    DeviceBuffer<int> argmax_;
};

class CudaCodec final : public Codec {
public:
    CudaCodec(CodecSpec spec, std::size_t n, std::uint64_t seed)
        : Codec(spec, n), p_(n), e_(spec.error_feedback ? n : 0), sum_(1), count_(1), seed_(seed) {
        CodecSpec plain = spec;
        plain.error_feedback = false;
        host_ = make_codec(plain, n, Backend::cpu, seed);
        if (spec_.error_feedback) ck(cudaMemset(e_.data(), 0, n * sizeof(float)), "memset");
    }

    std::vector<std::uint8_t> encode(std::span<const float> g, const float* device_g) override {
        if (g.size() != n_) throw std::invalid_argument("codec: gradient size differs from the codec's");
        if (device_g != nullptr)
            ck(cudaMemcpy(p_.data(), device_g, n_ * sizeof(float), cudaMemcpyDeviceToDevice), "copy gradient");
        else
            p_.upload(g.data(), n_);
        if (spec_.error_feedback) k::add_into(p_.data(), e_.data(), n_);
        std::vector<std::uint8_t> out(payload_bytes(spec_, n_));
        float sign_scale = 0.0F;
        switch (spec_.kind) {
            case CodecKind::none: p_.download(reinterpret_cast<float*>(out.data()), n_); break;
            case CodecKind::fp16:
                half_.resize(n_);
                k::fp16_encode(p_.data(), half_.data(), n_);
                half_.download(reinterpret_cast<std::uint16_t*>(out.data()), n_);
                break;
            case CodecKind::qsgd: {
                const std::size_t buckets = (out.size() - n_) / 4;
                norms_.resize(buckets);
                codes_.resize(n_);
                k::qsgd_encode(p_.data(), norms_.data(), codes_.data(), n_, sim::rng::substream(seed_, ++calls_));
                norms_.download(reinterpret_cast<float*>(out.data()), buckets);
                codes_.download(out.data() + 4 * buckets, n_);
                break;
            }
            case CodecKind::signsgd: {
                k::reduce_sum(p_.data(), n_, true, sum_.data());
                double l1 = 0.0;
                sum_.download(&l1, 1);
                sign_scale = static_cast<float>(l1 / static_cast<double>(n_));
                std::memcpy(out.data(), &sign_scale, 4);
                codes_.resize((n_ + 7) / 8);
                k::sign_encode(p_.data(), codes_.data(), n_);
                codes_.download(out.data() + 4, (n_ + 7) / 8);
                break;
            }
            case CodecKind::topk: encode_topk(out); break;
        }
        if (spec_.error_feedback) {  // e = p - D(C(p)), on the GPU
            ck(cudaMemcpy(e_.data(), p_.data(), n_ * sizeof(float), cudaMemcpyDeviceToDevice), "copy residual");
            switch (spec_.kind) {
                case CodecKind::none: ck(cudaMemset(e_.data(), 0, n_ * sizeof(float)), "memset"); break;
                case CodecKind::fp16: k::fp16_decode_add(half_.data(), e_.data(), -1.0F, n_); break;
                case CodecKind::qsgd: k::qsgd_decode_add(norms_.data(), codes_.data(), e_.data(), -1.0F, n_); break;
                case CodecKind::signsgd: k::sign_decode_add(codes_.data(), -sign_scale, e_.data(), n_); break;
                case CodecKind::topk:
                    k::scatter_add(idx_.data(), val_.data(), e_.data(), -1.0F, static_cast<unsigned>(idx_.size()));
                    break;
            }
        }
        return out;
    }

    void decode_add(std::span<const std::uint8_t> payload, std::span<float> acc, float scale) const override {
        host_->decode_add(payload, acc, scale);
    }

    double residual_norm() const override {
        if (!spec_.error_feedback) return 0.0;
        k::reduce_sum(e_.data(), n_, false, sum_.data());
        double s = 0.0;
        sum_.download(&s, 1);
        return std::sqrt(s);
    }

private:
    // The k largest |p|: bisection for the largest bit pattern T with count(|p| >= T) >= k
    // (non-negative floats order as their bit patterns), then every |p| > T and ties at T.
    void encode_topk(std::vector<std::uint8_t>& out) {
        const std::size_t kk = out.size() / 8;
        auto count = [&](std::uint32_t t) {
            k::count_at_least(p_.data(), n_, t, count_.data());
            unsigned c = 0;
            count_.download(&c, 1);
            return c;
        };
        std::uint32_t lo = 0, hi = 0x7F800000U;
        while (lo < hi) {
            const std::uint32_t mid = lo + (hi - lo + 1) / 2;
            if (count(mid) >= kk)
                lo = mid;
            else
                hi = mid - 1;
        }
        idx_.resize(kk);
        val_.resize(kk);
        k::select_topk(p_.data(), n_, lo, static_cast<unsigned>(kk), idx_.data(), val_.data(), count_.data());
        std::vector<std::uint32_t> idx(kk);
        std::vector<float> val(kk);
        idx_.download(idx.data(), kk);
        val_.download(val.data(), kk);
        std::vector<std::size_t> order(kk);
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return idx[a] < idx[b]; });
        for (std::size_t j = 0; j < kk; ++j) {
            std::memcpy(out.data() + 4 * j, &idx[order[j]], 4);
            std::memcpy(out.data() + 4 * (kk + j), &val[order[j]], 4);
        }
    }

    DeviceBuffer<float> p_, e_;
    mutable DeviceBuffer<double> sum_;
    DeviceBuffer<unsigned> count_;
    DeviceBuffer<std::uint16_t> half_;
    DeviceBuffer<float> norms_, val_;
    DeviceBuffer<std::uint8_t> codes_;
    DeviceBuffer<std::uint32_t> idx_;
    std::unique_ptr<Codec> host_;
    std::uint64_t seed_;
    std::uint64_t calls_ = 0;
};

bool gpu_available(std::string* why) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        if (why != nullptr)
            *why = fmt::format("no usable GPU (cudaGetDeviceCount: {})",
                               e != cudaSuccess ? cudaGetErrorString(e) : "no devices");
        return false;
    }
    cublasHandle_t h = nullptr;
    const cublasStatus_t s = cublasCreate(&h);
    if (s != CUBLAS_STATUS_SUCCESS) {
        if (why != nullptr) *why = fmt::format("cuBLAS cannot start (cublasCreate: status {})", int{s});
        return false;
    }
    cublasDestroy(h);
    return true;
}

std::unique_ptr<Model> new_model(ModelSpec spec) {
    return std::make_unique<CudaModel>(std::move(spec));
}

std::unique_ptr<Codec> new_codec(const CodecSpec& spec, std::size_t n, std::uint64_t seed) {
    return std::make_unique<CudaCodec>(spec, n, seed);
}

double device_memory_bandwidth() {
    const std::size_t n = std::size_t{1} << 26;  // 256 MB of floats
    DeviceBuffer<float> a(n), b(n);
    ck(cudaMemset(a.data(), 0, n * sizeof(float)), "memset");
    cudaEvent_t start, stop;
    ck(cudaEventCreate(&start), "event");
    ck(cudaEventCreate(&stop), "event");
    float best_ms = 1e30F;
    for (int r = 0; r < 5; ++r) {
        ck(cudaEventRecord(start), "event");
        ck(cudaMemcpy(b.data(), a.data(), n * sizeof(float), cudaMemcpyDeviceToDevice), "copy");
        ck(cudaEventRecord(stop), "event");
        ck(cudaEventSynchronize(stop), "event");
        float ms = 0.0F;
        ck(cudaEventElapsedTime(&ms, start, stop), "event");
        best_ms = std::min(best_ms, ms);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return 2.0 * static_cast<double>(n * sizeof(float)) / (best_ms * 1e-3);
}

std::string gpu_name() {
    int device = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) return "GPU";
    return prop.name;
}

}  // namespace

}  // namespace ddlsim::validate

// The one symbol of libddlsim_cuda.so that nn_cuda_loader.cpp looks up.
extern "C" __attribute__((visibility("default"))) const ddlsim::validate::CudaBackendApi* ddlsim_cuda_backend() {
    using namespace ddlsim::validate;
    static const CudaBackendApi api{kCudaBackendAbi, sizeof(CudaBackendApi),   &gpu_available, &new_model,
                                    &new_codec,      &device_memory_bandwidth, &gpu_name};
    return &api;
}
