// When a worker's ready gradient message starts: the message scheduler of a synchronous job, chosen once from the
// job (make_message_scheduler) and owning its queues. Three strategies:
//   fifo        one stream per worker, messages in the order backward produced them (NCCL's single stream:
//               all-reduce collectives on one worker run one at a time, in order)
//   concurrent  every message starts at once (a parameter server's pushes and pulls to different servers proceed
//               in parallel; PS-Lite, BytePS)
//   credit      P3 / ByteScheduler priority: a message starts once every worker has it ready, front-most layer
//               (and older iteration) first, at most `credit` in flight for the whole job (Peng et al., SOSP 2019)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "models/job.hpp"

namespace ddlsim::models {

class MessageScheduler {
public:
    /// Starts worker w's message m of iteration i.
    using Start = std::function<void(std::uint32_t w, std::uint32_t i, std::uint32_t m)>;
    virtual ~MessageScheduler() = default;
    /// Worker w has message m of iteration i ready.
    virtual void ready(std::uint32_t w, std::uint32_t i, std::uint32_t m) = 0;
    /// Worker w's message m of iteration i is done.
    virtual void done(std::uint32_t w, std::uint32_t i, std::uint32_t m) = 0;
    /// Whether worker w has ready messages not started yet.
    [[nodiscard]] virtual bool waiting(std::uint32_t w) const = 0;
};

/// The scheduler of a synchronous job: credit under priority, concurrent on a parameter server, else fifo.
/// `front_layer(m)`: the front-most layer message m holds (credit order).
[[nodiscard]] std::unique_ptr<MessageScheduler> make_message_scheduler(
    const TrainingJob& job, MessageScheduler::Start start, std::function<std::uint32_t(std::uint32_t m)> front_layer);

}  // namespace ddlsim::models
