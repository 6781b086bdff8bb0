// Test helpers on top of the scenario loader: run a scenario's first job, or name the key a scenario is refused at.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"

namespace ddlsim::testing {

/// Nodes of 8 GPUs (NVLink at `intra`, 400 Gbit/s between nodes), links of 1 ns and no transport overheads: on it a
/// collective costs its bytes at the links' rates and nothing else.
inline nlohmann::json idle_node_network(const std::string& intra = "450GBps") {
    return {{"topology", "two_tier"}, {"gpus_per_node", 8}, {"intra_bandwidth", intra}, {"intra_latency", "1ns"},
            {"bandwidth", "400Gbps"}, {"latency", "1ns"},   {"transport", "ideal"}};
}

/// A Llama-style model of `layers` blocks (hidden 1024, 16 heads, 8 key/value heads of 64) over 1,024 tokens on
/// `workers` H100s in bf16 on idle_node_network(intra), 2 micro-batches of 1 sequence, one iteration: the
/// model-parallel tests' job, to which each adds its `parallelism`.
inline nlohmann::json small_llama_job(int layers, std::uint32_t workers, const std::string& intra = "450GBps") {
    return {
        {"workers", workers},
        {"model",
         {{"transformer",
           {{"layers", layers}, {"hidden", 1024}, {"heads", 16}, {"kv_heads", 8}, {"seq_len", 1024}, {"vocab", 32000}}},
          {"dtype", "bf16"}}},
        {"batch_size", 1},
        {"gradient_accumulation", 2},
        {"iterations", 1},
        {"device", {{"name", "H100"}, {"precision", "bf16"}}},
        {"network", idle_node_network(intra)}};
}

/// The first job's result of running scenario `j`.
inline models::JobResult run_first_job(const nlohmann::json& j) {
    return scenario::run_scenario(scenario::load_scenario(j)).jobs.at(0);
}

/// The JSON path a scenario is refused at ("accepted" when it loads).
inline std::string refused_at(const nlohmann::json& j) {
    try {
        (void)scenario::load_scenario(j);
    } catch (const scenario::ScenarioError& e) {
        return e.path();
    }
    return "accepted";
}

}  // namespace ddlsim::testing
