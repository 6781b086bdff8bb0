// The synchronisation schemes' properties (models/job.hpp, SyncSchemeInfo); their names and descriptions are
// k_sync_kinds beside the enum. The trainers: models/trainer_sync.cpp (BSP, Local SGD), trainer_sharded.cpp (ZeRO,
// FSDP), trainer_ssp.cpp (SSP, ASP), trainer_gossip.cpp (AD-PSGD) and trainer_fedavg.cpp (FedAvg).
#include <stdexcept>

#include "models/job.hpp"

namespace ddlsim::models {

const std::vector<SyncSchemeInfo>& sync_schemes() {
    using topo::ArchKind;
    static const std::vector<SyncSchemeInfo> schemes{
        {SyncKind::bsp, {ArchKind::allreduce, ArchKind::ps, ArchKind::gossip}, true, false, {}},
        // Bounded staleness needs a server that holds the global version (Ho et al., NeurIPS 2013).
        {SyncKind::ssp, {ArchKind::ps}, false, true, {"staleness*"}},
        // ASP on a PS (Dean et al., NeurIPS 2012, Downpour), with gossip: AD-PSGD (Lian et al., ICML 2018).
        {SyncKind::asp, {ArchKind::ps, ArchKind::gossip}, false, true, {}},
        {SyncKind::local_sgd, {ArchKind::allreduce, ArchKind::ps}, true, false, {"period*"}},
        // A server samples clients and averages their models (McMahan et al., AISTATS 2017).
        {SyncKind::fedavg, {ArchKind::ps}, false, true, {"clients_per_round", "local_steps", "availability"}},
        // Islands all-reduce inside themselves every step and across each other every `period` steps (Douillard et
        // al., arXiv 2311.08105, Algorithm 1; Streaming DiLoCo's fragments: Douillard et al., arXiv 2501.18512).
        {SyncKind::diloco,
         {ArchKind::allreduce},
         false,
         false,
         {"period*", "islands*", "fragments", "overlap_steps", "outer_bits"}},
    };
    return schemes;
}

const SyncSchemeInfo& sync_scheme(SyncKind kind) {
    for (const SyncSchemeInfo& s : sync_schemes())
        if (s.kind == kind) return s;
    throw std::logic_error("sync scheme without a descriptor");
}

}  // namespace ddlsim::models
