//===- KernelArgs.h - Reader over a kernel call's bufs/desc ---------------===//
//
// Decodes the (bufs, desc) pair of KernelABI.h once per call into tensor
// views and an attribute cursor, and checks counts so a malformed call
// fails with a message naming the kernel instead of reading garbage.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_KERNELARGS_H
#define WEFT_RUNTIME_KERNELS_CPU_KERNELARGS_H

#include "weft/runtime/Diagnostics.h"
#include "weft/runtime/KernelABI.h"
#include "weft/runtime/LrSchedule.h"

#include <cstdint>
#include <memory>

namespace weft {
namespace cpu {

/// Highest tensor rank the kernels accept.
constexpr int kMaxRank = 16;

/// Printable name of a WeftDType code.
const char *dtypeName(int64_t dtype);

/// One dense row-major tensor of a kernel call.
struct TensorArg {
  void *data = nullptr;
  int64_t dtype = 0;
  int rank = 0;
  const int64_t *dims = nullptr;
  int64_t numel = 1;

  template <class T> T *as() const { return static_cast<T *>(data); }
  int64_t elemSize() const { return weftDTypeSize(dtype); }
  int64_t bytes() const { return numel * elemSize(); }
  /// Extent of dim `i`; negative `i` counts from the back.
  int64_t dim(int i) const { return dims[i < 0 ? i + rank : i]; }
  /// Product of dims [begin, end).
  int64_t extent(int begin, int end) const {
    int64_t n = 1;
    for (int i = begin; i < end; ++i)
      n *= dims[i];
    return n;
  }
};

class KernelArgs {
public:
  KernelArgs(const char *kernel, void *const *bufs, const int64_t *desc);
  KernelArgs(const KernelArgs &) = delete;
  KernelArgs &operator=(const KernelArgs &) = delete;

  const char *kernel() const { return kernel_; }
  int numTensors() const { return numTensors_; }
  const TensorArg &tensor(int i) const { return tensors_[i]; }
  int64_t numAttrs() const { return numAttrs_; }
  int64_t attr(int64_t j) const { return attrs_[j]; }
  double attrDouble(int64_t j) const { return weftAttrToDouble(attrs_[j]); }
  /// Pointer to attributes [j, j + count); fails if they are not all there.
  const int64_t *attrArray(int64_t j, int64_t count) const;

  /// Fails unless the call has between `lo` and `hi` tensors.
  void expectTensors(int lo, int hi) const;
  /// Fails unless the call has at least `n` attributes.
  void expectAttrs(int64_t n) const;
  /// The learning-rate schedule in attributes first..first+3 (kind, warmup
  /// steps, decay steps, minimum ratio as double bits), or the constant
  /// schedule when the kernel was given none (LrSchedule.h).
  LrSchedule lrSchedule(int64_t first) const;
  /// Fails unless tensor `i` has dtype `dtype`.
  void expectDType(int i, int64_t dtype) const;
  /// Fails unless tensors `i` and `j` have the same element count.
  void expectSameNumel(int i, int j) const;

  [[noreturn]] void unsupportedDType(int64_t dtype) const;
  [[noreturn]] void invalid(const char *what) const;

private:
  static constexpr int kInlineTensors = 8;
  const char *kernel_;
  int numTensors_ = 0;
  TensorArg inline_[kInlineTensors];
  std::unique_ptr<TensorArg[]> heap_;
  TensorArg *tensors_ = inline_;
  int64_t numAttrs_ = 0;
  const int64_t *attrs_ = nullptr;
};

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_KERNELARGS_H
