// The message schedulers (models/message_scheduler.hpp).
#include "models/message_scheduler.hpp"

#include <deque>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ddlsim::models {
namespace {

class FifoScheduler final : public MessageScheduler {
public:
    FifoScheduler(std::uint32_t workers, Start start) : start_(std::move(start)), streams_(workers) {}
    void ready(std::uint32_t w, std::uint32_t i, std::uint32_t m) override {
        streams_[w].queue.emplace_back(i, m);
        pump(w);
    }
    void done(std::uint32_t w, std::uint32_t, std::uint32_t) override {
        streams_[w].busy = false;
        pump(w);
    }
    [[nodiscard]] bool waiting(std::uint32_t w) const override { return !streams_[w].queue.empty(); }

private:
    struct Stream {
        std::deque<std::pair<std::uint32_t, std::uint32_t>> queue;  ///< (iteration, message)
        bool busy = false;
    };
    void pump(std::uint32_t w) {
        Stream& s = streams_[w];
        if (s.busy || s.queue.empty()) return;
        const auto [i, m] = s.queue.front();
        s.queue.pop_front();
        s.busy = true;
        start_(w, i, m);
    }
    Start start_;
    std::vector<Stream> streams_;
};

class ConcurrentScheduler final : public MessageScheduler {
public:
    explicit ConcurrentScheduler(Start start) : start_(std::move(start)) {}
    void ready(std::uint32_t w, std::uint32_t i, std::uint32_t m) override { start_(w, i, m); }
    void done(std::uint32_t, std::uint32_t, std::uint32_t) override {}
    [[nodiscard]] bool waiting(std::uint32_t) const override { return false; }

private:
    Start start_;
};

class CreditScheduler final : public MessageScheduler {
public:
    CreditScheduler(std::uint32_t workers, std::uint32_t credit, Start start,
                    std::function<std::uint32_t(std::uint32_t)> front_layer)
        : workers_(workers), credit_(credit), start_(std::move(start)), front_layer_(std::move(front_layer)) {}
    void ready(std::uint32_t, std::uint32_t i, std::uint32_t m) override {
        const std::uint64_t k = key(i, m);
        if (++ready_count_[k] == workers_) {
            ready_count_.erase(k);
            heap_.emplace(i, front_layer_(m), m);
            dispatch();
        }
    }
    void done(std::uint32_t, std::uint32_t i, std::uint32_t m) override {
        const std::uint64_t k = key(i, m);
        if (++done_count_[k] == workers_) {
            done_count_.erase(k);
            --in_flight_;
            dispatch();
        }
    }
    [[nodiscard]] bool waiting(std::uint32_t) const override { return false; }

private:
    static std::uint64_t key(std::uint32_t i, std::uint32_t m) { return (static_cast<std::uint64_t>(i) << 32) | m; }
    void dispatch() {
        while (in_flight_ < credit_ && !heap_.empty()) {
            const auto [i, front, m] = heap_.top();
            (void)front;
            heap_.pop();
            ++in_flight_;
            for (std::uint32_t w = 0; w < workers_; ++w) start_(w, i, m);
        }
    }
    std::uint32_t workers_;
    std::uint32_t credit_;
    Start start_;
    std::function<std::uint32_t(std::uint32_t)> front_layer_;
    std::unordered_map<std::uint64_t, std::uint32_t> ready_count_, done_count_;
    /// (iteration, front layer, message), smallest first.
    std::priority_queue<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>,
                        std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>>, std::greater<>>
        heap_;
    std::uint32_t in_flight_ = 0;
};

}  // namespace

std::unique_ptr<MessageScheduler> make_message_scheduler(const TrainingJob& job, MessageScheduler::Start start,
                                                         std::function<std::uint32_t(std::uint32_t)> front_layer) {
    if (job.overlap.priority)
        return std::make_unique<CreditScheduler>(job.workers, job.overlap.credit, std::move(start),
                                                 std::move(front_layer));
    if (job.architecture.kind == topo::ArchKind::ps) return std::make_unique<ConcurrentScheduler>(std::move(start));
    return std::make_unique<FifoScheduler>(job.workers, std::move(start));
}

}  // namespace ddlsim::models
