// The convergence replay; the model and its ops are stated in replay.hpp and models/schedule.hpp.
#include "validate/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/rng.hpp"
#include "topologies/gossip.hpp"

namespace ddlsim::validate {
namespace {

using Op = models::OpKind;

constexpr std::size_t kEvalChunk = 500;

// x -= a * y
void axpy_sub(std::vector<float>& x, float a, std::span<const float> y) {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] -= a * y[i];
}

}  // namespace

Replayer::Replayer(const models::Schedule& schedule, ReplayData data, ReplayOptions options)
    : schedule_(schedule), data_(std::move(data)), opt_(options), n_(schedule.workers) {
    if (n_ == 0) throw std::invalid_argument("replay: the schedule has no workers");
    if (!data_.train || !data_.test) throw std::invalid_argument("replay: no data");
    if (data_.train_size == 0 || data_.train_size > data_.train->size()) data_.train_size = data_.train->size();
    if (data_.train_size < n_)
        throw std::invalid_argument(
            fmt::format("replay: {} training samples cannot be sharded over {} workers", data_.train_size, n_));
    if (opt_.batch_size == 0 || opt_.eval_every == 0)
        throw std::invalid_argument("replay: batch_size and eval_every must be positive");
    for (const auto& op : schedule_.ops)
        has_global_ = has_global_ || op.kind == Op::sync || op.kind == Op::push || op.kind == Op::collect;
    model_ = make_model(opt_.model, Backend::cpu, opt_.seed);
    const std::size_t d = model_->size();
    global_.resize(d);
    model_->get_params(global_);
    x_.assign(n_, global_);
    g_.assign(n_, std::vector<float>(d, 0.0F));
    has_grad_.assign(n_, false);
    scratch_.resize(d);
    for (std::uint32_t w = 0; w < n_; ++w) {
        samplers_.emplace_back(data_.train_size, n_, w, opt_.seed);
        codecs_.push_back(make_codec(opt_.codec, d, Backend::cpu,
                                     sim::rng::substream(sim::rng::stream(opt_.seed, "replay codec"), w)));
    }
    for (std::size_t first = 0; first < data_.test->size(); first += kEvalChunk)
        test_batches_.push_back(data_.test->slice(first, kEvalChunk));
}

void Replayer::check_worker(std::uint32_t w) const {
    if (w >= n_) throw std::invalid_argument(fmt::format("replay: worker {} of {}", w, n_));
}

const std::vector<std::uint32_t>& Replayer::set(const models::ScheduleOp& op) const {
    if (op.set >= schedule_.sets.size())
        throw std::invalid_argument(fmt::format("replay: worker set {} of {}", op.set, schedule_.sets.size()));
    const auto& s = schedule_.sets[op.set];
    if (s.empty()) throw std::invalid_argument("replay: empty worker set");
    for (std::uint32_t w : s) check_worker(w);
    return s;
}

void Replayer::compute_gradient(std::uint32_t w) {
    const auto idx = samplers_[w].next(opt_.batch_size);
    const Batch b = data_.train->gather(idx);
    model_->set_params(x_[w]);
    (void)model_->forward_backward(b);
    const auto g = model_->gradient();
    std::copy(g.begin(), g.end(), g_[w].begin());
    has_grad_[w] = true;
    ++gradients_;
}

