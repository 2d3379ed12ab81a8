//===- Tensor.h - Host tensors, aligned buffers and dtype names -----------===//
//
// A HostTensor is what tensor I/O produces and the executor hands to the
// compiled model: a dtype code (WeftDType, KernelABI.h), a shape, and a
// 64-byte aligned, dense, row-major buffer.
//
// dtype names (model signatures, manifests, messages): f32 f16 bf16 f64 i64
// i32 i8 u8 bool.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_TENSOR_H
#define WEFT_RUNTIME_TENSOR_H

#include "weft/runtime/KernelABI.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

/// A move-only heap buffer aligned to (at least) 64 bytes. The allocation is
/// never smaller than the alignment, so data() is non-null after a successful
/// allocate() even for zero bytes.
class AlignedBuffer {
public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  ~AlignedBuffer() { release(); }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  AlignedBuffer(AlignedBuffer &&other) noexcept;
  AlignedBuffer &operator=(AlignedBuffer &&other) noexcept;

  /// Frees any previous allocation and allocates `bytes` bytes aligned to
  /// `alignment` (a power of two; values below 64 mean 64). When `zero`, the
  /// whole allocation is cleared. Returns false when out of memory or when
  /// the alignment is not a power of two.
  bool allocate(size_t bytes, size_t alignment = kAlignment, bool zero = false);
  void release();

  void *data() { return data_; }
  const void *data() const { return data_; }
  /// The requested size in bytes.
  size_t size() const { return size_; }

private:
  void *data_ = nullptr;
  size_t size_ = 0;
};

struct HostTensor {
  WeftDType dtype = WEFT_F32;
  std::vector<int64_t> shape;
  AlignedBuffer data;

  int64_t numElements() const;
  size_t byteSize() const { return data.size(); }
};

/// "f32", "bf16", ...; "?" for an unknown code.
const char *dtypeName(int64_t dtype);
/// Parses a dtype name ("f32", ...). Returns false for an unknown name.
bool parseDTypeName(std::string_view name, WeftDType &out);
/// "f32[1,3]"; a scalar is "f32[]".
std::string formatTensorType(int64_t dtype, const std::vector<int64_t> &shape);
/// "[1,3]".
std::string formatShape(const std::vector<int64_t> &shape);

/// Element count of `shape`. Returns false for a negative dimension or when
/// the count (or the byte size with elements of `elementSize` bytes, when
/// given) overflows int64.
bool shapeNumElements(const std::vector<int64_t> &shape, int64_t &count,
                      int64_t elementSize = 1);

} // namespace weft

#endif // WEFT_RUNTIME_TENSOR_H
