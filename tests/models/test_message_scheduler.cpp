// The message schedulers of synchronous jobs (models/message_scheduler.hpp), driven by hand.
#include <doctest/doctest.h>

#include <tuple>
#include <vector>

#include "models/message_scheduler.hpp"

using namespace ddlsim;

namespace {

using Started = std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>>;  // (worker, iteration, message)

models::TrainingJob job_of(std::uint32_t workers, topo::ArchKind kind, bool priority, std::uint32_t credit) {
    models::TrainingJob j;
    j.workers = workers;
    j.architecture.kind = kind;
    j.overlap.priority = priority;
    j.overlap.credit = credit;
    return j;
}

}  // namespace

TEST_CASE("message scheduler: fifo runs one message per worker at a time, in order") {
    Started started;
    const auto job = job_of(2, topo::ArchKind::allreduce, false, 4);
    auto s = models::make_message_scheduler(
        job, [&](std::uint32_t w, std::uint32_t i, std::uint32_t m) { started.emplace_back(w, i, m); },
        [](std::uint32_t m) { return m; });
    s->ready(0, 0, 0);
    s->ready(0, 0, 1);
    s->ready(1, 0, 0);
    CHECK(started == Started{{0, 0, 0}, {1, 0, 0}});
    CHECK(s->waiting(0));
    CHECK_FALSE(s->waiting(1));
    s->done(0, 0, 0);
    CHECK(started.back() == std::tuple{0U, 0U, 1U});
    CHECK_FALSE(s->waiting(0));
}

TEST_CASE("message scheduler: a parameter server starts every message at once") {
    Started started;
    const auto job = job_of(2, topo::ArchKind::ps, false, 4);
    auto s = models::make_message_scheduler(
        job, [&](std::uint32_t w, std::uint32_t i, std::uint32_t m) { started.emplace_back(w, i, m); },
        [](std::uint32_t m) { return m; });
    for (std::uint32_t m = 0; m < 3; ++m) s->ready(0, 0, m);
    CHECK(started.size() == 3);
    CHECK_FALSE(s->waiting(0));
}

TEST_CASE("message scheduler: credit waits for every worker, keeps at most credit in flight, front layers first") {
    Started started;
    const auto job = job_of(2, topo::ArchKind::allreduce, true, 1);
    // Message m holds front layer 10 - m: the last message produced by backward is the front-most.
    auto s = models::make_message_scheduler(
        job, [&](std::uint32_t w, std::uint32_t i, std::uint32_t m) { started.emplace_back(w, i, m); },
        [](std::uint32_t m) { return 10 - m; });
    s->ready(0, 0, 0);
    CHECK(started.empty());  // worker 1 has not got it yet
    s->ready(1, 0, 0);
    CHECK(started == Started{{0, 0, 0}, {1, 0, 0}});
    for (std::uint32_t w = 0; w < 2; ++w) s->ready(w, 0, 1);
    for (std::uint32_t w = 0; w < 2; ++w) s->ready(w, 0, 2);
    CHECK(started.size() == 2);  // credit 1: message 0 still in flight
    s->done(0, 0, 0);
    CHECK(started.size() == 2);  // until every worker is done with it
    s->done(1, 0, 0);
    REQUIRE(started.size() == 4);
    CHECK(std::get<2>(started[2]) == 2);  // message 2 (front layer 8) before message 1 (front layer 9)
}
