//===- NcclComm.cpp - This rank's NCCL communicators, streams and slots ---===//
//
// Starting and finishing the NCCL side (weft_rt_device_comm_start /
// _finish), the lanes, the scratch pool, events and slots. NcclComm.h
// describes the design.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/nccl/NcclComm.h"

#include "../CommInternal.h"
#include "runtime/cuda/CudaRuntime.h"
#include "weft/runtime/MeshIndex.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sched.h>

namespace weft {
namespace nccl {

std::atomic<bool> gExiting{false};

namespace {

/// ncclCommSplit came with NCCL 2.18.
constexpr int kMinNcclVersion = 21800;

std::string versionText(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) +
         "." + std::to_string(code % 100);
}

/// "unhandled system error: <NCCL's last message>".
std::string ncclText(ncclResult_t result, ncclComm_t comm) {
  std::string s = ncclGetErrorString(result);
  const char *last = ncclGetLastError(comm);
  if (last && *last)
    s += std::string(": ") + last;
  return s;
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

ncclConfig_t nonBlockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

/// The partner of index `i` in round `round` of a round-robin over `n`
/// (even) slots, the circle method: n - 1 stays put, the others turn.
int64_t roundPartner(int64_t i, int64_t round, int64_t n) {
  if (i == n - 1)
    return round;
  if (i == round)
    return n - 1;
  return ((2 * round - i) % (n - 1) + (n - 1)) % (n - 1);
}

} // namespace

DeviceComm &DeviceComm::get() {
  // Never destroyed: a thread of it may still run while the process exits.
  static DeviceComm *dc = new DeviceComm();
  return *dc;
}

//===----------------------------------------------------------------------===//
// Start and finish
//===----------------------------------------------------------------------===//

void DeviceComm::start() {
  if (active_)
    return;
  cuda::requireDevice();
  device_ = cuda::device();
  cuda::check(cudaSetDevice(device_), "selecting the rank's GPU for NCCL");
  comm::Context &context = comm::context();
  worldRank_ = context.rank();
  worldSize_ = context.size();
  const char *force = std::getenv("WEFT_NCCL_FORCE");
  forceSelf_ = worldSize_ == 1 && force && std::strcmp(force, "1") == 0;
  active_ = true;
  // One rank, every group of one rank: the kernels copy, NCCL is not needed.
  if (worldSize_ == 1 && !forceSelf_)
    return;

  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || version < kMinNcclVersion)
    abortAll("the NCCL collectives need NCCL 2.18 or newer (ncclCommSplit); "
             "this process loaded NCCL " +
             versionText(version));
  int pools = 0;
  checkCuda(
      cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device_),
      "reading the GPU's attributes");
  if (!pools)
    abortAll("GPU " + std::to_string(device_) +
             " has no stream-ordered memory pools (cudaMallocAsync), which "
             "the NCCL collectives use for their scratch");
  cudaMemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device_;
  checkCuda(cudaMemPoolCreate(&pool_, &props),
            "creating the NCCL scratch pool");
  // Keep what the pool grew (a trim could synchronize the device), and never
  // let a reuse add a dependency between two streams (the compute stream
  // would wait for a transfer that waits for another rank).
  uint64_t keep = std::numeric_limits<uint64_t>::max();
  int noHiddenDependencies = 0;
  checkCuda(
      cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep),
      "configuring the NCCL scratch pool");
  checkCuda(cudaMemPoolSetAttribute(pool_,
                                    cudaMemPoolReuseAllowInternalDependencies,
                                    &noHiddenDependencies),
            "configuring the NCCL scratch pool");
  checkCuda(cudaEventCreateWithFlags(&computeMark_, cudaEventDisableTiming),
            "creating an event");
  void *record = nullptr;
  checkCuda(
      cudaHostAlloc(&record, sizeof(TransferMismatch), cudaHostAllocMapped),
      "allocating page-locked memory for the transfer checks");
  std::memset(record, 0, sizeof(TransferMismatch));
  mismatchHost_ = static_cast<TransferMismatch *>(record);
  void *view = nullptr;
  checkCuda(cudaHostGetDevicePointer(&view, record, 0),
            "mapping page-locked memory for the transfer checks");
  mismatchDevice_ = static_cast<TransferMismatch *>(view);
  // Allocated now: later its cudaMalloc could wait for NCCL kernels.
  (void)cuda::errorWord();

  createWorld();
  createGroups();
  createTransferLanes();
  for (const std::unique_ptr<Lane> &lane : lanes_) {
    std::string message =
        "a transfer over " + lane->name +
        " received another message than the receive expects (another tag "
        "or size): the two ranks issue their sends and receives to each "
        "other in different orders";
    lane->transferErrorCode = cuda::registerDeviceError(message.c_str());
  }
  connectTransferLanes();
  ncclUp_ = true;

  static bool atExit = false;
  if (!atExit) {
    atExit = true;
    std::atexit([] { gExiting = true; });
  }
  stop_ = false;
  watchdog_ = std::thread(Watchdog::run, std::ref(*this));
}

