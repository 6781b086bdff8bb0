// The grouping rules (models/grouping.hpp): exactly one per overlap block that cuts messages, and each rule's
// messages as derived by hand.
#include <doctest/doctest.h>

#include <numeric>

#include "models/grouping.hpp"

using namespace ddlsim;
using models::Fusion;
using models::OverlapSpec;
using models::Piece;

namespace {

double elements(const std::vector<Piece>& g) {
    return std::accumulate(g.begin(), g.end(), 0.0, [](double s, const Piece& p) { return s + p.elements; });
}

}  // namespace

TEST_CASE("grouping: exactly one scheme for every overlap block that cuts messages") {
    for (bool priority : {false, true})
        for (Fusion f : {Fusion::none, Fusion::buffer, Fusion::mgwfbp})
            for (double cycle : {0.0, 5e-3}) {
                OverlapSpec o;
                o.wfbp = true;
                o.priority = priority;
                o.fusion = f;
                o.cycle_time = sim::Time::seconds(cycle);
                int matches = 0;
                for (const auto& s : models::grouping_schemes()) matches += s.applies(o) ? 1 : 0;
                CHECK(matches == 1);
                CHECK(models::grouping_scheme(o).applies(o));
            }
    CHECK_THROWS_AS((void)models::grouping_scheme(OverlapSpec{}), std::logic_error);
}

TEST_CASE("grouping: per layer, DDP buckets and partitions by hand") {
    // Three layers in backward order: layer 2 (two tensors, 1e6 + 1e6 elements), layer 1 (3e6), layer 0 (0.5e6).
    const std::vector<Piece> pieces{{2, 1, 1e6}, {2, 0, 1e6}, {1, 0, 3e6}, {0, 0, 0.5e6}};
    OverlapSpec o;
    o.wfbp = true;
    models::GroupingInput in{o, 4.0, {3.0, 2.0, 1.0}, [] { return std::pair{0.0, 0.0}; }};

    auto groups = models::grouping_scheme(o).rule(in, pieces);  // per layer
    REQUIRE(groups.size() == 3);
    CHECK(groups[0].size() == 2);
    CHECK(elements(groups[1]) == 3e6);

    o.fusion = Fusion::buffer;
    o.bucket_size = sim::Bytes{6e6};  // 1.5e6 elements of 4 bytes: a bucket closes once it holds >= 6 MB
    groups = models::grouping_scheme(o).rule(in, pieces);
    // 4 MB < 6 MB, so the second tensor joins (8 MB); the bucket is then full, and so is {3e6} (12 MB) at once.
    REQUIRE(groups.size() == 3);
    CHECK(elements(groups[0]) == 2e6);
    CHECK(elements(groups[1]) == 3e6);
    CHECK(elements(groups[2]) == 0.5e6);

    o.fusion = Fusion::none;
    o.priority = true;
    o.partition_size = sim::Bytes{4e6};  // 1e6 elements
    groups = models::grouping_scheme(o).rule(in, pieces);
    CHECK(groups.size() == 1 + 1 + 3 + 1);  // ceil(n / 1e6) per tensor
    for (const auto& g : groups) CHECK(elements(g) <= 1e6);
}

TEST_CASE("grouping: MG-WFBP merges when the start-up it saves exceeds the wait") {
    const std::vector<Piece> pieces{{1, 0, 1e6}, {0, 0, 1e6}};  // layer 1 ready at 1 s, layer 0 at 1.001 s
    OverlapSpec o;
    o.wfbp = true;
    o.fusion = Fusion::mgwfbp;
    for (double a : {0.01, 1e-6}) {
        // b = 1e-9 s/byte: 4 ms per layer. Apart: the first ends at 1 + a + 4 ms (> 1.001), the second at
        // 1 + 2a + 8 ms; together: 1.001 + a + 8 ms. Merge iff together <= apart, i.e. a >= 1 ms.
        models::GroupingInput in{o, 4.0, {1.001, 1.0}, [a] { return std::pair{a, 1e-9}; }};
        const auto groups = models::grouping_scheme(o).rule(in, pieces);
        CHECK(groups.size() == (a > 1e-3 ? 1U : 2U));
    }
}
