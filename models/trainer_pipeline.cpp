// Model parallelism (tensor and pipeline) with data parallelism around it: the step compiled to a program per stage
// (models/program/pipeline.hpp), run by the program executor. This file only compiles, runs and reports.
#include <memory>

#include "models/memory.hpp"
#include "models/program/executor.hpp"
#include "models/program/pipeline.hpp"
#include "models/trainer_detail.hpp"

namespace ddlsim::models::detail {
namespace {

class PipelineTrainer final : public TrainerBase {
public:
    explicit PipelineTrainer(const TrainerEnv& env) : TrainerBase(env, false) {
        // Flow classes: the first replicas run for all (trainer.cpp class_periods).
        if (env.quotient != nullptr) comm_.representatives_only();
        program::Planner& planner = plan_.planner();
        const topo::Fabric& fabric = env.fabric;
        const auto same_machine = [&](std::uint32_t a, std::uint32_t b) {
            return fabric.node_of(job_.endpoint_hosts[a]) == fabric.node_of(job_.endpoint_hosts[b]);
        };
        programs_ =
            program::compile_pipeline(job_, planner, activation_bytes(job_.device.precision), same_machine, totals_);
        stages_ = program::pipeline_stages(job_.workload, job_.parallelism);
        if (schedule_) {  // the convergence replay: one averaged update per step, as BSP
            std::vector<std::uint32_t> everyone(job_.workers);
            for (std::uint32_t w = 0; w < job_.workers; ++w) everyone[w] = w;
            all_ = schedule_->add_set(std::move(everyone));
        }
        program::Executor::Hooks hooks;
        hooks.began = [this](std::uint32_t w, std::uint32_t i, sim::Time t) { record(OpKind::grad, w, i, t); };
        if (schedule_)
            hooks.computing = [this](std::uint32_t, std::uint32_t i, const program::Compute& c) {
                if (c.kind != program::ComputeKind::update || synced_ > i) return;
                schedule_->add(OpKind::sync, 0, all_, i, engine_.now().seconds());
                synced_ = i + 1;
            };
        executor_ = std::make_unique<program::Executor>(programs_, planner, comm_, clocks_, job_, env_.timeline,
                                                        std::move(hooks));
    }

    void start() override { executor_->start(); }

    [[nodiscard]] JobResult result() const override {
        JobResult r;
        const std::uint32_t d = job_.parallelism.data(job_.workers);
        // A step is gradient_accumulation micro-batches of batch_size samples on each of the d model replicas (a
        // replica's context ranks share its samples).
        fill_result(job_, clocks_, job_.iterations, static_cast<double>(d) * job_.batch_size, r);
        // The clocks are per rank; results list the workers, where the ranks sit (ParallelismSpec::placement).
        if (r.workers.size() == job_.workers) {
            const std::vector<std::uint32_t> at = job_.parallelism.placement(job_.workers);
            const auto by_rank = r.workers;
            for (std::uint32_t w = 0; w < job_.workers; ++w) r.workers[at[w]] = by_rank[w];
        }
        const program::PipelineTotals& t = totals_;
        r.bytes_on_wire_per_iteration = t.wire + t.p2p_bytes + t.tensor_wire + t.expert_wire + t.context_wire;
        r.machine_bytes_per_iteration =
            t.machine + t.p2p_machine_bytes + t.tensor_machine + t.expert_machine + t.context_machine;
        r.bytes_by_dimension =
            JobResult::ByDimension{t.tensor_wire, t.p2p_bytes, t.wire, t.expert_wire, t.context_wire};
        // Each rank joins its own stage's collectives: the mean over the stages.
        r.collectives_per_iteration =
            (t.collectives + t.tensor_collectives + t.expert_collectives + t.context_collectives) /
            job_.parallelism.pipeline;
        r.rounds = job_.iterations;
        r.model_versions = job_.iterations;
        r.schedule = schedule_;
        // The compute of the busiest stage: its micro-batches' forward and backward and its share of the update.
        const ComputeProfile& cp = job_.compute;
        const double total_params = static_cast<double>(job_.workload.params());
        double fwd = 0.0, bwd = 0.0, update = 0.0, busiest = 0.0;
        const std::uint32_t p = job_.parallelism.pipeline;
        for (std::uint32_t s = 0; s < p; ++s) {
            double f = 0.0, b = 0.0, params = 0.0;
            for (const program::StageLayers& st : program::stage_chunks(stages_, p, s))
                for (std::uint32_t l = st.first; l <= st.last; ++l) {
                    f += cp.layers[l].fwd.seconds();
                    b += cp.layers[l].bwd.seconds();
                    params += static_cast<double>(job_.workload.layers[l].params());
                }
            const double u = cp.update.seconds() * (total_params > 0.0 ? params / total_params : 0.0);
            const double step = job_.gradient_accumulation * (f + b) + u;
            if (step > busiest) {
                busiest = step;
                fwd = f;
                bwd = b;
                update = u;
            }
        }
        r.forward_time_s = fwd;
        r.backward_time_s = bwd;
        r.update_time_s = update;
        r.compute_time_s = busiest;
        // Against the whole model on one GPU, taken as t x c times one tensor and context rank's share of it (a perfect
        // split): p stages of d x c x t ranks at best run workers times its samples per second.
        const double whole = cp.iteration().seconds() * job_.parallelism.tensor * job_.parallelism.context;
        const double single =
            static_cast<double>(job_.batch_size) * job_.gradient_accumulation / (whole > 0.0 ? whole : 1.0);
        r.scaling_efficiency = std::min(
            1.0, single > 0.0 && r.iteration_time_s > 0.0 ? r.throughput_samples_per_s / (single * job_.workers) : 1.0);
        // The bubble (stages waiting for each other's micro-batches) counts with the exposed sends and all-reduces.
        r.breakdown = busy_breakdown(job_, clocks_, r.iteration_time_s);
        // What the compute streams waited for, per rank and iteration: the rest of the exposed time is the pipeline's.
        double tensor = 0.0, data = 0.0, expert = 0.0, context = 0.0;
        for (std::uint32_t w = 0; w < job_.workers; ++w) {
            tensor += executor_->waited(w, program::kTensorStream).seconds();
            expert += executor_->waited(w, program::kExpertStream).seconds();
            context += executor_->waited(w, program::kContextStream).seconds();
            data += executor_->waited(w, 0).seconds();
        }
        const double ranks_iterations = static_cast<double>(job_.workers) * std::max<std::uint32_t>(1, job_.iterations);
        // Each share at most what the others left of the exposed time, so the parts add up to it.
        double left = r.breakdown->exposed_communication;
        auto share = [&](double waited) {
            const double x = std::min(waited / ranks_iterations, left);
            left -= x;
            return x;
        };
        JobResult::ByDimension e;
        e.tensor = share(tensor);
        e.expert = share(expert);
        e.context = share(context);
        e.data = share(data);
        e.pipeline = left;
        r.exposed_by_dimension = e;
        return r;
    }

private:
    program::ProgramSet programs_;
    program::PipelineTotals totals_;
    std::vector<program::StageLayers> stages_;
    std::unique_ptr<program::Executor> executor_;
    std::uint32_t all_ = 0;
    std::uint32_t synced_ = 0;
};

}  // namespace

std::unique_ptr<JobTrainer> make_pipeline_trainer(const TrainerEnv& env) {
    return std::make_unique<PipelineTrainer>(env);
}

}  // namespace ddlsim::models::detail
