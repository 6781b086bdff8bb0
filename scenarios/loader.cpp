// The strict scenario loader: JSON in, plain structs out, every error a
// ScenarioError naming the JSON path and what was expected (docs/CONTRACT.md §1, §2).
// This file reads the root and the jobs and places workers and servers on hosts;
// load_job.cpp and load_network.cpp read the blocks, limits.cpp estimates and bounds the run's size.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <type_traits>
#include <variant>

#include "models/compression.hpp"
#include "models/compute.hpp"
#include "models/grouping.hpp"
#include "models/resolve.hpp"
#include "models/trainer.hpp"
#include "scenarios/key_tables.hpp"
#include "scenarios/loader_detail.hpp"
#include "scenarios/schema_tables.hpp"
#include "topologies/collectives.hpp"
#include "topologies/sharded_collectives.hpp"
#include "topologies/sparse_collectives.hpp"

namespace ddlsim::scenario {
namespace {

using detail::list;

// Switch aggregation memory (network.aggregation_memory) of the topology, 0 where it has none.
double aggregation_memory(const topo::TopologySpec& topology) {
    return std::visit(
        [](const auto& spec) {
            if constexpr (requires { spec.aggregation_memory; }) return spec.aggregation_memory;
            return 0.0;
        },
        topology);
}

// Job `index` of the scenario resolved on `fabric` (models/resolve.hpp); a device the compute model refuses is bad
// input at its JSON path.
models::TrainingJob make_job(const Scenario& s, std::size_t index, const topo::Fabric& fabric,
                             sim::Time collective_overhead) {
    const JobSpec& j = s.jobs[index];
    models::JobContext ctx;
    ctx.iterations = s.iterations;
    ctx.index = static_cast<std::uint32_t>(index);
    ctx.seed = s.seed;
    ctx.collective_overhead = collective_overhead;
    ctx.ideal_transport = s.transports.inter && s.transports.inter->kind == topo::TransportKind::ideal;
    ctx.record_schedule = j.convergence.has_value();
    for (const auto& h : j.placement) ctx.worker_hosts.push_back(*fabric.find(h));
    for (const auto& h : j.server_placement) ctx.server_hosts.push_back(*fabric.find(h));
    const std::string prefix = s.has_jobs_list ? fmt::format("$.jobs[{}].", index) : "$.";
    try {
        models::TrainingJob job = models::resolve_job(j, fabric, ctx);
        detail::check_compute(j, job.compute, prefix);
        return job;
    } catch (const models::DeviceRefused& e) {
        throw ScenarioError(e.worker < 0 ? prefix + "device" : fmt::format("{}worker_devices[{}]", prefix, e.worker),
                            e.what());
    } catch (const sim::TimeOverflow&) {  // the k micro-batches of one step, summed in event-clock time
        throw ScenarioError(prefix + "gradient_accumulation",
                            fmt::format("one step of {} micro-batches would compute beyond the event clock (about 106 "
                                        "days); expected under 1e6 s",
                                        j.gradient_accumulation));
    }
}

// The run every simulation of `s` reads, built once: the fabric the placement was read against, with the
// routing, host speeds and transports applied, and each job resolved on it.
std::shared_ptr<const ResolvedRun> resolve_run(const Scenario& s, topo::Fabric fabric) {
    auto out = std::make_shared<ResolvedRun>();
    try {
        fabric.set_routing(s.routing);
        for (const auto& [host, bw] : s.host_bandwidth) fabric.set_host_bandwidth(*fabric.find(host), bw);
    } catch (const std::invalid_argument& e) {
        throw ScenarioError("$.network", e.what());
    }
    const sim::Time collective_overhead = topo::apply_transports(fabric, s.transports);
    for (std::size_t i = 0; i < s.jobs.size(); ++i) out->jobs.push_back(make_job(s, i, fabric, collective_overhead));
    models::share_switch_memory(out->jobs, fabric, aggregation_memory(s.topology));
    out->fabric = std::move(fabric);
    return out;
}

bool default_dedicated(const JobSpec& j) {
    return j.architecture.kind == topo::ArchKind::ps && j.architecture.placement == topo::ServerPlacement::dedicated &&
           j.architecture.server_placement.empty();
}

// Places every job's workers and servers on hosts, checking every name. Jobs without a
// placement take the next unused hosts in order; default dedicated servers take the
// first hosts no worker uses.
void resolve_placement(Scenario& s, const topo::Fabric& fabric, const std::vector<const json*>& placements,
                       const std::vector<std::string>& paths) {
    std::vector<std::string> hosts;
    for (topo::Vertex v : fabric.hosts()) hosts.push_back(fabric.name(v));
    auto check_host = [&](const std::string& name, const std::string& path) {
        if (std::find(hosts.begin(), hosts.end(), name) == hosts.end()) {
            const std::string range =
                hosts.size() <= 6 ? list(hosts) : fmt::format("\"{}\" .. \"{}\"", hosts.front(), hosts.back());
            throw ScenarioError(path, fmt::format("expected a host of the network ({}), got \"{}\"", range, name));
        }
    };
    for (const auto& hb : s.host_bandwidth) check_host(hb.first, "$.network.host_bandwidth." + hb.first);
    std::set<std::string> used;
    std::size_t cursor = 0;
    for (std::size_t i = 0; i < s.jobs.size(); ++i) {
        JobSpec& job = s.jobs[i];
        const std::string path = paths[i] + "placement";
        if (placements[i]) {
            const json& p = read_array(*placements[i], path, 1);
            if (p.size() != job.workers)
                throw ScenarioError(
                    path, fmt::format("expected {} host names (one per worker), got {}", job.workers, p.size()));
            for (std::size_t w = 0; w < p.size(); ++w) {
                const std::string wp = fmt::format("{}[{}]", path, w);
                job.placement.push_back(read_string(p[w], wp));
                check_host(job.placement.back(), wp);
            }
        } else {
            if (cursor + job.workers > hosts.size())
                throw ScenarioError("$.network", fmt::format("the network has {} hosts but {} workers need one each "
                                                             "(or give a placement)",
                                                             hosts.size(), cursor + job.workers));
            job.placement.assign(hosts.begin() + static_cast<std::ptrdiff_t>(cursor),
                                 hosts.begin() + static_cast<std::ptrdiff_t>(cursor + job.workers));
            cursor += job.workers;
        }
        used.insert(job.placement.begin(), job.placement.end());
    }
    for (std::size_t i = 0; i < s.jobs.size(); ++i) {
        JobSpec& job = s.jobs[i];
        const auto& a = job.architecture;
        if (a.kind != topo::ArchKind::ps) continue;
        if (!a.server_placement.empty()) {
            for (std::size_t k = 0; k < a.server_placement.size(); ++k)
                check_host(a.server_placement[k], fmt::format("{}architecture.server_placement[{}]", paths[i], k));
            job.server_placement = a.server_placement;
        } else if (a.placement == topo::ServerPlacement::colocated) {
            job.server_placement.assign(job.placement.begin(),
                                        job.placement.begin() + static_cast<std::ptrdiff_t>(a.servers));
        } else {
            for (const auto& h : hosts)
                if (job.server_placement.size() < a.servers && !used.contains(h)) {
                    job.server_placement.push_back(h);
                    used.insert(h);
                }
            if (job.server_placement.size() < a.servers)
                throw ScenarioError(paths[i] + "architecture.servers",
                                    fmt::format("{} dedicated servers need hosts no worker or other server uses; the "
                                                "network has {} free",
                                                a.servers, job.server_placement.size()));
        }
    }
}

// Sharding: the size of each job's shard groups (all its workers, or each node's), from the placement; hybrid
// sharding needs the same number of workers on every node (topo::shard_groups says so).
void resolve_shard_groups(Scenario& s, const topo::Fabric& fabric, const std::vector<std::string>& paths) {
    for (std::size_t i = 0; i < s.jobs.size(); ++i) {
        JobSpec& job = s.jobs[i];
        if (!job.sharding.any()) continue;
        // DiLoCo shards inside each island (models/diloco.hpp).
        // Model parallelism: the distributed optimizer shards over each stage's data x context ranks.
        const auto& par = job.parallelism;
        job.sharding.group_size = job.sync.kind == models::SyncKind::diloco ? job.workers / job.sync.islands
                                  : par.any()                               ? par.data(job.workers) * par.context
                                                                            : job.workers;
        const auto& sh = job.sharding;
        if ((sh.quantized_weights || sh.quantized_gradients) && !(job.device.memory_bandwidth.bytes_per_s() > 0.0))
            throw ScenarioError(
                paths[i] + (sh.quantized_weights ? "sharding.quantized_weights" : "sharding.quantized_gradients"),
                "expected a device with a memory bandwidth (ZeRO++'s quantization kernels are "
                "memory-bound); give device.memory_bandwidth");
        // Hybrid sharding's groups, and qgZ's all-to-all (rank j of every node), need equal nodes.
        const bool by_node = sh.group == models::ShardGroup::node;
        if (!by_node && !sh.quantized_gradients) continue;
        std::vector<std::uint32_t> node_of;
        for (const auto& h : job.placement) node_of.push_back(fabric.node_of(*fabric.find(h)));
        std::vector<std::vector<std::uint32_t>> nodes;
        try {
            nodes = topo::shard_groups(node_of, job.workers, true);
        } catch (const std::invalid_argument& e) {
            if (by_node) throw ScenarioError(paths[i] + "sharding.group", e.what());
            throw ScenarioError(paths[i] + "sharding.quantized_gradients",
                                "expected the same number of workers on every node (qgZ's all-to-all pairs "
                                "rank j of every node); place the workers evenly or drop quantized_gradients");
        }
        if (by_node) job.sharding.group_size = static_cast<std::uint32_t>(nodes.front().size());
    }
}

}  // namespace

namespace {
// The proxy's largest step: Fashion-MNIST's 60,000 training images (the convergence.batch_size limit).
constexpr std::uint64_t kMaxProxyStepSamples = 60'000;

Scenario load_scenario_unlogged(const json& j, const std::string& base_dir) {
    const Tables& t = tables();
    detail::reject_planned_keys(j, "$", "scenario");
    ObjectReader root(j, "$", t.root);
    Scenario s;
    root_keys().read(root, s);
    std::optional<ConvergenceSpec> convergence;
    if (root.has("convergence")) {
        convergence = detail::read_convergence(root.at("convergence"), root.path("convergence"));
        if (convergence->max_iterations > 0) s.iterations = convergence->max_iterations;
    }

    std::vector<const json*> placements;
    std::vector<std::string> paths;  // each job's path prefix, ending in "."
    s.has_jobs_list = root.has("jobs");
    if (s.has_jobs_list && convergence)
        throw ScenarioError(root.path("convergence"), "applies to a single job, not a \"jobs\" list");
    if (s.has_jobs_list) {
        for (const auto& k : job_keys().keys) root.forbid(k.name, "with \"jobs\", per-job keys go inside each job");
        const json& jobs = read_array(root.at("jobs"), root.path("jobs"), 1);
        std::set<std::string> names;
        for (std::size_t i = 0; i < jobs.size(); ++i) {
            const std::string path = fmt::format("$.jobs[{}]", i);
            ObjectReader r(jobs[i], path, t.job);
            JobSpec job;
            job_object_keys().read(r, job, {base_dir});
            detail::check_pipeline_keys(job, path + ".");
            if (!r.has("name")) job.name = fmt::format("job{}", i);
            if (!names.insert(job.name).second)
                throw ScenarioError(r.path("name"), fmt::format("duplicate job name \"{}\"", job.name));
            placements.push_back(r.has("placement") ? &r.at("placement") : nullptr);
            paths.push_back(path + ".");
            r.finish();
            s.jobs.push_back(std::move(job));
        }
    } else {
        JobSpec job;
        job_keys().read(root, job, {base_dir});
        detail::check_pipeline_keys(job, "$.");
        job.name = "job0";
        job.convergence = convergence;
        if (convergence) {
            if (job.sync.kind == models::SyncKind::diloco)
                throw ScenarioError("$.sync.kind",
                                    "convergence replay runs the schemes of one model per worker; "
                                    "\"diloco\" is simulated but not replayed (drop \"convergence\")");
            // What the replay can execute for real (validate/replay.hpp): the compressors marked replayable.
            const models::CompressorInfo& info = models::compressor_info(job.compression);
            if (!info.replayable) {
                std::vector<std::string> replayable;
                for (const models::CompressorInfo* c : models::compressors())
                    if (c->replayable) replayable.emplace_back(c->name);
                throw ScenarioError("$.compression.kind",
                                    fmt::format("convergence replay runs compression {}; \"{}\" is simulated but not "
                                                "replayed (drop \"convergence\" to simulate it)",
                                                detail::list(replayable), info.name));
            }
            for (const auto& [key, value] : info.replay_fixed) {
                const models::CompressorParam* p = info.param(key);
                const double got = p->integer != nullptr ? job.compression.*p->integer : job.compression.*p->number;
                if (got != value)
                    throw ScenarioError(fmt::format("$.compression.{}", key),
                                        fmt::format("convergence replay runs {} with {} {:g}; expected {:g}", info.name,
                                                    key, value, value));
            }
            if (job.workers > 64)
                throw ScenarioError("$.workers", fmt::format("convergence replay keeps one real model per worker; "
                                                             "expected at most 64 workers, got {}",
                                                             job.workers));
            // A step with accumulation replays one gradient over all its micro-batches (validate/convergence.cpp).
            if (const std::uint64_t step = std::uint64_t{convergence->batch_size} * job.gradient_accumulation;
                step > kMaxProxyStepSamples)
                throw ScenarioError(
                    "$.gradient_accumulation",
                    fmt::format("convergence replay computes a step's gradient over "
                                "convergence.batch_size x gradient_accumulation proxy samples; "
                                "expected at most {}, got {} x {} = {}",
                                kMaxProxyStepSamples, convergence->batch_size, job.gradient_accumulation, step));
            if (convergence->train_samples > 0 && convergence->train_samples < job.workers)
                throw ScenarioError("$.convergence.train_samples",
                                    fmt::format("every worker trains on its own shard; expected at least {} samples "
                                                "(one per worker) or 0 (all), got {}",
                                                job.workers, convergence->train_samples));
        }
        placements.push_back(root.has("placement") ? &root.at("placement") : nullptr);
        paths.push_back("$.");
        s.jobs.push_back(std::move(job));
    }

    std::size_t workers = 0, hosts_needed = 0;
    for (const auto& job : s.jobs) {
        workers += job.workers;
        hosts_needed += job.workers + (default_dedicated(job) ? job.architecture.servers : 0);
    }
    detail::NetworkSpec net = detail::read_network(root.at("network"), base_dir, hosts_needed, workers);
    s.topology = std::move(net.topology);
    s.network_model = net.model;
    s.routing = net.routing;
    s.host_bandwidth = std::move(net.host_bandwidth);
    s.transports = net.transports;
    s.transport_source = net.transport_source;
    detail::check_limits(s, "$.jobs");
    // The fabric the placement and the shard groups are read against and the run simulates, built once here.
    topo::Fabric fabric;
    try {
        fabric = topo::build_fabric(s.topology);
    } catch (const std::invalid_argument& e) {
        throw ScenarioError("$.network", e.what());
    }
    resolve_placement(s, fabric, placements, paths);
    resolve_shard_groups(s, fabric, paths);
    detail::check_in_network(s, fabric, paths);
    root.finish();
    s.resolved = resolve_run(s, std::move(fabric));
    return s;
}
}  // namespace

Scenario load_scenario(const json& j, const std::string& base_dir) {
    const InputFileLog inputs;
    Scenario s = load_scenario_unlogged(j, base_dir);
    s.input_files = inputs.files();
    return s;
}

void apply_override(json& j, const std::string& assignment) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
        throw ScenarioError("--set " + assignment, "expected PATH=VALUE, e.g. network.bandwidth=25Gbps");
    const std::string path = assignment.substr(0, eq);
    const std::string value = assignment.substr(eq + 1);
    std::vector<std::string> parts;
    std::stringstream ss(path);
    for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
    if (parts.empty() || path.back() == '.' ||
        std::any_of(parts.begin(), parts.end(), [](auto& p) { return p.empty(); }))
        throw ScenarioError("--set " + assignment, "expected a dotted key path such as network.bandwidth");
    json* node = &j;
    std::string where = "$";
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const std::string& key = parts[i];
        const bool last = i + 1 == parts.size();
        if (node->is_array()) {
            std::size_t idx = 0;
            auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), idx);
            if (ec != std::errc{} || ptr != key.data() + key.size() || idx >= node->size())
                throw ScenarioError(where,
                                    fmt::format("--set: expected an index below {}, got \"{}\"", node->size(), key));
            node = &(*node)[idx];
            where += fmt::format("[{}]", idx);
        } else {
            if (!node->is_object()) {
                if (!node->is_null()) throw ScenarioError(where, "--set: cannot set a key inside " + describe(*node));
                *node = json::object();
            }
            node = &(*node)[key];
            where += "." + key;
        }
        if (last) {
            try {
                *node = parse_strict(value);
            } catch (const ScenarioError&) {
                *node = value;
            }
        }
    }
}

