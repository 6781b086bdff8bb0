// The real transport of the validation runs: TCP over the kernel's stack (loopback, or veth
// pairs between network namespaces, see netns.hpp). Every connection has TCP_NODELAY and the
// congestion control "cubic" (the host default here is bbr, whose pacing inflates times on a
// token-bucket-shaped link). Messages carry an 8-byte length prefix; exchange() drives any set
// of sends and receives at once with poll(), so a ring step sends and receives concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ddlsim::validate {

/// Where an endpoint listens.
struct Address {
    std::string ip;
    std::uint16_t port = 0;
};

/// A listening TCP socket on `ip` (port chosen by the kernel), in the calling thread's network
/// namespace; returns the descriptor and fills `bound`. Throws std::runtime_error on failure.
[[nodiscard]] int listen_on(const std::string& ip, Address& bound);

/// Sets TCP_NODELAY and TCP_CONGESTION "cubic" (when the kernel offers it) on `fd`.
void tune_socket(int fd);

struct Send {
    std::uint32_t peer;
    std::span<const std::uint8_t> data;
};
struct Recv {
    std::uint32_t peer;
    std::vector<std::uint8_t>* data;  ///< resized to the message
};

/// One endpoint's connections to the peers it talks to.
class Mesh {
public:
    /// Connects endpoint `self` to every endpoint in `peers`: it dials the lower ids and accepts
    /// the higher ones on `listen_fd` (taken over). `timeout_s` bounds every wait.
    Mesh(std::uint32_t self, int listen_fd, const std::vector<Address>& addresses,
         const std::vector<std::uint32_t>& peers, double timeout_s);
    ~Mesh();
    Mesh(const Mesh&) = delete;
    Mesh& operator=(const Mesh&) = delete;

    /// Runs all sends and receives to completion, concurrently (at most one send and one receive
    /// per peer). Throws std::runtime_error when a peer closes or the timeout passes.
    void exchange(std::span<const Send> sends, std::span<const Recv> recvs);
    void send(std::uint32_t peer, std::span<const std::uint8_t> data);
    void recv(std::uint32_t peer, std::vector<std::uint8_t>& data);

    [[nodiscard]] std::uint64_t bytes_sent() const { return bytes_sent_; }

private:
    [[nodiscard]] int fd_of(std::uint32_t peer) const;
    std::uint32_t self_;
    std::vector<int> fds_;  // by peer id; -1 when not connected
    double timeout_s_;
    std::uint64_t bytes_sent_ = 0;
};

/// Views of float data as bytes and back.
[[nodiscard]] std::span<const std::uint8_t> float_bytes(std::span<const float> v);
/// Copies `bytes` (a multiple of 4) into `out` (resized).
void to_floats(std::span<const std::uint8_t> bytes, std::vector<float>& out);

}  // namespace ddlsim::validate
