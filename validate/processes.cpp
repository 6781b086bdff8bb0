#include "validate/processes.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

#include "validate/netns.hpp"
#include "validate/nn.hpp"

namespace ddlsim::validate {
namespace {

void write_all(int fd, const char* data, std::size_t n) {
    while (n > 0) {
        const ssize_t w = ::write(fd, data, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return;
        }
        data += w;
        n -= static_cast<std::size_t>(w);
    }
}

struct Child {
    pid_t pid = -1;
    int fd = -1;
    std::string data;
    bool eof = false;
};

}  // namespace

std::vector<std::string> run_children(std::uint32_t count, double timeout_s,
                                      const std::function<std::string(std::uint32_t)>& body) {
    std::vector<Child> kids(count);
    auto kill_all = [&] {
        for (auto& k : kids)
            if (k.pid > 0) ::kill(k.pid, SIGKILL);
    };
    auto reap_all = [&] {
        for (auto& k : kids) {
            if (k.fd >= 0) ::close(k.fd), k.fd = -1;
            if (k.pid > 0) {
                int status = 0;
                while (::waitpid(k.pid, &status, 0) < 0 && errno == EINTR) {
                }
                unregister_child(k.pid);
                k.pid = -1;
            }
        }
    };
    std::fflush(nullptr);
    for (std::uint32_t i = 0; i < count; ++i) {
        int p[2];
        if (::pipe2(p, O_CLOEXEC) < 0) {
            kill_all(), reap_all();
            throw std::runtime_error("pipe failed");
        }
        const pid_t parent = ::getpid();
        const pid_t pid = ::fork();
        if (pid < 0) {
            ::close(p[0]), ::close(p[1]);
            kill_all(), reap_all();
            throw std::runtime_error("fork failed");
        }
        if (pid == 0) {
            // The child: never returns into the caller's stack; _exit skips the parent's atexit work.
            reset_signals_in_child(parent);
            ::close(p[0]);
            std::string out;
            char status = 0;
            try {
                out = body(i);
            } catch (const std::exception& e) {
                status = 1;
                out = e.what();
            } catch (...) {
                status = 1;
                out = "unknown failure";
            }
            write_all(p[1], &status, 1);
            write_all(p[1], out.data(), out.size());
            ::close(p[1]);
            ::_exit(0);
        }
        register_child(pid);
        ::close(p[1]);
        kids[i].pid = pid;
        kids[i].fd = p[0];
    }
    const double deadline = now_s() + timeout_s;
    std::vector<pollfd> pfds(count);
    char buf[1 << 16];
    for (;;) {
        std::size_t open = 0;
        for (std::uint32_t i = 0; i < count; ++i) {
            pfds[i] = {kids[i].eof ? -1 : kids[i].fd, POLLIN, 0};
            open += kids[i].eof ? 0 : 1;
        }
        if (open == 0) break;
        const double left = deadline - now_s();
        if (left <= 0) {
            kill_all(), reap_all();
            throw std::runtime_error(fmt::format("child processes did not finish within {:.0f} s", timeout_s));
        }
        if (::poll(pfds.data(), pfds.size(), static_cast<int>(std::min(left, 1.0) * 1000) + 1) < 0 && errno != EINTR) {
            kill_all(), reap_all();
            throw std::runtime_error("poll failed");
        }
        for (std::uint32_t i = 0; i < count; ++i) {
            if (pfds[i].revents == 0) continue;
            const ssize_t r = ::read(kids[i].fd, buf, sizeof buf);
            if (r > 0) {
                kids[i].data.append(buf, static_cast<std::size_t>(r));
            } else if (r == 0 || errno != EINTR) {
                kids[i].eof = true;
                // A child that failed stops the others at once (they may wait on it forever).
                if (kids[i].data.empty() || kids[i].data[0] != 0) kill_all();
            }
        }
    }
    reap_all();
    std::vector<std::string> results;
    std::string errors, deaths;
    for (std::uint32_t i = 0; i < count; ++i) {
        const std::string& d = kids[i].data;
        if (d.empty())
            deaths += fmt::format("{}process {} died without a result", deaths.empty() ? "" : "; ", i);
        else if (d[0] != 0)
            errors += fmt::format("{}process {}: {}", errors.empty() ? "" : "; ", i, d.substr(1));
        results.push_back(d.empty() ? "" : d.substr(1));
    }
    if (errors.empty()) errors = deaths;  // killed after another failed: only the failure matters
    if (!errors.empty()) throw std::runtime_error(errors);
    return results;
}

std::string in_child(double timeout_s, const std::function<std::string()>& body) {
    return run_children(1, timeout_s, [&](std::uint32_t) { return body(); }).at(0);
}

}  // namespace ddlsim::validate