void DeviceComm::finish() {
  if (!active_)
    return;
  if (ncclUp_) {
    // Everything enqueued finishes first (the watchdog still watches).
    for (const std::unique_ptr<Lane> &lane : lanes_)
      if (lane->stream)
        drain(lane->stream, ("the work over " + lane->name).c_str());
    Watchdog::check(*this);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (watchdog_.joinable())
      watchdog_.join();
    destroyAll();
  }
  slots_.clear();
  active_ = false;
  forceSelf_ = false;
}

void DeviceComm::destroyAll() {
  slots_.clear();
  for (const std::unique_ptr<Lane> &lane : lanes_)
    lane->pending.clear();
  // Finalized in one order on every rank (NCCL may synchronize with the
  // peers there): the last created first, the world last.
  for (auto it = lanes_.rbegin(); it != lanes_.rend(); ++it) {
    Lane &lane = **it;
    if (!lane.comm)
      continue;
    ncclResult_t result = ncclCommFinalize(lane.comm);
    if (result != ncclSuccess && result != ncclInProgress)
      abortAll("finishing the NCCL communicator of " + lane.name + ": " +
               ncclText(result, lane.comm));
    waitReady(lane.comm, "finishing the NCCL communicator of " + lane.name);
  }
  for (auto it = lanes_.rbegin(); it != lanes_.rend(); ++it) {
    Lane &lane = **it;
    if (lane.comm) {
      ncclResult_t result = ncclCommDestroy(lane.comm);
      if (result != ncclSuccess && result != ncclInProgress)
        abortAll("destroying the NCCL communicator of " + lane.name + ": " +
                 ncclText(result, nullptr));
      lane.comm = nullptr;
    }
    if (lane.stream)
      checkCuda(cudaStreamDestroy(lane.stream), "destroying a stream");
    lane.stream = nullptr;
  }
  groups_.clear();
  transfers_.clear();
  world_ = nullptr;
  lanes_.clear();
  {
    std::lock_guard<std::mutex> lock(eventsMutex_);
    for (cudaEvent_t event : freeEvents_)
      checkCuda(cudaEventDestroy(event), "destroying an event");
    freeEvents_.clear();
  }
  checkCuda(cudaEventDestroy(computeMark_), "destroying an event");
  computeMark_ = nullptr;
  checkCuda(cudaFreeHost(mismatchHost_), "freeing page-locked memory");
  mismatchHost_ = mismatchDevice_ = nullptr;
  // Memory still in flight is released when its frees complete.
  checkCuda(cudaMemPoolDestroy(pool_), "destroying the NCCL scratch pool");
  pool_ = nullptr;
  ncclUp_ = false;
}

//===----------------------------------------------------------------------===//
// Communicators
//===----------------------------------------------------------------------===//

Lane &DeviceComm::addLane(std::string name) {
  lanes_.push_back(std::make_unique<Lane>());
  Lane &lane = *lanes_.back();
  lane.index = static_cast<int32_t>(lanes_.size() - 1);
  lane.name = std::move(name);
  return lane;
}

void DeviceComm::createWorld() {
  comm::Context &context = comm::context();
  Lane &world = addLane(context.world().name());
  // Rank 0 makes the id; the host world carries it to the others.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (worldRank_ == 0) {
    ncclResult_t result = ncclGetUniqueId(&id);
    if (result != ncclSuccess)
      abortAll("making the NCCL unique id: " + ncclText(result, nullptr));
  }
  if (worldSize_ > 1)
    context.world().broadcast(&id, static_cast<int64_t>(sizeof id), WEFT_U8, 0);
  ncclConfig_t config = nonBlockingConfig();
  ncclResult_t result =
      ncclCommInitRankConfig(&world.comm, static_cast<int>(worldSize_), id,
                             static_cast<int>(worldRank_), &config);
  if (result != ncclSuccess && result != ncclInProgress)
    abortAll("starting the NCCL communicator of " + world.name + ": " +
             ncclText(result, world.comm));
  waitReady(world.comm, "starting the NCCL communicator of " + world.name);
  world.rank = static_cast<int>(worldRank_);
  world.size = static_cast<int>(worldSize_);
  expectPlace(world, world.rank, world.size);
  world_ = &world;
}

