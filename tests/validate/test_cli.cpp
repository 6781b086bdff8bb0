// The validate and calibrate subcommands against bad input: exit 2 and one line on stderr, before
// any training starts, and no output file left behind.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/support.hpp"
#include "validate/nn.hpp"

namespace fs = std::filesystem;

namespace {

// The built ddlsim with `args`: its exit status and stderr.
ddlsim::testing::CliRun run(const std::vector<std::string>& args) {
    return ddlsim::testing::run_ddlsim(args);
}

int lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n' ? 1 : 0;
    return n;
}

}  // namespace

TEST_CASE("validate / calibrate: bad input exits 2 with one line, before any work") {
    const fs::path dir = fs::temp_directory_path() / ("ddlsim_validate_cli_dir_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string out = (dir / "report.json").string();
    const std::vector<std::vector<std::string>> bad{{"validate"},
                                                    {"validate", "--out", "/nonexistent-folder/report.json"},
                                                    {"validate", "--backend", "tpu", "--out", out},
                                                    {"validate", "--rate", "10 gigs", "--out", out},
                                                    {"validate", "--rate", "1kbps", "--out", out},
                                                    {"calibrate", "--model", "resnet", "--out", out},
                                                    {"calibrate", "--batch", "0", "--out", out},
                                                    {"frobnicate"}};
    for (const auto& args : bad) {
        std::string command;
        for (const auto& a : args) command += (command.empty() ? "" : " ") + ddlsim::testing::shell_quote(a);
        CAPTURE(command);
        const auto o = run(args);
        CHECK(o.code == 2);
        CHECK(lines(o.err) == 1);
        CHECK(o.err.rfind("error: ", 0) == 0);
        CHECK(!fs::exists(out));
    }
    CHECK(run({"frobnicate"}).err.find("validate or calibrate") != std::string::npos);
    std::string why;
    if (!ddlsim::validate::backend_available(ddlsim::validate::Backend::cuda, &why)) {
        const auto o = run({"calibrate", "--backend", "cuda", "--out", out});
        CHECK(o.code == 2);
        CHECK(o.err.find("--backend cuda") != std::string::npos);
        CHECK(!fs::exists(out));
    }
    fs::remove_all(dir);
}
