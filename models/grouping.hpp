// How an overlap scheme cuts one iteration's gradient into messages: one grouping rule per scheme, each its own
// function in grouping.cpp, chosen once per job (grouping_scheme) by the overlap block. The rules and their
// sources are listed at the top of models/comm_plan.hpp; a new scheme is a function in grouping.cpp and one entry
// in its table (grouping_schemes()).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "models/job.hpp"

namespace ddlsim::models {

/// A piece of one gradient tensor.
struct Piece {
    std::uint32_t layer = 0;   ///< forward index
    std::uint32_t tensor = 0;  ///< index within the layer
    double elements = 0.0;
};

using Groups = std::vector<std::vector<Piece>>;

/// What a rule may look at besides the pieces (in backward order).
struct GroupingInput {
    const OverlapSpec& overlap;
    double bytes_per_param = 4.0;
    /// Per layer (forward index): when its backward ends on the nominal schedule (worker 0, no stragglers),
    /// in seconds from the start of backward.
    std::vector<double> ready;
    /// One collective's contention-free time on the job's fabric as a + b x bytes (a: s, b: s/byte); called only
    /// by the rules that need it (Horovod cycles, MG-WFBP).
    std::function<std::pair<double, double>()> fit_collective;
};

using GroupingRule = Groups (*)(const GroupingInput&, const std::vector<Piece>&);

/// The model as the up-front limits see it, before the job's compute profile exists.
struct ModelShape {
    sim::Bytes bytes;      ///< the dense gradient
    double tensors = 1.0;  ///< gradient tensors
    double layers = 1.0;
};

/// One overlap scheme's grouping.
struct GroupingScheme {
    std::string_view name;         ///< "per_layer", "ddp_buckets", ...
    std::string_view description;  ///< with its source
    /// Whether this scheme is the one `overlap` asks for (exactly one scheme matches an overlap that cuts messages).
    bool (*applies)(const OverlapSpec& overlap) = nullptr;
    GroupingRule rule = nullptr;
    /// Messages per iteration (an upper estimate, for the up-front event and memory limits).
    double (*messages)(const OverlapSpec& overlap, const ModelShape& model) = nullptr;
};

/// Every grouping scheme.
[[nodiscard]] std::span<const GroupingScheme> grouping_schemes();
/// The scheme of an overlap block that cuts messages (overlap.any()); throws std::logic_error otherwise.
[[nodiscard]] const GroupingScheme& grouping_scheme(const OverlapSpec& overlap);
/// Messages per iteration of a synchronous job's gradient: 1 without overlap, else its scheme's estimate.
[[nodiscard]] double estimated_messages(const OverlapSpec& overlap, const ModelShape& model);

}  // namespace ddlsim::models
