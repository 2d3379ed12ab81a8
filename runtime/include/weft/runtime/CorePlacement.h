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

namespace weft {

/// The core (0 .. cores-1) of the host's `localRank`-th rank when its
/// ranks outnumber its `cores`.
inline int64_t coreOfLocalRank(int64_t localRank, int64_t cores) {
  if (cores <= 1 || localRank < 0)
    return 0;
  const int64_t lap = localRank % (2 * cores);
  return lap < cores ? lap : 2 * cores - 1 - lap;
}

} // namespace weft

#endif // WEFT_RUNTIME_COREPLACEMENT_H
