//===- NcclKernels.cu - Small GPU kernels around the NCCL calls -----------===//
#include "runtime/comm/nccl/NcclKernels.h"

#include "runtime/cuda/CudaRuntime.h"
#include "weft/runtime/KernelABI.h"

#include <cuda_bf16.h>

namespace weft {
namespace nccl {
namespace {

/// Strides and the row in units of T (copyRows picked T so they divide).
template <class T>
__global__ void copyRowsKernel(T *dst, const T *src, int64_t n1, int64_t row,
                               int64_t dstStride0, int64_t dstStride1,
                               int64_t srcStride0, int64_t srcStride1,
                               int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total; i += step) {
    const int64_t r = i % row;
    const int64_t rows = i / row;
    const int64_t i1 = rows % n1;
    const int64_t i0 = rows / n1;
    dst[i0 * dstStride0 + i1 * dstStride1 + r] =
        src[i0 * srcStride0 + i1 * srcStride1 + r];
  }
}

template <class T>
void launchCopyRows(void *dst, const void *src, int64_t n0, int64_t n1,
                    int64_t row, int64_t dstStride0, int64_t dstStride1,
                    int64_t srcStride0, int64_t srcStride1,
                    cudaStream_t stream) {
  const int64_t unit = sizeof(T);
  const int64_t total = n0 * n1 * (row / unit);
  copyRowsKernel<T><<<cuda::blocksFor(total), cuda::kBlock, 0, stream>>>(
      static_cast<T *>(dst), static_cast<const T *>(src), n1, row / unit,
      dstStride0 / unit, dstStride1 / unit, srcStride0 / unit,
      srcStride1 / unit, total);
}

template <class T>
__global__ void divideKernel(T *data, int64_t count, T divisor) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += step)
    data[i] = data[i] / divisor;
}

__global__ void divideBf16Kernel(__nv_bfloat16 *data, int64_t count,
                                 float divisor) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += step)
    data[i] = __float2bfloat16_rn(__bfloat162float(data[i]) / divisor);
}

__global__ void writeInt64Kernel(int64_t *dst, int64_t value) { *dst = value; }

__global__ void writeHeaderKernel(TransferHeader *dst, int64_t tag,
                                  int64_t bytes) {
  dst->tag = tag;
  dst->bytes = bytes;
}

__global__ void checkHeaderKernel(const TransferHeader *got, int64_t tag,
                                  int64_t bytes, int32_t lane,
                                  TransferMismatch *record, int *errorWord,
                                  int errorCode) {
  const int64_t gotTag = got->tag, gotBytes = got->bytes;
  if (gotTag == tag && gotBytes == bytes)
    return;
  // The details first, then the flag the watchdog polls; the fence makes
  // them visible to the host in that order.
  volatile TransferMismatch *r = record;
  r->lane = lane;
  r->expectedTag = tag;
  r->expectedBytes = bytes;
  r->gotTag = gotTag;
  r->gotBytes = gotBytes;
  __threadfence_system();
  r->found = 1;
  __threadfence_system();
  atomicCAS(errorWord, 0, errorCode);
}

} // namespace

void copyRows(void *dst, const void *src, int64_t n0, int64_t n1, int64_t row,
              int64_t dstStride0, int64_t dstStride1, int64_t srcStride0,
              int64_t srcStride1, cudaStream_t stream) {
  if (n0 <= 0 || n1 <= 0 || row <= 0)
    return;
  const uint64_t bits =
      reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) |
      static_cast<uint64_t>(row) | static_cast<uint64_t>(dstStride0) |
      static_cast<uint64_t>(dstStride1) | static_cast<uint64_t>(srcStride0) |
      static_cast<uint64_t>(srcStride1);
  if (bits % 16 == 0)
    launchCopyRows<uint4>(dst, src, n0, n1, row, dstStride0, dstStride1,
                          srcStride0, srcStride1, stream);
  else if (bits % 8 == 0)
    launchCopyRows<uint64_t>(dst, src, n0, n1, row, dstStride0, dstStride1,
                             srcStride0, srcStride1, stream);
  else if (bits % 4 == 0)
    launchCopyRows<uint32_t>(dst, src, n0, n1, row, dstStride0, dstStride1,
                             srcStride0, srcStride1, stream);
  else if (bits % 2 == 0)
    launchCopyRows<uint16_t>(dst, src, n0, n1, row, dstStride0, dstStride1,
                             srcStride0, srcStride1, stream);
  else
    launchCopyRows<uint8_t>(dst, src, n0, n1, row, dstStride0, dstStride1,
                            srcStride0, srcStride1, stream);
  cuda::checkLaunch("a block copy of the NCCL collectives");
}

void divideBy(void *data, int64_t count, int64_t dtype, int64_t divisor,
              cudaStream_t stream) {
  if (count <= 0 || divisor == 1)
    return;
  const int blocks = cuda::blocksFor(count);
  switch (dtype) {
  case WEFT_F32:
    divideKernel<float><<<blocks, cuda::kBlock, 0, stream>>>(
        static_cast<float *>(data), count, static_cast<float>(divisor));
    break;
  case WEFT_F64:
    divideKernel<double><<<blocks, cuda::kBlock, 0, stream>>>(
        static_cast<double *>(data), count, static_cast<double>(divisor));
    break;
  case WEFT_BF16:
    divideBf16Kernel<<<blocks, cuda::kBlock, 0, stream>>>(
        static_cast<__nv_bfloat16 *>(data), count, static_cast<float>(divisor));
    break;
  case WEFT_I64:
    divideKernel<int64_t><<<blocks, cuda::kBlock, 0, stream>>>(
        static_cast<int64_t *>(data), count, divisor);
    break;
  case WEFT_I32:
    divideKernel<int32_t><<<blocks, cuda::kBlock, 0, stream>>>(
        static_cast<int32_t *>(data), count, static_cast<int32_t>(divisor));
    break;
  default:
    return; // the callers reduce only the dtypes above
  }
  cuda::checkLaunch("the average of a NCCL reduction");
}

void writeInt64(int64_t *dst, int64_t value, cudaStream_t stream) {
  writeInt64Kernel<<<1, 1, 0, stream>>>(dst, value);
  cuda::checkLaunch("mesh_offset");
}

void writeHeader(TransferHeader *dst, int64_t tag, int64_t bytes,
                 cudaStream_t stream) {
  writeHeaderKernel<<<1, 1, 0, stream>>>(dst, tag, bytes);
  cuda::checkLaunch("the header of a pipeline transfer");
}

void checkHeader(const TransferHeader *got, int64_t tag, int64_t bytes,
                 int32_t lane, TransferMismatch *record, int *errorWord,
                 int errorCode, cudaStream_t stream) {
  checkHeaderKernel<<<1, 1, 0, stream>>>(got, tag, bytes, lane, record,
                                         errorWord, errorCode);
  cuda::checkLaunch("the check of a pipeline transfer");
}

} // namespace nccl
} // namespace weft
