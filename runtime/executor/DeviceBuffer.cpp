//===- DeviceBuffer.cpp - Allocations of a DeviceBackend ------------------===//

#include "weft/runtime/Device.h"

#include <algorithm>

namespace weft {

DeviceBackend::~DeviceBackend() = default;

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : backend_(other.backend_), kind_(other.kind_), data_(other.data_),
      size_(other.size_) {
  other.backend_ = nullptr;
  other.data_ = nullptr;
  other.size_ = 0;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    std::swap(backend_, other.backend_);
    std::swap(kind_, other.kind_);
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }
  return *this;
}

bool DeviceBuffer::allocate(DeviceBackend &backend, Kind kind, uint64_t bytes,
                            uint64_t alignment, bool zero) {
  reset();
  uint64_t allocated = std::max<uint64_t>(bytes, 1);
  void *p = kind == Kind::Pinned ? backend.allocatePinned(allocated)
                                 : backend.allocate(allocated, alignment, zero);
  if (!p)
    return false;
  backend_ = &backend;
  kind_ = kind;
  data_ = p;
  size_ = bytes;
  return true;
}

void DeviceBuffer::reset() {
  if (data_) {
    if (kind_ == Kind::Pinned)
      backend_->releasePinned(data_);
    else
      backend_->release(data_);
  }
  backend_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

} // namespace weft
