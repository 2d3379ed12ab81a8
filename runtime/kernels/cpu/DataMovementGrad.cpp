//===- DataMovementGrad.cpp - scatter_add and slice_grad kernels ----------===//
//
// The gradients of gather and slice, f32. scatter_add accumulates the rows
// of `updates` into the rows of y that the indices name, always in index
// order: tasks split y into disjoint (outer, row range, column range) boxes
// and each task walks every index once, so a y element is summed by one
// thread in one order whatever the thread count. slice_grad zeroes dx and
// writes dy through the slice's strides (distinct dy elements land on
// distinct dx elements, so no accumulation is needed).
//
//===----------------------------------------------------------------------===//

#include "GatherIndices.h"
#include "GradRowOps.h"
#include "Parallel.h"
#include "SlicePlan.h"

#include <cstring>
#include <vector>

using namespace weft;
using namespace weft::cpu;

namespace {

/// Columns of one scatter_add task; a multiple of a cache line.
constexpr int64_t kScatterColumns = 1024;

void zeroFloats(float *p, int64_t n) {
  parallelFor(n, kParallelGrain, [&](int64_t b, int64_t e) {
    std::memset(p + b, 0, static_cast<size_t>(e - b) * sizeof(float));
  });
}

template <class I>
void scatterAdd(const TensorArg &indices, const TensorArg &updates,
                const TensorArg &y, int64_t axis) {
  const I *idx = indices.as<I>();
  const int64_t n = indices.numel;
  const int64_t extent = y.dims[axis];
  std::vector<int64_t> rows(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    const int64_t v = static_cast<int64_t>(idx[j]);
    checkGatherIndex("scatter_add", v, extent);
    rows[j] = normalizeGatherIndex(v, extent);
  }
  float *py = y.as<float>();
  zeroFloats(py, y.numel);
  if (n == 0 || y.numel == 0)
    return;
  const int64_t outer = y.extent(0, static_cast<int>(axis));
  const int64_t inner = y.extent(static_cast<int>(axis) + 1, y.rank);
  const float *pu = updates.as<float>();
  const int64_t colChunks = (inner + kScatterColumns - 1) / kScatterColumns;
  // Split y's rows too when outer and columns give the pool too little to
  // share; every task then skips the indices outside its rows.
  const int64_t boxes = outer * colChunks;
  const int64_t wanted = 4 * static_cast<int64_t>(numThreads());
  int64_t rowChunks = 1;
  if (boxes < wanted && n * inner >= 2 * kParallelGrain) {
    rowChunks = (wanted + boxes - 1) / boxes;
    rowChunks = rowChunks > extent ? extent : rowChunks;
  }
  const int64_t tasks = boxes * rowChunks;
  const int64_t perTask =
      n * (inner < kScatterColumns ? inner : kScatterColumns);
  parallelFor(
      tasks, grainFor(perTask / rowChunks + n), [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          const int64_t rc = t % rowChunks;
          const int64_t cc = (t / rowChunks) % colChunks;
          const int64_t o = t / (rowChunks * colChunks);
          const int64_t r0 = rc * extent / rowChunks;
          const int64_t r1 = (rc + 1) * extent / rowChunks;
          const int64_t c0 = cc * kScatterColumns;
          const int64_t c1 =
              c0 + kScatterColumns < inner ? c0 + kScatterColumns : inner;
          float *yo = py + o * extent * inner + c0;
          const float *uo = pu + o * n * inner + c0;
          for (int64_t j = 0; j < n; ++j) {
            const int64_t r = rows[j];
            if (r < r0 || r >= r1)
              continue;
            scatterAddRow(yo + r * inner, 1, uo + j * inner, c1 - c0);
          }
        }
      });
}

} // namespace

extern "C" void weft_k_scatter_add(void *const *bufs, const int64_t *desc) {
  KernelArgs args("scatter_add", bufs, desc);
  args.expectTensors(3, 3);
  args.expectAttrs(1);
  const TensorArg &indices = args.tensor(0);
  const TensorArg &updates = args.tensor(1);
  const TensorArg &y = args.tensor(2);
  args.expectDType(1, WEFT_F32);
  args.expectDType(2, WEFT_F32);
  const int64_t axis = args.attr(0);
  if (axis < 0 || axis >= y.rank)
    args.invalid("axis out of range");
  if (updates.numel != y.extent(0, static_cast<int>(axis)) * indices.numel *
                           y.extent(static_cast<int>(axis) + 1, y.rank))
    args.invalid("updates size does not match the result and indices");
  if (indices.dtype == WEFT_I64)
    scatterAdd<int64_t>(indices, updates, y, axis);
  else if (indices.dtype == WEFT_I32)
    scatterAdd<int32_t>(indices, updates, y, axis);
  else
    args.unsupportedDType(indices.dtype);
}

extern "C" void weft_k_slice_grad(void *const *bufs, const int64_t *desc) {
  KernelArgs args("slice_grad", bufs, desc);
  args.expectTensors(2, 2);
  args.expectDType(0, WEFT_F32);
  args.expectDType(1, WEFT_F32);
  const TensorArg &dy = args.tensor(0);
  const TensorArg &dx = args.tensor(1);
  if (dy.rank != dx.rank)
    args.invalid("gradient ranks differ");
  const SlicePlan plan = makeSlicePlan(args, dx, dy);
  float *px = dx.as<float>();
  zeroFloats(px, dx.numel);
  if (dy.numel == 0)
    return;
  const int64_t row = plan.row();
  const int64_t rows = dy.numel / row;
  const int64_t rowStride = plan.rowStride();
  const float *src = dy.as<float>();
  float *dst = px + plan.base;
  parallelFor(rows, grainFor(row), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float *s = src + i * row;
      float *out = dst + plan.rowOffset(i);
      if (rowStride == 1)
        std::memcpy(out, s, static_cast<size_t>(row) * sizeof(float));
      else
        for (int64_t j = 0; j < row; ++j)
          out[j * rowStride] = s[j];
    }
  });
}
