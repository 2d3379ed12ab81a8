//===- Random.cu - GPU random-number kernel -------------------------------===//
//
// weft_cuda_k_random with the CPU kernel's contract and draws
// (RandomDraw.h): one thread per element finds its position in the whole
// tensor (the offsets and the step are read on the device) and draws its
// number. Uniform draws are the CPU's bit for bit; normal ones go through
// the device's double log, sqrt and cos, which may differ from the host's
// in the last bits of the double before rounding to the element type.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/DTypes.h"
#include "runtime/kernels/cpu/RandomDraw.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/DataKernelUtil.cuh"

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::data;

namespace {

template <class T>
__global__ void __launch_bounds__(kBlock)
    randomElements(T *y, int64_t total, RandomCall call) {
  const DropoutStream draws = call.drawsOf(*call.step);
  const int64_t step = gridStep<int64_t>();
  for (int64_t t = gridStart<int64_t>(); t < total; t += step)
    y[t] = T(call.draw(draws, call.positionOf(t)));
}

} // namespace

extern "C" void weft_cuda_k_random(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("random", bufs, desc);
  const RandomCall call = checkRandomCall(args);
  const int64_t n = call.y->numel;
  if (n == 0)
    return;
  switch (call.y->dtype) {
  case WEFT_F32:
    randomElements<float><<<blocksFor(n), kBlock, 0, computeStream()>>>(
        call.y->as<float>(), n, call);
    break;
  case WEFT_F64:
    randomElements<double><<<blocksFor(n), kBlock, 0, computeStream()>>>(
        call.y->as<double>(), n, call);
    break;
  default:
    args.unsupportedDType(call.y->dtype);
  }
  checkLaunch("random");
}
