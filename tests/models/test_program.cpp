// The per-rank program and its executor (models/program/): ranks running different programs with point-to-point
// sends (a pipeline's shape, against its hand-derived makespan), compute waiting for a collective and stretched
// beside one, and the planner's one cache keyed by CommOp.
#include <doctest/doctest.h>

#include "tests/support/approx.hpp"

#include <vector>

#include "models/program/executor.hpp"
#include "models/program/planner.hpp"
#include "models/program/program.hpp"
#include "sim/engine.hpp"
#include "sim/network.hpp"
#include "topologies/builders.hpp"

using namespace ddlsim;
using models::program::CollectiveKind;
using models::program::CommOp;
using models::program::ComputeKind;

namespace {

constexpr double kL = 5e-6;    // per-link latency of the star, s
constexpr double kB = 1.25e9;  // 10 Gbit/s in bytes/s
constexpr double kC = 1e-3;    // forward time of the one layer, s

// A job of n ranks, one host each on a star, one layer whose forward takes kC.
struct Bench {
    topo::Fabric fabric;
    models::TrainingJob job;
    sim::Engine engine;
    sim::Network net{engine};
    std::vector<models::detail::WorkerClock> clocks;

    Bench(std::uint32_t n, std::uint32_t iterations, bool analytic = false)
        : fabric(topo::build_fabric(topo::StarSpec{n, sim::Bandwidth::bytes_per_s(kB), sim::Time::seconds(kL)})),
          clocks(n),
          analytic_(analytic) {
        fabric.install(net);
        job.workers = n;
        job.iterations = iterations;
        models::Layer layer;
        layer.name = "l0";
        job.workload.layers.push_back(layer);
        job.compute.layers.push_back(
            {sim::Time::seconds(kC), sim::Time::seconds(2 * kC), sim::Time::seconds(kC), sim::Time::seconds(kC)});
        job.endpoint_hosts.assign(fabric.hosts().begin(), fabric.hosts().end());
    }

    // Runs `set` to the end; returns the makespan (the last rank's finish), s.
    double run(const models::program::ProgramSet& set, models::program::Planner& planner) {
        models::detail::Comm comm(engine, net, fabric, job, analytic_);
        models::program::Executor exec(set, planner, comm, clocks, job, {}, {});
        exec.start();
        engine.run();
        double end = 0.0;
        for (const auto& c : clocks) end = std::max(end, c.finished.seconds());
        return end;
    }

    models::program::Planner planner() {
        return models::program::Planner(
            job.workers, nullptr, [](std::uint32_t a, std::uint32_t b) { return a != b; },
            [](std::uint32_t a, std::uint32_t b) { return a != b; });
    }

private:
    bool analytic_;
};

models::program::Compute forward() {
    models::program::Compute c;
    c.label = "fwd l0";
    return c;
}

}  // namespace

TEST_CASE("program: a chain of stages passing activations runs as a pipeline, with its hand-derived makespan") {
    // Rank r receives from r - 1, computes c, sends S bytes to r + 1; an iteration ends when its send has landed.
    // One transfer on the idle star takes T = 2L + S/B. Rank r's iteration k (from 1) ends at (r + k) c + (r + k) T
    // (its send lands) or, for the last rank, computes until (n - 1 + k) c + (n - 2 + k) T: k iterations of an n-stage
    // chain take (n - 1 + k) c + (n - 2 + k) T.
    const double S = 8e6, T = 2 * kL + S / kB;
    for (bool analytic : {false, true}) {
        for (std::uint32_t n : {2u, 4u}) {
            for (std::uint32_t k : {1u, 2u, 3u}) {
                CAPTURE(analytic);
                CAPTURE(n);
                CAPTURE(k);
                Bench b(n, k, analytic);
                models::program::ProgramSet set;
                for (std::uint32_t r = 0; r < n; ++r) {
                    models::program::Program p;
                    if (r > 0) p.recv(r - 1, 7);
                    p.compute(forward());
                    if (r + 1 < n) p.send(r + 1, S, 7);
                    set.programs.push_back(std::move(p));
                    set.program_of.push_back(r);
                }
                auto planner = b.planner();
                const double makespan = b.run(set, planner);
                CHECK(makespan == testing::approx((n - 1 + k) * kC + (n - 2 + k) * T).epsilon(1e-9));
                // Every rank computed k times, nothing more.
                for (const auto& c : b.clocks) CHECK(c.busy.seconds() == testing::approx(k * kC).epsilon(1e-12));
            }
        }
    }
}

