// The shared test support (support.hpp).
#include "tests/support/support.hpp"

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>

namespace ddlsim::testing {

namespace fs = std::filesystem;
using nlohmann::json;

json star_network(const StarNetwork& network) {
    json j{{"topology", "star"}, {"bandwidth", network.bandwidth}, {"latency", network.latency}};
    if (!network.model.empty()) j["model"] = network.model;
    if (!network.transport.empty()) j["transport"] = network.transport;
    return j;
}

json star_scenario(const StarScenario& s) {
    json j{{"workers", s.workers},
           {"model", s.model},
           {"batch_size", s.batch_size},
           {"device", s.device},
           {"network", star_network({s.bandwidth, s.latency, s.network_model, s.transport})}};
    if (s.iterations != 0) j["iterations"] = s.iterations;
    if (!s.architecture.is_null()) j["architecture"] = s.architecture;
    return j;
}

json ring_allreduce() {
    return {{"kind", "allreduce"}, {"algorithm", "ring"}};
}

json gradient_layer(const std::string& name, double bytes, const json& fwd_time, const json& bwd_time,
                    const json& update_time) {
    return {{"name", name},
            {"params", static_cast<std::int64_t>(bytes / 4)},
            {"fwd_time", fwd_time},
            {"bwd_time", bwd_time},
            {"update_time", update_time}};
}

json one_layer_model(double bytes, const json& fwd_time, const json& bwd_time, const json& update_time) {
    return {{"layers", json::array({gradient_layer("g", bytes, fwd_time, bwd_time, update_time)})}};
}

TempDir::TempDir(std::string_view tag) {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            (std::string(tag) + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter.fetch_add(1)));
    fs::remove_all(path_);
    fs::create_directories(path_);
}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

std::string TempDir::file(const std::string& name) const {
    return (path_ / name).string();
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
    write_file(file(name), text);
    return file(name);
}

std::vector<std::string> TempDir::entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

int run_shell(const std::string& command) {
    const int status = std::system(command.c_str());
    return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

CliRun run_ddlsim(const std::vector<std::string>& args, const CliOptions& options) {
    const TempDir io("ddlsim_test_cli_io");
    std::string cmd = options.env.empty() ? "" : options.env + " ";
    if (options.timeout_s > 0) cmd += "timeout " + std::to_string(options.timeout_s) + " ";
    cmd += shell_quote(DDLSIM_BINARY);
    for (const auto& a : args) cmd += " " + shell_quote(a);
    cmd += " >" + shell_quote(io.file("stdout")) + " 2>" + shell_quote(io.file("stderr")) + " <" +
           (options.stdin_file.empty() ? std::string("/dev/null") : shell_quote(options.stdin_file));
    CliRun r;
    r.code = run_shell(cmd);
    r.out = read_file(io.file("stdout"));
    r.err = read_file(io.file("stderr"));
    return r;
}

bool available_or_skip(bool present, const std::string& why) {
    if (present) return true;
    const char* code = std::getenv("DDLSIM_TEST_SKIP_CODE");
    if (code != nullptr && *code != '\0') {
        // Run alone by CTest: the exit code it reads as "skipped" (SKIP_RETURN_CODE). Nothing else of this
        // process's run is lost, since it holds this one test case only.
        std::cout << "skipped: " << why << std::endl;
        std::cerr.flush();
        std::fflush(nullptr);
        std::_Exit(std::atoi(code));
    }
    MESSAGE("skipped: " << why);
    return false;
}

bool pretend_missing(std::string_view what) {
    const std::string name = "DDLSIM_TEST_PRETEND_NO_" + std::string(what);
    const char* v = std::getenv(name.c_str());
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

}  // namespace ddlsim::testing
