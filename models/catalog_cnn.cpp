// Convolutional workloads of the built-in catalog, following torchvision's reference implementations:
//   AlexNet       Krizhevsky et al. 2012; torchvision models/alexnet.py (the "one weird trick" single-tower
//                 variant: 64-192-384-256-256 channels)
//   VGG-16        Simonyan & Zisserman 2014, arXiv:1409.1556, configuration D without BatchNorm; models/vgg.py
//   ResNet-50/101 He et al. 2015, arXiv:1512.03385; models/resnet.py (v1.5: the stride is on the 3x3 conv)
//   Inception-v3  Szegedy et al. 2015, arXiv:1512.00567; models/inception.py, with the auxiliary classifier
// Tensor and layer names are torchvision's parameter and module names. A layer's FLOPs are 2 x the
// multiply-accumulates of its convolution or matmul for one image; BatchNorm, activations and pooling are not counted.
// Besides the FLOPs each layer lists its kernels as parts (models/workload.hpp) with the activation elements they
// read and write per image, for the roofline in models/compute.cpp: a convolution reads its input and writes its
// output; training-mode BatchNorm reads its input twice (statistics, then normalisation) and writes once (3
// passes); ReLU reads and writes (2); a residual add reads two and writes one (3); pooling reads its input and
// writes its output. Inception-v3's in-block poolings and the classifiers' dropout are not counted (small).
#include <cassert>
#include <initializer_list>

#include "models/catalog_detail.hpp"

namespace ddlsim::models::catalog_detail {
namespace {

constexpr std::int64_t k_imagenet_classes = 1000;

/// The activations of one image: channels x height x width.
struct FeatureMap {
    std::int64_t channels = 0;
    std::int64_t height = 0;
    std::int64_t width = 0;

