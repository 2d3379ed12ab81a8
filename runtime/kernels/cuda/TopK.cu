//===- TopK.cu - GPU topk kernel
//-------------------------------------------===//
//
// weft_cuda_k_topk with the CPU kernel's contract and order (TopKOrder.h):
// one thread per element counts the elements of its row that come before
// it; an element with fewer than k before it writes itself at that rank.
// The order is strict and total, so every rank below k is written exactly
// once, and the result is the CPU's bit for bit. Work is extent^2 per row:
// meant for the short rows topk sees in models (routing over experts,
// sorting a batch's lengths), not for a vocabulary.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/DTypes.h"
#include "runtime/kernels/cpu/TopKOrder.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/DataKernelUtil.cuh"

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::data;

namespace {

template <class T>
__global__ void __launch_bounds__(kBlock)
    topkRanks(const T *x, T *values, int64_t *indices, int64_t total,
              int64_t extent, int64_t inner, int64_t k, bool largest) {
  const int64_t step = gridStep<int64_t>();
  for (int64_t t = gridStart<int64_t>(); t < total; t += step) {
    // t = (o * extent + i) * inner + c
    const int64_t c = t % inner;
    const int64_t oi = t / inner;
    const int64_t i = oi % extent, o = oi / extent;
    const T *row = x + o * extent * inner + c;
    const T v = row[i * inner];
    int64_t rank = 0;
    for (int64_t j = 0; j < extent && rank < k; ++j)
      rank += topkBefore(row[j * inner], j, v, i, largest) ? 1 : 0;
    if (rank < k) {
      const int64_t out = (o * k + rank) * inner + c;
      values[out] = v;
      indices[out] = i;
    }
  }
}

} // namespace

extern "C" void weft_cuda_k_topk(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("topk", bufs, desc);
  const TopKCall call = checkTopKCall(args);
  if (call.k == 0 || call.x->numel == 0)
    return;
  cpu::dispatchArithmeticDType(call.x->dtype, args, [&](auto tag) {
    using T = typename decltype(tag)::type;
    topkRanks<T><<<blocksFor(call.x->numel), kBlock, 0, computeStream()>>>(
        call.x->as<T>(), call.values->as<T>(), call.indices->as<int64_t>(),
        call.x->numel, call.extent, call.inner, call.k, call.largest);
  });
  checkLaunch("topk");
}
