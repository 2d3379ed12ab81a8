//===- Calibrate.cpp - weft-calibrate: this machine for the cost model ----===//
//
//   weft-calibrate -o CLUSTER.json [--ranks N] [--quick]
//
// This file: the ranks' orchestration and main; the device measurements are
// in CalibrateDevice.cpp, the collectives and the overlap in
// CalibrateComm.cpp, the cluster file and table in CalibrateReport.cpp
// (Calibrate.h holds what they share).
//
// What `weft calibrate -n N` starts (directly for N = 1, else under mpirun,
// as `weft run` starts a bundle). It measures this machine through the
// runtime's own kernels (the weft_k_* entry points of KernelABI.h that
// compiled bundles call) and communicators (Comm.h), and rank 0 writes a
// cluster description in the format weftc's cost model reads
// ("weft-cluster/1", tools/weftc/planner/Cluster.h, DESIGN.md "Cost
// model") atomically (writeFileAtomic: a temporary file renamed over the
// output). Units are SI: bytes, seconds, FLOP/s, bytes/s.
//
// Every rank's kernels run on one thread (WEFT_NUM_THREADS=1), so the device
// figures are one core's ("cores_per_node" tells the cost model how many
// there are; the ranks of a node share them):
//
//   compute      rank 0 alone (the others sleep): weft_k_matmul on n x n x n
//                f32 products, n = 8 .. 1024 (--quick: 8 .. 512), each
//                trial in turns with the 128^3 product: a size's rate is
//                its median ratio to that reference times the reference's
//                median rate over the table (drift between sizes cancels).
//                peak_flops.fp32 is
//                the best rate, gemm_efficiency each size's [2n^3, rate /
//                peak]. The same for bf16 operands (the runtime widens them
//                to f32 and rounds the result: Widen.h): peak_flops.bf16.
//   skinny       rank 0: f32 products with one dimension small (2 .. 256)
//                and the others 512, as a microbatch's forward (few rows)
//                and weight gradient (short contraction) make them, each in
//                turns with the 512^3 product; their rate ratio over the
//                square table's at their FLOPs is the efficiency the table
//                misses. "gemm_full_dim" is fitted to it (the cost model's
//                min(1, small / gemm_full_dim)^0.8: GemmModel.h).
//   memory       bandwidths count traffic as the cost model does
//                (tools/weftc/planner/Cluster.h): operands + results + the
//                results again (a CPU reads each line it writes). Node
//                figures have one thread per hardware thread streaming at
//                once, each over its share of the arrays.
//                "memory_bandwidth": the node's, weft_k_binary add of 64
//                MiB f32 arrays (or twice the last-level cache) in all.
//                "cache_bytes": the last-level cache (sysfs);
//                "cache_bandwidth": one core's share of the node's rate on
//                arrays that fill a quarter of its share of that cache.
//                "kernel_bandwidth.adamw": weft_k_adamw on the node. One
//                core alone (and its bytes read + written / time, without
//                the write-allocate reads) under "calibration.memory".
//                The other "kernel_bandwidth" entries: binary (same shapes,
//                a bias, a scale), unary (tanh, erf), cast, transpose,
//                reduce, layer_norm(_grad), softmax(_grad) and
//                softmax_xent(_grad) on the node, on tensors of 256 KiB
//                (cache-sized: the cost model caps them by the memory's
//                bandwidth beyond the cache), the kernels in turns over
//                rounds of millisecond trials, each the median of its
//                rounds (several forms of one kernel: the mean time).
//   weights      rank 0: a 64 x 512 x 512 product whose B is taken in turn
//                from 64 MiB of weights, in turns with the same product
//                on one B: "weight_stream_bandwidth" is B's bytes over the
//                median extra time (what a small product pays to fetch a
//                weight a step reads once); "private_cache_bytes" the
//                largest cache a core has to itself (sysfs).
//   attention    rank 0: weft_k_attention and weft_k_attention_grad on f32
//                [2, 4, 256, 64] causal operands, in turns with the 128^3
//                product: "kernel_efficiency" holds their rates (FLOPs as
//                the cost model counts them) over peak_flops.fp32.
//   overhead     weft_k_binary add of one element: the median time of a
//                call ("kernel_overhead_s").
//   collectives  ranks that outnumber the cores pinned as bundles pin them
//                (weft/runtime/CorePlacement.h); for every group size p in
//                2..N the world splits into
//                floor(N / p) groups of consecutive ranks, which measure at
//                once, as the groups of one mesh axis of an SPMD program
//                communicate at once (ranks left over sleep): all_reduce,
//                all_gather and reduce_scatter of f32 buffers of 8 B .. 16
//                MiB (the full size n; --quick: fewer sizes), and send/recv
//                ping-pong between pairs. One size's time is the median
//                over trials of the slowest rank's mean time per operation,
//                after warm-up. Per collective and p, latency a and
//                bandwidth B are fitted (least squares of the relative
//                error, a and B positive) to DESIGN.md's alpha-beta model:
//                all_reduce 2(p-1)a + 2(p-1)/p n/B, all_gather and
//                reduce_scatter (p-1)a + (p-1)/p n/B, send/recv a + n/B. The
//                all_reduce fit of the whole world gives the link's headline
//                figures; a single node's inter_node link copies them
//                ("assumed": true).
//   overlap      every rank: all_reduce_start of 16 MiB (--quick: 2 MiB)
//                over the world, then as many 128^3 weft_k_matmul calls as
//                take about as long as the all-reduce, each followed by
//                comm_progress, then comm_wait (what compiled bundles do),
//                against each alone: (T_gemm + T_ar - T_both) / min(T_gemm,
//                T_ar), clamped to [0, 1], from the medians of the slowest
//                rank's times (the four measured in turn in every trial).
//                The same without comm_progress is reported under
//                "calibration".
//
// With N = 1 there is nothing to communicate: the links get one rank's copy
// bandwidth (weft_k_copy) and the kernel overhead as latency, marked
// "assumed", and overlap is 0.
//
// Ranks that wait for others (all but rank 0 while it measures compute,
// ranks left over from the groups) wait in quietBarrier(): receives polled
// with short sleeps, so they leave the cores, which N > cores ranks share,
// to the ranks that measure; the runtime's own waits yield but keep polling.
//
// Exit codes: 0 success, 2 bad usage or an output that cannot be written
// (checked before measuring), 1 anything else.
//
//===----------------------------------------------------------------------===//

