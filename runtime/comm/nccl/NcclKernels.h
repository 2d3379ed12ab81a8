//===- NcclKernels.h - Small GPU kernels around the NCCL calls ------------===//
//
// The NCCL collectives (runtime/comm/nccl) need a few device-side steps of
// their own: moving the blocks of a dim other than the leading one between
// the tensor's layout and the group-major layout NCCL works on (and taking
// one block out, for all_slice), turning a sum into an average for the
// dtypes NCCL cannot average exactly, writing mesh_offset's i64, and the
// header that every pipeline transfer carries so a receive can tell that it
// got the message it expects. Each function enqueues one kernel on `stream`
// and returns; a launch failure is fatal (CudaRuntime.h's checkLaunch).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_COMM_NCCL_NCCLKERNELS_H
#define WEFT_RUNTIME_COMM_NCCL_NCCLKERNELS_H

#include <cuda_runtime.h>

#include <cstdint>

namespace weft {
namespace nccl {

/// Copies n0 x n1 rows of `row` bytes: row (i0, i1) goes from
/// src + i0 * srcStride0 + i1 * srcStride1 to dst + i0 * dstStride0 +
/// i1 * dstStride1 (strides in bytes). The widest access (up to 16 bytes)
/// that every address, stride and the row size allow is used.
void copyRows(void *dst, const void *src, int64_t n0, int64_t n1, int64_t row,
              int64_t dstStride0, int64_t dstStride1, int64_t srcStride0,
              int64_t srcStride1, cudaStream_t stream);

/// data[i] /= divisor for `count` elements of `dtype` (f32, f64, bf16, i64,
/// i32): bf16 is divided in f32 and rounded once, integers truncate toward
/// zero as the CPU collectives' division does.
void divideBy(void *data, int64_t count, int64_t dtype, int64_t divisor,
              cudaStream_t stream);

/// *dst = value (one i64 of device memory).
void writeInt64(int64_t *dst, int64_t value, cudaStream_t stream);

/// What goes ahead of every pipeline transfer (PointToPoint.cpp): the tag
/// the SPMD program gave it and its size.
struct TransferHeader {
  int64_t tag;
  int64_t bytes;
};

/// A receive that got another message than it expects, written by
/// checkHeader into page-locked host memory that the watchdog reads without
/// any CUDA call (it may be waiting on a stream that never finishes).
/// `found` is written last.
struct TransferMismatch {
  int32_t found;
  int32_t lane;
  int64_t expectedTag, expectedBytes;
  int64_t gotTag, gotBytes;
};

/// *dst = {tag, bytes}.
void writeHeader(TransferHeader *dst, int64_t tag, int64_t bytes,
                 cudaStream_t stream);

/// When *got is not {tag, bytes}: fills *record (a device view of mapped
/// host memory) and sets *errorWord to errorCode unless an earlier error
/// holds it (CudaRuntime.h's device error word).
void checkHeader(const TransferHeader *got, int64_t tag, int64_t bytes,
                 int32_t lane, TransferMismatch *record, int *errorWord,
                 int errorCode, cudaStream_t stream);

} // namespace nccl
} // namespace weft

#endif // WEFT_RUNTIME_COMM_NCCL_NCCLKERNELS_H
