// The CPU backend: Eigen matrix products (single-threaded), everything else in plain loops.
// Activations are row-major batch x features; a convolution's sample is C x H x W.
#include <fmt/format.h>
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "validate/nn_backends.hpp"

namespace ddlsim::validate {
namespace {

using RMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapM = Eigen::Map<RMat>;
using CMapM = Eigen::Map<const RMat>;
using MapV = Eigen::Map<Eigen::VectorXf>;
using CMapV = Eigen::Map<const Eigen::VectorXf>;

// 3x3, stride 1, padding 1: col[(c*9 + ky*3 + kx), y*w + x] = in[c, y + ky - 1, x + kx - 1] (0 outside).
void im2col(const float* in, std::uint32_t c, std::uint32_t h, std::uint32_t w, float* col) {
    const std::size_t hw = std::size_t{h} * w;
    for (std::uint32_t ch = 0; ch < c; ++ch)
        for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
                float* row = col + (std::size_t{ch} * 9 + static_cast<std::size_t>(ky * 3 + kx)) * hw;
                for (std::uint32_t y = 0; y < h; ++y) {
                    const int sy = static_cast<int>(y) + ky - 1;
                    for (std::uint32_t x = 0; x < w; ++x) {
                        const int sx = static_cast<int>(x) + kx - 1;
                        const bool inside = sy >= 0 && sy < static_cast<int>(h) && sx >= 0 && sx < static_cast<int>(w);
                        row[std::size_t{y} * w + x] =
                            inside ? in[(std::size_t{ch} * h + static_cast<std::size_t>(sy)) * w +
                                        static_cast<std::size_t>(sx)]
                                   : 0.0F;
                    }
                }
            }
}

// The adjoint of im2col: in[c, y + ky - 1, x + kx - 1] += col[(c*9 + ky*3 + kx), y*w + x].
void col2im_add(const float* col, std::uint32_t c, std::uint32_t h, std::uint32_t w, float* in) {
    const std::size_t hw = std::size_t{h} * w;
    for (std::uint32_t ch = 0; ch < c; ++ch)
        for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
                const float* row = col + (std::size_t{ch} * 9 + static_cast<std::size_t>(ky * 3 + kx)) * hw;
                for (std::uint32_t y = 0; y < h; ++y) {
                    const int sy = static_cast<int>(y) + ky - 1;
                    if (sy < 0 || sy >= static_cast<int>(h)) continue;
                    for (std::uint32_t x = 0; x < w; ++x) {
                        const int sx = static_cast<int>(x) + kx - 1;
                        if (sx < 0 || sx >= static_cast<int>(w)) continue;
                        in[(std::size_t{ch} * h + static_cast<std::size_t>(sy)) * w + static_cast<std::size_t>(sx)] +=
                            row[std::size_t{y} * w + x];
                    }
                }
            }
}

class CpuModel final : public Model {
public:
    explicit CpuModel(ModelSpec spec)
        : Model(std::move(spec)),
          params_(spec_.params, 0.0F),
          grad_(spec_.params, 0.0F),
          acts_(spec_.ops.size() + 1),
          dacts_(spec_.ops.size() + 1),
          cols_(spec_.ops.size()),
          argmax_(spec_.ops.size()) {}

    Backend backend() const override { return Backend::cpu; }

    void set_params(std::span<const float> p) override {
        check_size(p.size());
        std::copy(p.begin(), p.end(), params_.begin());
    }
    void get_params(std::span<float> out) const override {
        check_size(out.size());
        std::copy(params_.begin(), params_.end(), out.begin());
    }

    double forward_backward(const Batch& b) override {
        const double loss = forward(b, true);
        backward();
        return loss;
    }

    double loss(const Batch& b) override { return forward(b, false); }

    std::span<const float> gradient() override { return grad_; }

    void apply_gradient(std::span<const float> g, float lr) override {
        check_size(g.size());
        for (std::size_t l = 0; l < spec_.layers.size(); ++l) {
            const double t0 = timing_ ? now_s() : 0.0;
            const auto& info = spec_.layers[l];
            const auto n = static_cast<Eigen::Index>(info.params);
            MapV(params_.data() + info.offset, n) -= lr * CMapV(g.data() + info.offset, n);
            if (timing_) timings_[l].update_s += now_s() - t0;
        }
    }

