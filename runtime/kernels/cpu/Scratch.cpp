//===- Scratch.cpp - Per-thread reusable work buffers ---------------------===//

#include "Scratch.h"

#include "weft/runtime/Diagnostics.h"

#include <cstdlib>

namespace weft {
namespace cpu {
namespace {

struct ScratchSet {
  void *ptr[kScratchSlots] = {};
  int64_t capacity[kScratchSlots] = {};
  ~ScratchSet() {
    for (void *p : ptr)
      std::free(p);
  }
};

thread_local ScratchSet tScratch;

} // namespace

void *scratchBytes(int slot, int64_t bytes) {
  if (slot < 0 || slot >= kScratchSlots)
    fatal(kExitFailure, "kernel scratch slot %d out of range", slot);
  if (bytes < 64)
    bytes = 64;
  ScratchSet &set = tScratch;
  if (set.capacity[slot] < bytes) {
    std::free(set.ptr[slot]);
    // Grow by 1.5x at least so slowly growing requests do not reallocate.
    int64_t cap = set.capacity[slot] + set.capacity[slot] / 2;
    cap = cap > bytes ? cap : bytes;
    cap = (cap + 63) / 64 * 64;
    set.ptr[slot] = std::aligned_alloc(64, static_cast<size_t>(cap));
    if (!set.ptr[slot])
      fatal(kExitFailure,
            "out of memory allocating %lld bytes of kernel "
            "scratch space",
            static_cast<long long>(cap));
    set.capacity[slot] = cap;
  }
  return set.ptr[slot];
}

} // namespace cpu
} // namespace weft
