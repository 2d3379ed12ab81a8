//===- Trace.cpp - Where a training run's time went, per rank -------------===//
#include "Trace.h"
#include "RankStart.h"

#include "weft/runtime/Comm.h"
#include "weft/runtime/Device.h"
#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Json.h"
#include "weft/runtime/MeshIndex.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include <unistd.h>

namespace weft::trace {
namespace {

enum class Category { Compute, P2P, Collective, Wait };

const char *categoryName(Category c) {
  switch (c) {
  case Category::Compute:
    return "compute";
  case Category::P2P:
    return "p2p";
  case Category::Collective:
    return "collective";
  case Category::Wait:
    return "wait";
  }
  return "compute";
}

Category categoryOf(const std::string &kernel) {
  if (kernel == "send" || kernel == "send_start" || kernel == "recv_start")
    return Category::P2P;
  // Blocked until another rank's data is here.
  if (kernel == "recv" || kernel == "comm_wait")
    return Category::Wait;
  for (const char *prefix : {"all_reduce", "all_gather", "reduce_scatter",
                             "all_to_all", "broadcast", "comm_progress"})
    if (kernel.compare(0, std::strlen(prefix), prefix) == 0)
      return Category::Collective;
  return Category::Compute;
}

constexpr int64_t kStepBegin = -1, kStepEnd = -2;
// About 32 MiB of marks per rank; a longer run is traced up to there.
constexpr size_t kMaxMarks = size_t(1) << 21;

struct Mark {
  int64_t index; ///< launch, or kStepBegin / kStepEnd
  int64_t ns;    ///< since the ranks' common start
};

struct Tracer {
  const ModelSignature *sig = nullptr;
  /// A device whose work runs behind the host: waited for at every mark.
  DeviceBackend *device = nullptr;
  std::vector<Category> categories;
  int64_t stage = -1;
  /// The CPU the rank is pinned to (RankStart.h), or -1.
  int64_t cpu = -1;
  uint64_t arenaBytes = 0;
  std::chrono::steady_clock::time_point origin;
  std::vector<Mark> marks;
  std::vector<int64_t> steps; ///< the step number of each kStepBegin
  bool truncated = false;

