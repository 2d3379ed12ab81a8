//===- Formulas.cpp - The cost model's closed forms -----------------------===//
#include "tools/weftc/planner/Formulas.h"

#include <algorithm>

using namespace weft::planner;

double weft::planner::allReduceTime(int64_t p, double bytes, const Link &link) {
  if (p <= 1 || bytes <= 0)
    return 0;
  double steps = static_cast<double>(p - 1);
  return 2 * steps * link.latency +
         2 * steps / static_cast<double>(p) * bytes / link.bandwidth;
}

double weft::planner::allGatherTime(int64_t p, double bytes, const Link &link) {
  if (p <= 1 || bytes <= 0)
    return 0;
  double steps = static_cast<double>(p - 1);
  return steps * link.latency +
         steps / static_cast<double>(p) * bytes / link.bandwidth;
}

double weft::planner::reduceScatterTime(int64_t p, double bytes,
                                        const Link &link) {
  return allGatherTime(p, bytes, link);
}

double weft::planner::sendRecvTime(double bytes, const Link &link) {
  if (bytes <= 0)
    return 0;
  return link.latency + bytes / link.bandwidth;
}

double weft::planner::bubbleFraction(const std::string &schedule, int64_t p,
                                     int64_t m, int64_t v) {
  if (p <= 1 || m < 1)
    return 0;
  double idle = static_cast<double>(p - 1);
  if (schedule == "interleaved")
    return idle / (static_cast<double>(std::max<int64_t>(v, 1) * m) + idle);
  return idle / (static_cast<double>(m) + idle);
}

double weft::planner::bubbleTime(const std::string &schedule, int64_t p,
                                 int64_t v, double f, double b, double w) {
  if (p <= 1)
    return 0;
  double idle = static_cast<double>(p - 1);
  if (schedule == "zb-h1")
    return idle * std::max(0.0, f + b - w);
  // Interleaved: f, b, w are one chunk's; the ramp is p - 1 chunks.
  (void)v;
  return idle * (f + b + w);
}

double weft::planner::inFlightMicrobatches(const std::string &schedule,
                                           int64_t p, int64_t stage, int64_t m,
                                           int64_t v) {
  if (p <= 1 || schedule == "gpipe" || schedule == "none")
    return static_cast<double>(m);
  double held = static_cast<double>(std::min(m, p - stage));
  if (schedule == "interleaved" && v > 1) {
    // Megatron's interleaved warm-up runs (v - 1) * p + 2 * (p - stage - 1)
    // chunks ahead on `stage`: in whole-stage microbatches, that plus the
    // one in progress, over v chunks.
    double chunks = static_cast<double>((v - 1) * p + 2 * (p - stage - 1) + 1);
    held = std::min(static_cast<double>(m), chunks / static_cast<double>(v));
  }
  return held;
}

StateBytes weft::planner::zeroStateBytes(const StateBytes &full, int64_t stage,
                                         int64_t dp, bool accumulating) {
  StateBytes s = full;
  if (dp <= 1)
    return s;
  double d = static_cast<double>(dp);
  if (stage >= 1)
    s.optimizer /= d;
  if (stage >= 2 && !accumulating)
    s.gradients /= d;
  if (stage >= 3)
    s.params /= d;
  return s;
}
