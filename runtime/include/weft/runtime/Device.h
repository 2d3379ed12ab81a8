//===- Device.h - The memory the compiled model runs on -------------------===//
//
// weft_model_run (ModelABI.h) takes pointers into the memory of the device
// its bundle was compiled for (weftc compile --target): host memory for cpu
// bundles, this rank's GPU for cuda bundles. A DeviceBackend is everything
// the executor needs of that device. Each runtime library defines
// weft::deviceBackend() once, so the backend is chosen when the bundle is
// linked:
//
//   libweft_runtime       the host backend (runtime/executor/
//                         HostDevice.cpp): isHost() is true and the
//                         executor hands the model its host tensors, as it
//                         always did; nothing is copied.
//   libweft_runtime_cuda  the CUDA backend (runtime/cuda/CudaDevice.cpp):
//                         cudaMalloc'ed buffers, page-locked staging
//                         buffers, copies on the compute stream
//                         (CudaRuntime.h), NCCL communicators.
//
// On a device (isHost() false) the executor keeps host copies for I/O:
// the params buffers are uploaded once (after they are loaded or resumed
// from a checkpoint) and downloaded only when a checkpoint needs them; the
// inputs are uploaded before every step through page-locked buffers and
// the outputs (a training step's loss) downloaded after it; after every
// step the backend checks what the GPU kernels recorded (checkErrors).
//
// Every failure of a device call is fatal: "weft: error: ..." and exit code
// 1 (Diagnostics.h), like the kernels' own errors.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_DEVICE_H
#define WEFT_RUNTIME_DEVICE_H

#include <cstdint>

namespace weft {

class DeviceBackend {
public:
  virtual ~DeviceBackend();

  /// The --target whose bundles this backend runs: "cpu" or "cuda".
  virtual const char *target() const = 0;
  /// True when the model works on host memory: the executor then passes
  /// its host tensors and calls none of the functions below but
  /// requireDevice() and checkErrors().
  virtual bool isHost() const = 0;
  /// Fails at once, with a message saying why, when this process has no
  /// usable device. The executor calls it before anything else.
  virtual void requireDevice() = 0;

  /// `bytes` of device memory aligned to `alignment` (a power of two),
  /// zeroed when `zero`; nullptr when the device is out of memory.
  virtual void *allocate(uint64_t bytes, uint64_t alignment, bool zero) = 0;
  virtual void release(void *ptr) = 0;
  /// Page-locked host memory (transfers from and to it run asynchronously);
  /// nullptr when out of memory.
  virtual void *allocatePinned(uint64_t bytes) = 0;
  virtual void releasePinned(void *ptr) = 0;

  /// Enqueues a host -> device copy before the model's next work. `host`
  /// must stay unchanged until the next synchronize().
  virtual void upload(void *device, const void *host, uint64_t bytes) = 0;
  /// Enqueues a device -> host copy after the work enqueued so far; the
  /// bytes are at `host` after synchronize().
  virtual void download(void *host, const void *device, uint64_t bytes) = 0;
  /// Waits for all work enqueued on this rank's device (kernels, copies,
  /// collectives).
  virtual void synchronize() = 0;
  /// Waits for the compute stream alone: what traces do after every launch
  /// (so a launch's time is its work's, not its enqueueing's).
  virtual void synchronizeCompute() = 0;

  /// Collective over the ranks: creates the device's communicators (one
  /// per mesh-axis group) once weft::comm::context() is up (RankStart.h),
  /// and tears them down (reporting their asynchronous errors) at the end.
  virtual void startComms() = 0;
  virtual void finishComms() = 0;
  /// After every step: fails with the message a kernel recorded on the
  /// device (an index out of range, say).
  virtual void checkErrors() = 0;
  /// The most device memory the model has held at once so far: its
  /// buffers (allocate()) plus what the kernels keep (scratch, GEMM
  /// workspace). -1 on the host, where the executor measures the process's
  /// resident set instead.
  virtual int64_t peakMemoryBytes() { return -1; }
  /// Runs the model once: call(ctx) enqueues its work on the compute
  /// stream. With `replayable` (the executor's promise that the run's
  /// work is the same each time for the same `key`: the model's buffers,
  /// one rank, no trace), the CUDA backend runs the first call eagerly,
  /// records the second as a CUDA graph and replays that graph for the
  /// later calls with that key (call is not called then); a run that
  /// cannot be recorded is run eagerly, and so are the later ones with its
  /// key (WEFT_CUDA_GRAPHS=0: no graphs). Other backends call call(ctx).
  virtual void runModel(void (*call)(void *), void *ctx, uint64_t key,
                        bool replayable) {
    (void)key;
    (void)replayable;
    call(ctx);
  }
};

/// The backend of the runtime library this program is linked with.
DeviceBackend &deviceBackend();

/// A move-only device (or page-locked host) allocation of a DeviceBackend.
class DeviceBuffer {
public:
  enum class Kind { Device, Pinned };

  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;

  /// Frees any previous allocation and allocates `bytes` (at least one
  /// byte is allocated) on `backend`; false when out of memory.
  bool allocate(DeviceBackend &backend, Kind kind, uint64_t bytes,
                uint64_t alignment = 64, bool zero = false);
  void reset();

  void *data() const { return data_; }
  uint64_t size() const { return size_; }

private:
  DeviceBackend *backend_ = nullptr;
  Kind kind_ = Kind::Device;
  void *data_ = nullptr;
  uint64_t size_ = 0;
};

} // namespace weft

#endif // WEFT_RUNTIME_DEVICE_H
