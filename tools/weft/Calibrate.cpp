//===- Calibrate.cpp - weft-calibrate: this machine for the cost model ----===//
//
//   weft-calibrate -o CLUSTER.json [--ranks N] [--quick]
//
// This file: the device measurements, the report and main; the collectives
// and the overlap are in CalibrateComm.cpp (Calibrate.h holds what both
// use).
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
//                f32 products, n = 8 .. 1024 (--quick: 8 .. 512); the
//                median rate of several trials per size. peak_flops.fp32 is
//                the best rate, gemm_efficiency each size's [2n^3, rate /
//                peak]. The same for bf16 operands (the runtime widens them
//                to f32 and rounds the result: Widen.h): peak_flops.bf16.
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
//   overhead     weft_k_binary add of one element: the median time of a
//                call ("kernel_overhead_s").
//   collectives  for every group size p in 2..N the world splits into
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
#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Float16.h"
#include "weft/runtime/Json.h"
#include "weft/runtime/KernelABI.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <pthread.h>
#include <sched.h>
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

//===----------------------------------------------------------------------===//
// Kernel calls
//===----------------------------------------------------------------------===//

/// Median seconds per call of `fn`: after two warm-up calls, `trials`
/// trials of as many calls as fit in budget / trials (at least one each).
template <class F> double timePerCall(F &&fn, double budget, int trials) {
  fn();
  double t0 = now();
  fn();
  double one = std::max(now() - t0, 1e-9);
  int64_t calls =
      std::max<int64_t>(1, static_cast<int64_t>(budget / trials / one + 0.5));
  std::vector<double> per;
  for (int t = 0; t < trials; ++t) {
    t0 = now();
    for (int64_t i = 0; i < calls; ++i)
      fn();
    per.push_back((now() - t0) / static_cast<double>(calls));
  }
  return median(per);
}

/// A streaming kernel call over arrays of its own.
class Stream {
public:
  virtual ~Stream() = default;
  virtual void operator()() = 0;
  /// Bytes one call moves as the cost model counts them
  /// (tools/weftc/planner/Cluster.h): operands and results, plus the
  /// results again (a CPU reads each line it writes: write-allocate).
  virtual double traffic() const = 0;
};

/// One weft_k_binary add of `n`-element f32 arrays (c = a + b).
class AddCall final : public Stream {
public:
  explicit AddCall(int64_t n)
      : a_(static_cast<size_t>(n), 1.0f), b_(static_cast<size_t>(n), 2.0f),
        c_(static_cast<size_t>(n), 0.0f) {
    desc_ = {3, WEFT_F32, 1, n, WEFT_F32, 1,
             n, WEFT_F32, 1, n, 1,        WEFT_BINARY_ADD};
    bufs_[0] = a_.data();
    bufs_[1] = b_.data();
    bufs_[2] = c_.data();
  }
  void operator()() override { weft_k_binary(bufs_, desc_.data()); }
  /// Bytes one call reads and writes (two operands, one result).
  double readWritten() const {
    return 3.0 * 4.0 * static_cast<double>(a_.size());
  }
  double traffic() const override {
    return 4.0 * 4.0 * static_cast<double>(a_.size());
  }

private:
  std::vector<float> a_, b_, c_;
  std::vector<int64_t> desc_;
  void *bufs_[3];
};

/// One weft_k_adamw step of `n` parameters, updated in place (the results
/// share the operands' buffers, as in compiled training steps).
class AdamwCall final : public Stream {
public:
  explicit AdamwCall(int64_t n)
      : param_(static_cast<size_t>(n), 0.5f),
        grad_(static_cast<size_t>(n), 0.01f), m_(static_cast<size_t>(n), 0.0f),
        v_(static_cast<size_t>(n), 0.0f) {
    desc_ = {8,
             WEFT_F32,
             1,
             n,
             WEFT_F32,
             1,
             n,
             WEFT_F32,
             1,
             n,
             WEFT_F32,
             1,
             n,
             WEFT_I64,
             0,
             WEFT_F32,
             1,
             n,
             WEFT_F32,
             1,
             n,
             WEFT_F32,
             1,
             n,
             5,
             weftDoubleToAttr(1e-3),
             weftDoubleToAttr(0.9),
             weftDoubleToAttr(0.999),
             weftDoubleToAttr(1e-8),
             weftDoubleToAttr(1e-2)};
    void *bufs[8] = {param_.data(), grad_.data(),  m_.data(), v_.data(),
                     &step_,        param_.data(), m_.data(), v_.data()};
    std::memcpy(bufs_, bufs, sizeof bufs);
  }
  void operator()() override { weft_k_adamw(bufs_, desc_.data()); }
  /// Four operands, three results, the results again.
  double traffic() const override {
    return 10.0 * 4.0 * static_cast<double>(param_.size());
  }

private:
  std::vector<float> param_, grad_, m_, v_;
  int64_t step_ = 1;
  std::vector<int64_t> desc_;
  void *bufs_[8];
};

