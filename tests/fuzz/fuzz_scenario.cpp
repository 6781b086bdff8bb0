// libFuzzer target: arbitrary bytes as a scenario file. The loader must either accept
// the input or throw ScenarioError (bad input, exit code 2) — never crash, hang, leak
// or throw anything else. Built with -DDDLSIM_FUZZ=ON (clang); seed corpus: scenarios/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "scenarios/json_reader.hpp"
#include "scenarios/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const auto j = ddlsim::scenario::parse_strict(text);
        (void)ddlsim::scenario::load_scenario(j, DDLSIM_SOURCE_DIR "/scenarios/examples");
    } catch (const ddlsim::scenario::ScenarioError&) {
        // Bad input, reported with a path: the expected outcome for most inputs.
    }
    return 0;  // any other exception escapes and is reported by libFuzzer as a crash
}
