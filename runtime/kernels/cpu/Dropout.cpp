//===- Dropout.cpp - CPU dropout kernel ----------------------------------===//
//
// weft_k_dropout: y = x * keep / (1 - ratio) and the mask, each element's
// keep drawn as DropoutDraw.h says from its position in the whole tensor.
// Rows of the last dim are consecutive positions; the four draws of a
// Philox block serve four elements.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/DTypes.h"
#include "runtime/kernels/cpu/DropoutDraw.h"
#include "runtime/kernels/cpu/KernelArgs.h"
#include "runtime/kernels/cpu/Parallel.h"

using namespace weft;
using namespace weft::cpu;

namespace {

template <class T> void dropoutRows(const DropoutCall &call) {
  const TensorArg &x = *call.x;
  const int rank = call.rank;
  const DropoutStream draws = call.drawsOf(*call.step);
  const int64_t width = rank == 0 ? 1 : x.dims[rank - 1];
  const int64_t rows = width == 0 ? 0 : x.numel / width;
  const T *px = x.as<T>();
  T *py = call.y->as<T>();
  uint8_t *pm = call.mask->as<uint8_t>();
  const T scale = T(call.scale);
  parallelFor(rows, grainFor(width * 8), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t base = r * width;
      // A row's positions are consecutive in the whole tensor.
      uint64_t position = call.positionOf(base);
      PhiloxBlock block{};
      uint64_t group = ~uint64_t(0);
      for (int64_t j = 0; j < width; ++j, ++position) {
        if ((position >> 2) != group) {
          group = position >> 2;
          block = draws.block(group);
        }
        const bool keep =
            DropoutStream::uniform(block.w[position & 3]) >= call.ratio;
        pm[base + j] = keep ? 1 : 0;
        py[base + j] = keep ? px[base + j] * scale : T(0);
      }
    }
  });
}

} // namespace

extern "C" void weft_k_dropout(void *const *bufs, const int64_t *desc) {
  KernelArgs args("dropout", bufs, desc);
  const DropoutCall call = checkDropoutCall(args);
  checkBlockInside(args, call);
  switch (call.x->dtype) {
  case WEFT_F32:
    return dropoutRows<float>(call);
  case WEFT_F64:
    return dropoutRows<double>(call);
  default:
    args.unsupportedDType(call.x->dtype);
  }
}
