//===- CudaRuntime.cu - This rank's GPU: device, streams, handles --------===//

#include "runtime/cuda/CudaRuntime.h"

#include "weft/runtime/Diagnostics.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace weft {
namespace cuda {
namespace {

constexpr size_t kGemmWorkspaceBytes = 32u << 20;

/// The rank's local index among the processes of its node, from the
/// launcher's variables; 0 without any.
int localRank() {
  for (const char *name :
       {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
    if (const char *v = std::getenv(name)) {
      char *end = nullptr;
      long r = std::strtol(v, &end, 10);
      if (end != v && *end == '\0' && r >= 0)
        return static_cast<int>(r);
    }
  }
  return 0;
}

struct State {
  int device = -1;
  int sms = 0;
  int capability = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  void *gemmWorkspace = nullptr;
  void *scratch = nullptr;
  size_t scratchBytes = 0;
  uint64_t scratchGeneration = 0;
  int *errorWord = nullptr;
  // CUDA graph capture: the compute stream while captureStream stands in.
  cudaStream_t computeStream = nullptr, captureStream = nullptr;
  std::string captureFailure;
};

/// Whether this thread is capturing (CudaDevice.cpp's runs are one
/// thread's).
thread_local bool tCapturing = false;

std::mutex errorsMutex;
std::vector<std::string> &errorMessages() {
  static std::vector<std::string> messages;
  return messages;
}

State &state() {
  static State s;
  static std::once_flag once;
  std::call_once(once, [] {
    // The compute stream and one stream per communicator: more than the
    // default 8 hardware queues, or unrelated streams serialize.
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", /*overwrite=*/0);
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0)
      fatal(kExitFailure,
            "this bundle was compiled for --target cuda but the machine has "
            "no usable NVIDIA GPU (%s); compile with --target cpu to run on "
            "CPU ranks",
            err != cudaSuccess ? cudaGetErrorString(err)
                               : "no CUDA device found");
    s.device = localRank() % count;
    check(cudaSetDevice(s.device), "selecting the rank's GPU");
    cudaDeviceProp prop;
    check(cudaGetDeviceProperties(&prop, s.device), "reading GPU properties");
    s.sms = prop.multiProcessorCount;
    s.capability = prop.major * 10 + prop.minor;
    // A blocking stream: it stays ordered with work on the legacy default
    // stream (a cudaMemcpy from pageable memory returns before its DMA has
    // landed, a cudaMemset may run late), so such calls anywhere cannot
    // race the kernels. The communicators' streams are non-blocking.
    check(cudaStreamCreate(&s.stream), "creating the compute stream");
  });
  return s;
}

} // namespace

/// An error during a capture (`what`: the call, `error`: what went wrong):
/// it fails the capture (the caller runs eagerly) and CUDA's error is
/// cleared. False outside captures, where the caller stops.
static bool captureError(const char *what, const std::string &error) {
  if (!tCapturing)
    return false;
  failCapture((std::string(what) + ": " + error).c_str());
  (void)cudaGetLastError();
  return true;
}

void check(cudaError_t err, const char *what) {
  if (err != cudaSuccess && !captureError(what, cudaGetErrorName(err)))
    fatal(kExitFailure, "%s: CUDA error %s (%s)", what, cudaGetErrorName(err),
          cudaGetErrorString(err));
}

void checkCublas(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS &&
      !captureError(what,
                    "cuBLAS error " + std::to_string(static_cast<int>(status))))
    fatal(kExitFailure, "%s: cuBLAS error %d", what, static_cast<int>(status));
}

void checkLaunch(const char *kernel) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess && !captureError(kernel, cudaGetErrorName(err)))
    fatal(kExitFailure, "kernel %s: launch failed: %s (%s)", kernel,
          cudaGetErrorName(err), cudaGetErrorString(err));
}

bool capturing() { return tCapturing; }

void failCapture(const char *why) {
  State &s = state();
  if (s.captureFailure.empty())
    s.captureFailure = why;
}

void beginCapture() {
  State &s = state();
  if (!s.captureStream)
    check(cudaStreamCreateWithFlags(&s.captureStream, cudaStreamNonBlocking),
          "creating the capture stream");
  s.captureFailure.clear();
  // Non-blocking: no implicit order with the legacy stream to record.
  // Thread-local mode: this thread's unsafe calls (a cudaMalloc, a wait)
  // fail the capture; other threads are left alone.
  check(
      cudaStreamBeginCapture(s.captureStream, cudaStreamCaptureModeThreadLocal),
      "starting a CUDA graph capture");
  s.computeStream = s.stream;
  s.stream = s.captureStream;
  tCapturing = true;
}

