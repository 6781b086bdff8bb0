// `ddlsim validate` and `ddlsim calibrate` (docs/CONTRACT.md §5) as library calls: calibrate on this machine,
// predict every configuration of the plan with the simulator before running it for real, run it,
// and report predicted against measured with the relative error, plus the checks CI relies on
// (the loss decreases; ring all-reduce and the parameter server produce the same averaged
// gradient; error feedback keeps the residual bounded; every error is finite).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/calibrate.hpp"
#include "validate/trainer.hpp"

namespace ddlsim::validate {

struct ValidateOptions {
    Backend backend = Backend::cpu;
    bool quick = false;
    std::string profile = "calib.json";  ///< where the fitted profile is written
    std::string data_dir = kFashionMnistDir;
    double rate_bps = 100e6;  ///< the calibration link rate; other rates are held out
    bool namespaces = true;   ///< false: loopback even as root
};

struct CalibrateOptions {
    Backend backend = Backend::cpu;
    ModelKind model = ModelKind::mlp;
    std::uint32_t batch = 32;
    bool quick = false;
    std::string data_dir = kFashionMnistDir;
    double rate_bps = 100e6;
    bool namespaces = true;
};

/// One configuration of the plan.
struct PlannedRun {
    RunConfig config;
    bool held_out = true;
};

struct Check {
    std::string name;
    bool passed = false;
    std::string detail;
};

struct ValidationResult {
    nlohmann::json report;
    std::vector<Check> checks;
    /// The fitted profile(s): path (o.profile, and beside it one per further model) and JSON text.
    /// The caller writes them, only once the run is complete, so an interrupted run keeps the old ones.
    std::vector<std::pair<std::string, std::string>> profiles;
    [[nodiscard]] bool passed() const;
};

/// The configurations `validate` runs (quick: about three minutes on two cores).
[[nodiscard]] std::vector<PlannedRun> validation_plan(bool quick, double rate_bps, Backend backend);

/// Calibrates, predicts and runs the plan, then checks the results; prints the table on `out` and
/// progress on `log`. The report and the profile(s) are returned, not written.
[[nodiscard]] ValidationResult run_validation(const ValidateOptions& o, std::ostream& out, std::ostream& log);

/// Calibrates one model and returns the profile JSON; prints what was measured on `out`.
[[nodiscard]] nlohmann::json run_calibration(const CalibrateOptions& o, std::ostream& out, std::ostream& log);

/// Error feedback on real gradients in one process: the measured contraction q = max ||e'|| / ||p||
/// of the compressor and the residual against the bound q / (1 - q) x max ||g|| that follows from
/// ||e_{t+1}|| <= q (||e_t|| + ||g_t||) (Stich et al., NeurIPS 2018; Karimireddy et al., ICML 2019).
struct EfStudy {
    std::string codec;
    std::uint32_t steps = 0;
    double contraction = 0.0;
    double theory = 0.0;  ///< top-k: sqrt(1 - k/d); 0 when none is known
    double max_residual = 0.0;
    double max_gradient = 0.0;
    double bound = 0.0;
    std::vector<double> residuals;
    [[nodiscard]] bool passed() const;
};
[[nodiscard]] EfStudy error_feedback_study(const CodecSpec& spec, Backend backend, const Dataset& train,
                                           std::uint32_t steps, std::uint32_t batch, std::uint64_t seed);

}  // namespace ddlsim::validate