    [[nodiscard]] std::int64_t size() const { return channels * height * width; }
};

/// The hyper-parameters of a 2-D convolution (nn.Conv2d with groups = 1, dilation = 1).
struct Conv {
    std::int64_t out_channels = 0;
    std::int64_t kernel_h = 1;
    std::int64_t kernel_w = 1;
    std::int64_t stride = 1;
    std::int64_t pad_h = 0;
    std::int64_t pad_w = 0;
};

/// A `kernel` x `kernel` convolution.
[[nodiscard]] Conv square(std::int64_t out_channels, std::int64_t kernel, std::int64_t stride = 1,
                          std::int64_t pad = 0) {
    return Conv{out_channels, kernel, kernel, stride, pad, pad};
}

/// A stride-1 `kernel_h` x `kernel_w` convolution padded to keep the spatial size (odd kernels).
[[nodiscard]] Conv same(std::int64_t out_channels, std::int64_t kernel_h, std::int64_t kernel_w) {
    return Conv{out_channels, kernel_h, kernel_w, 1, kernel_h / 2, kernel_w / 2};
}

[[nodiscard]] std::int64_t output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad) {
    return (in + 2 * pad - kernel) / stride + 1;
}

/// Max or average pooling without ceil mode: the channels stay, the spatial size shrinks.
[[nodiscard]] FeatureMap pool(FeatureMap in, std::int64_t kernel, std::int64_t stride, std::int64_t pad = 0) {
    return FeatureMap{in.channels, output_size(in.height, kernel, stride, pad),
                      output_size(in.width, kernel, stride, pad)};
}

/// Inception's channel concatenation of branches that end at the same spatial size.
[[nodiscard]] FeatureMap concat(std::initializer_list<FeatureMap> branches) {
    FeatureMap out = *branches.begin();
    out.channels = 0;
    for (const FeatureMap& branch : branches) {
        assert(branch.height == out.height && branch.width == out.width);
        out.channels += branch.channels;
    }
    return out;
}

/// Appends the weight (no bias) of convolution `prefix` and its FLOPs to `layer`; returns its output.
FeatureMap add_conv(Layer& layer, const std::string& prefix, FeatureMap in, const Conv& conv) {
    const FeatureMap out{conv.out_channels, output_size(in.height, conv.kernel_h, conv.stride, conv.pad_h),
                         output_size(in.width, conv.kernel_w, conv.stride, conv.pad_w)};
    const std::int64_t fan_in = in.channels * conv.kernel_h * conv.kernel_w;
    const std::int64_t weight = conv.out_channels * fan_in;
    add_matrix(layer, prefix + ".weight", conv.out_channels, fan_in);  // viewed as out x (in x kh x kw)
    const double flops = 2.0 * static_cast<double>(weight * out.height * out.width);
    layer.fwd_flops += flops;
    // As an implicit GEMM: (batch x out pixels) x out_channels outputs.
    layer.parts.push_back(LayerPart{.kind = PartKind::conv,
                                    .flops = flops,
                                    .activations = static_cast<double>(in.size() + out.size()),
                                    .weights = static_cast<double>(weight),
                                    .rows_per_sample = static_cast<double>(out.height * out.width),
                                    .cols = static_cast<double>(conv.out_channels),
                                    .conv = ConvGeometry{.kernel_h = static_cast<int>(conv.kernel_h),
                                                         .kernel_w = static_cast<int>(conv.kernel_w),
                                                         .stride = static_cast<int>(conv.stride),
                                                         .in_channels = static_cast<double>(in.channels),
                                                         .out_h = static_cast<double>(out.height),
                                                         .out_w = static_cast<double>(out.width)}});
    return out;
}

/// A bias-free convolution and the BatchNorm after it, as one layer (ResNet, Inception), with the ReLU that follows
/// unless `relu` is false (a projection shortcut).
FeatureMap conv_bn(Workload& workload, std::string layer_name, const std::string& conv_prefix,
                   const std::string& bn_prefix, FeatureMap in, const Conv& conv, bool relu = true) {
    Layer layer = named_layer(std::move(layer_name));
    const FeatureMap out = add_conv(layer, conv_prefix, in, conv);
    add_norm(layer, bn_prefix, conv.out_channels);
    const auto elements = static_cast<double>(out.size());
    add_memory(layer, PartKind::norm, 3.0, elements);
    if (relu) add_memory(layer, PartKind::elementwise, 2.0, elements);
    workload.layers.push_back(std::move(layer));
    return out;
}

/// A fully connected layer applied once per image.
void linear_layer(Workload& workload, const std::string& name, std::int64_t in, std::int64_t out) {
    Layer layer = named_layer(name);
    add_linear(layer, name, in, out, 1);
    workload.layers.push_back(std::move(layer));
}

/// Appends the children of an nn.Sequential in order, naming each by its index as PyTorch does ("features.3").
/// Parameter-free children (ReLU, pooling, dropout) take an index but produce no layer.
class Sequential {
public:
    Sequential(Workload& workload, std::string prefix) : workload_(workload), prefix_(std::move(prefix)) {}

    /// Conv2d with bias, then ReLU.
    FeatureMap conv_relu(FeatureMap in, const Conv& conv) {
        const std::string name = next();
        Layer layer = named_layer(name);
        const FeatureMap out = add_conv(layer, name, in, conv);
        add_vector(layer, name + ".bias", conv.out_channels);
        layer.parts.back().bias = true;
        add_memory(layer, PartKind::elementwise, 2.0, static_cast<double>(out.size()));  // ReLU
        workload_.layers.push_back(std::move(layer));
        skip(1);
        return out;
    }
    /// MaxPool2d (its traffic is charged to the layer before it).
    FeatureMap max_pool(FeatureMap in, std::int64_t kernel, std::int64_t stride) {
        skip(1);
        const FeatureMap out = pool(in, kernel, stride);
        add_memory(workload_.layers.back(), PartKind::pooling, 1.0, static_cast<double>(in.size() + out.size()));
        return out;
    }
    /// Linear (with bias).
    void linear(std::int64_t in, std::int64_t out) { linear_layer(workload_, next(), in, out); }
    /// `count` parameter-free children such as ReLU or Dropout.
    void skip(int count) { index_ += count; }

private:
    std::string next() { return prefix_ + "." + std::to_string(index_++); }

