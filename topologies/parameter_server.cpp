// Parameter-server plans: standard sharded PS (Li et al., OSDI 2014) with byte, round-robin
// and size-balanced sharding, per-tensor push/pull pipelining, and BytePS (Jiang et al.,
// OSDI 2020). The model and its choices are described in parameter_server.hpp.
#include "topologies/parameter_server.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <span>
#include <stdexcept>

#include "topologies/in_network.hpp"

namespace ddlsim::topo {

namespace {

constexpr std::uint32_t kNone = kCutOverAll;

sim::Time aggregation_time(double bytes, std::uint32_t n, std::optional<sim::Bandwidth> rate) {
    return rate ? sim::transfer_time(sim::Bytes{bytes * n}, *rate) : sim::Time::zero();
}

// The job's tensors, or one tensor of S bytes when none are given; they must sum to S.
std::vector<double> tensors_of(const CollectiveContext& ctx) {
    if (ctx.tensor_bytes.empty()) return {ctx.bytes.value()};
    const double sum = std::accumulate(ctx.tensor_bytes.begin(), ctx.tensor_bytes.end(), 0.0);
    if (std::abs(sum - ctx.bytes.value()) > 1e-9 * std::max(1.0, ctx.bytes.value()))
        throw std::invalid_argument("parameter server: tensor sizes do not sum to the synchronised bytes");
    return ctx.tensor_bytes;
}

}  // namespace

sim::Plan parameter_server(std::uint32_t n, std::uint32_t k, sim::Bytes bytes,
                           std::optional<sim::Bandwidth> aggregation_rate) {
    return parameter_server(n, k, bytes, bytes, aggregation_rate);
}

sim::Plan parameter_server(std::uint32_t n, std::uint32_t k, sim::Bytes push, sim::Bytes pull,
                           std::optional<sim::Bandwidth> aggregation_rate) {
    if (k == 0) throw std::invalid_argument("a parameter server needs at least one server");
    sim::Plan plan;
    plan.endpoints = n + k;
    const sim::Bytes shard = push / k;
    const sim::Bytes pulled = pull / k;
    std::vector<std::vector<std::uint32_t>> pushes(k);
    for (std::uint32_t w = 0; w < n; ++w)
        for (std::uint32_t j = 0; j < k; ++j) pushes[j].push_back(plan.add(w, n + j, shard));
    for (std::uint32_t j = 0; j < k; ++j) {
        // Aggregation at server j once all its shards arrived: summing n shards reads n*S/k bytes
        // at the server's aggregation throughput (instant when unlimited). The pulls hang off this
        // one step, so the plan has O(nk) dependencies, not O(n^2 k).
        const std::uint32_t aggregated =
            plan.add_work(n + j, aggregation_time(shard.value(), n, aggregation_rate), pushes[j]);
        for (std::uint32_t w = 0; w < n; ++w) plan.add(n + j, w, pulled, {aggregated});
    }
    return plan;
}

std::vector<std::uint32_t> tensor_owners(PsSharding sharding, const std::vector<double>& tensors, std::uint32_t k,
                                         double split_bytes) {
    if (k == 0) throw std::invalid_argument("a parameter server needs at least one server");
    const auto count = static_cast<std::uint32_t>(tensors.size());
    // owner[t]: the server holding tensor t whole, or kCutOverAll when it is cut evenly over all k.
    std::vector<std::uint32_t> owner(count, kCutOverAll);
    if (sharding == PsSharding::bytes) return owner;
    // Key order is forward order: key j is tensor count-1-j of the backward-ordered list.
    std::vector<std::uint32_t> whole;  // tensor indices in key order
    for (std::uint32_t key = 0; key < count; ++key)
        if (tensors[count - 1 - key] <= split_bytes) whole.push_back(count - 1 - key);
    if (sharding == PsSharding::round_robin) {
        for (std::uint32_t t : whole) owner[t] = (count - 1 - t) % k;  // key j -> server j mod k
        return owner;
    }
    // Longest processing time first: stable sort keeps key order among equal sizes.
    std::vector<double> load(k, 0.0);
    std::stable_sort(whole.begin(), whole.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return tensors[a] > tensors[b]; });
    for (std::uint32_t t : whole) {
        const auto least = static_cast<std::uint32_t>(std::min_element(load.begin(), load.end()) - load.begin());
        owner[t] = least;
        load[least] += tensors[t];
    }
    return owner;
}

