// Child processes of the validation runs (workers, servers, benchmarks): forked, each returning
// its result as bytes over a pipe; a failure or a timeout kills them all.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ddlsim::validate {

/// Forks `count` children; child i runs `body(i)`, whose return value comes back to the parent
/// (an exception's message fails the run). Returns the results in index order; throws
/// std::runtime_error naming the failing child, or on timeout, after killing every child.
[[nodiscard]] std::vector<std::string> run_children(std::uint32_t count, double timeout_s,
                                                    const std::function<std::string(std::uint32_t)>& body);

/// Runs `body` in one child process and returns its result. The parent of the worker processes
/// uses this for everything that touches the compute backend: a CUDA context does not survive fork().
[[nodiscard]] std::string in_child(double timeout_s, const std::function<std::string()>& body);

}  // namespace ddlsim::validate
