//===- KernelCheck.h - Runs a kernel on the CPU and the GPU, compares -----===//
//
// The GPU kernel tests (test/cuda) call each weft_cuda_k_* kernel and its
// CPU twin weft_k_* with the same desc on the same random inputs and
// compare the results element by element. Without a GPU the test binaries
// exit 77, which ctest reports as skipped.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_CUDA_KERNELCHECK_H
#define WEFT_TEST_CUDA_KERNELCHECK_H

#include "GpuSkip.h"
#include "KernelDesc.h"
#include "weft/runtime/KernelABI.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace weft {
namespace test {

/// One tensor of a kernel call: dtype, dims and its bytes on the host.
struct HostTensor {
  int64_t dtype = WEFT_F32;
  std::vector<int64_t> dims;
  std::vector<unsigned char> bytes;

  int64_t numel() const;
  /// Element i converted to double (any dtype).
  double at(int64_t i) const;
};

/// A tensor of `dims` filled with uniform values in [lo, hi) (integers for
/// integer dtypes, 0/1 for bool), from a fixed seed.
HostTensor randomTensor(int64_t dtype, std::vector<int64_t> dims, double lo,
                        double hi, uint32_t seed);
/// A tensor of `dims` with every element zero (results are made this way).
HostTensor zeroTensor(int64_t dtype, std::vector<int64_t> dims);
/// A tensor from values (converted to dtype).
HostTensor tensorOf(int64_t dtype, std::vector<int64_t> dims,
                    const std::vector<double> &values);

using KernelFn = void (*)(void *const *, const int64_t *);

/// One comparison: `operands` then `results` (their dims and dtypes; their
/// contents are ignored), the attributes, and the tolerance: results match
/// when |gpu - cpu| <= atol + rtol * |cpu| for every element.
struct KernelCase {
  std::string name;
  KernelFn cpu = nullptr;
  KernelFn gpu = nullptr;
  std::vector<HostTensor> operands;
  std::vector<HostTensor> results;
  std::vector<int64_t> attrs;
  double rtol = 1e-6;
  double atol = 1e-6;
  /// Results that alias operands (optimizer updates): result i is written
  /// into operand inPlace[i]'s buffer instead of its own; -1 for none.
  std::vector<int> inPlace;
};

/// Runs `c` on both devices; prints one line (PASS/FAIL with the worst
/// element) and returns whether it passed.
bool runCase(const KernelCase &c);

/// The desc of a call of `c`'s kernel: its operands, then its results.
std::vector<int64_t> kernelDesc(const KernelCase &c);

/// A device copy of `t` (at least one byte allocated; cudaFree it).
void *uploadTensor(const HostTensor &t);

/// Milliseconds per call of `fn` on the GPU (warm-up, then CUDA events over
/// `iters` calls): for the throughput lines of the kernel benchmarks.
double gpuMilliseconds(const std::function<void()> &fn, int iters);

} // namespace test
} // namespace weft

#endif // WEFT_TEST_CUDA_KERNELCHECK_H
