//===- SharedCores.cpp - A step of ranks that take turns on cores ---------===//
#include "tools/weftc/planner/SharedCores.h"

#include "passes/PipelineSchedule.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace weft::planner;

namespace {

enum class Kind { Forward, Backward, Weight, Tail };

struct Unit {
  int64_t slot;
  Kind kind;
  int64_t microbatch, chunk;
};

} // namespace

double
weft::planner::sharedCoresStepTime(const PipelineWork &w, int64_t ranks,
                                   int64_t cores,
                                   const std::vector<int64_t> &coreOfRank) {
  const int64_t P = w.stages, V = w.virtualStages, M = w.microbatches;
  const int64_t C = P * V;
  if (P < 1 || V < 1 || M < 1 || cores < 1 || ranks < P || ranks % P != 0 ||
      static_cast<int64_t>(w.forward.size()) != C ||
      static_cast<int64_t>(w.backward.size()) != C ||
      static_cast<int64_t>(w.weight.size()) != C ||
      static_cast<int64_t>(w.transfer.size()) != C - 1 ||
      static_cast<int64_t>(w.tail.size()) != P)
    return -1.0;
  const bool pinned = !coreOfRank.empty();
  if (pinned && static_cast<int64_t>(coreOfRank.size()) != ranks)
    return -1.0;
  for (int64_t c : coreOfRank)
    if (c < 0 || c >= cores)
      return -1.0;
  const bool zb = w.schedule == "zb-h1";
  // Each stage's units in its schedule's order, then its tail.
  std::vector<std::vector<Unit>> order(P);
  for (int64_t s = 0; s < P; ++s) {
    for (int64_t v = 0; v < V; ++v) {
      const int64_t c = v * P + s;
      for (int64_t m = 0; m < M; ++m) {
        auto slot = [&](bool backward, bool weight) {
          return P == 1 ? 2 * m + (backward ? 1 : 0)
                        : pipelineSlot(w.schedule, P, V, M, s, m, v, backward,
                                       weight);
        };
        order[s].push_back({slot(false, false), Kind::Forward, m, c});
        order[s].push_back({slot(true, false), Kind::Backward, m, c});
        if (zb && P > 1)
          order[s].push_back({slot(true, true), Kind::Weight, m, c});
      }
    }
    std::stable_sort(
        order[s].begin(), order[s].end(),
        [](const Unit &a, const Unit &b) { return a.slot < b.slot; });
    order[s].push_back({0, Kind::Tail, 0, 0});
  }
  auto duration = [&](const Unit &u, int64_t stage) {
    switch (u.kind) {
    case Kind::Forward:
      return w.forward[u.chunk];
    case Kind::Backward:
      return w.backward[u.chunk] + (zb && P > 1 ? 0.0 : w.weight[u.chunk]);
    case Kind::Weight:
      return w.weight[u.chunk];
    case Kind::Tail:
      break;
    }
    return w.tail[stage];
  };
  const double inf = std::numeric_limits<double>::infinity();
  const int64_t replicas = ranks / P;
  // When each unit of each replica finished (inf: not yet).
  std::vector<double> fDone(replicas * M * C, inf),
      bDone(replicas * M * C, inf);
  auto at = [&](int64_t replica, int64_t m, int64_t c) {
    return (replica * M + m) * C + c;
  };
  std::vector<size_t> next(ranks, 0);
  std::vector<double> remaining(ranks, -1.0);
  double now = 0, end = 0;
  int64_t finished = 0;
  // When rank r's next unit may start (inf: its input is not made yet).
  auto readyAt = [&](int64_t r) {
    const int64_t s = r % P, replica = r / P;
    const Unit &u = order[s][next[r]];
    switch (u.kind) {
    case Kind::Forward:
      return u.chunk == 0 ? 0.0
                          : fDone[at(replica, u.microbatch, u.chunk - 1)] +
                                w.transfer[u.chunk - 1];
    case Kind::Backward:
      return u.chunk == C - 1 ? fDone[at(replica, u.microbatch, u.chunk)]
                              : bDone[at(replica, u.microbatch, u.chunk + 1)] +
                                    w.transfer[u.chunk];
    case Kind::Weight:
      return bDone[at(replica, u.microbatch, u.chunk)];
    case Kind::Tail:
      return 0.0;
    }
    return inf;
  };
  while (finished < ranks) {
    std::vector<int64_t> runnable;
    double wake = inf;
    for (int64_t r = 0; r < ranks; ++r) {
      if (next[r] >= order[r % P].size())
        continue;
      double ready = readyAt(r);
      if (ready <= now) {
        runnable.push_back(r);
        if (remaining[r] < 0)
          remaining[r] = duration(order[r % P][next[r]], r % P);
      } else {
        wake = std::min(wake, ready);
      }
    }
    // Runnable ranks share the cores: each at min(1, cores / runnable),
    // or pinned, each at 1 / (the runnable ranks on its core).
    std::vector<double> rate(ranks, 0.0);
    std::vector<int64_t> onCore(pinned ? cores : 0, 0);
    if (pinned)
      for (int64_t r : runnable)
        ++onCore[coreOfRank[r]];
    for (int64_t r : runnable)
      rate[r] = pinned
                    ? 1.0 / static_cast<double>(onCore[coreOfRank[r]])
                    : std::min(1.0, static_cast<double>(cores) /
                                        static_cast<double>(runnable.size()));
    double dt = wake - now;
    for (int64_t r : runnable)
      dt = std::min(dt, remaining[r] / rate[r]);
    if (!(dt < inf))
      return -1.0; // nothing can run: a unit waits for one never run
    now += dt;
    for (int64_t r : runnable) {
      remaining[r] -= dt * rate[r];
      if (remaining[r] > 1e-12 * std::max(1.0, now))
        continue;
      const Unit &u = order[r % P][next[r]];
      const int64_t replica = r / P;
      if (u.kind == Kind::Forward)
        fDone[at(replica, u.microbatch, u.chunk)] = now;
      else if (u.kind == Kind::Backward)
        bDone[at(replica, u.microbatch, u.chunk)] = now;
      remaining[r] = -1.0;
      if (++next[r] == order[r % P].size()) {
        ++finished;
        end = std::max(end, now);
      }
    }
  }
  return end;
}
