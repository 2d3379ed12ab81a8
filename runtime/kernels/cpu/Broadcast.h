//===- Broadcast.h - Numpy broadcasting iteration -------------------------===//
//
// A BroadcastPlan maps an output tensor's elements to the elements of up to
// three inputs under numpy broadcasting. Dims of extent 1 are dropped and
// neighbouring dims that are contiguous in every input are merged, so a
// same-shape op becomes one row, a bias add [N,C]+[C] becomes N rows of C,
// and a per-channel op [N,C,H,W]*[C,1,1] becomes N*C rows of H*W whose
// channel operand is a scalar per row. Kernels then loop over rows, and only
// the innermost loop sees strides, which are always 0 or 1.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_BROADCAST_H
#define WEFT_RUNTIME_KERNELS_CPU_BROADCAST_H

#include "KernelArgs.h"

namespace weft {
namespace cpu {

template <int NIn> struct BroadcastPlan {
  int rank = 1; // >= 1; a scalar output is one row of one element
  int64_t dims[kMaxRank];
  int64_t strides[NIn][kMaxRank]; // in elements; 0 where broadcast
  int64_t numel = 1;

  /// Stride of input k along the innermost (row) dim: 0 or 1.
  int64_t rowStride(int k) const { return strides[k][rank - 1]; }
  int64_t rowLength() const { return dims[rank - 1]; }
};

/// Builds the plan of `ins` broadcast to `out`'s shape; fails (naming
/// `args`' kernel) when an input is not broadcastable to it.
template <int NIn>
BroadcastPlan<NIn> makeBroadcastPlan(const KernelArgs &args,
                                     const TensorArg &out,
                                     const TensorArg *const (&ins)[NIn]) {
  BroadcastPlan<NIn> plan;
  int r = out.rank;
  // Full-rank strides of each input against the output's dims.
  int64_t full[NIn][kMaxRank];
  for (int k = 0; k < NIn; ++k) {
    const TensorArg &in = *ins[k];
    if (in.rank > r)
      args.invalid("operand rank exceeds the result's");
    int64_t stride = 1;
    for (int d = r - 1; d >= 0; --d) {
      int id = d - (r - in.rank);
      int64_t extent = id >= 0 ? in.dims[id] : 1;
      if (extent == out.dims[d]) {
        full[k][d] = extent == 1 ? 0 : stride;
      } else if (extent == 1) {
        full[k][d] = 0;
      } else {
        args.invalid("operand shape is not broadcastable to the result");
      }
      stride *= extent;
    }
  }
  // Drop unit dims and merge dims contiguous in every input.
  int n = 0;
  for (int d = 0; d < r; ++d) {
    if (out.dims[d] == 1)
      continue;
    bool merge = n > 0;
    for (int k = 0; k < NIn && merge; ++k)
      merge = plan.strides[k][n - 1] == full[k][d] * out.dims[d];
    if (merge) {
      plan.dims[n - 1] *= out.dims[d];
      for (int k = 0; k < NIn; ++k)
        plan.strides[k][n - 1] = full[k][d];
    } else {
      plan.dims[n] = out.dims[d];
      for (int k = 0; k < NIn; ++k)
        plan.strides[k][n] = full[k][d];
      ++n;
    }
  }
  if (n == 0) {
    plan.dims[0] = 1;
    for (int k = 0; k < NIn; ++k)
      plan.strides[k][0] = 0;
    n = 1;
  }
  plan.rank = n;
  plan.numel = out.numel;
  return plan;
}

/// Calls fn(inOffsets, outOffset, count) for each run of consecutive output
/// elements in [begin, end) that lies within one row. Offsets are in
/// elements; input k's element i of the run is at inOffsets[k] + i *
/// plan.rowStride(k).
template <int NIn, class Fn>
void forEachRow(const BroadcastPlan<NIn> &plan, int64_t begin, int64_t end,
                Fn &&fn) {
  if (begin >= end)
    return;
  const int r = plan.rank;
  const int64_t rowLen = plan.dims[r - 1];
  // Multi-index of `begin` over the outer dims, and the input offsets.
  int64_t idx[kMaxRank];
  int64_t off[NIn];
  int64_t row = begin / rowLen;
  int64_t col = begin % rowLen;
  for (int k = 0; k < NIn; ++k)
    off[k] = col * plan.strides[k][r - 1];
  for (int d = r - 2; d >= 0; --d) {
    idx[d] = row % plan.dims[d];
    row /= plan.dims[d];
    for (int k = 0; k < NIn; ++k)
      off[k] += idx[d] * plan.strides[k][d];
  }
  int64_t pos = begin;
  while (pos < end) {
    int64_t count = rowLen - col;
    if (count > end - pos)
      count = end - pos;
    fn(static_cast<const int64_t *>(off), pos, count);
    pos += count;
    if (pos >= end)
      break;
    // Next row: rewind the row dim, carry into the outer dims.
    for (int k = 0; k < NIn; ++k)
      off[k] -= col * plan.strides[k][r - 1];
    col = 0;
    for (int d = r - 2; d >= 0; --d) {
      for (int k = 0; k < NIn; ++k)
        off[k] += plan.strides[k][d];
      if (++idx[d] < plan.dims[d])
        break;
      for (int k = 0; k < NIn; ++k)
        off[k] -= plan.dims[d] * plan.strides[k][d];
      idx[d] = 0;
    }
  }
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_BROADCAST_H