    Workload& workload_;
    std::string prefix_;
    int index_ = 0;
};

// ---- ResNet ----------------------------------------------------------------------------------------------------

/// Bottleneck block `prefix` (1x1 reduce, 3x3 with the stride, 1x1 expand x4, projection shortcut if needed).
FeatureMap bottleneck(Workload& workload, const std::string& prefix, FeatureMap in, std::int64_t planes,
                      std::int64_t stride) {
    constexpr std::int64_t expansion = 4;
    const auto conv = [&](int i, FeatureMap x, const Conv& spec) {
        const std::string index = std::to_string(i);
        return conv_bn(workload, prefix + ".conv" + index, prefix + ".conv" + index, prefix + ".bn" + index, x, spec);
    };
    FeatureMap out = conv(1, in, square(planes, 1));
    out = conv(2, out, square(planes, 3, stride, 1));
    out = conv(3, out, square(planes * expansion, 1));  // its ReLU comes after the residual add
    add_memory(workload.layers.back(), PartKind::elementwise, 3.0, static_cast<double>(out.size()));  // + identity
    if (stride != 1 || in.channels != planes * expansion) {
        conv_bn(workload, prefix + ".downsample", prefix + ".downsample.0", prefix + ".downsample.1", in,
                square(planes * expansion, 1, stride), false);
    }
    return out;
}

// ---- Inception-v3 (module names as in torchvision's Inception3) ------------------------------------------------

/// BasicConv2d: a bias-free convolution and BatchNorm.
FeatureMap basic_conv(Workload& workload, const std::string& name, FeatureMap in, const Conv& conv) {
    return conv_bn(workload, name, name + ".conv", name + ".bn", in, conv);
}

/// InceptionA, 35x35: 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | avgpool-1x1.
FeatureMap inception_a(Workload& w, const std::string& p, FeatureMap in, std::int64_t pool_features) {
    const FeatureMap b1 = basic_conv(w, p + ".branch1x1", in, same(64, 1, 1));
    FeatureMap b5 = basic_conv(w, p + ".branch5x5_1", in, same(48, 1, 1));
    b5 = basic_conv(w, p + ".branch5x5_2", b5, same(64, 5, 5));
    FeatureMap b3 = basic_conv(w, p + ".branch3x3dbl_1", in, same(64, 1, 1));
    b3 = basic_conv(w, p + ".branch3x3dbl_2", b3, same(96, 3, 3));
    b3 = basic_conv(w, p + ".branch3x3dbl_3", b3, same(96, 3, 3));
    const FeatureMap bp = basic_conv(w, p + ".branch_pool", pool(in, 3, 1, 1), same(pool_features, 1, 1));
    return concat({b1, b5, b3, bp});
}

/// InceptionB, 35x35 -> 17x17: 3x3/2 | 1x1-3x3-3x3/2 | maxpool/2.
FeatureMap inception_b(Workload& w, const std::string& p, FeatureMap in) {
    const FeatureMap b3 = basic_conv(w, p + ".branch3x3", in, square(384, 3, 2));
    FeatureMap dbl = basic_conv(w, p + ".branch3x3dbl_1", in, same(64, 1, 1));
    dbl = basic_conv(w, p + ".branch3x3dbl_2", dbl, same(96, 3, 3));
    dbl = basic_conv(w, p + ".branch3x3dbl_3", dbl, square(96, 3, 2));
    return concat({b3, dbl, pool(in, 3, 2)});
}

/// InceptionC, 17x17, with factorised 7x7 convolutions of `c7` channels.
FeatureMap inception_c(Workload& w, const std::string& p, FeatureMap in, std::int64_t c7) {
    const FeatureMap b1 = basic_conv(w, p + ".branch1x1", in, same(192, 1, 1));
    FeatureMap b7 = basic_conv(w, p + ".branch7x7_1", in, same(c7, 1, 1));
    b7 = basic_conv(w, p + ".branch7x7_2", b7, same(c7, 1, 7));
    b7 = basic_conv(w, p + ".branch7x7_3", b7, same(192, 7, 1));
    FeatureMap dbl = basic_conv(w, p + ".branch7x7dbl_1", in, same(c7, 1, 1));
    dbl = basic_conv(w, p + ".branch7x7dbl_2", dbl, same(c7, 7, 1));
    dbl = basic_conv(w, p + ".branch7x7dbl_3", dbl, same(c7, 1, 7));
    dbl = basic_conv(w, p + ".branch7x7dbl_4", dbl, same(c7, 7, 1));
    dbl = basic_conv(w, p + ".branch7x7dbl_5", dbl, same(192, 1, 7));
    const FeatureMap bp = basic_conv(w, p + ".branch_pool", pool(in, 3, 1, 1), same(192, 1, 1));
    return concat({b1, b7, dbl, bp});
}

/// InceptionD, 17x17 -> 8x8: 1x1-3x3/2 | 1x1-1x7-7x1-3x3/2 | maxpool/2.
FeatureMap inception_d(Workload& w, const std::string& p, FeatureMap in) {
    FeatureMap b3 = basic_conv(w, p + ".branch3x3_1", in, same(192, 1, 1));
    b3 = basic_conv(w, p + ".branch3x3_2", b3, square(320, 3, 2));
    FeatureMap b7 = basic_conv(w, p + ".branch7x7x3_1", in, same(192, 1, 1));
    b7 = basic_conv(w, p + ".branch7x7x3_2", b7, same(192, 1, 7));
    b7 = basic_conv(w, p + ".branch7x7x3_3", b7, same(192, 7, 1));
    b7 = basic_conv(w, p + ".branch7x7x3_4", b7, square(192, 3, 2));
    return concat({b3, b7, pool(in, 3, 2)});
}

/// InceptionE, 8x8, with the 3x3 convolutions split into parallel 1x3 and 3x1.
FeatureMap inception_e(Workload& w, const std::string& p, FeatureMap in) {
    const FeatureMap b1 = basic_conv(w, p + ".branch1x1", in, same(320, 1, 1));
    const FeatureMap b3 = basic_conv(w, p + ".branch3x3_1", in, same(384, 1, 1));
    const FeatureMap b3a = basic_conv(w, p + ".branch3x3_2a", b3, same(384, 1, 3));
    const FeatureMap b3b = basic_conv(w, p + ".branch3x3_2b", b3, same(384, 3, 1));
    FeatureMap dbl = basic_conv(w, p + ".branch3x3dbl_1", in, same(448, 1, 1));
    dbl = basic_conv(w, p + ".branch3x3dbl_2", dbl, same(384, 3, 3));
    const FeatureMap dbl_a = basic_conv(w, p + ".branch3x3dbl_3a", dbl, same(384, 1, 3));
    const FeatureMap dbl_b = basic_conv(w, p + ".branch3x3dbl_3b", dbl, same(384, 3, 1));
    const FeatureMap bp = basic_conv(w, p + ".branch_pool", pool(in, 3, 1, 1), same(192, 1, 1));
    return concat({b1, b3a, b3b, dbl_a, dbl_b, bp});
}

/// InceptionAux on the 17x17 map: avgpool 5/3, 1x1, 5x5, fc. Its output leaves the main path unchanged.
void inception_aux(Workload& w, const std::string& p, FeatureMap in) {
    FeatureMap x = basic_conv(w, p + ".conv0", pool(in, 5, 3), same(128, 1, 1));
    x = basic_conv(w, p + ".conv1", x, square(768, 5));
    linear_layer(w, p + ".fc", x.size(), k_imagenet_classes);
}

}  // namespace

