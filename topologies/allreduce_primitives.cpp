// Collective primitives as transfer-DAG builders: ring reduce-scatter / all-gather / all-reduce
// (Patarasuk & Yuan, JPDC 2009), pipelined tree reduce / broadcast (binomial tree: Thakur,
// Rabenseifner & Gropp, IJHPCA 2005; NCCL 2.4's binary trees), direct all-to-all, and Rabenseifner's
// halving-doubling all-reduce with MPICH's non-power-of-two treatment. See allreduce_primitives.hpp.
#include "topologies/allreduce_primitives.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace ddlsim::topo {
namespace {

using Steps = std::vector<std::uint32_t>;

Steps start_of(const StepSets& start, std::size_t rank) {
    return rank < start.size() ? start[rank] : Steps{};
}

void check_group(std::span<const std::uint32_t> members, const StepSets& start) {
    if (!start.empty() && start.size() != members.size())
        throw std::invalid_argument("collective primitive: start sets must be empty or one per member");
}

/// Sends `message` from src to dst as k chained segments, the first after `after`; returns the last step.
std::uint32_t send(sim::Plan& plan, std::uint32_t src, std::uint32_t dst, sim::Bytes message, std::uint32_t k,
                   const Steps& after) {
    const sim::Bytes piece = message / k;
    std::uint32_t last = plan.add(src, dst, piece, after);
    for (std::uint32_t j = 1; j < k; ++j) last = plan.add(src, dst, piece, {last});
    return last;
}

Steps merged(const Steps& a, const Steps& b) {
    Steps out = a;
    out.insert(out.end(), b.begin(), b.end());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

/// Depth of every rank of a tree (root 0); throws on a cycle.
std::vector<std::uint32_t> depths(const std::vector<std::uint32_t>& parents) {
    const auto g = static_cast<std::uint32_t>(parents.size());
    std::vector<std::uint32_t> depth(g, 0);
    for (std::uint32_t v = 0; v < g; ++v)
        for (std::uint32_t u = v; parents[u] != kNoParent; u = parents[u])
            if (++depth[v] > g) throw std::invalid_argument("tree: parent array has a cycle");
    return depth;
}

/// Pipelined pass along a tree: reduce (up), broadcast (down) or both (segment j goes down once reduced).
/// `sequential`: a node receives from its children one after another (smallest subtree first) and sends to
/// them one after another (largest subtree first), as MPICH's binomial algorithms; otherwise all at once.
StepSets tree_pass(sim::Plan& plan, std::span<const std::uint32_t> members, const std::vector<std::uint32_t>& parents,
                   sim::Bytes bytes, sim::Bytes segment, const StepSets& start, bool up, bool down, bool sequential) {
    check_group(members, start);
    const auto g = static_cast<std::uint32_t>(members.size());
    if (parents.size() != g) throw std::invalid_argument("tree: one parent per member required");
    StepSets end(g);
    for (std::uint32_t v = 0; v < g; ++v) end[v] = start_of(start, v);
    if (g < 2) return end;
    std::uint32_t root = kNoParent;
    std::vector<std::vector<std::uint32_t>> children(g);
    for (std::uint32_t v = 0; v < g; ++v) {
        if (parents[v] == kNoParent) {
            if (root != kNoParent) throw std::invalid_argument("tree: more than one root");
            root = v;
        } else {
            if (parents[v] >= g) throw std::invalid_argument("tree: parent out of range");
            children[parents[v]].push_back(v);
        }
    }
    if (root == kNoParent) throw std::invalid_argument("tree: no root");
    const std::vector<std::uint32_t> depth = depths(parents);
    // Subtree sizes (deepest first) order each node's children by ascending subtree size: the receive order.
    std::vector<std::uint32_t> by_depth(g), size(g, 1);
    std::iota(by_depth.begin(), by_depth.end(), 0U);
    std::stable_sort(by_depth.begin(), by_depth.end(), [&](auto a, auto b) { return depth[a] > depth[b]; });
    for (std::uint32_t v : by_depth)
        if (v != root) size[parents[v]] += size[v];
    for (auto& c : children) std::stable_sort(c.begin(), c.end(), [&](auto a, auto b) { return size[a] < size[b]; });
    // Pre-order visiting children in reverse receive order; reversed, it lists every node after its
    // descendants and each child after its earlier siblings (the order up-steps must be created in).
    std::vector<std::uint32_t> pre;
    for (std::vector<std::uint32_t> stack{root}; !stack.empty();) {
        const std::uint32_t v = stack.back();
        stack.pop_back();
        pre.push_back(v);
        stack.insert(stack.end(), children[v].begin(), children[v].end());
    }
    const std::vector<std::uint32_t> post(pre.rbegin(), pre.rend());
    const std::uint32_t k = segment_count(bytes, segment);
    const sim::Bytes piece = bytes / k;
    // up_step[v]: v's latest send to its parent; down_step[v]: latest send from v's parent to v.
    std::vector<std::uint32_t> up_step(g, kNoParent), down_step(g, kNoParent);
    for (std::uint32_t j = 0; j < k; ++j) {
        if (up)
            for (std::uint32_t v : post) {
                if (v == root) continue;
                Steps after = j == 0 ? start_of(start, v) : Steps{up_step[v]};
                for (std::uint32_t c : children[v]) after.push_back(up_step[c]);
                if (sequential) {  // the parent receives in order: after the previous sibling (or last segment)
                    const auto& sib = children[parents[v]];
                    const auto at = std::find(sib.begin(), sib.end(), v);
                    if (at != sib.begin())
                        after.push_back(up_step[*(at - 1)]);
                    else if (j > 0)
                        after.push_back(up_step[sib.back()]);
                }
                up_step[v] = plan.add(members[v], members[parents[v]], piece, after);
            }
        if (down)
            for (std::uint32_t v : pre) {
                // Sends go to the largest subtree first; in sequential mode they form one chain per node.
                for (auto it = children[v].rbegin(); it != children[v].rend(); ++it) {
                    const std::uint32_t c = *it;
                    Steps after = j == 0 ? start_of(start, v) : Steps{};
                    if (!sequential && j > 0) after.push_back(down_step[c]);
                    if (sequential && it != children[v].rbegin()) after.push_back(down_step[*(it - 1)]);
                    if (sequential && it == children[v].rbegin() && j > 0) after.push_back(down_step[children[v][0]]);
                    if (v != root) after.push_back(down_step[v]);
                    if (v == root && up)
                        for (std::uint32_t r : children[root]) after.push_back(up_step[r]);
                    down_step[c] = plan.add(members[v], members[c], piece, after);
                }
            }
    }
    for (std::uint32_t v = 0; v < g; ++v) {
        Steps e;
        if (v != root && up) e.push_back(up_step[v]);
        if (v != root && down) e.push_back(down_step[v]);
        for (std::uint32_t c : children[v]) e.push_back(down ? down_step[c] : up_step[c]);
        if (v == root && !down) e.insert(e.end(), end[v].begin(), end[v].end());
        end[v] = std::move(e);
    }
    return end;
}

}  // namespace

std::uint32_t segment_count(sim::Bytes message, sim::Bytes segment) {
    if (segment.value() <= 0.0 || message.value() <= segment.value()) return 1;
    const double k = std::ceil(message.value() / segment.value());
    if (k > 1e9) throw std::invalid_argument("segment size too small for the message");
    return static_cast<std::uint32_t>(k);
}

StepSets ring_steps(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes chunk, std::uint32_t steps,
                    sim::Bytes segment, const StepSets& start) {
    check_group(members, start);
    const auto g = static_cast<std::uint32_t>(members.size());
    StepSets end(g);
    for (std::uint32_t i = 0; i < g; ++i) end[i] = start_of(start, i);
    if (g < 2 || steps == 0) return end;
    const std::uint32_t k = segment_count(chunk, segment);
    const sim::Bytes piece = chunk / k;
    // prev[i][j]: rank i's send of segment j in the previous step; cur likewise for this step.
    std::vector<std::vector<std::uint32_t>> prev(g, Steps(k)), cur(g, Steps(k));
    std::vector<std::uint32_t> last(g);
    for (std::uint32_t s = 0; s < steps; ++s) {
        for (std::uint32_t j = 0; j < k; ++j)
            for (std::uint32_t i = 0; i < g; ++i) {
                Steps after;
                if (s == 0 && j == 0) after = start_of(start, i);
                if (s > 0 || j > 0) after.push_back(last[i]);
                if (s > 0) after.push_back(prev[(i + g - 1) % g][j]);
                last[i] = cur[i][j] = plan.add(members[i], members[(i + 1) % g], piece, after);
            }
        std::swap(prev, cur);
    }
    for (std::uint32_t i = 0; i < g; ++i) end[i] = {last[(i + g - 1) % g], last[i]};
    return end;
}

StepSets ring_reduce_scatter(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes,
                             sim::Bytes segment, const StepSets& start) {
    const auto g = static_cast<std::uint32_t>(std::max<std::size_t>(members.size(), 1));
    return ring_steps(plan, members, bytes / g, g - 1, segment, start);
}

StepSets ring_all_gather(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes, sim::Bytes segment,
                         const StepSets& start) {
    const auto g = static_cast<std::uint32_t>(std::max<std::size_t>(members.size(), 1));
    return ring_steps(plan, members, bytes / g, g - 1, segment, start);
}

StepSets ring_allreduce(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes, sim::Bytes segment,
                        const StepSets& start) {
    return ring_all_gather(plan, members, bytes, segment, ring_reduce_scatter(plan, members, bytes, segment, start));
}

std::vector<std::uint32_t> binomial_parents(std::uint32_t g) {
    std::vector<std::uint32_t> parents(g, kNoParent);
    for (std::uint32_t r = 1; r < g; ++r) parents[r] = r & (r - 1);
    return parents;
}

std::vector<std::uint32_t> nccl_btree_parents(std::uint32_t g) {
    // ncclGetBtree (NCCL 2.4, src/graph/trees.cc): with `bit` the lowest set bit of rank,
    // parent = (rank ^ bit) | (bit << 1), or rank ^ bit when that is out of range.
    std::vector<std::uint32_t> parents(g, kNoParent);
    for (std::uint32_t r = 1; r < g; ++r) {
        const std::uint32_t bit = r & (~r + 1);
        std::uint32_t up = (r ^ bit) | (bit << 1);
        if (up >= g) up = r ^ bit;
        parents[r] = up;
    }
    return parents;
}

std::vector<std::uint32_t> nccl_second_tree_parents(std::uint32_t g) {
    const std::vector<std::uint32_t> first = nccl_btree_parents(g);
    std::vector<std::uint32_t> parents(g, kNoParent);
    for (std::uint32_t r = 0; r < g; ++r) {
        // g odd: rank r plays rank r-1 of the first tree (shift); g even: rank g-1-r (mirror).
        const std::uint32_t as = g % 2 == 1 ? (r + g - 1) % g : g - 1 - r;
        const std::uint32_t up = first[as];
        if (up != kNoParent) parents[r] = g % 2 == 1 ? (up + 1) % g : g - 1 - up;
    }
    return parents;
}

std::uint32_t tree_height(const std::vector<std::uint32_t>& parents) {
    const std::vector<std::uint32_t> depth = depths(parents);
    return depth.empty() ? 0 : *std::max_element(depth.begin(), depth.end());
}

StepSets tree_reduce(sim::Plan& plan, std::span<const std::uint32_t> members, const std::vector<std::uint32_t>& parents,
                     sim::Bytes bytes, sim::Bytes segment, const StepSets& start, bool sequential) {
    return tree_pass(plan, members, parents, bytes, segment, start, true, false, sequential);
}

StepSets tree_broadcast(sim::Plan& plan, std::span<const std::uint32_t> members,
                        const std::vector<std::uint32_t>& parents, sim::Bytes bytes, sim::Bytes segment,
                        const StepSets& start, bool sequential) {
    return tree_pass(plan, members, parents, bytes, segment, start, false, true, sequential);
}

StepSets tree_allreduce(sim::Plan& plan, std::span<const std::uint32_t> members,
                        const std::vector<std::uint32_t>& parents, sim::Bytes bytes, sim::Bytes segment,
                        const StepSets& start) {
    return tree_pass(plan, members, parents, bytes, segment, start, true, true, false);
}

StepSets reduce(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes, sim::Bytes segment,
                const StepSets& start) {
    return tree_reduce(plan, members, binomial_parents(static_cast<std::uint32_t>(members.size())), bytes, segment,
                       start, true);
}

StepSets broadcast(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes, sim::Bytes segment,
                   const StepSets& start) {
    return tree_broadcast(plan, members, binomial_parents(static_cast<std::uint32_t>(members.size())), bytes, segment,
                          start, true);
}

StepSets all_to_all(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes, sim::Bytes segment,
                    const StepSets& start) {
    check_group(members, start);
    const auto g = static_cast<std::uint32_t>(members.size());
    StepSets end(g);
    for (std::uint32_t i = 0; i < g; ++i) end[i] = start_of(start, i);
    if (g < 2) return end;
    const sim::Bytes share = bytes / g;
    const std::uint32_t k = segment_count(share, segment);
    StepSets last(g);
    for (std::uint32_t i = 0; i < g; ++i)
        for (std::uint32_t j = 0; j < g; ++j) {
            if (i == j) continue;
            const std::uint32_t s = send(plan, members[i], members[j], share, k, start_of(start, i));
            last[i].push_back(s);
            last[j].push_back(s);
        }
    return last;
}

StepSets halving_doubling(sim::Plan& plan, std::span<const std::uint32_t> members, sim::Bytes bytes, sim::Bytes segment,
                          const StepSets& start) {
    check_group(members, start);
    const auto g = static_cast<std::uint32_t>(members.size());
    StepSets cur(g);
    for (std::uint32_t i = 0; i < g; ++i) cur[i] = start_of(start, i);
    if (g < 2) return cur;
    std::uint32_t pof2 = 1;
    while (pof2 * 2 <= g) pof2 *= 2;
    const std::uint32_t rem = g - pof2;
    // MPICH: of the first 2*rem ranks the even ones hand their vector to the odd neighbour and sit out.
    auto send_all = [&](std::uint32_t from, std::uint32_t to) {
        const std::uint32_t s =
            send(plan, members[from], members[to], bytes, segment_count(bytes, segment), merged(cur[from], cur[to]));
        cur[from] = cur[to] = Steps{s};
    };
    for (std::uint32_t i = 0; i < 2 * rem; i += 2) send_all(i, i + 1);
    auto rank_of = [&](std::uint32_t nr) { return nr < rem ? 2 * nr + 1 : nr + rem; };
    // An exchange of `m` bytes each way between new ranks a and b, after both finished their previous step.
    auto exchange = [&](std::uint32_t na, std::uint32_t nb, sim::Bytes m) {
        const std::uint32_t a = rank_of(na), b = rank_of(nb);
        const Steps after = merged(cur[a], cur[b]);
        const std::uint32_t k = segment_count(m, segment);
        const std::uint32_t ab = send(plan, members[a], members[b], m, k, after);
        const std::uint32_t ba = send(plan, members[b], members[a], m, k, after);
        cur[a] = cur[b] = Steps{ab, ba};
    };
    // Reduce-scatter by recursive vector halving, distance doubling; all-gather in reverse.
    sim::Bytes m = bytes;
    for (std::uint32_t mask = 1; mask < pof2; mask <<= 1) {
        m = m / 2.0;
        for (std::uint32_t nr = 0; nr < pof2; ++nr)
            if (nr < (nr ^ mask)) exchange(nr, nr ^ mask, m);
    }
    for (std::uint32_t mask = pof2 >> 1; mask > 0; mask >>= 1) {
        for (std::uint32_t nr = 0; nr < pof2; ++nr)
            if (nr < (nr ^ mask)) exchange(nr, nr ^ mask, m);
        m = m * 2.0;
    }
    for (std::uint32_t i = 0; i < 2 * rem; i += 2) send_all(i + 1, i);
    return cur;
}

}  // namespace ddlsim::topo