  void mark(int64_t index) {
    if (device)
      device->synchronizeCompute();
    if (marks.size() >= kMaxMarks) {
      truncated = true;
      return;
    }
    marks.push_back(
        {index, std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - origin)
                    .count()});
  }
};

Tracer *active = nullptr;

/// One step of one rank, in milliseconds from the common start.
struct StepStats {
  double begin = 0, end = 0;
  double windowBegin = 1e300, windowEnd = -1e300; // its microbatch launches
  double busy = 0; // compute from its first microbatch launch to its last
  double perCategory[4] = {0, 0, 0, 0};
};
constexpr size_t kStatDoubles = sizeof(StepStats) / sizeof(double);

std::string unitName(const LaunchSpec &l) {
  std::string name = (l.weightGrad ? "W"
                      : l.backward ? "B"
                                   : "F") +
                     std::to_string(l.microbatch);
  if (l.chunk >= 0)
    name += ".c" + std::to_string(l.chunk);
  return name;
}

JsonValue event(const std::string &name, const char *cat, int64_t rank,
                int64_t tid, double beginMs, double endMs) {
  JsonValue e = JsonValue::object();
  e.set("name", JsonValue::string(name));
  e.set("cat", JsonValue::string(cat));
  e.set("ph", JsonValue::string("X"));
  e.set("pid", JsonValue::integer(rank));
  e.set("tid", JsonValue::integer(tid));
  e.set("ts", JsonValue::number(beginMs * 1e3));
  e.set("dur", JsonValue::number((endMs - beginMs) * 1e3));
  return e;
}

JsonValue metadata(const char *what, int64_t rank, int64_t tid,
                   const std::string &name) {
  JsonValue e = JsonValue::object();
  e.set("name", JsonValue::string(what));
  e.set("ph", JsonValue::string("M"));
  e.set("pid", JsonValue::integer(rank));
  e.set("tid", JsonValue::integer(tid));
  JsonValue args = JsonValue::object();
  args.set("name", JsonValue::string(name));
  e.set("args", std::move(args));
  return e;
}

/// This rank's events (as JSON array members, comma-separated) and per-step
/// statistics.
void analyze(const Tracer &t, int64_t rank, std::string &events,
             std::vector<StepStats> &stats) {
  std::vector<JsonValue> out;
  std::string label = "rank " + std::to_string(rank);
  std::string where;
  if (t.stage >= 0)
    where = "stage " + std::to_string(t.stage);
  if (t.cpu >= 0)
    where += (where.empty() ? "" : ", ") + std::string("cpu ") +
             std::to_string(t.cpu);
  if (!where.empty())
    label += " (" + where + ")";
  out.push_back(metadata("process_name", rank, 0, label));
  out.push_back(metadata("thread_name", rank, 0, "launches"));
  out.push_back(metadata("thread_name", rank, 1, "schedule"));
  StepStats cur;
  double computed = 0, computedAtWindow = 0; // compute time in the step
  int64_t stepIndex = -1;
  double last = 0;
  // The schedule track: runs of launches of one unit (microbatch, forward
  // or backward, chunk); time blocked in between is idle.
  const LaunchSpec *unit = nullptr;
  double unitBegin = 0, unitEnd = 0;
  auto closeUnit = [&] {
    if (unit)
      out.push_back(event(unitName(*unit),
                          unit->backward ? "backward" : "forward", rank, 1,
                          unitBegin, unitEnd));
    unit = nullptr;
  };
  for (const Mark &m : t.marks) {
    double now = static_cast<double>(m.ns) * 1e-6;
    if (m.index == kStepBegin) {
      cur = StepStats();
      computed = computedAtWindow = 0;
      cur.begin = now;
      ++stepIndex;
      last = now;
      continue;
    }
    if (m.index == kStepEnd) {
      closeUnit();
      cur.end = now;
      if (cur.windowBegin > cur.windowEnd) // no microbatches
        cur.windowBegin = cur.windowEnd = cur.begin;
      stats.push_back(cur);
      JsonValue step = event(
          "step " + std::to_string(t.steps[static_cast<size_t>(stepIndex)]),
          "step", rank, 2, cur.begin, cur.end);
      out.push_back(std::move(step));
      continue;
    }
    if (m.index < 0 || static_cast<size_t>(m.index) >= t.sig->launches.size())
      continue;
    const LaunchSpec &l = t.sig->launches[static_cast<size_t>(m.index)];
    Category c = t.categories[static_cast<size_t>(m.index)];
    double begin = last, end = now;
    last = now;
    cur.perCategory[static_cast<int>(c)] += end - begin;
    JsonValue e = event(l.kernel, categoryName(c), rank, 0, begin, end);
    JsonValue args = JsonValue::object();
    args.set("launch", JsonValue::integer(m.index));
    if (l.microbatch >= 0)
      args.set("microbatch", JsonValue::integer(l.microbatch));
    if (l.chunk >= 0)
      args.set("chunk", JsonValue::integer(l.chunk));
    if (l.backward)
      args.set("backward", JsonValue::boolean(true));
    if (!l.tensors.empty()) {
      JsonValue tensors = JsonValue::array();
      for (const std::string &type : l.tensors)
        tensors.push(JsonValue::string(type));
      args.set("tensors", std::move(tensors));
    }
    e.set("args", std::move(args));
    out.push_back(std::move(e));
    if (c == Category::Wait)
      closeUnit(); // a unit's block shows its work, not the waits inside
    double computedBefore = computed;
    if (c == Category::Compute)
      computed += end - begin;
    if (l.microbatch < 0)
      continue;
    // Busy: all compute from this rank's first microbatch launch to the end
    // of its last (gradient sums between microbatches are work too).
    if (cur.windowBegin > cur.windowEnd)
      computedAtWindow = computedBefore;
    cur.windowBegin = std::min(cur.windowBegin, begin);
    cur.windowEnd = std::max(cur.windowEnd, end);
    cur.busy = computed - computedAtWindow;
    if (c != Category::Compute)
      continue;
    bool same = unit && unit->microbatch == l.microbatch &&
                unit->backward == l.backward &&
                unit->weightGrad == l.weightGrad && unit->chunk == l.chunk;
    if (!same) {
      closeUnit();
      unit = &l;
      unitBegin = begin;
    }
    unitEnd = end;
  }
  events.clear();
  for (size_t i = 0; i < out.size(); ++i) {
    if (i)
      events += ",\n";
    events += out[i].dump();
  }
}

/// Gathers a byte string of each rank's (rank 0 gets them all).
std::vector<std::string> gatherStrings(const std::string &mine) {
  if (!comm::active())
    return {mine};
  int64_t longest = comm::maxOverRanks(static_cast<int64_t>(mine.size()));
  std::vector<uint8_t> padded(static_cast<size_t>(longest) + 8, 0);
  uint64_t n = mine.size();
  std::memcpy(padded.data(), &n, 8);
  std::memcpy(padded.data() + 8, mine.data(), mine.size());
  std::vector<uint8_t> all =
      comm::allGatherBytes(padded.data(), static_cast<int64_t>(padded.size()));
  std::vector<std::string> out;
  for (size_t at = 0; at < all.size(); at += padded.size()) {
    std::memcpy(&n, all.data() + at, 8);
    out.emplace_back(reinterpret_cast<const char *>(all.data() + at + 8), n);
  }
  return out;
}

} // namespace