namespace {
thread_local InputFileLog* t_input_logs = nullptr;  // the innermost live log of this thread
}  // namespace

InputFileLog::InputFileLog() : outer_(t_input_logs) {
    t_input_logs = this;
}

InputFileLog::~InputFileLog() {
    t_input_logs = outer_;
}

json read_json_file(const std::string& file) {
    for (InputFileLog* log = t_input_logs; log != nullptr; log = log->outer_)
        if (file != "-" && std::find(log->files_.begin(), log->files_.end(), file) == log->files_.end())
            log->files_.push_back(file);
    if (file == "-") {  // standard input, as Unix tools take it ("./-" names a file called "-")
        std::ostringstream buf;
        buf << std::cin.rdbuf();
        if (std::cin.bad()) throw ScenarioError("$", "cannot read standard input");
        return parse_strict(buf.str());
    }
    std::error_code ec;
    const auto type = std::filesystem::status(file, ec).type();
    if (type == std::filesystem::file_type::not_found) throw ScenarioError("$", "cannot read the file: no such file");
    if (type == std::filesystem::file_type::directory)
        throw ScenarioError("$", "cannot read the file: it is a directory");
    if (type != std::filesystem::file_type::regular)
        throw ScenarioError("$", "cannot read the file (not a regular file)");
    std::ifstream in(file, std::ios::binary);
    if (!in) throw ScenarioError("$", "cannot open the file for reading");
    std::ostringstream buf;
    buf << in.rdbuf();
    if (!in && !in.eof()) throw ScenarioError("$", "cannot read the file");
    return parse_strict(buf.str());
}

Scenario load_scenario_file(const std::string& file, const std::vector<std::string>& overrides) {
    json j = read_json_file(file);
    for (const auto& o : overrides) {
        apply_override(j, o);
        check_key_path(o.substr(0, o.find('=')), "--set " + o);  // a key the scenario schema declares
    }
    return load_scenario(j, std::filesystem::path(file).parent_path().string());
}

}  // namespace ddlsim::scenario
