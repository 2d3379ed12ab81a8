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

std::vector<double>
weft::planner::overlappedCommTimes(const std::vector<double> &kernels,
                                   const std::vector<CommSpan> &comms,
                                   double overlap) {
  const size_t n = comms.size();
  std::vector<double> charge(n, 0.0);
  if (overlap <= 0) {
    // Nothing runs under a collective: each takes its time.
    for (size_t k = 0; k < n; ++k)
      charge[k] = comms[k].time;
    return charge;
  }
  // The collectives in the order they start, and in the order they are
  // waited for (at one position, the one started first first).
  std::vector<size_t> byStart(n);
  for (size_t k = 0; k < n; ++k)
    byStart[k] = k;
  std::stable_sort(byStart.begin(), byStart.end(), [&](size_t a, size_t b) {
    return comms[a].start < comms[b].start;
  });
  std::vector<size_t> byWait = byStart;
  std::stable_sort(byWait.begin(), byWait.end(), [&](size_t a, size_t b) {
    return comms[a].wait < comms[b].wait;
  });
  std::vector<double> begin(n, 0.0), end(n, 0.0);
  // When the kernels stood still: [from, to), in order.
  std::vector<std::pair<double, double>> stalls;
  double clock = 0, linkFree = 0;
  size_t s = 0, w = 0;
  const int64_t count = static_cast<int64_t>(kernels.size());
  for (int64_t i = 0; i <= count; ++i) {
    for (; s < n && comms[byStart[s]].start <= i; ++s) {
      size_t k = byStart[s];
      begin[k] = std::max(clock, linkFree);
      end[k] = linkFree = begin[k] + comms[k].time;
    }
    for (; w < n && comms[byWait[w]].wait <= i; ++w) {
      size_t k = byWait[w];
      if (end[k] > clock) {
        charge[k] = end[k] - clock;
        stalls.push_back({clock, end[k]});
        clock = end[k];
      }
    }
    if (i < count)
      clock += kernels[i];
  }
  // Of each collective's time, what ran while the kernels stood still; the
  // rest ran under them and slows them by (1 - overlap).
  size_t j = 0;
  for (size_t k : byStart) {
    double under = end[k] - begin[k];
    while (j < stalls.size() && stalls[j].second <= begin[k])
      ++j;
    for (size_t i = j; i < stalls.size() && stalls[i].first < end[k]; ++i)
      under -= std::min(end[k], stalls[i].second) -
               std::max(begin[k], stalls[i].first);
    charge[k] += (1.0 - overlap) * std::max(0.0, under);
  }
  return charge;
}
