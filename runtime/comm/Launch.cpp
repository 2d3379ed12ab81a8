//===- Launch.cpp - Which launcher started this process -------------------===//
#include "CommInternal.h"

#include <cerrno>
#include <cstdlib>

namespace weft {
namespace comm {

namespace {

/// Reads variable `name` into `out` when it is set: false (with `error`)
/// when it is set to something other than a non-negative integer.
bool readVar(const char *name, int64_t &out, bool &set, std::string &error) {
  const char *value = std::getenv(name);
  set = value && *value;
  if (!set)
    return true;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(value, &end, 10);
  if (errno != 0 || !end || *end != '\0' || v < 0) {
    error = std::string("invalid ") + name + "='" + value +
            "' (expected a non-negative integer)";
    return false;
  }
  out = v;
  return true;
}

struct Scheme {
  LaunchInfo::Kind kind;
  const char *rank, *size, *localRank;
};

} // namespace

LaunchInfo detectLaunch() {
  // mpirun (Open MPI, then MPICH's hydra), srun, torchrun-style.
  static const Scheme schemes[] = {
      {LaunchInfo::Kind::MpiRun, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
       "OMPI_COMM_WORLD_LOCAL_RANK"},
      {LaunchInfo::Kind::Srun, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
      {LaunchInfo::Kind::MpiRun, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
      {LaunchInfo::Kind::Torchrun, "RANK", "WORLD_SIZE", "LOCAL_RANK"},
  };
  LaunchInfo info;
  for (const Scheme &s : schemes) {
    bool haveRank = false, haveSize = false, haveLocal = false;
    int64_t rank = 0, size = 0, local = 0;
    if (!readVar(s.rank, rank, haveRank, info.error))
      return info;
    if (!haveRank)
      continue;
    if (!readVar(s.size, size, haveSize, info.error) ||
        !readVar(s.localRank, local, haveLocal, info.error))
      return info;
    info.kind = s.kind;
    info.rank = rank;
    info.size = haveSize ? size : 0; // 0: not said
    info.localRank = haveLocal ? local : 0;
    info.variables = std::string(s.rank) + "=" + std::to_string(rank);
    if (haveSize)
      info.variables += ", " + std::string(s.size) + "=" + std::to_string(size);
    if (s.kind == LaunchInfo::Kind::Torchrun) {
      const char *addr = std::getenv("MASTER_ADDR");
      const char *port = std::getenv("MASTER_PORT");
      if (addr && *addr)
        info.variables += std::string(", MASTER_ADDR=") + addr;
      if (port && *port)
        info.variables += std::string(", MASTER_PORT=") + port;
    }
    return info;
  }
  // PMIx-only launchers (prterun, srun --mpi=pmix without SLURM_PROCID)
  // still give MPI its rank.
  if (const char *pmix = std::getenv("PMIX_RANK")) {
    info.kind = LaunchInfo::Kind::MpiRun;
    info.size = 0;
    info.variables = std::string("PMIX_RANK=") + pmix;
  }
  return info;
}

} // namespace comm
} // namespace weft