/// One weft_k_copy of `n` f32 elements.
class CopyCall {
public:
  explicit CopyCall(int64_t n)
      : x_(static_cast<size_t>(n), 1.0f), y_(static_cast<size_t>(n), 0.0f) {
    desc_ = {2, WEFT_F32, 1, n, WEFT_F32, 1, n, 0};
    bufs_[0] = x_.data();
    bufs_[1] = y_.data();
  }
  void operator()() { weft_k_copy(bufs_, desc_.data()); }

private:
  std::vector<float> x_, y_;
  std::vector<int64_t> desc_;
  void *bufs_[2];
};

//===----------------------------------------------------------------------===//
// Device measurements (rank 0)
//===----------------------------------------------------------------------===//

struct GemmPoint {
  int64_t n;
  double flops; ///< of one product: 2 n^3
  double fp32Rate, bf16Rate;
};

struct DeviceFigures {
  std::vector<GemmPoint> gemm;
  double peakFp32 = 0, peakBf16 = 0;
  /// Streams (Stream::traffic() per second): the node's memory with every
  /// hardware thread streaming, one core alone, a core's share of the last
  /// cache level with every core streaming, AdamW on the node.
  double memoryBandwidth = 0, oneCoreBandwidth = 0, cacheBandwidth = 0,
         adamwBandwidth = 0;
  /// What one core's add reads and writes per second (no write-allocate).
  double oneCoreReadWritten = 0;
  double cacheBytes = 0; ///< the node's last-level cache (0: unknown)
  int64_t streamArrayBytes = 0, cacheArrayBytes = 0;
  int nodeThreads = 1;
  double kernelOverhead = 0;
  double copyBandwidth = 0; ///< one rank's weft_k_copy (the N = 1 links)
};

/// Lets the calling thread run on every CPU of the machine (mpirun binds a
/// rank to one core when there are at most two ranks).
void useAllCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  unsigned cpus = std::thread::hardware_concurrency();
  for (unsigned c = 0; c < cpus && c < CPU_SETSIZE; ++c)
    CPU_SET(c, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/// Stream::traffic() per second of `threads` threads at once, each calling
/// its own stream of `elems` elements (made by `make`) `calls` times per
/// trial: total traffic over the slowest thread's time, median of `trials`
/// (after one that touches the pages).
template <class Make>
double streamRate(int threads, int64_t elems, Make make, int trials,
                  int calls) {
  std::vector<std::unique_ptr<Stream>> streams;
  for (int t = 0; t < threads; ++t)
    streams.push_back(make(elems));
  std::vector<double> rates;
  for (int trial = 0; trial < trials + 1; ++trial) {
    std::atomic<int> ready(0);
    std::atomic<bool> go(false);
    std::vector<double> elapsed(static_cast<size_t>(threads), 0.0);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        useAllCpus();
        ready.fetch_add(1);
        while (!go.load())
          std::this_thread::yield();
        Stream &stream = *streams[static_cast<size_t>(t)];
        double t0 = now();
        for (int i = 0; i < calls; ++i)
          stream();
        elapsed[static_cast<size_t>(t)] = now() - t0;
      });
    while (ready.load() < threads)
      std::this_thread::yield();
    go.store(true);
    for (std::thread &th : pool)
      th.join();
    double slowest = *std::max_element(elapsed.begin(), elapsed.end());
    if (trial > 0)
      rates.push_back(calls * streams[0]->traffic() * threads / slowest);
  }
  return median(rates);
}

/// Parses a CPU list of sysfs ("0-3,8,10-11") into its CPU count.
int64_t countCpus(const std::string &list) {
  int64_t count = 0;
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find(',', at);
    std::string part = list.substr(
        at, end == std::string::npos ? std::string::npos : end - at);
    long lo = 0, hi = 0;
    if (std::sscanf(part.c_str(), "%ld-%ld", &lo, &hi) == 2)
      count += hi - lo + 1;
    else if (std::sscanf(part.c_str(), "%ld", &lo) == 1)
      count += 1;
    if (end == std::string::npos)
      break;
    at = end + 1;
  }
  return count;
}