Workload alexnet() {
    Workload workload;
    workload.family = ModelFamily::cnn;
    workload.input = "224x224 RGB image";
    FeatureMap x{3, 224, 224};
    Sequential features(workload, "features");
    x = features.conv_relu(x, square(64, 11, 4, 2));
    x = features.max_pool(x, 3, 2);
    x = features.conv_relu(x, square(192, 5, 1, 2));
    x = features.max_pool(x, 3, 2);
    x = features.conv_relu(x, square(384, 3, 1, 1));
    x = features.conv_relu(x, square(256, 3, 1, 1));
    x = features.conv_relu(x, square(256, 3, 1, 1));
    x = features.max_pool(x, 3, 2);
    // avgpool, AdaptiveAvgPool2d((6, 6)), keeps the 6x6 map a 224x224 image gives.
    Sequential classifier(workload, "classifier");
    classifier.skip(1);  // Dropout
    classifier.linear(x.size(), 4096);
    classifier.skip(2);  // ReLU, Dropout
    classifier.linear(4096, 4096);
    classifier.skip(1);  // ReLU
    classifier.linear(4096, k_imagenet_classes);
    return workload;
}

Workload vgg16() {
    constexpr int pool_marker = 0;  // 'M' in torchvision's configuration lists
    constexpr std::array<int, 18> config_d{64,  64,          pool_marker, 128,         128, pool_marker,
                                           256, 256,         256,         pool_marker, 512, 512,
                                           512, pool_marker, 512,         512,         512, pool_marker};
    Workload workload;
    workload.family = ModelFamily::cnn;
    workload.input = "224x224 RGB image";
    FeatureMap x{3, 224, 224};
    Sequential features(workload, "features");
    for (const int channels : config_d) {
        x = channels == pool_marker ? features.max_pool(x, 2, 2) : features.conv_relu(x, square(channels, 3, 1, 1));
    }
    // avgpool, AdaptiveAvgPool2d((7, 7)), keeps the 7x7 map a 224x224 image gives.
    Sequential classifier(workload, "classifier");
    classifier.linear(x.size(), 4096);
    classifier.skip(2);  // ReLU, Dropout
    classifier.linear(4096, 4096);
    classifier.skip(2);  // ReLU, Dropout
    classifier.linear(4096, k_imagenet_classes);
    return workload;
}

