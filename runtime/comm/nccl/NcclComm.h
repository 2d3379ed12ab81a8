//===- NcclComm.h - This rank's NCCL communicators, streams and slots -----===//
//
// The collective kernels of KernelABI.h on device buffers, for --target cuda
// bundles (they replace runtime/comm's CPU versions there; the two never
// share an executable). The host communicators of Comm.h still start the
// ranks (MPI, the TCP rendezvous or one rank alone) and describe the mesh;
// weft_rt_device_comm_start builds the NCCL side over them.
//
// Communicators. The world communicator is initialized from an ncclUniqueId
// that rank 0 makes and broadcasts over the host world. Every group the
// kernels may name is split off it at start, eagerly and in one order on
// every rank (ncclCommSplit is collective over the world, and pipeline
// stages run different code, so no group can be made on first use): one per
// ordered choice of mesh axes, as Mesh::createGroups does, with color = the
// linear index over the other axes and key = the group index (first listed
// axis major), so NCCL's rank in it is the group index. Axes of extent 1
// change neither the members nor their order and are dropped first; the
// choice that is every remaining axis in mesh order is the world itself.
// The pipeline axis (the mesh axis named "pp") gets one more communicator
// per ordered pair of its ranks: see PointToPoint.cpp for why. All are
// non-blocking (ncclConfig_t::blocking = 0): an NCCL call may return
// ncclInProgress, and the communicator is polled (ncclCommGetAsyncError)
// until it settles, under the same WEFT_COMM_TIMEOUT as every host wait.
//
// Lanes and streams. Each communicator is a Lane with a CUDA stream of its
// own (created on first use, highest priority, so a collective's blocks are
// scheduled ahead of waiting compute blocks). A kernel call enqueues its
// work on its lane's stream after an event recorded on the compute stream
// (weft::cuda::computeStream()), so it reads what the compute kernels before
// it wrote and writes nothing they still read; its completion is another
// event. A synchronous collective makes the compute stream wait for that
// event at once; a *_start keeps it in its slot and comm_wait makes the
// compute stream wait for it: no host thread ever blocks on a transfer.
// Operations on different communicators progress independently, as the CPU
// backend's non-blocking requests do: one lane per communicator, not one
// stream for all, so a synchronous tensor-parallel all_reduce never queues
// behind a data-parallel gradient all_reduce still in flight.
//
// Scratch. Packing, the copies a *_start keeps of its operand and transfer
// headers use a stream-ordered memory pool of this library's own (never
// weft::cuda::scratch(), which the compute kernels own): allocated on the
// stream that fills it, freed on the lane stream after the last use. The
// pool never reuses memory by adding a dependency of its own (that could
// make the compute stream wait for a transfer that waits for a peer) and
// keeps what it grew (a trim or cudaFree may synchronize the device, which
// would wait for NCCL kernels that wait for other ranks).
//
// Watchdog. Every enqueued operation is recorded with its kernel, lane and
// time; a thread (NcclWatchdog.cpp) polls the completion events and each
// communicator's asynchronous error. An operation unfinished after
// WEFT_COMM_TIMEOUT seconds (from when it was enqueued or its lane's
// previous operation finished, whichever is later), an NCCL error or a
// failed GPU makes it print one line naming the kernel, the group and this
// rank, ncclCommAbort every communicator and stop the job with exit code 1
// (weft::comm::abortAll: MPI_Abort under MPI, closed sockets under TCP), so
// a rank that dies or diverges gives a clear error instead of a hang.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_COMM_NCCL_NCCLCOMM_H
#define WEFT_RUNTIME_COMM_NCCL_NCCLCOMM_H

#include "../CollectiveCall.h"
#include "runtime/comm/nccl/NcclKernels.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace weft {
namespace nccl {

using Clock = std::chrono::steady_clock;

/// A CUDA event shared by whoever still waits on it (a slot, the
/// watchdog); it goes back to DeviceComm's pool with the last reference.
using EventRef = std::shared_ptr<CUevent_st>;

/// One NCCL communicator and the stream its operations run on.
struct Lane {
  ncclComm_t comm = nullptr;
  int rank = 0; ///< this rank's index in it (its group index)
  int size = 1;
  int32_t index = 0; ///< position in DeviceComm's list, for the watchdog
  std::string name;  ///< "mesh axes [0] (ranks 0,1)", for messages
  cudaStream_t stream = nullptr; ///< DeviceComm::streamOf makes it
  /// The device error code of a transfer that arrived out of order
  /// (registered at start; CudaRuntime.h's registerDeviceError).
  int transferErrorCode = 0;

