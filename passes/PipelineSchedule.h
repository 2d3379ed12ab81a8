//===- PipelineSchedule.h - The order each pipeline stage runs its work ---===//
//
// The schedules of weft-pipeline (Pipeline.cpp), shared with the planner
// (tools/weftc/planner/CostModel.cpp), which simulates them where ranks
// share cores: the position of one unit of work (a microbatch's forward,
// backward or, in ZB-H1, weight-gradient part, of one chunk) in the order
// its stage runs them.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_PASSES_PIPELINESCHEDULE_H
#define WEFT_PASSES_PIPELINESCHEDULE_H

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace weft {

/// The position of (microbatch m, chunk, backward, weight gradient) in the
/// schedule of stage `s` of `stages` (P), with `virtualStages` (V) chunks
/// per stage and `microbatches` (M): GPipe, 1F1B, interleaved 1F1B (V > 1)
/// or ZB-H1. `weight` only counts in ZB-H1; elsewhere the weight gradient
/// is part of the backward.
inline int64_t pipelineSlot(std::string_view schedule, int64_t stages,
                            int64_t virtualStages, int64_t microbatches,
                            int64_t s, int64_t m, int64_t chunk, bool backward,
                            bool weight) {
  const int64_t M = microbatches, P = stages, V = virtualStages;
  if (schedule == "gpipe")
    return backward ? M + m : m;
  if (schedule == "zb-h1") {
    // 1F1B's forwards and input-gradient backwards (B), each backward's
    // weight-gradient part (W) run later, right before the next B, so a
    // stage waiting for the next B's gradient computes W meanwhile and
    // the gradients travel back through B's alone (Qi et al. 2023,
    // ZB-H1): F_0 .. F_{w-1}, then F_{w+i} W_{i-1} B_i for each i, then
    // W_{M-1}; 1F1B's microbatches in flight.
    const int64_t w = std::min(P - 1 - s, M);
    if (!backward)
      return m < w ? m : w + 3 * (m - w);
    auto blockStart = [&](int64_t i) { // where F_{w+i} (or W_{i-1}) is
      return w + 3 * std::min(i, M - w) + 2 * std::max<int64_t>(0, i - (M - w));
    };
    auto fAt = [&](int64_t i) { return w + i < M ? 1 : 0; };
    if (!weight)
      return blockStart(m) + fAt(m) + (m >= 1 ? 1 : 0);
    return m + 1 < M ? blockStart(m + 1) + fAt(m + 1) : blockStart(M) + 1;
  }
  // Units of work k = 0 .. MV-1 in each direction. Interleaved: groups of
  // P microbatches go through chunk 0, then chunk 1, ... forwards and
  // through the chunks in reverse backwards (Narayanan et al. 2021).
  const int64_t U = M * V;
  int64_t k = m;
  if (V > 1)
    k = (m / P) * P * V + (backward ? V - 1 - chunk : chunk) * P + m % P;
  // F_0 .. F_{w-1}, then F_{w+i} B_i for each i, then the last B's; the
  // warm-up is P - 1 - s forwards, interleaved 2(P - 1 - s) + (V - 1)P.
  const int64_t w =
      std::min(V > 1 ? 2 * (P - 1 - s) + (V - 1) * P : P - 1 - s, U);
  if (!backward)
    return k < w ? k : w + 2 * (k - w);
  return k + w < U ? w + 2 * k + 1 : w + (U - w) * 2 + (k - (U - w));
}

/// The most microbatches 1F1B and ZB-H1 can run when stage `s` of
/// `stages` (P) combines every microbatch (a training-mode BatchNorm's batch
/// statistics): in its forward, from what stage s - 1 sends, which sends
/// P - s + 1 forwards before it waits for a backward; in its backward
/// before the last stage, from what stage s + 1 sends back, which needs all
/// of stage s's forwards, of which stage s runs P - s before its first
/// backward. More deadlock (weft-pipeline falls back to GPipe, and the
/// planner's cost model knows); interleaving deadlocks at any count.
inline int64_t coupledMicrobatchLimit(int64_t stages, int64_t s,
                                      bool backward) {
  return stages - s + (backward ? 0 : 1);
}

} // namespace weft

#endif // WEFT_PASSES_PIPELINESCHEDULE_H
