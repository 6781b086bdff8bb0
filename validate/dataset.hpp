// Image classification data for the real-training validation: Fashion-MNIST (Xiao, Rasul,
// Vollgraf, arXiv 1708.07747) read from the gzipped IDX files of Debian's dataset-fashion-mnist
// package, and a small synthetic set of the same shape so that tests never need the package.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/rng.hpp"

namespace ddlsim::validate {

/// Where Debian's dataset-fashion-mnist package installs the IDX files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// A mini-batch: `size` images of `dim` floats each (row-major), and their labels.
struct Batch {
    std::vector<float> x;
    std::vector<std::uint8_t> y;
    std::size_t size = 0;
};

/// Images (N x C x H x W, standardised floats) and their class labels (0..9).
struct Dataset {
    std::uint32_t channels = 1;
    std::uint32_t height = 28;
    std::uint32_t width = 28;
    std::vector<float> images;
    std::vector<std::uint8_t> labels;

    [[nodiscard]] std::size_t size() const { return labels.size(); }
    [[nodiscard]] std::size_t dim() const { return std::size_t{channels} * height * width; }
    /// The samples at `indices`, copied into one batch.
    [[nodiscard]] Batch gather(std::span<const std::uint32_t> indices) const;
    /// Samples [first, first + count) as one batch.
    [[nodiscard]] Batch slice(std::size_t first, std::size_t count) const;
};

/// Reads "train" or "t10k" images and labels from `dir` (gzipped IDX), keeping the first `limit`
/// samples (0: all); pixels are scaled to [0, 1] and standardised with the training set's mean and
/// standard deviation. Throws std::runtime_error naming the file when it is missing or malformed.
[[nodiscard]] Dataset load_fashion_mnist(const std::string& dir, const std::string& split, std::size_t limit = 0);

/// Whether the Fashion-MNIST files are present in `dir`.
[[nodiscard]] bool fashion_mnist_available(const std::string& dir);

/// `n` 28x28 single-channel samples of 10 classes: a fixed random prototype per class plus
/// Gaussian noise; learnable in a few dozen steps. Deterministic in `seed`.
[[nodiscard]] Dataset synthetic_dataset(std::size_t n, std::uint64_t seed);

/// Worker `rank`'s batches from its shard {rank, rank + workers, ...} of a dataset of `size`
/// samples, reshuffled every epoch; deterministic in the seed.
class ShardSampler {
public:
    ShardSampler(std::size_t size, std::uint32_t workers, std::uint32_t rank, std::uint64_t seed);
    /// The indices of the next `batch` samples.
    [[nodiscard]] std::vector<std::uint32_t> next(std::uint32_t batch);

private:
    void reshuffle();
    std::vector<std::uint32_t> shard_;
    std::size_t pos_ = 0;
    sim::rng::SplitMix64 rng_;
};

}  // namespace ddlsim::validate
