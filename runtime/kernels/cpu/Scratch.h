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
constexpr int kScratchSlots = 6;

/// At least `bytes` bytes, 64-byte aligned, owned by the calling thread and
/// valid until its next call with the same slot.
void *scratchBytes(int slot, int64_t bytes);

template <class T> T *scratch(int slot, int64_t count) {
  return static_cast<T *>(scratchBytes(slot, count * int64_t(sizeof(T))));
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_SCRATCH_H
