//===- HostDevice.cpp - The host backend of libweft_runtime ---------------===//
//
// cpu bundles' models work on host memory: the executor hands them its host
// tensors (Device.h), so only requireDevice() and checkErrors() are called,
// and they have nothing to do. The memory functions work anyway, on plain
// host memory, for code that drives any backend alike.
//
// This object is part of libweft_runtime (and the `weft` launcher) only:
// libweft_runtime_cuda defines deviceBackend() with the CUDA backend.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Device.h"

#include <cstdlib>
#include <cstring>

namespace weft {
namespace {

class HostDevice final : public DeviceBackend {
public:
  const char *target() const override { return "cpu"; }
  bool isHost() const override { return true; }
  void requireDevice() override {}

  void *allocate(uint64_t bytes, uint64_t alignment, bool zero) override {
    if (alignment < sizeof(void *))
      alignment = sizeof(void *);
    void *p = nullptr;
    if (posix_memalign(&p, static_cast<size_t>(alignment),
                       static_cast<size_t>(bytes ? bytes : 1)) != 0)
      return nullptr;
    if (zero)
      std::memset(p, 0, static_cast<size_t>(bytes));
    return p;
  }
  void release(void *ptr) override { std::free(ptr); }
  void *allocatePinned(uint64_t bytes) override {
    return std::malloc(static_cast<size_t>(bytes ? bytes : 1));
  }
  void releasePinned(void *ptr) override { std::free(ptr); }
  void upload(void *device, const void *host, uint64_t bytes) override {
    std::memcpy(device, host, static_cast<size_t>(bytes));
  }
  void download(void *host, const void *device, uint64_t bytes) override {
    std::memcpy(host, device, static_cast<size_t>(bytes));
  }
  void synchronize() override {}
  void synchronizeCompute() override {}
  void startComms() override {}
  void finishComms() override {}
  void checkErrors() override {}
};

} // namespace

DeviceBackend &deviceBackend() {
  static HostDevice backend;
  return backend;
}

} // namespace weft