std::vector<std::vector<ShardPiece>> shard_by_owner(const std::vector<double>& tensors,
                                                    const std::vector<std::uint32_t>& owner, std::uint32_t k) {
    if (owner.size() != tensors.size()) throw std::invalid_argument("parameter server: one owner per tensor expected");
    std::vector<std::vector<ShardPiece>> pieces(k);
    for (std::uint32_t t = 0; t < tensors.size(); ++t) {
        if (owner[t] != kCutOverAll) {
            if (owner[t] >= k) throw std::invalid_argument("parameter server: a tensor's server is out of range");
            pieces[owner[t]].push_back(ShardPiece{t, tensors[t]});
        } else {
            for (std::uint32_t j = 0; j < k; ++j) pieces[j].push_back(ShardPiece{t, tensors[t] / k});
        }
    }
    return pieces;
}

std::vector<std::vector<ShardPiece>> shard_tensors(PsSharding sharding, const std::vector<double>& tensors,
                                                   std::uint32_t k, double split_bytes) {
    return shard_by_owner(tensors, tensor_owners(sharding, tensors, k, split_bytes), k);
}

BytePsSplit byteps_split(std::uint32_t n, std::uint32_t k, double bytes) {
    // Per iteration (push + pull, full duplex, pushes and pulls overlapping), with x bytes on
    // each CPU server and y on each worker host (kx + ny = S):
    //   worker uplink    push: x to each of k CPU servers + y to each of n-1 other worker hosts;
    //                    pull: its own y to each of n-1 other workers      -> kx + 2(n-1)y
    //   worker downlink  the mirror image (receives n-1 pushes of y, k CPU pulls of x and n-1
    //                    worker pulls of y)                                -> kx + 2(n-1)y
    //   CPU downlink     n pushes of x; CPU uplink n pulls of x             -> nx
    // Both kinds of link bind when kx + 2(n-1)y = nx, i.e. y = (n-k)x / (2(n-1)); then
    //   kx + n(n-k)x/(2(n-1)) = S  =>  x (2k(n-1) + n^2 - kn) = 2(n-1)S
    //   =>  x = 2(n-1)S / (n^2 + kn - 2k),  y = (n-k)S / (n^2 + kn - 2k),
    // and the busiest link carries nx = 2n(n-1)S / (n^2 + kn - 2k) bytes: the paper's
    // T = 2n(n-1)S / ((n^2 + kn - 2k) B). The CPU share of S is kx/S = 2k(n-1)/(n^2 + kn - 2k),
    // the `ratio` of BytePS's Hash_Mixed_Mode (byteps/common/global.cc). k = 0 gives y = S/n and
    // T = 2(n-1)S/(nB) (colocated all-to-all); k = n gives y = 0, x = S/n (dedicated PS, T = S/B
    // with overlap). For k > n, y would be negative: the worker hosts serve nothing, x = S/k.
    if (n <= 1) return {0.0, bytes};  // a single worker: nothing to exchange, it holds everything
    if (k >= n) return {bytes / k, 0.0};
    const double d = static_cast<double>(n) * n + static_cast<double>(k) * n - 2.0 * k;
    return {2.0 * (n - 1) * bytes / d, static_cast<double>(n - k) * bytes / d};
}

