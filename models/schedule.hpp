// The update schedule of a simulated run (docs/CONTRACT.md §6): which model each gradient was computed
// on, when and how updates were applied and models averaged, in simulated-time order. The
// convergence replay (validate/replay.hpp) executes exactly this sequence on a real proxy
// model, so accuracy can be reported against simulated time.
//
// Every worker w has a working model x_w; parameter-server schemes also have a global model X.
// Ops, applied in order:
//   grad w        g_w := gradient of the loss at x_w on w's next mini-batch (recorded when w
//                 starts the step's forward pass, so later changes to x_w are not seen: staleness)
//   local w       x_w := x_w - lr * g_w                          (Local SGD, FedAvg, gossip steps)
//   sync S        G := mean over w in S of D(C(g_w)) (the job's compressor, with its error
//                 feedback per worker); X := X - lr * G; x_w := X for w in S      (BSP)
//   push w        X := X - lr * D(C(g_w))                          (ASP / SSP: Downpour, every push at
//                 the full learning rate, so n pushes move X n times as far as one BSP step)
//   pull w        x_w := X                                         (ASP / SSP / FedAvg download)
//   average S     x_w := mean over v in S of x_v, for w in S       (Local SGD; AD-PSGD: |S| = 2)
//   collect S     X := mean over w in S of x_w                     (FedAvg server averaging)
//   mix r         x := W_r x with the gossip graph's mixing weights of round r  (D-PSGD, BSP)
// `time_s` is the simulated time at which the op takes effect, `iteration` the job iteration
// (FedAvg: round) it belongs to.
#pragma once

#include <cstdint>
#include <vector>

namespace ddlsim::models {

enum class OpKind : std::uint8_t { grad, local, sync, push, pull, average, collect, mix };

struct ScheduleOp {
    OpKind kind = OpKind::grad;
    std::uint32_t worker = 0;     ///< grad, local, push, pull
    std::uint32_t set = 0;        ///< sync, average, collect: index into Schedule::sets
    std::uint32_t round = 0;      ///< mix: the gossip round (random matchings change per round)
    std::uint32_t iteration = 0;  ///< the job iteration (FedAvg: round) the op belongs to
    double time_s = 0.0;
};

struct Schedule {
    std::uint32_t workers = 0;
    std::vector<ScheduleOp> ops;
    std::vector<std::vector<std::uint32_t>> sets;  ///< worker sets, sorted

    /// Appends a worker set and returns its index (the all-workers set is shared).
    std::uint32_t add_set(std::vector<std::uint32_t> s) {
        if (s.size() == workers && all_ >= 0) return static_cast<std::uint32_t>(all_);
        sets.push_back(std::move(s));
        if (sets.back().size() == workers) all_ = static_cast<std::int64_t>(sets.size() - 1);
        return static_cast<std::uint32_t>(sets.size() - 1);
    }
    void add(OpKind k, std::uint32_t worker, std::uint32_t set, std::uint32_t iteration, double time_s,
             std::uint32_t round = 0) {
        ops.push_back({k, worker, set, round, iteration, time_s});
    }

private:
    std::int64_t all_ = -1;
};

}  // namespace ddlsim::models