void DeviceComm::createGroups() {
  comm::Mesh &mesh = comm::context().mesh();
  const std::vector<int64_t> &shape = mesh.shape();
  const int64_t n = static_cast<int64_t>(shape.size());
  // Every axis of extent > 1, in mesh order: the world's own order.
  std::vector<int64_t> all;
  for (int64_t a = 0; a < n; ++a)
    if (shape[a] > 1)
      all.push_back(a);
  if (!all.empty())
    groups_[all] = world_;

  auto split = [&](const std::vector<int64_t> &axes) {
    // color: the linear index over the other axes; key: the group index.
    const int64_t color =
        meshGroupColor(worldRank_, shape, axes.data(), axes.size());
    const int64_t key = mesh.groupIndex(axes.data(), axes.size());
    const int64_t size = mesh.groupSize(axes.data(), axes.size());
    Lane &lane = addLane(mesh.groupName(axes.data(), axes.size()));
    ncclConfig_t config = nonBlockingConfig();
    ncclResult_t result =
        ncclCommSplit(world_->comm, static_cast<int>(color),
                      static_cast<int>(key), &lane.comm, &config);
    if (result != ncclSuccess && result != ncclInProgress)
      abortAll("splitting the NCCL communicator of " + lane.name +
               " off the world: " + ncclText(result, world_->comm));
    waitReady(world_->comm, "splitting the NCCL communicator of " + lane.name +
                                " off " + "the world");
    if (!lane.comm)
      abortAll("NCCL made no communicator for " + lane.name);
    waitReady(lane.comm, "starting the NCCL communicator of " + lane.name);
    lane.rank = static_cast<int>(key);
    lane.size = static_cast<int>(size);
    expectPlace(lane, lane.rank, lane.size);
    groups_[axes] = &lane;
  };

  // Every ordered choice of distinct axes, shortest first (Mesh's order),
  // reduced to its axes of extent > 1: the same list on every rank.
  forEachMeshAxisChoice(n, [&](const std::vector<int64_t> &axes) {
    std::vector<int64_t> canonical;
    for (int64_t a : axes)
      if (shape[a] > 1)
        canonical.push_back(a);
    if (!canonical.empty() && !groups_.count(canonical))
      split(canonical);
  });
}

void DeviceComm::createTransferLanes() {
  comm::Mesh &mesh = comm::context().mesh();
  const std::vector<int64_t> &shape = mesh.shape();
  const std::vector<std::string> &names = mesh.axisNames();
  const std::vector<int64_t> mine = mesh.coordinates(worldRank_);
  for (int64_t a = 0; a < static_cast<int64_t>(shape.size()); ++a) {
    if (a >= static_cast<int64_t>(names.size()) || names[a] != "pp" ||
        shape[a] < 2)
      continue;
    Lane &parent = *groups_.at({a});
    const int64_t g = shape[a], i = mine[a];
    const std::vector<int64_t> members = mesh.groupMembers(&a, 1);
    // Rounds of a round-robin: in each, every rank of the axis is paired
    // with at most one other, and each pair splits off two communicators,
    // one per direction, in one ncclCommSplit per direction (color: the
    // pair; key 0: the sender). 2(g-1) splits for g even, 2g for g odd.
    const int64_t slots = g + g % 2;
    for (int64_t round = 0; round + 1 < slots; ++round) {
      const int64_t p = roundPartner(i, round, slots);
      for (int direction = 0; direction < 2; ++direction) {
        ncclConfig_t config = nonBlockingConfig();
        if (p >= g) { // no partner this round: a bye
          ncclComm_t none = nullptr;
          ncclResult_t result =
              ncclCommSplit(parent.comm, NCCL_SPLIT_NOCOLOR, 0, &none, &config);
          if (result != ncclSuccess && result != ncclInProgress)
            abortAll("splitting the pipeline transfers off " + parent.name +
                     ": " + ncclText(result, parent.comm));
          waitReady(parent.comm,
                    "splitting the pipeline transfers off " + parent.name);
          if (none)
            (void)ncclCommDestroy(none);
          continue;
        }
        const int64_t low = std::min(i, p), high = std::max(i, p);
        const int64_t sender = direction == 0 ? low : high;
        const int64_t receiver = direction == 0 ? high : low;
        const int key = i == sender ? 0 : 1;
        Lane &lane = addLane("the transfers from rank " +
                             std::to_string(members[sender]) + " to rank " +
                             std::to_string(members[receiver]) +
                             " (mesh axis " + std::to_string(a) + ")");
        ncclResult_t result = ncclCommSplit(parent.comm, static_cast<int>(low),
                                            key, &lane.comm, &config);
        if (result != ncclSuccess && result != ncclInProgress)
          abortAll("splitting the NCCL communicator of " + lane.name + " off " +
                   parent.name + ": " + ncclText(result, parent.comm));
        waitReady(parent.comm, "splitting the NCCL communicator of " +
                                   lane.name + " off " + parent.name);
        if (!lane.comm)
          abortAll("NCCL made no communicator for " + lane.name);
        waitReady(lane.comm, "starting the NCCL communicator of " + lane.name);
        lane.rank = key;
        lane.size = 2;
        expectPlace(lane, lane.rank, lane.size);
        transfers_[{members[sender], members[receiver]}] = &lane;
      }
    }
  }
}

