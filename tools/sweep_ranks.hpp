// The ranks of a sweep: MPI's when ddlsim is built with it (DDLSIM_HAVE_MPI) and started by a launcher (mpirun,
// srun); otherwise one rank. Rank 0 plans and writes; every rank computes its share of the points.
#pragma once

#include <string>
#include <vector>

namespace ddlsim::tools {

class Ranks {
public:
    Ranks();  ///< initialises MPI when launched under it and not yet initialised (and finalises it in the destructor)
    Ranks(const Ranks&) = delete;
    Ranks& operator=(const Ranks&) = delete;
    ~Ranks();
    [[nodiscard]] int rank() const { return rank_; }
    [[nodiscard]] int size() const { return size_; }
    [[nodiscard]] bool parallel() const { return active_ && size_ > 1; }
    /// Rank 0's value, on every rank.
    [[nodiscard]] int broadcast(int v) const;
    [[nodiscard]] std::string broadcast(std::string s) const;
    /// Every rank's text, on rank 0 (rank order); empty elsewhere.
    [[nodiscard]] std::vector<std::string> gather(const std::string& mine) const;

private:
    bool active_ = false;
    [[maybe_unused]] bool owns_ = false;
    int rank_ = 0;
    int size_ = 1;
};

}  // namespace ddlsim::tools
