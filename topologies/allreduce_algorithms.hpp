// All-reduce algorithms other than the plain ring (which lives in ring_allreduce.*), and the
// collective primitives they are built from, as transfer DAGs.
#pragma once

#include <memory>

#include "topologies/collectives.hpp"

namespace ddlsim::topo {

/// The all-reduce collective for `spec.algorithm` (any algorithm; ring with segments too).
[[nodiscard]] std::unique_ptr<Collective> make_allreduce(const ArchitectureSpec& spec, const CollectiveContext& ctx);

}  // namespace ddlsim::topo
