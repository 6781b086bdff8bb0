#include "tools/sweep_ranks.hpp"

#include <cstdlib>

#ifdef DDLSIM_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only (OpenMPI's C++ bindings fail -Wold-style-cast)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace ddlsim::tools {

Ranks::Ranks() {
#ifdef DDLSIM_HAVE_MPI
    const bool launched = std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK") ||
                          std::getenv("PMI_RANK");
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized && launched) {
        int provided = 0;
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        owns_ = true;
        initialized = 1;
    }
    if (initialized) {
        active_ = true;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
        MPI_Comm_size(MPI_COMM_WORLD, &size_);
    }
#endif
}

Ranks::~Ranks() {
#ifdef DDLSIM_HAVE_MPI
    if (owns_) MPI_Finalize();
#endif
}

int Ranks::broadcast(int v) const {
#ifdef DDLSIM_HAVE_MPI
    if (parallel()) MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
    return v;
}

std::string Ranks::broadcast(std::string s) const {
#ifdef DDLSIM_HAVE_MPI
    if (parallel()) {
        unsigned long long n = s.size();
        MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
        s.resize(n);
        MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
    }
#endif
    return s;
}

std::vector<std::string> Ranks::gather(const std::string& mine) const {
#ifdef DDLSIM_HAVE_MPI
    if (parallel()) {
        int len = static_cast<int>(mine.size());
        std::vector<int> lens(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
        MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
        std::string all;
        if (rank_ == 0) {
            std::size_t off = 0;
            for (std::size_t r = 0; r < lens.size(); ++r) {
                displs[r] = static_cast<int>(off);
                off += static_cast<std::size_t>(lens[r]);
            }
            all.resize(off);
        }
        MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
        std::vector<std::string> out;
        if (rank_ == 0)
            for (std::size_t r = 0; r < lens.size(); ++r)
                out.push_back(all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(lens[r])));
        return out;
    }
#endif
    return {mine};
}

}  // namespace ddlsim::tools
