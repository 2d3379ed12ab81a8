//===- Reduce.cpp - reduce kernel -----------------------------------------===//
//
// Sum, mean and max over a set of axes; f32 and f64 for all three, i64 and
// i32 for sum and max. Unit dims are dropped and neighbouring dims of the
// same kind (reduced or kept) merged, so most reductions take the shape
// [outer, R, inner]: rows (inner = 1) reduce with vectorized row helpers,
// the rest accumulate whole contiguous rows of `inner` into the result.
// [R1, K, R2] (a BatchNorm's statistics) combines the R1 rows first, then
// each output's R2 values. Other interleaved patterns (kept, reduced, kept,
// reduced, ...) fall back to a per-output-element loop, over whole rows when
// the innermost reduced dims are contiguous.
//
//===----------------------------------------------------------------------===//

#include "DTypes.h"
#include "Parallel.h"
#include "ReduceAxes.h"
#include "RowOps.h"
#include "VectorMath.h"
#include "Widen.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace weft;
using namespace weft::cpu;

namespace {

struct DimGroup {
  int64_t extent;
  int64_t stride; // in x, elements
  bool reduced;
};

template <class T> T identityOf(bool isMax) {
  if (!isMax)
    return T(0);
  if constexpr (std::numeric_limits<T>::has_infinity)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}

// Max lets NaN through, as numpy, PyTorch and the binary max kernel do.
template <class T> T maxOf(T a, T b) { return (b > a || b != b) ? b : a; }

template <class T> T combine(T a, T b, bool isMax) {
  return isMax ? maxOf(a, b) : T(a + b);
}

template <class T> T reduceRow(const T *x, int64_t n, bool isMax) {
  if constexpr (std::is_same_v<T, float>) {
    if (!isMax)
      return rowSum(x, n);
    // The vector max skips NaN; a NaN anywhere makes the sum NaN, so only
    // then is the row scanned.
    float m = rowMax(x, n);
    if (!std::isnan(m) && std::isnan(rowSum(x, n)))
      for (int64_t i = 0; i < n; ++i)
        if (std::isnan(x[i]))
          return x[i];
    return m;
  } else {
    T acc = identityOf<T>(isMax);
    if (isMax)
      for (int64_t i = 0; i < n; ++i)
        acc = maxOf(acc, x[i]);
    else
      for (int64_t i = 0; i < n; ++i)
        acc += x[i];
    return acc;
  }
}

/// acc[j] = combine(acc[j], row[j]) for j < n.
template <class T>
void combineRow(T *acc, const T *row, int64_t n, bool isMax) {
  if (isMax)
    for (int64_t j = 0; j < n; ++j)
      acc[j] = maxOf(acc[j], row[j]);
  else
    for (int64_t j = 0; j < n; ++j)
      acc[j] += row[j];
}

template <class T>
void reduceTyped(const KernelArgs &args, int64_t op,
                 const std::vector<DimGroup> &groups, const T *x, T *y,
                 int64_t outCount, int64_t reducedCount) {
  if constexpr (!std::is_floating_point_v<T>)
    if (op == WEFT_REDUCE_MEAN)
      fatal(kExitFailure, "kernel %s: mean is not defined for dtype %s",
            args.kernel(), dtypeName(args.tensor(0).dtype));
  const bool isMax = op == WEFT_REDUCE_MAX;
  const T ident = identityOf<T>(isMax);
  // Pattern [outer?, R, inner?]?
  int firstR = -1, lastR = -1;
  for (int i = 0; i < static_cast<int>(groups.size()); ++i)
    if (groups[i].reduced) {
      firstR = firstR < 0 ? i : firstR;
      lastR = i;
    }
  if (firstR < 0) { // nothing to reduce
    for (int64_t i = 0; i < outCount; ++i)
      y[i] = x[i];
  } else if (firstR == lastR && firstR <= 1 &&
             static_cast<int>(groups.size()) - lastR <= 2) {
    const int64_t r = groups[firstR].extent;
    const int64_t inner = firstR + 1 < static_cast<int>(groups.size())
                              ? groups[firstR + 1].extent
                              : 1;
    const int64_t outer = outCount / inner;
    if (inner == 1) {
      if (outer == 1 && r >= 2 * kParallelGrain) {
        // One long row: fixed-size blocks reduced in parallel, then
        // combined in order, so the result does not depend on threads.
        const int64_t block = kParallelGrain;
        const int64_t blocks = (r + block - 1) / block;
        std::vector<T> partial(blocks);
        parallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
          for (int64_t b = b0; b < b1; ++b) {
            int64_t lo = b * block, hi = lo + block < r ? lo + block : r;
            partial[b] = reduceRow(x + lo, hi - lo, isMax);
          }
        });
        T acc = ident;
        for (T v : partial)
          acc = combine(acc, v, isMax);
        y[0] = acc;
      } else {
        parallelFor(outer, grainFor(r), [&](int64_t b, int64_t e) {
          for (int64_t o = b; o < e; ++o)
            y[o] = reduceRow(x + o * r, r, isMax);
        });
      }
    } else {
      constexpr int64_t kColumns = 1024;
      const int64_t chunks = (inner + kColumns - 1) / kColumns;
      const int64_t width = inner < kColumns ? inner : kColumns;
      // Rows [i0, i1) of the chunk of `n` columns at j0 of outer row o,
      // combined in order into acc.
      auto sumRows = [&](int64_t o, int64_t j0, int64_t n, int64_t i0,
                         int64_t i1, T *acc) {
        for (int64_t j = 0; j < n; ++j)
          acc[j] = ident;
        for (int64_t i = i0; i < i1; ++i)
          combineRow(acc, x + (o * r + i) * inner + j0, n, isMax);
      };
      const int64_t tasks = outer * chunks;
      auto chunkOf = [&](int64_t task, int64_t &o, int64_t &j0, int64_t &n) {
        o = task / chunks;
        j0 = (task % chunks) * kColumns;
        n = std::min(kColumns, inner - j0);
      };
      // Few column chunks over many rows (a bias gradient, [tokens, n]):
      // blocks of rows, sized by the shape alone, are reduced apart and
      // then combined in order, so the threads share the work and the
      // result does not depend on how many there are.
      const int64_t rowBlock = std::max<int64_t>(64, (r + 63) / 64);
      const int64_t blocks = (r + rowBlock - 1) / rowBlock;
      if (tasks >= 16 || blocks < 2) {
        parallelFor(tasks, grainFor(r * width), [&](int64_t b, int64_t e) {
          for (int64_t t = b; t < e; ++t) {
            int64_t o, j0, n;
            chunkOf(t, o, j0, n);
            sumRows(o, j0, n, 0, r, y + o * inner + j0);
          }
        });
      } else {
        std::vector<T> partial(static_cast<size_t>(tasks * blocks * width));
        parallelFor(tasks * blocks, grainFor(rowBlock * width),
                    [&](int64_t b, int64_t e) {
                      for (int64_t t = b; t < e; ++t) {
                        int64_t o, j0, n;
                        chunkOf(t / blocks, o, j0, n);
                        const int64_t i0 = (t % blocks) * rowBlock;
                        sumRows(o, j0, n, i0, std::min(r, i0 + rowBlock),
                                partial.data() + t * width);
                      }
                    });
        for (int64_t task = 0; task < tasks; ++task) {
          int64_t o, j0, n;
          chunkOf(task, o, j0, n);
          T *dst = y + o * inner + j0;
          const T *first = partial.data() + task * blocks * width;
          for (int64_t j = 0; j < n; ++j)
            dst[j] = first[j];
          for (int64_t k = 1; k < blocks; ++k)
            for (int64_t j = 0; j < n; ++j)
              dst[j] = combine(dst[j], first[k * width + j], isMax);
        }
      }
    }
  } else if (groups.size() == 3 && groups[0].reduced && !groups[1].reduced) {
    // [R1, K, R2] (a BatchNorm's statistics: [N, C, H, W] over N, H and
    // W): first the R1 rows of K x R2 are combined column by column (one
    // streaming pass, vectorized), then each k's R2 values. The columns
    // split over the pool in fixed chunks, each combined in row order, so
    // the result does not depend on the threads.
    const int64_t r1 = groups[0].extent, k = groups[1].extent;
    const int64_t r2 = groups[2].extent, width = k * r2;
    std::vector<T> columns(static_cast<size_t>(width));
    constexpr int64_t kChunk = 1024;
    parallelFor((width + kChunk - 1) / kChunk, grainFor(r1 * kChunk),
                [&](int64_t b, int64_t e) {
                  for (int64_t c = b; c < e; ++c) {
                    const int64_t j0 = c * kChunk;
                    const int64_t n = std::min(kChunk, width - j0);
                    T *acc = columns.data() + j0;
                    for (int64_t j = 0; j < n; ++j)
                      acc[j] = ident;
                    for (int64_t i = 0; i < r1; ++i)
                      combineRow(acc, x + i * width + j0, n, isMax);
                  }
                });
    parallelFor(k, grainFor(r2), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o)
        y[o] = reduceRow(columns.data() + o * r2, r2, isMax);
    });
  } else {
    // General: walk the reduced dims for each output element. When the
    // innermost reduced group is contiguous (a BatchNorm's statistics:
    // [N, C, H, W] over N, H and W), its rows go to the vectorized row
    // reduction and only the outer reduced dims are walked.
    std::vector<DimGroup> kept, red;
    for (const DimGroup &g : groups)
      (g.reduced ? red : kept).push_back(g);
    const bool rows = red.back().stride == 1 && red.back().extent > 1;
    const int64_t rowLength = rows ? red.back().extent : 1;
    if (rows)
      red.back().extent = 1;
    parallelFor(outCount, grainFor(reducedCount), [&](int64_t b, int64_t e) {
      int64_t idx[kMaxRank];
      for (int64_t o = b; o < e; ++o) {
        int64_t base = 0, rest = o;
        for (int i = static_cast<int>(kept.size()) - 1; i >= 0; --i) {
          base += (rest % kept[i].extent) * kept[i].stride;
          rest /= kept[i].extent;
        }
        const int nr = static_cast<int>(red.size());
        for (int i = 0; i < nr; ++i)
          idx[i] = 0;
        T acc = ident;
        int64_t off = base;
        for (;;) {
          acc = combine(
              acc, rows ? reduceRow(x + off, rowLength, isMax) : x[off], isMax);
          int i = nr - 1;
          for (; i >= 0; --i) {
            off += red[i].stride;
            if (++idx[i] < red[i].extent)
              break;
            off -= red[i].extent * red[i].stride;
            idx[i] = 0;
          }
          if (i < 0)
            break;
        }
        y[o] = acc;
      }
    });
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (op == WEFT_REDUCE_MEAN) {
      const T count = static_cast<T>(reducedCount);
      for (int64_t i = 0; i < outCount; ++i)
        y[i] = y[i] / count;
    }
  }
}

} // namespace

