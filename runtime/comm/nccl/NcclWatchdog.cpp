//===- NcclWatchdog.cpp - No NCCL operation waits forever -----------------===//
//
// The host never blocks on an NCCL operation (NcclComm.h): the collectives
// only enqueue, and what waits for them is the compute stream, or the
// executor synchronizing with the GPU. A rank whose peer died would wait
// there forever, so a thread watches instead. Every 100 ms it
//
//   - reads the record a receive leaves when the message it got is not the
//     one it expects (the ranks issue their transfers in different orders),
//   - asks every communicator for its asynchronous error (a peer that went
//     away, a network failure: ncclCommGetAsyncError),
//   - queries the completion event of the oldest operation of each lane:
//     one unfinished WEFT_COMM_TIMEOUT seconds (default 300, as every host
//     wait) after it was enqueued, or after the lane's previous operation
//     finished if that came later, has hung; an error there is a failed GPU.
//
// Any of these prints one line naming the kernel, its group and this rank,
// aborts every communicator (ncclCommAbort makes NCCL's kernels give up)
// and stops the job with exit code 1 (DeviceComm::abortAll), as the host
// watchdog (runtime/comm/Watchdog.cpp) does for the CPU collectives.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/nccl/NcclComm.h"

#include "../CommInternal.h"

#include <algorithm>
#include <cstdio>

namespace weft {
namespace nccl {

namespace {

std::string seconds(double s) {
  char text[64];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

std::string oneDecimal(double s) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f", s);
  return text;
}

} // namespace

void Watchdog::run(DeviceComm &dc) {
  // Events and communicators belong to the rank's device.
  if (cudaSetDevice(dc.device_) != cudaSuccess)
    (void)cudaGetLastError();
  std::unique_lock<std::mutex> lock(dc.mutex_);
  while (!dc.stop_) {
    dc.wake_.wait_for(lock, std::chrono::milliseconds(100));
    if (dc.stop_ || gExiting)
      return;
    lock.unlock();
    check(dc);
    lock.lock();
  }
}

void Watchdog::check(DeviceComm &dc) {
  if (gExiting)
    return;

  // A receive that got another message than it expects.
  const volatile TransferMismatch *m = dc.mismatchHost_;
  if (m && m->found) {
    const int32_t lane = m->lane;
    const std::string name =
        lane >= 0 && lane < static_cast<int32_t>(dc.lanes_.size())
            ? dc.lanes_[lane]->name
            : std::string("a pipeline group");
    dc.abortAll("a receive over " + name + " expects the message of tag " +
                std::to_string(m->expectedTag) + " (" +
                std::to_string(m->expectedBytes) +
                " bytes) but the next one sent has tag " +
                std::to_string(m->gotTag) + " (" + std::to_string(m->gotBytes) +
                " bytes): the two ranks issue their sends and receives to "
                "each other in different orders");
  }

  // NCCL's asynchronous errors.
  for (const std::unique_ptr<Lane> &lane : dc.lanes_) {
    if (!lane->comm)
      continue;
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(lane->comm, &state) != ncclSuccess ||
        state == ncclSuccess || state == ncclInProgress)
      continue;
    if (gExiting)
      return;
    std::string during;
    {
      std::lock_guard<std::mutex> lock(dc.mutex_);
      if (!lane->pending.empty())
        during = std::string(" while kernel ") + lane->pending.front().kernel +
                 " was in flight";
    }
    std::string text = ncclGetErrorString(state);
    const char *last = ncclGetLastError(lane->comm);
    if (last && *last)
      text += std::string(": ") + last;
    dc.abortAll("NCCL reported an error on " + lane->name + during + ": " +
                text + " (a rank may have died)");
  }

  // Completion, hangs and GPU failures.
  const double limit = comm::commTimeoutSeconds();
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(dc.mutex_);
    const Clock::time_point now = Clock::now();
    for (const std::unique_ptr<Lane> &lane : dc.lanes_) {
      while (!lane->pending.empty() && failure.empty()) {
        Lane::Pending &head = lane->pending.front();
        cudaError_t err = cudaEventQuery(head.done.get());
        if (err == cudaSuccess) {
          lane->lastDone = now;
          lane->pending.pop_front();
          continue;
        }
        if (err == cudaErrorNotReady) {
          const Clock::time_point since =
              std::max(head.enqueued, lane->lastDone);
          const double waited =
              std::chrono::duration<double>(now - since).count();
          if (waited > limit)
            failure = std::string("kernel ") + head.kernel + " over " +
                      lane->name + " did not finish within " + seconds(limit) +
                      " s (waited " + oneDecimal(waited) +
                      " s); a rank may have died or diverged "
                      "(WEFT_COMM_TIMEOUT)";
          break;
        }
        if (err == cudaErrorCudartUnloading)
          return; // the process is exiting
        failure = std::string("the GPU failed while kernel ") + head.kernel +
                  " over " + lane->name + " was in flight: CUDA error " +
                  cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
      }
      if (!failure.empty())
        break;
    }
  }
  if (!failure.empty() && !gExiting)
    dc.abortAll(failure);
}

} // namespace nccl
} // namespace weft
