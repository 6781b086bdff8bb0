// The CUDA entry points of a build with CUDA: they open libddlsim_cuda.so (nn_cuda.cpp) with dlopen the
// first time one is called, so that only --backend cuda maps cudart and cuBLAS, and forward to it. The
// library is looked up as $DDLSIM_CUDA_LIBRARY when set, else beside the running executable (from
// /proc/self/exe), else one folder up (test programs sit in a subfolder of the build tree). When it is
// missing or does not load, cuda_backend_available says so, as a build without CUDA does.
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "validate/nn_backends.hpp"

namespace ddlsim::validate {
namespace {

namespace fs = std::filesystem;

struct Loaded {
    const CudaBackendApi* api = nullptr;
    std::string why;  ///< why api is null
};

std::vector<fs::path> candidates() {
    if (const char* env = std::getenv("DDLSIM_CUDA_LIBRARY"); env != nullptr && *env != '\0') return {fs::path(env)};
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    return {exe.parent_path() / kCudaLibraryName, exe.parent_path().parent_path() / kCudaLibraryName};
}

Loaded open_library() {
    const auto paths = candidates();
    for (const auto& path : paths) {
        std::error_code ec;
        if (!fs::exists(path, ec)) continue;
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open for the process's lifetime
        if (handle == nullptr) {
            const char* err = dlerror();
            return {nullptr, fmt::format("cannot load the CUDA backend {}: {}", path.string(),
                                         err != nullptr ? err : "unknown error")};
        }
        void* symbol = dlsym(handle, kCudaFactorySymbol);
        if (symbol == nullptr)
            return {nullptr, fmt::format("{} has no {}; is it from another build?", path.string(), kCudaFactorySymbol)};
        using Factory = const CudaBackendApi* (*)();
        Factory factory = nullptr;
        std::memcpy(&factory, &symbol, sizeof factory);  // object pointer to function pointer, as POSIX allows
        const CudaBackendApi* api = factory();
        if (api == nullptr || api->abi != kCudaBackendAbi || api->size != sizeof(CudaBackendApi))
            return {nullptr, fmt::format("{} is from another ddlsim build (interface mismatch)", path.string())};
        return {api, ""};
    }
    std::string looked;
    for (const auto& path : paths) looked += (looked.empty() ? "" : ", ") + path.string();
    return {nullptr, fmt::format("the CUDA backend {} is missing (looked for {})", kCudaLibraryName,
                                 looked.empty() ? std::string("nothing: /proc/self/exe unreadable") : looked)};
}

const Loaded& loaded() {
    static const Loaded l = open_library();
    return l;
}

const CudaBackendApi& api() {
    const Loaded& l = loaded();
    if (l.api == nullptr) throw std::runtime_error(l.why);
    return *l.api;
}

}  // namespace

bool cuda_backend_available(std::string* why) {
    const Loaded& l = loaded();
    if (l.api == nullptr) {
        if (why != nullptr) *why = l.why;
        return false;
    }
    return l.api->available(why);
}

std::unique_ptr<Model> make_cuda_model(ModelSpec spec) {
    return api().make_model(std::move(spec));
}

std::unique_ptr<Codec> make_cuda_codec(const CodecSpec& spec, std::size_t n, std::uint64_t seed) {
    return api().make_codec(spec, n, seed);
}

double cuda_memory_bandwidth() {
    if (loaded().api == nullptr) throw std::runtime_error("the CUDA backend is not available");
    return api().memory_bandwidth();
}

std::string cuda_device_name() {
    const Loaded& l = loaded();
    return l.api != nullptr ? l.api->device_name() : "";
}

}  // namespace ddlsim::validate
