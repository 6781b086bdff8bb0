// The up-front limits ask each architecture how large one round is (topo::round_size) instead of mirroring the
// collectives in the loader. Held against the rounds the collectives really build: the estimate never
// undercounts (it is a limit) and overcounts by a bounded factor.
#include <doctest/doctest.h>

#include <cmath>

#include "topologies/allreduce_algorithms.hpp"
#include "topologies/collectives.hpp"
#include "topologies/parameter_server.hpp"

using namespace ddlsim;

namespace {

// Transfers (steps between two different endpoints) of a built collective's round.
double built_transfers(const topo::Collective& c, std::uint32_t n) {
    if (const auto* p = dynamic_cast<const topo::PlanCollective*>(&c)) {
        double count = 0.0;
        for (std::size_t s = 0; s < p->plan().size(); ++s)
            if (p->plan().step(s).src != p->plan().step(s).dst) ++count;
        return count;
    }
    return 2.0 * n * (n - 1.0);  // the ring state machine: 2(n-1) steps of n sends
}

}  // namespace

TEST_CASE("round size: every all-reduce algorithm's estimate bounds its real round") {
    for (const auto& info : topo::allreduce_algorithms())
        for (std::uint32_t n : {2U, 3U, 4U, 6U, 8U, 16U})
            for (double segment : {0.0, 2.5e5}) {
                topo::ArchitectureSpec spec;
                spec.algorithm = info.algorithm;
                spec.segment_size = sim::Bytes{segment};
                topo::CollectiveContext ctx;
                ctx.workers = n;
                ctx.bytes = sim::Bytes{4e6};
                ctx.tensor_bytes = {4e6};
                for (std::uint32_t w = 0; w < n; ++w) ctx.node_of.push_back(w / 2);
                ctx.switch_reduction = 0.85;   // every node's switch reduces (only nvls reads it)
                ctx.network_reduction = 0.85;  // and the switches between them (only collnet reads it)
                ctx.network_switches = n;
                if (info.algorithm == topo::AllreduceAlgorithm::nvls && n % 2 != 0) continue;  // nodes of two
                if (info.algorithm == topo::AllreduceAlgorithm::collnet && (n % 2 != 0 || n < 4)) continue;  // nodes
                const auto c = topo::make_collective(spec, ctx);
                topo::RoundShape shape;
                shape.workers = n;
                shape.bytes = sim::Bytes{4e6};
                const auto size = topo::round_size(spec, shape);
                const double real = built_transfers(*c, n);
                CAPTURE(sim::enum_name(info.algorithm));
                CAPTURE(n);
                CAPTURE(segment);
                CAPTURE(real);
                CAPTURE(size.transfers);
                CHECK(size.transfers >= real);
                CHECK(size.transfers <= 8.0 * real);
                CHECK(size.explicit_dag == (dynamic_cast<const topo::PlanCollective*>(c.get()) != nullptr));
            }
}

TEST_CASE("round size: a parameter server's estimate bounds its real round") {
    for (std::uint32_t n : {1U, 2U, 4U, 8U})
        for (std::size_t k : {1U, 2U, 4U})
            for (bool per_tensor : {false, true}) {
                topo::ArchitectureSpec spec;
                spec.kind = topo::ArchKind::ps;
                spec.servers = k;
                spec.per_tensor = per_tensor;
                topo::CollectiveContext ctx;
                ctx.workers = n;
                ctx.bytes = sim::Bytes{4e6};
                ctx.tensor_bytes = {1e6, 1e6, 2e6};
                for (std::uint32_t w = 0; w < n; ++w) ctx.node_of.push_back(w);
                const auto c = topo::make_collective(spec, ctx);
                topo::RoundShape shape;
                shape.workers = n;
                shape.bytes = sim::Bytes{4e6};
                shape.tensors = 3;
                const auto size = topo::round_size(spec, shape);
                const double real = built_transfers(*c, n);
                CAPTURE(n);
                CAPTURE(k);
                CAPTURE(per_tensor);
                CAPTURE(real);
                CAPTURE(size.transfers);
                CHECK(size.transfers >= real);
                CHECK(size.transfers <= 8.0 * std::max(real, 1.0));
            }
}
