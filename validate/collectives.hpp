// The real synchronisation patterns over a Mesh, as the simulator models them (docs/CONTRACT.md §4):
//   ring all-reduce  reduce-scatter then all-gather, 2(n-1) steps; in each every worker sends one
//                    of n chunks to its successor while receiving one from its predecessor
//                    (Patarasuk & Yuan, JPDC 2009); optionally compressed (decode, add, re-encode)
//   ring all-gather  n-1 steps forwarding whole payloads (compressors whose payloads cannot be added)
//   parameter server every worker pushes its payload to one server, which sums and sends the sum back
//                    (Li et al., OSDI 2014)
//   gossip           every worker sends its model to both ring neighbours at once and averages
//                    the three models with weight 1/3 each (D-PSGD, Lian et al., NeurIPS 2017)
// Workers are endpoints 0..n-1; the parameter server is endpoint n.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "validate/codec.hpp"
#include "validate/transport.hpp"

namespace ddlsim::validate {

/// Chunk c of n over `size` elements: [c * size / n, (c + 1) * size / n).
[[nodiscard]] std::pair<std::size_t, std::size_t> ring_chunk(std::size_t size, std::uint32_t n, std::uint32_t c);

/// Sums `v` over the n workers in place; every worker ends with the same values. With `spec` a
/// summable compressor (fp16, qsgd, signsgd; see codec.hpp) the chunks travel compressed: in the
/// reduce-scatter every hop decodes, adds its own values and re-encodes (re-quantising, as
/// compressed all-reduces do); the owner of each reduced chunk encodes it once, keeps the decoded
/// values, and the all-gather forwards those bytes unchanged.
void ring_allreduce(Mesh& mesh, std::uint32_t rank, std::uint32_t n, std::span<float> v,
                    const CodecSpec* spec = nullptr, std::uint64_t seed = 0);

/// Every worker's payload, in rank order (own included), by forwarding around the ring.
[[nodiscard]] std::vector<std::vector<std::uint8_t>> ring_allgather(Mesh& mesh, std::uint32_t rank, std::uint32_t n,
                                                                    std::vector<std::uint8_t> own);

/// Worker side of the parameter server: pushes `payload` to endpoint n and returns the reply.
[[nodiscard]] std::vector<std::uint8_t> ps_push_pull(Mesh& mesh, std::uint32_t n,
                                                     std::span<const std::uint8_t> payload);

/// Server side: receives the n workers' payloads (all at once), and sends every worker `reply(payloads)`.
template <typename Reply>
void ps_serve(Mesh& mesh, std::uint32_t n, Reply&& reply) {
    std::vector<std::vector<std::uint8_t>> in(n);
    std::vector<Recv> recvs;
    for (std::uint32_t w = 0; w < n; ++w) recvs.push_back({w, &in[w]});
    mesh.exchange({}, recvs);
    const std::vector<std::uint8_t> out = reply(in);
    std::vector<Send> sends;
    for (std::uint32_t w = 0; w < n; ++w) sends.push_back({w, out});
    mesh.exchange(sends, {});
}

/// Gossip on the ring graph (n >= 3): sends `params` to both neighbours, receives theirs and
/// replaces `params` by the average of the three.
void gossip_average(Mesh& mesh, std::uint32_t rank, std::uint32_t n, std::span<float> params);

/// The peers a worker talks to for each pattern.
[[nodiscard]] std::vector<std::uint32_t> ring_peers(std::uint32_t rank, std::uint32_t n);

}  // namespace ddlsim::validate
