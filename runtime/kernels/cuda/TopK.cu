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
  args.expectTensors(3, 3);
  args.expectAttrs(2);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &values = args.tensor(1);
  const cpu::TensorArg &indices = args.tensor(2);
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
  const int64_t extent = x.dims[axis], k = values.dims[axis];
  if (k > extent)
    args.invalid("k exceeds the axis' extent");
  const bool largest = args.attr(1) != 0;
  const int64_t inner = x.extent(static_cast<int>(axis) + 1, x.rank);
  if (k == 0 || x.numel == 0)
    return;
  cpu::dispatchArithmeticDType(x.dtype, args, [&](auto tag) {
    using T = typename decltype(tag)::type;
    topkRanks<T><<<blocksFor(x.numel), kBlock, 0, computeStream()>>>(
        x.as<T>(), values.as<T>(), indices.as<int64_t>(), x.numel, extent,
        inner, k, largest);
  });
  checkLaunch("topk");
}
