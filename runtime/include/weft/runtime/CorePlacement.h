//===- CorePlacement.h - Which core a rank runs on when ranks share them --===//
//
// When a host runs more ranks than it has cores (CPU ranks on a small
// machine), the runtime pins each rank to one core, and the cost model
// simulates the step with the same placement (tools/weftc/planner/
// SharedCores.h). Left to itself, Linux places the ranks once and almost
// never moves them (a rank that waits by polling still looks busy), so
// which ranks share a core was a matter of start-up timing.
//
// The placement is a snake over the host's ranks in rank order: 0, 1, ...,
// C-1, then C-1, ..., 0, and again. Ranks are laid out dp x pp x tp
// (DESIGN.md), so consecutive ranks are a stage's tensor-parallel group or
// consecutive pipeline stages; the snake puts the first stage with the
// last, the second with the one before it, and so on: pipelines have
// their light embedding stage and heavy head stage at the two ends, and
// each core gets a share of both.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_COREPLACEMENT_H
#define WEFT_RUNTIME_COREPLACEMENT_H

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <sched.h>

namespace weft {

/// The core (0 .. cores-1) of the host's `localRank`-th rank when its
/// ranks outnumber its `cores`.
inline int64_t coreOfLocalRank(int64_t localRank, int64_t cores) {
  if (cores <= 1 || localRank < 0)
    return 0;
  const int64_t lap = localRank % (2 * cores);
  return lap < cores ? lap : 2 * cores - 1 - lap;
}

/// The CPUs this process may run on (its affinity mask), in order.
inline std::vector<int> allowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set))
        cpus.push_back(c);
  return cpus;
}

/// Pins this process, the host's `localRank`-th of `localRanks` ranks, to
/// its core when the ranks outnumber the CPUs it may use, unless
/// WEFT_PIN_RANKS=0 or its launcher already confined it to one CPU
/// (mpirun binds ranks that fit the cores). Returns the CPU, or -1 when it
/// was left where it was. The caller runs one kernel thread per rank.
inline int pinToSharedCore(int64_t localRank, int64_t localRanks) {
  const char *pin = std::getenv("WEFT_PIN_RANKS");
  if (pin && std::strcmp(pin, "0") == 0)
    return -1;
  const std::vector<int> cpus = allowedCpus();
  const int64_t cores = static_cast<int64_t>(cpus.size());
  if (cores < 2 || localRanks <= cores)
    return -1;
  const int cpu = cpus[static_cast<size_t>(coreOfLocalRank(localRank, cores))];
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // Best effort: a rank that cannot be pinned runs where the OS puts it.
  return sched_setaffinity(0, sizeof set, &set) == 0 ? cpu : -1;
}

} // namespace weft

#endif // WEFT_RUNTIME_COREPLACEMENT_H
