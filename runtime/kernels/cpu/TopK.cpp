//===- TopK.cpp - CPU topk kernel
//------------------------------------------===//
//
// weft_k_topk: for every row along the axis, the k first elements of the
// order in TopKOrder.h (a partial sort of the row's indices), their values
// and i64 indices.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/DTypes.h"
#include "runtime/kernels/cpu/KernelArgs.h"
#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/kernels/cpu/TopKOrder.h"

#include <algorithm>
#include <vector>

using namespace weft;
using namespace weft::cpu;

namespace {

template <class T>
void topkRows(const TensorArg &x, const TensorArg &values,
              const TensorArg &indices, int axis, bool largest) {
  const int64_t extent = x.dims[axis];
  const int64_t k = values.dims[axis];
  const int64_t outer = x.extent(0, axis);
  const int64_t inner = x.extent(axis + 1, x.rank);
  const T *px = x.as<T>();
  T *pv = values.as<T>();
  int64_t *pi = indices.as<int64_t>();
  if (k == 0 || outer * inner == 0)
    return;
  parallelFor(outer * inner, grainFor(extent * 4), [&](int64_t b, int64_t e) {
    std::vector<int64_t> order(static_cast<size_t>(extent));
    std::vector<T> row(static_cast<size_t>(extent));
    for (int64_t r = b; r < e; ++r) {
      const int64_t o = r / inner, c = r % inner;
      const T *src = px + o * extent * inner + c;
      for (int64_t j = 0; j < extent; ++j) {
        row[j] = src[j * inner];
        order[j] = j;
      }
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int64_t i, int64_t j) {
                          return topkBefore(row[i], i, row[j], j, largest);
                        });
      T *dv = pv + o * k * inner + c;
      int64_t *di = pi + o * k * inner + c;
      for (int64_t j = 0; j < k; ++j) {
        dv[j * inner] = row[order[j]];
        di[j * inner] = order[j];
      }
    }
  });
}

} // namespace

extern "C" void weft_k_topk(void *const *bufs, const int64_t *desc) {
  KernelArgs args("topk", bufs, desc);
  args.expectTensors(3, 3);
  args.expectAttrs(2);
  const TensorArg &x = args.tensor(0);
  const TensorArg &values = args.tensor(1);
  const TensorArg &indices = args.tensor(2);
  args.expectDType(1, x.dtype);
  args.expectDType(2, WEFT_I64);
  const int64_t axis = args.attr(0);
  if (axis < 0 || axis >= x.rank)
    args.invalid("axis out of range");
  if (values.rank != x.rank || indices.rank != x.rank)
    args.invalid("results must have the input's rank");
  for (int d = 0; d < x.rank; ++d)
    if (values.dims[d] != indices.dims[d] ||
        (d != axis && values.dims[d] != x.dims[d]))
      args.invalid("result shapes do not match the input");
  if (values.dims[axis] > x.dims[axis])
    args.invalid("k exceeds the axis' extent");
  const bool largest = args.attr(1) != 0;
  dispatchArithmeticDType(x.dtype, args, [&](auto tag) {
    using T = typename decltype(tag)::type;
    topkRows<T>(x, values, indices, static_cast<int>(axis), largest);
  });
}
