// Ring all-reduce on an idle star, simulated with SimGrid's s4u API.
//
// Optional comparison harness for ddlsim (see README.md next to this file);
// it is not part of the ddlsim build and is not run in CI.
//
// Platform: n hosts in a StarZone; host i has one private split-duplex link
// (bandwidth B, latency L) to a non-blocking centre, so a host-to-host route is
// <link_i UP, link_j DOWN>: latency sum 2L, bottleneck B, and the two
// directions of a link are separate max-min constraints.
//
// Pattern: 2(n-1) steps; in each step worker i sends S/n bytes to worker
// (i+1) mod n.  Worker i starts its send of step s only once it has received
// step s-1 from its predecessor AND its own send of step s-1 has completed.
// Expected simulated time on the idle star: T = 2(n-1)(2L + S/(nB)).
//
// Usage:
//   ring_allreduce ring   N [S_bytes B_bytes_per_s L_s] [--cfg=...]
//   ring_allreduce sanity   [S_bytes B_bytes_per_s L_s] [--cfg=...]
//
// The network configuration below is injected in front of the user's own
// --cfg arguments (later ones win), so the program matches the closed form
// out of the box.
#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

XBT_LOG_NEW_DEFAULT_CATEGORY(ring_allreduce, "ring all-reduce comparison harness");

namespace {

// Configuration that makes one transfer of S bytes over a route of latency sum
// Lambda at max-min rate r take exactly Lambda + S/r:
//  - CM02: max-min sharing with latency-factor = bandwidth-factor = 1 and
//    weight-S = 0 (no slow-start / RTT correction factors);
//  - TCP-gamma 0: no TCP-window rate bound gamma / (2 Lambda);
//  - crosstraffic 0: no 5% reverse (ACK) flow on the back route.
const char* const kDefaultCfg[] = {
    "--cfg=network/model:CM02",
    "--cfg=network/TCP-gamma:0",
    "--cfg=network/crosstraffic:0",
};

struct Params {
    double size = 1e8;          // S, bytes to all-reduce
    double bandwidth = 1.25e9;  // B, bytes per second (10 Gbps)
    double latency = 5e-6;      // L, seconds per link
};

// Print the effective network configuration (after the platform exists, since
// the network model sets its defaults when it is instantiated).
void print_config() {
    using simgrid::config::get_value;
    std::printf(
        "CONFIG network/model=%s network/TCP-gamma=%g network/crosstraffic=%d "
        "network/latency-factor=%g network/bandwidth-factor=%g network/weight-S=%g\n",
        get_value<std::string>("network/model").c_str(), get_value<double>("network/TCP-gamma"),
        static_cast<int>(get_value<bool>("network/crosstraffic")), get_value<double>("network/latency-factor"),
        get_value<double>("network/bandwidth-factor"), get_value<double>("network/weight-S"));
}

double peak_rss_mib() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Star: one split-duplex private link per host, routes host -> * use the UP
// half and * -> host the DOWN half; no backbone (the centre does not limit).
// `unit` is the number of simulated SimGrid "bytes" per real byte (see run_ring).
std::vector<sg4::Host*> build_star(int n, const Params& p, double unit = 1.0) {
    auto* zone = sg4::create_star_zone("star");
    std::vector<sg4::Host*> hosts;
    hosts.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        std::string name = "h" + std::to_string(i);
        sg4::Host* host = zone->create_host(name, 1e9);
        sg4::Link* link = zone->create_split_duplex_link("l" + std::to_string(i), p.bandwidth * unit);
        link->set_latency(p.latency);
        link->seal();
        zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                        {sg4::LinkInRoute(link, sg4::LinkInRoute::Direction::UP)}, true);
        hosts.push_back(host);
    }
    zone->seal();
    return hosts;
}

int g_payload = 0;  // dummy payload pointer; only the simulated size matters

// One worker of the ring.  A receive is always posted one step ahead so that a
// transfer starts as soon as its sender issues it (no rendezvous delay).
void ring_worker(int rank, int n, double chunk_units, std::vector<sg4::Mailbox*>* boxes) {
    const int steps = 2 * (n - 1);
    sg4::Mailbox* in = (*boxes)[static_cast<size_t>(rank)];
    sg4::Mailbox* out = (*boxes)[static_cast<size_t>((rank + 1) % n)];
    auto bytes = static_cast<uint64_t>(chunk_units);

    std::vector<void*> slots(2, nullptr);  // destination pointers of the two outstanding gets
    std::vector<sg4::CommPtr> recv(2);
    recv[0] = in->get_async<void>(&slots[0]);
    if (steps > 1) recv[1] = in->get_async<void>(&slots[1]);
    sg4::CommPtr send = out->put_async(&g_payload, bytes);

    for (int s = 1; s < steps; ++s) {
        recv[static_cast<size_t>((s - 1) % 2)]->wait();  // received step s-1
        send->wait();                                    // own send of step s-1 done
        if (s + 1 < steps)
            recv[static_cast<size_t>((s + 1) % 2)] = in->get_async<void>(&slots[static_cast<size_t>((s + 1) % 2)]);
        send = out->put_async(&g_payload, bytes);
    }
    recv[static_cast<size_t>((steps - 1) % 2)]->wait();
    send->wait();
}

