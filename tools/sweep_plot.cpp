#include "tools/sweep_plot.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

extern char** environ;  // NOLINT: POSIX, for posix_spawnp

namespace ddlsim::tools {

namespace fs = std::filesystem;

void check_plot_path(const std::string& flag, const std::string& path) {
    const auto ext = fs::path(path).extension().string();
    if (ext != ".png" && ext != ".svg")
        throw CliError(fmt::format("{} {}: expected a .png or .svg file name", flag, path));
    check_output_path(path);
}

Plotter find_plotter(const std::string& flag, const std::string& script, const char* env) {
    std::string path;
    if (const char* e = std::getenv(env); e && *e) path = e;
#ifdef DDLSIM_SOURCE_DIR
    if (path.empty()) path = std::string(DDLSIM_SOURCE_DIR) + "/tools/" + script;
#endif
    std::error_code ec;
    if (path.empty() || !fs::is_regular_file(path, ec))
        throw CliError(fmt::format("{}: cannot find tools/{}{}; set {} to its path", flag, script,
                                   path.empty() ? "" : " at " + path, env));
    std::vector<std::string> pythons;
    if (const char* e = std::getenv("DDLSIM_PYTHON"); e && *e) pythons.emplace_back(e);
    pythons.emplace_back("python3");
    pythons.emplace_back("/usr/bin/python3");
    for (const auto& py : pythons) {
        const std::string cmd = fmt::format("'{}' -c 'import matplotlib' >/dev/null 2>&1", py);
        if (std::system(cmd.c_str()) == 0) return {py, path};  // NOLINT(cert-env33-c): fixed command
    }
    throw CliError(
        fmt::format("{}: needs python3 with matplotlib; install the Debian package python3-matplotlib", flag));
}

int run_plotter(const Plotter& p, const std::vector<std::string>& args) {
    std::vector<std::string> all{p.python, p.script};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (const auto& a : all) argv.push_back(const_cast<char*>(a.c_str()));  // NOLINT: posix_spawn's signature
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string resolve_relative_to(const std::vector<VarySpec>& specs, const std::string& relative_to) {
    const auto eq = relative_to.find('=');
    std::string keys;
    for (const auto& s : specs) keys += (keys.empty() ? "" : ", ") + s.path;
    if (eq == std::string::npos || eq == 0)
        throw CliError(fmt::format("--relative-to {}: expected KEY=VALUE with KEY one of the varied keys ({})",
                                   relative_to, keys));
    const std::string key = relative_to.substr(0, eq), value = relative_to.substr(eq + 1);
    const auto spec = std::find_if(specs.begin(), specs.end(), [&](const VarySpec& s) { return s.path == key; });
    if (spec == specs.end())
        throw CliError(
            fmt::format("--relative-to {}: {} is not a varied key; expected one of {}", relative_to, key, keys));
    const auto as_json = [](const std::string& text) {
        return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);  // discarded when not JSON
    };
    const auto wanted = as_json(value);
    for (const auto& v : spec->values) {
        if (v == value) return key + "=" + v;
        if (!wanted.is_discarded() && as_json(v) == wanted) return key + "=" + v;
    }
    std::string values;
    for (const auto& v : spec->values) values += (values.empty() ? "" : ", ") + v;
    throw CliError(
        fmt::format("--relative-to {}: {} is not one of the values of {} ({})", relative_to, value, key, values));
}

std::vector<std::string> sweep_plot_args(const std::vector<VarySpec>& specs, const SweepOptions& opts) {
    std::string keys, log_keys;
    for (const auto& s : specs) {
        keys += (keys.empty() ? "" : ",") + s.path;
        if (s.geometric) log_keys += (log_keys.empty() ? "" : ",") + s.path;
    }
    std::vector<std::string> args{opts.out, opts.plot, "--keys",
                                  keys,     "--title", fs::path(opts.scenario_file).stem().string()};
    if (!log_keys.empty()) args.insert(args.end(), {"--log-keys", log_keys});
    if (!opts.relative_to.empty())
        args.insert(args.end(), {"--relative-to", resolve_relative_to(specs, opts.relative_to)});
    if (!opts.plot_describe.empty()) args.insert(args.end(), {"--describe", opts.plot_describe});
    return args;
}

void plot_run_curve(const Plotter& p, const nlohmann::json& result, const std::string& result_file,
                    const std::string& plot, const std::string& title) {
    std::string input = result_file;
    if (input.empty()) {
        input = (fs::temp_directory_path() / fmt::format("ddlsim-curve-{}.json", ::getpid())).string();
        write_file_atomically(input, result.dump() + "\n");
    }
    const int rc = run_plotter(p, {input, plot, "--title", title, "--labels", title});
    std::error_code ec;
    if (result_file.empty()) fs::remove(input, ec);
    if (rc != 0) throw std::runtime_error(fmt::format("{} {} failed (exit {})", p.python, p.script, rc));
}

}  // namespace ddlsim::tools
