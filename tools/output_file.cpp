#include "tools/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <thread>

namespace ddlsim::sim {
namespace {

namespace fs = std::filesystem;

constexpr std::array<int, 5> kSignals{SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
constexpr int kMaxLinks = 40;  // as the kernel's ELOOP limit

// The temporary file being written, for the signal handler, which can only reach static
// storage: this is the one piece of global state, written only by write_file_atomically
// with the handled signals blocked.
volatile std::sig_atomic_t g_writing = 0;
char g_tmp_path[4096] = {};

extern "C" void on_interrupt(int sig) {
    if (g_writing) ::unlink(g_tmp_path);
    std::signal(sig, SIG_DFL);
    std::raise(sig);  // delivered when this handler returns: the process dies of the signal (128 + sig)
}

// Blocks the handled signals for its lifetime (so the handler never sees a half-set path).
class BlockSignals {
public:
    BlockSignals() {
        sigset_t set;
        sigemptyset(&set);
        for (int s : kSignals) sigaddset(&set, s);
        ::sigprocmask(SIG_BLOCK, &set, &old_);
    }
    ~BlockSignals() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }
    BlockSignals(const BlockSignals&) = delete;
    BlockSignals& operator=(const BlockSignals&) = delete;

private:
    sigset_t old_{};
};

std::string_view type_name(fs::file_type t) {
    switch (t) {
        case fs::file_type::directory: return "a directory";
        case fs::file_type::fifo: return "a FIFO (named pipe)";
        case fs::file_type::socket: return "a socket";
        case fs::file_type::block: return "a block device";
        case fs::file_type::character: return "a character device";
        default: return "not a regular file";
    }
}

// Test hook: DDLSIM_TEST_WRITE_PAUSE_MS holds the temporary file open that long before the rename, so
// the tests can deliver a signal while it exists.
void test_pause() {
    if (const char* ms = std::getenv("DDLSIM_TEST_WRITE_PAUSE_MS"); ms && *ms)
        std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
}

}  // namespace

std::string resolve_output_path(const std::string& path) {
    if (path.empty()) throw CliError("an output path is empty; expected a file name");
    fs::path p(path);
    std::error_code ec;
    int links = 0;
    for (; fs::symlink_status(p, ec).type() == fs::file_type::symlink; ++links) {
        if (links == kMaxLinks)
            throw CliError(fmt::format("{}: too many levels of symbolic links; expected a file to write", path));
        const fs::path target = fs::read_symlink(p, ec);
        if (ec) throw CliError(fmt::format("{}: cannot read the symbolic link: {}", path, ec.message()));
        p = target.is_absolute() ? target : p.parent_path() / target;
    }
    const std::string via = links > 0 ? fmt::format(" (a symbolic link to {})", p.string()) : "";
    const auto type = fs::status(p, ec).type();
    if (type != fs::file_type::not_found && type != fs::file_type::regular && type != fs::file_type::none)
        throw CliError(
            fmt::format("{}{}: is {}; expected a regular file or a new file name", path, via, type_name(type)));
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec))
        throw CliError(fmt::format("{}{}: cannot write there: folder \"{}\" does not exist", path, via, dir.string()));
    if (::access(dir.c_str(), W_OK) != 0)
        throw CliError(fmt::format("{}{}: cannot write there: folder \"{}\" is not writable", path, via, dir.string()));
    return p.string();
}

void check_output_path(const std::string& path) {
    (void)resolve_output_path(path);
}

bool same_file(const std::string& a, const std::string& b) {
    if (a.empty() || b.empty()) return false;
    struct stat sa {
    }, sb{};
    if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    // At least one does not exist (yet): compare where each would be created. fs::absolute first, so that a
    // relative name with no existing prefix ("r.json") is anchored like "./r.json".
    std::error_code ea, eb;
    const fs::path ra = fs::weakly_canonical(fs::absolute(a, ea), ea);
    const fs::path rb = fs::weakly_canonical(fs::absolute(b, eb), eb);
    if (ea || eb) return fs::absolute(a, ea).lexically_normal() == fs::absolute(b, eb).lexically_normal();
    return ra == rb;
}

void FileRoles::input(const std::string& path, const std::string& what) {
    if (!path.empty() && path != "-") inputs_.emplace_back(path, what);
}

void FileRoles::output(const std::string& path, const std::string& what) {
    if (path.empty() || path == "-") return;
    outputs_.push_back({path, what, resolve_output_path(path)});  // a dangling link: the file it would create
}

void FileRoles::check() const {
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
        const auto& [path, what, target] = outputs_[i];
        for (const auto& [in, in_what] : inputs_)
            if (same_file(target, in))
                throw CliError(
                    fmt::format("{} {}: is also {} ({}); expected an output that is not one of the "
                                "inputs it reads",
                                what, path, in_what, in));
        for (std::size_t k = 0; k < i; ++k)
            if (same_file(target, outputs_[k].target))
                throw CliError(fmt::format("{} {}: is also {} ({}); expected each output to name another file", what,
                                           path, outputs_[k].what, outputs_[k].path));
    }
}

void write_file_atomically(const std::string& path, const std::string& text) {
    const std::string target = resolve_output_path(path);
    const fs::path tp(target);
    const fs::path dir = tp.has_parent_path() ? tp.parent_path() : fs::path(".");
    const std::string templ = (dir / ("." + tp.filename().string() + ".ddlsim-XXXXXX")).string();
    if (templ.size() >= sizeof(g_tmp_path)) throw CliError(fmt::format("{}: path too long", path));

    // Permissions: an existing file keeps its mode; a new one gets 0666 less the umask, as open(2) would.
    struct stat st {};
    mode_t mode = 0;
    if (::stat(target.c_str(), &st) == 0) {
        mode = st.st_mode & 07777;
    } else {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        mode = 0666 & ~mask;
    }

    int fd = -1;
    {
        const BlockSignals blocked;
        std::memcpy(g_tmp_path, templ.c_str(), templ.size() + 1);
        fd = ::mkstemp(g_tmp_path);
        if (fd >= 0) g_writing = 1;
    }
    if (fd < 0)
        throw CliError(
            fmt::format("{}: cannot create a temporary file in \"{}\": {}", path, dir.string(), std::strerror(errno)));
    auto fail = [&](const std::string& what) {
        const int saved = errno;
        ::close(fd);
        const BlockSignals blocked;
        ::unlink(g_tmp_path);
        g_writing = 0;
        throw CliError(fmt::format("{}: {}: {}", path, what, std::strerror(saved)));
    };
    std::string_view rest(text);
    while (!rest.empty()) {
        const ssize_t n = ::write(fd, rest.data(), rest.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail("write failed");
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
    if (::fchmod(fd, mode) != 0) fail("cannot set the file's permissions");
    test_pause();
    if (::close(fd) != 0) {
        fd = -1;
        fail("write failed");
    }
    const BlockSignals blocked;
    if (::rename(g_tmp_path, target.c_str()) != 0) {
        const int saved = errno;
        ::unlink(g_tmp_path);
        g_writing = 0;
        throw CliError(fmt::format("{}: cannot replace the file: {}", path, std::strerror(saved)));
    }
    g_writing = 0;
}

void remove_partial_output_on_interrupt() {
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    for (int s : kSignals) sigaddset(&sa.sa_mask, s);
    for (int s : kSignals) ::sigaction(s, &sa, nullptr);
}

}  // namespace ddlsim::sim
