#include "validate/dataset.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

namespace ddlsim::validate {
namespace {

// Fashion-MNIST training-set pixel statistics after scaling to [0, 1].
constexpr float kMean = 0.2860F;
constexpr float kStd = 0.3530F;

std::vector<std::uint8_t> read_gz(const std::string& file) {
    gzFile f = gzopen(file.c_str(), "rb");
    if (f == nullptr) throw std::runtime_error(fmt::format("{}: cannot open", file));
    std::vector<std::uint8_t> out;
    std::vector<std::uint8_t> chunk(1 << 20);
    for (;;) {
        const int got = gzread(f, chunk.data(), static_cast<unsigned>(chunk.size()));
        if (got < 0) {
            gzclose(f);
            throw std::runtime_error(fmt::format("{}: not a readable gzip file", file));
        }
        if (got == 0) break;
        out.insert(out.end(), chunk.begin(), chunk.begin() + got);
    }
    gzclose(f);
    return out;
}

std::uint32_t be32(const std::vector<std::uint8_t>& b, std::size_t at) {
    return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) | (std::uint32_t{b[at + 2]} << 8) |
           std::uint32_t{b[at + 3]};
}

// IDX: magic 0x00000800 | dims, then dims big-endian sizes, then unsigned bytes.
std::vector<std::uint8_t> read_idx(const std::string& file, std::uint32_t want_dims, std::vector<std::uint32_t>& dims) {
    auto b = read_gz(file);
    if (b.size() < 4 || be32(b, 0) != (0x800U | want_dims))
        throw std::runtime_error(fmt::format("{}: not an IDX file of {} unsigned-byte dimensions", file, want_dims));
    std::size_t n = 1;
    dims.clear();
    for (std::uint32_t d = 0; d < want_dims; ++d) {
        if (b.size() < 8 + 4 * d) throw std::runtime_error(fmt::format("{}: truncated header", file));
        dims.push_back(be32(b, 4 + 4 * d));
        n *= dims.back();
    }
    const std::size_t header = 4 + 4 * std::size_t{want_dims};
    if (b.size() != header + n)
        throw std::runtime_error(fmt::format("{}: expected {} data bytes, found {}", file, n, b.size() - header));
    b.erase(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(header));
    return b;
}

}  // namespace

Batch Dataset::gather(std::span<const std::uint32_t> indices) const {
    Batch b;
    const std::size_t d = dim();
    b.size = indices.size();
    b.x.resize(b.size * d);
    b.y.resize(b.size);
    for (std::size_t i = 0; i < b.size; ++i) {
        std::copy_n(images.begin() + static_cast<std::ptrdiff_t>(indices[i] * d), d,
                    b.x.begin() + static_cast<std::ptrdiff_t>(i * d));
        b.y[i] = labels[indices[i]];
    }
    return b;
}

Batch Dataset::slice(std::size_t first, std::size_t count) const {
    count = std::min(count, size() - std::min(first, size()));
    std::vector<std::uint32_t> idx(count);
    for (std::size_t i = 0; i < count; ++i) idx[i] = static_cast<std::uint32_t>(first + i);
    return gather(idx);
}

bool fashion_mnist_available(const std::string& dir) {
    std::error_code ec;
    for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                          "t10k-labels-idx1-ubyte.gz"})
        if (!std::filesystem::is_regular_file(std::filesystem::path(dir) / f, ec)) return false;
    return true;
}

Dataset load_fashion_mnist(const std::string& dir, const std::string& split, std::size_t limit) {
    if (split != "train" && split != "t10k")
        throw std::invalid_argument(fmt::format("unknown split \"{}\"; expected train or t10k", split));
    std::vector<std::uint32_t> idims, ldims;
    const auto pixels = read_idx(fmt::format("{}/{}-images-idx3-ubyte.gz", dir, split), 3, idims);
    auto labels = read_idx(fmt::format("{}/{}-labels-idx1-ubyte.gz", dir, split), 1, ldims);
    if (idims[0] != ldims[0])
        throw std::runtime_error(fmt::format("{}: {} images but {} labels", dir, idims[0], ldims[0]));
    Dataset d;
    d.height = idims[1];
    d.width = idims[2];
    const std::size_t n = limit == 0 ? idims[0] : std::min<std::size_t>(limit, idims[0]);
    d.images.resize(n * d.dim());
    for (std::size_t i = 0; i < d.images.size(); ++i)
        d.images[i] = (static_cast<float>(pixels[i]) / 255.0F - kMean) / kStd;
    labels.resize(n);
    for (auto l : labels)
        if (l > 9) throw std::runtime_error(fmt::format("{}: label {} out of range 0..9", dir, int{l}));
    d.labels = std::move(labels);
    return d;
}

Dataset synthetic_dataset(std::size_t n, std::uint64_t seed) {
    Dataset d;
    const std::size_t dim = d.dim();
    sim::rng::SplitMix64 g(seed, "synthetic dataset");
    std::vector<float> prototypes(10 * dim);
    for (auto& p : prototypes) p = sim::rng::uniform01(g) < 0.3 ? 1.5F : -0.5F;
    d.images.resize(n * dim);
    d.labels.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto label = static_cast<std::uint8_t>(sim::rng::below(g, 10));
        d.labels[i] = label;
        for (std::size_t k = 0; k < dim; ++k)
            d.images[i * dim + k] = prototypes[label * dim + k] + static_cast<float>(sim::rng::normal(g));
    }
    return d;
}

ShardSampler::ShardSampler(std::size_t size, std::uint32_t workers, std::uint32_t rank, std::uint64_t seed)
    : rng_(sim::rng::substream(sim::rng::stream(seed, "shard sampler"), rank)) {
    if (workers == 0 || rank >= workers || size < workers)
        throw std::invalid_argument(fmt::format("cannot shard {} samples over {} workers", size, workers));
    for (std::size_t i = rank; i < size; i += workers) shard_.push_back(static_cast<std::uint32_t>(i));
    reshuffle();
}

void ShardSampler::reshuffle() {
    sim::rng::shuffle(rng_, std::span(shard_));
    pos_ = 0;
}

std::vector<std::uint32_t> ShardSampler::next(std::uint32_t batch) {
    std::vector<std::uint32_t> out;
    out.reserve(batch);
    while (out.size() < batch) {
        if (pos_ == shard_.size()) reshuffle();
        out.push_back(shard_[pos_++]);
    }
    return out;
}

}  // namespace ddlsim::validate
