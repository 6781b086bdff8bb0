// The CUDA kernels of the validation backend, behind plain launch functions (C++17, no CUDA
// types beyond pointers), so that nn_cuda.cpp compiles with the host compiler. Every launcher
// runs on the default stream and throws std::runtime_error when the launch fails.
// Matrices are row-major; images are NCHW; convolutions are 3x3, stride 1, padding 1.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ddlsim::validate::cuda {

// Layers.
void add_bias_rows(float* y, const float* b, int rows, int cols);  // y[r][c] += b[c]
void add_bias_channels(float* y, const float* b, int batch, int channels, int hw);
void relu_forward(const float* x, float* y, std::size_t n);
void relu_backward(const float* y, const float* dy, float* dx, std::size_t n);  // dx = dy * (y > 0)
void maxpool_forward(const float* x, float* y, std::uint32_t* arg, int batch, int c, int h, int w);
void maxpool_backward(const float* dy, const std::uint32_t* arg, float* dx, int batch, int c, int h, int w);
void im2col(const float* x, float* col, int batch, int c, int h, int w);   // col: batch x (c*9) x (h*w)
void col2im(const float* col, float* dx, int batch, int c, int h, int w);  // dx = adjoint of im2col (overwrites)
void column_sums(const float* m, float* out, int rows, int cols);          // out[c] = sum_r m[r][c]
void channel_sums(const float* m, float* out, int batch, int channels, int hw);
/// Softmax cross-entropy: per-row loss, and dlogits = (softmax - onehot) / rows.
void softmax_xent(const float* logits, const std::uint8_t* labels, float* dlogits, float* row_loss, int rows, int cols);
void argmax_rows(const float* m, int* out, int rows, int cols);
void sgd(float* p, const float* g, float lr, std::size_t n);  // p -= lr * g

// Codecs (formats in codec.hpp).
void add_into(float* y, const float* x, std::size_t n);  // y += x
/// sum of squares (or of |x| with `absolute`) into *out (a device double, overwritten).
void reduce_sum(const float* x, std::size_t n, bool absolute, double* out);
void fp16_encode(const float* p, std::uint16_t* out, std::size_t n);
void fp16_decode_add(const std::uint16_t* in, float* acc, float scale, std::size_t n);
void qsgd_encode(const float* p, float* norms, std::uint8_t* codes, std::size_t n, std::uint64_t seed);
void qsgd_decode_add(const float* norms, const std::uint8_t* codes, float* acc, float scale, std::size_t n);
void sign_encode(const float* p, std::uint8_t* bits, std::size_t n);  // bits: (n + 7) / 8 bytes, overwritten
void sign_decode_add(const std::uint8_t* bits, float value, float* acc, std::size_t n);
/// Number of elements whose |p| bit pattern is >= `threshold_bits` (into a device counter).
void count_at_least(const float* p, std::size_t n, std::uint32_t threshold_bits, unsigned* count);
/// The elements above `threshold_bits`, then up to `k` in total of those equal to it, as (index, value).
void select_topk(const float* p, std::size_t n, std::uint32_t threshold_bits, unsigned k, std::uint32_t* idx,
                 float* val, unsigned* counters);
void scatter_add(const std::uint32_t* idx, const float* val, float* acc, float scale, unsigned k);

}  // namespace ddlsim::validate::cuda