TEST_CASE("program: a receive without its send never runs the compute behind it") {
    // Rank 1 waits for a tag rank 0 never sends: it must not finish (a mismatched pipeline schedule is visible as
    // a rank that never ends, not as a silently skipped wait).
    Bench b(2, 1);
    models::program::ProgramSet set;
    models::program::Program p0, p1;
    p0.compute(forward());
    p0.send(1, 1e6, 1);
    p1.recv(0, 2);
    p1.compute(forward());
    set.programs = {p0, p1};
    set.program_of = {0, 1};
    auto planner = b.planner();
    b.run(set, planner);
    CHECK(b.clocks[0].iterations == 1);
    CHECK(b.clocks[1].iterations == 0);
    CHECK(b.clocks[1].busy == sim::Time::zero());
}

TEST_CASE("program: compute that waits for an all-gather starts when the ring ends, beside it, compute is stretched") {
    const std::uint32_t n = 4;
    const double S = 40e6;
    const double ring = (n - 1) * (2 * kL + S / n / kB);  // one ring phase of S among n on the star
    // One all-gather of S over all four ranks, then the compute (waiting for the gather, or not).
    auto run = [&](bool wait, double slowdown, Bench& b) {
        b.job.overlap_slowdown = slowdown;
        auto planner = b.planner();
        const auto all = planner.add_group("all", {{0, 1, 2, 3}});
        models::program::ProgramSet set;
        const std::uint32_t g =
            set.add_call(models::program::Call::of({CommOp::of(CollectiveKind::all_gather, all, S)}, "gather", false));
        set.programs.emplace_back();
        set.programs[0].issue(g);
        if (wait) set.programs[0].wait(g);
        set.programs[0].compute(forward());
        return b.run(set, planner);
    };
    Bench waiting(n, 1), beside(n, 1);
    CHECK(run(true, 0.5, waiting) == testing::approx(ring + kC).epsilon(1e-9));
    CHECK(waiting.clocks[0].busy.seconds() == testing::approx(kC).epsilon(1e-12));  // nothing in flight: no stretch
    // No wait: the compute runs beside the gather, (1 + slowdown) longer; the iteration ends with the later.
    CHECK(run(false, 0.5, beside) == testing::approx(std::max(ring, 1.5 * kC)).epsilon(1e-9));
    CHECK(beside.clocks[0].busy.seconds() == testing::approx(1.5 * kC).epsilon(1e-12));
}

TEST_CASE("program: two calls on one rank's stream run one after the other, in issue order") {
    // A reduce-scatter and an all-gather of S issued together: the second starts when the first ends (one stream),
    // so the wait for the second ends after two ring phases.
    const std::uint32_t n = 4;
    const double S = 40e6, ring = (n - 1) * (2 * kL + S / n / kB);
    Bench b(n, 1);
    auto planner = b.planner();
    const auto all = planner.add_group("all", {{0, 1, 2, 3}});
    models::program::ProgramSet set;
    const std::uint32_t rs =
        set.add_call(models::program::Call::of({CommOp::of(CollectiveKind::reduce_scatter, all, S)}, "rs", true));
    const std::uint32_t ag =
        set.add_call(models::program::Call::of({CommOp::of(CollectiveKind::all_gather, all, S)}, "ag", false));
    set.programs.emplace_back();
    set.programs[0].issue(rs);
    set.programs[0].issue(ag);
    set.programs[0].wait(ag);
    set.programs[0].compute(forward());
    CHECK(b.run(set, planner) == testing::approx(2 * ring + kC).epsilon(1e-9));
}