int64_t stageOf(const ModelSignature &sig, int64_t rank) {
  if (sig.pipelineAxis < 0)
    return -1;
  return meshGroupIndex(rank, sig.meshShape, &sig.pipelineAxis, 1);
}

void start(const ModelSignature &sig, int64_t stage, uint64_t arenaBytes) {
  static Tracer tracer;
  tracer.sig = &sig;
  tracer.stage = stage;
  tracer.cpu = pinnedCpu();
  tracer.arenaBytes = arenaBytes;
  tracer.device = deviceBackend().isHost() ? nullptr : &deviceBackend();
  tracer.categories.clear();
  for (const LaunchSpec &l : sig.launches)
    tracer.categories.push_back(categoryOf(l.kernel));
  tracer.marks.reserve(1 << 16);
  // A common time origin. Ranks on one host share the steady clock
  // (CLOCK_MONOTONIC): the origin is the earliest rank's start. Across
  // hosts each rank starts its clock after a barrier (clocks then agree to
  // within the barrier's skew).
  if (comm::active())
    comm::barrier();
  tracer.origin = std::chrono::steady_clock::now();
  if (comm::active()) {
    struct Start {
      char host[120];
      int64_t ns;
    } mine{};
    if (gethostname(mine.host, sizeof mine.host - 1) != 0)
      mine.host[0] = '\0';
    mine.ns = tracer.origin.time_since_epoch().count();
    std::vector<uint8_t> all = comm::allGatherBytes(&mine, sizeof mine);
    bool oneHost = true;
    int64_t earliest = mine.ns;
    for (size_t at = 0; at < all.size(); at += sizeof mine) {
      Start other;
      std::memcpy(&other, all.data() + at, sizeof other);
      oneHost &= std::strncmp(other.host, mine.host, sizeof mine.host) == 0;
      earliest = std::min(earliest, other.ns);
    }
    if (oneHost)
      tracer.origin = std::chrono::steady_clock::time_point(
          std::chrono::steady_clock::duration(earliest));
  }
  active = &tracer;
}

bool enabled() { return active != nullptr; }

