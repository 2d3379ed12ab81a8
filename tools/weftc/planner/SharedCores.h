//===- SharedCores.h - A step of ranks that take turns on cores -*- C++ -*-===//
//
// When a node runs more ranks than it has cores (CPU ranks on a small
// machine), the ranks take turns, and a rank that waits (in a pipeline
// bubble, for a transfer) lends its core to the others. How much of the
// step that saves depends on who waits when, so the cost model simulates
// the schedule: every rank runs its stage's units of work in its
// schedule's order (PipelineSchedule.h), each unit once its inputs have
// arrived, and at any moment the runnable ranks share the node's cores
// equally (a rank runs at full speed while runnable ranks <= cores, else at
// cores / runnable), or, with ranks pinned to cores (the runtime pins ranks
// that outnumber the cores: weft/runtime/CorePlacement.h), the runnable
// ranks of each core share that core. A pure function, tested on
// hand-computed cases.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_PLANNER_SHAREDCORES_H
#define WEFT_TOOLS_WEFTC_PLANNER_SHAREDCORES_H

#include <cstdint>
#include <string>
#include <vector>

namespace weft::planner {

/// One pipeline's work per step, as a rank alone on a core does it.
struct PipelineWork {
  std::string schedule = "1f1b"; ///< gpipe, 1f1b, interleaved, zb-h1, none
  int64_t stages = 1, virtualStages = 1, microbatches = 1;
  /// Per chunk (stages x virtualStages; chunk c runs on stage c mod
  /// stages), one microbatch's forward, input-gradient backward and
  /// weight-gradient seconds. Outside ZB-H1 the backward does both.
  std::vector<double> forward, backward, weight;
  /// Per chunk boundary k (chunk k to k + 1), the seconds a transfer takes
  /// to arrive, waiting that uses no core.
  std::vector<double> transfer;
  /// Per stage, the work after its microbatches (gradient sums, optimizer,
  /// data-parallel collectives).
  std::vector<double> tail;
};

/// The step's seconds when `ranks` ranks (pipeline replicas of `work`,
/// rank r on stage r mod stages) share `cores` cores as described above:
/// all of them, or with `coreOfRank` (one entry per rank), each rank only
/// its own core. Returns a negative value for inconsistent input (sizes
/// that do not match, cores < 1, a core out of range, a schedule that
/// never runs a unit).
double sharedCoresStepTime(const PipelineWork &work, int64_t ranks,
                           int64_t cores,
                           const std::vector<int64_t> &coreOfRank = {});

} // namespace weft::planner

#endif // WEFT_TOOLS_WEFTC_PLANNER_SHAREDCORES_H
