//===- ConvForward.h - The conv kernel's computation, for other kernels ---===//
//
// weft_k_conv reads its arguments and calls convForward; conv_grad_input
// calls it too, for the stride-1 convs whose input gradient is itself a
// conv (ConvGrad.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_CONVFORWARD_H
#define WEFT_RUNTIME_KERNELS_CPU_CONVFORWARD_H

#include "ConvGeometry.h"

namespace weft {
namespace cpu {

/// y = conv(x, w) + bias (bias may be null) for the checked shape `s`, on
/// the pool. Uses scratch slots 0-6 and kTableSlot of the calling thread
/// (Scratch.h), never kOuterOperandSlot.
void convForward(const ConvShape &s, const float *x, const float *w,
                 const float *bias, float *y);

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_CONVFORWARD_H
