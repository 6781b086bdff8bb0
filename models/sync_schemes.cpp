// The synchronisation schemes' descriptors (models/job.hpp, SyncSchemeInfo), each with the trainer that runs it; their
// names and descriptions are k_sync_kinds beside the enum. The trainers: models/trainer_sync.cpp (BSP, Local SGD,
// DiLoCo's inner steps), trainer_sharded.cpp (ZeRO, FSDP), trainer_ssp.cpp (SSP, ASP), trainer_gossip.cpp (AD-PSGD)
// and trainer_fedavg.cpp (FedAvg).
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/job.hpp"
#include "models/trainer_detail.hpp"

namespace ddlsim::models {

namespace {

using topo::ArchKind;

// The synchronous schemes: the sharded trainer with a sharding block, else the replicated one.
std::unique_ptr<detail::JobTrainer> data_parallel(const detail::TrainerEnv& env) {
    if (env.job.parallelism.any()) return detail::make_pipeline_trainer(env);
    return env.job.sharding.any() ? detail::make_sharded_trainer(env) : detail::make_sync_trainer(env);
}

// SSP and ASP: on parameter servers, or AD-PSGD with gossip.
std::unique_ptr<detail::JobTrainer> asynchronous(const detail::TrainerEnv& env) {
    return env.job.architecture.kind == ArchKind::gossip ? detail::make_async_gossip_trainer(env)
                                                         : detail::make_async_ps_trainer(env);
}

std::string bsp(const SyncSpec&, ArchKind) {
    return "bsp";
}
std::string ssp(const SyncSpec& s, ArchKind) {
    return fmt::format("ssp (staleness {})", s.staleness);
}
std::string asp(const SyncSpec&, ArchKind arch) {
    return arch == ArchKind::gossip ? "asp (AD-PSGD gossip)" : "asp";
}
std::string local_sgd(const SyncSpec& s, ArchKind) {
    return fmt::format("local_sgd (period {})", s.period);
}
std::string fedavg(const SyncSpec& s, ArchKind) {
    return fmt::format("fedavg ({} clients/round, {} local steps{})", s.clients_per_round, s.local_steps,
                       s.availability < 1.0 ? fmt::format(", availability {:.3g}", s.availability) : "");
}
std::string diloco(const SyncSpec& s, ArchKind) {
    return fmt::format("diloco ({} islands, period {}{}{}{})", s.islands, s.period,
                       s.fragments > 1 ? fmt::format(", {} fragments", s.fragments) : "",
                       s.overlap_steps > 0 ? fmt::format(", overlap {} steps", s.overlap_steps) : "",
                       s.outer_bits > 0.0 ? fmt::format(", outer gradients at {:g} bits", s.outer_bits) : "");
}

}  // namespace

bool SyncSchemeInfo::takes(std::string_view key) const {
    return std::any_of(keys.begin(), keys.end(),
                       [&](std::string_view k) { return (k.ends_with('*') ? k.substr(0, k.size() - 1) : k) == key; });
}

bool SyncSchemeInfo::requires_key(std::string_view key) const {
    return std::any_of(keys.begin(), keys.end(),
                       [&](std::string_view k) { return k.ends_with('*') && k.substr(0, k.size() - 1) == key; });
}

std::string sync_kinds_where(const std::function<bool(const SyncSchemeInfo&)>& pred) {
    std::string out;
    for (const SyncSchemeInfo& s : sync_schemes())
        if (pred(s)) out += fmt::format("{}\"{}\"", out.empty() ? "" : ", ", sim::enum_name(s.kind));
    return out;
}

const std::vector<SyncSchemeInfo>& sync_schemes() {
    static const std::vector<SyncSchemeInfo> schemes{
        {.kind = SyncKind::bsp,
         .architectures = {ArchKind::allreduce, ArchKind::ps, ArchKind::gossip},
         .summed_rounds = true,
         .whole_payload = false,
         .lockstep = true,
         .step_gradients = true,
         .periodic = false,
         .symmetric = true,
         .keys = {},
         .describe = bsp,
         .make_trainer = data_parallel},
        // Bounded staleness needs a server that holds the global version (Ho et al., NeurIPS 2013).
        {.kind = SyncKind::ssp,
         .architectures = {ArchKind::ps},
         .summed_rounds = false,
         .whole_payload = true,
         .lockstep = false,
         .step_gradients = false,
         .periodic = false,
         .symmetric = false,
         .keys = {"staleness*"},
         .describe = ssp,
         .make_trainer = asynchronous},
        // ASP on a PS (Dean et al., NeurIPS 2012, Downpour), with gossip: AD-PSGD (Lian et al., ICML 2018).
        {.kind = SyncKind::asp,
         .architectures = {ArchKind::ps, ArchKind::gossip},
         .summed_rounds = false,
         .whole_payload = true,
         .lockstep = false,
         .step_gradients = false,
         .periodic = false,
         .symmetric = false,
         .keys = {},
         .describe = asp,
         .make_trainer = asynchronous},
        {.kind = SyncKind::local_sgd,
         .architectures = {ArchKind::allreduce, ArchKind::ps},
         .summed_rounds = true,
         .whole_payload = false,
         .lockstep = true,
         .step_gradients = false,
         .periodic = true,
         .symmetric = true,
         .keys = {"period*"},
         .describe = local_sgd,
         .make_trainer = data_parallel},
        // A server samples clients and averages their models (McMahan et al., AISTATS 2017).
        {.kind = SyncKind::fedavg,
         .architectures = {ArchKind::ps},
         .summed_rounds = false,
         .whole_payload = true,
         .lockstep = false,
         .step_gradients = false,
         .periodic = false,
         .symmetric = false,
         .keys = {"clients_per_round", "local_steps", "availability"},
         .describe = fedavg,
         .make_trainer = detail::make_fedavg_trainer},
        // Islands all-reduce inside themselves every step and across each other every `period` steps (Douillard et
        // al., arXiv 2311.08105, Algorithm 1; Streaming DiLoCo's fragments: Douillard et al., arXiv 2501.18512).
        {.kind = SyncKind::diloco,
         .architectures = {ArchKind::allreduce},
         .summed_rounds = false,
         .whole_payload = false,
         .lockstep = true,
         .step_gradients = true,
         .periodic = false,
         .symmetric = false,
         .keys = {"period*", "islands*", "fragments", "overlap_steps", "outer_bits"},
         .describe = diloco,
         .make_trainer = data_parallel},
    };
    return schemes;
}

const SyncSchemeInfo& sync_scheme(SyncKind kind) {
    for (const SyncSchemeInfo& s : sync_schemes())
        if (s.kind == kind) return s;
    throw std::logic_error("sync scheme without a descriptor");
}

}  // namespace ddlsim::models