// NCCL connects two ranks on their first transfer, inside the enqueue: a
// non-blocking communicator settles only once the peer enqueues its side
// too. Left to the first real transfer, that would make this host thread
// wait for another rank's host thread mid-step; connecting every pair now,
// one pair at a time in one order on every rank, cannot deadlock and keeps
// the steps free of such waits.
void DeviceComm::connectTransferLanes() {
  if (transfers_.empty())
    return;
  cudaStream_t stream = nullptr;
  checkCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            "creating a stream");
  void *byte = allocate(1, stream, "connecting the pipeline transfers");
  for (const auto &entry : transfers_) {
    const bool sending = entry.first.first == worldRank_;
    if (!sending && entry.first.second != worldRank_)
      continue;
    Lane &lane = *entry.second;
    ncclResult_t result = ncclGroupStart();
    if (result == ncclSuccess) {
      ncclResult_t call =
          sending ? ncclSend(byte, 1, ncclUint8, 1, lane.comm, stream)
                  : ncclRecv(byte, 1, ncclUint8, 0, lane.comm, stream);
      ncclResult_t end = ncclGroupEnd();
      result = call != ncclSuccess && call != ncclInProgress ? call : end;
    }
    settle(result, lane, "connecting", /*isKernel=*/false);
  }
  release(byte, stream);
  drain(stream, "connecting the pipeline transfers");
  checkCuda(cudaStreamDestroy(stream), "destroying a stream");
}

