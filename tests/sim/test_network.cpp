// The flow-level network and the transfer-DAG runner, on hand-derived timelines.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <vector>

#include "sim/network.hpp"
#include "sim/transfer_dag.hpp"

using namespace ddlsim::sim;

namespace {
constexpr double kTol = 1e-9;
}

TEST_CASE("network: a lone transfer ends at start + latency + S/B") {
    Engine e;
    Network n(e);
    const auto a = n.add_link({Bandwidth::bytes_per_s(100.0), Time::seconds(0.5)});
    const auto b = n.add_link({Bandwidth::bytes_per_s(50.0), Time::seconds(0.25)});
    double done = -1;
    n.start({a, b}, Bytes{100.0}, [&] { done = e.now().seconds(); });
    e.run();
    // Λ = 0.75 s, bottleneck 50 B/s: 0.75 + 100/50 = 2.75 s.
    CHECK(done == ddlsim::testing::approx(2.75).epsilon(kTol));
    CHECK(n.stats(a).bytes == 100.0);
    CHECK(n.active() == 0);
}

TEST_CASE("network: rates change when a flow finishes") {
    // One link of 100 B/s. Flows of 100 B and 300 B start together: 50 B/s each.
    // The first ends at 2 s; the second has 200 B left, now at 100 B/s: ends at 4 s.
    Engine e;
    Network n(e);
    const auto l = n.add_link({Bandwidth::bytes_per_s(100.0), Time::zero()});
    double t1 = -1, t2 = -1;
    n.start({l}, Bytes{100.0}, [&] { t1 = e.now().seconds(); });
    n.start({l}, Bytes{300.0}, [&] { t2 = e.now().seconds(); });
    e.run();
    CHECK(t1 == ddlsim::testing::approx(2.0).epsilon(kTol));
    CHECK(t2 == ddlsim::testing::approx(4.0).epsilon(kTol));
}

TEST_CASE("network: rates change when a flow starts") {
    // Flow A (300 B) alone at 100 B/s from 0 to 1 s: 200 B left. Flow B (100 B) starts at 1 s:
    // both at 50 B/s; B ends at 3 s; A has 100 B left, alone again at 100 B/s: ends at 4 s.
    Engine e;
    Network n(e);
    const auto l = n.add_link({Bandwidth::bytes_per_s(100.0), Time::zero()});
    double ta = -1, tb = -1;
    n.start({l}, Bytes{300.0}, [&] { ta = e.now().seconds(); });
    e.at(Time::seconds(1.0), [&] { n.start({l}, Bytes{100.0}, [&] { tb = e.now().seconds(); }); });
    e.run();
    CHECK(tb == ddlsim::testing::approx(3.0).epsilon(kTol));
    CHECK(ta == ddlsim::testing::approx(4.0).epsilon(kTol));
}

TEST_CASE("network: latency is paid before sharing starts") {
    // Link 100 B/s, latency 1 s. Flows of 100 B and 300 B start at 0 and share from 1 s:
    // ends at 1 + 2 = 3 s and 1 + 4 = 5 s.
    Engine e;
    Network n(e);
    const auto l = n.add_link({Bandwidth::bytes_per_s(100.0), Time::seconds(1.0)});
    double t1 = -1, t2 = -1;
    n.start({l}, Bytes{100.0}, [&] { t1 = e.now().seconds(); });
    n.start({l}, Bytes{300.0}, [&] { t2 = e.now().seconds(); });
    e.run();
    CHECK(t1 == ddlsim::testing::approx(3.0).epsilon(kTol));
    CHECK(t2 == ddlsim::testing::approx(5.0).epsilon(kTol));
}

TEST_CASE("network: independent components do not disturb each other") {
    // Two disjoint links; a flow on one must keep its rate when the other link gets busy.
    Engine e;
    Network n(e);
    const auto a = n.add_link({Bandwidth::bytes_per_s(10.0), Time::zero()});
    const auto b = n.add_link({Bandwidth::bytes_per_s(10.0), Time::zero()});
    double ta = -1;
    n.start({a}, Bytes{100.0}, [&] { ta = e.now().seconds(); });
    for (int i = 0; i < 5; ++i) n.start({b}, Bytes{10.0}, [] {});
    e.run();
    CHECK(ta == ddlsim::testing::approx(10.0).epsilon(kTol));
}

