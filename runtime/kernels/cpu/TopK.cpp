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

template <class T> void topkRows(const TopKCall &call) {
  const int64_t extent = call.extent, k = call.k, inner = call.inner;
  const T *px = call.x->as<T>();
  T *pv = call.values->as<T>();
  int64_t *pi = call.indices->as<int64_t>();
  const bool largest = call.largest;
  if (k == 0 || call.outer * inner == 0)
    return;
  parallelFor(
      call.outer * inner, grainFor(extent * 4), [&](int64_t b, int64_t e) {
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
  const TopKCall call = checkTopKCall(args);
  dispatchArithmeticDType(call.x->dtype, args, [&](auto tag) {
    topkRows<typename decltype(tag)::type>(call);
  });
}
