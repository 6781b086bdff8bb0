// Time to accuracy: from a scenario and its simulated run to the replay and its result keys.
#include "validate/convergence.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "scenarios/json_reader.hpp"

namespace ddlsim::validate {
namespace {

using nlohmann::json;

constexpr std::uint64_t kSyntheticSeed = 0x5e7;       // the synthetic task's data, fixed like a data set
constexpr std::size_t kSyntheticTrainSamples = 4000;  // when train_samples is 0

bool is_fashion_mnist(const std::string& task) {
    return task.starts_with("fashion_mnist");
}

void require_files(const std::string& task, const std::string& dir) {
    if (is_fashion_mnist(task) && !fashion_mnist_available(dir))
        throw scenario::ScenarioError(
            "$.convergence.task", fmt::format("task {} needs the Fashion-MNIST files in {}; install the Debian "
                                              "package dataset-fashion-mnist (apt-get install dataset-fashion-mnist)",
                                              task, dir));
}

// A whole Fashion-MNIST split, read once per process.
std::shared_ptr<const Dataset> fashion_mnist(const std::string& dir, const std::string& split) {
    static std::mutex mu;
    static std::map<std::pair<std::string, std::string>, std::shared_ptr<const Dataset>> cache;
    const std::lock_guard lock(mu);
    auto& slot = cache[{dir, split}];
    if (!slot) slot = std::make_shared<const Dataset>(load_fashion_mnist(dir, split));
    return slot;
}

// Samples [first, first + count) of `d` as a data set of their own.
std::shared_ptr<const Dataset> part(const Dataset& d, std::size_t first, std::size_t count) {
    auto out = std::make_shared<Dataset>();
    out->channels = d.channels;
    out->height = d.height;
    out->width = d.width;
    count = std::min(count, d.size() - std::min(first, d.size()));
    const auto dim = static_cast<std::ptrdiff_t>(d.dim());
    const auto at = static_cast<std::ptrdiff_t>(first);
    const auto n = static_cast<std::ptrdiff_t>(count);
    out->images.assign(d.images.begin() + at * dim, d.images.begin() + (at + n) * dim);
    out->labels.assign(d.labels.begin() + at, d.labels.begin() + at + n);
    return out;
}

std::string accuracy_text(double a) {
    return fmt::format("{:.4g}", a);
}

}  // namespace

CodecSpec replay_codec(const models::CompressionSpec& c) {
    CodecSpec s;
    s.error_feedback = c.error_feedback;
    s.density = c.density;
    s.bits = c.bits;
    const models::CompressorInfo& info = models::compressor_info(c);
    const auto kind = codec_kind(info.name);
    if (!info.replayable || !kind)
        throw std::invalid_argument(fmt::format("convergence replay cannot run compression \"{}\"", info.name));
    s.kind = *kind;
    for (const auto& [key, value] : info.replay_fixed) {
        const models::CompressorParam* p = info.param(key);
        const double got = p->integer != nullptr ? c.*p->integer : c.*p->number;
        if (got != value)
            throw std::invalid_argument(
                fmt::format("convergence replay runs {} with {} {:g} only", info.name, key, value));
    }
    return s;
}

void require_task_data(const scenario::Scenario& s, const std::string& fashion_mnist_dir) {
    if (!s.jobs.empty() && s.jobs[0].convergence) require_files(s.jobs[0].convergence->task, fashion_mnist_dir);
}

ReplayData task_data(const scenario::ConvergenceSpec& c, const std::string& fashion_mnist_dir) {
    ReplayData d;
    if (is_fashion_mnist(c.task)) {
        require_files(c.task, fashion_mnist_dir);
        d.train = fashion_mnist(fashion_mnist_dir, "train");
        d.train_size = c.train_samples == 0 ? d.train->size() : std::min<std::size_t>(c.train_samples, d.train->size());
        d.test = part(*fashion_mnist(fashion_mnist_dir, "t10k"), 0, c.test_samples);
        return d;
    }
    if (c.task != "synthetic_mlp") throw std::invalid_argument(fmt::format("unknown convergence task {}", c.task));
    const std::size_t train = c.train_samples == 0 ? kSyntheticTrainSamples : c.train_samples;
    const auto all = synthetic_dataset(train + c.test_samples, kSyntheticSeed);
    d.train = part(all, 0, train);
    d.train_size = train;
    d.test = part(all, train, c.test_samples);
    return d;
}

ReplayOptions replay_options(const scenario::Scenario& s) {
    const auto& job = s.jobs.at(0);
    if (!job.convergence) throw std::invalid_argument("replay_options: the scenario has no convergence block");
    const auto& c = *job.convergence;
    ReplayOptions o;
    o.model = c.task == "fashion_mnist_cnn" ? ModelKind::cnn : ModelKind::mlp;
    o.learning_rate = static_cast<float>(c.learning_rate);
    // A step with gradient accumulation averages the gradients of its micro-batches: one gradient over all of them.
    o.batch_size = c.batch_size * job.gradient_accumulation;
    o.eval_every = c.eval_every;
    o.target_accuracy = c.target_accuracy;
    o.codec = replay_codec(job.compression);
    o.graph = job.architecture.graph;
    o.seed = s.seed;
    return o;
}

ReplayResult replay_scenario(const scenario::Scenario& s, const scenario::RunResult& r) {
    const auto options = replay_options(s);
    if (r.jobs.empty() || !r.jobs[0].schedule)
        throw std::logic_error("convergence replay: the run recorded no update schedule");
    return replay(*r.jobs[0].schedule, task_data(*s.jobs[0].convergence), options);
}

json convergence_json(const scenario::ConvergenceSpec& c, const ReplayResult& r) {
    json curve = json::array();
    for (const auto& p : r.curve)
        curve.push_back({{"time_s", p.time_s}, {"iteration", p.iteration}, {"loss", p.loss}, {"accuracy", p.accuracy}});
    return {{"task", c.task},
            {"target_accuracy", c.target_accuracy},
            {"time_to_accuracy_s", r.time_to_accuracy_s ? json(*r.time_to_accuracy_s) : json(nullptr)},
            {"iterations_to_accuracy", r.iterations_to_accuracy ? json(*r.iterations_to_accuracy) : json(nullptr)},
            {"final_accuracy", r.final_accuracy},
            {"final_loss", r.final_loss},
            {"curve", std::move(curve)},
            {"gradients", r.gradients},
            {"replay_wall_time_s", r.wall_time_s}};
}

std::vector<std::string> convergence_columns() {
    return {"task",           "target_accuracy", "time_to_accuracy_s", "iterations_to_accuracy",
            "final_accuracy", "final_loss",      "gradients",          "replay_wall_time_s"};
}

json convergence_result(const scenario::Scenario& s, const scenario::RunResult& r) {
    return convergence_json(*s.jobs.at(0).convergence, replay_scenario(s, r));
}

std::optional<ProxyFactor> proxy_efficiency(const scenario::Scenario& s, const json& keys) {
    const json& mine = keys.at("iterations_to_accuracy");
    if (mine.is_null()) return std::nullopt;
    scenario::Scenario bsp = s;
    scenario::JobSpec& job = bsp.jobs.front();
    job.sync = models::SyncSpec{};
    job.compression = models::CompressionSpec{};
    if (job.architecture.kind == topo::ArchKind::gossip) job.architecture = topo::ArchitectureSpec{};
    job.training.reset();
    const json base = convergence_result(bsp, scenario::run_scenario(bsp));
    const json& theirs = base.at("iterations_to_accuracy");
    if (theirs.is_null()) return std::nullopt;
    const double a = mine.get<double>(), b = theirs.get<double>();
    return ProxyFactor{a / b,
                       fmt::format("proxy: {} iterations of {} to {} under this scheme, {} under bsp", a,
                                   s.jobs.front().convergence->task, s.jobs.front().convergence->target_accuracy, b)};
}

std::string convergence_summary(const json& k) {
    std::string out = fmt::format("  convergence   {} replayed on the simulated schedule: {} gradients in {:.1f} s\n",
                                  k.at("task").get<std::string>(), k.at("gradients").get<std::uint64_t>(),
                                  k.at("replay_wall_time_s").get<double>());
    const auto& curve = k.at("curve");
    const auto target = accuracy_text(k.at("target_accuracy").get<double>());
    if (!k.at("time_to_accuracy_s").is_null()) {
        out +=
            fmt::format("  time to accuracy {}: {:.4g} s simulated, {} iterations (accuracy {})\n", target,
                        k.at("time_to_accuracy_s").get<double>(), k.at("iterations_to_accuracy").get<std::uint32_t>(),
                        accuracy_text(k.at("final_accuracy").get<double>()));
    } else {
        const auto last = curve.empty() ? 0U : curve.back().at("iteration").get<std::uint32_t>();
        out += fmt::format("  accuracy {} not reached in {} iterations (final accuracy {}, {:.4g} s simulated)\n",
                           target, last, accuracy_text(k.at("final_accuracy").get<double>()),
                           curve.empty() ? 0.0 : curve.back().at("time_s").get<double>());
    }
    return out;
}

}  // namespace ddlsim::validate
