#include "validate/collectives.hpp"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <stdexcept>

#include "sim/rng.hpp"

namespace ddlsim::validate {
namespace {

std::uint32_t mod(std::int64_t a, std::uint32_t n) {
    const auto m = static_cast<std::int64_t>(n);
    return static_cast<std::uint32_t>(((a % m) + m) % m);
}

}  // namespace

std::pair<std::size_t, std::size_t> ring_chunk(std::size_t size, std::uint32_t n, std::uint32_t c) {
    return {c * size / n, (c + 1) * size / n};
}

std::vector<std::uint32_t> ring_peers(std::uint32_t rank, std::uint32_t n) {
    if (n < 2) return {};
    const std::uint32_t succ = (rank + 1) % n, pred = (rank + n - 1) % n;
    if (succ == pred) return {succ};
    return {succ, pred};
}

void ring_allreduce(Mesh& mesh, std::uint32_t rank, std::uint32_t n, std::span<float> v, const CodecSpec* spec,
                    std::uint64_t seed) {
    if (n < 2) return;
    const std::uint32_t succ = (rank + 1) % n, pred = (rank + n - 1) % n;
    auto chunk = [&](std::uint32_t c) {
        const auto [a, b] = ring_chunk(v.size(), n, c);
        return v.subspan(a, b - a);
    };
    // One codec per chunk (chunks differ in size by one element at most); none: raw fp32.
    std::vector<std::unique_ptr<Codec>> codecs(n);
    CodecSpec plain = spec != nullptr ? *spec : CodecSpec{};
    plain.error_feedback = false;
    for (std::uint32_t c = 0; c < n; ++c)
        if (!chunk(c).empty())
            codecs[c] = make_codec(plain, chunk(c).size(), Backend::cpu, sim::rng::substream(seed, c));
    auto encode = [&](std::uint32_t c, std::vector<std::uint8_t>& out) {
        if (codecs[c])
            out = codecs[c]->encode(chunk(c));
        else
            out.clear();
    };
    auto decode = [&](std::uint32_t c, std::span<const std::uint8_t> in, bool add) {
        auto dst = chunk(c);
        if (!add) std::fill(dst.begin(), dst.end(), 0.0F);
        if (codecs[c])
            codecs[c]->decode_add(in, dst, 1.0F);
        else if (!in.empty())
            throw std::runtime_error("ring all-reduce: data for an empty chunk");
    };
    std::vector<std::uint8_t> out, in;
    for (std::uint32_t s = 0; s + 1 < n; ++s) {  // reduce-scatter
        encode(mod(std::int64_t{rank} - s, n), out);
        const Send send{succ, out};
        const Recv recv{pred, &in};
        mesh.exchange({&send, 1}, {&recv, 1});
        decode(mod(std::int64_t{rank} - s - 1, n), in, true);
    }
    // All-gather: the owner's encoding of each reduced chunk travels unchanged; everyone decodes it.
    std::vector<std::vector<std::uint8_t>> bytes(n);
    const std::uint32_t own = (rank + 1) % n;
    encode(own, bytes[own]);
    decode(own, bytes[own], false);
    for (std::uint32_t s = 0; s + 1 < n; ++s) {
        const std::uint32_t c_send = mod(std::int64_t{rank} + 1 - s, n), c_recv = mod(std::int64_t{rank} - s, n);
        const Send send{succ, bytes[c_send]};
        const Recv recv{pred, &bytes[c_recv]};
        mesh.exchange({&send, 1}, {&recv, 1});
        decode(c_recv, bytes[c_recv], false);
    }
}

std::vector<std::vector<std::uint8_t>> ring_allgather(Mesh& mesh, std::uint32_t rank, std::uint32_t n,
                                                      std::vector<std::uint8_t> own) {
    std::vector<std::vector<std::uint8_t>> all(n);
    all[rank] = std::move(own);
    if (n < 2) return all;
    const std::uint32_t succ = (rank + 1) % n, pred = (rank + n - 1) % n;
    for (std::uint32_t s = 0; s + 1 < n; ++s) {
        const Send send{succ, all[mod(std::int64_t{rank} - s, n)]};
        const Recv recv{pred, &all[mod(std::int64_t{rank} - s - 1, n)]};
        mesh.exchange({&send, 1}, {&recv, 1});
    }
    return all;
}

std::vector<std::uint8_t> ps_push_pull(Mesh& mesh, std::uint32_t n, std::span<const std::uint8_t> payload) {
    std::vector<std::uint8_t> reply;
    const Send send{n, payload};
    const Recv recv{n, &reply};
    mesh.exchange({&send, 1}, {&recv, 1});
    return reply;
}

void gossip_average(Mesh& mesh, std::uint32_t rank, std::uint32_t n, std::span<float> params) {
    if (n < 3) throw std::invalid_argument(fmt::format("gossip on a ring needs at least 3 workers, got {}", n));
    const std::uint32_t succ = (rank + 1) % n, pred = (rank + n - 1) % n;
    std::vector<std::uint8_t> a, b;
    const auto mine = float_bytes(params);
    const Send sends[2] = {{succ, mine}, {pred, mine}};
    const Recv recvs[2] = {{succ, &a}, {pred, &b}};
    mesh.exchange(sends, recvs);
    if (a.size() != mine.size() || b.size() != mine.size())
        throw std::runtime_error("gossip: a neighbour's model has the wrong size");
    for (std::size_t i = 0; i < params.size(); ++i) {
        float x, y;
        std::memcpy(&x, a.data() + 4 * i, 4);
        std::memcpy(&y, b.data() + 4 * i, 4);
        params[i] = (params[i] + x + y) / 3.0F;
    }
}

}  // namespace ddlsim::validate
