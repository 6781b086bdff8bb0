// The event engine: total order, cancellation, no events in the past.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "sim/engine.hpp"

using namespace ddlsim::sim;

TEST_CASE("engine: events run in time order, ties in insertion order") {
    Engine e;
    std::vector<int> order;
    e.at(Time::ps(20), [&] { order.push_back(3); });
    e.at(Time::ps(10), [&] { order.push_back(1); });
    e.at(Time::ps(10), [&] { order.push_back(2); });
    e.at(Time::ps(20), [&] { order.push_back(4); });
    e.run();
    CHECK(order == std::vector<int>{1, 2, 3, 4});
    CHECK(e.now().ps() == 20);
    CHECK(e.events_processed() == 4);
}

TEST_CASE("engine: actions schedule further events relative to now") {
    Engine e;
    std::vector<std::int64_t> times;
    e.after(Time::ps(5), [&] {
        times.push_back(e.now().ps());
        e.after(Time::ps(7), [&] { times.push_back(e.now().ps()); });
        e.after(Time::zero(), [&] { times.push_back(e.now().ps()); });
    });
    e.run();
    CHECK(times == std::vector<std::int64_t>{5, 5, 12});
}

TEST_CASE("engine: events due now, scheduled while now runs, follow every event already due now") {
    // Events for the current instant go to a queue beside the heap; the total order (time, then insertion) must not
    // notice: here interleaved with heap events at the same instant, zero-delay chains, a cancellation and time 0.
    Engine e;
    std::vector<int> order;
    EventId cancelled;
    e.at(Time::zero(), [&] { order.push_back(0); });  // before run(), at now = 0
    e.at(Time::ps(10), [&] {
        order.push_back(1);
        e.after(Time::zero(), [&] {
            order.push_back(4);
            e.after(Time::zero(), [&] { order.push_back(6); });
        });
        cancelled = e.after(Time::zero(), [&] { order.push_back(-1); });
        e.after(Time::zero(), [&] { order.push_back(5); });
        e.after(Time::ps(1), [&] { order.push_back(7); });
    });
    e.at(Time::ps(10), [&] {
        order.push_back(2);
        CHECK(e.cancel(cancelled));
    });
    e.at(Time::ps(10), [&] { order.push_back(3); });
    e.run();
    CHECK(order == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
    CHECK(e.now().ps() == 11);
    CHECK(e.pending() == 0);
    CHECK(e.events_processed() == 8);
}

TEST_CASE("engine: cancellation") {
    Engine e;
    int ran = 0;
    const EventId a = e.after(Time::ps(1), [&] { ran += 1; });
    const EventId b = e.after(Time::ps(2), [&] { ran += 10; });
    CHECK(e.pending() == 2);
    CHECK(e.cancel(b));
    CHECK_FALSE(e.cancel(b));  // already cancelled
    CHECK(e.pending() == 1);
    e.run();
    CHECK(ran == 1);
    CHECK_FALSE(e.cancel(a));  // already ran
    CHECK(e.events_processed() == 1);
    // A stale id must not cancel the event that reuses its slot.
    const EventId c = e.after(Time::ps(1), [&] { ran += 100; });
    CHECK_FALSE(e.cancel(a));
    e.run();
    CHECK(ran == 101);
    CHECK_FALSE(e.cancel(c));
}

TEST_CASE("engine: scheduling in the past is a logic error") {
    Engine e;
    e.at(Time::ps(10), [&] { CHECK_THROWS_AS(e.at(Time::ps(5), [] {}), std::logic_error); });
    e.run();
}

TEST_CASE("engine: stop ends run after the current event") {
    Engine e;
    int ran = 0;
    e.after(Time::ps(1), [&] {
        ++ran;
        e.stop();
    });
    e.after(Time::ps(2), [&] { ++ran; });
    e.run();
    CHECK(ran == 1);
    e.run();
    CHECK(ran == 2);
}

TEST_CASE("engine: the progress callback runs once every kProgressEvents events, after the event") {
    Engine e;
    const std::uint64_t n = 3 * Engine::kProgressEvents + 5;
    for (std::uint64_t i = 0; i < n; ++i) e.at(Time::ps(static_cast<std::int64_t>(i)), [] {});
    std::vector<std::uint64_t> seen;
    e.set_progress([&] { seen.push_back(e.events_processed()); });
    e.run();
    CHECK(seen == std::vector<std::uint64_t>{Engine::kProgressEvents, 2 * Engine::kProgressEvents,
                                             3 * Engine::kProgressEvents});
}
