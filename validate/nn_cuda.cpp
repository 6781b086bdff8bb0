// The CUDA backend, part 1: availability only (the model and codecs follow).
#include <cuda_runtime.h>

#include <stdexcept>

#include "validate/nn_backends.hpp"

namespace ddlsim::validate {

bool cuda_backend_available(std::string* why) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        if (why != nullptr) *why = std::string("no usable GPU: ") + (e != cudaSuccess ? cudaGetErrorString(e) : "none");
        return false;
    }
    return true;
}
std::unique_ptr<Model> make_cuda_model(ModelSpec) {
    throw std::runtime_error("todo");
}
std::unique_ptr<Codec> make_cuda_codec(const CodecSpec&, std::size_t, std::uint64_t) {
    throw std::runtime_error("todo");
}
double cuda_memory_bandwidth() {
    throw std::runtime_error("the CUDA backend is not available");
}

std::string cuda_device_name() {
    return "";
}

}  // namespace ddlsim::validate
