//===- Trace.h - Where a training run's time went, per rank ---------------===//
//
// `weft train --trace FILE.json`. The compiled step marks the end of every
// kernel launch (weft_trace_launch, KernelABI.h); with tracing on, each
// rank keeps those marks with steady-clock times, measured from a moment
// all ranks agree on (after a barrier). A launch lasts from the previous
// mark (or the step's start) to its own: ranks skip the launches of other
// pipeline stages, so no time goes unaccounted for.
//
// At the end rank 0 gathers every rank's events and writes a Chrome /
// Perfetto trace (one process per rank; a track of launches, a track of
// schedule units "F3", "B3", "W3" (zero-bubble weight gradients; ".c1":
// interleaved chunk 1) and a track of steps),
// and prints where the time went: per rank, mean milliseconds per step in
// compute, point-to-point transfers, collectives, and waiting (blocked in
// a receive or a wait for another rank), then the pipeline bubble.
//
// On a GPU (cuda bundles) kernels only enqueue work: with tracing on, every
// mark first waits for the compute stream, so a launch's time is its work
// on the GPU. That serializes the host with the GPU and slows the step
// (more for small kernels); the trace shows where time goes, the summary's
// step times of a traced run are not the untraced speed. The first launch
// of a step includes the upload of the step's inputs.
//
// The measured bubble of a step is 1 - busy / window per stage, averaged
// over stages: the window runs from the first microbatch launch on any rank
// to the last one's end, busy is the stage's compute on microbatches in it.
// The first step (warm-up) is left out when there are others.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_EXECUTOR_TRACE_H
#define WEFT_RUNTIME_EXECUTOR_TRACE_H

#include "weft/runtime/Executor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::trace {

/// `rank`'s pipeline stage, -1 without a pipeline.
int64_t stageOf(const ModelSignature &sig, int64_t rank);

/// Starts recording on this rank (collective over the ranks: a barrier);
/// `arenaBytes` is what it allocated for intermediates.
void start(const ModelSignature &sig, int64_t stage, uint64_t arenaBytes);
bool enabled();
/// Marks the start of step `step` / its end.
void beginStep(int64_t step);
void endStep();

/// What the trace says, for the run's summary (rank 0's copy is complete).
struct Breakdown {
  int64_t steps = 0; ///< steps measured
  double computeMs = 0, p2pMs = 0, collectiveMs = 0, waitMs = 0, stepMs = 0;
  double bubble = -1;               ///< measured, -1 without a pipeline
  double bubbleTheory = -1;         ///< (p-1)/(m+p-1) or (p-1)/(v m + p - 1)
  std::vector<uint64_t> arenaBytes; ///< per rank
};

/// Collective: gathers the events on rank 0, which writes `path` (Chrome
/// trace JSON, atomically) and prints the table to stderr. Returns false
/// with `error` when the file cannot be written (on rank 0).
bool finish(const std::string &path, Breakdown &total, std::string &error);

} // namespace weft::trace

#endif // WEFT_RUNTIME_EXECUTOR_TRACE_H
