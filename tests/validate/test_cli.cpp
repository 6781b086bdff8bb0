// The validate and calibrate subcommands against bad input: exit 2 and one line on stderr, before
// any training starts, and no output file left behind.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "validate/nn.hpp"

namespace fs = std::filesystem;

namespace {

struct Outcome {
    int status = -1;
    std::string err;
};

Outcome run(const std::string& args) {
    const fs::path err = fs::temp_directory_path() / ("ddlsim_validate_cli_" + std::to_string(::getpid()));
    const std::string cmd = std::string(DDLSIM_BINARY) + " " + args + " > /dev/null 2> " + err.string();
    const int raw = std::system(cmd.c_str());
    Outcome o;
    o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    std::ifstream in(err);
    std::stringstream ss;
    ss << in.rdbuf();
    o.err = ss.str();
    fs::remove(err);
    return o;
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
    const std::vector<std::string> bad{"validate",
                                       "validate --out /nonexistent-folder/report.json",
                                       "validate --backend tpu --out " + out,
                                       "validate --rate '10 gigs' --out " + out,
                                       "validate --rate 1kbps --out " + out,
                                       "calibrate --model resnet --out " + out,
                                       "calibrate --batch 0 --out " + out,
                                       "frobnicate"};
    for (const auto& args : bad) {
        CAPTURE(args);
        const auto o = run(args);
        CHECK(o.status == 2);
        CHECK(lines(o.err) == 1);
        CHECK(o.err.rfind("error: ", 0) == 0);
        CHECK(!fs::exists(out));
    }
    CHECK(run("frobnicate").err.find("validate or calibrate") != std::string::npos);
    std::string why;
    if (!ddlsim::validate::backend_available(ddlsim::validate::Backend::cuda, &why)) {
        const auto o = run("calibrate --backend cuda --out " + out);
        CHECK(o.status == 2);
        CHECK(o.err.find("--backend cuda") != std::string::npos);
        CHECK(!fs::exists(out));
    }
    fs::remove_all(dir);
}