namespace {

// A ring among `members` moving `chunk` bytes per step for `steps` steps; member r's first send waits
// for `first[r]` (kNone: only its gate). Returns, per member, the step that last delivered to it.
std::vector<std::uint32_t> local_ring(sim::Plan& plan, const std::vector<std::uint32_t>& members, double chunk,
                                      const std::vector<std::vector<std::uint32_t>>& first) {
    const auto g = static_cast<std::uint32_t>(members.size());
    std::vector<std::uint32_t> received(g, kNone);
    std::vector<std::uint32_t> deps;
    for (std::uint32_t step = 0; step + 1 < g; ++step) {
        std::vector<std::uint32_t> now(g, kNone);
        for (std::uint32_t r = 0; r < g; ++r) {
            deps.clear();
            if (step == 0) {
                deps = first[r];
            } else {
                deps.push_back(received[r]);
            }
            now[(r + 1) % g] = plan.add(members[r], members[(r + 1) % g], sim::Bytes{chunk}, deps);
        }
        received = now;
    }
    return received;
}

// Switch aggregation of server e's messages (PsLayout::switch_endpoint): per segment every worker pushes its part to
// the switch, the switch sends the sum up to e, e sends it back down, the switch multicasts it; each leg follows the
// previous segment's on its stream. last_push / last_pull end as each worker's last push and pull. With a `window`,
// the switch holds that many of e's segments at once: a segment's pushes wait for the slot the multicast of the
// segment `window` places earlier freed (`freed`: one zero-time step at the switch per segment, after its pulls).
void switch_legs(sim::Plan& plan, const PsLayout& l, std::uint32_t window, std::uint32_t e,
                 const std::vector<double>& messages, const std::vector<double>& share,
                 const std::vector<std::vector<std::uint32_t>>& ready, std::vector<std::uint32_t>& last_push,
                 std::vector<std::uint32_t>& last_pull, std::vector<std::uint32_t>& freed) {
    const std::uint32_t a = *l.switch_endpoint;
    const std::uint32_t n = l.workers;
    std::uint32_t last_up = kNone, last_down = kNone;
    std::vector<std::uint32_t> deps;
    // Each leg is a stream of back-to-back segments (PsLayout::switch_endpoint): a segment follows `prev` on it.
    auto next = [&](std::uint32_t prev, std::uint32_t src, std::uint32_t dst, double b,
                    std::span<const std::uint32_t> after) {
        const std::uint32_t step = plan.add(src, dst, sim::Bytes{b}, after);
        if (prev != kNone) plan.set_follows(step, prev);
        return step;
    };
    for (double bytes : messages) {
        const double count = l.segment > 0.0 ? std::max(1.0, std::ceil(bytes / l.segment)) : 1.0;
        const double seg = bytes / count;
        for (double i = 0; i < count; ++i) {
            deps.clear();
            // The switch's memory: this segment's slot is the one the segment `window` places earlier freed.
            const std::uint32_t slot = window > 0 && freed.size() >= window ? freed[freed.size() - window] : kNone;
            for (std::uint32_t w = 0; w < n; ++w) {
                std::vector<std::uint32_t> after =
                    last_push[w] == kNone ? ready[w] : std::vector<std::uint32_t>{last_push[w]};
                if (slot != kNone) after.push_back(slot);
                last_push[w] = next(last_push[w], w, a, seg * share[w], after);
                deps.push_back(last_push[w]);
            }
            const std::uint32_t prev_up = last_up;
            if (last_up != kNone) deps.push_back(last_up);
            last_up = next(prev_up, a, e, seg, deps);
            const std::uint32_t down_after[] = {last_up, last_down};
            last_down = next(last_down, e, a, seg, std::span(down_after, last_down == kNone ? 1 : 2));
            for (std::uint32_t w = 0; w < n; ++w) {
                const std::uint32_t pull_after[] = {last_down, last_pull[w]};
                last_pull[w] =
                    next(last_pull[w], a, w, seg * share[w], std::span(pull_after, last_pull[w] == kNone ? 1 : 2));
            }
            // The slot is free once the multicast reached every worker (a zero-time step at the switch).
            if (window > 0) {
                deps.assign(last_pull.begin(), last_pull.end());
                freed.push_back(plan.add(a, a, sim::Bytes{0.0}, deps));
            }
        }
    }
}

}  // namespace

double switch_aggregation_segment() {
    return kCollnetChunk;
}

