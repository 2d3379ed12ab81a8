//===- ConvForward.h - The conv kernel's computation, for other kernels ---===//
//
// weft_k_conv reads its arguments and calls convForward; conv_grad_input
// calls it too, for the stride-1 convs whose input gradient is itself a
// conv (ConvGradAsConv.cpp).
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

/// Whether the input gradient of the conv `s` is itself a conv (unit
/// strides): ConvGradAsConv.cpp.
bool gradInputIsConv(const ConvShape &s);

/// dx of the conv `s` (gradInputIsConv) through convForward, with the
/// flipped kernels in kOuterOperandSlot of the calling thread.
void gradInputAsConv(const ConvShape &s, const float *dy, const float *w,
                     float *dx);

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_CONVFORWARD_H
