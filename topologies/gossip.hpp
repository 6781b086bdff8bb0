// Decentralised (gossip) architectures: D-PSGD (Lian et al., NeurIPS 2017): every worker
// sends its S-byte model to each of its out-neighbours at once every iteration and then
// averages what it received with its own model. Idle star, degree d: T = 2L + dS/B.
//
// Graphs (n workers 0..n-1):
//   ring             i±1 mod n, undirected (d = 2; d = 1 for n = 2).
//   torus            a 2D wrap-around X×Y grid, X the largest divisor of n not above √n,
//                    Y = n/X, worker w at row w/Y, column w%Y; neighbours ±1 in each
//                    dimension, deduplicated (a dimension of size 2 gives one neighbour,
//                    of size 1 none), undirected: d ≤ 4. A prime n gives X = 1: a ring.
//   exponential      directed (static exponential graph of SGP, Assran et al., ICML 2019,
//                    and Ying et al., NeurIPS 2021): i sends to i + 2^k mod n for
//                    k = 0..⌊log2(n-1)⌋ and receives from i - 2^k; out- and in-degree
//                    τ = ⌊log2(n-1)⌋ + 1 = ⌈log2 n⌉. A worker sends only to out-neighbours.
//   random_matching  a fresh seeded random perfect matching every round: the two workers
//                    of a pair exchange models (d = 1); with n odd one worker idles. The
//                    matching is a function of (seed, round) only (a Fisher–Yates shuffle
//                    from the "gossip matching" stream of sim/rng.hpp, the same on every
//                    platform).
//
// Mixing weights (for convergence models): row i lists the models worker i averages
// (itself and its in-neighbours) with weights summing to 1. Undirected graphs use
// Metropolis–Hastings weights w_ij = 1/(1 + max(d_i, d_j)), w_ii = 1 - Σ_j w_ij (Xiao &
// Boyd, Systems & Control Letters 2004), which is uniform 1/(d+1) on the regular ring and
// torus; the exponential graph uses 1/(τ+1) over itself and its τ in-neighbours (a
// circulant, hence doubly stochastic but not symmetric); a matched pair averages 1/2–1/2
// and an idle worker keeps its own model (weight 1).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "topologies/collectives.hpp"

namespace ddlsim::topo {

/// One entry of a row of a gossip mixing matrix.
struct MixingWeight {
    std::uint32_t peer = 0;
    double weight = 0.0;
};

/// X×Y shape of the torus gossip graph on n workers (X the largest divisor of n not above √n).
[[nodiscard]] std::pair<std::uint32_t, std::uint32_t> gossip_torus_shape(std::uint32_t n);
/// Partner of each worker in round `round`'s seeded random perfect matching (itself when idle, n odd).
[[nodiscard]] std::vector<std::uint32_t> gossip_matching(std::uint32_t n, std::uint64_t seed, std::uint32_t round);
/// Out-neighbours of each worker (whom it sends its model to) in round `round`; deduplicated, no self.
[[nodiscard]] std::vector<std::vector<std::uint32_t>> gossip_neighbours(GossipGraph graph, std::uint32_t n,
                                                                        std::uint64_t seed = 0,
                                                                        std::uint32_t round = 0);
/// Metropolis–Hastings weights of an undirected graph given as neighbour lists: row i sorted by peer, self included.
[[nodiscard]] std::vector<std::vector<MixingWeight>> metropolis_weights(
    const std::vector<std::vector<std::uint32_t>>& neighbours);
/// Row i: the models worker i averages (itself and its in-neighbours) with weights summing to 1, sorted by peer.
[[nodiscard]] std::vector<std::vector<MixingWeight>> gossip_mixing_weights(GossipGraph graph, std::uint32_t n,
                                                                           std::uint64_t seed = 0,
                                                                           std::uint32_t round = 0);
/// One D-PSGD exchange: every worker sends `bytes` to each of its out-neighbours, all at once.
[[nodiscard]] sim::Plan gossip_exchange(const std::vector<std::vector<std::uint32_t>>& neighbours, sim::Bytes bytes);

/// The gossip collective of an `architecture` block of kind "gossip" (random_matching: a new plan every round).
[[nodiscard]] std::unique_ptr<Collective> make_gossip(const ArchitectureSpec& spec, const CollectiveContext& ctx);

/// round_size for gossip (collectives.hpp): every worker sends to each of its neighbours, at most 2 log2 n of
/// them (the exponential graph's degree bounds the others').
[[nodiscard]] RoundSize gossip_round_size(const ArchitectureSpec& spec, const RoundShape& shape);

}  // namespace ddlsim::topo