/// The node's last-level cache in bytes (its size times its instances),
/// from sysfs; 0 if unknown.
double lastLevelCacheBytes(unsigned cpus) {
  int bestLevel = 0;
  double best = 0;
  for (int index = 0; index < 16; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" +
                      std::to_string(index) + "/";
    std::ifstream levelIn(dir + "level"), sizeIn(dir + "size"),
        typeIn(dir + "type"), sharedIn(dir + "shared_cpu_list");
    int level = 0;
    std::string size, type, shared;
    if (!(levelIn >> level) || !(sizeIn >> size) || !(typeIn >> type))
      continue;
    if (type == "Instruction" || level < bestLevel)
      continue;
    std::getline(sharedIn, shared);
    char *end = nullptr;
    double bytes = std::strtod(size.c_str(), &end);
    if (end && (*end == 'K' || *end == 'k'))
      bytes *= 1024;
    else if (end && *end == 'M')
      bytes *= 1024 * 1024;
    int64_t sharing = std::max<int64_t>(1, countCpus(shared));
    double instances = std::ceil(static_cast<double>(cpus) / sharing);
    bestLevel = level;
    best = bytes * std::max(1.0, instances);
  }
  return best;
}

DeviceFigures measureDevice(bool quick) {
  DeviceFigures d;
  std::vector<int64_t> sizes =
      quick ? std::vector<int64_t>{8, 16, 32, 64, 128, 256, 512}
            : std::vector<int64_t>{8,   12,  16,  24,  32,  48,  64,  96,
                                   128, 192, 256, 384, 512, 768, 1024};
  const double fp32Budget = quick ? 0.02 : 0.12;
  const double bf16Budget = quick ? 0.01 : 0.06;
  const int trials = quick ? 3 : 5;
  for (int64_t n : sizes) {
    GemmPoint p;
    p.n = n;
    p.flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) *
              static_cast<double>(n);
    {
      MatmulCall call(n, WEFT_F32);
      p.fp32Rate = p.flops / timePerCall(call, fp32Budget, trials);
    }
    {
      MatmulCall call(n, WEFT_BF16);
      p.bf16Rate = p.flops / timePerCall(call, bf16Budget, trials);
    }
    d.peakFp32 = std::max(d.peakFp32, p.fp32Rate);
    d.peakBf16 = std::max(d.peakBf16, p.bf16Rate);
    d.gemm.push_back(p);
  }

  unsigned cores = std::thread::hardware_concurrency();
  d.nodeThreads = cores > 0 ? static_cast<int>(cores) : 1;
  d.cacheBytes = lastLevelCacheBytes(static_cast<unsigned>(d.nodeThreads));
  // Memory: arrays of 64 MiB, or twice the cache, in all (each thread its
  // share), far more than the cache holds.
  d.streamArrayBytes = std::max<int64_t>(
      int64_t(64) << 20, static_cast<int64_t>(2 * d.cacheBytes) & ~int64_t(63));
  const int64_t streamFloats = d.streamArrayBytes / 4;
  {
    AddCall add(streamFloats);
    double t = timePerCall(add, quick ? 0.05 : 0.15, quick ? 3 : 5);
    d.oneCoreBandwidth = add.traffic() / t;
    d.oneCoreReadWritten = add.readWritten() / t;
    CopyCall copy(streamFloats);
    d.copyBandwidth = 4.0 * static_cast<double>(streamFloats) /
                      timePerCall(copy, quick ? 0.03 : 0.08, 3);
  }
  auto makeAdd = [](int64_t n) { return std::make_unique<AddCall>(n); };
  auto makeAdamw = [](int64_t n) { return std::make_unique<AdamwCall>(n); };
  const int streamTrials = quick ? 2 : 7, streamCalls = quick ? 2 : 4;
  d.memoryBandwidth = streamRate(d.nodeThreads, streamFloats / d.nodeThreads,
                                 makeAdd, streamTrials, streamCalls);
  d.adamwBandwidth = streamRate(d.nodeThreads, streamFloats / d.nodeThreads,
                                makeAdamw, streamTrials, streamCalls);
  // Cache: every core streams arrays that together fill a quarter of its
  // share of the cache (a share is what the cost model deems cached).
  if (d.cacheBytes > 0) {
    int64_t floats = std::max<int64_t>(
        1024, static_cast<int64_t>(d.cacheBytes / d.nodeThreads / 4 / 12));
    d.cacheArrayBytes = 4 * floats;
    d.cacheBandwidth =
        streamRate(d.nodeThreads, floats, makeAdd, quick ? 3 : 7, 40) /
        d.nodeThreads;
  }

  {
    AddCall tiny(1);
    for (int i = 0; i < 1000; ++i)
      tiny();
    const int batches = quick ? 50 : 200, calls = 100;
    std::vector<double> per;
    for (int b = 0; b < batches; ++b) {
      double t0 = now();
      for (int i = 0; i < calls; ++i)
        tiny();
      per.push_back((now() - t0) / calls);
    }
    d.kernelOverhead = median(per);
  }
  return d;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

