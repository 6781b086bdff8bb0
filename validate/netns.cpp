#include "validate/netns.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace ddlsim::validate {
namespace {

namespace fs = std::filesystem;

constexpr const char* kNetnsDir = "/run/netns";
constexpr int kLeafPackets = 20000;  // per peer: deep enough that a parameter server's incast never drops
constexpr int kQuantum = 3028;       // two full frames per round between the peers of a link

// State the signal handler reads: fixed-size static storage only.
constexpr int kMaxNamespaces = 300;
constexpr int kMaxChildren = 1024;
char g_ns_paths[kMaxNamespaces][96];
volatile std::sig_atomic_t g_ns_count = 0;
volatile pid_t g_children[kMaxChildren];
volatile std::sig_atomic_t g_child_count = 0;
// The `ip` / `tc` process run_program is waiting for (0: none). The handler kills and reaps it before removing
// namespaces, so that an `ip netns add` interrupted half-way cannot create its namespace after the cleanup.
volatile pid_t g_tool_child = 0;
// Every catchable signal whose default action ends the process (SIGPIPE: `validate | head` closing the pipe).
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM};
constexpr int kSignalSlots = 65;
struct sigaction g_prev[kSignalSlots] {};
bool g_installed = false;

void detach_namespaces() noexcept {
    for (int i = 0; i < g_ns_count; ++i) {
        if (g_ns_paths[i][0] == '\0') continue;
        ::umount2(g_ns_paths[i], MNT_DETACH);
        ::unlink(g_ns_paths[i]);
        g_ns_paths[i][0] = '\0';
    }
}