  /// An enqueued operation the watchdog watches (DeviceComm::mutex_).
  struct Pending {
    EventRef done;
    const char *kernel;
    Clock::time_point enqueued;
  };
  std::deque<Pending> pending;
  /// When the watchdog last saw an operation of this lane finish.
  Clock::time_point lastDone;
};

/// This process's NCCL state (one per process, never destroyed).
class DeviceComm {
public:
  static DeviceComm &get();

  /// weft_rt_device_comm_start / _finish.
  void start();
  void finish();

  /// Whether a group of `g` ranks goes through NCCL: more than one rank,
  /// or a single-rank run with WEFT_NCCL_FORCE=1, which makes a one-rank
  /// NCCL communicator for every group (the tests use it to run the NCCL
  /// paths on one GPU). Otherwise a group of one rank copies.
  bool viaNccl(int64_t g) const { return g > 1 || (active_ && forceSelf_); }

  /// The lane of the call's group (viaNccl() holds for its size), whose
  /// mesh axes follow its first `leading` attributes; fails naming the call
  /// when the communicators were not started.
  Lane &groupLane(const comm::CollectiveCall &call, int64_t leading);
  /// The lane that carries transfers from world rank `from` to world rank
  /// `to` (a pair of the pipeline axis); null when there is none.
  Lane *transferLane(int64_t from, int64_t to);
  /// The lane's stream, created on first use.
  cudaStream_t streamOf(Lane &lane);

  /// This rank in the world (for messages).
  int64_t worldRank() const { return worldRank_; }

  /// Device memory from the pool, usable in the order of `stream`; at
  /// least one byte. `what` names the kernel in a failure.
  void *allocate(size_t bytes, cudaStream_t stream, const char *what);
  /// Gives memory from allocate() back once `stream` gets there.
  void release(void *ptr, cudaStream_t stream);
  /// Enqueues a device copy on the compute stream (nothing when the two
  /// are the same buffer or bytes is 0).
  void copyOnCompute(void *dst, const void *src, int64_t bytes,
                     const char *kernel);

  /// An event from the pool.
  EventRef newEvent();
  /// Records on the compute stream the event every lane work waits for
  /// first, and returns it.
  cudaEvent_t markCompute(const char *kernel);
  /// Makes the compute stream wait for `done` (nothing when null).
  void computeWaits(const EventRef &done, const char *kernel);
  /// Hands an enqueued operation of `lane` to the watchdog.
  void watch(Lane &lane, EventRef done, const char *kernel);

  /// The *_start kernels' collectives in flight, by slot. The checks
  /// (a slot started twice, a wait without a start or with another buffer,
  /// the executor's "every slot waited for" at the end of a run) are the
  /// host Context's: it holds an empty Request for each slot.
  void startSlot(int64_t slot, void *result, const char *kernel, EventRef done);
  void waitSlot(int64_t slot, const void *result);

  /// Checks the result of an NCCL call or group (`what` names it, a
  /// kernel when `isKernel`; `lane` its communicator) and, when it is
  /// ncclInProgress, polls the communicator until NCCL has enqueued the
  /// work; aborts the job on an error or past WEFT_COMM_TIMEOUT.
  void settle(ncclResult_t result, Lane &lane, const char *what,
              bool isKernel = true);
  /// Aborts the job naming `what` unless `err` is cudaSuccess.
  void checkCuda(cudaError_t err, const char *what);

  /// The page-locked record of a transfer that arrived out of order (its
  /// device view, for checkHeader).
  TransferMismatch *mismatchRecord() const { return mismatchDevice_; }

  /// Prints "weft: error: rank R: <message>", aborts every communicator
  /// and stops the job (exit code 1). Only the first caller gets through;
  /// another thread calling it waits for the exit.
  [[noreturn]] void abortAll(const std::string &message);

private:
  friend class Watchdog;
  DeviceComm() = default;

