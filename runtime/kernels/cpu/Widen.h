//===- Widen.h - bf16 calls of f32 kernels --------------------------------===//
//
// Mixed precision's products (matmul, conv and their gradients) and the sums
// of their gradients take bf16 tensors. They run as f32 kernels on widened
// copies (bf16 -> f32 is exact), accumulate in f32 and round each result to
// bf16 once, to nearest even: the numerics of a bf16 GEMM with f32
// accumulation on a GPU's tensor cores or a CPU's bf16 dot products.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_WIDEN_H
#define WEFT_RUNTIME_KERNELS_CPU_WIDEN_H

#include <cstdint>

namespace weft {
namespace cpu {

using KernelEntry = void (*)(void *const *bufs, const int64_t *desc);

/// When any tensor of the call (bufs, desc) is bf16: widens the bf16
/// operands to f32, runs `f32Kernel` on a descriptor that says f32 for them,
/// rounds its f32 results into the bf16 result buffers, and returns true.
/// Returns false, doing nothing, when no tensor is bf16. The last
/// `numResults` tensors are results.
bool runBF16AsF32(void *const *bufs, const int64_t *desc, int numResults,
                  KernelEntry f32Kernel);

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_WIDEN_H
