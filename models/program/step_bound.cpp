#include "models/program/step_bound.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/comm_plan.hpp"
#include "models/device.hpp"
#include "models/program/executor.hpp"
#include "models/program/pipeline.hpp"

namespace ddlsim::models::program {
namespace {

// With p stages: before stage s, the first micro-batch's forwards through virtual stages 0 .. s - 1; after it, the
// last micro-batch's input gradients back through them (compute alone).
struct FillDrain {
    std::vector<double> before, after;
};

FillDrain fill_and_drain(const TrainingJob& job) {
    const ParallelismSpec& par = job.parallelism;
    const auto stages = pipeline_stages(job.workload, par);
    FillDrain fd{std::vector<double>(par.pipeline, 0.0), std::vector<double>(par.pipeline, 0.0)};
    for (std::uint32_t s = 1; s < par.pipeline; ++s) {
        fd.before[s] = fd.before[s - 1];
        fd.after[s] = fd.after[s - 1];
        for (std::uint32_t l = stages[s - 1].first; l <= stages[s - 1].last; ++l) {
            fd.before[s] += job.compute.layers[l].fwd.seconds();
            fd.after[s] += (job.compute.layers[l].bwd - job.compute.layers[l].wgrad).seconds();
        }
    }
    return fd;
}

}  // namespace

double compute_lower_bound_s(const TrainingJob& job) {
    if (!job.worker_compute.empty() || job.stragglers.any()) return 0.0;
    const ComputeProfile& cp = job.compute;
    const ParallelismSpec& par = job.parallelism;
    if (par.pipeline <= 1) return (cp.accumulation + cp.fwd + cp.bwd).seconds();
    const auto stages = pipeline_stages(job.workload, par);
    const FillDrain fd = fill_and_drain(job);
    // Stage s runs its passes over the m micro-batches after the fill, and the last one's input gradients go back
    // through the stages before it after its last backward; under zero bubble that backward's weight gradients (and
    // any deferred before them) may run meanwhile, so the drain follows the forwards and input gradients only.
    const bool deferred = par.schedule == PipelineSchedule::zero_bubble;
    const double m = job.gradient_accumulation;
    double busiest = 0.0;
    for (std::uint32_t s = 0; s < par.pipeline; ++s) {
        double both = 0.0, weights = 0.0;
        for (const auto& chunk : stage_chunks(stages, par.pipeline, s))
            for (std::uint32_t l = chunk.first; l <= chunk.last; ++l) {
                both += (cp.layers[l].fwd + cp.layers[l].bwd).seconds();
                weights += cp.layers[l].wgrad.seconds();
            }
        const double passes = fd.before[s] + both * m;
        busiest = std::max({busiest, passes, passes - (deferred ? weights * m : 0.0) + fd.after[s]});
    }
    return busiest;
}

double step_lower_bound_s(const TrainingJob& job, const topo::Fabric& fabric) {
    if (!job.worker_compute.empty() || job.stragglers.any()) return 0.0;
    const ParallelismSpec& par = job.parallelism;
    if (!par.any()) return compute_lower_bound_s(job);

    CommPlan plan(job, fabric, false);
    Planner& planner = plan.planner();
    PipelineTotals totals;
    const ProgramSet set = compile_pipeline(
        job, planner, activation_bytes(job.device.precision),
        [&](std::uint32_t a, std::uint32_t b) {
            return fabric.node_of(job.endpoint_hosts[a]) == fabric.node_of(job.endpoint_hosts[b]);
        },
        totals);

    // The ranks that run each program on each stage (every rank of one walks it alike but for its calls' times).
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::uint32_t>> walkers;  // (program, stage)
    for (std::uint32_t r = 0; r < job.workers; ++r) walkers[{set.program_index(r, 0), par.stage_of(r)}].push_back(r);

    // A call's least time on those ranks: its launch, then each phase's least time (topo::Collective::least_time: a
    // ring's steps one after another, each at least its hop's latency and bytes at its bottleneck), the least over
    // the ranks (so the walk bounds each of them), per collective and walkers.
    const auto cost = [&](std::uint32_t a, std::uint32_t b) { return endpoint_path_cost(job, fabric, a, b); };
    std::map<std::pair<const topo::Collective*, const std::vector<std::uint32_t>*>, double> least;
    const auto call_time = [&](std::uint32_t call, const std::vector<std::uint32_t>& ranks) {
        const Call& c = set.calls[call];
        double s = c.launch.value_or(job.collective_overhead).seconds();
        for (const CommOp& op : c.phases) {
            const topo::Collective& coll = planner.collective(op);
            auto [it, fresh] = least.try_emplace({&coll, &ranks}, 0.0);
            if (fresh) {
                sim::Time t = sim::Time::max();
                for (const std::uint32_t r : ranks) t = std::min(t, coll.least_time(cost, r));
                it->second = t.seconds();
            }
            s += it->second;
        }
        return s;
    };

    const FillDrain fd = fill_and_drain(job);
    const std::vector<double>&before = fd.before, &after = fd.after;

    // A point-to-point transfer's least time from `ranks` (offset `in`): its latency and bytes at its bottleneck, the
    // least over the ranks.
    std::map<std::tuple<const std::vector<std::uint32_t>*, std::int64_t, double>, double> least_send;
    const auto send_time = [&](const Instr& in, const std::vector<std::uint32_t>& ranks) {
        const std::int64_t to = in.relative ? in.offset : -1 - static_cast<std::int64_t>(in.peer);
        auto [it, fresh] = least_send.try_emplace({&ranks, to, in.bytes}, 0.0);
        if (fresh) {
            double t = std::numeric_limits<double>::infinity();
            for (const std::uint32_t r : ranks) {
                const sim::PathCost c = cost(r, in.peer_of(r));
                t = std::min(t, c.local ? 0.0 : c.latency.seconds() + in.bytes / c.bandwidth.bytes_per_s());
            }
            it->second = t;
        }
        return it->second;
    };

    // The walks, together: a receive waits for its send's arrival (the sender's walk at the send, plus the transfer's
    // least time) where every stage runs one program, so that the pipeline's bubble and its sends count; else (the
    // ranks of a stage run different programs: an expert-parallel hot rank) at least for the pipeline's fill.
    struct Walk {
        const Program* prog = nullptr;
        const std::vector<std::uint32_t>* ranks = nullptr;
        std::uint32_t stage = 0;
        std::size_t pc = 0;
        double t = 0.0, last_send = 0.0;
        std::array<double, 256> stream_free{};
        std::unordered_map<std::uint32_t, double> done;  // per call issued and not yet waited for
    };
    std::vector<Walk> walks;
    std::vector<std::uint32_t> per_stage(par.pipeline, 0);
    for (const auto& [key, ranks] : walkers) {
        Walk w;
        w.prog = &set.programs[key.first];
        w.ranks = &ranks;
        w.stage = key.second;
        walks.push_back(std::move(w));
        ++per_stage[key.second];
    }
    const bool joint = std::all_of(per_stage.begin(), per_stage.end(), [](std::uint32_t n) { return n == 1; });
    std::unordered_map<std::uint32_t, double> arrival;  // per send's tag: when it arrives at the earliest
    // Advances walk w until it ends, or (`force` false) until a receive whose send no walk has reached; `force`: one
    // such receive counts the fill alone.
    const auto advance = [&](Walk& w, bool force) {
        const Program& prog = *w.prog;
        while (w.pc < prog.instrs.size()) {
            const Instr& in = prog.instrs[w.pc];
            switch (in.kind) {
                case Instr::Kind::compute:
                    w.t += Executor::compute_time(job, w.ranks->front(), prog.computes[in.index]).seconds();
                    break;
                case Instr::Kind::issue: {
                    double& free = w.stream_free[set.calls[in.index].stream];
                    const double start = set.stream == ProgramSet::Stream::fifo ? std::max(w.t, free) : w.t;
                    const double end = start + call_time(in.index, *w.ranks);
                    w.done[in.index] = end;
                    free = std::max(free, end);
                    break;
                }
                case Instr::Kind::wait: {
                    const auto it = w.done.find(in.index);
                    if (it != w.done.end()) {
                        w.t = std::max(w.t, it->second);
                        w.done.erase(it);
                    }
                    break;
                }
                case Instr::Kind::recv: {
                    w.t = std::max(w.t, before[w.stage]);
                    if (!joint) break;
                    const auto it = arrival.find(in.tag);
                    if (it != arrival.end()) {
                        w.t = std::max(w.t, it->second);
                    } else if (!force) {
                        return;
                    }
                    force = false;
                    break;
                }
                case Instr::Kind::send:
                    w.last_send = w.t;
                    if (joint) arrival.emplace(in.tag, w.t + send_time(in, *w.ranks));
                    break;
                case Instr::Kind::mark: break;
            }
            ++w.pc;
        }
    };
    const auto finished = [](const Walk& w) { return w.pc == w.prog->instrs.size(); };
    for (bool any = true; any;) {
        any = false;
        bool moved = false;
        for (Walk& w : walks) {
            const std::size_t pc = w.pc;
            advance(w, false);
            moved = moved || w.pc != pc;
            any = any || !finished(w);
        }
        if (any && !moved)  // every walk waits for a send none reaches (no schedule does that): move one on
            for (Walk& w : walks)
                if (!finished(w)) {
                    advance(w, true);
                    break;
                }
    }

    double bound = compute_lower_bound_s(job);
    for (const Walk& w : walks) {
        const double end = std::max(w.t, *std::max_element(w.stream_free.begin(), w.stream_free.end()));
        bound = std::max({bound, end, w.last_send + after[w.stage]});
    }
    // The engine keeps whole picoseconds, rounding each transfer's end (a ring's level can end a picosecond before its
    // α-β): a millionth less keeps the bound below the step those roundings shorten.
    return bound * (1.0 - 1e-6);
}

}  // namespace ddlsim::models::program
