// The resolved scenario (result key `resolved_scenario`): a loaded Scenario written back as scenario JSON with
// every default applied — device precision, peak and efficiency, topology and its sizes, bandwidths and latencies
// as exact unit strings, algorithm, servers, placement, sync, compression and overlap parameters, seed. Loading it
// gives the same plain structs, so `ddlsim run` on it reproduces the result (tests/scenarios/test_properties.cpp,
// tests/tools/test_hardening.cpp).
//
// It is built from the plain structs in one place (resolved.cpp), one line per key: a key added to the loader
// gets its line there, next to its siblings.
#pragma once

#include <nlohmann/json.hpp>

#include "scenarios/scenario.hpp"

namespace ddlsim::scenario {

/// The scenario `s` with every default applied, as scenario JSON that load_scenario accepts.
[[nodiscard]] nlohmann::json resolved_scenario(const Scenario& s);

}  // namespace ddlsim::scenario
