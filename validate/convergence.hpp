// Time to accuracy for a scenario with a `convergence` block (docs/CONTRACT.md §6): the simulated run's
// update schedule is replayed on a real proxy task (replay.hpp) and the result keys of docs/CONTRACT.md §3
// (time_to_accuracy_s, iterations_to_accuracy, curve) are produced.
//
// Proxy tasks:
//   fashion_mnist_mlp   the MLP 784-256-128-10 on Fashion-MNIST (Debian dataset-fashion-mnist)
//   fashion_mnist_cnn   the small CNN on Fashion-MNIST
//   synthetic_mlp       the MLP on validate's synthetic set (no package needed; tests)
// The proxy's iteration count is the simulated one: iteration i of the proxy happens at the
// simulated time of iteration i of the simulated model, whatever that model is.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/run.hpp"
#include "scenarios/scenario.hpp"
#include "validate/replay.hpp"

namespace ddlsim::validate {

/// The validate codec that replays a scenario's compression (ef_signsgd: signsgd with error feedback).
/// Throws std::invalid_argument for a scheme the replay cannot run.
[[nodiscard]] CodecSpec replay_codec(const models::CompressionSpec& c);

/// The task's data. Fashion-MNIST is read once per process (thread-safe) from `fashion_mnist_dir`;
/// when its files are missing, throws scenario::ScenarioError at $.convergence.task naming the package.
[[nodiscard]] ReplayData task_data(const scenario::ConvergenceSpec& c,
                                   const std::string& fashion_mnist_dir = kFashionMnistDir);

/// Throws what task_data() would when the scenario's task needs data that is missing (checked before simulating).
void require_task_data(const scenario::Scenario& s, const std::string& fashion_mnist_dir = kFashionMnistDir);

/// The replay options of a single-job scenario with a convergence block.
[[nodiscard]] ReplayOptions replay_options(const scenario::Scenario& s);

/// Replays the schedule of `r` (run with the convergence block of `s`).
[[nodiscard]] ReplayResult replay_scenario(const scenario::Scenario& s, const scenario::RunResult& r);

/// The result keys of a replay: task, target_accuracy, time_to_accuracy_s and iterations_to_accuracy
/// (null when not reached), final_accuracy, final_loss, curve, gradients, replay_wall_time_s.
[[nodiscard]] nlohmann::json convergence_json(const scenario::ConvergenceSpec& c, const ReplayResult& r);

/// The scalar keys of convergence_json, in the order a sweep CSV lists them.
[[nodiscard]] std::vector<std::string> convergence_columns();

/// replay_scenario then convergence_json: the keys `ddlsim run` and `ddlsim sweep` merge into a result.
[[nodiscard]] nlohmann::json convergence_result(const scenario::Scenario& s, const scenario::RunResult& r);

/// The proxy's statistical-efficiency factor of a job's scheme for its time to train: the iterations the proxy
/// needs to the target under the scheme (`keys`, this run's convergence_result) over those it needs under BSP on
/// the same job (sync bsp, no compression; gossip becomes a ring all-reduce), simulated and replayed here. Nullopt
/// when either run misses the target. Used by `ddlsim run` for a job with both `training` and `convergence` whose
/// scheme has no published factor and no training.statistical_efficiency.
struct ProxyFactor {
    double factor = 1.0;
    std::string source;
};
[[nodiscard]] std::optional<ProxyFactor> proxy_efficiency(const scenario::Scenario& s, const nlohmann::json& keys);

/// The summary lines `ddlsim run` prints for those keys.
[[nodiscard]] std::string convergence_summary(const nlohmann::json& keys);

}  // namespace ddlsim::validate