void Replayer::apply(const models::ScheduleOp& op) {
    const float lr = opt_.learning_rate;
    auto need_grad = [this](std::uint32_t w) {
        check_worker(w);
        if (!has_grad_[w])
            throw std::invalid_argument(fmt::format("replay: worker {} applies a gradient before computing one", w));
    };
    switch (op.kind) {
        case Op::grad:
            check_worker(op.worker);
            compute_gradient(op.worker);
            break;
        case Op::local:
            need_grad(op.worker);
            axpy_sub(x_[op.worker], lr, g_[op.worker]);
            break;
        case Op::sync: {
            const auto& s = set(op);
            std::fill(scratch_.begin(), scratch_.end(), 0.0F);
            const float share = 1.0F / static_cast<float>(s.size());
            for (std::uint32_t w : s) {
                need_grad(w);
                const auto payload = codecs_[w]->encode(g_[w]);
                codecs_[w]->decode_add(payload, scratch_, share);
                max_residual_ = std::max(max_residual_, codecs_[w]->residual_norm());
            }
            axpy_sub(global_, lr, scratch_);
            for (std::uint32_t w : s) x_[w] = global_;
            break;
        }
        case Op::push: {
            need_grad(op.worker);
            const auto payload = codecs_[op.worker]->encode(g_[op.worker]);
            codecs_[op.worker]->decode_add(payload, global_, -lr);  // Downpour: every push at the full rate
            max_residual_ = std::max(max_residual_, codecs_[op.worker]->residual_norm());
            break;
        }
        case Op::pull:
            check_worker(op.worker);
            x_[op.worker] = global_;
            break;
        case Op::average:
        case Op::collect: {
            const auto& s = set(op);
            std::fill(scratch_.begin(), scratch_.end(), 0.0F);
            const float share = 1.0F / static_cast<float>(s.size());
            for (std::uint32_t w : s)
                for (std::size_t i = 0; i < scratch_.size(); ++i) scratch_[i] += share * x_[w][i];
            if (op.kind == Op::collect) {
                global_ = scratch_;
            } else {
                for (std::uint32_t w : s) x_[w] = scratch_;
            }
            break;
        }
        case Op::mix: {
            const auto weights = topo::gossip_mixing_weights(opt_.graph, n_, opt_.seed, op.round);
            std::vector<std::vector<float>> mixed(n_, std::vector<float>(scratch_.size(), 0.0F));
            for (std::uint32_t w = 0; w < n_; ++w)
                for (const auto& mw : weights[w]) {
                    const auto a = static_cast<float>(mw.weight);
                    const auto& src = x_[mw.peer];
                    auto& dst = mixed[w];
                    for (std::size_t i = 0; i < dst.size(); ++i) dst[i] += a * src[i];
                }
            x_ = std::move(mixed);
            break;
        }
    }
}

std::vector<float> Replayer::consensus() const {
    if (has_global_) return global_;
    std::vector<float> mean(global_.size(), 0.0F);
    const float share = 1.0F / static_cast<float>(n_);
    for (const auto& x : x_)
        for (std::size_t i = 0; i < mean.size(); ++i) mean[i] += share * x[i];
    return mean;
}

std::pair<double, double> Replayer::evaluate(std::span<const float> params) {
    model_->set_params(params);
    double loss = 0.0;
    std::size_t samples = 0;
    for (const auto& b : test_batches_) {
        loss += model_->loss(b) * static_cast<double>(b.size);
        samples += b.size;
    }
    const double accuracy = model_->evaluate(*data_.test);
    return {samples == 0 ? 0.0 : loss / static_cast<double>(samples), accuracy};
}

ReplayResult Replayer::run() {
    const double t0 = now_s();
    ReplayResult r;
    double time = 0.0;
    std::uint32_t next_eval = 0;  // the iteration of the next evaluation
    std::uint32_t last_iteration = 0;
    bool changed = true;  // ops applied since the last point
    auto point = [&](std::uint32_t iteration) {
        const auto [loss, accuracy] = evaluate(consensus());
        r.curve.push_back({time, iteration, loss, accuracy});
        changed = false;
        if (accuracy >= opt_.target_accuracy && !r.time_to_accuracy_s) {
            r.time_to_accuracy_s = time;
            r.iterations_to_accuracy = iteration;
        }
        return accuracy >= opt_.target_accuracy && opt_.stop_at_target;
    };
    bool stopped = false;
    for (const auto& op : schedule_.ops) {
        if (op.iteration >= next_eval) {
            if (point(op.iteration)) {
                stopped = true;
                break;
            }
            next_eval = (op.iteration / opt_.eval_every + 1) * opt_.eval_every;
        }
        apply(op);
        ++r.ops_applied;
        changed = true;
        time = std::max(time, op.time_s);
        last_iteration = std::max(last_iteration, op.iteration);
    }
    if (!stopped && (changed || r.curve.empty())) (void)point(schedule_.ops.empty() ? 0 : last_iteration + 1);
    r.final_accuracy = r.curve.back().accuracy;
    r.final_loss = r.curve.back().loss;
    r.gradients = gradients_;
    r.max_residual_norm = max_residual_;
    r.wall_time_s = now_s() - t0;
    return r;
}

ReplayResult replay(const models::Schedule& schedule, const ReplayData& data, const ReplayOptions& options) {
    Replayer r(schedule, data, options);
    return r.run();
}

}  // namespace ddlsim::validate
