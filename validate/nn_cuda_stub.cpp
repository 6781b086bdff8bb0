// The CUDA entry points of a build without CUDA (no nvcc found by CMake).
#include <stdexcept>

#include "validate/nn_backends.hpp"

namespace ddlsim::validate {
namespace {
constexpr const char* kNotBuilt = "this ddlsim was built without CUDA (CMake found no nvcc)";
}

bool cuda_backend_available(std::string* why) {
    if (why != nullptr) *why = kNotBuilt;
    return false;
}

std::unique_ptr<Model> make_cuda_model(ModelSpec /*spec*/) {
    throw std::runtime_error(kNotBuilt);
}

std::unique_ptr<Codec> make_cuda_codec(const CodecSpec& /*spec*/, std::size_t /*n*/, std::uint64_t /*seed*/) {
    throw std::runtime_error(kNotBuilt);
}

double cuda_memory_bandwidth() {
    throw std::runtime_error("the CUDA backend is not available");
}

std::string cuda_device_name() {
    return "";
}

}  // namespace ddlsim::validate