TEST_CASE("planner: one collective per distinct CommOp, the op's ordering is the key") {
    Bench b(4, 1);
    auto planner = b.planner();
    const auto all = planner.add_group("all", {{0, 1, 2, 3}});
    const auto pairs = planner.add_group("pairs", {{0, 1}, {2, 3}});
    const auto across = planner.add_group_across("across", pairs);
    CHECK(planner.parts(across) == models::program::Partition{{0, 2}, {1, 3}});
    CHECK(planner.group_size(pairs) == 2);
    const CommOp a = CommOp::of(CollectiveKind::all_gather, all, 1e6);
    CommOp quantized = a;
    quantized.before.memory_bytes = 1.0;
    const auto* first = &planner.collective(a);
    CHECK(&planner.collective(a) == first);
    CHECK(&planner.collective(CommOp::of(CollectiveKind::all_gather, all, 1e6)) == first);
    CHECK(&planner.collective(quantized) != first);
    CHECK(&planner.collective(CommOp::of(CollectiveKind::reduce_scatter, all, 1e6)) != first);
    CHECK(&planner.collective(CommOp::of(CollectiveKind::all_gather, pairs, 1e6)) != first);
    CHECK(planner.built() == 4);
    CHECK(a < quantized);
    CHECK(!(quantized < a));
    // Ring all-gather among 4 on distinct hosts: 3 steps of S/4 per rank; the replica all-reduce of the pairs'
    // 1/2 shards over 2 groups: 2 (2 - 1) steps of S/4 per rank.
    CHECK(planner.wire_bytes(a) == testing::approx(4 * 3 * 1e6 / 4));
    CHECK(planner.wire_bytes(CommOp::of(CollectiveKind::all_reduce, across, 1e6)) == testing::approx(4 * 2 * 1e6 / 4));
    // An all-reduce over a group of its own: a ring in each part, 2 (4 - 1) steps of S/4 per rank among 4, the whole
    // S reduced (not a shard's), and a different collective from the replica all-reduce of the same bytes.
    const CommOp ring = CommOp::of(CollectiveKind::all_reduce, all, 1e6);
    CHECK(planner.wire_bytes(ring) == testing::approx(4 * 2 * 3 * 1e6 / 4));
    CHECK(planner.wire_bytes(CommOp::of(CollectiveKind::all_reduce, pairs, 1e6)) == testing::approx(4 * 2 * 1e6 / 2));
}

TEST_CASE("planner: a data-parallel job's collectives come from the same planner, keyed by their tensors") {
    Bench b(4, 1);
    b.job.architecture.kind = topo::ArchKind::allreduce;
    b.job.architecture.algorithm = topo::AllreduceAlgorithm::ring;
    const auto ctx = models::collective_context(b.job, b.fabric);
    models::program::Planner planner(
        4, &ctx, [](std::uint32_t x, std::uint32_t y) { return x != y; },
        [](std::uint32_t x, std::uint32_t y) { return x != y; });
    const double S = 8e6;
    // Without a job to serve, the data-parallel kinds are refused.
    CHECK_THROWS_AS((void)planner.collective(CommOp::of(CollectiveKind::summable, 0, S)), std::logic_error);
    planner.serve_data_parallel(b.job);
    CommOp one = CommOp::of(CollectiveKind::summable, 0, S);
    one.tensors = {S};
    CommOp two = one;
    two.tensors = {S / 2, S / 2};
    // A ring all-reduce: 2 (n - 1) steps of S / n per worker.
    CHECK(planner.wire_bytes(one) == testing::approx(4 * 2 * 3 * S / 4));
    CHECK(&planner.collective(two) != &planner.collective(one));
    CHECK(&planner.collective(one) == &planner.collective(one));
    CHECK(planner.pick_of(&planner.collective(one)) == nullptr);  // ring was asked for: no auto pick
    // auto: one pick per size, recorded against the collective built.
    b.job.architecture.algorithm = topo::AllreduceAlgorithm::automatic;
    const auto auto_ctx = models::collective_context(b.job, b.fabric);  // with auto's round timing
    models::program::Picks picks;
    models::program::Planner automatic(
        4, &auto_ctx, [](std::uint32_t x, std::uint32_t y) { return x != y; },
        [](std::uint32_t x, std::uint32_t y) { return x != y; });
    automatic.serve_data_parallel(b.job, &picks);
    const auto* pick = automatic.pick_of(&automatic.collective(one));
    REQUIRE(pick != nullptr);
    CHECK(pick->second == S);
    CHECK(picks.size() == 1);
    CHECK(picks.at(S) == pick->first);
}

