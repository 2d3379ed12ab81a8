//===- GpuSkip.h - Exit 77 (ctest's skip) on a machine without a GPU
//-------===//
//
// Header-only, so every GPU test executable (the kernel comparisons, the
// executor's and the NCCL tests, which link different libraries) skips the
// same way with the same message.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_CUDA_GPUSKIP_H
#define WEFT_TEST_CUDA_GPUSKIP_H

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace weft {
namespace test {

/// Exits 77 with a message when no GPU is usable; call first in main().
inline void skipWithoutGpu() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("SKIP: no usable GPU (%s)\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "no device");
    std::fflush(stdout);
    std::exit(77);
  }
}

} // namespace test
} // namespace weft

#endif // WEFT_TEST_CUDA_GPUSKIP_H
