//===- Formulas.h - The cost model's closed forms --------------*- C++ -*-===//
//
// The formulas of DESIGN.md's cost model, each a pure function so unit
// tests check them against hand-computed values:
//
//   all-reduce over p ranks of n bytes    2(p-1)a + 2(p-1)/p * n/B
//   all-gather, reduce-scatter            (p-1)a + (p-1)/p * n/B  (n: full)
//   send/recv                             a + n/B
//   pipeline bubble, GPipe and 1F1B       (p-1)/(m+p-1) of the step
//   interleaved with v chunks per stage   (p-1)/(v*m + p-1)
//   ZB-H1                                 (p-1)(F+B-W) idle per stage
//   ZeRO per rank                         stage 1 divides optimizer state,
//                                         2 also gradients, 3 also params
//   asynchronous collectives              the wait each adds to a stream
//                                         of kernels, plus (1 - overlap)
//                                         of what ran under them
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_PLANNER_FORMULAS_H
#define WEFT_TOOLS_WEFTC_PLANNER_FORMULAS_H

#include "tools/weftc/planner/Cluster.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::planner {

double allReduceTime(int64_t p, double bytes, const Link &link);
double allGatherTime(int64_t p, double bytes, const Link &link);
double reduceScatterTime(int64_t p, double bytes, const Link &link);
double sendRecvTime(double bytes, const Link &link);

/// Idle fraction of a pipelined step with `p` stages, `m` microbatches and
/// `v` model chunks per stage, for GPipe, 1F1B and interleaved 1F1B (the
/// bubble's share of the whole step when the stages are balanced).
double bubbleFraction(const std::string &schedule, int64_t p, int64_t m,
                      int64_t v = 1);

/// The idle time of one stage in a step: `f`, `b`, `w` are a microbatch's
/// forward, input-gradient and weight-gradient times on the slowest stage
/// (for interleaved, of one chunk). ZB-H1 fills the bubble with W work.
double bubbleTime(const std::string &schedule, int64_t p, int64_t v, double f,
                  double b, double w);

/// Microbatches whose activations a stage holds at its peak: all of them
/// for GPipe; 1F1B and ZB-H1 at most p - stage; interleaved 1F1B (in
/// microbatch-chunks' worth of a whole stage) a little more than 1F1B.
double inFlightMicrobatches(const std::string &schedule, int64_t p,
                            int64_t stage, int64_t m, int64_t v);

/// A collective among a stream of kernels: started before kernel `start`
/// and waited for before kernel `wait` (positions in that stream; equal:
/// it blocks), taking `time` on the link.
struct CommSpan {
  int64_t start = 0, wait = 0;
  double time = 0;
};

/// What each of `comms` adds to the step of one rank whose kernels take
/// `kernels` in order: the collectives run one at a time (one
/// communicator) in the order they start, each from its start or the end
/// of the one before; where one is waited for before it is done the
/// kernels stand still until it is. A collective costs that wait plus
/// (1 - overlap) of its time that ran under kernels (what it slows them
/// by). With overlap 0 nothing runs under a collective: each costs its
/// time.
std::vector<double> overlappedCommTimes(const std::vector<double> &kernels,
                                        const std::vector<CommSpan> &comms,
                                        double overlap);

struct StateBytes {
  double params = 0, gradients = 0, optimizer = 0;
  double total() const { return params + gradients + optimizer; }
};

/// What one data-parallel rank holds of `full` under ZeRO `stage` over
/// `dp` ranks: stage 1 divides the optimizer state, 2 also the gradients,
/// 3 also the parameters. With microbatches weft accumulates gradients
/// unsplit (`accumulating`), so stage 2 and 3 keep whole gradients.
StateBytes zeroStateBytes(const StateBytes &full, int64_t stage, int64_t dp,
                          bool accumulating);

} // namespace weft::planner

#endif // WEFT_TOOLS_WEFTC_PLANNER_FORMULAS_H