extern "C" void on_cleanup_signal(int sig) {
    for (int i = 0; i < g_child_count; ++i)
        if (g_children[i] > 0) ::kill(g_children[i], SIGKILL);
    if (const pid_t tool = g_tool_child; tool > 0) {
        ::kill(tool, SIGKILL);
        while (::waitpid(tool, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
    detach_namespaces();
    if (sig > 0 && sig < kSignalSlots) ::sigaction(sig, &g_prev[sig], nullptr);
    ::raise(sig);  // delivered to the previous handler (or the default) once this one returns
}

std::string find_program(const std::string& name) {
    if (name.find('/') != std::string::npos) return name;
    std::vector<std::string> dirs{"/usr/sbin", "/sbin", "/usr/bin", "/bin"};
    if (const char* path = std::getenv("PATH")) {
        std::string p = path;
        std::size_t start = 0;
        while (start <= p.size()) {
            const std::size_t end = std::min(p.find(':', start), p.size());
            dirs.insert(dirs.begin(), p.substr(start, end - start));
            start = end + 1;
        }
    }
    for (const auto& d : dirs) {
        const std::string f = d + "/" + name;
        if (!d.empty() && ::access(f.c_str(), X_OK) == 0) return f;
    }
    return "";
}

// Host h's address on the bridge.
std::string host_ip(std::uint32_t h) {
    return fmt::format("10.77.{}.{}", h / 250, h % 250 + 1);
}

bool process_alive(long pid) {
    return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// Namespaces named "ddv<pid>-..." whose process is gone (a run killed with SIGKILL).
void remove_stale_namespaces() {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(kNetnsDir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("ddv", 0) != 0) continue;
        const auto dash = name.find('-');
        if (dash == std::string::npos) continue;
        long pid = 0;
        try {
            pid = std::stol(name.substr(3, dash - 3));
        } catch (...) {
            continue;
        }
        if (pid > 0 && !process_alive(pid)) {
            ::umount2(e.path().c_str(), MNT_DETACH);
            ::unlink(e.path().c_str());
        }
    }
}

// Runs `tc -n NS -batch FILE` with `script`; throws with tc's message on failure.
void run_tc_batch(const std::string& ns, const std::string& script) {
    char path[] = "/tmp/ddlsim-tc-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    const bool written = ::write(fd, script.data(), script.size()) == static_cast<ssize_t>(script.size());
    ::close(fd);
    std::string out;
    const int rc = written ? run_program({"tc", "-n", ns, "-batch", path}, out) : -1;
    ::unlink(path);
    if (rc != 0) {
        while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
        throw std::runtime_error(fmt::format("tc -batch in {} failed: {}", ns, written ? out : "cannot write"));
    }
}

// Writes `value` to /proc/sys/`key` inside namespace `ns` (a child process enters it and writes).
void set_sysctl(const std::string& ns, const std::string& key, const std::string& value) {
    const std::string ns_path = fmt::format("{}/{}", kNetnsDir, ns), file = "/proc/sys/" + key;
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        const int fd = ::open(ns_path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0 || ::setns(fd, CLONE_NEWNET) < 0) ::_exit(1);
        const int out = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
        const bool ok = out >= 0 && ::write(out, value.data(), value.size()) == static_cast<ssize_t>(value.size());
        ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw std::runtime_error(fmt::format("cannot set {} = {} in {}", key, value, ns));
}

int open_ns(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(fmt::format("{}: {}", path, std::strerror(errno)));
    return fd;
}

}  // namespace

int run_program(const std::vector<std::string>& argv, std::string& output) {
    output.clear();
    const std::string exe = find_program(argv.at(0));
    if (exe.empty()) {
        output = argv[0] + ": not found";
        return 127;
    }
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) < 0) throw std::runtime_error("pipe failed");
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    // The cleanup signals stay blocked from the fork until g_tool_child names the child, so the handler
    // never misses a tool that is running.
    sigset_t cleanup, previous;
    sigemptyset(&cleanup);
    for (int sig : kCleanupSignals) sigaddset(&cleanup, sig);
    ::sigprocmask(SIG_BLOCK, &cleanup, &previous);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);
        throw std::runtime_error("fork failed");
    }
    if (pid == 0) {
        reset_signals_in_child(parent);
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);
        ::dup2(pipefd[1], 1);
        ::dup2(pipefd[1], 2);
        ::execv(exe.c_str(), args.data());
        ::_exit(127);
    }
    g_tool_child = pid;
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    ::close(pipefd[1]);
    char buf[4096];
    for (;;) {
        const ssize_t r = ::read(pipefd[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        output.append(buf, static_cast<std::size_t>(r));
    }
    ::close(pipefd[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_tool_child = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void register_child(pid_t pid) {
    for (int i = 0; i < g_child_count; ++i)
        if (g_children[i] == 0) {
            g_children[i] = pid;
            return;
        }
    if (g_child_count < kMaxChildren) {
        g_children[g_child_count] = pid;
        g_child_count = g_child_count + 1;
    }
}

void unregister_child(pid_t pid) {
    for (int i = 0; i < g_child_count; ++i)
        if (g_children[i] == pid) g_children[i] = 0;
}

void reset_signals_in_child(pid_t parent) {
    for (int sig : kCleanupSignals) std::signal(sig, SIG_DFL);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the parent ended before the request took effect
}

void install_cleanup_handler() {
    if (g_installed) return;
    struct sigaction sa {};
    sa.sa_handler = on_cleanup_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig : kCleanupSignals) sigaddset(&sa.sa_mask, sig);  // one cleanup at a time
    for (int sig : kCleanupSignals) {
        ::sigaction(sig, nullptr, &g_prev[sig]);
        if (g_prev[sig].sa_handler == SIG_IGN) continue;  // e.g. SIGHUP under nohup: stays ignored
        ::sigaction(sig, &sa, nullptr);
    }
    g_installed = true;
}

HostNetwork::HostNetwork(std::uint32_t hosts, double rate_bps, bool namespaces, double burst)
    : hosts_(hosts), rate_bps_(rate_bps), burst_override_(burst) {
    if (hosts == 0 || hosts > 250) throw std::invalid_argument(fmt::format("{} hosts: expected 1..250", hosts));
    if (!namespaces) {
        note_ = "loopback (namespaces not requested)";
        return;
    }
    if (::geteuid() != 0) {
        note_ = "loopback: not root, so no network namespaces or traffic shaping";
        return;
    }
    if (find_program("ip").empty() || find_program("tc").empty()) {
        note_ = "loopback: `ip` or `tc` (package iproute2) not found";
        return;
    }
    install_cleanup_handler();
    static int sequence = 0;
    prefix_ = fmt::format("ddv{}-{}", ::getpid(), sequence++);
    try {
        build();
        namespaced_ = true;
        note_ = fmt::format(
            "network namespaces: {} hosts on a bridge, every link shaped both ways by HTB (burst {:.0f} B, one "
            "fair-share class per peer), no added latency (netem unavailable)",
            hosts_, burst_bytes());
    } catch (const std::exception& e) {
        remove();
        note_ = fmt::format("loopback: setting up namespaces failed ({})", e.what());
    }
}

HostNetwork::~HostNetwork() {
    remove();
}

double HostNetwork::burst_bytes() const {
    // One MTU-sized frame is the least a token bucket accepts; at higher rates the timer granularity needs
    // ~0.4 ms of tokens. A deeper bucket lets an idle link send its first bytes at line rate
    // (64 KB at 100 Mbit/s is 5 ms of free transfer), which no α-β model reproduces.
    if (!namespaced_ && names_.empty()) return 0.0;
    return burst_override_ > 0 ? burst_override_ : std::max(4096.0, rate_bps_ / 8.0 * 400e-6);
}

void HostNetwork::build() {
    remove_stale_namespaces();
    std::string out;
    auto run = [&](std::vector<std::string> argv) {
        if (run_program(argv, out) != 0) {
            std::string cmd;
            for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
            while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
            throw std::runtime_error(fmt::format("`{}` failed: {}", cmd, out));
        }
    };
    auto add_ns = [&](const std::string& name) {
        // Registered for the signal handler before `ip netns add` creates it: a signal in between removes a
        // namespace that may not exist yet (harmless) rather than miss one that does.
        const std::string path = fmt::format("{}/{}", kNetnsDir, name);
        if (g_ns_count < kMaxNamespaces && path.size() < sizeof g_ns_paths[0]) {
            std::strcpy(g_ns_paths[g_ns_count], path.c_str());
            g_ns_count = g_ns_count + 1;
        }
        names_.push_back(name);
        run({"ip", "netns", "add", name});
    };
    const std::string sw = prefix_ + "s";
    add_ns(sw);
    run({"ip", "-n", sw, "link", "set", "lo", "up"});
    run({"ip", "-n", sw, "link", "add", "br0", "type", "bridge"});
    run({"ip", "-n", sw, "link", "set", "br0", "up"});
    for (std::uint32_t h = 0; h < hosts_; ++h) {
        const std::string ns = fmt::format("{}h{}", prefix_, h), port = fmt::format("p{}", h);
        add_ns(ns);
        run({"ip", "-n", sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns});
        run({"ip", "-n", sw, "link", "set", port, "master", "br0", "up"});
        run({"ip", "-n", ns, "addr", "add", host_ip(h) + "/16", "dev", "eth0"});
        run({"ip", "-n", ns, "link", "set", "eth0", "up"});
        run({"ip", "-n", ns, "link", "set", "lo", "up"});
        // At most 64 KB of a socket in the qdisc (the host default, 4 MB, queues ~0.3 s of data at
        // 100 Mbit/s, and the ACKs of a connection that also carries data the other way wait behind it);
        // no slow start after idle (iterations pause for compute). Sockets ask for cubic themselves.
        set_sysctl(ns, "net/ipv4/tcp_limit_output_bytes", "65536");
        set_sysctl(ns, "net/ipv4/tcp_slow_start_after_idle", "0");
    }
    set_rate(rate_bps_);
}

void HostNetwork::set_rate(double rate_bps) {
    if (shaped_ && rate_bps == rate_bps_) return;
    rate_bps_ = rate_bps;
    if (names_.empty()) return;
    if (!(rate_bps >= 1e5 && rate_bps <= 1e11))
        throw std::invalid_argument(fmt::format("link rate {} bit/s: expected 100 kbit/s .. 100 Gbit/s", rate_bps));
    const std::string rate = fmt::format("{:.0f}bit", rate_bps), share = fmt::format("{:.0f}bit", rate_bps / hosts_),
                      burst = fmt::format("{:.0f}b", burst_bytes());
    // One tc batch per link end: HTB shaping the link to `rate`, one leaf per peer host (by
    // destination on the uplink, by source on the downlink) so that flows to or from different
    // hosts share the link fairly, as flows of a max-min network do.
    auto link_script = [&](const std::string& dev, std::uint32_t h, const char* direction) {
        std::string s = shaped_ ? fmt::format("qdisc del dev {} root\n", dev) : "";
        s += fmt::format("qdisc add dev {} root handle 1: htb default 1ff\n", dev);
        s += fmt::format("class add dev {} parent 1: classid 1:1 htb rate {} ceil {} burst {} cburst {}\n", dev, rate,
                         rate, burst, burst);
        // Pure ACKs and other small packets (IP length < 128) first, so that the ACKs of a connection
        // that also carries data the other way do not wait behind that data.
        s += fmt::format("class add dev {} parent 1:1 classid 1:ff htb rate {} ceil {} burst {} cburst {} prio 0\n",
                         dev, share, rate, burst, burst);
        s += fmt::format("filter add dev {} parent 1: protocol ip prio 1 u32 match u16 0 0xff80 at 2 flowid 1:ff\n",
                         dev);
        for (std::uint32_t j = 0; j < hosts_; ++j) {
            if (j == h) continue;
            const std::string id = fmt::format("{:x}", 0x100 + j);
            s += fmt::format(
                "class add dev {} parent 1:1 classid 1:{} htb rate {} ceil {} burst {} cburst {} quantum {} prio 1\n",
                dev, id, share, rate, burst, burst, kQuantum);
            s += fmt::format("qdisc add dev {} parent 1:{} handle {}: pfifo limit {}\n", dev, id, id, kLeafPackets);
            s += fmt::format("filter add dev {} parent 1: protocol ip prio 2 u32 match ip {} {}/32 flowid 1:{}\n", dev,
                             direction, host_ip(j), id);
        }
        return s;
    };
    std::string sw;
    for (std::uint32_t h = 0; h < hosts_; ++h) {
        run_tc_batch(fmt::format("{}h{}", prefix_, h), link_script("eth0", h, "dst"));
        sw += link_script(fmt::format("p{}", h), h, "src");
    }
    run_tc_batch(prefix_ + "s", sw);
    shaped_ = true;
}

int HostNetwork::listen(std::uint32_t h, Address& bound) const {
    if (h >= hosts_) throw std::invalid_argument(fmt::format("host {} of {}", h, hosts_));
    if (!namespaced_) return listen_on("127.0.0.1", bound);
    const int self = open_ns("/proc/self/ns/net");
    const int target = open_ns(fmt::format("{}/{}h{}", kNetnsDir, prefix_, h));
    if (::setns(target, CLONE_NEWNET) < 0) {
        ::close(self), ::close(target);
        throw std::runtime_error(fmt::format("setns: {}", std::strerror(errno)));
    }
    int fd = -1;
    std::string error;
    try {
        fd = listen_on(host_ip(h), bound);
    } catch (const std::exception& e) {
        error = e.what();
    }
    const bool back = ::setns(self, CLONE_NEWNET) == 0;
    ::close(self), ::close(target);
    if (!back) throw std::runtime_error("setns back to the original network namespace failed");
    if (fd < 0) throw std::runtime_error(error);
    return fd;
}

void HostNetwork::enter(std::uint32_t h) const {
    if (!namespaced_) return;
    const int target = open_ns(fmt::format("{}/{}h{}", kNetnsDir, prefix_, h));
    const int r = ::setns(target, CLONE_NEWNET);
    ::close(target);
    if (r < 0) throw std::runtime_error(fmt::format("setns into host {}: {}", h, std::strerror(errno)));
}

void HostNetwork::remove() noexcept {
    for (const auto& name : names_) {
        const std::string path = fmt::format("{}/{}", kNetnsDir, name);
        for (int i = 0; i < g_ns_count; ++i)
            if (path == g_ns_paths[i]) g_ns_paths[i][0] = '\0';
        ::umount2(path.c_str(), MNT_DETACH);
        ::unlink(path.c_str());
    }
    names_.clear();
}

}  // namespace ddlsim::validate
