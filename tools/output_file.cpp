#include "tools/output_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace ddlsim::tools {
namespace {

namespace fs = std::filesystem;

// The temporary file being written, for the signal handler, which can only reach static
// storage: this is the one piece of global state, written only by write_file_atomically.
volatile std::sig_atomic_t g_writing = 0;
char g_tmp_path[4096] = {};

extern "C" void on_interrupt(int sig) {
    if (g_writing) ::unlink(g_tmp_path);
    std::signal(sig, SIG_DFL);
    std::raise(sig);  // die of the signal as usual (exit status 128 + sig)
}

}  // namespace

void check_output_path(const std::string& path) {
    const fs::path p(path);
    const fs::path dir = p.has_parent_path() ? p.parent_path() : ".";
    std::error_code ec;
    if (fs::is_directory(p, ec)) throw CliError(fmt::format("{}: is a directory", path));
    if (!fs::is_directory(dir, ec))
        throw CliError(fmt::format("{}: cannot write there: folder \"{}\" does not exist", path, dir.string()));
}

void write_file_atomically(const std::string& path, const std::string& text) {
    fs::path tmp = path;
    tmp += fmt::format(".tmp{}", ::getpid());
    if (tmp.string().size() >= sizeof(g_tmp_path)) throw CliError(fmt::format("{}: path too long", path));
    std::strcpy(g_tmp_path, tmp.c_str());
    g_writing = 1;
    struct Done {
        ~Done() { g_writing = 0; }
    } done;
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw CliError(fmt::format("{}: cannot open for writing", path));
        out << text;
        out.close();
        if (!out) {
            std::error_code ec;
            fs::remove(tmp, ec);
            throw CliError(fmt::format("{}: write failed", path));
        }
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) {
        fs::remove(tmp, ec);
        throw CliError(fmt::format("{}: cannot replace the file", path));
    }
}

void remove_partial_output_on_interrupt() {
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_interrupt);
}

}  // namespace ddlsim::tools
