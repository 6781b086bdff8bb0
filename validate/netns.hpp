// The network the worker processes talk over. As root on Linux (with `ip` and `tc`): one network
// namespace per host, each joined by a veth pair to a bridge that lives in a namespace of its own
// (the switch of a star), and both directions of every host link shaped to the chosen rate by HTB
// with one fair-share class per peer host (by destination on the uplink, by source on the downlink)
// and a priority class for pure ACKs: full-duplex links whose flows share fairly, as the
// simulator's max-min star. (tbf would shape too, but it serves one FIFO: two flows leaving a host
// split its link unevenly and the ACKs of a connection wait behind its reverse data; this kernel
// offers no fq / fq_codel / sfq.) netem is not available on these machines, so no latency is
// added: links keep the veth's own (~20 us one way). Inside the namespaces a socket may queue at
// most 64 KB in the qdisc (tcp_limit_output_bytes) and slow start after idle is off. Otherwise,
// loopback (127.0.0.1, unshaped) and a note saying why.
//
// Everything created carries the creating process id in its name and is removed by the
// destructor, and also on every catchable fatal signal: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1/2,
// SIGALRM (the handler kills the registered worker processes
// and detaches the namespaces with umount2 + unlink, which are async-signal-safe; the kernel
// then frees the veths and qdiscs). Stale namespaces of dead ddlsim processes are removed at start.
//
// A TCP stream over a link shaped to rate R carries at most R x 1448 / 1514 of payload (52 bytes of
// IP + TCP headers with timestamps and 14 of Ethernet header per 1514-byte frame, as the qdisc
// counts them); calibration measures the goodput rather than assuming it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "validate/transport.hpp"

namespace ddlsim::validate {

class HostNetwork {
public:
    /// `hosts` endpoints; `rate_bps` (bits per second) shapes every link; `namespaces` false forces
    /// loopback; `burst_bytes` sets the token-bucket depth (0: the default rule, see burst_bytes()).
    HostNetwork(std::uint32_t hosts, double rate_bps, bool namespaces, double burst_bytes = 0.0);
    ~HostNetwork();
    HostNetwork(const HostNetwork&) = delete;
    HostNetwork& operator=(const HostNetwork&) = delete;

    [[nodiscard]] bool namespaced() const { return namespaced_; }
    /// Why loopback is used, or a description of the shaping.
    [[nodiscard]] const std::string& note() const { return note_; }
    [[nodiscard]] std::uint32_t hosts() const { return hosts_; }
    [[nodiscard]] double rate_bps() const { return rate_bps_; }
    /// The token-bucket depth in bytes (0 on loopback).
    [[nodiscard]] double burst_bytes() const;

    /// Reshapes every link to `rate_bps` (namespaces only).
    void set_rate(double rate_bps);
    /// A listening socket in host h's namespace (call before forking the worker of host h).
    [[nodiscard]] int listen(std::uint32_t h, Address& bound) const;
    /// Moves the calling process (a freshly forked worker) into host h's namespace.
    void enter(std::uint32_t h) const;

private:
    void build();
    void remove() noexcept;
    std::uint32_t hosts_;
    double rate_bps_;
    double burst_override_;
    bool namespaced_ = false;
    bool shaped_ = false;
    std::string note_;
    std::string prefix_;
    std::vector<std::string> names_;  // switch first, then hosts
};

/// Worker processes the signal handler kills (any network mode).
void register_child(pid_t pid);
void unregister_child(pid_t pid);
/// In a freshly forked child of `parent`: default signal dispositions again, and death with the parent (Linux
/// PR_SET_PDEATHSIG: SIGKILL when the parent ends, whatever ends it; a child whose parent is already gone exits),
/// so that no child outlives a run — not one forked a moment before a signal, not one whose parent was SIGKILLed.
void reset_signals_in_child(pid_t parent);
/// Installs the cleanup handler for SIGINT and SIGTERM (chained to the previous one); idempotent.
void install_cleanup_handler();

/// Runs a program (argv[0] looked up in PATH and the sbin folders); returns its exit status and
/// fills `output` with its stdout and stderr.
int run_program(const std::vector<std::string>& argv, std::string& output);

}  // namespace ddlsim::validate
