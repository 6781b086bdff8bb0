#include "validate/transport.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "validate/nn.hpp"

namespace ddlsim::validate {
namespace {

[[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error(fmt::format("{}: {}", what, std::strerror(errno)));
}

sockaddr_in make_addr(const std::string& ip, std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1)
        throw std::runtime_error(fmt::format("not an IPv4 address: {}", ip));
    return a;
}

void set_nonblocking(int fd) {
    const int flags = fcntl(fd, F_GETFL, 0);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) fail("fcntl");
}

// Waits until `fd` is ready for `events` or the deadline passes (then throws).
void wait_for(int fd, short events, double deadline, const std::string& what) {
    for (;;) {
        const double left = deadline - now_s();
        if (left <= 0) throw std::runtime_error(fmt::format("{}: timed out", what));
        pollfd p{fd, events, 0};
        const int r = ::poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
        if (r < 0 && errno != EINTR) fail(what);
        if (r > 0) return;
    }
}

void read_exact(int fd, void* buf, std::size_t n, double deadline, const std::string& what) {
    auto* p = static_cast<std::uint8_t*>(buf);
    std::size_t got = 0;
    while (got < n) {
        wait_for(fd, POLLIN, deadline, what);
        const ssize_t r = ::recv(fd, p + got, n - got, MSG_DONTWAIT);
        if (r == 0) throw std::runtime_error(fmt::format("{}: connection closed", what));
        if (r < 0) {
            if (errno == EAGAIN || errno == EINTR) continue;
            fail(what);
        }
        got += static_cast<std::size_t>(r);
    }
}

// The state of one peer's send and receive within an exchange().
struct PeerOp {
    int fd = -1;
    std::uint32_t peer = 0;
    const Send* send = nullptr;
    const Recv* recv = nullptr;
    std::uint64_t send_header = 0;
    std::size_t sent = 0;  // header + data bytes sent
    std::uint64_t recv_header = 0;
    std::size_t received = 0;  // header + data bytes received
    bool send_done = true;
    bool recv_done = true;
};

}  // namespace

int listen_on(const std::string& ip, Address& bound) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket");
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    tune_socket(fd);
    sockaddr_in a = make_addr(ip, 0);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || ::listen(fd, 128) < 0) {
        const int e = errno;
        ::close(fd);
        errno = e;
        fail(fmt::format("listen on {}", ip));
    }
    socklen_t len = sizeof a;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) < 0) fail("getsockname");
    bound = {ip, ntohs(a.sin_port)};
    return fd;
}

void tune_socket(int fd) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    static constexpr char kCubic[] = "cubic";
    ::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, kCubic, sizeof kCubic - 1);  // best effort
}

Mesh::Mesh(std::uint32_t self, int listen_fd, const std::vector<Address>& addresses,
           const std::vector<std::uint32_t>& peers, double timeout_s)
    : self_(self), fds_(addresses.size(), -1), timeout_s_(timeout_s) {
    const double deadline = now_s() + timeout_s;
    try {
        std::size_t expected_accepts = 0;
        for (std::uint32_t p : peers) {
            if (p >= addresses.size() || p == self) throw std::invalid_argument(fmt::format("bad peer {}", p));
            if (p > self) {
                ++expected_accepts;
                continue;
            }
            const sockaddr_in a = make_addr(addresses[p].ip, addresses[p].port);
            for (;;) {  // the peer's listening socket exists before any worker starts; retry only transients
                const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0) fail("socket");
                tune_socket(fd);
                if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) {
                    fds_[p] = fd;
                    break;
                }
                const int e = errno;
                ::close(fd);
                errno = e;
                if ((e != ECONNREFUSED && e != ENETUNREACH && e != EHOSTUNREACH && e != EINTR) || now_s() > deadline)
                    fail(fmt::format("endpoint {}: connect to {}:{}", self, addresses[p].ip, addresses[p].port));
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
            const std::uint32_t id = self;
            if (::send(fds_[p], &id, sizeof id, MSG_NOSIGNAL) != sizeof id) fail("handshake");
        }
        for (std::size_t k = 0; k < expected_accepts; ++k) {
            wait_for(listen_fd, POLLIN, deadline, fmt::format("endpoint {}: accept", self));
            const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) fail("accept");
            tune_socket(fd);
            std::uint32_t id = 0;
            read_exact(fd, &id, sizeof id, deadline, "handshake");
            if (id >= fds_.size() || id <= self || fds_[id] != -1 ||
                std::find(peers.begin(), peers.end(), id) == peers.end()) {
                ::close(fd);
                throw std::runtime_error(fmt::format("endpoint {}: unexpected peer id {}", self, id));
            }
            fds_[id] = fd;
        }
        for (int fd : fds_)
            if (fd >= 0) set_nonblocking(fd);
    } catch (...) {
        for (int fd : fds_)
            if (fd >= 0) ::close(fd);
        ::close(listen_fd);
        throw;
    }
    ::close(listen_fd);
}

Mesh::~Mesh() {
    for (int fd : fds_)
        if (fd >= 0) ::close(fd);
}

int Mesh::fd_of(std::uint32_t peer) const {
    if (peer >= fds_.size() || fds_[peer] < 0)
        throw std::invalid_argument(fmt::format("endpoint {} has no connection to {}", self_, peer));
    return fds_[peer];
}

