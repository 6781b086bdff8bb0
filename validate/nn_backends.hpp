// The backends behind make_model / make_codec. The CUDA entry points are defined in nn_cuda.cu
// when CUDA is built (DDLSIM_VALIDATE_CUDA), otherwise in nn_cuda_stub.cpp, which says why not.
#pragma once

#include <memory>
#include <string>

#include "validate/codec.hpp"
#include "validate/nn.hpp"

namespace ddlsim::validate {

[[nodiscard]] std::unique_ptr<Model> make_cpu_model(ModelSpec spec);

/// Whether the CUDA backend was built and a GPU answers; when not, `why` says why.
[[nodiscard]] bool cuda_backend_available(std::string* why);
[[nodiscard]] std::unique_ptr<Model> make_cuda_model(ModelSpec spec);
[[nodiscard]] std::unique_ptr<Codec> make_cuda_codec(const CodecSpec& spec, std::size_t n, std::uint64_t seed);
/// Device-memory copy bandwidth (bytes read + written per second) of the GPU.
[[nodiscard]] double cuda_memory_bandwidth();
/// A name for the GPU ("NVIDIA H200"), or "" without CUDA.
[[nodiscard]] std::string cuda_device_name();

}  // namespace ddlsim::validate
