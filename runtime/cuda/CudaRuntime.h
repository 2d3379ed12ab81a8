//===- CudaRuntime.h - This rank's GPU: device, streams, handles ---------===//
//
// The CUDA backend's per-process state, shared by the GPU kernels
// (runtime/kernels/cuda), the NCCL collectives (runtime/comm/nccl) and the
// executor's device memory. Everything is created on first use on the
// rank's device: LOCAL_RANK (torchrun), OMPI_COMM_WORLD_LOCAL_RANK
// (mpirun) or SLURM_LOCALID (srun), modulo the number of visible devices;
// 0 without any of them.
//
// Compute kernels run in issue order on computeStream(). A kernel call
// (weft_cuda_k_*) only enqueues work: it never synchronizes, so the host
// runs ahead of the GPU. Errors are fatal with a message naming the
// kernel (Diagnostics.h).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_CUDA_CUDARUNTIME_H
#define WEFT_RUNTIME_CUDA_CUDARUNTIME_H

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace weft {
namespace cuda {

/// Exits with "weft: error: <what>: <CUDA's message>" unless `err` is
/// cudaSuccess.
void check(cudaError_t err, const char *what);
/// Same for a cuBLAS(Lt) status.
void checkCublas(cublasStatus_t status, const char *what);
/// Checks that the last kernel launch was accepted (cudaGetLastError);
/// `kernel` names the weft kernel in the message.
void checkLaunch(const char *kernel);

/// Ordinal of this rank's device (selected and made current on first use).
int device();
/// Fails with a clear message when the process sees no usable GPU; called by
/// the executor before anything else touches the device.
void requireDevice();
/// Multiprocessor count and compute capability (major * 10 + minor).
int multiprocessorCount();
int computeCapability();

/// The stream every compute kernel of this rank runs on.
cudaStream_t computeStream();
/// This rank's cuBLASLt handle.
cublasLtHandle_t cublasLt();
/// cuBLASLt workspace on the device (fixed size, stream-ordered on
/// computeStream()).
void *gemmWorkspace(size_t *bytes);

/// Device scratch of at least `bytes` for work enqueued on computeStream():
/// valid until the next scratch() call, whose work is ordered after this
/// call's on the same stream. Grows only, stream-ordered (nothing waits).
void *scratch(size_t bytes);
/// How many times the scratch buffer has moved (grown): a recorded graph
/// holds its address, so a graph recorded before a move is stale.
uint64_t scratchGeneration();
/// Device memory the runtime holds for the kernels: the scratch buffer
/// (which only grows, so this is its peak) and the GEMM workspace.
size_t kernelMemoryBytes();

/// Enqueues a zero fill of `bytes` at `ptr` on computeStream().
void zero(void *ptr, size_t bytes);

/// Bad data found on the device (an index out of range, say) cannot stop
/// the kernel that finds it. Kernels record it instead: host code registers
/// each message once (registerDeviceError, which returns its code, at least
/// 1) and passes errorWord() to the kernel, which stores the code with
/// atomicCAS(word, 0, code) so the first error wins. checkDeviceErrors()
/// waits for the stream and fails with the recorded message; the executor
/// calls it after every step.
int registerDeviceError(const char *message);
int *errorWord();
void checkDeviceErrors();

/// Blocks until every kernel enqueued on computeStream() has finished.
void synchronize();

/// CUDA graphs. CudaDevice.cpp records a model's run as one graph and
/// replays it. While this thread captures (between beginCapture and
/// endCapture), computeStream() is a capture stream and work is recorded,
/// not run. What cannot be recorded fails the capture instead of the
/// process: a CUDA error in check(), checkLaunch() or checkCublas(), a wait
/// for the GPU, scratch that would grow, a constant's first upload, a fused
/// kernel compiled for the first time, the first GEMM workspace, error word
/// or cuBLASLt handle. The caller then drops the graph and runs eagerly.
bool capturing();
/// Notes why the capture cannot be used (the first reason is kept).
void failCapture(const char *why);
void beginCapture();
/// Ends the capture: the graph, or null with the reason in `why`.
cudaGraph_t endCapture(const char *&why);

/// Threads per block and block count for a 1-D elementwise launch over `n`
/// elements (grid-stride loops: the count is capped).
constexpr int kBlock = 256;
int blocksFor(int64_t n);

} // namespace cuda
} // namespace weft

#endif // WEFT_RUNTIME_CUDA_CUDARUNTIME_H
