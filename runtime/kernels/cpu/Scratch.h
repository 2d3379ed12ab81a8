//===- Scratch.h - Per-thread reusable work buffers -----------------------===//
//
// Kernels such as conv (im2col columns) need large temporary buffers on every
// call. Allocating them afresh would pay page faults each time, so each
// thread keeps a few buffers that only grow. Contents are undefined on entry.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_SCRATCH_H
#define WEFT_RUNTIME_KERNELS_CPU_SCRATCH_H

#include <cstdint>

namespace weft {
namespace cpu {

/// Independent scratch buffers a kernel may hold at once, per thread.
/// Kernels use slots 0-4 as they like and the gemm tiles slot 5. The others
/// hold what a kernel prepares on the calling thread before its parallel
/// work, which no task touches: kOperandSlot an operand (conv's cut
/// weights), kOuterOperandSlot what a kernel built on another one prepares
/// for it (conv_grad_input's flipped kernels for conv), kTableSlot an index
/// table (where each tap of each output reads).
constexpr int kScratchSlots = 9;
constexpr int kOperandSlot = 6;
constexpr int kOuterOperandSlot = 7;
constexpr int kTableSlot = 8;

/// At least `bytes` bytes, 64-byte aligned, owned by the calling thread and
/// valid until its next call with the same slot.
void *scratchBytes(int slot, int64_t bytes);

template <class T> T *scratch(int slot, int64_t count) {
  return static_cast<T *>(scratchBytes(slot, count * int64_t(sizeof(T))));
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_SCRATCH_H