TEST_CASE("network: an empty route completes at once") {
    Engine e;
    Network n(e);
    double t = -1;
    n.start({}, Bytes{1e9}, [&] { t = e.now().seconds(); });
    e.run();
    CHECK(t == 0.0);
}

TEST_CASE("network: a transfer's share is its weight in max-min sharing, its bytes counted once") {
    // One link of 100 B/s. A (share 3, 300 B) and B (share 1, 100 B) start together: A counts as three flows,
    // so A moves at 75 B/s and B at 25 B/s; both end at 4 s (the link is busy throughout: 400 B / 100 B/s).
    // C (share 0.4, 100 B) then runs alone: a share does not cap a lone transfer, it ends 1 s later.
    // Two links in series, D (share 2.5) on both and E (share 1) on the second only: the second link's
    // 100 B/s splits 2.5 : 1, D at 71.43 B/s, E at 28.57 B/s (the first link is not D's bottleneck).
    Engine e;
    Network n(e);
    const auto l = n.add_link({Bandwidth::bytes_per_s(100.0), Time::zero()});
    double ta = -1, tb = -1, tc = -1;
    n.start(
        {l}, Bytes{300.0}, [&] { ta = e.now().seconds(); }, 3.0);
    n.start({l}, Bytes{100.0}, [&] { tb = e.now().seconds(); });
    e.at(Time::seconds(4.0), [&] {
        n.start(
            {l}, Bytes{100.0}, [&] { tc = e.now().seconds(); }, 0.4);
    });
    e.run();
    CHECK(ta == ddlsim::testing::approx(4.0).epsilon(kTol));
    CHECK(tb == ddlsim::testing::approx(4.0).epsilon(kTol));
    CHECK(tc == ddlsim::testing::approx(5.0).epsilon(kTol));
    CHECK(n.stats(l).bytes == 500.0);
    CHECK(n.stats(l).transfers == 3);

    const auto first = n.add_link({Bandwidth::bytes_per_s(1000.0), Time::zero()});
    const auto second = n.add_link({Bandwidth::bytes_per_s(100.0), Time::zero()});
    double td = -1, te = -1;
    const double t0 = e.now().seconds();
    n.start(
        {first, second}, Bytes{250.0}, [&] { td = e.now().seconds() - t0; }, 2.5);
    n.start({second}, Bytes{100.0}, [&] { te = e.now().seconds() - t0; });
    e.run();
    // D: 250 B at 250/3.5 B/s ends at 3.5 s; E: 100 B at 100/3.5 B/s ends at 3.5 s too.
    CHECK(td == ddlsim::testing::approx(3.5).epsilon(kTol));
    CHECK(te == ddlsim::testing::approx(3.5).epsilon(kTol));
    CHECK_THROWS(n.start(
        {l}, Bytes{1.0}, [] {}, 0.0));
}

TEST_CASE("max-min: fractional weights that do not sum exactly still end the filling") {
    // Ten flows of weight 0.1 on one link and one of 0.7 with them on a second link: 0.1 summed ten times is not
    // 1.0 in floating point; the filling must still freeze every flow (and not loop on a residue of 1e-16).
    Engine e;
    Network n(e);
    const auto a = n.add_link({Bandwidth::bytes_per_s(10.0), Time::zero()});
    const auto b = n.add_link({Bandwidth::bytes_per_s(1.0), Time::zero()});
    int finished = 0;
    for (int i = 0; i < 10; ++i)
        n.start(
            {a}, Bytes{1.0}, [&] { ++finished; }, 0.1);
    n.start(
        {a, b}, Bytes{1.0}, [&] { ++finished; }, 0.7);
    e.run();
    CHECK(finished == 11);
}