sim::Plan ps_plan(const PsLayout& l) {
    if (l.server_endpoint.size() != l.pieces.size())
        throw std::invalid_argument("parameter server: one piece list per server expected");
    sim::Plan plan;
    plan.endpoints = l.endpoints;
    const std::uint32_t n = l.workers;
    // Local groups (machines): each worker's share of every piece, and when its pushes may start.
    std::vector<std::vector<std::uint32_t>> groups = l.groups;
    if (groups.empty())
        for (std::uint32_t w = 0; w < n; ++w) groups.push_back({w});
    std::vector<double> share(n, 1.0);
    std::vector<std::vector<std::uint32_t>> ready(n);  // steps a worker's first push waits for
    double total = 0.0;
    for (const auto& ps : l.pieces)
        for (const ShardPiece& p : ps) total += p.bytes;
    for (const auto& g : groups) {
        for (std::uint32_t w : g) share[w] = 1.0 / static_cast<double>(g.size());
        if (g.size() < 2) continue;
        // Reduce-scatter inside the machine: each GPU ends with 1/g of the machine's sum.
        const auto rs = local_ring(plan, g, total / static_cast<double>(g.size()),
                                   std::vector<std::vector<std::uint32_t>>(g.size()));
        for (std::size_t r = 0; r < g.size(); ++r) ready[g[r]] = {rs[r]};
    }
    const auto contributions = static_cast<std::uint32_t>(groups.size());
    // Per server: its streams' share of max-min sharing (PsLayout::stream_share), 1 each by default.
    if (!l.stream_share.empty() && l.stream_share.size() != l.pieces.size())
        throw std::invalid_argument("parameter server: one stream share per server expected");
    auto server_share = [&](std::size_t s) { return l.stream_share.empty() ? 1.0 : l.stream_share[s]; };
    auto send = [&](std::uint32_t src, std::uint32_t dst, double bytes, std::span<const std::uint32_t> after,
                    double flows) {
        const std::uint32_t step = plan.add(src, dst, sim::Bytes{bytes}, after);
        if (flows != 1.0 && src != dst && bytes > 0.0) plan.set_share(step, flows);
        return step;
    };
    std::vector<std::uint32_t> last_push(n), last_pull(n), deps;
    std::vector<std::vector<std::uint32_t>> pulls(n);  // per worker: its last pull from each server
    for (std::size_t s = 0; s < l.pieces.size(); ++s) {
        const std::uint32_t e = l.server_endpoint[s];
        if (e >= l.endpoints) throw std::invalid_argument("parameter server: server endpoint outside the plan");
        // Without per_tensor a server's pieces travel as one message per worker.
        std::vector<double> messages;
        for (const ShardPiece& p : l.pieces[s])
            if (p.bytes > 0.0) messages.push_back(p.bytes);
        if (!l.per_tensor && !messages.empty()) messages = {std::accumulate(messages.begin(), messages.end(), 0.0)};
        std::fill(last_push.begin(), last_push.end(), kNone);
        std::fill(last_pull.begin(), last_pull.end(), kNone);
        std::uint32_t last_sum = kNone;
        if (l.switch_endpoint) {
            // The job's memory is split evenly among its servers' streams (PsLayout::memory).
            std::vector<std::uint32_t> freed;
            const auto servers = static_cast<std::uint32_t>(l.pieces.size());
            const std::uint32_t window =
                l.memory > 0.0
                    ? static_cast<std::uint32_t>(std::floor(l.memory / servers / l.segment)) + kStoreAndForwardSegments
                    : 0;
            switch_legs(plan, l, window, e, messages, share, ready, last_push, last_pull, freed);
            for (std::uint32_t w = 0; w < n; ++w)
                if (last_pull[w] != kNone) pulls[w].push_back(last_pull[w]);
            continue;
        }
        for (double bytes : messages) {
            // One stream per (worker, server) pair: a message follows the previous one on it.
            deps.clear();
            for (std::uint32_t w = 0; w < n; ++w) {
                if (w == e && l.groups.empty()) continue;  // a worker's own share of its host's server stays put
                std::vector<std::uint32_t> after = last_push[w] == kNone ? ready[w] : std::vector{last_push[w]};
                last_push[w] = send(w, e, w == e ? 0.0 : bytes * share[w], after, server_share(s));
                deps.push_back(last_push[w]);
            }
            if (last_sum != kNone) deps.push_back(last_sum);  // the server sums one tensor at a time
            last_sum = plan.add_work(e, aggregation_time(bytes, contributions, l.aggregation_rate), deps);
            for (std::uint32_t w = 0; w < n; ++w) {
                if (w == e && l.groups.empty()) continue;
                const std::uint32_t after[] = {last_sum, last_pull[w]};
                last_pull[w] = send(e, w, w == e ? 0.0 : bytes * share[w],
                                    std::span(after, last_pull[w] == kNone ? 1 : 2), server_share(s));
            }
        }
        for (std::uint32_t w = 0; w < n; ++w)
            if (last_pull[w] != kNone) pulls[w].push_back(last_pull[w]);
    }
    // All-gather inside each machine once a GPU has pulled its slice from every server.
    for (const auto& g : groups) {
        if (g.size() < 2) continue;
        std::vector<std::vector<std::uint32_t>> first;
        for (std::uint32_t w : g) first.push_back(pulls[w].empty() ? ready[w] : pulls[w]);
        (void)local_ring(plan, g, total / static_cast<double>(g.size()), first);
    }
    return plan;
}

