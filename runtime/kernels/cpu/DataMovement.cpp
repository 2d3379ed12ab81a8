//===- DataMovement.cpp - Kernels that only move elements -----------------===//
//
// concat, split, slice, gather, expand, trilu and copy. They work on every
// dtype, moving bytes (memcpy of runs) or unsigned integers of the
// element's size.
//
//===----------------------------------------------------------------------===//

#include "Broadcast.h"
#include "DTypes.h"
#include "GatherIndices.h"
#include "Parallel.h"
#include "SlicePlan.h"

#include <cstring>

using namespace weft;
using namespace weft::cpu;

namespace {

/// Checks `axis` and that every tensor in [first, last) matches `ref` except
/// along `axis`; returns the sum of their extents along it.
int64_t checkPieces(const KernelArgs &args, const TensorArg &ref, int64_t axis,
                    int first, int last) {
  if (axis < 0 || axis >= ref.rank)
    args.invalid("axis out of range");
  int64_t total = 0;
  for (int i = first; i < last; ++i) {
    const TensorArg &t = args.tensor(i);
    if (t.dtype != ref.dtype || t.rank != ref.rank)
      args.invalid("pieces differ in dtype or rank");
    for (int d = 0; d < ref.rank; ++d)
      if (d != axis && t.dims[d] != ref.dims[d])
        args.invalid("pieces differ outside the axis");
    total += t.dims[axis];
  }
  return total;
}

/// Moves rows between `whole` (outer rows of `wholeRow` bytes) and pieces
/// (outer rows of pieceRow[i] bytes at byte offset pieceOff[i] in a whole
/// row). toWhole: concat, else split.
void movePieces(char *whole, int64_t outer, int64_t wholeRow,
                char *const *pieces, const int64_t *pieceRow,
                const int64_t *pieceOff, int numPieces, bool toWhole) {
  if (outer == 1) {
    for (int i = 0; i < numPieces; ++i) {
      if (toWhole)
        parallelMemcpy(whole + pieceOff[i], pieces[i], pieceRow[i]);
      else
        parallelMemcpy(pieces[i], whole + pieceOff[i], pieceRow[i]);
    }
    return;
  }
  parallelFor(outer, grainFor(wholeRow / 4), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o)
      for (int i = 0; i < numPieces; ++i) {
        char *w = whole + o * wholeRow + pieceOff[i];
        char *p = pieces[i] + o * pieceRow[i];
        if (toWhole)
          std::memcpy(w, p, static_cast<size_t>(pieceRow[i]));
        else
          std::memcpy(p, w, static_cast<size_t>(pieceRow[i]));
      }
  });
}

void concatOrSplit(const KernelArgs &args, bool concat) {
  args.expectTensors(2, 1 << 20);
  args.expectAttrs(1);
  const int n = args.numTensors();
  const TensorArg &whole = concat ? args.tensor(n - 1) : args.tensor(0);
  const int first = concat ? 0 : 1, last = concat ? n - 1 : n;
  const int64_t axis = args.attr(0);
  if (checkPieces(args, whole, axis, first, last) != whole.dims[axis])
    args.invalid("piece extents do not add up along the axis");
  const int64_t es = whole.elemSize();
  const int64_t outer = whole.extent(0, static_cast<int>(axis));
  const int64_t inner = whole.extent(static_cast<int>(axis) + 1, whole.rank);
  const int count = last - first;
  std::unique_ptr<char *[]> ptrs(new char *[count]);
  std::unique_ptr<int64_t[]> rows(new int64_t[count]), offs(new int64_t[count]);
  int64_t off = 0;
  for (int i = 0; i < count; ++i) {
    const TensorArg &t = args.tensor(first + i);
    ptrs[i] = t.as<char>();
    rows[i] = t.dims[axis] * inner * es;
    offs[i] = off;
    off += rows[i];
  }
  if (whole.numel == 0)
    return;
  movePieces(whole.as<char>(), outer, off, ptrs.get(), rows.get(), offs.get(),
             count, concat);
}

template <class I>
void gatherRows(const TensorArg &data, const TensorArg &indices,
                const TensorArg &y, int64_t axis) {
  const I *idx = indices.as<I>();
  const int64_t n = indices.numel;
  const int64_t extent = data.dims[axis];
  for (int64_t j = 0; j < n; ++j)
    checkGatherIndex("gather", static_cast<int64_t>(idx[j]), extent);
  const int64_t outer = data.extent(0, static_cast<int>(axis));
  const int64_t rowBytes =
      data.extent(static_cast<int>(axis) + 1, data.rank) * data.elemSize();
  const char *src = data.as<char>();
  char *dst = y.as<char>();
  parallelFor(outer * n, grainFor(rowBytes / 4), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / n, j = t % n;
      const int64_t v =
          normalizeGatherIndex(static_cast<int64_t>(idx[j]), extent);
      std::memcpy(dst + t * rowBytes, src + (o * extent + v) * rowBytes,
                  static_cast<size_t>(rowBytes));
    }
  });
}

