//===- CudaDevice.cpp - The CUDA backend of libweft_runtime_cuda ----------===//
//
// Device.h's backend for --target cuda bundles: buffers from cudaMalloc on
// this rank's GPU (CudaRuntime.h selects it), page-locked staging from
// cudaHostAlloc, copies enqueued on the compute stream so they are ordered
// with the model's kernels, and the NCCL communicators of
// runtime/comm/nccl (weft_rt_device_comm_start / _finish).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaRuntime.h"
#include "weft/runtime/Device.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#ifdef WEFT_HAVE_NCCL_COMM
extern "C" void weft_rt_device_comm_start(void);
extern "C" void weft_rt_device_comm_finish(void);
#endif

namespace weft {
namespace {

class CudaDevice final : public DeviceBackend {
public:
  const char *target() const override { return "cuda"; }
  bool isHost() const override { return false; }
  void requireDevice() override { cuda::requireDevice(); }

  void *allocate(uint64_t bytes, uint64_t alignment, bool zero) override {
    // cudaMalloc aligns to 256 bytes; a larger alignment over-allocates.
    const uint64_t extra = alignment > 256 ? alignment : 0;
    void *base = nullptr;
    cuda::device();
    if (cudaMalloc(&base, static_cast<size_t>(bytes + extra)) != cudaSuccess) {
      (void)cudaGetLastError(); // out of memory is reported by the caller
      return nullptr;
    }
    uintptr_t at = reinterpret_cast<uintptr_t>(base);
    if (extra)
      at = (at + alignment - 1) / alignment * alignment;
    void *aligned = reinterpret_cast<void *>(at);
    if (zero)
      cuda::zero(aligned, static_cast<size_t>(bytes));
    std::lock_guard<std::mutex> lock(mutex_);
    bases_[aligned] = {base, bytes + extra};
    live_ += bytes + extra;
    peak_ = std::max(peak_, live_);
    return aligned;
  }

  void release(void *ptr) override {
    void *base = ptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = bases_.find(ptr);
      if (it != bases_.end()) {
        base = it->second.base;
        live_ -= it->second.bytes;
        bases_.erase(it);
      }
    }
    // Work enqueued earlier may still use it.
    cuda::synchronize();
    cuda::check(cudaFree(base), "freeing device memory");
  }

  void *allocatePinned(uint64_t bytes) override {
    void *p = nullptr;
    cuda::device();
    if (cudaHostAlloc(&p, static_cast<size_t>(bytes), cudaHostAllocDefault) !=
        cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return p;
  }

  void releasePinned(void *ptr) override {
    cuda::synchronize();
    cuda::check(cudaFreeHost(ptr), "freeing page-locked host memory");
  }

  void upload(void *device, const void *host, uint64_t bytes) override {
    if (bytes)
      cuda::check(cudaMemcpyAsync(device, host, static_cast<size_t>(bytes),
                                  cudaMemcpyHostToDevice,
                                  cuda::computeStream()),
                  "copying to the GPU");
  }

  void download(void *host, const void *device, uint64_t bytes) override {
    if (bytes)
      cuda::check(cudaMemcpyAsync(host, device, static_cast<size_t>(bytes),
                                  cudaMemcpyDeviceToHost,
                                  cuda::computeStream()),
                  "copying from the GPU");
  }

  void synchronize() override {
    // Collectives may run on streams of their own.
    cuda::device();
    cuda::check(cudaDeviceSynchronize(), "waiting for the GPU");
  }

  void synchronizeCompute() override { cuda::synchronize(); }

  void startComms() override {
#ifdef WEFT_HAVE_NCCL_COMM
    weft_rt_device_comm_start();
#endif
  }

  void finishComms() override {
#ifdef WEFT_HAVE_NCCL_COMM
    weft_rt_device_comm_finish();
#endif
  }

  void checkErrors() override { cuda::checkDeviceErrors(); }

  int64_t peakMemoryBytes() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int64_t>(peak_ + cuda::kernelMemoryBytes());
  }

private:
  struct Allocation {
    void *base;     ///< what cudaMalloc returned
    uint64_t bytes; ///< what it allocated
  };
  std::mutex mutex_;
  std::unordered_map<void *, Allocation> bases_; ///< by aligned pointer
  uint64_t live_ = 0, peak_ = 0;                 ///< bytes allocated
};

} // namespace

DeviceBackend &deviceBackend() {
  static CudaDevice backend;
  return backend;
}

} // namespace weft