cudaGraph_t endCapture(const char *&why) {
  State &s = state();
  tCapturing = false;
  s.stream = s.computeStream;
  cudaGraph_t graph = nullptr;
  const cudaError_t err = cudaStreamEndCapture(s.captureStream, &graph);
  if (err != cudaSuccess && s.captureFailure.empty())
    s.captureFailure =
        std::string("ending the capture: ") + cudaGetErrorName(err);
  (void)cudaGetLastError();
  if (!s.captureFailure.empty() && graph) {
    cudaGraphDestroy(graph);
    graph = nullptr;
  }
  if (!graph && s.captureFailure.empty())
    s.captureFailure = "no graph was recorded";
  why = s.captureFailure.c_str();
  return graph;
}

int device() { return state().device; }
void requireDevice() { (void)state(); }
int multiprocessorCount() { return state().sms; }
int computeCapability() { return state().capability; }
cudaStream_t computeStream() { return state().stream; }

cublasLtHandle_t cublasLt() {
  State &s = state();
  if (!s.lt && tCapturing)
    failCapture("the cuBLASLt handle created during a capture");
  if (!s.lt)
    checkCublas(cublasLtCreate(&s.lt), "creating the cuBLASLt handle");
  return s.lt;
}

void *gemmWorkspace(size_t *bytes) {
  State &s = state();
  if (!s.gemmWorkspace && tCapturing) {
    failCapture("the GEMM workspace allocated during a capture");
    *bytes = 0;
    return nullptr;
  }
  if (!s.gemmWorkspace)
    check(cudaMalloc(&s.gemmWorkspace, kGemmWorkspaceBytes),
          "allocating the GEMM workspace");
  *bytes = kGemmWorkspaceBytes;
  return s.gemmWorkspace;
}

size_t kernelMemoryBytes() {
  State &s = state();
  return s.scratchBytes + (s.gemmWorkspace ? kGemmWorkspaceBytes : 0);
}

void *scratch(size_t bytes) {
  State &s = state();
  if (bytes > s.scratchBytes && tCapturing) {
    // A stream-ordered allocation would be the graph's own memory.
    failCapture("kernel scratch grew during a capture");
    return s.scratch;
  }
  if (bytes > s.scratchBytes) {
    // Stream-ordered: the old buffer goes once the work enqueued before
    // has run, and nothing waits for the device (a cudaFree would, and
    // could stall NCCL kernels waiting on a peer).
    if (s.scratch)
      check(cudaFreeAsync(s.scratch, s.stream), "freeing kernel scratch");
    size_t grown = std::max(bytes, s.scratchBytes * 2);
    check(cudaMallocAsync(&s.scratch, grown, s.stream),
          "allocating kernel scratch");
    s.scratchBytes = grown;
    ++s.scratchGeneration;
  }
  return s.scratch;
}

uint64_t scratchGeneration() { return state().scratchGeneration; }

void zero(void *ptr, size_t bytes) {
  if (bytes)
    check(cudaMemsetAsync(ptr, 0, bytes, computeStream()),
          "clearing device memory");
}

int registerDeviceError(const char *message) {
  std::lock_guard<std::mutex> lock(errorsMutex);
  std::vector<std::string> &messages = errorMessages();
  for (size_t i = 0; i < messages.size(); ++i)
    if (messages[i] == message)
      return static_cast<int>(i) + 1;
  messages.push_back(message);
  return static_cast<int>(messages.size());
}

int *errorWord() {
  State &s = state();
  if (!s.errorWord && tCapturing) {
    failCapture("the error word allocated during a capture");
    return nullptr;
  }
  if (!s.errorWord) {
    check(cudaMalloc(&s.errorWord, sizeof(int)), "allocating the error word");
    check(cudaMemset(s.errorWord, 0, sizeof(int)), "clearing the error word");
  }
  return s.errorWord;
}

void checkDeviceErrors() {
  State &s = state();
  if (!s.errorWord)
    return;
  int code = 0;
  check(cudaMemcpyAsync(&code, s.errorWord, sizeof(int), cudaMemcpyDeviceToHost,
                        s.stream),
        "reading the device error word");
  synchronize();
  if (code == 0)
    return;
  std::lock_guard<std::mutex> lock(errorsMutex);
  const std::vector<std::string> &messages = errorMessages();
  if (code < 1 || code > static_cast<int>(messages.size()))
    fatal(kExitFailure, "a GPU kernel reported unknown error code %d", code);
  fatal(kExitFailure, "%s", messages[code - 1].c_str());
}

void synchronize() {
  if (tCapturing) {
    failCapture("a wait for the GPU");
    return;
  }
  check(cudaStreamSynchronize(computeStream()), "waiting for the GPU");
}

int blocksFor(int64_t n) {
  int64_t blocks = (n + kBlock - 1) / kBlock;
  int64_t cap = static_cast<int64_t>(std::max(multiprocessorCount(), 1)) * 32;
  return static_cast<int>(std::max<int64_t>(1, std::min(blocks, cap)));
}

} // namespace cuda
} // namespace weft
