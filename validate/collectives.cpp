#include "validate/collectives.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "validate/codec.hpp"

namespace ddlsim::validate {
namespace {

std::uint32_t mod(std::int64_t a, std::uint32_t n) {
    const auto m = static_cast<std::int64_t>(n);
    return static_cast<std::uint32_t>(((a % m) + m) % m);
}

void encode_chunk(std::span<const float> v, bool fp16, std::vector<std::uint8_t>& out) {
    out.clear();
    if (fp16) {
        encode_fp16(v, out);
    } else {
        const auto b = float_bytes(v);
        out.assign(b.begin(), b.end());
    }
}

void add_chunk(std::span<const std::uint8_t> in, bool fp16, std::span<float> v) {
    if (fp16) {
        decode_add_fp16(in, v, 1.0F);
        return;
    }
    if (in.size() != v.size() * sizeof(float)) throw std::runtime_error("ring all-reduce: chunk of the wrong size");
    for (std::size_t i = 0; i < v.size(); ++i) {
        float x;
        std::memcpy(&x, in.data() + 4 * i, 4);
        v[i] += x;
    }
}

void set_chunk(std::span<const std::uint8_t> in, bool fp16, std::span<float> v) {
    std::fill(v.begin(), v.end(), 0.0F);
    add_chunk(in, fp16, v);
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

void ring_allreduce(Mesh& mesh, std::uint32_t rank, std::uint32_t n, std::span<float> v, bool fp16) {
    if (n < 2) return;
    const std::uint32_t succ = (rank + 1) % n, pred = (rank + n - 1) % n;
    auto chunk = [&](std::uint32_t c) {
        const auto [a, b] = ring_chunk(v.size(), n, c);
        return v.subspan(a, b - a);
    };
    std::vector<std::uint8_t> out, in;
    for (std::uint32_t s = 0; s + 1 < n; ++s) {  // reduce-scatter
        encode_chunk(chunk(mod(std::int64_t{rank} - s, n)), fp16, out);
        const Send send{succ, out};
        const Recv recv{pred, &in};
        mesh.exchange({&send, 1}, {&recv, 1});
        add_chunk(in, fp16, chunk(mod(std::int64_t{rank} - s - 1, n)));
    }
    if (fp16) {  // the owner keeps what everyone else will receive
        auto own = chunk((rank + 1) % n);
        for (float& x : own) x = half_to_float(float_to_half(x));
    }
    for (std::uint32_t s = 0; s + 1 < n; ++s) {  // all-gather
        encode_chunk(chunk(mod(std::int64_t{rank} + 1 - s, n)), fp16, out);
        const Send send{succ, out};
        const Recv recv{pred, &in};
        mesh.exchange({&send, 1}, {&recv, 1});
        set_chunk(in, fp16, chunk(mod(std::int64_t{rank} - s, n)));
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