    double evaluate(const Dataset& d) override {
        std::size_t correct = 0;
        constexpr std::size_t kChunk = 500;
        for (std::size_t first = 0; first < d.size(); first += kChunk) {
            const Batch b = d.slice(first, kChunk);
            (void)forward(b, false);
            const RMat& logits = acts_.back();
            for (Eigen::Index i = 0; i < logits.rows(); ++i) {
                Eigen::Index arg = 0;
                logits.row(i).maxCoeff(&arg);
                correct += static_cast<std::size_t>(arg) == b.y[static_cast<std::size_t>(i)] ? 1 : 0;
            }
        }
        return d.size() == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(d.size());
    }

private:
    void check_size(std::size_t n) const {
        if (n != spec_.params)
            throw std::invalid_argument(fmt::format("expected {} parameters, got {}", spec_.params, n));
    }

    // Runs every op; returns the mean cross-entropy and, with `keep`, leaves d loss / d logits in dacts_.back().
    double forward(const Batch& b, bool keep) {
        if (b.size == 0 || b.x.size() != b.size * spec_.input)
            throw std::invalid_argument(
                fmt::format("batch of {} floats for {} samples of {}", b.x.size(), b.size, spec_.input));
        const auto rows = static_cast<Eigen::Index>(b.size);
        acts_[0] = CMapM(b.x.data(), rows, static_cast<Eigen::Index>(spec_.input));
        for (std::size_t i = 0; i < spec_.ops.size(); ++i) {
            const double t0 = timing_ && keep ? now_s() : 0.0;
            forward_op(i, rows);
            if (timing_ && keep) timings_[spec_.ops[i].layer].fwd_s += now_s() - t0;
        }
        const double t0 = timing_ && keep ? now_s() : 0.0;
        const RMat& logits = acts_.back();
        RMat& d = dacts_.back();
        d.resize(logits.rows(), logits.cols());
        double loss = 0.0;
        for (Eigen::Index i = 0; i < rows; ++i) {
            const float m = logits.row(i).maxCoeff();
            const auto e = (logits.row(i).array() - m).exp();
            const float sum = e.sum();
            const auto y = static_cast<Eigen::Index>(b.y[static_cast<std::size_t>(i)]);
            if (y >= logits.cols()) throw std::invalid_argument("label out of range");
            loss += -(static_cast<double>(logits(i, y) - m) - std::log(static_cast<double>(sum)));
            if (keep) {
                d.row(i) = e / (sum * static_cast<float>(rows));
                d(i, y) -= 1.0F / static_cast<float>(rows);
            }
        }
        if (timing_ && keep) timings_[spec_.ops.back().layer].fwd_s += now_s() - t0;
        return loss / static_cast<double>(rows);
    }

    void forward_op(std::size_t i, Eigen::Index rows) {
        const OpSpec& op = spec_.ops[i];
        const RMat& in = acts_[i];
        RMat& out = acts_[i + 1];
        out.resize(rows, static_cast<Eigen::Index>(op.out_size()));
        switch (op.kind) {
            case OpKind::linear: {
                const CMapM w(params_.data() + op.offset, op.out_c, static_cast<Eigen::Index>(op.in_size()));
                const CMapV bias(params_.data() + op.offset + op.weights, op.out_c);
                out.noalias() = in * w.transpose();
                out.rowwise() += bias.transpose();
                break;
            }
            case OpKind::conv: {
                const auto hw = static_cast<Eigen::Index>(op.in_h * op.in_w);
                const auto k = static_cast<Eigen::Index>(op.in_c * 9);
                const CMapM w(params_.data() + op.offset, op.out_c, k);
                const CMapV bias(params_.data() + op.offset + op.weights, op.out_c);
                cols_[i].resize(rows * k, hw);
                for (Eigen::Index s = 0; s < rows; ++s) {
                    float* col = cols_[i].data() + s * k * hw;
                    im2col(in.data() + s * in.cols(), op.in_c, op.in_h, op.in_w, col);
                    MapM o(out.data() + s * out.cols(), op.out_c, hw);
                    o.noalias() = w * CMapM(col, k, hw);
                    o.colwise() += bias;
                }
                break;
            }
            case OpKind::relu: out = in.cwiseMax(0.0F); break;
            case OpKind::maxpool: {
                auto& arg = argmax_[i];
                arg.resize(static_cast<std::size_t>(rows) * op.out_size());
                for (Eigen::Index s = 0; s < rows; ++s)
                    for (std::uint32_t c = 0; c < op.out_c; ++c)
                        for (std::uint32_t y = 0; y < op.out_h; ++y)
                            for (std::uint32_t x = 0; x < op.out_w; ++x) {
                                std::uint32_t best = (c * op.in_h + 2 * y) * op.in_w + 2 * x;
                                for (std::uint32_t dy = 0; dy < 2; ++dy)
                                    for (std::uint32_t dx = 0; dx < 2; ++dx) {
                                        const std::uint32_t at = (c * op.in_h + 2 * y + dy) * op.in_w + 2 * x + dx;
                                        if (in(s, at) > in(s, best)) best = at;
                                    }
                                const std::size_t o = (std::size_t{c} * op.out_h + y) * op.out_w + x;
                                out(s, static_cast<Eigen::Index>(o)) = in(s, best);
                                arg[static_cast<std::size_t>(s) * op.out_size() + o] = best;
                            }
                break;
            }
        }
    }