void DeviceComm::waitReady(ncclComm_t comm, const std::string &what) {
  const double limit = comm::commTimeoutSeconds();
  const Clock::time_point start = Clock::now();
  for (uint64_t polls = 0;; ++polls) {
    ncclResult_t state = ncclInProgress;
    ncclResult_t result = ncclCommGetAsyncError(comm, &state);
    if (result != ncclSuccess)
      abortAll(what + ": " + ncclText(result, comm));
    if (state == ncclSuccess)
      return;
    if (state != ncclInProgress)
      abortAll(what + ": " + ncclText(state, comm));
    if ((polls & 63) == 63 && secondsSince(start) > limit) {
      char text[64];
      std::snprintf(text, sizeof text, "%g", limit);
      abortAll(what + " did not finish within " + text +
               " s; a rank may have died or diverged (WEFT_COMM_TIMEOUT)");
    }
    // Oversubscribed ranks share cores: give them up while waiting.
    if (polls < 256)
      sched_yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void DeviceComm::expectPlace(const Lane &lane, int rank, int size) {
  int gotRank = -1, gotSize = -1;
  if (ncclCommUserRank(lane.comm, &gotRank) != ncclSuccess ||
      ncclCommCount(lane.comm, &gotSize) != ncclSuccess || gotRank != rank ||
      gotSize != size)
    abortAll("internal error: NCCL placed this rank at " +
             std::to_string(gotRank) + " of " + std::to_string(gotSize) +
             " in " + lane.name + ", not at " + std::to_string(rank) + " of " +
             std::to_string(size));
}

void DeviceComm::settle(ncclResult_t result, Lane &lane, const char *what,
                        bool isKernel) {
  if (result == ncclSuccess)
    return;
  std::string where = (isKernel ? std::string("kernel ") : std::string()) +
                      what + " over " + lane.name;
  if (result == ncclInProgress) {
    waitReady(lane.comm, where);
    return;
  }
  abortAll(where + ": NCCL failed: " + ncclText(result, lane.comm));
}

CallAxes axesOf(const comm::CollectiveCall &call, int64_t leading) {
  const int64_t count = call.attr(leading);
  return {call.args().attrArray(leading + 1, count), count};
}

Lane &DeviceComm::groupLane(const comm::CollectiveCall &call, int64_t leading) {
  if (!ncclUp_)
    call.fail("the NCCL communicators are not started "
              "(weft_rt_device_comm_start was not called)");
  if (forceSelf_ && call.groupSize() == 1)
    return *world_;
  const std::vector<int64_t> &shape = comm::context().mesh().shape();
  std::vector<int64_t> key;
  const CallAxes axes = axesOf(call, leading);
  for (int64_t i = 0; i < axes.count; ++i) {
    const int64_t a = axes.axes[i];
    if (a < static_cast<int64_t>(shape.size()) && shape[a] > 1)
      key.push_back(a);
  }
  auto found = groups_.find(key);
  if (found == groups_.end())
    call.fail("internal error: no NCCL communicator for this group");
  return *found->second;
}

Lane *DeviceComm::transferLane(int64_t from, int64_t to) {
  auto found = transfers_.find({from, to});
  return found == transfers_.end() ? nullptr : found->second;
}

cudaStream_t DeviceComm::streamOf(Lane &lane) {
  if (!lane.stream) {
    int least = 0, greatest = 0;
    checkCuda(cudaDeviceGetStreamPriorityRange(&least, &greatest),
              "reading the stream priorities");
    checkCuda(cudaStreamCreateWithPriority(&lane.stream, cudaStreamNonBlocking,
                                           greatest),
              "creating a stream for NCCL");
  }
  return lane.stream;
}

//===----------------------------------------------------------------------===//
// Memory, events, slots
//===----------------------------------------------------------------------===//

void *DeviceComm::allocate(size_t bytes, cudaStream_t stream,
                           const char *what) {
  void *ptr = nullptr;
  cudaError_t err =
      cudaMallocFromPoolAsync(&ptr, std::max<size_t>(bytes, 1), pool_, stream);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    abortAll(std::string(what) + ": cannot allocate " + std::to_string(bytes) +
             " bytes of GPU scratch for NCCL: " + cudaGetErrorString(err));
  }
  return ptr;
}

void DeviceComm::release(void *ptr, cudaStream_t stream) {
  if (ptr)
    checkCuda(cudaFreeAsync(ptr, stream), "freeing GPU scratch of NCCL");
}

void DeviceComm::copyOnCompute(void *dst, const void *src, int64_t bytes,
                               const char *kernel) {
  if (dst == src || bytes <= 0)
    return;
  cudaError_t err =
      cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes),
                      cudaMemcpyDeviceToDevice, cuda::computeStream());
  if (err != cudaSuccess)
    checkCuda(err,
              (std::string("kernel ") + kernel + ": a device copy").c_str());
}

EventRef DeviceComm::newEvent() {
  cudaEvent_t event = nullptr;
  {
    std::lock_guard<std::mutex> lock(eventsMutex_);
    if (!freeEvents_.empty()) {
      event = freeEvents_.back();
      freeEvents_.pop_back();
    }
  }
  if (!event)
    checkCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
              "creating an event");
  // Back to the pool with the last reference (a slot's or the watchdog's).
  return EventRef(event, [this](cudaEvent_t e) {
    std::lock_guard<std::mutex> lock(eventsMutex_);
    freeEvents_.push_back(e);
  });
}

cudaEvent_t DeviceComm::markCompute(const char *kernel) {
  // One event serves every lane: a wait enqueued on it keeps the record it
  // saw, so recording it again at the next call changes nothing there.
  cudaError_t err = cudaEventRecord(computeMark_, cuda::computeStream());
  if (err != cudaSuccess)
    checkCuda(err, (std::string("kernel ") + kernel +
                    ": ordering NCCL after the compute stream")
                       .c_str());
  return computeMark_;
}

void DeviceComm::computeWaits(const EventRef &done, const char *kernel) {
  if (!done)
    return;
  cudaError_t err = cudaStreamWaitEvent(cuda::computeStream(), done.get(), 0);
  if (err != cudaSuccess)
    checkCuda(err, (std::string("kernel ") + kernel +
                    ": ordering the compute stream after NCCL")
                       .c_str());
}

