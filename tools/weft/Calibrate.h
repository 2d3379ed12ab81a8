//===- Calibrate.h - What weft-calibrate's parts share ------------*- C++
//-*-===//
//
// weft-calibrate (Calibrate.cpp: the device, the report and main;
// CalibrateComm.cpp: collectives and overlap) measures through the
// runtime's kernels and communicators; these are the pieces both use.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFT_CALIBRATE_H
#define WEFT_TOOLS_WEFT_CALIBRATE_H

#include "weft/runtime/Comm.h"
#include "weft/runtime/Float16.h"
#include "weft/runtime/KernelABI.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace weft::calibrate {

/// Seconds on a steady clock.
double now();
/// The median of `v` (0 when empty).
double median(std::vector<double> v);
/// A barrier over `world` whose waiting ranks sleep instead of polling.
void quietBarrier(comm::Communicator &world);

/// One weft_k_matmul call on n x n operands of `dtype` (f32 or bf16).
class MatmulCall {
public:
  MatmulCall(int64_t n, int64_t dtype) {
    const size_t elems = static_cast<size_t>(n * n);
    const size_t bytes = elems * static_cast<size_t>(weftDTypeSize(dtype));
    a_.resize(bytes);
    b_.resize(bytes);
    c_.resize(bytes);
    for (size_t i = 0; i < elems; ++i) {
      float va = 0.25f * static_cast<float>(i % 7) - 0.5f;
      float vb = 0.125f * static_cast<float>(i % 5) - 0.25f;
      if (dtype == WEFT_BF16) {
        uint16_t ha = floatToBFloat16(va), hb = floatToBFloat16(vb);
        std::memcpy(&a_[2 * i], &ha, 2);
        std::memcpy(&b_[2 * i], &hb, 2);
      } else {
        std::memcpy(&a_[4 * i], &va, 4);
        std::memcpy(&b_[4 * i], &vb, 4);
      }
    }
    desc_ = {3, dtype, 2, n, n, dtype, 2, n, n, dtype, 2, n, n, 2, 0, 0};
    bufs_[0] = a_.data();
    bufs_[1] = b_.data();
    bufs_[2] = c_.data();
  }
  void operator()() { weft_k_matmul(bufs_, desc_.data()); }

private:
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

} // namespace weft::calibrate

#endif // WEFT_TOOLS_WEFT_CALIBRATE_H