std::vector<std::vector<ShardPiece>> byteps_partitions(std::uint32_t hosts, std::uint32_t k,
                                                       const std::vector<double>& tensors, double partition) {
    const double total = std::accumulate(tensors.begin(), tensors.end(), 0.0);
    const BytePsSplit split = byteps_split(hosts, k, total);
    // Servers: worker hosts 0..hosts-1 (share y each), then CPU servers (x each). Every partition goes
    // whole to the server furthest below its share (ties: the lower index), so each server's load tracks
    // its share as BytePS's Hash_Mixed_Mode does on average.
    std::vector<double> target(hosts + k);
    for (std::uint32_t s = 0; s < hosts + k; ++s) target[s] = s < hosts ? split.worker : split.cpu;
    std::vector<double> load(hosts + k, 0.0);
    std::vector<std::vector<ShardPiece>> pieces(hosts + k);
    for (std::uint32_t t = 0; t < tensors.size(); ++t) {
        const double parts = partition > 0.0 ? std::max(1.0, std::ceil(tensors[t] / partition)) : 1.0;
        for (double i = 0; i < parts; ++i) {
            const double bytes = std::min(partition > 0.0 ? partition : tensors[t], tensors[t] - i * partition);
            std::uint32_t best = kNone;
            double best_fill = std::numeric_limits<double>::infinity();
            for (std::uint32_t s = 0; s < hosts + k; ++s) {
                if (!(target[s] > 0.0)) continue;
                const double fill = (load[s] + bytes) / target[s];
                if (fill < best_fill) {
                    best_fill = fill;
                    best = s;
                }
            }
            if (best == kNone) best = 0;
            load[best] += bytes;
            pieces[best].push_back(ShardPiece{t, bytes});
        }
    }
    return pieces;
}

sim::Plan byteps(std::uint32_t n, std::uint32_t k, const std::vector<double>& tensors, bool per_tensor,
                 std::optional<sim::Bandwidth> aggregation_rate) {
    const double total = std::accumulate(tensors.begin(), tensors.end(), 0.0);
    const BytePsSplit split = byteps_split(n, k, total);
    // Servers: worker hosts 0..n-1 (share y each), then CPU servers n..n+k-1 (x each); every
    // tensor is cut over them in proportion to their shares.
    std::vector<std::uint32_t> server_endpoint(n + k);
    std::iota(server_endpoint.begin(), server_endpoint.end(), 0u);
    std::vector<std::vector<ShardPiece>> pieces(n + k);
    for (std::uint32_t t = 0; t < tensors.size(); ++t) {
        const double fraction = total > 0.0 ? tensors[t] / total : 0.0;
        for (std::uint32_t s = 0; s < n + k; ++s)
            pieces[s].push_back(ShardPiece{t, fraction * (s < n ? split.worker : split.cpu)});
    }
    PsLayout layout{n, n + k, server_endpoint, pieces, per_tensor, aggregation_rate, {}};
    layout.stream_share = byteps_stream_shares(n, k);
    return ps_plan(layout);
}