extern "C" void weft_k_reduce(void *const *bufs, const int64_t *desc) {
  if (runBF16AsF32(bufs, desc, 1, weft_k_reduce))
    return;
  KernelArgs args("reduce", bufs, desc);
  args.expectTensors(2, 2);
  args.expectAttrs(2);
  const TensorArg &x = args.tensor(0);
  const TensorArg &y = args.tensor(1);
  args.expectDType(1, x.dtype);
  const ReduceAxes spec = checkReduceAxes(args, x, y);
  const int64_t op = spec.op;
  const bool *reducedAxis = spec.reduced;
  const int64_t reducedCount = spec.reducedCount, outCount = spec.outCount;

  // Merge dims; strides are x's row-major strides of each merged group.
  std::vector<DimGroup> groups;
  int64_t stride = 1;
  for (int d = x.rank - 1; d >= 0; --d) {
    int64_t extent = x.dims[d];
    if (extent != 1) {
      if (!groups.empty() && groups.back().reduced == reducedAxis[d])
        groups.back().extent *= extent;
      else
        groups.push_back({extent, stride, reducedAxis[d]});
    }
    stride *= extent;
  }
  std::vector<DimGroup> ordered(groups.rbegin(), groups.rend());

  dispatchArithmeticDType(x.dtype, args, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (reducedCount == 0) { // empty reduction: identity (mean: NaN)
      T v = identityOf<T>(op == WEFT_REDUCE_MAX);
      if constexpr (std::is_floating_point_v<T>)
        if (op == WEFT_REDUCE_MEAN)
          v = std::numeric_limits<T>::quiet_NaN();
      for (int64_t i = 0; i < outCount; ++i)
        y.as<T>()[i] = v;
      return;
    }
    reduceTyped<T>(args, op, ordered, x.as<T>(), y.as<T>(), outCount,
                   reducedCount);
  });
}
