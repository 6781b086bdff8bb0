// Shared test support for both test executables (ddlsim_tests, ddlsim_validate_tests): scenario builders on an
// idle star, a temporary directory, the runner of the built ddlsim executable, and skips that CTest reports as
// skipped. Depends on nothing of ddlsim's own (plain JSON, files and processes), so any test may use it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddlsim::testing {

// ---------------------------------------------------------------------------------------------------------
// Scenario builders. Key order does not matter (nlohmann::json objects are sorted); keys a test adds or
// changes afterwards are set on the returned JSON.

/// The "network" object of a star: {"topology": "star", "bandwidth", "latency"}, plus "model" and "transport"
/// where they are not empty (absent: the loader's defaults, the flow model and the default transport).
struct StarNetwork {
    std::string bandwidth = "10Gbps";
    std::string latency = "5us";
    std::string model{};      ///< "flow" or "analytic"; empty: not written
    std::string transport{};  ///< "ideal", "tcp", ...; empty: not written
};
[[nodiscard]] nlohmann::json star_network(const StarNetwork& network = {});

/// A one-job scenario on a star (its network: star_network of bandwidth, latency, network_model, transport).
/// `iterations` 0 and a null `architecture` are not written (the loader's defaults). Designated initializers name
/// what differs from the defaults:
///     star_scenario({.workers = 8, .iterations = 4, .transport = "ideal"})
struct StarScenario {
    int workers = 4;
    nlohmann::json model = "resnet50";
    int batch_size = 32;
    int iterations = 0;
    nlohmann::json device = "V100";
    std::string bandwidth = "10Gbps";
    std::string latency = "5us";
    std::string network_model{};  ///< "flow" or "analytic"; empty: not written
    std::string transport{};      ///< empty: not written
    nlohmann::json architecture{};
};
[[nodiscard]] nlohmann::json star_scenario(const StarScenario& scenario);

/// {"kind": "allreduce", "algorithm": "ring"}.
[[nodiscard]] nlohmann::json ring_allreduce();

/// A custom-model layer `name` of `bytes` fp32 gradient bytes (params = bytes / 4) with explicit times
/// (numbers in seconds or strings with a unit, written as given).
[[nodiscard]] nlohmann::json gradient_layer(const std::string& name, double bytes, const nlohmann::json& fwd_time = 0,
                                            const nlohmann::json& bwd_time = 0, const nlohmann::json& update_time = 0);

/// {"layers": [gradient_layer("g", bytes, fwd_time, bwd_time, update_time)]}: one layer of `bytes` gradients; with
/// the default zero times a communication-only model, so an iteration is its communication.
[[nodiscard]] nlohmann::json one_layer_model(double bytes, const nlohmann::json& fwd_time = 0,
                                             const nlohmann::json& bwd_time = 0, const nlohmann::json& update_time = 0);

// ---------------------------------------------------------------------------------------------------------
// Files

/// A fresh directory under the system temp directory, <tag>_<pid>_<n>, unique per process and per use, removed
/// with everything in it on scope exit.
class TempDir {
public:
    explicit TempDir(std::string_view tag = "ddlsim_test");
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    [[nodiscard]] const std::filesystem::path& path() const { return path_; }
    /// The path of `name` in this directory (which need not exist).
    [[nodiscard]] std::string file(const std::string& name) const;
    [[nodiscard]] std::string operator/(const std::string& name) const { return file(name); }
    /// Writes `text` to `name` in this directory and returns its path.
    std::string write(const std::string& name, const std::string& text) const;
    /// The names of the entries in this directory, sorted.
    [[nodiscard]] std::vector<std::string> entries() const;

private:
    std::filesystem::path path_;
};

/// The whole file, byte for byte; empty when it cannot be read.
[[nodiscard]] std::string read_file(const std::string& path);
/// Replaces the file's contents with `text`.
void write_file(const std::string& path, const std::string& text);

// ---------------------------------------------------------------------------------------------------------
// Processes

/// `s` in single quotes for /bin/sh, embedded single quotes escaped.
[[nodiscard]] std::string shell_quote(const std::string& s);

/// Runs `command` with /bin/sh (std::system); its exit status, or -1 when it did not exit normally (a signal).
[[nodiscard]] int run_shell(const std::string& command);

/// What a run of the ddlsim executable left: its exit status (-1: it did not exit normally, e.g. a crash) and
/// everything it wrote to stdout and stderr.
struct CliRun {
    int code = -1;
    std::string out;
    std::string err;
};
struct CliOptions {
    std::string env;         ///< shell assignments before the command ("A=1 B=2"); empty: none
    int timeout_s = 0;       ///< > 0: run under timeout(1), which exits 124 when the limit passes
    std::string stdin_file;  ///< standard input from this file; empty: /dev/null
};
/// Runs the built ddlsim (DDLSIM_BINARY) with `args` (each quoted), stdin from /dev/null (or stdin_file), stdout and
/// stderr captured through files in a temporary directory.
[[nodiscard]] CliRun run_ddlsim(const std::vector<std::string>& args, const CliOptions& options = {});

// ---------------------------------------------------------------------------------------------------------
// Skips. A test whose prerequisite (python3-matplotlib, a GPU, the Fashion-MNIST package, ...) is missing is
// reported as skipped, never as passed:
//     if (!testing::available_or_skip(have_it, "python3-matplotlib not installed")) return;
// CTest runs every test case alone with DDLSIM_TEST_SKIP_CODE=77 in its environment and SKIP_RETURN_CODE 77
// (CMakeLists.txt), so there the process prints the reason and exits 77, and ctest shows "***Skipped". A test
// binary run directly (no DDLSIM_TEST_SKIP_CODE) prints "skipped: <why>" and the case returns, so the rest of
// the run goes on.

/// `present`, when true. Otherwise skips the current test case as above: exits with DDLSIM_TEST_SKIP_CODE when it is
/// set, else prints the reason and returns false.
[[nodiscard]] bool available_or_skip(bool present, const std::string& why);

/// True when the environment variable DDLSIM_TEST_PRETEND_NO_<what> is set to a non-empty value other than "0":
/// the checks of a prerequisite honour it, so a machine that has it can check that its absence is a skip.
[[nodiscard]] bool pretend_missing(std::string_view what);

}  // namespace ddlsim::testing