TEST_CASE("program: a cycle of programs per iteration, marks in order, and concurrent streams") {
    SUBCASE("iteration i runs programs[cycle[i % size]]") {
        // Local SGD's shape: H - 1 programs of one kind, then another. Here c, then 2c (an update as long as forward):
        // four iterations take 2 (c + 2c).
        Bench b(2, 4);
        b.job.compute.update = sim::Time::seconds(kC);
        auto planner = b.planner();
        models::program::ProgramSet set;
        models::program::Program one, two;
        one.compute(forward());
        two.compute(forward());
        models::program::Compute update;
        update.kind = ComputeKind::update;  // the layer's update time is c too
        two.compute(update);
        set.programs = {one, two};
        set.cycle = {0, 1};
        CHECK(b.run(set, planner) == testing::approx(6 * kC).epsilon(1e-12));
    }
    SUBCASE("marks reach the trainer in program order, once per iteration") {
        Bench b(1, 2);
        auto planner = b.planner();
        models::program::ProgramSet set;
        set.programs.emplace_back();
        set.programs[0].mark(7);
        set.programs[0].compute(forward());
        set.programs[0].mark(8);
        std::vector<std::pair<std::uint32_t, std::uint32_t>> seen;  // (iteration, id)
        models::detail::Comm comm(b.engine, b.net, b.fabric, b.job, false);
        models::program::Executor::Hooks hooks;
        hooks.marked = [&](std::uint32_t, std::uint32_t i, std::uint32_t id) { seen.emplace_back(i, id); };
        models::program::Executor exec(set, planner, comm, b.clocks, b.job, {}, std::move(hooks));
        exec.start();
        b.engine.run();
        CHECK(seen == std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, 7}, {0, 8}, {1, 7}, {1, 8}});
    }
    SUBCASE("two gathers issued together: one after the other on a fifo stream, side by side on a concurrent one") {
        // Side by side, the two identical rings step in lockstep and share every link: n - 1 steps of 2L + 2 S/(nB),
        // where one after the other pays each step's latency twice: 2 (n - 1) (2L + S/(nB)).
        const std::uint32_t n = 4;
        const double S = 40e6;
        for (const auto stream :
             {models::program::ProgramSet::Stream::fifo, models::program::ProgramSet::Stream::concurrent}) {
            Bench b(n, 1);
            auto planner = b.planner();
            const auto all = planner.add_group("all", {{0, 1, 2, 3}});
            models::program::ProgramSet set;
            set.stream = stream;
            const auto g1 =
                set.add_call(models::program::Call::of({CommOp::of(CollectiveKind::all_gather, all, S)}, "a"));
            const auto g2 =
                set.add_call(models::program::Call::of({CommOp::of(CollectiveKind::all_gather, all, S)}, "b"));
            set.programs.emplace_back();
            set.programs[0].issue(g1);
            set.programs[0].issue(g2);
            const double expected = stream == models::program::ProgramSet::Stream::fifo
                                        ? 2 * (n - 1) * (2 * kL + S / n / kB)
                                        : (n - 1) * (2 * kL + 2 * S / n / kB);
            CAPTURE(static_cast<int>(stream));
            CHECK(b.run(set, planner) == testing::approx(expected).epsilon(1e-9));
        }
    }
    SUBCASE("two communicators: each has its own fifo stream, so their calls run side by side") {
        // The fifo case above with the second gather on a communicator of its own: the concurrent closed form,
        // (n - 1) (2L + 2 S/(nB)); a third call on the first communicator still waits for the first.
        const std::uint32_t n = 4;
        const double S = 40e6;
        Bench b(n, 1);
        auto planner = b.planner();
        const auto all = planner.add_group("all", {{0, 1, 2, 3}});
        models::program::ProgramSet set;
        auto gather = [&](const char* label, std::uint8_t stream) {
            auto c = models::program::Call::of({CommOp::of(CollectiveKind::all_gather, all, S)}, label);
            c.stream = stream;
            return set.add_call(std::move(c));
        };
        const auto g1 = gather("a", 0), g2 = gather("b", 1);
        set.programs.emplace_back();
        set.programs[0].issue(g1);
        set.programs[0].issue(g2);
        CHECK(b.run(set, planner) == testing::approx((n - 1) * (2 * kL + 2 * S / n / kB)).epsilon(1e-9));
        // And with a third, on the first communicator: it starts when the first ends, alone on the links after
        // both rings ended together: (n - 1) (2L + 2 S/(nB)) + (n - 1) (2L + S/(nB)).
        Bench b3(n, 1);
        auto planner3 = b3.planner();
        const auto all3 = planner3.add_group("all", {{0, 1, 2, 3}});
        models::program::ProgramSet set3;
        for (const std::uint8_t stream : {0, 1, 0}) {
            auto c = models::program::Call::of({CommOp::of(CollectiveKind::all_gather, all3, S)}, "g");
            c.stream = stream;
            set3.programs.resize(1);
            set3.programs[0].issue(set3.add_call(std::move(c)));
        }
        CHECK(b3.run(set3, planner3) ==
              testing::approx((n - 1) * (2 * kL + 2 * S / n / kB) + (n - 1) * (2 * kL + S / n / kB)).epsilon(1e-9));
    }
}