int run_ring(sg4::Engine& e, int n, const Params& p) {
    // SimGrid transfer sizes are integral (uint64_t) bytes, but S/n is not always
    // an integer (1e8/1024 = 97656.25) while ddlsim and the closed form use the
    // exact S/n.  Simulate in units of 1/k byte, with k = n / gcd(S, n), and scale
    // the link bandwidth by k: a chunk of S*k/n units at k*B units/s takes exactly
    // S/(nB) seconds, so nothing is rounded.
    uint64_t unit = 1;
    if (p.size == std::floor(p.size) && p.size < 9.007e15) {
        auto s_int = static_cast<uint64_t>(p.size);
        unit = static_cast<uint64_t>(n) / std::gcd(s_int, static_cast<uint64_t>(n));
    }
    const double chunk_units = p.size * static_cast<double>(unit) / n;
    if (std::floor(chunk_units) != chunk_units)
        XBT_WARN("S/n = %.17g bytes cannot be represented exactly; SimGrid rounds it down", p.size / n);

    auto hosts = build_star(n, p, static_cast<double>(unit));
    print_config();
    std::vector<sg4::Mailbox*> boxes;
    boxes.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) boxes.push_back(sg4::Mailbox::by_name("mb" + std::to_string(i)));

    for (int i = 0; i < n; ++i)
        sg4::Actor::create("w" + std::to_string(i), hosts[static_cast<size_t>(i)], ring_worker, i, n, chunk_units,
                           &boxes);

    auto t0 = std::chrono::steady_clock::now();
    e.run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    double sim = sg4::Engine::get_clock();
    double closed = 2.0 * (n - 1) * (2.0 * p.latency + p.size / (n * p.bandwidth));
    double relerr = std::fabs(sim - closed) / closed;
    double transfers = 2.0 * (n - 1) * n;
    std::printf(
        "RESULT n=%d sim_s=%.17g closed_s=%.17g relerr=%.3e transfers=%.0f wall_s=%.3f "
        "transfers_per_s=%.0f peak_rss_mib=%.1f byte_unit=1/%llu\n",
        n, sim, closed, relerr, transfers, wall, transfers / wall, peak_rss_mib(),
        static_cast<unsigned long long>(unit));
    return relerr < 1e-6 ? 0 : 2;
}

// Sanity cases on a 4-host star, run one after the other in one simulation:
//  A: h0 -> h1 alone                         expect 2L + S/B
//  B: h0 -> h1 and h1 -> h0 simultaneously   expect 2L + S/B each (full duplex)
//  C: h0 -> h2 and h1 -> h2 simultaneously   expect 2L + 2S/B each (shared DOWN half)
int run_sanity(sg4::Engine& e, const Params& p) {
    auto hosts = build_star(4, p);
    print_config();
    struct Case {
        const char* name;
        std::vector<std::pair<int, int>> flows;
        double expect;
    };
    std::vector<Case> cases = {
        {"A one transfer", {{0, 1}}, 2 * p.latency + p.size / p.bandwidth},
        {"B opposite directions", {{0, 1}, {1, 0}}, 2 * p.latency + p.size / p.bandwidth},
        {"C two into one host", {{0, 2}, {1, 2}}, 2 * p.latency + 2 * p.size / p.bandwidth},
    };
    int rc = 0;
    sg4::Actor::create("sanity", hosts[0], [&]() {
        for (auto const& c : cases) {
            double start = sg4::Engine::get_clock();
            std::vector<sg4::CommPtr> comms;
            for (auto [src, dst] : c.flows)
                comms.push_back(sg4::Comm::sendto_async(
                    hosts[static_cast<size_t>(src)], hosts[static_cast<size_t>(dst)], static_cast<uint64_t>(p.size)));
            for (auto const& comm : comms) comm->wait();
            double took = sg4::Engine::get_clock() - start;
            double relerr = std::fabs(took - c.expect) / c.expect;
            std::printf("SANITY %-22s took_s=%.12g expect_s=%.12g relerr=%.3e %s\n", c.name, took, c.expect, relerr,
                        relerr < 1e-9 ? "ok" : "MISMATCH");
            if (relerr >= 1e-9) rc = 2;
        }
    });
    e.run();
    return rc;
}

[[noreturn]] void usage(const char* prog) {
    std::fprintf(stderr,
                 "usage: %s ring N [S_bytes B_bytes_per_s L_s] [--cfg=...]\n"
                 "       %s sanity [S_bytes B_bytes_per_s L_s] [--cfg=...]\n",
                 prog, prog);
    std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
    // argv for SimGrid: program name, our defaults, then the user's arguments.
    std::vector<char*> args;
    args.push_back(argv[0]);
    for (const char* c : kDefaultCfg) args.push_back(const_cast<char*>(c));
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    int sg_argc = static_cast<int>(args.size());
    args.push_back(nullptr);

    sg4::Engine e(&sg_argc, args.data());  // consumes the --cfg=... and --log=... arguments
    if (sg_argc < 2) usage(argv[0]);
    std::string mode = args[1];
    int pos = 2;
    int n = 0;
    if (mode == "ring") {
        if (sg_argc < 3) usage(argv[0]);
        n = std::atoi(args[2]);
        if (n < 2) usage(argv[0]);
        pos = 3;
    } else if (mode != "sanity") {
        usage(argv[0]);
    }
    Params p;
    if (sg_argc > pos) p.size = std::atof(args[static_cast<size_t>(pos)]);
    if (sg_argc > pos + 1) p.bandwidth = std::atof(args[static_cast<size_t>(pos + 1)]);
    if (sg_argc > pos + 2) p.latency = std::atof(args[static_cast<size_t>(pos + 2)]);

    return mode == "ring" ? run_ring(e, n, p) : run_sanity(e, p);
}
