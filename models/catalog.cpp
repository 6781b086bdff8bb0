// The built-in workload catalog: names, in catalog order, and dispatch to the builders that derive each model
// from its published architecture (CNNs in catalog_cnn.cpp, transformers in catalog_transformer.cpp).
#include <array>

#include "models/catalog_detail.hpp"
#include "models/workload.hpp"

namespace ddlsim::models {
namespace {

namespace detail = catalog_detail;

struct CatalogEntry {
    std::string_view name;
    Workload (*build)();
};

constexpr std::array<CatalogEntry, 11> k_catalog{{
    {"alexnet", [] { return detail::alexnet(); }},
    {"vgg16", [] { return detail::vgg16(); }},
    {"resnet50",
     [] {
         return detail::resnet({3, 4, 6, 3});
     }},
    {"resnet101",
     [] {
         return detail::resnet({3, 4, 23, 3});
     }},
    {"inception_v3", [] { return detail::inception_v3(); }},
    {"bert_base", [] { return detail::bert({.layers = 12, .hidden = 768}); }},
    {"bert_large", [] { return detail::bert({.layers = 24, .hidden = 1024}); }},
    {"gpt2", [] { return detail::gpt2({.layers = 12, .hidden = 768}); }},
    {"gpt2_medium", [] { return detail::gpt2({.layers = 24, .hidden = 1024}); }},
    {"gpt2_large", [] { return detail::gpt2({.layers = 36, .hidden = 1280}); }},
    {"gpt2_xl", [] { return detail::gpt2({.layers = 48, .hidden = 1600}); }},
}};

}  // namespace

const std::vector<std::string>& builtin_workload_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> result;
        for (const CatalogEntry& entry : k_catalog) result.emplace_back(entry.name);
        return result;
    }();
    return names;
}

std::optional<Workload> builtin_workload(std::string_view name) {
    for (const CatalogEntry& entry : k_catalog) {
        if (entry.name != name) continue;
        Workload workload = entry.build();
        workload.name = std::string(entry.name);
        return workload;
    }
    return std::nullopt;
}

}  // namespace ddlsim::models
