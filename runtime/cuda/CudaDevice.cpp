//===- CudaDevice.cpp - The CUDA backend of libweft_runtime_cuda ----------===//
//
// Device.h's backend for --target cuda bundles: buffers from cudaMalloc on
// this rank's GPU (CudaRuntime.h selects it), page-locked staging from
// cudaHostAlloc, copies enqueued on the compute stream so they are ordered
// with the model's kernels, the NCCL communicators of runtime/comm/nccl
// (weft_rt_device_comm_start / _finish), and the model's run recorded as a
// CUDA graph and replayed (runModel): one launch for the step's hundreds
// of kernels, none of their host work, no gaps between them.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaRuntime.h"
#include "weft/runtime/Device.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
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
  void runModel(void (*call)(void *), void *ctx, uint64_t key,
                bool replayable) override {
    if (!replayable || graphsOff_)
      return call(ctx);
    Recording &r = recordings_[key];
    if (r.graph && r.scratch != cuda::scratchGeneration()) {
      // The kernel scratch moved since (another model's run grew it): the
      // graph holds the old address. Record this run again.
      cuda::check(cudaGraphExecDestroy(r.graph), "dropping a stale CUDA graph");
      r.graph = nullptr;
    }
    if (r.graph) {
      cuda::check(cudaGraphLaunch(r.graph, cuda::computeStream()),
                  "replaying the model's CUDA graph");
      return;
    }
    // The first run compiles fused kernels, uploads constants and sizes
    // the scratch: eagerly. The second is recorded, unless recording
    // these buffers failed before.
    if (r.failed || r.eagerRuns++ < 1)
      return call(ctx);
    cuda::beginCapture();
    r.scratch = cuda::scratchGeneration();
    call(ctx);
    const char *why = nullptr;
    std::string reason;
    if (cudaGraph_t recorded = cuda::endCapture(why)) {
      const cudaError_t err = cudaGraphInstantiate(&r.graph, recorded, 0);
      if (err != cudaSuccess) {
        r.graph = nullptr;
        reason = std::string("instantiating it: ") + cudaGetErrorName(err);
        (void)cudaGetLastError();
      }
      cudaGraphDestroy(recorded);
    } else {
      reason = why ? why : "unknown";
    }
    if (!r.graph) {
      r.failed = true;
      std::fprintf(stderr,
                   "weft: the model runs without a CUDA graph (recording it "
                   "failed: %s)\n",
                   reason.c_str());
      return call(ctx);
    }
    cuda::check(cudaGraphLaunch(r.graph, cuda::computeStream()),
                "launching the model's CUDA graph");
  }

private:
  struct Allocation {
    void *base;     ///< what cudaMalloc returned
    uint64_t bytes; ///< what it allocated
  };
  std::mutex mutex_;
  std::unordered_map<void *, Allocation> bases_; ///< by aligned pointer
  uint64_t live_ = 0, peak_ = 0;                 ///< bytes allocated
  // The model's runs as CUDA graphs (runModel), by buffers: a graph each
  // (kept for the process: a bundle's runs use one or two sets).
  struct Recording {
    cudaGraphExec_t graph = nullptr;
    uint64_t scratch = 0; // scratchGeneration() when recorded
    int eagerRuns = 0;
    bool failed = false;
  };
  bool graphsOff_ = graphsDisabled();
  std::unordered_map<uint64_t, Recording> recordings_;

  static bool graphsDisabled() {
    const char *v = std::getenv("WEFT_CUDA_GRAPHS");
    return v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0);
  }
};

} // namespace

DeviceBackend &deviceBackend() {
  static CudaDevice backend;
  return backend;
}

} // namespace weft
