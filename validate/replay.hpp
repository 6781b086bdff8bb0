// The convergence replay (docs/CONTRACT.md §6): executes a simulated run's update schedule
// (models/schedule.hpp) on a real proxy model, so that accuracy can be reported against
// simulated time. The simulator decides when every gradient is computed, on which model
// version (staleness), and when updates, pulls and averagings happen; the replay performs
// exactly that sequence of operations on real parameters and real mini-batches.
//
// State: one working model x_w per worker and one global model X, all initialised to
// initial_params(seed). A worker's gradient g_w is computed at x_w on its next mini-batch of
// `batch_size` samples drawn from its own shard (ShardSampler, seeded). Every worker owns one
// codec with its own error-feedback residual; sync and push ops send the gradient through it:
//   sync S   G = (1/|S|) sum_{w in S} D(C(g_w));  X -= lr G;  x_w = X for w in S
//   push w   X -= lr D(C(g_w))   (Downpour: the full rate per push)
// (the other ops as the schedule header states them; mix uses topo::gossip_mixing_weights).
//
// Evaluation: the consensus model is X when the schedule has any sync, push or collect op,
// otherwise the mean of the x_w. It is evaluated on the held-out set at iteration 0, whenever
// an op's `iteration` reaches the next multiple of eval_every (before that op is applied: the
// point's iteration counts the iterations begun before it), and after the last op; a point's
// time is the latest simulated time among the ops applied so far. The replay stops at the
// first point whose accuracy reaches the target. Single-threaded and seeded: the same
// schedule, data and options give the same curve bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "models/schedule.hpp"
#include "topologies/collectives.hpp"
#include "validate/codec.hpp"
#include "validate/dataset.hpp"
#include "validate/nn.hpp"

namespace ddlsim::validate {

/// A proxy task's data: the first `train_size` samples of `train` are trained on, `test` is held out.
struct ReplayData {
    std::shared_ptr<const Dataset> train;
    std::size_t train_size = 0;
    std::shared_ptr<const Dataset> test;
};

struct ReplayOptions {
    ModelKind model = ModelKind::mlp;
    float learning_rate = 0.05F;
    std::uint32_t batch_size = 32;  ///< samples per gradient
    std::uint32_t eval_every = 10;  ///< iterations between evaluations
    double target_accuracy = 1.0;
    bool stop_at_target = true;
    CodecSpec codec;                                    ///< applied in sync and push ops
    topo::GossipGraph graph = topo::GossipGraph::ring;  ///< mix ops' mixing weights
    std::uint64_t seed = 0;  ///< initial parameters, shard shuffles, QSGD rounding, random matchings
};

/// One evaluation of the consensus model.
struct CurvePoint {
    double time_s = 0.0;  ///< simulated
    std::uint32_t iteration = 0;
    double loss = 0.0;  ///< mean cross-entropy on the held-out samples
    double accuracy = 0.0;
};

struct ReplayResult {
    std::vector<CurvePoint> curve;
    std::optional<double> time_to_accuracy_s;  ///< the first point reaching the target
    std::optional<std::uint32_t> iterations_to_accuracy;
    double final_accuracy = 0.0;  ///< of the last point
    double final_loss = 0.0;
    std::uint64_t gradients = 0;     ///< grad ops executed
    std::uint64_t ops_applied = 0;   ///< ops executed (fewer than scheduled when stopped at the target)
    double max_residual_norm = 0.0;  ///< largest ||e_w||_2 seen after a sync or push (0 without error feedback)
    double wall_time_s = 0.0;
};

/// Executes one schedule; apply() op by op (tests), or run() for the whole replay with evaluations.
class Replayer {
public:
    /// Throws std::invalid_argument when the schedule has no workers or the data cannot be sharded over them.
    Replayer(const models::Schedule& schedule, ReplayData data, ReplayOptions options);

    /// Executes one op (no evaluation); throws std::invalid_argument on an op that refers to a missing
    /// worker, set or gradient.
    void apply(const models::ScheduleOp& op);
    /// Executes the schedule from its first op, evaluating as the header describes.
    [[nodiscard]] ReplayResult run();
    /// Evaluates `params` on the held-out set: {loss, accuracy}.
    [[nodiscard]] std::pair<double, double> evaluate(std::span<const float> params);

    [[nodiscard]] std::span<const float> worker_params(std::uint32_t w) const { return x_[w]; }
    [[nodiscard]] std::span<const float> global_params() const { return global_; }
    [[nodiscard]] std::span<const float> worker_gradient(std::uint32_t w) const { return g_[w]; }
    /// X, or the mean of the x_w when the schedule has no sync, push or collect op.
    [[nodiscard]] std::vector<float> consensus() const;
    [[nodiscard]] double residual_norm(std::uint32_t w) const { return codecs_[w]->residual_norm(); }
    [[nodiscard]] std::uint64_t gradients() const { return gradients_; }

private:
    [[nodiscard]] const std::vector<std::uint32_t>& set(const models::ScheduleOp& op) const;
    void check_worker(std::uint32_t w) const;
    void compute_gradient(std::uint32_t w);

    const models::Schedule& schedule_;
    ReplayData data_;
    ReplayOptions opt_;
    std::uint32_t n_;
    bool has_global_ = false;
    std::unique_ptr<Model> model_;  // computes gradients and evaluations; its parameters are scratch
    std::vector<std::vector<float>> x_;
    std::vector<std::vector<float>> g_;
    std::vector<bool> has_grad_;
    std::vector<float> global_;
    std::vector<float> scratch_;
    std::vector<ShardSampler> samplers_;
    std::vector<std::unique_ptr<Codec>> codecs_;
    std::vector<Batch> test_batches_;
    std::uint64_t gradients_ = 0;
    double max_residual_ = 0.0;
};

/// Replays `schedule` with `data` and `options` (Replayer::run).
[[nodiscard]] ReplayResult replay(const models::Schedule& schedule, const ReplayData& data,
                                  const ReplayOptions& options);

}  // namespace ddlsim::validate
