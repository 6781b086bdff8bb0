#include "tools/validate_cli.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "scenarios/json_reader.hpp"
#include "tools/output_file.hpp"
#include "validate/calibrate.hpp"
#include "validate/validation.hpp"

namespace ddlsim::tools {
namespace {

using sim::CliError;

validate::Backend parse_backend(const std::string& b) {
    std::string why;
    const validate::Backend backend = b == "cuda" ? validate::Backend::cuda : validate::Backend::cpu;
    if (!validate::probe_backend(backend, &why)) throw CliError(fmt::format("--backend {}: {}", b, why));
    return backend;
}

double parse_rate(const std::string& r) {
    try {
        const auto bw = scenario::read_bandwidth(nlohmann::json(r), "--rate");
        const double bps = bw.bits_per_s();
        if (bps < 1e6 || bps > 1e11) throw CliError(fmt::format("--rate: expected 1Mbps .. 100Gbps, got \"{}\"", r));
        return bps;
    } catch (const scenario::ScenarioError& e) {
        throw CliError(fmt::format("--rate: {}", e.what()));
    }
}

std::string default_profile(const std::string& out) {
    const std::filesystem::path p(out);
    return (p.has_parent_path() ? p.parent_path() / "calib.json" : std::filesystem::path("calib.json")).string();
}

}  // namespace

void add_validate_commands(CLI::App& app, ValidateCliOptions& o) {
    const auto backends = CLI::IsMember({"cpu", "cuda"});
    o.validate = app.add_subcommand("validate", "real data-parallel training: calibrate, predict, measure, compare");
    o.validate->add_option("--backend", o.backend, "cpu (Eigen, default) or cuda (cuBLAS; needs a GPU)")
        ->check(backends);
    o.validate->add_flag("--quick", o.quick, "the short plan (about three minutes on two cores)");
    o.validate->add_option("--out", o.out, "write the report JSON here")->required();
    o.validate->add_option("--profile", o.profile, "write the fitted profile here (default: calib.json beside --out)");
    o.validate->add_option("--rate", o.rate, "calibration link rate, e.g. 100Mbps (others are held out)");
    o.validate->add_option("--data", o.data, "folder of the Fashion-MNIST IDX files (synthetic data when absent)");
    o.validate->add_flag("--loopback", o.loopback, "loopback TCP even as root (no namespaces, no shaping)");

    o.calibrate = app.add_subcommand("calibrate", "measure compute, codec and network costs; write a profile");
    o.calibrate->add_option("--backend", o.backend, "cpu (default) or cuda")->check(backends);
    o.calibrate->add_option("--model", o.model, "mlp (default) or cnn")->check(CLI::IsMember({"mlp", "cnn"}));
    o.calibrate->add_option("--batch", o.batch, "samples per iteration (default 32)")->check(CLI::Range(1, 4096));
    o.calibrate->add_flag("--quick", o.quick, "fewer repetitions");
    o.calibrate->add_option("--out", o.out, "write the profile JSON here")->required();
    o.calibrate->add_option("--rate", o.rate, "link rate of the measured network, e.g. 100Mbps");
    o.calibrate->add_option("--data", o.data, "folder of the Fashion-MNIST IDX files (synthetic data when absent)");
    o.calibrate->add_flag("--loopback", o.loopback, "loopback TCP even as root");
}

std::optional<int> run_validate_commands(const ValidateCliOptions& o) {
    if (o.validate != nullptr && o.validate->parsed()) {
        validate::ValidateOptions v;
        v.profile = o.profile.empty() ? default_profile(o.out) : o.profile;
        sim::FileRoles roles;  // both written only when the run completes; neither may be the other
        roles.output(o.out, "--out");
        roles.output(v.profile, o.profile.empty() ? "the profile beside --out" : "--profile");
        roles.check();
        v.backend = parse_backend(o.backend);
        v.quick = o.quick;
        v.data_dir = o.data;
        v.rate_bps = parse_rate(o.rate);
        v.namespaces = !o.loopback;
        const auto result = validate::run_validation(v, std::cout, std::cerr);
        // Only a complete run replaces calib.json (each file atomically): an interrupted one leaves the old profile.
        for (const auto& [path, text] : result.profiles) sim::write_file_atomically(path, text);
        sim::write_file_atomically(o.out, result.report.dump(2) + "\n");
        if (!result.passed()) {
            std::string failed;
            for (const auto& c : result.checks)
                if (!c.passed) failed += (failed.empty() ? "" : ", ") + c.name;
            std::cerr << fmt::format("error: validation checks failed: {} (report: {})\n", failed, o.out);
            return 1;
        }
        return 0;
    }
    if (o.calibrate != nullptr && o.calibrate->parsed()) {
        sim::check_output_path(o.out);
        validate::CalibrateOptions c;
        c.backend = parse_backend(o.backend);
        c.model = o.model == "cnn" ? validate::ModelKind::cnn : validate::ModelKind::mlp;
        c.batch = o.batch;
        c.quick = o.quick;
        c.data_dir = o.data;
        c.rate_bps = parse_rate(o.rate);
        c.namespaces = !o.loopback;
        const auto profile = validate::run_calibration(c, std::cout, std::cerr);
        sim::write_file_atomically(o.out, profile.dump(2) + "\n");
        std::cout << "profile written to " << o.out << "\n";
        return 0;
    }
    return std::nullopt;
}

}  // namespace ddlsim::tools