void DeviceComm::watch(Lane &lane, EventRef done, const char *kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  lane.pending.push_back({std::move(done), kernel, Clock::now()});
}

void DeviceComm::startSlot(int64_t slot, void *result, const char *kernel,
                           EventRef done) {
  comm::context().startSlot(slot, comm::Request(), result, kernel);
  slots_[slot] = std::move(done);
}

void DeviceComm::waitSlot(int64_t slot, const void *result) {
  comm::context().waitSlot(slot, result, "comm_wait");
  auto found = slots_.find(slot);
  if (found == slots_.end())
    return;
  computeWaits(found->second, "comm_wait");
  slots_.erase(found);
}

void DeviceComm::drain(cudaStream_t stream, const char *what) {
  const double limit = comm::commTimeoutSeconds();
  const Clock::time_point start = Clock::now();
  for (uint64_t polls = 0;; ++polls) {
    cudaError_t err = cudaStreamQuery(stream);
    if (err == cudaSuccess)
      return;
    if (err != cudaErrorNotReady)
      checkCuda(err, what);
    if ((polls & 63) == 63 && secondsSince(start) > limit) {
      char text[64];
      std::snprintf(text, sizeof text, "%g", limit);
      abortAll(std::string(what) + " did not finish within " + text +
               " s; a rank may have died or diverged (WEFT_COMM_TIMEOUT)");
    }
    if (polls < 256)
      sched_yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

//===----------------------------------------------------------------------===//
// Failures
//===----------------------------------------------------------------------===//

void DeviceComm::checkCuda(cudaError_t err, const char *what) {
  if (err == cudaSuccess)
    return;
  (void)cudaGetLastError();
  abortAll(std::string(what) + ": CUDA error " + cudaGetErrorName(err) + " (" +
           cudaGetErrorString(err) + ")");
}

void DeviceComm::abortAll(const std::string &message) {
  static std::atomic<bool> aborting{false};
  if (aborting.exchange(true)) {
    // Another thread is stopping the job; it exits the process.
    for (;;)
      std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  std::fflush(stdout);
  std::fprintf(stderr, "weft: error: rank %lld: %s\n",
               static_cast<long long>(worldRank_), message.c_str());
  std::fflush(stderr);
  // ncclCommAbort tells NCCL's kernels to give up; should it hang anyway,
  // the job still stops.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(20));
    std::_Exit(kExitFailure);
  }).detach();
  for (auto it = lanes_.rbegin(); it != lanes_.rend(); ++it)
    if ((*it)->comm)
      (void)ncclCommAbort((*it)->comm);
  comm::abortAll(kExitFailure);
}

//===----------------------------------------------------------------------===//
// LaneWork
//===----------------------------------------------------------------------===//

LaneWork::LaneWork(DeviceComm &dc, Lane &lane, const char *kernel)
    : dc_(dc), lane_(lane), kernel_(kernel), stream_(dc.streamOf(lane)) {
  cudaError_t err = cudaStreamWaitEvent(stream_, dc.markCompute(kernel), 0);
  if (err != cudaSuccess)
    dc.checkCuda(err, (std::string("kernel ") + kernel +
                       ": ordering NCCL after the compute stream")
                          .c_str());
}

void *LaneWork::scratch(int64_t bytes) {
  void *ptr = dc_.allocate(static_cast<size_t>(bytes), stream_, kernel_);
  scratch_.push_back(ptr);
  return ptr;
}

void LaneWork::adopt(void *computeScratch) {
  if (computeScratch)
    scratch_.push_back(computeScratch);
}

EventRef LaneWork::finish() {
  for (void *ptr : scratch_)
    dc_.release(ptr, stream_);
  scratch_.clear();
  EventRef done = dc_.newEvent();
  cudaError_t err = cudaEventRecord(done.get(), stream_);
  if (err != cudaSuccess)
    dc_.checkCuda(err, (std::string("kernel ") + kernel_ +
                        ": recording the end of its NCCL work")
                           .c_str());
  dc_.watch(lane_, done, kernel_);
  return done;
}

} // namespace nccl
} // namespace weft

//===----------------------------------------------------------------------===//
// The executor's entry points
//===----------------------------------------------------------------------===//

extern "C" void weft_rt_device_comm_start(void) {
  weft::nccl::DeviceComm::get().start();
}

extern "C" void weft_rt_device_comm_finish(void) {
  weft::nccl::DeviceComm::get().finish();
}
