//===- Random.cpp - CPU random-number kernel ------------------------------===//
//
// weft_k_random: every element of y drawn as RandomDraw.h says from its
// position in the whole tensor. Rows of the last dim are consecutive
// positions.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/DTypes.h"
#include "runtime/kernels/cpu/KernelArgs.h"
#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/kernels/cpu/RandomDraw.h"

using namespace weft;
using namespace weft::cpu;

namespace {

template <class T> void randomRows(const RandomCall &call) {
  const TensorArg &y = *call.y;
  const int rank = call.rank;
  const DropoutStream draws = call.drawsOf(*call.step);
  const int64_t width = rank == 0 ? 1 : y.dims[rank - 1];
  const int64_t rows = width == 0 ? 0 : y.numel / width;
  T *py = y.as<T>();
  parallelFor(rows, grainFor(width * (call.normal ? 40 : 8)),
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) {
                  const int64_t base = r * width;
                  const uint64_t position = call.positionOf(base);
                  for (int64_t j = 0; j < width; ++j)
                    py[base + j] = T(call.draw(draws, position + j));
                }
              });
}

} // namespace

extern "C" void weft_k_random(void *const *bufs, const int64_t *desc) {
  KernelArgs args("random", bufs, desc);
  const RandomCall call = checkRandomCall(args);
  checkBlockInside(args, call);
  switch (call.y->dtype) {
  case WEFT_F32:
    return randomRows<float>(call);
  case WEFT_F64:
    return randomRows<double>(call);
  default:
    args.unsupportedDType(call.y->dtype);
  }
}
