// Sparse all-gathers, gTop-k and PowerSGD as transfer DAGs; the model, closed forms and
// citations are in sparse_collectives.hpp.
#include "topologies/sparse_collectives.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ddlsim::topo {

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

bool power_of_two(std::uint32_t n) {
    return n != 0 && (n & (n - 1)) == 0;
}

// Largest power of two not above n (n >= 1).
std::uint32_t floor_pow2(std::uint32_t n) {
    std::uint32_t m = 1;
    while (m <= n / 2) m *= 2;
    return m;
}

// Receives a payload at `at` through step `recv`; with merge work, the merge follows it.
// Returns the step after which `at` holds the merged data.
std::uint32_t received(sim::Plan& plan, std::uint32_t at, std::uint32_t recv, sim::Time merge) {
    return merge > sim::Time::zero() ? plan.add_work(at, merge, {recv}) : recv;
}

// Butterfly exchange among workers 0..m-1 (m a power of two): in step j, i and i XOR 2^j swap
// `payload` each; `ready[i]` (kNone: none) is what i's first send waits for. Returns per worker
// the steps after which it holds the final result.
std::vector<std::vector<std::uint32_t>> butterfly(sim::Plan& plan, std::uint32_t m, sim::Bytes payload, sim::Time merge,
                                                  const std::vector<std::uint32_t>& ready) {
    std::vector<std::vector<std::uint32_t>> have(m);
    for (std::uint32_t i = 0; i < m; ++i)
        if (ready[i] != kNone) have[i] = {ready[i]};
    for (std::uint32_t bit = 1; bit < m; bit *= 2) {
        std::vector<std::uint32_t> sent(m);
        for (std::uint32_t i = 0; i < m; ++i) sent[i] = plan.add(i, i ^ bit, payload, have[i]);
        // i's next send waits for its own send to be out and the partner's payload (merged) to be in.
        for (std::uint32_t i = 0; i < m; ++i) have[i] = {sent[i], received(plan, i, sent[i ^ bit], merge)};
    }
    return have;
}

}  // namespace

std::pair<sim::Bytes, sim::Bytes> powersgd_factor_bytes(std::span<const MatrixShape> matrices, std::uint64_t rank,
                                                        double word_bytes) {
    double p = 0.0, q = 0.0;
    for (const auto& m : matrices) {
        const std::uint64_t r = std::min({rank, m.rows, m.cols});  // rank cannot exceed the matrix's
        p += static_cast<double>(m.rows * r) * word_bytes;
        q += static_cast<double>(m.cols * r) * word_bytes;
    }
    return {sim::Bytes{p}, sim::Bytes{q}};
}

sim::Plan sparse_allgather_ring_plan(std::uint32_t n, sim::Bytes payload) {
    sim::Plan plan;
    plan.endpoints = n;
    if (n < 2) return plan;
    // Step s of worker i (index s*n + i) forwards worker (i-s)'s payload to i+1, after it received
    // that payload in step s-1 from i-1 and its own step s-1 send is out.
    for (std::uint32_t s = 0; s + 1 < n; ++s)
        for (std::uint32_t i = 0; i < n; ++i) {
            if (s == 0) {
                plan.add(i, (i + 1) % n, payload);
            } else {
                const std::uint32_t after[] = {(s - 1) * n + (i + n - 1) % n, (s - 1) * n + i};
                plan.add(i, (i + 1) % n, payload, after);
            }
        }
    return plan;
}

sim::Plan sparse_allgather_doubling_plan(std::uint32_t n, sim::Bytes payload) {
    sim::Plan plan;
    plan.endpoints = n;
    if (n < 2) return plan;
    const bool doubling = power_of_two(n);
    // Step j of worker i has index j*n + i. Recursive doubling: i swaps its 2^j payloads with
    // i XOR 2^j. Bruck: i sends min(2^j, n-2^j) payloads to i-2^j and receives from i+2^j.
    std::uint32_t j = 0;
    for (std::uint64_t dist = 1; dist < n; dist *= 2, ++j) {
        const auto d = static_cast<std::uint32_t>(dist);
        const double blocks = doubling ? dist : static_cast<double>(std::min<std::uint64_t>(dist, n - dist));
        for (std::uint32_t i = 0; i < n; ++i) {
            const std::uint32_t dst = doubling ? i ^ d : (i + n - d) % n;
            if (j == 0) {
                plan.add(i, dst, payload * blocks);
            } else {
                const std::uint32_t prev = d / 2;  // who sent to i in step j-1
                const std::uint32_t from = doubling ? i ^ prev : (i + prev) % n;
                const std::uint32_t after[] = {(j - 1) * n + from, (j - 1) * n + i};
                plan.add(i, dst, payload * blocks, after);
            }
        }
    }
    return plan;
}