TEST_CASE("transfer DAG: dependencies, gates and endpoint completion") {
    // Endpoints 0,1,2 on links (one per endpoint pair direction) of 10 B/s, no latency.
    // Step 0: 0->1 100 B. Step 1: 1->2 50 B after step 0. Step 2: local work at 2 (3 s) after step 1.
    // Gate of 1 opens at 20 s (after step 0 finished at 10 s), so step 1 runs 20..25, work 25..28.
    Engine e;
    Network n(e);
    const auto l01 = n.add_link({Bandwidth::bytes_per_s(10.0), Time::zero()});
    const auto l12 = n.add_link({Bandwidth::bytes_per_s(10.0), Time::zero()});
    const Route r01{l01}, r12{l12}, none{};
    Plan p;
    p.endpoints = 3;
    const auto s0 = p.add(0, 1, Bytes{100.0});
    const auto s1 = p.add(1, 2, Bytes{50.0}, {s0});
    p.add_work(2, Time::seconds(3.0), {s1});
    p.seal();
    CHECK(p.transfer_bytes() == 150.0);
    std::vector<double> done(3, -1);
    DagRunner run(
        e, n, p,
        [&](std::uint32_t a, std::uint32_t b) -> const Route& { return a == 0 && b == 1 ? r01
                                                                       : b == 2         ? r12
                                                                                        : none; },
        [&](std::uint32_t ep) { done[ep] = e.now().seconds(); });
    run.open(0);
    run.open(2);
    e.at(Time::seconds(20.0), [&] { run.open(1); });
    e.run();
    CHECK(run.finished());
    CHECK(done[0] == ddlsim::testing::approx(10.0));
    CHECK(done[1] == ddlsim::testing::approx(25.0));
    CHECK(done[2] == ddlsim::testing::approx(28.0));
}

TEST_CASE("transfer DAG: a stream of back-to-back messages pays the route's latency once") {
    // One link of 100 B/s with latency 1 s, three messages of 100 B from endpoint 0 to 1, each after the one before.
    // Chained only by completion, each pays the latency: 3 x (1 + 1) = 6 s. Marked as a stream (set_follows), the
    // second and third leave right behind the first: 1 + 3 x 1 = 4 s. A third message that also waits for local work
    // at endpoint 0 ending at 5 s (after the second arrived at 3 s) had nothing on the wire: 5 + 1 + 1 = 7 s.
    const auto run = [](bool stream, double work) {
        Engine e;
        Network n(e);
        const auto l = n.add_link({Bandwidth::bytes_per_s(100.0), Time::seconds(1.0)});
        const Route r{l}, none{};
        Plan p;
        p.endpoints = 2;
        const auto m0 = p.add(0, 1, Bytes{100.0});
        const auto m1 = p.add(0, 1, Bytes{100.0}, {m0});
        std::vector<std::uint32_t> after{m1};
        if (work > 0.0) after.push_back(p.add_work(0, Time::seconds(work)));
        const auto m2 = p.add(0, 1, Bytes{100.0}, after);
        if (stream) {
            p.set_follows(m1, m0);
            p.set_follows(m2, m1);
        }
        p.seal();
        double last = -1;
        DagRunner dag(
            e, n, p, [&](std::uint32_t a, std::uint32_t b) -> const Route& { return a == b ? none : r; },
            [&](std::uint32_t ep) {
                if (ep == 1) last = e.now().seconds();
            });
        dag.open(0);
        dag.open(1);
        e.run();
        return last;
    };
    CHECK(run(false, 0.0) == ddlsim::testing::approx(6.0).epsilon(kTol));
    CHECK(run(true, 0.0) == ddlsim::testing::approx(4.0).epsilon(kTol));
    CHECK(run(true, 5.0) == ddlsim::testing::approx(7.0).epsilon(kTol));
    Plan bad;
    bad.endpoints = 3;
    const auto a = bad.add(0, 1, Bytes{1.0});
    const auto b = bad.add(0, 2, Bytes{1.0}, {a});
    const auto c = bad.add(0, 1, Bytes{1.0});
    CHECK_THROWS(bad.set_follows(b, a));  // another destination
    CHECK_THROWS(bad.set_follows(c, a));  // not after it
}

TEST_CASE("transfer DAG: alpha-beta estimate by levels") {
    // Level 0: 0->1 and 2->1, 100 B each at 10 B/s, latency 1 s: endpoint 1 receives 200 B one
    // after another: 1 + 20 = 21 s. Level 1: work 5 s at 1. Level 2: 1->0, 100 B: 1 + 10 = 11 s.
    Plan p;
    p.endpoints = 3;
    const auto a = p.add(0, 1, Bytes{100.0});
    const auto b = p.add(2, 1, Bytes{100.0});
    const auto w = p.add_work(1, Time::seconds(5.0), {a, b});
    p.add(1, 0, Bytes{100.0}, {w});
    const Time t = alpha_beta_time(p, [](std::uint32_t, std::uint32_t) {
        return PathCost{Time::seconds(1.0), Bandwidth::bytes_per_s(10.0), false};
    });
    CHECK(t.seconds() == ddlsim::testing::approx(21.0 + 5.0 + 11.0));
}