template <class U>
void expandRows(const BroadcastPlan<1> &plan, const U *x, U *y) {
  const bool contiguous = plan.rowStride(0) != 0;
  parallelFor(plan.numel, kParallelGrain, [&](int64_t b, int64_t e) {
    forEachRow(plan, b, e, [&](const int64_t *off, int64_t outOff, int64_t n) {
      if (contiguous) {
        std::memcpy(y + outOff, x + off[0], static_cast<size_t>(n) * sizeof(U));
      } else {
        const U v = x[off[0]];
        U *dst = y + outOff;
        for (int64_t i = 0; i < n; ++i)
          dst[i] = v;
      }
    });
  });
}

} // namespace

extern "C" void weft_k_concat(void *const *bufs, const int64_t *desc) {
  KernelArgs args("concat", bufs, desc);
  concatOrSplit(args, true);
}

extern "C" void weft_k_split(void *const *bufs, const int64_t *desc) {
  KernelArgs args("split", bufs, desc);
  concatOrSplit(args, false);
}

extern "C" void weft_k_slice(void *const *bufs, const int64_t *desc) {
  KernelArgs args("slice", bufs, desc);
  args.expectTensors(2, 2);
  const TensorArg &x = args.tensor(0);
  const TensorArg &y = args.tensor(1);
  args.expectDType(1, x.dtype);
  if (y.rank != x.rank)
    args.invalid("result rank differs from the input's");
  const SlicePlan plan = makeSlicePlan(args, x, y);
  if (y.numel == 0)
    return;
  const int64_t row = plan.row();
  const int64_t rows = y.numel / row;
  const int64_t rowStride = plan.rowStride();
  dispatchByElementSize(x.elemSize(), args, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U *src = x.as<U>() + plan.base;
    U *dst = y.as<U>();
    parallelFor(rows, grainFor(row), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const U *s = src + plan.rowOffset(i);
        U *out = dst + i * row;
        if (rowStride == 1)
          std::memcpy(out, s, static_cast<size_t>(row) * sizeof(U));
        else
          for (int64_t j = 0; j < row; ++j)
            out[j] = s[j * rowStride];
      }
    });
  });
}

extern "C" void weft_k_gather(void *const *bufs, const int64_t *desc) {
  KernelArgs args("gather", bufs, desc);
  const int64_t axis = checkGather(args);
  const TensorArg &data = args.tensor(0);
  const TensorArg &indices = args.tensor(1);
  const TensorArg &y = args.tensor(2);
  if (y.numel == 0)
    return;
  if (indices.dtype == WEFT_I64)
    gatherRows<int64_t>(data, indices, y, axis);
  else if (indices.dtype == WEFT_I32)
    gatherRows<int32_t>(data, indices, y, axis);
  else
    args.unsupportedDType(indices.dtype);
}

extern "C" void weft_k_expand(void *const *bufs, const int64_t *desc) {
  KernelArgs args("expand", bufs, desc);
  args.expectTensors(2, 2);
  const TensorArg &x = args.tensor(0);
  const TensorArg &y = args.tensor(1);
  args.expectDType(1, x.dtype);
  const TensorArg *ins[1] = {&x};
  BroadcastPlan<1> plan = makeBroadcastPlan(args, y, ins);
  dispatchByElementSize(x.elemSize(), args, [&](auto tag) {
    using U = typename decltype(tag)::type;
    expandRows<U>(plan, x.as<U>(), y.as<U>());
  });
}

extern "C" void weft_k_trilu(void *const *bufs, const int64_t *desc) {
  KernelArgs args("trilu", bufs, desc);
  args.expectTensors(2, 2);
  args.expectAttrs(2);
  const TensorArg &x = args.tensor(0);
  const TensorArg &y = args.tensor(1);
  args.expectDType(1, x.dtype);
  args.expectSameNumel(0, 1);
  if (x.rank < 2)
    args.invalid("input must have rank >= 2");
  const bool upper = args.attr(0) != 0;
  const int64_t k = args.attr(1);
  if (x.numel == 0)
    return;
  const int64_t m = x.dim(-2), n = x.dim(-1), es = x.elemSize();
  const int64_t rows = x.numel / n;
  const char *src = x.as<char>();
  char *dst = y.as<char>();
  parallelFor(rows, grainFor(n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t i = r % m;
      // Kept columns: upper j >= i + k, lower j <= i + k.
      int64_t lo = upper ? i + k : 0;
      int64_t hi = upper ? n : i + k + 1;
      lo = lo < 0 ? 0 : lo > n ? n : lo;
      hi = hi < lo ? lo : hi > n ? n : hi;
      const char *s = src + r * n * es;
      char *d = dst + r * n * es;
      std::memset(d, 0, static_cast<size_t>(lo * es));
      std::memmove(d + lo * es, s + lo * es,
                   static_cast<size_t>((hi - lo) * es));
      std::memset(d + hi * es, 0, static_cast<size_t>((n - hi) * es));
    }
  });
}

extern "C" void weft_k_copy(void *const *bufs, const int64_t *desc) {
  KernelArgs args("copy", bufs, desc);
  args.expectTensors(2, 2);
  const TensorArg &x = args.tensor(0);
  const TensorArg &y = args.tensor(1);
  if (x.bytes() != y.bytes())
    args.invalid("input and result differ in byte size");
  parallelMemcpy(y.data, x.data, x.bytes());
}
