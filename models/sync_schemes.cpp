// The synchronisation schemes' descriptors (models/job.hpp, SyncSchemeInfo), each with the trainer that runs it; their
// names and descriptions are k_sync_kinds beside the enum. The trainers: models/trainer_sync.cpp (BSP, Local SGD,
// DiLoCo's inner steps), trainer_sharded.cpp (ZeRO, FSDP), trainer_ssp.cpp (SSP, ASP), trainer_gossip.cpp (AD-PSGD)
// and trainer_fedavg.cpp (FedAvg).
#include <stdexcept>

#include "models/job.hpp"
#include "models/trainer_detail.hpp"

namespace ddlsim::models {

namespace {

using topo::ArchKind;

// The synchronous schemes: the sharded trainer with a sharding block, else the replicated one.
std::unique_ptr<detail::JobTrainer> data_parallel(const detail::TrainerEnv& env) {
    return env.job.sharding.any() ? detail::make_sharded_trainer(env) : detail::make_sync_trainer(env);
}

// SSP and ASP: on parameter servers, or AD-PSGD with gossip.
std::unique_ptr<detail::JobTrainer> asynchronous(const detail::TrainerEnv& env) {
    return env.job.architecture.kind == ArchKind::gossip ? detail::make_async_gossip_trainer(env)
                                                         : detail::make_async_ps_trainer(env);
}

}  // namespace

const std::vector<SyncSchemeInfo>& sync_schemes() {
    static const std::vector<SyncSchemeInfo> schemes{
        {.kind = SyncKind::bsp,
         .architectures = {ArchKind::allreduce, ArchKind::ps, ArchKind::gossip},
         .byteps = true,
         .whole_payload = false,
         .keys = {},
         .make_trainer = data_parallel},
        // Bounded staleness needs a server that holds the global version (Ho et al., NeurIPS 2013).
        {.kind = SyncKind::ssp,
         .architectures = {ArchKind::ps},
         .byteps = false,
         .whole_payload = true,
         .keys = {"staleness*"},
         .make_trainer = asynchronous},
        // ASP on a PS (Dean et al., NeurIPS 2012, Downpour), with gossip: AD-PSGD (Lian et al., ICML 2018).
        {.kind = SyncKind::asp,
         .architectures = {ArchKind::ps, ArchKind::gossip},
         .byteps = false,
         .whole_payload = true,
         .keys = {},
         .make_trainer = asynchronous},
        {.kind = SyncKind::local_sgd,
         .architectures = {ArchKind::allreduce, ArchKind::ps},
         .byteps = true,
         .whole_payload = false,
         .keys = {"period*"},
         .make_trainer = data_parallel},
        // A server samples clients and averages their models (McMahan et al., AISTATS 2017).
        {.kind = SyncKind::fedavg,
         .architectures = {ArchKind::ps},
         .byteps = false,
         .whole_payload = true,
         .keys = {"clients_per_round", "local_steps", "availability"},
         .make_trainer = detail::make_fedavg_trainer},
        // Islands all-reduce inside themselves every step and across each other every `period` steps (Douillard et
        // al., arXiv 2311.08105, Algorithm 1; Streaming DiLoCo's fragments: Douillard et al., arXiv 2501.18512).
        {.kind = SyncKind::diloco,
         .architectures = {ArchKind::allreduce},
         .byteps = false,
         .whole_payload = false,
         .keys = {"period*", "islands*", "fragments", "overlap_steps", "outer_bits"},
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
