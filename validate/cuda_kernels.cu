// CUDA kernels of the validation backend: activations, pooling, im2col, loss, SGD, and the
// compressors' encoders (fp16, QSGD with bucket norms, scaled sign, top-k by a bisection on the
// bit patterns of |p|). Grid-stride loops throughout; the sizes here are small (<= a few million).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "sim/rng_mix.hpp"  // sim::rng::uniform01(seed, i): the CPU codec's draw, on the device
#include "validate/cuda_kernels.hpp"

namespace ddlsim::validate::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kQsgdBucket = 512;  // as codec.cpp
constexpr float kQsgdLevels = 127.0f;

int blocks_for(std::size_t n) {
    const std::size_t b = (n + kThreads - 1) / kThreads;
    return static_cast<int>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

void check(const char* what) {
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

#define GRID_STRIDE(i, n)                                                                          \
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < (n); \
         i += static_cast<std::size_t>(blockDim.x) * gridDim.x)

__global__ void k_add_bias_rows(float* y, const float* b, int rows, int cols) {
    GRID_STRIDE(i, static_cast<std::size_t>(rows) * cols) y[i] += b[i % cols];
}
__global__ void k_add_bias_channels(float* y, const float* b, int batch, int channels, int hw) {
    GRID_STRIDE(i, static_cast<std::size_t>(batch) * channels * hw) y[i] += b[(i / hw) % channels];
}
__global__ void k_relu_forward(const float* x, float* y, std::size_t n) {
    GRID_STRIDE(i, n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
__global__ void k_relu_backward(const float* y, const float* dy, float* dx, std::size_t n) {
    GRID_STRIDE(i, n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}
__global__ void k_maxpool_forward(const float* x, float* y, std::uint32_t* arg, int batch, int c, int h, int w) {
    const int oh = h / 2, ow = w / 2;
    GRID_STRIDE(i, static_cast<std::size_t>(batch) * c * oh * ow) {
        const int ox = static_cast<int>(i % ow), oy = static_cast<int>((i / ow) % oh);
        const int ch = static_cast<int>((i / (static_cast<std::size_t>(ow) * oh)) % c);
        const std::size_t s = i / (static_cast<std::size_t>(ow) * oh * c);
        const float* in = x + s * static_cast<std::size_t>(c) * h * w;
        std::uint32_t best = static_cast<std::uint32_t>((ch * h + 2 * oy) * w + 2 * ox);
        for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx) {
                const std::uint32_t at = static_cast<std::uint32_t>((ch * h + 2 * oy + dy) * w + 2 * ox + dx);
                if (in[at] > in[best]) best = at;
            }
        y[i] = in[best];
        arg[i] = best;
    }
}
__global__ void k_maxpool_backward(const float* dy, const std::uint32_t* arg, float* dx, int batch, int c, int h,
                                   int w) {
    const std::size_t out_size = static_cast<std::size_t>(c) * (h / 2) * (w / 2);
    GRID_STRIDE(i, batch * out_size) dx[(i / out_size) * static_cast<std::size_t>(c) * h * w + arg[i]] += dy[i];
}
__global__ void k_im2col(const float* x, float* col, int batch, int c, int h, int w) {
    const std::size_t hw = static_cast<std::size_t>(h) * w, k = static_cast<std::size_t>(c) * 9;
    GRID_STRIDE(i, batch * k * hw) {
        const std::size_t p = i % hw, row = (i / hw) % k, s = i / (hw * k);
        const int ch = static_cast<int>(row / 9), ky = static_cast<int>(row % 9) / 3, kx = static_cast<int>(row % 3);
        const int y = static_cast<int>(p / w) + ky - 1, xx = static_cast<int>(p % w) + kx - 1;
        col[i] = (y >= 0 && y < h && xx >= 0 && xx < w)
                     ? x[s * c * hw + (static_cast<std::size_t>(ch) * h + y) * w + xx]
                     : 0.0f;
    }
}
__global__ void k_col2im(const float* col, float* dx, int batch, int c, int h, int w) {
    const std::size_t hw = static_cast<std::size_t>(h) * w, k = static_cast<std::size_t>(c) * 9;
    GRID_STRIDE(i, batch * c * hw) {
        const int x = static_cast<int>(i % w), y = static_cast<int>((i / w) % h);
        const int ch = static_cast<int>((i / hw) % c);
        const std::size_t s = i / (hw * c);
        float sum = 0.0f;
        for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
                const int yo = y - ky + 1, xo = x - kx + 1;
                if (yo < 0 || yo >= h || xo < 0 || xo >= w) continue;
                sum += col[s * k * hw + (static_cast<std::size_t>(ch) * 9 + ky * 3 + kx) * hw +
                           static_cast<std::size_t>(yo) * w + xo];
            }
        dx[i] = sum;
    }
}
__global__ void k_column_sums(const float* m, float* out, int rows, int cols) {
    GRID_STRIDE(c, static_cast<std::size_t>(cols)) {
        float s = 0.0f;
        for (int r = 0; r < rows; ++r) s += m[static_cast<std::size_t>(r) * cols + c];
        out[c] = s;
    }
}
__global__ void k_channel_sums(const float* m, float* out, int batch, int channels, int hw) {
    __shared__ float part[kThreads];
    const int ch = blockIdx.x;
    float s = 0.0f;
    for (int i = threadIdx.x; i < batch * hw; i += blockDim.x)
        s += m[(static_cast<std::size_t>(i / hw) * channels + ch) * hw + i % hw];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[ch] = part[0];
}
__global__ void k_softmax_xent(const float* logits, const std::uint8_t* labels, float* dlogits, float* row_loss,
                               int rows, int cols) {
    GRID_STRIDE(r, static_cast<std::size_t>(rows)) {
        const float* z = logits + r * cols;
        float m = z[0];
        for (int c = 1; c < cols; ++c) m = fmaxf(m, z[c]);
        float sum = 0.0f;
        for (int c = 0; c < cols; ++c) sum += expf(z[c] - m);
        const int y = labels[r];
        row_loss[r] = -(z[y] - m - logf(sum));
        if (dlogits != nullptr)
            for (int c = 0; c < cols; ++c)
                dlogits[r * cols + c] = (expf(z[c] - m) / sum - (c == y ? 1.0f : 0.0f)) / static_cast<float>(rows);
    }
}
__global__ void k_argmax_rows(const float* m, int* out, int rows, int cols) {
    GRID_STRIDE(r, static_cast<std::size_t>(rows)) {
        int best = 0;
        for (int c = 1; c < cols; ++c)
            if (m[r * cols + c] > m[r * cols + best]) best = c;
        out[r] = best;
    }
}
__global__ void k_sgd(float* p, const float* g, float lr, std::size_t n) {
    GRID_STRIDE(i, n) p[i] -= lr * g[i];
}
__global__ void k_add_into(float* y, const float* x, std::size_t n) {
    GRID_STRIDE(i, n) y[i] += x[i];
}
__global__ void k_reduce_sum(const float* x, std::size_t n, bool absolute, double* out) {
    __shared__ double part[kThreads];
    double s = 0.0;
    GRID_STRIDE(i, n) s += absolute ? fabs(static_cast<double>(x[i])) : static_cast<double>(x[i]) * x[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, part[0]);
}
__global__ void k_fp16_encode(const float* p, std::uint16_t* out, std::size_t n) {
    GRID_STRIDE(i, n) out[i] = __half_as_ushort(__float2half_rn(p[i]));
}
__global__ void k_fp16_decode_add(const std::uint16_t* in, float* acc, float scale, std::size_t n) {
    GRID_STRIDE(i, n) acc[i] += scale * __half2float(__ushort_as_half(in[i]));
}
// One block of kThreads per bucket of kQsgdBucket elements.
__global__ void k_qsgd_encode(const float* p, float* norms, std::uint8_t* codes, std::size_t n,
                              unsigned long long seed) {
    __shared__ double part[kThreads];
    const std::size_t first = static_cast<std::size_t>(blockIdx.x) * kQsgdBucket;
    double s = 0.0;
    for (std::size_t i = first + threadIdx.x; i < first + kQsgdBucket && i < n; i += blockDim.x)
        s += static_cast<double>(p[i]) * p[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
        __syncthreads();
    }
    const float norm = static_cast<float>(sqrt(part[0]));
    if (threadIdx.x == 0) norms[blockIdx.x] = norm;
    for (std::size_t i = first + threadIdx.x; i < first + kQsgdBucket && i < n; i += blockDim.x) {
        unsigned q = 0;
        if (norm > 0.0f) {
            const float level = fabsf(p[i]) / norm * kQsgdLevels;
            const float fl = floorf(level);
            const float up = sim::rng::uniform01(seed, i) < level - fl ? 1.0f : 0.0f;
            q = static_cast<unsigned>(fminf(kQsgdLevels, fl + up));
        }
        codes[i] = static_cast<std::uint8_t>(q | (p[i] < 0.0f ? 0x80u : 0u));
    }
}
__global__ void k_qsgd_decode_add(const float* norms, const std::uint8_t* codes, float* acc, float scale,
                                  std::size_t n) {
    GRID_STRIDE(i, n) {
        const float unit = scale * norms[i / kQsgdBucket] / kQsgdLevels;
        const float level = static_cast<float>(codes[i] & 0x7f);
        acc[i] += (codes[i] & 0x80) ? -unit * level : unit * level;
    }
}
__global__ void k_sign_encode(const float* p, std::uint8_t* bits, std::size_t n) {
    GRID_STRIDE(j, (n + 7) / 8) {
        unsigned b = 0;
        for (int k = 0; k < 8; ++k) {
            const std::size_t i = j * 8 + k;
            if (i < n && p[i] < 0.0f) b |= 1u << k;
        }
        bits[j] = static_cast<std::uint8_t>(b);
    }
}
__global__ void k_sign_decode_add(const std::uint8_t* bits, float value, float* acc, std::size_t n) {
    GRID_STRIDE(i, n) acc[i] += ((bits[i >> 3] >> (i & 7)) & 1u) ? -value : value;
}
__global__ void k_count_at_least(const float* p, std::size_t n, std::uint32_t threshold, unsigned* count) {
    unsigned c = 0;
    GRID_STRIDE(i, n) c += __float_as_uint(fabsf(p[i])) >= threshold ? 1u : 0u;
    if (c > 0) atomicAdd(count, c);
}
// equal == false: take |p| > threshold; equal == true: take |p| == threshold while slots remain.
__global__ void k_select(const float* p, std::size_t n, std::uint32_t threshold, unsigned k, std::uint32_t* idx,
                         float* val, unsigned* next, bool equal) {
    GRID_STRIDE(i, n) {
        const std::uint32_t bits = __float_as_uint(fabsf(p[i]));
        if (equal ? bits != threshold : bits <= threshold) continue;
        const unsigned at = atomicAdd(next, 1u);
        if (at < k) {
            idx[at] = static_cast<std::uint32_t>(i);
            val[at] = p[i];
        }
    }
}
__global__ void k_scatter_add(const std::uint32_t* idx, const float* val, float* acc, float scale, unsigned k) {
    GRID_STRIDE(j, static_cast<std::size_t>(k)) acc[idx[j]] += scale * val[j];
}

}  // namespace

void add_bias_rows(float* y, const float* b, int rows, int cols) {
    k_add_bias_rows<<<blocks_for(static_cast<std::size_t>(rows) * cols), kThreads>>>(y, b, rows, cols);
    check("add_bias_rows");
}
void add_bias_channels(float* y, const float* b, int batch, int channels, int hw) {
    k_add_bias_channels<<<blocks_for(static_cast<std::size_t>(batch) * channels * hw), kThreads>>>(y, b, batch,
                                                                                                   channels, hw);
    check("add_bias_channels");
}
void relu_forward(const float* x, float* y, std::size_t n) {
    k_relu_forward<<<blocks_for(n), kThreads>>>(x, y, n);
    check("relu_forward");
}
void relu_backward(const float* y, const float* dy, float* dx, std::size_t n) {
    k_relu_backward<<<blocks_for(n), kThreads>>>(y, dy, dx, n);
    check("relu_backward");
}
void maxpool_forward(const float* x, float* y, std::uint32_t* arg, int batch, int c, int h, int w) {
    k_maxpool_forward<<<blocks_for(static_cast<std::size_t>(batch) * c * (h / 2) * (w / 2)), kThreads>>>(
        x, y, arg, batch, c, h, w);
    check("maxpool_forward");
}
void maxpool_backward(const float* dy, const std::uint32_t* arg, float* dx, int batch, int c, int h, int w) {
    cudaMemsetAsync(dx, 0, static_cast<std::size_t>(batch) * c * h * w * sizeof(float));
    k_maxpool_backward<<<blocks_for(static_cast<std::size_t>(batch) * c * (h / 2) * (w / 2)), kThreads>>>(
        dy, arg, dx, batch, c, h, w);
    check("maxpool_backward");
}
void im2col(const float* x, float* col, int batch, int c, int h, int w) {
    k_im2col<<<blocks_for(static_cast<std::size_t>(batch) * c * 9 * h * w), kThreads>>>(x, col, batch, c, h, w);
    check("im2col");
}
void col2im(const float* col, float* dx, int batch, int c, int h, int w) {
    k_col2im<<<blocks_for(static_cast<std::size_t>(batch) * c * h * w), kThreads>>>(col, dx, batch, c, h, w);
    check("col2im");
}
void column_sums(const float* m, float* out, int rows, int cols) {
    k_column_sums<<<blocks_for(static_cast<std::size_t>(cols)), kThreads>>>(m, out, rows, cols);
    check("column_sums");
}
void channel_sums(const float* m, float* out, int batch, int channels, int hw) {
    k_channel_sums<<<channels, kThreads>>>(m, out, batch, channels, hw);
    check("channel_sums");
}
void softmax_xent(const float* logits, const std::uint8_t* labels, float* dlogits, float* row_loss, int rows,
                  int cols) {
    k_softmax_xent<<<blocks_for(static_cast<std::size_t>(rows)), kThreads>>>(logits, labels, dlogits, row_loss, rows,
                                                                             cols);
    check("softmax_xent");
}
void argmax_rows(const float* m, int* out, int rows, int cols) {
    k_argmax_rows<<<blocks_for(static_cast<std::size_t>(rows)), kThreads>>>(m, out, rows, cols);
    check("argmax_rows");
}
void sgd(float* p, const float* g, float lr, std::size_t n) {
    k_sgd<<<blocks_for(n), kThreads>>>(p, g, lr, n);
    check("sgd");
}
void add_into(float* y, const float* x, std::size_t n) {
    k_add_into<<<blocks_for(n), kThreads>>>(y, x, n);
    check("add_into");
}
void reduce_sum(const float* x, std::size_t n, bool absolute, double* out) {
    cudaMemsetAsync(out, 0, sizeof(double));
    k_reduce_sum<<<blocks_for(n) < 1024 ? blocks_for(n) : 1024, kThreads>>>(x, n, absolute, out);
    check("reduce_sum");
}
void fp16_encode(const float* p, std::uint16_t* out, std::size_t n) {
    k_fp16_encode<<<blocks_for(n), kThreads>>>(p, out, n);
    check("fp16_encode");
}
void fp16_decode_add(const std::uint16_t* in, float* acc, float scale, std::size_t n) {
    k_fp16_decode_add<<<blocks_for(n), kThreads>>>(in, acc, scale, n);
    check("fp16_decode_add");
}
void qsgd_encode(const float* p, float* norms, std::uint8_t* codes, std::size_t n, std::uint64_t seed) {
    const std::size_t buckets = (n + kQsgdBucket - 1) / kQsgdBucket;
    k_qsgd_encode<<<static_cast<unsigned>(buckets), kThreads>>>(p, norms, codes, n, seed);
    check("qsgd_encode");
}
void qsgd_decode_add(const float* norms, const std::uint8_t* codes, float* acc, float scale, std::size_t n) {
    k_qsgd_decode_add<<<blocks_for(n), kThreads>>>(norms, codes, acc, scale, n);
    check("qsgd_decode_add");
}
void sign_encode(const float* p, std::uint8_t* bits, std::size_t n) {
    k_sign_encode<<<blocks_for((n + 7) / 8), kThreads>>>(p, bits, n);
    check("sign_encode");
}
void sign_decode_add(const std::uint8_t* bits, float value, float* acc, std::size_t n) {
    k_sign_decode_add<<<blocks_for(n), kThreads>>>(bits, value, acc, n);
    check("sign_decode_add");
}
void count_at_least(const float* p, std::size_t n, std::uint32_t threshold_bits, unsigned* count) {
    cudaMemsetAsync(count, 0, sizeof(unsigned));
    k_count_at_least<<<blocks_for(n) < 1024 ? blocks_for(n) : 1024, kThreads>>>(p, n, threshold_bits, count);
    check("count_at_least");
}
void select_topk(const float* p, std::size_t n, std::uint32_t threshold_bits, unsigned k, std::uint32_t* idx,
                 float* val, unsigned* counters) {
    cudaMemsetAsync(counters, 0, sizeof(unsigned));
    k_select<<<blocks_for(n), kThreads>>>(p, n, threshold_bits, k, idx, val, counters, false);
    k_select<<<blocks_for(n), kThreads>>>(p, n, threshold_bits, k, idx, val, counters, true);
    check("select_topk");
}
void scatter_add(const std::uint32_t* idx, const float* val, float* acc, float scale, unsigned k) {
    k_scatter_add<<<blocks_for(k), kThreads>>>(idx, val, acc, scale, k);
    check("scatter_add");
}

}  // namespace ddlsim::validate::cuda
