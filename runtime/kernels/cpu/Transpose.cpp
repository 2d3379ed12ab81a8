//===- Transpose.cpp - transpose kernel -----------------------------------===//
//
// y = x permuted by perm, for every dtype (elements move as unsigned
// integers of their size). Unit dims are dropped and output dims that stay
// adjacent in x are merged. If the innermost output dim is also innermost
// in x, rows are copied whole; otherwise the two dims that are contiguous
// in x and in y are walked in square tiles, so both the reads and the
// writes of a tile stay in cache.
//
//===----------------------------------------------------------------------===//

#include "DTypes.h"
#include "Parallel.h"

#include <cstring>

using namespace weft;
using namespace weft::cpu;

namespace {

constexpr int64_t kTile = 32;

struct PermutedDims {
  int rank = 0;
  int64_t extent[kMaxRank];   // output order
  int64_t inStride[kMaxRank]; // x's stride of each output dim
  int64_t outStride[kMaxRank];
};

/// Row-major offset parts for item `flat` over the dims in `dims` (all but
/// the ones excluded), accumulated into inOff/outOff.
void unflatten(const PermutedDims &p, const int *dims, int count, int64_t flat,
               int64_t &inOff, int64_t &outOff) {
  inOff = outOff = 0;
  for (int i = count - 1; i >= 0; --i) {
    int d = dims[i];
    int64_t idx = flat % p.extent[d];
    flat /= p.extent[d];
    inOff += idx * p.inStride[d];
    outOff += idx * p.outStride[d];
  }
}

template <class U> void copyRows(const PermutedDims &p, const U *x, U *y) {
  const int n = p.rank;
  const int64_t row = p.extent[n - 1];
  int outer[kMaxRank];
  for (int i = 0; i < n - 1; ++i)
    outer[i] = i;
  int64_t rows = 1;
  for (int i = 0; i < n - 1; ++i)
    rows *= p.extent[i];
  parallelFor(rows, grainFor(row), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t inOff, outOff;
      unflatten(p, outer, n - 1, r, inOff, outOff);
      std::memcpy(y + outOff, x + inOff, static_cast<size_t>(row) * sizeof(U));
    }
  });
}

template <class U>
void copyTiles(const PermutedDims &p, int q, const U *x, U *y) {
  const int n = p.rank;
  const int last = n - 1;
  int outer[kMaxRank];
  int nOuter = 0;
  int64_t outerCount = 1;
  for (int i = 0; i < n; ++i)
    if (i != q && i != last) {
      outer[nOuter++] = i;
      outerCount *= p.extent[i];
    }
  const int64_t eq = p.extent[q], el = p.extent[last];
  const int64_t tilesQ = (eq + kTile - 1) / kTile;
  const int64_t tilesL = (el + kTile - 1) / kTile;
  const int64_t osq = p.outStride[q];   // y stride along q
  const int64_t isl = p.inStride[last]; // x stride along the last out dim
  parallelFor(
      outerCount * tilesQ * tilesL, grainFor(kTile * kTile),
      [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          int64_t tl = t % tilesL, tq = (t / tilesL) % tilesQ;
          int64_t inOff, outOff;
          unflatten(p, outer, nOuter, t / (tilesL * tilesQ), inOff, outOff);
          int64_t q0 = tq * kTile, q1 = q0 + kTile < eq ? q0 + kTile : eq;
          int64_t l0 = tl * kTile, l1 = l0 + kTile < el ? l0 + kTile : el;
          for (int64_t i = q0; i < q1; ++i) {
            const U *src = x + inOff + i;
            U *dst = y + outOff + i * osq;
            for (int64_t j = l0; j < l1; ++j)
              dst[j] = src[j * isl];
          }
        }
      });
}

} // namespace

extern "C" void weft_k_transpose(void *const *bufs, const int64_t *desc) {
  KernelArgs args("transpose", bufs, desc);
  args.expectTensors(2, 2);
  const TensorArg &x = args.tensor(0);
  const TensorArg &y = args.tensor(1);
  args.expectDType(1, x.dtype);
  args.expectSameNumel(0, 1);
  const int64_t *perm = args.attrArray(0, x.rank);
  if (y.rank != x.rank)
    args.invalid("result rank differs from the input's");
  int64_t xStride[kMaxRank];
  bool seen[kMaxRank] = {};
  int64_t s = 1;
  for (int d = x.rank - 1; d >= 0; --d) {
    xStride[d] = s;
    s *= x.dims[d];
  }
  PermutedDims p;
  for (int i = 0; i < x.rank; ++i) {
    int64_t d = perm[i];
    if (d < 0 || d >= x.rank || seen[d] || y.dims[i] != x.dims[d])
      args.invalid("perm is not a permutation matching the result dims");
    seen[d] = true;
    if (x.dims[d] == 1)
      continue;
    if (p.rank > 0 && p.inStride[p.rank - 1] == xStride[d] * x.dims[d]) {
      p.extent[p.rank - 1] *= x.dims[d];
      p.inStride[p.rank - 1] = xStride[d];
    } else {
      p.extent[p.rank] = x.dims[d];
      p.inStride[p.rank] = xStride[d];
      ++p.rank;
    }
  }
  if (x.numel == 0)
    return;
  if (p.rank <= 1) {
    parallelMemcpy(y.data, x.data, x.bytes());
    return;
  }
  s = 1;
  for (int i = p.rank - 1; i >= 0; --i) {
    p.outStride[i] = s;
    s *= p.extent[i];
  }
  dispatchByElementSize(x.elemSize(), args, [&](auto tag) {
    using U = typename decltype(tag)::type;
    if (p.inStride[p.rank - 1] == 1)
      return copyRows<U>(p, x.as<U>(), y.as<U>());
    int q = 0;
    while (p.inStride[q] != 1)
      ++q;
    copyTiles<U>(p, q, x.as<U>(), y.as<U>());
  });
}