    void backward() {
        for (std::size_t i = spec_.ops.size(); i-- > 0;) {
            const double t0 = timing_ ? now_s() : 0.0;
            backward_op(i);
            if (timing_) timings_[spec_.ops[i].layer].bwd_s += now_s() - t0;
        }
    }

    void backward_op(std::size_t i) {
        const OpSpec& op = spec_.ops[i];
        const RMat& in = acts_[i];
        const RMat& dout = dacts_[i + 1];
        RMat& din = dacts_[i];
        const bool need_din = i > 0;
        const Eigen::Index rows = in.rows();
        switch (op.kind) {
            case OpKind::linear: {
                const auto n_in = static_cast<Eigen::Index>(op.in_size());
                const CMapM w(params_.data() + op.offset, op.out_c, n_in);
                MapM(grad_.data() + op.offset, op.out_c, n_in).noalias() = dout.transpose() * in;
                MapV(grad_.data() + op.offset + op.weights, op.out_c) = dout.colwise().sum().transpose();
                if (need_din) din.noalias() = dout * w;
                break;
            }
            case OpKind::conv: {
                const auto hw = static_cast<Eigen::Index>(op.in_h * op.in_w);
                const auto k = static_cast<Eigen::Index>(op.in_c * 9);
                const CMapM w(params_.data() + op.offset, op.out_c, k);
                MapM dw(grad_.data() + op.offset, op.out_c, k);
                MapV db(grad_.data() + op.offset + op.weights, op.out_c);
                dw.setZero();
                db.setZero();
                if (need_din) din.setZero(rows, static_cast<Eigen::Index>(op.in_size()));
                dcol_.resize(k, hw);
                for (Eigen::Index s = 0; s < rows; ++s) {
                    const CMapM ds(dout.data() + s * dout.cols(), op.out_c, hw);
                    const CMapM col(cols_[i].data() + s * k * hw, k, hw);
                    dw.noalias() += ds * col.transpose();
                    db += ds.rowwise().sum();
                    if (need_din) {
                        dcol_.noalias() = w.transpose() * ds;
                        col2im_add(dcol_.data(), op.in_c, op.in_h, op.in_w, din.data() + s * din.cols());
                    }
                }
                break;
            }
            case OpKind::relu: din = dout.cwiseProduct((acts_[i + 1].array() > 0.0F).cast<float>().matrix()); break;
            case OpKind::maxpool: {
                din.setZero(rows, static_cast<Eigen::Index>(op.in_size()));
                const auto& arg = argmax_[i];
                for (Eigen::Index s = 0; s < rows; ++s)
                    for (std::size_t o = 0; o < op.out_size(); ++o)
                        din(s, arg[static_cast<std::size_t>(s) * op.out_size() + o]) +=
                            dout(s, static_cast<Eigen::Index>(o));
                break;
            }
        }
    }

    std::vector<float> params_;
    std::vector<float> grad_;
    std::vector<RMat> acts_;   // acts_[i]: input of op i; acts_.back(): logits
    std::vector<RMat> dacts_;  // d loss / d acts_[i]
    std::vector<RMat> cols_;   // conv ops: im2col of every sample, stacked
    std::vector<std::vector<std::uint32_t>> argmax_;
    RMat dcol_;
};

}  // namespace

std::unique_ptr<Model> make_cpu_model(ModelSpec spec) {
    return std::make_unique<CpuModel>(std::move(spec));
}

}  // namespace ddlsim::validate
