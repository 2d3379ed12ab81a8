//===- Dropout.cu - GPU dropout kernel -----------------------------------===//
//
// weft_cuda_k_dropout with the CPU kernel's contract and draws
// (DropoutDraw.h): one thread per element finds its position in the whole
// tensor (the offsets and the step are read on the device, where the call
// has them) and draws its word of the Philox block, so the mask is the
// CPU's bit for bit.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/DTypes.h"
#include "runtime/kernels/cpu/DropoutDraw.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/DataKernelUtil.cuh"

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::data;

namespace {

template <class T>
__global__ void __launch_bounds__(kBlock)
    dropoutElements(const T *x, T *y, uint8_t *mask, int64_t total,
                    DropoutCall call) {
  const DropoutStream draws = call.drawsOf(*call.step);
  const int64_t step = gridStep<int64_t>();
  for (int64_t t = gridStart<int64_t>(); t < total; t += step) {
    const uint64_t position = call.positionOf(t);
    const bool keep = draws.keeps(position, call.ratio);
    mask[t] = keep ? 1 : 0;
    y[t] = keep ? T(x[t] * T(call.scale)) : T(0);
  }
}

} // namespace

extern "C" void weft_cuda_k_dropout(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("dropout", bufs, desc);
  const DropoutCall call = checkDropoutCall(args);
  const int64_t n = call.x->numel;
  if (n == 0)
    return;
  switch (call.x->dtype) {
  case WEFT_F32:
    dropoutElements<float><<<blocksFor(n), kBlock, 0, computeStream()>>>(
        call.x->as<float>(), call.y->as<float>(), call.mask->as<uint8_t>(), n,
        call);
    break;
  case WEFT_F64:
    dropoutElements<double><<<blocksFor(n), kBlock, 0, computeStream()>>>(
        call.x->as<double>(), call.y->as<double>(), call.mask->as<uint8_t>(), n,
        call);
    break;
  default:
    args.unsupportedDType(call.x->dtype);
  }
  checkLaunch("dropout");
}
