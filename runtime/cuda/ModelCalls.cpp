//===- ModelCalls.cpp - What --target cuda models call besides kernels ----===//
//
// weftrt-to-llvm{target=cuda} lowers the three runtime operations that a
// cpu model does with plain host instructions to calls of these functions
// (ModelABI.h), since a cuda model's buffers live on the GPU:
//
//   weft_rt_constant  a constant's device copy, uploaded on first use and
//                     cached by its id for the life of the process
//   weft_rt_copy      a device-to-device copy on the compute stream
//   weft_rt_load_i64  reads an i64 the kernels wrote (the pipeline stage
//                     index): waits for the compute stream
//
// During a CUDA graph capture (CudaRuntime.h) a constant's first upload
// and a read fail the capture: the run is then done eagerly.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaRuntime.h"
#include "weft/runtime/Diagnostics.h"
#include "weft/runtime/ModelABI.h"

#include <mutex>
#include <vector>

namespace {

std::mutex constantsMutex;

std::vector<void *> &constants() {
  static std::vector<void *> table;
  return table;
}

} // namespace

extern "C" void *weft_rt_constant(int64_t id, const void *host, int64_t bytes) {
  if (id < 0 || bytes < 0)
    weft::fatal(weft::kExitFailure,
                "weft_rt_constant: invalid constant %lld (%lld bytes)",
                static_cast<long long>(id), static_cast<long long>(bytes));
  std::lock_guard<std::mutex> lock(constantsMutex);
  std::vector<void *> &table = constants();
  if (static_cast<size_t>(id) >= table.size())
    table.resize(static_cast<size_t>(id) + 1, nullptr);
  void *&copy = table[static_cast<size_t>(id)];
  if (!copy && weft::cuda::capturing()) {
    // Its upload would be recorded, not run: the first use runs eagerly.
    weft::cuda::failCapture("a constant used for the first time");
    return nullptr;
  }
  if (!copy) {
    size_t size = static_cast<size_t>(bytes > 0 ? bytes : 1);
    weft::cuda::device(); // on this rank's GPU
    weft::cuda::check(cudaMalloc(&copy, size),
                      "allocating a constant on the GPU");
    // The model's read-only globals never change: an asynchronous copy
    // ordered before the kernels that read them.
    weft::cuda::check(cudaMemcpyAsync(copy, host, static_cast<size_t>(bytes),
                                      cudaMemcpyHostToDevice,
                                      weft::cuda::computeStream()),
                      "uploading a constant");
  }
  return copy;
}

extern "C" void weft_rt_copy(void *dst, const void *src, int64_t bytes) {
  if (bytes > 0 && dst != src)
    weft::cuda::check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes),
                                      cudaMemcpyDeviceToDevice,
                                      weft::cuda::computeStream()),
                      "copying a buffer on the GPU");
}

extern "C" int64_t weft_rt_load_i64(const void *ptr) {
  int64_t value = 0;
  if (weft::cuda::capturing()) {
    // Nothing has run: there is no value to read.
    weft::cuda::failCapture("a value read on the host");
    return value;
  }
  weft::cuda::check(cudaMemcpyAsync(&value, ptr, sizeof value,
                                    cudaMemcpyDeviceToHost,
                                    weft::cuda::computeStream()),
                    "reading a scalar from the GPU");
  weft::cuda::synchronize();
  return value;
}
