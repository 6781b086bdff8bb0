// The backends behind make_model / make_codec. The CUDA backend is a shared library of its own,
// libddlsim_cuda.so (nn_cuda.cpp + cuda_kernels.cu), built beside the ddlsim executable when CMake
// found nvcc; nn_cuda_loader.cpp opens it with dlopen the first time --backend cuda asks for it, so
// no other command maps cudart and cuBLAS. A build without CUDA has nn_cuda_stub.cpp, which says why not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "validate/codec.hpp"
#include "validate/nn.hpp"

namespace ddlsim::validate {

[[nodiscard]] std::unique_ptr<Model> make_cpu_model(ModelSpec spec);

/// Whether the CUDA backend was built, loads and a GPU answers; when not, `why` says why.
[[nodiscard]] bool cuda_backend_available(std::string* why);
[[nodiscard]] std::unique_ptr<Model> make_cuda_model(ModelSpec spec);
[[nodiscard]] std::unique_ptr<Codec> make_cuda_codec(const CodecSpec& spec, std::size_t n, std::uint64_t seed);
/// Device-memory copy bandwidth (bytes read + written per second) of the GPU.
[[nodiscard]] double cuda_memory_bandwidth();
/// A name for the GPU ("NVIDIA H200"), or "" without CUDA.
[[nodiscard]] std::string cuda_device_name();

/// What libddlsim_cuda.so hands the loader: its entry points. The library is built in the same build as
/// ddlsim (same compiler and standard library), so C++ types cross; `abi` and `size` catch a stale copy.
struct CudaBackendApi {
    int abi = 0;
    std::size_t size = 0;
    bool (*available)(std::string* why) = nullptr;
    std::unique_ptr<Model> (*make_model)(ModelSpec spec) = nullptr;
    std::unique_ptr<Codec> (*make_codec)(const CodecSpec& spec, std::size_t n, std::uint64_t seed) = nullptr;
    double (*memory_bandwidth)() = nullptr;
    std::string (*device_name)() = nullptr;
};
inline constexpr int kCudaBackendAbi = 1;
/// The library's file name (looked up beside the executable) and its one exported symbol, of type
/// `const CudaBackendApi* (*)()`, with C linkage so that dlsym finds it by this name.
inline constexpr const char* kCudaLibraryName = "libddlsim_cuda.so";
inline constexpr const char* kCudaFactorySymbol = "ddlsim_cuda_backend";

}  // namespace ddlsim::validate
