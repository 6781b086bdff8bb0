// Where a model-parallel job's ranks sit among its workers (models/job.hpp ParallelismSpec: rank, order, placement).
#include <fmt/format.h>

#include <stdexcept>
#include <string_view>

#include "models/job.hpp"

namespace ddlsim::models {

std::array<std::uint8_t, 4> ParallelismSpec::order_dims() const {
    static constexpr std::string_view names[] = {"tp", "cp", "dp", "pp"};
    std::array<std::uint8_t, 4> dims{};
    std::size_t n = 0;
    bool seen[4] = {false, false, false, false}, ep = false;
    std::string_view rest = order, previous;
    auto bad = [&](const std::string& why) {
        return std::invalid_argument(fmt::format(
            "expected \"tp\", \"cp\", \"dp\" and \"pp\" once each joined by '-', innermost first, with \"ep\" "
            "optionally just before \"dp\" (e.g. \"tp-cp-ep-dp-pp\", \"tp-cp-pp-dp\"): {}",
            why));
    };
    while (true) {
        const std::size_t dash = rest.find('-');
        const std::string_view token = rest.substr(0, dash);
        if (token == "ep") {
            if (ep) throw bad("\"ep\" twice");
            ep = true;
        } else {
            std::size_t d = 0;
            while (d < 4 && names[d] != token) ++d;
            if (d == 4) throw bad(fmt::format("\"{}\" is no dimension", token));
            if (seen[d]) throw bad(fmt::format("\"{}\" twice", token));
            if (previous == "ep" && d != 2) throw bad("\"ep\" not just before \"dp\"");
            seen[d] = true;
            dims[n++] = static_cast<std::uint8_t>(d);
        }
        previous = token;
        if (dash == std::string_view::npos) break;
        rest.remove_prefix(dash + 1);
    }
    if (previous == "ep") throw bad("\"ep\" not just before \"dp\"");
    for (std::size_t d = 0; d < 4; ++d)
        if (!seen[d]) throw bad(fmt::format("\"{}\" missing", names[d]));
    return dims;
}

std::vector<std::uint32_t> ParallelismSpec::placement(std::uint32_t workers) const {
    const std::array<std::uint8_t, 4> dims = order_dims();
    const std::uint32_t size[4] = {tensor, context, data(workers), pipeline};
    std::vector<std::uint32_t> at(workers);
    for (std::uint32_t r = 0; r < workers; ++r) {
        const std::uint32_t coord[4] = {r % tensor, r / tensor % context, r / replica_ranks(), stage_of(r)};
        std::uint32_t w = 0, stride = 1;
        for (const std::uint8_t d : dims) {
            w += coord[d] * stride;
            stride *= size[d];
        }
        at[r] = w;
    }
    return at;
}

}  // namespace ddlsim::models
