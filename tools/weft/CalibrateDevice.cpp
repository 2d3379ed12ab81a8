//===- CalibrateDevice.cpp - weft-calibrate: one core's figures ----------===//
//
// The device measurements of weft-calibrate (Calibrate.cpp describes them
// all): rank 0 alone times weft's kernels on one thread (GEMM table, skinny
// products, weights fetched from beyond the core's cache, fused attention)
// and streams on every hardware thread (memory, cache, AdamW), and reads
// the caches' sizes from sysfs.
//
//===----------------------------------------------------------------------===//

#include "tools/weft/Calibrate.h"
#include "tools/weft/CalibrateCalls.h"
#include "tools/weftc/planner/GemmModel.h"

#include "weft/runtime/Float16.h"
#include "weft/runtime/KernelABI.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <pthread.h>
#include <sched.h>
#include <string>
#include <thread>
#include <vector>

namespace weft::calibrate {
namespace {

//===----------------------------------------------------------------------===//
// Device measurements (rank 0)
//===----------------------------------------------------------------------===//

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

/// One trial of `streams` at once, one thread each, `calls` calls each:
/// their total Stream::traffic() over the slowest thread's time.
double streamTrial(std::vector<std::unique_ptr<Stream>> &streams, int calls) {
  const int threads = static_cast<int>(streams.size());
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
  return calls * streams[0]->traffic() * threads / slowest;
}

using MakeStream = std::function<std::unique_ptr<Stream>(int64_t)>;

/// The rates of several kernels, each run by `threads` threads at once on
/// streams of `elems` elements (made by its `makes` entry), `calls` calls a
/// trial. The kernels take turns: round r runs one trial of each, so a slow
/// spell of a shared machine hits them alike; each rate is the median of
/// its `trials` rounds (after one round that touches the pages).
std::vector<double> streamRatesInTurns(int threads, int64_t elems,
                                       const std::vector<MakeStream> &makes,
                                       int trials, int calls) {
  std::vector<std::vector<std::unique_ptr<Stream>>> streams(makes.size());
  for (size_t k = 0; k < makes.size(); ++k)
    for (int t = 0; t < threads; ++t)
      streams[k].push_back(makes[k](elems));
  std::vector<std::vector<double>> rates(makes.size());
  for (int round = 0; round < trials + 1; ++round)
    for (size_t k = 0; k < makes.size(); ++k) {
      double rate = streamTrial(streams[k], calls);
      if (round > 0)
        rates[k].push_back(rate);
    }
  std::vector<double> medians;
  for (const std::vector<double> &r : rates)
    medians.push_back(median(r));
  return medians;
}

/// One kernel's rate as streamRatesInTurns measures it.
double streamRate(int threads, int64_t elems, const MakeStream &make,
                  int trials, int calls) {
  return streamRatesInTurns(threads, elems, {make}, trials, calls).front();
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

/// One data (or unified) cache level of cpu0, from sysfs.
struct CacheLevel {
  int level = 0;
  double bytes = 0;
  int64_t sharing = 1; ///< CPUs that share it
};

/// cpu0's data and unified caches, from sysfs (empty if unknown).
std::vector<CacheLevel> cacheLevels() {
  std::vector<CacheLevel> levels;
  for (int index = 0; index < 16; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" +
                      std::to_string(index) + "/";
    std::ifstream levelIn(dir + "level"), sizeIn(dir + "size"),
        typeIn(dir + "type"), sharedIn(dir + "shared_cpu_list");
    CacheLevel c;
    std::string size, type, shared;
    if (!(levelIn >> c.level) || !(sizeIn >> size) || !(typeIn >> type) ||
        type == "Instruction")
      continue;
    std::getline(sharedIn, shared);
    char *end = nullptr;
    c.bytes = std::strtod(size.c_str(), &end);
    if (end && (*end == 'K' || *end == 'k'))
      c.bytes *= 1024;
    else if (end && *end == 'M')
      c.bytes *= 1024 * 1024;
    c.sharing = std::max<int64_t>(1, countCpus(shared));
    levels.push_back(c);
  }
  return levels;
}

/// The largest data cache cpu0 has to itself (shared with no other CPU);
/// 0 if unknown.
double privateCacheBytes() {
  double best = 0;
  for (const CacheLevel &c : cacheLevels())
    if (c.sharing == 1)
      best = std::max(best, c.bytes);
  return best;
}

/// The node's last-level cache in bytes (its size times its instances);
/// 0 if unknown.
double lastLevelCacheBytes(unsigned cpus) {
  int bestLevel = 0;
  double best = 0;
  for (const CacheLevel &c : cacheLevels()) {
    if (c.level < bestLevel)
      continue;
    double instances = std::ceil(static_cast<double>(cpus) / c.sharing);
    bestLevel = c.level;
    best = c.bytes * std::max(1.0, instances);
  }
  return best;
}

/// `call` (of `flops` per product) and `ref` (of `refFlops`) timed in turns,
/// `trials` times, with `callBudget` and `refBudget` seconds each per
/// trial: per trial, each one's rate. This machine's speed drifts over
/// seconds, so only ratios within a trial are trusted.
struct TurnRates {
  std::vector<double> call, ref;
  /// The median over trials of call / ref.
  double medianRatio() const {
    std::vector<double> r;
    for (size_t t = 0; t < call.size(); ++t)
      r.push_back(call[t] / ref[t]);
    return median(r);
  }
};
template <class Call>
TurnRates ratesInTurns(Call &call, double flops, MatmulCall &ref,
                       double refFlops, double callBudget, double refBudget,
                       int trials) {
  TurnRates r;
  for (int t = 0; t < trials; ++t) {
    r.call.push_back(flops / timePerCall(call, callBudget, 1));
    r.ref.push_back(refFlops / timePerCall(ref, refBudget, 1));
  }
  return r;
}

/// Products with one small dimension (microbatches make them: a forward's
/// few rows, a weight gradient's short contraction), each timed in turns
/// with the wide product of its shape (this machine's speed drifts between
/// seconds: only the ratio within a trial is trusted), against what the
/// square table predicts for both; fits DeviceFigures::gemmFullDim to them.
void measureSkinny(DeviceFigures &d, double budget, int trials) {
  std::vector<std::pair<double, double>> table;
  for (const GemmPoint &p : d.gemm)
    table.push_back({p.flops, std::min(1.0, p.fp32Rate / d.peakFp32)});
  const int64_t wide = kSkinnyWide;
  const double wideFlops = 2.0 * wide * wide * wide;
  auto make = [&](int64_t small, bool contraction) {
    // Forward: (small x wide) (wide x wide). Weight gradient:
    // (small x wide)^T (small x wide), contracting over small.
    return contraction ? MatmulCall(wide, small, wide, WEFT_F32, true)
                       : MatmulCall(small, wide, wide, WEFT_F32, false);
  };
  for (bool contraction : {false, true}) {
    MatmulCall reference = make(wide, contraction);
    for (int64_t small : {2, 4, 8, 16, 32, 64, 128, 256}) {
      MatmulCall call = make(small, contraction);
      const double flops = 2.0 * static_cast<double>(small) * wide * wide;
      const double each = budget / (2 * trials + 1);
      TurnRates r = ratesInTurns(call, flops, reference, wideFlops, each, each,
                                 2 * trials + 1);
      SkinnyPoint p;
      p.d = small;
      p.contraction = contraction;
      p.rate = median(r.call);
      // Measured rate ratio over the table's: the factor the cost model
      // must apply beyond its table.
      p.efficiency = r.medianRatio() * planner::efficiencyAt(table, wideFlops) /
                     planner::efficiencyAt(table, flops);
      d.skinny.push_back(p);
    }
  }
  // Least squares of log efficiency over a log grid of candidates: the
  // model's factor never exceeds 1, so measured efficiencies above it
  // count as 1.
  double bestError = std::numeric_limits<double>::infinity();
  for (int i = 0; i <= 240; ++i) {
    double full = std::pow(2.0, i / 24.0); // 1 .. 1024
    double error = 0;
    for (const SkinnyPoint &p : d.skinny) {
      double diff =
          std::log(planner::skinnyFactor(static_cast<double>(p.d), full)) -
          std::log(std::min(1.0, std::max(p.efficiency, 1e-6)));
      error += diff * diff;
    }
    if (error < bestError) {
      bestError = error;
      d.gemmFullDim = full;
    }
  }
}

} // namespace

DeviceFigures measureDevice(bool quick) {
  DeviceFigures d;
  std::vector<int64_t> sizes =
      quick ? std::vector<int64_t>{8, 16, 32, 64, 128, 256, 512}
            : std::vector<int64_t>{8,   12,  16,  24,  32,  48,  64,  96,
                                   128, 192, 256, 384, 512, 768, 1024};
  const double fp32Budget = quick ? 0.02 : 0.12;
  const double bf16Budget = quick ? 0.01 : 0.06;
  const int trials = quick ? 3 : 5;
  // Each size is timed in turns with a reference product, trial by trial:
  // this machine's speed drifts over seconds (a slow spell over one size
  // once made it look 3x slower than its neighbours), so a size's rate is
  // its median ratio to the reference times the reference's median rate
  // over the whole table.
  const int64_t refN = kGemmReferenceN;
  const double refFlops = 2.0 * static_cast<double>(refN * refN * refN);
  MatmulCall refFp32(refN, WEFT_F32), refBf16(refN, WEFT_BF16);
  std::vector<double> refFp32Rates, refBf16Rates;
  std::vector<std::pair<double, double>> ratios; // fp32, bf16 per size
  auto inTurns = [&](auto &call, MatmulCall &ref, double flops, double budget,
                     std::vector<double> &refRates) {
    TurnRates r = ratesInTurns(call, flops, ref, refFlops, budget / trials,
                               budget / (2 * trials), trials);
    refRates.insert(refRates.end(), r.ref.begin(), r.ref.end());
    return r.medianRatio();
  };
  for (int64_t n : sizes) {
    GemmPoint p;
    p.n = n;
    p.flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) *
              static_cast<double>(n);
    MatmulCall fp32(n, WEFT_F32), bf16(n, WEFT_BF16);
    double r32 = inTurns(fp32, refFp32, p.flops, fp32Budget, refFp32Rates);
    double r16 = inTurns(bf16, refBf16, p.flops, bf16Budget, refBf16Rates);
    ratios.emplace_back(r32, r16);
    d.gemm.push_back(p);
  }
  const double ref32 = median(refFp32Rates), ref16 = median(refBf16Rates);
  for (size_t i = 0; i < d.gemm.size(); ++i) {
    GemmPoint &p = d.gemm[i];
    p.fp32Rate = ratios[i].first * ref32;
    p.bf16Rate = ratios[i].second * ref16;
    d.peakFp32 = std::max(d.peakFp32, p.fp32Rate);
    d.peakBf16 = std::max(d.peakBf16, p.bf16Rate);
  }
  measureSkinny(d, fp32Budget, trials);
  {
    // A weight fetched from beyond the core's caches: the 64-row product
    // with its B from a pool against the same product with one B, in
    // turns; the extra time per call is what fetching 1 MiB costs.
    const int64_t m = 64, w = kSkinnyWide;
    WeightPoolMatmul cold(m, w, w);
    MatmulCall warm(m, w, w, WEFT_F32, false);
    std::vector<double> extra;
    for (int t = 0; t < 2 * trials + 1; ++t) {
      const double each = fp32Budget / (2 * trials + 1);
      extra.push_back(timePerCall(cold, each, 1) - timePerCall(warm, each, 1));
    }
    const double penalty = median(extra);
    d.weightStreamBandwidth =
        penalty > 0 ? 4.0 * static_cast<double>(w * w) / penalty : 0.0;
    d.privateCacheBytes = privateCacheBytes();
  }
  {
    // Fused attention, in turns with the reference as the table was.
    AttentionCalls attention;
    auto forward = [&] { attention.forward(); };
    auto backward = [&] { attention.backward(); };
    const double f = AttentionCalls::kForwardFlops;
    d.attentionRate =
        inTurns(forward, refFp32, f, fp32Budget, refFp32Rates) * ref32;
    d.attentionGradRate =
        inTurns(backward, refFp32, 2.5 * f, fp32Budget, refFp32Rates) * ref32;
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
  MakeStream makeAdd = [](int64_t n) -> std::unique_ptr<Stream> {
    return std::make_unique<AddCall>(n);
  };
  MakeStream makeAdamw = [](int64_t n) -> std::unique_ptr<Stream> {
    return std::make_unique<AdamwCall>(n);
  };
  const int streamTrials = quick ? 2 : 7, streamCalls = quick ? 2 : 4;
  // In turns, so that a slow spell of a shared machine hits both alike.
  std::vector<double> streamed =
      streamRatesInTurns(d.nodeThreads, streamFloats / d.nodeThreads,
                         {makeAdd, makeAdamw}, streamTrials, streamCalls);
  d.memoryBandwidth = streamed[0];
  d.adamwBandwidth = streamed[1];
  // The other kernels' own rates, every thread at once on tensors of
  // kKernelElems elements each (cache-sized, as a rank's activations
  // mostly are; the cost model caps them by the memory's bandwidth for
  // data beyond the cache).
  {
    // Each trial runs for milliseconds, not microseconds (a rank switched
    // out for a moment must not decide a kernel's rate), and the kernels
    // take turns over several rounds, each rate the median of its rounds:
    // a slow spell of a shared machine hits them all alike.
    const double trialSeconds = quick ? 0.006 : 0.02;
    const int rounds = quick ? 3 : 5;
    std::vector<RatedKernel> kernels = ratedKernels();
    std::vector<int> calls;
    for (const RatedKernel &kernel : kernels) {
      std::unique_ptr<Stream> probe = kernel.make(kKernelElems);
      const double one = timePerCall(*probe, 0.002, 3);
      calls.push_back(static_cast<int>(
          std::clamp(trialSeconds / std::max(one, 1e-9), 4.0, 100000.0)));
    }
    std::vector<std::vector<double>> perRound(kernels.size());
    for (int round = 0; round < rounds; ++round)
      for (size_t i = 0; i < kernels.size(); ++i)
        perRound[i].push_back(streamRate(d.nodeThreads, kKernelElems,
                                         kernels[i].make, 2, calls[i]));
    // Kernels listed twice (unary: tanh and erf) take the mean time.
    std::map<std::string, std::vector<double>> rates;
    for (size_t i = 0; i < kernels.size(); ++i)
      rates[kernels[i].name].push_back(median(perRound[i]));
    for (const auto &[name, list] : rates) {
      double seconds = 0;
      for (double rate : list)
        seconds += 1.0 / rate;
      d.kernelBandwidth[name] = static_cast<double>(list.size()) / seconds;
    }
  }
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

} // namespace weft::calibrate
