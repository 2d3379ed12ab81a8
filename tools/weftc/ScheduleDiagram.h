//===- ScheduleDiagram.h - Stages against time, as the schedule runs ------===//
//
// `weftc plan --schedule-diagram FILE.svg`. Reads the step after
// weft-pipeline: each stage's ops in program order, grouped into units (a
// microbatch's forward or backward, on an interleaved chunk), each unit's
// work estimated from its ops' floating-point operations (at least one per
// op). A unit starts when its stage is free and every value it receives
// has been sent (the end of the sending unit). The SVG draws one row per
// stage, a box per unit labelled F3 / B3 (".c1": chunk 1), idle time empty,
// and the estimated bubble.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_SCHEDULEDIAGRAM_H
#define WEFT_TOOLS_WEFTC_SCHEDULEDIAGRAM_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft {

struct ScheduledUnit {
  int64_t stage = 0, microbatch = 0, chunk = -1;
  bool backward = false;
  bool weight = false;       ///< weight-gradient work (zero-bubble "W")
  double work = 0;           ///< estimated floating-point operations
  double begin = 0, end = 0; ///< simulated, in the same unit
};

struct ScheduleSimulation {
  int64_t stages = 0, microbatches = 0, virtualStages = 1;
  std::string schedule;
  std::vector<ScheduledUnit> units; ///< each stage's in its order
  double makespan = 0;
  /// 1 - busy / (stages x span): the estimated bubble.
  double bubble = 0;
};

/// Simulates the pipelined step in `module` (after weft-pipeline). Returns
/// false with `error` when it has no pipeline.
bool simulateSchedule(mlir::ModuleOp module, const std::string &schedule,
                      ScheduleSimulation &out, std::string &error);

/// The simulation as an SVG picture.
std::string scheduleSvg(const ScheduleSimulation &sim,
                        const std::string &title);

} // namespace weft

#endif // WEFT_TOOLS_WEFTC_SCHEDULEDIAGRAM_H
