// The grouping rules, one per overlap scheme (models/grouping.hpp; sources at the top of models/comm_plan.hpp).
#include "models/grouping.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

namespace ddlsim::models {
namespace {

// P3 / ByteScheduler: partitions of at most partition_size bytes; front layers first is the scheduler's job.
Groups partitions(const GroupingInput& in, const std::vector<Piece>& pieces) {
    Groups groups;
    const double max_elements = std::max(1.0, std::floor(in.overlap.partition_size.value() / in.bytes_per_param));
    for (const Piece& p : pieces) {
        const auto parts = static_cast<std::uint64_t>(std::ceil(p.elements / max_elements));
        for (std::uint64_t i = 0; i < parts; ++i) {
            Piece part = p;
            part.elements = std::min(max_elements, p.elements - static_cast<double>(i) * max_elements);
            groups.push_back({part});
        }
    }
    return groups;
}

// Wait-free backprop: one message per layer.
Groups per_layer(const GroupingInput&, const std::vector<Piece>& pieces) {
    Groups groups;
    for (const Piece& p : pieces) {
        if (groups.empty() || groups.back().back().layer != p.layer) groups.emplace_back();
        groups.back().push_back(p);
    }
    return groups;
}

// Static DDP buckets: close a bucket once it holds bucket_size bytes.
Groups ddp_buckets(const GroupingInput& in, const std::vector<Piece>& pieces) {
    Groups groups;
    const double cap = in.overlap.bucket_size.value();
    double bytes = 0.0;
    for (const Piece& p : pieces) {
        if (groups.empty() || bytes >= cap) {
            groups.emplace_back();
            bytes = 0.0;
        }
        groups.back().push_back(p);
        bytes += p.elements * in.bytes_per_param;
    }
    return groups;
}

// Horovod's background loop (horovod/common/operations.cc, RunLoopOnce): a cycle starts no earlier than cycle_time
// after the previous one and not before the previous cycle's collectives are done; it fuses every tensor ready by
// then into buffers of at most bucket_size, run one after another. So while a slow collective runs, later tensors
// accumulate into larger buffers (fewer, bigger messages). Played on the nominal schedule with the collective's
// time fitted as a + b x bytes.
Groups horovod_cycles(const GroupingInput& in, const std::vector<Piece>& pieces) {
    Groups groups;
    const double cap = in.overlap.bucket_size.value();
    const double cycle = in.overlap.cycle_time.seconds();
    const double bpp = in.bytes_per_param;
    const auto [a, b] = in.fit_collective();
    double prev_start = 0.0, prev_end = 0.0;
    bool first = true;
    std::size_t i = 0;
    while (i < pieces.size()) {
        double start = std::ceil(in.ready[pieces[i].layer] / cycle - 1e-9) * cycle;
        if (!first) start = std::max({start, prev_start + cycle, prev_end});
        first = false;
        double busy_until = start;
        while (i < pieces.size() && in.ready[pieces[i].layer] <= start + 1e-12) {
            groups.emplace_back();
            double bytes = 0.0;
            while (i < pieces.size() && in.ready[pieces[i].layer] <= start + 1e-12 &&
                   (bytes == 0.0 || bytes + pieces[i].elements * bpp <= cap)) {
                groups.back().push_back(pieces[i]);
                bytes += pieces[i].elements * bpp;
                ++i;
            }
            busy_until += a + b * bytes;
        }
        prev_start = start;
        prev_end = busy_until;
    }
    return groups;
}

// MG-WFBP: walking backward order, the next layer is merged while sending together ends no later.
Groups mgwfbp(const GroupingInput& in, const std::vector<Piece>& pieces) {
    Groups groups;
    const auto [a, b] = in.fit_collective();
    // Per layer (backward order): ready time and bytes.
    struct Item {
        double ready, bytes;
        std::vector<Piece> pieces;
    };
    std::vector<Item> items;
    for (const Piece& p : pieces) {
        if (items.empty() || items.back().pieces.back().layer != p.layer) items.push_back({in.ready[p.layer], 0.0, {}});
        items.back().bytes += p.elements * in.bytes_per_param;
        items.back().pieces.push_back(p);
    }
    double prev_end = 0.0;  // when the previous group's collective ends
    Item cur;
    bool have = false;
    for (Item& it : items) {
        if (!have) {
            cur = std::move(it);
            have = true;
            continue;
        }
        const double apart_first = std::max(cur.ready, prev_end) + a + b * cur.bytes;
        const double apart = std::max(it.ready, apart_first) + a + b * it.bytes;
        const double together = std::max(it.ready, prev_end) + a + b * (cur.bytes + it.bytes);
        if (together <= apart) {
            cur.ready = it.ready;
            cur.bytes += it.bytes;
            cur.pieces.insert(cur.pieces.end(), it.pieces.begin(), it.pieces.end());
        } else {
            prev_end = apart_first;
            groups.push_back(std::move(cur.pieces));
            cur = std::move(it);
        }
    }
    if (have) groups.push_back(std::move(cur.pieces));
    return groups;
}

// Message-count estimates: every tensor plus one partition per partition_size of the gradient; at most one bucket
// per tensor and one per bucket_size (plus the last, partly filled); one per layer (MG-WFBP merges: at most that).
double partition_messages(const OverlapSpec& o, const ModelShape& m) {
    return m.tensors + std::ceil(m.bytes.value() / o.partition_size.value());
}
double bucket_messages(const OverlapSpec& o, const ModelShape& m) {
    return std::min(m.tensors, std::ceil(m.bytes.value() / o.bucket_size.value()) + 1.0);
}
double layer_messages(const OverlapSpec&, const ModelShape& m) {
    return m.layers;
}

// Exactly one applies to an overlap block that cuts messages: priority wins over fusion (the loader refuses the
// combinations that would be ambiguous).
constexpr std::array<GroupingScheme, 5> k_schemes{{
    {"priority_partitions", "P3 / ByteScheduler partitions of at most partition_size (Jayarajan et al., SysML 2019)",
     [](const OverlapSpec& o) { return o.priority; }, partitions, partition_messages},
    {"per_layer", "wait-free backprop: one message per layer (Zhang et al., USENIX ATC 2017)",
     [](const OverlapSpec& o) { return !o.priority && o.fusion == Fusion::none; }, per_layer, layer_messages},
    {"ddp_buckets", "static buckets closed at bucket_size (PyTorch DDP, Li et al., VLDB 2020)",
     [](const OverlapSpec& o) {
         return !o.priority && o.fusion == Fusion::buffer && !(o.cycle_time > sim::Time::zero());
     },
     ddp_buckets, bucket_messages},
    {"horovod_cycles", "Horovod's fusion buffer filled per cycle (Sergeev & Del Balso, arXiv 1802.05799)",
     [](const OverlapSpec& o) { return !o.priority && o.fusion == Fusion::buffer && o.cycle_time > sim::Time::zero(); },
     horovod_cycles, bucket_messages},
    {"mgwfbp", "merged-gradient WFBP (Shi, Chu & Li, INFOCOM 2019)",
     [](const OverlapSpec& o) { return !o.priority && o.fusion == Fusion::mgwfbp; }, mgwfbp, layer_messages},
}};

}  // namespace

std::span<const GroupingScheme> grouping_schemes() {
    return k_schemes;
}

const GroupingScheme& grouping_scheme(const OverlapSpec& overlap) {
    if (!overlap.any()) throw std::logic_error("grouping_scheme: this overlap block sends one message");
    for (const GroupingScheme& s : k_schemes)
        if (s.applies(overlap)) return s;
    throw std::logic_error("grouping_scheme: no scheme applies");
}

double estimated_messages(const OverlapSpec& overlap, const ModelShape& model) {
    if (!overlap.any()) return 1.0;
    return std::max(1.0, grouping_scheme(overlap).messages(overlap, model));
}

}  // namespace ddlsim::models