Workload resnet(const std::array<int, 4>& blocks_per_stage) {
    Workload workload;
    workload.family = ModelFamily::cnn;
    workload.input = "224x224 RGB image";
    FeatureMap x = conv_bn(workload, "conv1", "conv1", "bn1", FeatureMap{3, 224, 224}, square(64, 7, 2, 3));
    const FeatureMap stem = x;
    x = pool(x, 3, 2, 1);  // maxpool
    add_memory(workload.layers.back(), PartKind::pooling, 1.0, static_cast<double>(stem.size() + x.size()));
    for (std::size_t stage = 0; stage < blocks_per_stage.size(); ++stage) {
        const std::int64_t planes = std::int64_t{64} << stage;
        const std::string stage_name = "layer" + std::to_string(stage + 1);
        for (int block = 0; block < blocks_per_stage[stage]; ++block) {
            const std::int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
            x = bottleneck(workload, stage_name + "." + std::to_string(block), x, planes, stride);
        }
    }
    linear_layer(workload, "fc", x.channels, k_imagenet_classes);  // after global average pooling
    add_memory(workload.layers.back(), PartKind::pooling, 1.0, static_cast<double>(x.size() + x.channels));
    return workload;
}

Workload inception_v3() {
    Workload w;
    w.family = ModelFamily::cnn;
    w.input = "299x299 RGB image";
    FeatureMap x{3, 299, 299};
    x = basic_conv(w, "Conv2d_1a_3x3", x, square(32, 3, 2));
    x = basic_conv(w, "Conv2d_2a_3x3", x, square(32, 3));
    x = basic_conv(w, "Conv2d_2b_3x3", x, same(64, 3, 3));
    x = pool(x, 3, 2);  // maxpool1
    x = basic_conv(w, "Conv2d_3b_1x1", x, same(80, 1, 1));
    x = basic_conv(w, "Conv2d_4a_3x3", x, square(192, 3));
    x = pool(x, 3, 2);  // maxpool2
    x = inception_a(w, "Mixed_5b", x, 32);
    x = inception_a(w, "Mixed_5c", x, 64);
    x = inception_a(w, "Mixed_5d", x, 64);
    x = inception_b(w, "Mixed_6a", x);
    x = inception_c(w, "Mixed_6b", x, 128);
    x = inception_c(w, "Mixed_6c", x, 160);
    x = inception_c(w, "Mixed_6d", x, 160);
    x = inception_c(w, "Mixed_6e", x, 192);
    inception_aux(w, "AuxLogits", x);  // runs in training mode, between Mixed_6e and Mixed_7a
    x = inception_d(w, "Mixed_7a", x);
    x = inception_e(w, "Mixed_7b", x);
    x = inception_e(w, "Mixed_7c", x);
    linear_layer(w, "fc", x.channels, k_imagenet_classes);  // after global average pooling and dropout
    return w;
}

}  // namespace ddlsim::models::catalog_detail