std::vector<double> byteps_stream_shares(std::uint32_t hosts, std::uint32_t k) {
    const BytePsSplit split = byteps_split(hosts, k, 1.0);
    std::vector<double> shares(hosts + k);
    for (std::uint32_t s = 0; s < hosts + k; ++s) {
        const double share = (s < hosts ? split.worker : split.cpu) * (hosts + k);
        shares[s] = share > 0.0 ? share : 1.0;
    }
    return shares;
}

std::uint32_t byteps_hosts(const ArchitectureSpec& spec, const CollectiveContext& ctx) {
    const std::uint32_t n = ctx.workers;
    if (!spec.local_aggregation || ctx.node_of.size() != n) return n;
    const std::set<std::uint32_t> machines(ctx.node_of.begin(), ctx.node_of.end());
    return machines.size() == n ? n : static_cast<std::uint32_t>(machines.size());
}

std::unique_ptr<Collective> make_parameter_server(const ArchitectureSpec& spec, const CollectiveContext& ctx,
                                                  const PsOptions& options) {
    const std::uint32_t n = ctx.workers;
    const auto k = static_cast<std::uint32_t>(spec.servers);
    // Machines with several GPUs aggregate locally first (when asked, and when there is such a machine).
    std::vector<std::vector<std::uint32_t>> groups;
    if (spec.local_aggregation && ctx.node_of.size() == n) {
        std::map<std::uint32_t, std::size_t> index;
        for (std::uint32_t w = 0; w < n; ++w) {
            const auto [it, fresh] = index.emplace(ctx.node_of[w], groups.size());
            if (fresh) groups.emplace_back();
            groups[it->second].push_back(w);
        }
        if (groups.size() == n) groups.clear();  // one GPU per machine: nothing to aggregate
    }
    const std::vector<double> tensors = tensors_of(ctx);
    if (spec.style == PsStyle::byteps) {
        if (groups.empty() && !spec.per_tensor)
            return std::make_unique<PlanCollective>(byteps(n, k, tensors, false, spec.aggregation_rate));
        // One worker-host server per machine (its first GPU's endpoint), then the k CPU servers.
        const auto hosts = static_cast<std::uint32_t>(groups.empty() ? n : groups.size());
        std::vector<std::uint32_t> server_endpoint(hosts + k);
        for (std::uint32_t h = 0; h < hosts; ++h) server_endpoint[h] = groups.empty() ? h : groups[h].front();
        for (std::uint32_t j = 0; j < k; ++j) server_endpoint[hosts + j] = n + j;
        std::vector<std::vector<ShardPiece>> pieces;
        if (spec.per_tensor && ctx.tensor_server.size() == tensors.size()) {
            // One message of several: its partitions' servers were chosen over the whole model.
            pieces.resize(hosts + k);
            for (std::uint32_t t = 0; t < tensors.size(); ++t)
                if (ctx.tensor_server[t] < hosts + k) pieces[ctx.tensor_server[t]].push_back(ShardPiece{t, tensors[t]});
        } else if (spec.per_tensor) {
            pieces = byteps_partitions(hosts, k, tensors, spec.partition_size.value());
        } else {
            const double total = std::accumulate(tensors.begin(), tensors.end(), 0.0);
            const BytePsSplit split = byteps_split(hosts, k, total);
            pieces.resize(hosts + k);
            for (std::uint32_t t = 0; t < tensors.size(); ++t)
                for (std::uint32_t s = 0; s < hosts + k; ++s)
                    pieces[s].push_back(ShardPiece{
                        t, (total > 0.0 ? tensors[t] / total : 0.0) * (s < hosts ? split.worker : split.cpu)});
        }
        PsLayout layout{n, n + k, server_endpoint, pieces, spec.per_tensor, spec.aggregation_rate, groups};
        layout.stream_share = byteps_stream_shares(hosts, k);
        return std::make_unique<PlanCollective>(ps_plan(layout));
    }
    const bool in_switch = spec.switch_aggregation && ctx.aggregation_switch > 0;
    if (spec.sharding == PsSharding::bytes && !spec.per_tensor && groups.empty() && !in_switch)
        return std::make_unique<PlanCollective>(parameter_server(n, k, ctx.bytes, spec.aggregation_rate));
    std::vector<std::uint32_t> server_endpoint(k);
    std::iota(server_endpoint.begin(), server_endpoint.end(), n);
    // The owners come from the whole model when the round holds only some of its tensors (one message).
    const auto pieces = ctx.tensor_server.empty() || spec.sharding == PsSharding::bytes
                            ? shard_tensors(spec.sharding, tensors, k, options.split_bytes)
                            : shard_by_owner(tensors, ctx.tensor_server, k);
    PsLayout layout{n, n + k, server_endpoint, pieces, spec.per_tensor, spec.aggregation_rate, groups};
    if (in_switch) {
        layout.switch_endpoint = ctx.aggregation_switch;
        layout.endpoints = std::max(layout.endpoints, ctx.aggregation_switch + 1);
        layout.segment = switch_aggregation_segment();
        layout.memory = std::max(0.0, spec.switch_memory);
    }
    return std::make_unique<PlanCollective>(ps_plan(layout));
}

