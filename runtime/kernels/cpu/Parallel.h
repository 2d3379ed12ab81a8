//===- Parallel.h - Thread pool of the CPU kernels ------------------------===//
//
// One persistent pool per process runs the data-parallel loops of the
// kernels. Its size is WEFT_NUM_THREADS when set, else the number of hardware
// threads. The calling thread takes part in every loop, so a pool of N
// threads keeps N-1 workers. Loops called from inside a loop run inline.
// OpenBLAS is set to one thread when the pool starts and stays there: the
// kernels split their gemms over this pool themselves, so OpenBLAS's own
// threads never compete with it for the cores.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_PARALLEL_H
#define WEFT_RUNTIME_KERNELS_CPU_PARALLEL_H

#include <cstdint>
#include <type_traits>
#include <utility>

namespace weft {
namespace cpu {

/// Elements of simple elementwise work below which a loop stays serial:
/// waking the pool costs about as much as touching this many floats.
constexpr int64_t kParallelGrain = 32768;

/// Non-owning reference to a callable taking a range [begin, end).
class RangeFn {
public:
  template <class F,
            class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
  RangeFn(F &&f) // NOLINT: implicit by design, like llvm::function_ref.
      : obj_(const_cast<void *>(static_cast<const void *>(&f))),
        call_([](void *obj, int64_t begin, int64_t end) {
          (*static_cast<std::remove_reference_t<F> *>(obj))(begin, end);
        }) {}
  void operator()(int64_t begin, int64_t end) const { call_(obj_, begin, end); }

private:
  void *obj_;
  void (*call_)(void *, int64_t, int64_t);
};

/// Threads the kernels use (>= 1). Starts the pool on first use.
int numThreads();

/// Runs fn over [0, n) split into ranges of at least `grain` items, on the
/// pool. Serial when n <= grain, with one thread, or when nested.
void parallelFor(int64_t n, int64_t grain, RangeFn fn);

/// memcpy, split over the pool when large.
void parallelMemcpy(void *dst, const void *src, int64_t bytes);

/// Grain for a loop over `n` items that each cost about `workPerItem`
/// elements, so that a range holds at least kParallelGrain elements.
inline int64_t grainFor(int64_t workPerItem) {
  if (workPerItem <= 0)
    workPerItem = 1;
  int64_t g = kParallelGrain / workPerItem;
  return g < 1 ? 1 : g;
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_PARALLEL_H