sim::Plan gtopk_plan(std::uint32_t n, sim::Bytes payload, GtopkForm form, sim::Time merge) {
    sim::Plan plan;
    plan.endpoints = n;
    if (n < 2) return plan;
    if (form == GtopkForm::butterfly) {
        const std::uint32_t m = floor_pow2(n);
        std::vector<std::uint32_t> ready(m, kNone);
        for (std::uint32_t e = m; e < n; ++e)  // fold-in: m+e hands its payload to e
            ready[e - m] = received(plan, e - m, plan.add(e, e - m, payload), merge);
        const auto have = butterfly(plan, m, payload, merge, ready);
        for (std::uint32_t e = m; e < n; ++e) plan.add(e - m, e, payload, have[e - m]);  // fold-out
        return plan;
    }
    // Binomial tree: reduce to rank 0 (step j: i ≡ 2^j mod 2^(j+1) sends to i-2^j), then broadcast
    // back in reverse order; have[i]: steps after which i holds its current data.
    std::vector<std::vector<std::uint32_t>> have(n);
    std::uint32_t levels = 0;
    while ((std::uint64_t{1} << levels) < n) ++levels;
    for (std::uint32_t j = 0; j < levels; ++j) {
        const std::uint32_t d = 1u << j;
        for (std::uint32_t i = d; i < n; i += 2 * d) {
            const std::uint32_t s = plan.add(i, i - d, payload, have[i]);
            have[i - d].push_back(received(plan, i - d, s, merge));
        }
    }
    for (std::uint32_t j = levels; j-- > 0;) {
        const std::uint32_t d = 1u << j;
        for (std::uint32_t i = 0; i + d < n; i += 2 * d) {
            const std::uint32_t s = plan.add(i, i + d, payload, have[i]);
            have[i] = {s};  // the sender's next send goes after this one
            have[i + d] = {s};
        }
    }
    return plan;
}

std::vector<std::uint32_t> append_ring_allreduce(sim::Plan& plan, std::uint32_t n, sim::Bytes bytes,
                                                 std::span<const std::uint32_t> start_after) {
    if (plan.endpoints < n) throw std::logic_error("ring all-reduce needs n endpoints in the plan");
    if (!start_after.empty() && start_after.size() != n)
        throw std::logic_error("ring all-reduce: start_after needs one entry per worker");
    auto start = [&](std::uint32_t i) {
        return start_after.empty() || start_after[i] == kNone ? std::span<const std::uint32_t>{}
                                                              : start_after.subspan(i, 1);
    };
    std::vector<std::uint32_t> done(n);
    if (n < 2) {
        for (std::uint32_t i = 0; i < n; ++i) done[i] = plan.add_work(i, sim::Time::zero(), start(i));
        return done;
    }
    // As ring_allreduce_plan: step s of worker i (index base + s*n + i) sends S/n to i+1 after
    // receiving step s-1 from i-1 and after its own step s-1 send.
    const auto base = static_cast<std::uint32_t>(plan.size());
    const sim::Bytes chunk = bytes / n;
    const std::uint32_t steps = 2 * (n - 1);
    for (std::uint32_t s = 0; s < steps; ++s)
        for (std::uint32_t i = 0; i < n; ++i) {
            if (s == 0) {
                plan.add(i, (i + 1) % n, chunk, start(i));
            } else {
                const std::uint32_t after[] = {base + (s - 1) * n + (i + n - 1) % n, base + (s - 1) * n + i};
                plan.add(i, (i + 1) % n, chunk, after);
            }
        }
    // Worker i is complete when its last send is out and its last receive (from i-1) is in.
    const std::uint32_t last = base + (steps - 1) * n;
    for (std::uint32_t i = 0; i < n; ++i)
        done[i] = plan.add_work(i, sim::Time::zero(), {last + i, last + (i + n - 1) % n});
    return done;
}

sim::Plan powersgd_plan(std::uint32_t n, sim::Bytes p_bytes, sim::Bytes q_bytes, sim::Time local) {
    sim::Plan plan;
    plan.endpoints = n;
    std::vector<std::uint32_t> ready = append_ring_allreduce(plan, n, p_bytes);
    if (local > sim::Time::zero())
        for (std::uint32_t i = 0; i < n; ++i) ready[i] = plan.add_work(i, local, {ready[i]});
    (void)append_ring_allreduce(plan, n, q_bytes, ready);
    return plan;
}

namespace {
bool ring_allgather(AllreduceAlgorithm a) {
    // NVLS and CollNet sum; the gathers of sparse payloads fall back to NCCL's ring, as under auto.
    return a == AllreduceAlgorithm::ring || a == AllreduceAlgorithm::automatic || a == AllreduceAlgorithm::nvls ||
           a == AllreduceAlgorithm::collnet;
}
}  // namespace

sim::Plan sparse_allgather_plan(AllreduceAlgorithm a, std::uint32_t n, sim::Bytes payload) {
    return ring_allgather(a) ? sparse_allgather_ring_plan(n, payload) : sparse_allgather_doubling_plan(n, payload);
}

double sparse_allgather_transfers(AllreduceAlgorithm a, std::uint32_t n) {
    const double workers = n;
    return ring_allgather(a) ? workers * (workers - 1.0)
                             : workers * std::max(1.0, std::ceil(std::log2(std::max(workers, 2.0))));
}

}  // namespace ddlsim::topo
