//===- ElementwiseLoops.h - Parallel loops of the elementwise kernels -----===//
//
// Shared by the unary, binary, compare and where kernels: a plain map over
// contiguous elements, and a broadcasting map over rows of a BroadcastPlan
// whose inner loops are specialized for the stride-1 / stride-0 (scalar)
// operand cases so they vectorize.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_ELEMENTWISELOOPS_H
#define WEFT_RUNTIME_KERNELS_CPU_ELEMENTWISELOOPS_H

#include "Broadcast.h"
#include "Parallel.h"

namespace weft {
namespace cpu {

/// y[i] = op(x[i]) for i in [0, n).
template <class T, class R, class Op>
void mapElements(const T *x, R *y, int64_t n, int64_t grain, Op op) {
  parallelFor(n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      y[i] = op(x[i]);
  });
}

/// c = op(a, b) with a and b broadcast to c by `plan`.
template <class T, class R, class Op>
void mapBroadcast2(const BroadcastPlan<2> &plan, const T *a, const T *b, R *c,
                   int64_t grain, Op op) {
  const bool aRow = plan.rowStride(0) != 0;
  const bool bRow = plan.rowStride(1) != 0;
  parallelFor(plan.numel, grain, [&](int64_t begin, int64_t end) {
    forEachRow(plan, begin, end,
               [&](const int64_t *off, int64_t outOff, int64_t n) {
                 const T *pa = a + off[0];
                 const T *pb = b + off[1];
                 R *pc = c + outOff;
                 if (aRow && bRow) {
                   for (int64_t i = 0; i < n; ++i)
                     pc[i] = op(pa[i], pb[i]);
                 } else if (aRow) {
                   const T vb = *pb;
                   for (int64_t i = 0; i < n; ++i)
                     pc[i] = op(pa[i], vb);
                 } else if (bRow) {
                   const T va = *pa;
                   for (int64_t i = 0; i < n; ++i)
                     pc[i] = op(va, pb[i]);
                 } else {
                   const R v = op(*pa, *pb);
                   for (int64_t i = 0; i < n; ++i)
                     pc[i] = v;
                 }
               });
  });
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_ELEMENTWISELOOPS_H
