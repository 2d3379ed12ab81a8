//===- Tensor.cpp - Host tensors, aligned buffers and dtype names ---------===//

#include "weft/runtime/Tensor.h"

#include <cstdlib>
#include <cstring>

namespace weft {

AlignedBuffer::AlignedBuffer(AlignedBuffer &&other) noexcept
    : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

AlignedBuffer &AlignedBuffer::operator=(AlignedBuffer &&other) noexcept {
  if (this != &other) {
    release();
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

bool AlignedBuffer::allocate(size_t bytes, size_t alignment, bool zero) {
  release();
  if (alignment < kAlignment)
    alignment = kAlignment;
  if ((alignment & (alignment - 1)) != 0)
    return false;
  // Round up to a multiple of the alignment, at least one block.
  if (bytes > SIZE_MAX - alignment)
    return false;
  size_t rounded =
      bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
  void *p = nullptr;
  if (posix_memalign(&p, alignment, rounded) != 0 || !p)
    return false;
  if (zero)
    std::memset(p, 0, rounded);
  data_ = p;
  size_ = bytes;
  return true;
}

void AlignedBuffer::release() {
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
}

int64_t HostTensor::numElements() const {
  int64_t n = 0;
  if (!shapeNumElements(shape, n))
    return -1;
  return n;
}

static const char *const kDTypeNames[] = {"f32", "f16", "bf16", "f64", "i64",
                                          "i32", "i8",  "u8",   "bool"};

const char *dtypeName(int64_t dtype) {
  if (dtype < 0 || dtype > WEFT_BOOL)
    return "?";
  return kDTypeNames[dtype];
}

bool parseDTypeName(std::string_view name, WeftDType &out) {
  for (int i = 0; i <= WEFT_BOOL; ++i) {
    if (name == kDTypeNames[i]) {
      out = static_cast<WeftDType>(i);
      return true;
    }
  }
  return false;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ",";
    s += std::to_string(shape[i]);
  }
  s += "]";
  return s;
}

std::string formatTensorType(int64_t dtype, const std::vector<int64_t> &shape) {
  return std::string(dtypeName(dtype)) + formatShape(shape);
}

bool shapeNumElements(const std::vector<int64_t> &shape, int64_t &count,
                      int64_t elementSize) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return false;
    if (d != 0 && n > INT64_MAX / d)
      return false;
    n *= d;
  }
  if (elementSize > 0 && n > INT64_MAX / elementSize)
    return false;
  count = n;
  return true;
}

} // namespace weft
