// libFuzzer target: arbitrary bytes as a custom topology file ("network": {"topology":
// "custom", "file": ...}). The input is written to a per-process temporary file and
// loaded through a fixed scenario, exercising the real file path of the loader.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string file = "/tmp/ddlsim_fuzz_topology_" + std::to_string(::getpid()) + ".json";
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    const nlohmann::json scenario{{"workers", 2},
                                  {"model", "resnet50"},
                                  {"batch_size", 1},
                                  {"device", "V100"},
                                  {"network", {{"topology", "custom"}, {"file", file}}}};
    try {
        (void)ddlsim::scenario::load_scenario(scenario);
    } catch (const ddlsim::scenario::ScenarioError&) {
    }
    return 0;
}