RoundSize parameter_server_round_size(const ArchitectureSpec& a, const RoundShape& shape) {
    const double n = shape.workers;
    const double k = static_cast<double>(a.servers);
    if (n <= 1.0 && !(k > 0.0)) return {0.0, true};  // one worker alone: no traffic
    if (shape.whole_payload_exchange) return {2.0 * n * std::max(k, 1.0), true};
    if (a.switch_aggregation) {  // per segment and server: n pushes, one sum up, one reply down, n multicasts
        const double segments = std::ceil(shape.bytes.value() / switch_aggregation_segment()) +
                                (a.per_tensor ? shape.tensors : 1.0) * std::max(k, 1.0);
        const double g = std::min(n, std::max(1.0, shape.machine_gpus));
        const double local = a.local_aggregation && g > 1.0 ? 2.0 * n * (g - 1.0) : 0.0;
        return {(2.0 * n + 2.0) * segments + local, true, n * std::max(k, 1.0)};
    }
    // Local aggregation (ps_plan): a reduce-scatter and an all-gather ring inside each machine of g GPUs, g - 1
    // steps of g transfers each, on every machine: 2 n (g - 1) transfers.
    const double g = std::min(n, std::max(1.0, shape.machine_gpus));
    const double local = a.local_aggregation && g > 1.0 ? 2.0 * n * (g - 1.0) : 0.0;
    // Every worker keeps one stream per server it talks to, all of them in flight at once and sharing the
    // servers' links and the workers' own.
    if (a.style == PsStyle::byteps) {
        const double streams = n * (std::ceil(n / g) + k);  // every worker machine is a server too
        if (!a.per_tensor) return {(2.0 * n + 1.0) * (n + k) + local, true, streams};
        const double parts = shape.tensors + std::ceil(shape.bytes.value() / a.partition_size.value());
        return {(2.0 * n + 1.0) * parts + 4.0 * n + local, true, streams};
    }
    const double pieces = a.per_tensor ? shape.tensors : 1.0;
    const bool whole = a.sharding != PsSharding::bytes && a.split_size.value() <= 0.0;
    const double servers = whole ? (a.per_tensor ? 1.0 : std::min(k, shape.tensors)) : std::max(k, 1.0);
    return {(2.0 * n + 1.0) * servers * pieces + local, true, n * servers};
}

}  // namespace ddlsim::topo