#include "tools/weft/Calibrate.h"

#include "weft/runtime/Comm.h"
#include "weft/runtime/CorePlacement.h"
#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Json.h"
#include "weft/runtime/KernelABI.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace weft;
using weft::comm::Communicator;
using weft::comm::Reduction;
using weft::comm::Request;

namespace weft::calibrate {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

const char *const kUsage =
    "usage: weft-calibrate -o CLUSTER.json [--ranks N] [--quick]\n"
    "(started by 'weft calibrate -n N -o CLUSTER.json [--quick]')\n";

// Tags of quietBarrier's messages on the world communicator (the
// measurements use communicators of their own).
constexpr int64_t kArriveTag = 32001;
constexpr int64_t kReleaseTag = 32002;
/// A rank waiting longer than this in quietBarrier stops the job.
constexpr double kQuietWaitLimit = 900.0;

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0.0;
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

void sleepSeconds(double s) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(s);
  ts.tv_nsec = static_cast<long>((s - static_cast<double>(ts.tv_sec)) * 1e9);
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/// Whether this process reports errors: rank 0 of a launch (every rank
/// finds the same problem in its arguments), or the only process.
bool gReportErrors = true;

int fail(int code, const std::string &message, bool usage = false) {
  if (!gReportErrors)
    return code;
  std::fflush(stdout);
  std::fprintf(stderr, "weft: error: %s\n", message.c_str());
  if (usage)
    std::fputs(kUsage, stderr);
  return code;
}

//===----------------------------------------------------------------------===//
// Waiting without spinning
//===----------------------------------------------------------------------===//

/// Waits until every int64 in `boxes` (the targets of the receives in
/// `requests`, zero until their message lands) is nonzero, polling the
/// receives with sleeps of 20 us growing to 1 ms, then finishes them.
void sleepUntilReceived(Communicator &comm, std::vector<Request> &requests,
                        std::vector<int64_t> &boxes) {
  const double start = now();
  double nap = 2e-5;
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < requests.size(); ++i) {
      if (*static_cast<volatile int64_t *>(&boxes[i]) != 0)
        continue;
      requests[i].poll();
      if (*static_cast<volatile int64_t *>(&boxes[i]) == 0)
        all = false;
    }
    if (all)
      break;
    if (now() - start > kQuietWaitLimit) {
      std::fprintf(stderr,
                   "weft: error: rank %lld: calibration waited %.0f s for "
                   "the other ranks; stopping\n",
                   static_cast<long long>(comm.worldRanks()[comm.rank()]),
                   kQuietWaitLimit);
      comm::abortAll(kExitFailure);
    }
    sleepSeconds(nap);
    nap = std::min(nap * 2, 1e-3);
  }
  for (Request &r : requests)
    comm.wait(r);
}

/// A barrier over `world` whose waiting ranks sleep instead of polling:
/// everyone tells rank 0 it has arrived, rank 0 releases everyone.
void quietBarrier(Communicator &world) {
  if (world.size() == 1)
    return;
  const int64_t one = 1;
  if (world.rank() == 0) {
    std::vector<int64_t> boxes(static_cast<size_t>(world.size() - 1), 0);
    std::vector<Request> requests;
    for (int64_t r = 1; r < world.size(); ++r)
      requests.push_back(world.recvStart(&boxes[static_cast<size_t>(r - 1)], 1,
                                         WEFT_I64, r, kArriveTag));
    sleepUntilReceived(world, requests, boxes);
    for (int64_t r = 1; r < world.size(); ++r)
      world.send(&one, 1, WEFT_I64, r, kReleaseTag);
    return;
  }
  world.send(&one, 1, WEFT_I64, 0, kArriveTag);
  std::vector<int64_t> boxes(1, 0);
  std::vector<Request> requests;
  requests.push_back(world.recvStart(&boxes[0], 1, WEFT_I64, 0, kReleaseTag));
  sleepUntilReceived(world, requests, boxes);
}

} // namespace weft::calibrate