void Mesh::exchange(std::span<const Send> sends, std::span<const Recv> recvs) {
    std::vector<PeerOp> ops;
    auto op_for = [&](std::uint32_t peer) -> PeerOp& {
        for (auto& o : ops)
            if (o.peer == peer) return o;
        PeerOp o;
        o.peer = peer;
        o.fd = fd_of(peer);
        ops.push_back(o);
        return ops.back();
    };
    for (const auto& s : sends) {
        PeerOp& o = op_for(s.peer);
        if (o.send != nullptr) throw std::invalid_argument("exchange: two sends to one peer");
        o.send = &s;
        o.send_header = s.data.size();
        o.send_done = false;
    }
    for (const auto& r : recvs) {
        PeerOp& o = op_for(r.peer);
        if (o.recv != nullptr) throw std::invalid_argument("exchange: two receives from one peer");
        o.recv = &r;
        o.recv_done = false;
    }
    const double deadline = now_s() + timeout_s_;
    std::vector<pollfd> pfds(ops.size());
    for (;;) {
        std::size_t active = 0;
        for (std::size_t i = 0; i < ops.size(); ++i) {
            const auto events = static_cast<short>((ops[i].send_done ? 0 : POLLOUT) | (ops[i].recv_done ? 0 : POLLIN));
            pfds[i] = {events != 0 ? ops[i].fd : -1, events, 0};
            active += events != 0 ? 1 : 0;
        }
        if (active == 0) return;
        const double left = deadline - now_s();
        if (left <= 0) throw std::runtime_error(fmt::format("endpoint {}: exchange timed out", self_));
        const int r = ::poll(pfds.data(), pfds.size(), static_cast<int>(std::min(left, 1.0) * 1000) + 1);
        if (r < 0) {
            if (errno == EINTR) continue;
            fail("poll");
        }
        for (std::size_t i = 0; i < ops.size(); ++i) {
            PeerOp& o = ops[i];
            const short ev = pfds[i].revents;
            if (ev == 0) continue;
            if (!o.send_done && (ev & (POLLOUT | POLLERR | POLLHUP))) {
                const std::size_t total = 8 + o.send->data.size();
                iovec iov[2];
                int n = 0;
                if (o.sent < 8) iov[n++] = {reinterpret_cast<std::uint8_t*>(&o.send_header) + o.sent, 8 - o.sent};
                const std::size_t data_off = o.sent < 8 ? 0 : o.sent - 8;
                if (data_off < o.send->data.size())
                    iov[n++] = {const_cast<std::uint8_t*>(o.send->data.data()) + data_off,
                                o.send->data.size() - data_off};
                msghdr msg{};
                msg.msg_iov = iov;
                msg.msg_iovlen = static_cast<std::size_t>(n);
                const ssize_t w = ::sendmsg(o.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w < 0 && errno != EAGAIN && errno != EINTR)
                    fail(fmt::format("endpoint {}: send to {}", self_, o.peer));
                if (w > 0) {
                    o.sent += static_cast<std::size_t>(w);
                    bytes_sent_ += static_cast<std::uint64_t>(w);
                }
                o.send_done = o.sent == total;
            }
            if (!o.recv_done && (ev & (POLLIN | POLLERR | POLLHUP))) {
                ssize_t got = 0;
                if (o.received < 8) {
                    got = ::recv(o.fd, reinterpret_cast<std::uint8_t*>(&o.recv_header) + o.received, 8 - o.received,
                                 MSG_DONTWAIT);
                    if (got > 0 && o.received + static_cast<std::size_t>(got) == 8) {
                        if (o.recv_header > (std::uint64_t{1} << 34))
                            throw std::runtime_error(fmt::format("endpoint {}: bad message length", self_));
                        o.recv->data->resize(o.recv_header);
                    }
                } else {
                    const std::size_t off = o.received - 8;
                    got = ::recv(o.fd, o.recv->data->data() + off, o.recv_header - off, MSG_DONTWAIT);
                }
                if (got == 0) throw std::runtime_error(fmt::format("endpoint {}: peer {} closed", self_, o.peer));
                if (got < 0 && errno != EAGAIN && errno != EINTR)
                    fail(fmt::format("endpoint {}: receive from {}", self_, o.peer));
                if (got > 0) o.received += static_cast<std::size_t>(got);
                o.recv_done = o.received >= 8 && o.received == 8 + o.recv_header;
            }
        }
    }
}

void Mesh::send(std::uint32_t peer, std::span<const std::uint8_t> data) {
    const Send s{peer, data};
    exchange({&s, 1}, {});
}

void Mesh::recv(std::uint32_t peer, std::vector<std::uint8_t>& data) {
    const Recv r{peer, &data};
    exchange({}, {&r, 1});
}

std::span<const std::uint8_t> float_bytes(std::span<const float> v) {
    return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * sizeof(float)};
}

void to_floats(std::span<const std::uint8_t> bytes, std::vector<float>& out) {
    if (bytes.size() % sizeof(float) != 0) throw std::runtime_error("payload is not a whole number of floats");
    out.resize(bytes.size() / sizeof(float));
    if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
}

}  // namespace ddlsim::validate
