//===- Calibrate.h - What weft-calibrate's parts share ------------*- C++
//-*-===//
//
// weft-calibrate (Calibrate.cpp: the device and main; CalibrateComm.cpp:
// collectives and overlap; CalibrateReport.cpp: the cluster file and the
// table) measures through the runtime's kernels and communicators; these
// are the pieces they share.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFT_CALIBRATE_H
#define WEFT_TOOLS_WEFT_CALIBRATE_H

#include "weft/runtime/Comm.h"
#include "weft/runtime/Float16.h"
#include "weft/runtime/KernelABI.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace weft::calibrate {

/// Seconds on a steady clock.
double now();
/// The median of `v` (0 when empty).
double median(std::vector<double> v);
/// A barrier over `world` whose waiting ranks sleep instead of polling.
void quietBarrier(comm::Communicator &world);

/// One weft_k_matmul call of `dtype` (f32 or bf16) operands: (m x k) times
/// (k x n), the first stored transposed (k x m) when `transA` (a weight
/// gradient's shape: the contraction runs over the batch).
class MatmulCall {
public:
  MatmulCall(int64_t n, int64_t dtype) : MatmulCall(n, n, n, dtype, false) {}
  MatmulCall(int64_t m, int64_t k, int64_t n, int64_t dtype, bool transA) {
    const size_t size = static_cast<size_t>(weftDTypeSize(dtype));
    fill(a_, static_cast<size_t>(m * k), size, 7, 0.25f, 0.5f);
    fill(b_, static_cast<size_t>(k * n), size, 5, 0.125f, 0.25f);
    c_.resize(static_cast<size_t>(m * n) * size);
    const int64_t a0 = transA ? k : m, a1 = transA ? m : k;
    desc_ = {3,     dtype, 2, a0, a1, dtype,          2, k, n,
             dtype, 2,     m, n,  2,  transA ? 1 : 0, 0};
    bufs_[0] = a_.data();
    bufs_[1] = b_.data();
    bufs_[2] = c_.data();
  }
  void operator()() { weft_k_matmul(bufs_, desc_.data()); }

private:
  /// `elems` values step * (i % period) - offset, in f32 or bf16.
  static void fill(std::vector<uint8_t> &out, size_t elems, size_t size,
                   int period, float step, float offset) {
    out.resize(elems * size);
    for (size_t i = 0; i < elems; ++i) {
      float v = step * static_cast<float>(i % period) - offset;
      if (size == 2) {
        uint16_t h = floatToBFloat16(v);
        std::memcpy(&out[2 * i], &h, 2);
      } else {
        std::memcpy(&out[4 * i], &v, 4);
      }
    }
  }
  std::vector<uint8_t> a_, b_, c_;
  std::vector<int64_t> desc_;
  void *bufs_[3];
};

enum class Coll { AllReduce, AllGather, ReduceScatter, SendRecv };

const char *collName(Coll c);

struct Series {
  Coll coll;
  int64_t ranks = 0;  ///< group size p
  int64_t groups = 0; ///< groups that measured at once
  std::vector<double> bytes, seconds;
  double latency = 0, bandwidth = 0, rmsRelError = 0;
};

struct CollectivePlan {
  std::vector<int64_t> sizes; ///< bytes (the full size)
  int trials;
  double trialSeconds; ///< aim of one trial
};

struct OverlapFigures {
  double bytes = 0, tAllReduce = 0, tGemm = 0, tBoth = 0, tBothNoProgress = 0;
  int64_t gemmCalls = 0, gemmN = 128;
  double overlap = 0, overlapNoProgress = 0;
};

/// Every collective for every group size; the series rank 0 keeps. Every
/// rank of `world` calls it.
std::vector<Series> measureCollectives(comm::Communicator &world,
                                       const CollectivePlan &plan);

/// How much of an asynchronous all-reduce over `world` hides behind
/// matrix products (every rank measures).
OverlapFigures measureOverlap(comm::Communicator &world, bool quick);

//===----------------------------------------------------------------------===//
// What rank 0 measures and reports
//===----------------------------------------------------------------------===//

struct GemmPoint {
  int64_t n;
  double flops; ///< of one product: 2 n^3
  double fp32Rate, bf16Rate;
};

/// The square product every size of the GEMM table is timed in turns with.
constexpr int64_t kGemmReferenceN = 128;

/// The other dimensions of the skinny products calibrated.
constexpr int64_t kSkinnyWide = 512;
/// The weights a cold product draws its B from, in all.
constexpr int64_t kWeightPoolBytes = int64_t(64) << 20;
/// Elements per tensor of the kernels rated for kernel_bandwidth: 256 KiB
/// of f32, a transformer block's activations on a CPU rank.
constexpr int64_t kKernelElems = 64 * 1024;

/// An f32 product with one small dimension d (the rest kSkinnyWide):
/// forward-shaped (d rows) or weight-gradient-shaped (contraction over d).
struct SkinnyPoint {
  int64_t d;
  bool contraction;
  double rate;
  /// rate over what the square table predicts for its FLOPs.
  double efficiency;
};

struct DeviceFigures {
  std::vector<GemmPoint> gemm;
  double peakFp32 = 0, peakBf16 = 0;
  std::vector<SkinnyPoint> skinny;
  /// The smallest dimension at which a product runs at its size's rate:
  /// fitted to `skinny` as the cost model uses it (Cluster.h).
  double gemmFullDim = 0;
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
  /// What a small product pays for a weight it must fetch: bytes of B
  /// over the extra time of a 64 x 512 x 512 product whose B comes from a
  /// pool of kWeightPoolBytes (a step reads each weight once) against one
  /// with the same B every call; 0 if no extra time was measured.
  double weightStreamBandwidth = 0;
  /// The largest cache level a core has to itself (sysfs; 0: unknown).
  double privateCacheBytes = 0;
  /// Fused attention's forward and backward FLOP/s on one core.
  double attentionRate = 0, attentionGradRate = 0;
  double copyBandwidth = 0; ///< one rank's weft_k_copy (the N = 1 links)
  /// Stream::traffic() per second of the node (every thread at once) for
  /// the runtime kernels rated on cache-sized tensors, by kernel name.
  std::map<std::string, double> kernelBandwidth;
};

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

/// The 1-minute load average (-1 if unknown).
double loadAverage();
/// Rank 0's device figures (CalibrateDevice.cpp): one kernel thread, the
/// other ranks asleep.
DeviceFigures measureDevice(bool quick);
/// The cluster file (format weft-cluster/1) of a calibration.
std::string clusterJson(const Report &r);
/// The calibration's table, on stdout; `output` is where the file went.
void printTable(const Report &r, const std::string &output);
/// Whether `output` can be written (its folder exists); `why` if not.
bool checkOutput(const std::string &output, std::string &why);

} // namespace weft::calibrate

#endif // WEFT_TOOLS_WEFT_CALIBRATE_H