/// A measured figure (six significant digits).
std::string num(double v) {
  if (!std::isfinite(v))
    v = 0;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// A count (bytes, FLOPs): every digit.
std::string whole(double v) {
  if (!std::isfinite(v))
    v = 0;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string hostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || !host[0])
    return "unknown host";
  return host;
}

/// MemTotal of /proc/meminfo in bytes (0 if unknown).
double memoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double value = 0;
  std::string unit;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemTotal:")
      return value * (unit.find("kB") != std::string::npos ? 1024.0 : 1.0);
  }
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * page : 0.0;
}

/// The 1-minute load average (-1 if unknown).
double loadAverage() {
  double load[1];
  return ::getloadavg(load, 1) == 1 ? load[0] : -1.0;
}

std::string isoDate() {
  std::time_t t = std::time(nullptr);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

struct Report {
  int64_t ranks = 1;
  bool quick = false;
  unsigned cores = 1;
  DeviceFigures device;
  std::vector<Series> series;
  OverlapFigures overlap;
  bool haveLinks = false;
  double headlineBandwidth = 0, headlineLatency = 0;
  double seconds = 0;
  double loadBefore = -1, loadAfter = -1; ///< 1-minute load averages
};

std::string clusterJson(const Report &r) {
  std::string j;
  j += "{\n  \"format\": \"weft-cluster/1\",\n  \"name\": ";
  appendJsonString(j, "calibrated on " + hostName());
  j +=
      ",\n  \"nodes\": 1,\n  \"devices_per_node\": " + std::to_string(r.ranks) +
      ",\n  \"cores_per_node\": " + std::to_string(r.cores) + ",\n";
  const DeviceFigures &d = r.device;
  j += "  \"device\": {\n    \"kind\": \"cpu\",\n";
  j += "    \"peak_flops\": {\"fp32\": " + num(d.peakFp32);
  if (d.peakBf16 > 0)
    j += ", \"bf16\": " + num(d.peakBf16);
  j += "},\n";
  j += "    \"memory_bytes\": " + whole(memoryBytes()) + ",\n";
  j += "    \"memory_bandwidth\": " + num(d.memoryBandwidth) + ",\n";
  if (d.cacheBandwidth > 0)
    j += "    \"cache_bytes\": " + whole(d.cacheBytes) +
         ",\n    \"cache_bandwidth\": " + num(d.cacheBandwidth) + ",\n";
  j +=
      "    \"kernel_bandwidth\": {\"adamw\": " + num(d.adamwBandwidth) + "},\n";
  j += "    \"gemm_efficiency\": [";
  for (size_t i = 0; i < d.gemm.size(); ++i) {
    double eff = std::min(1.0, d.gemm[i].fp32Rate / d.peakFp32);
    j += (i ? ", " : "") + std::string("[") + whole(d.gemm[i].flops) + ", " +
         num(std::max(eff, 1e-6)) + "]";
  }
  j += "],\n";
  j += "    \"kernel_overhead_s\": " + num(d.kernelOverhead) + "\n  },\n";

  const std::string headline = "\"bandwidth\": " + num(r.headlineBandwidth) +
                               ", \"latency\": " + num(r.headlineLatency);
  j += "  \"links\": {\n    \"intra_node\": {" + headline;
  if (!r.haveLinks)
    j += ", \"assumed\": true";
  j += ",\n      \"measured\": [";
  bool first = true;
  for (const Series &s : r.series) {
    j += first ? "\n" : ",\n";
    first = false;
    j += std::string("        {\"collective\": \"") + collName(s.coll) +
         "\", \"ranks\": " + std::to_string(s.ranks) +
         ", \"bandwidth\": " + num(s.bandwidth) +
         ", \"latency\": " + num(s.latency) +
         ", \"concurrent_groups\": " + std::to_string(s.groups) +
         ", \"rms_rel_error\": " + num(s.rmsRelError) + "}";
  }
  j += first ? "]},\n" : "]},\n";
  j += "    \"inter_node\": {" + headline + ", \"assumed\": true}\n  },\n";
  j += "  \"overlap\": " + num(r.overlap.overlap) + ",\n";

  j += "  \"calibration\": {\n    \"date\": \"" + isoDate() +
       "\",\n    \"ranks\": " + std::to_string(r.ranks) +
       ",\n    \"threads_per_rank\": 1,\n    \"quick\": " +
       (r.quick ? "true" : "false") + ",\n    \"seconds\": " + num(r.seconds) +
       ",\n    \"load_average\": [" + num(r.loadBefore) + ", " +
       num(r.loadAfter) + "],\n";
  j += "    \"gemm\": [";
  for (size_t i = 0; i < d.gemm.size(); ++i)
    j += (i ? ", " : "") + std::string("{\"n\": ") +
         std::to_string(d.gemm[i].n) +
         ", \"fp32_flops_per_s\": " + num(d.gemm[i].fp32Rate) +
         ", \"bf16_flops_per_s\": " + num(d.gemm[i].bf16Rate) + "}";
  j += "],\n";
  j += "    \"memory\": {\"accounting\": \"operands + results + results "
       "again (write-allocate)\", \"node_threads\": " +
       std::to_string(d.nodeThreads) +
       ", \"array_bytes\": " + whole(static_cast<double>(d.streamArrayBytes)) +
       ", \"node\": " + num(d.memoryBandwidth) +
       ", \"one_core\": " + num(d.oneCoreBandwidth) +
       ", \"one_core_read_written\": " + num(d.oneCoreReadWritten) +
       ", \"cache_array_bytes\": " +
       whole(static_cast<double>(d.cacheArrayBytes)) + "},\n";
  if (r.haveLinks) {
    const OverlapFigures &o = r.overlap;
    j += "    \"overlap\": {\"all_reduce_bytes\": " + whole(o.bytes) +
         ", \"gemm_n\": " + std::to_string(o.gemmN) +
         ", \"gemm_calls\": " + std::to_string(o.gemmCalls) +
         ", \"t_all_reduce_s\": " + num(o.tAllReduce) +
         ", \"t_gemm_s\": " + num(o.tGemm) + ", \"t_both_s\": " + num(o.tBoth) +
         ", \"t_both_no_progress_s\": " + num(o.tBothNoProgress) +
         ", \"overlap_no_progress\": " + num(o.overlapNoProgress) + "},\n";
  } else {
    j += "    \"links_assumed\": \"one rank: links are its weft_k_copy "
         "bandwidth and kernel overhead\",\n";
  }
  j += "    \"collective_times\": [";
  first = true;
  for (const Series &s : r.series) {
    j += first ? "\n" : ",\n";
    first = false;
    j += std::string("      {\"collective\": \"") + collName(s.coll) +
         "\", \"ranks\": " + std::to_string(s.ranks) + ", \"bytes\": [";
    for (size_t i = 0; i < s.bytes.size(); ++i)
      j += (i ? ", " : "") + whole(s.bytes[i]);
    j += "], \"seconds\": [";
    for (size_t i = 0; i < s.seconds.size(); ++i)
      j += (i ? ", " : "") + num(s.seconds[i]);
    j += "]}";
  }
  j += "]\n  }\n}\n";
  return j;
}

void printTable(const Report &r, const std::string &output) {
  const DeviceFigures &d = r.device;
  std::printf("weft calibrate: %lld rank%s on %s (%u hardware threads), one "
              "kernel thread per rank%s\n",
              static_cast<long long>(r.ranks), r.ranks == 1 ? "" : "s",
              hostName().c_str(), r.cores, r.quick ? ", --quick" : "");
  if (r.loadBefore >= 0.5 * r.cores)
    std::printf("note: the machine was busy before calibrating (load "
                "average %.2f on %u hardware threads): the figures may be "
                "low\n",
                r.loadBefore, r.cores);
  std::printf("\ncompute, one core (weft_k_matmul, n x n x n):\n");
  std::printf("  %6s %11s %12s %6s %12s\n", "n", "flops", "fp32 GFLOP/s", "eff",
              "bf16 GFLOP/s");
  for (const GemmPoint &p : d.gemm)
    std::printf("  %6lld %11.3g %12.2f %6.3f %12.2f\n",
                static_cast<long long>(p.n), p.flops, p.fp32Rate / 1e9,
                p.fp32Rate / d.peakFp32, p.bf16Rate / 1e9);
  std::printf("  peak: fp32 %.1f GFLOP/s, bf16 %.1f GFLOP/s\n",
              d.peakFp32 / 1e9, d.peakBf16 / 1e9);
  std::printf("\nmemory (weft_k_binary add of %.0f MiB f32 arrays; traffic "
              "counted as operands + results twice):\n"
              "  node, %d threads at once  %8.2f GB/s\n"
              "  one core alone            %8.2f GB/s (%.2f GB/s read + "
              "written)\n",
              static_cast<double>(d.streamArrayBytes) / (1 << 20),
              d.nodeThreads, d.memoryBandwidth / 1e9, d.oneCoreBandwidth / 1e9,
              d.oneCoreReadWritten / 1e9);
  if (d.cacheBandwidth > 0)
    std::printf("  cache, per core           %8.2f GB/s (%.2f MiB arrays; "
                "last-level cache %.0f MiB)\n",
                d.cacheBandwidth / 1e9,
                static_cast<double>(d.cacheArrayBytes) / (1 << 20),
                d.cacheBytes / (1 << 20));
  std::printf("  weft_k_adamw, node        %8.2f GB/s\n",
              d.adamwBandwidth / 1e9);
  std::printf("kernel overhead (weft_k_binary, one element): %.3g us\n",
              d.kernelOverhead * 1e6);
  if (r.haveLinks) {
    std::printf("\ncollectives (f32, %.0f B .. %.0f MiB; groups of "
                "consecutive ranks measure at once):\n",
                r.series.front().bytes.front(),
                r.series.front().bytes.back() / (1 << 20));
    std::printf("  %-15s %5s %6s %12s %14s %9s\n", "collective", "ranks",
                "groups", "latency us", "bandwidth GB/s", "fit err");
    for (const Series &s : r.series)
      std::printf("  %-15s %5lld %6lld %12.2f %14.3f %8.0f%%\n",
                  collName(s.coll), static_cast<long long>(s.ranks),
                  static_cast<long long>(s.groups), s.latency * 1e6,
                  s.bandwidth / 1e9, s.rmsRelError * 100);
    const OverlapFigures &o = r.overlap;
    std::printf("\noverlap: %.2f (all_reduce of %.0f MiB over %lld ranks, "
                "%.2f ms, behind %lld matmul %lld^3 calls, %.2f ms, with "
                "comm_progress after each: %.2f ms together; %.2f without "
                "comm_progress)\n",
                o.overlap, o.bytes / (1 << 20), static_cast<long long>(r.ranks),
                o.tAllReduce * 1e3, static_cast<long long>(o.gemmCalls),
                static_cast<long long>(o.gemmN), o.tGemm * 1e3, o.tBoth * 1e3,
                o.overlapNoProgress);
    std::printf("links (all_reduce over %lld ranks): latency %.2f us, "
                "bandwidth %.3f GB/s\n",
                static_cast<long long>(r.ranks), r.headlineLatency * 1e6,
                r.headlineBandwidth / 1e9);
  } else {
    std::printf("\none rank: no collectives measured; links assumed from "
                "weft_k_copy (%.2f GB/s) and the kernel overhead\n",
                r.headlineBandwidth / 1e9);
  }
  std::printf("\nwrote %s (%.1f s)\n", output.c_str(), r.seconds);
  std::fflush(stdout);
}

/// Whether `output` can be written (a file in an existing, writable
/// directory); `why` says why not.
bool checkOutput(const std::string &output, std::string &why) {
  if (output.empty() || output.back() == '/' || isDirectory(output)) {
    why = "output '" + output + "' is a directory; give the file to write";
    return false;
  }
  std::string dir = parentPath(output);
  if (!isDirectory(dir)) {
    why = "cannot write output '" + output + "': directory '" + dir +
          "' does not exist";
    return false;
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    why = "cannot write output '" + output + "': directory '" + dir +
          "' is not writable (" + std::strerror(errno) + ")";
    return false;
  }
  return true;
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
