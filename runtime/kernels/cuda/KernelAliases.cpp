//===- KernelAliases.cpp - weft_k_* for --target cuda bundles -------------===//
//
// A cuda bundle's model calls the ABI names of KernelABI.h; this file maps
// each to its GPU version. It is part of libweft_runtime_cuda only, so
// tests can link the GPU kernels beside the CPU ones.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/CudaKernels.h"

extern "C" {
#define WEFT_ALIAS_CUDA_KERNEL(name)                                           \
  void weft_k_##name(void *const *bufs, const int64_t *desc) {                 \
    weft_cuda_k_##name(bufs, desc);                                            \
  }
WEFT_KERNELS(WEFT_ALIAS_CUDA_KERNEL)
#undef WEFT_ALIAS_CUDA_KERNEL
}
