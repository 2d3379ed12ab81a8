//===- CudaKernels.h - The GPU implementations of KernelABI.h's kernels --===//
//
// Each compute kernel of WEFT_KERNELS has a GPU version
//
//   extern "C" void weft_cuda_k_<kernel>(void *const *bufs,
//                                         const int64_t *desc);
//
// with KernelABI.h's contract, except that every buffer in `bufs` is
// device memory of this rank's GPU (desc stays in host memory). They
// enqueue work on weft::cuda::computeStream() and return at once.
// KernelAliases.cpp exports them under the ABI names weft_k_<kernel> for
// --target cuda bundles; tests link the weft_cuda_k_* names beside the CPU
// kernels to compare the two.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CUDA_CUDAKERNELS_H
#define WEFT_RUNTIME_KERNELS_CUDA_CUDAKERNELS_H

#include "weft/runtime/KernelABI.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_DECLARE_CUDA_KERNEL(name)                                         \
  void weft_cuda_k_##name(void *const *bufs, const int64_t *desc);
WEFT_KERNELS(WEFT_DECLARE_CUDA_KERNEL)
#undef WEFT_DECLARE_CUDA_KERNEL

#ifdef __cplusplus
} // extern "C"
#endif

#endif // WEFT_RUNTIME_KERNELS_CUDA_CUDAKERNELS_H