  Lane &addLane(std::string name);
  void createWorld();
  void createGroups();
  void createTransferLanes();
  void connectTransferLanes();
  /// Polls `comm` until it settles (after an init or a split).
  void waitReady(ncclComm_t comm, const std::string &what);
  /// Checks that NCCL put this rank where the split asked for.
  void expectPlace(const Lane &lane, int rank, int size);
  /// Waits (polling, under WEFT_COMM_TIMEOUT) until `stream` is idle.
  void drain(cudaStream_t stream, const char *what);
  void destroyAll();

  bool active_ = false;    ///< start() ran (and finish() did not)
  bool ncclUp_ = false;    ///< NCCL communicators exist
  bool forceSelf_ = false; ///< WEFT_NCCL_FORCE=1 on a single rank
  int device_ = 0;
  int64_t worldRank_ = 0, worldSize_ = 1;

  std::vector<std::unique_ptr<Lane>> lanes_; ///< in creation order
  Lane *world_ = nullptr;
  /// Canonical axes (extent > 1, as listed) -> lane.
  std::map<std::vector<int64_t>, Lane *> groups_;
  /// (from world rank, to world rank) -> lane of the pipeline axis.
  std::map<std::pair<int64_t, int64_t>, Lane *> transfers_;

  cudaMemPool_t pool_ = nullptr;
  cudaEvent_t computeMark_ = nullptr;
  TransferMismatch *mismatchHost_ = nullptr, *mismatchDevice_ = nullptr;

  std::mutex eventsMutex_;
  std::vector<cudaEvent_t> freeEvents_;

  std::map<int64_t, EventRef> slots_;

  /// Guards every lane's `pending` and `lastDone`.
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread watchdog_;
};

/// The mesh axes of a collective call, after its first `leading`
/// attributes (CollectiveCall checked them).
struct CallAxes {
  const int64_t *axes;
  int64_t count;
};
CallAxes axesOf(const comm::CollectiveCall &call, int64_t leading);

/// The watchdog thread's body (NcclWatchdog.cpp).
class Watchdog {
public:
  static void run(DeviceComm &dc);
  /// One pass: aborts the job when something is wrong.
  static void check(DeviceComm &dc);
};

/// Set at exit (atexit): the CUDA runtime is going away, so the watchdog
/// stops looking instead of reporting the errors that teardown causes.
extern std::atomic<bool> gExiting;

/// One kernel call's work on a lane: its stream waits for the compute
/// stream's work so far; finish() records its completion.
class LaneWork {
public:
  LaneWork(DeviceComm &dc, Lane &lane, const char *kernel);
  LaneWork(const LaneWork &) = delete;
  LaneWork &operator=(const LaneWork &) = delete;

  Lane &lane() const { return lane_; }
  cudaStream_t stream() const { return stream_; }
  const char *kernel() const { return kernel_; }

  /// Device scratch on this lane's stream, freed when the work finishes.
  void *scratch(int64_t bytes);
  /// Takes over memory that allocate() gave on the compute stream before
  /// this work started (what a *_start copied): freed when it finishes.
  void adopt(void *computeScratch);

  /// Enqueues the NCCL calls of `calls` (a function returning the first
  /// failed ncclResult_t, or ncclSuccess) as one NCCL group and returns
  /// once NCCL has put them on the stream.
  template <class F> void group(F &&calls) {
    ncclResult_t result = ncclGroupStart();
    if (result == ncclSuccess) {
      ncclResult_t first = calls();
      // The group is closed whatever happened inside it.
      ncclResult_t end = ncclGroupEnd();
      result = first != ncclSuccess && first != ncclInProgress ? first : end;
    }
    dc_.settle(result, lane_, kernel_);
  }

  /// Frees the scratch (in stream order), records the completion event,
  /// hands it to the watchdog and returns it.
  EventRef finish();

private:
  DeviceComm &dc_;
  Lane &lane_;
  const char *kernel_;
  cudaStream_t stream_;
  std::vector<void *> scratch_;
};

} // namespace nccl
} // namespace weft

#endif // WEFT_RUNTIME_COMM_NCCL_NCCLCOMM_H