void beginStep(int64_t step) {
  if (!active)
    return;
  active->steps.push_back(step);
  active->mark(kStepBegin);
}

void endStep() {
  if (active)
    active->mark(kStepEnd);
}

bool finish(const std::string &path, Breakdown &total, std::string &error) {
  if (!active)
    return true;
  Tracer &t = *active;
  active = nullptr;
  const int64_t rank = comm::active() ? comm::rank() : 0;
  // A truncated trace may end inside a step: drop the partial one.
  while (!t.marks.empty() && t.marks.back().index != kStepEnd)
    t.marks.pop_back();
  std::string events;
  std::vector<StepStats> stats;
  analyze(t, rank, events, stats);

  // Every rank ran the same steps (the trace stops at the same mark count
  // only by chance, so the ranks agree on the fewest).
  int64_t steps = static_cast<int64_t>(stats.size());
  if (comm::active())
    steps = -comm::maxOverRanks(-steps);
  stats.resize(static_cast<size_t>(steps));
  std::string statBytes(reinterpret_cast<const char *>(stats.data()),
                        stats.size() * sizeof(StepStats));
  std::vector<std::string> allStats = gatherStrings(statBytes);
  std::vector<std::string> allEvents = gatherStrings(events);
  std::vector<std::string> allArenas = gatherStrings(std::string(
      reinterpret_cast<const char *>(&t.arenaBytes), sizeof t.arenaBytes));
  if (rank != 0)
    return true;

  const int64_t ranks = static_cast<int64_t>(allStats.size());
  auto at = [&](int64_t r, int64_t s) {
    StepStats st;
    std::memcpy(&st,
                allStats[static_cast<size_t>(r)].data() +
                    static_cast<size_t>(s) * sizeof(StepStats),
                sizeof st);
    return st;
  };
  static_assert(kStatDoubles * sizeof(double) == sizeof(StepStats));
  // The pipeline: its stage count over the mesh, microbatches and chunks
  // from the launches.
  const ModelSignature &sig = *t.sig;
  int64_t p = 1, m = 1, v = 1;
  if (sig.pipelineAxis >= 0)
    p = sig.meshShape[static_cast<size_t>(sig.pipelineAxis)];
  for (const LaunchSpec &l : sig.launches) {
    m = std::max(m, l.microbatch + 1);
    v = std::max(v, l.chunk + 1);
  }
  const int64_t first = steps > 1 ? 1 : 0;
  std::vector<StepStats> mean(static_cast<size_t>(ranks));
  std::vector<double> bubbles; // per step
  for (int64_t s = first; s < steps; ++s) {
    double wb = 1e300, we = -1e300;
    for (int64_t r = 0; r < ranks; ++r) {
      StepStats st = at(r, s);
      wb = std::min(wb, st.windowBegin);
      we = std::max(we, st.windowEnd);
      StepStats &acc = mean[static_cast<size_t>(r)];
      for (int c = 0; c < 4; ++c)
        acc.perCategory[c] += st.perCategory[c];
      acc.end += st.end - st.begin;
    }
    double idle = 0;
    for (int64_t r = 0; r < ranks; ++r)
      idle += we > wb ? 1.0 - at(r, s).busy / (we - wb) : 0.0;
    bubbles.push_back(idle / static_cast<double>(ranks));
  }
  const int64_t measured = steps - first;
  total = Breakdown();
  total.steps = measured;
  for (const std::string &a : allArenas) {
    uint64_t bytes = 0;
    std::memcpy(&bytes, a.data(), std::min(a.size(), sizeof bytes));
    total.arenaBytes.push_back(bytes);
  }
  if (p > 1 && measured > 0) {
    // The median step: a step the OS took a core from says little.
    std::sort(bubbles.begin(), bubbles.end());
    size_t mid = bubbles.size() / 2;
    total.bubble = bubbles.size() % 2 ? bubbles[mid]
                                      : 0.5 * (bubbles[mid - 1] + bubbles[mid]);
    total.bubbleTheory =
        static_cast<double>(p - 1) / static_cast<double>(v * m + p - 1);
  }

  // The file: every rank's events.
  std::string body = "{\"displayTimeUnit\":\"ms\",\"otherData\":";
  JsonValue other = JsonValue::object();
  other.set("producer", JsonValue::string("weft train --trace"));
  other.set("ranks", JsonValue::integer(ranks));
  other.set("pipeline_stages", JsonValue::integer(p));
  other.set("microbatches", JsonValue::integer(m));
  other.set("virtual_stages", JsonValue::integer(v));
  other.set("steps_traced", JsonValue::integer(steps));
  if (t.truncated)
    other.set("truncated", JsonValue::boolean(true));
  if (total.bubble >= 0) {
    other.set("bubble_measured", JsonValue::number(total.bubble));
    other.set("bubble_theory", JsonValue::number(total.bubbleTheory));
  }
  body += other.dump() + ",\"traceEvents\":[\n";
  bool firstEvents = true;
  for (const std::string &e : allEvents) {
    if (e.empty())
      continue;
    if (!firstEvents)
      body += ",\n";
    body += e;
    firstEvents = false;
  }
  body += "\n]}\n";
  bool ok = writeFileAtomic(path, {{body.data(), body.size()}}, error);
  if (!ok)
    error = "--trace: " + error;

  // Where the time went.
  const double n = measured > 0 ? static_cast<double>(measured) : 1.0;
  std::fprintf(stderr,
               "weft: where the time went (mean per step over %lld step%s%s; "
               "trace %s):\n"
               "  rank  stage  compute ms  p2p ms  collectives ms  waiting ms"
               "  other ms  step ms  arena KiB\n",
               static_cast<long long>(measured), measured == 1 ? "" : "s",
               first ? ", the first left out" : "",
               ok ? path.c_str() : "not written");
  for (int64_t r = 0; r < ranks; ++r) {
    const StepStats &acc = mean[static_cast<size_t>(r)];
    double c[4];
    for (int i = 0; i < 4; ++i)
      c[i] = acc.perCategory[i] / n;
    double step = acc.end / n;
    double other = std::max(0.0, step - c[0] - c[1] - c[2] - c[3]);
    int64_t stage = stageOf(sig, r);
    std::fprintf(stderr,
                 "  %4lld  %5s  %10.3f  %6.3f  %14.3f  %10.3f  %8.3f  %7.3f"
                 "  %9.1f\n",
                 static_cast<long long>(r),
                 stage < 0 ? "-" : std::to_string(stage).c_str(), c[0], c[1],
                 c[2], c[3], other, step,
                 static_cast<double>(total.arenaBytes[static_cast<size_t>(r)]) /
                     1024.0);
    total.computeMs += c[0] / static_cast<double>(ranks);
    total.p2pMs += c[1] / static_cast<double>(ranks);
    total.collectiveMs += c[2] / static_cast<double>(ranks);
    total.waitMs += c[3] / static_cast<double>(ranks);
    total.stepMs += step / static_cast<double>(ranks);
  }
  if (total.bubble >= 0)
    std::fprintf(stderr,
                 "  pipeline bubble: %.1f%% measured (stages idle between the "
                 "first and the last microbatch), %.1f%% in theory "
                 "((p-1)/(%sm+p-1), p=%lld m=%lld%s)\n",
                 100 * total.bubble, 100 * total.bubbleTheory, v > 1 ? "v" : "",
                 static_cast<long long>(p), static_cast<long long>(m),
                 v > 1 ? (" v=" + std::to_string(v)).c_str() : "");
  std::fflush(stderr);
  return ok;
}

} // namespace weft::trace

extern "C" void weft_trace_launch(int64_t index) {
  if (weft::trace::active)
    weft::trace::active->mark(index);
}