using namespace weft::calibrate;

int main(int argc, char **argv) {
  // One kernel thread per rank, whatever the environment says; set before
  // any kernel starts the pool.
  ::setenv("WEFT_NUM_THREADS", "1", 1);

  comm::LaunchInfo launch = comm::detectLaunch();
  gReportErrors = launch.rank == 0;
  std::string output;
  int64_t ranks = 0;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf("%s", kUsage);
      return kExitOk;
    }
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "-o" || arg == "--output") {
      if (i + 1 >= argc)
        return fail(kExitBadInput, "option '" + arg + "' needs a value", true);
      output = argv[++i];
    } else if (arg == "--ranks") {
      if (i + 1 >= argc)
        return fail(kExitBadInput, "option '--ranks' needs a value", true);
      char *end = nullptr;
      long long v = std::strtoll(argv[++i], &end, 10);
      if (!end || *end || v < 1)
        return fail(kExitBadInput,
                    std::string("--ranks expects a positive number, got '") +
                        argv[i] + "'",
                    true);
      ranks = v;
    } else {
      return fail(kExitBadInput, "unknown argument '" + arg + "'", true);
    }
  }
  if (output.empty())
    return fail(kExitBadInput, "missing -o CLUSTER.json", true);
  std::string why;
  if (!checkOutput(output, why))
    return fail(kExitBadInput, why);

  if (!launch.error.empty())
    return fail(kExitBadInput, launch.error);
  const bool launched = launch.kind != comm::LaunchInfo::Kind::None;
  const int64_t started = launched ? launch.size : 1;
  if (ranks == 0)
    ranks = started;
  if (ranks > 1 && !launched)
    return fail(kExitBadInput,
                "calibrating " + std::to_string(ranks) +
                    " ranks needs a launcher: run 'weft calibrate -n " +
                    std::to_string(ranks) + "'");
  if (launched && ranks != started)
    return fail(kExitBadInput, "--ranks " + std::to_string(ranks) +
                                   " but the launcher started " +
                                   std::to_string(started) + " (" +
                                   launch.variables + ")");
  std::string error;
  if (!comm::init(ranks, {ranks}, error))
    return fail(kExitBadInput, error);
  Communicator &world = comm::context().world();
  const bool root = world.rank() == 0;
  const double begin = now();
  const double loadBefore = loadAverage();

  Report report;
  report.ranks = world.size();
  report.quick = quick;
  unsigned cores = std::thread::hardware_concurrency();
  report.cores = cores > 0 ? cores : 1;

  // 1-3: one core, rank 0 alone.
  if (root)
    report.device = measureDevice(quick);
  quietBarrier(world);
  // The collectives and the overlap run as bundles run them: ranks that
  // outnumber the cores pinned as the runtime pins them (CorePlacement.h;
  // a calibration describes one node, so every rank is local).
  (void)pinToSharedCore(world.rank(), world.size());

  // 4-5: every rank.
  if (world.size() > 1) {
    CollectivePlan plan;
    if (quick) {
      for (int64_t b = 8; b <= (int64_t(8) << 20); b *= 16)
        plan.sizes.push_back(b);
      plan.trials = 3;
      plan.trialSeconds = 1.5e-3;
    } else {
      for (int64_t b = 8; b <= (int64_t(8) << 20); b *= 4)
        plan.sizes.push_back(b);
      plan.sizes.push_back(int64_t(16) << 20);
      plan.trials = 9;
      plan.trialSeconds = 5e-3;
    }
    report.series = measureCollectives(world, plan);
    report.overlap = measureOverlap(world, quick);
    report.haveLinks = true;
    for (const Series &s : report.series)
      if (s.coll == Coll::AllReduce && s.ranks == world.size()) {
        report.headlineBandwidth = s.bandwidth;
        report.headlineLatency = s.latency;
      }
  } else {
    report.headlineBandwidth = report.device.copyBandwidth;
    report.headlineLatency = report.device.kernelOverhead;
  }

  int64_t code = kExitOk;
  if (root) {
    report.seconds = now() - begin;
    report.loadBefore = loadBefore;
    report.loadAfter = loadAverage();
    std::string json = clusterJson(report);
    JsonValue parsed;
    std::string err;
    if (!parseJson(json, parsed, err)) {
      code = fail(kExitFailure, "internal error: the cluster file is not "
                                "valid JSON (" +
                                    err + ")");
    } else if (!writeFileAtomic(output, {{json.data(), json.size()}}, err)) {
      code = fail(kExitFailure, "cannot write " + output + ": " + err);
    } else {
      printTable(report, output);
    }
  }
  quietBarrier(world);
  if (world.size() > 1)
    world.allReduce(&code, &code, 1, WEFT_I64, Reduction::Max);
  comm::finalize();
  return static_cast<int>(code);
}
