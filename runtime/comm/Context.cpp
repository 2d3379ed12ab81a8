//===- Context.cpp - The process-wide ranks of a run ----------------------===//
#include "CommInternal.h"

#include "weft/runtime/Diagnostics.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace weft {
namespace comm {

namespace {

std::unique_ptr<Communicator> singleRankWorld() {
  return makeSelfCommunicator(0, "the world (rank 0)");
}

std::string launcherName(LaunchInfo::Kind kind) {
  switch (kind) {
  case LaunchInfo::Kind::MpiRun:
    return "mpirun";
  case LaunchInfo::Kind::Srun:
    return "srun";
  case LaunchInfo::Kind::Torchrun:
    return "a torchrun-style launcher";
  case LaunchInfo::Kind::None:
    break;
  }
  return "no launcher";
}

} // namespace

Context::Context()
    : world_(singleRankWorld()), mesh_(new Mesh(*world_, {}, {})) {}

// A process that ends without finalize() (a fatal error) leaves MPI alone:
// MPI_Finalize would wait for ranks that may be stuck in a collective,
// while an exit without it makes the launcher stop the whole job.
Context::~Context() {
  if (active_) {
    (void)mesh_.release();
    (void)world_.release();
    (void)new std::map<int64_t, Slot>(std::move(slots_));
  }
}

bool Context::init(int64_t worldSize, const std::vector<int64_t> &meshShape,
                   const std::vector<std::string> &axisNames,
                   std::string &error) {
  if (active_) {
    error = "the ranks of this run were already started";
    return false;
  }
  std::vector<int64_t> shape = meshShape;
  if (shape.empty() && worldSize > 1)
    shape = {worldSize};
  int64_t devices = 1;
  for (int64_t d : shape) {
    if (d < 1) {
      error = "invalid mesh: an axis of size " + std::to_string(d);
      return false;
    }
    devices *= d;
  }
  if (devices != std::max<int64_t>(worldSize, 1)) {
    error = "the mesh has " + std::to_string(devices) +
            " devices but the world size is " + std::to_string(worldSize);
    return false;
  }
  if (worldSize <= 1) {
    mesh_.reset(new Mesh(*world_, shape, axisNames));
    return true;
  }

  launch_ = detectLaunch();
  if (!launch_.error.empty()) {
    error = launch_.error;
    return false;
  }
  const std::string n = std::to_string(worldSize);
  if (launch_.kind == LaunchInfo::Kind::None) {
    error = "this bundle runs on " + n + " ranks: start it with 'weft " +
            "run|train BUNDLE -n " + n + "' (mpirun), 'mpirun -n " + n +
            "', 'srun -n " + n + "' or a torchrun-style launcher (RANK, " +
            "WORLD_SIZE, MASTER_ADDR, MASTER_PORT)";
    return false;
  }
  std::unique_ptr<Communicator> world;
  if (launch_.kind == LaunchInfo::Kind::Torchrun) {
    // No MPI launcher: the ranks meet over TCP.
    if (launch_.size != worldSize) {
      error = "this bundle was compiled for " + n + " ranks but " +
              launch_.variables +
              (launch_.size == 0 ? " (WORLD_SIZE is not set)" : "") +
              " (recompile with --devices " +
              std::to_string(launch_.size > 0 ? launch_.size : worldSize) +
              ", or start " + n + ")";
      return false;
    }
    world = openTcpWorld(launch_.rank, worldSize, error);
  } else {
    world = openMpiWorld(worldSize, error);
  }
  if (!world)
    return false;
  mesh_.reset();
  world_ = std::move(world);
  mesh_.reset(new Mesh(*world_, {}, {}));
  active_ = true;
  const int64_t started = world_->size();
  if (launch_.size > 1 && started != launch_.size) {
    error = launcherName(launch_.kind) + " started " +
            std::to_string(launch_.size) + " ranks (" + launch_.variables +
            ") but MPI sees " + std::to_string(started) +
            ": is this MPI built for that launcher (for srun: --mpi=pmix)?";
    return false;
  }
  if (started != worldSize) {
    error = "this bundle was compiled for " + n + " ranks but " +
            std::to_string(started) + " were started (recompile with " +
            "--devices " + std::to_string(started) + ", or start " + n + ")";
    return false;
  }
  mesh_.reset(new Mesh(*world_, shape, axisNames));
  mesh_->createGroups();
  return true;
}

void Context::finalize() {
  if (!active_)
    return;
  slots_.clear(); // waits for any still in flight
  mesh_.reset();
  world_.reset();
  active_ = false;
  world_ = singleRankWorld();
  mesh_.reset(new Mesh(*world_, {}, {}));
}

void Context::startSlot(int64_t slot, Request request, void *result,
                        const char *kernel) {
  auto found = slots_.find(slot);
  if (found != slots_.end())
    fatal(kExitFailure,
          "kernel %s: slot %lld already has a collective in flight (started "
          "by %s and not yet waited for with comm_wait)",
          kernel, static_cast<long long>(slot), found->second.kernel);
  Slot &s = slots_[slot];
  s.request = std::move(request);
  s.result = result;
  s.kernel = kernel;
}

void Context::waitSlot(int64_t slot, const void *result, const char *kernel) {
  auto found = slots_.find(slot);
  if (found == slots_.end())
    fatal(kExitFailure, "kernel %s: no collective in flight on slot %lld",
          kernel, static_cast<long long>(slot));
  if (found->second.result != result)
    fatal(kExitFailure,
          "kernel %s: slot %lld: the operand is not the result buffer of "
          "the %s started on that slot",
          kernel, static_cast<long long>(slot), found->second.kernel);
  found->second.request.wait();
  slots_.erase(found);
}

void Context::progress() {
  for (auto &entry : slots_)
    entry.second.request.poll();
}

std::string Context::pendingSlots() const {
  std::string s;
  for (const auto &entry : slots_)
    s += (s.empty() ? "" : ", ") + std::to_string(entry.first) + " (" +
         entry.second.kernel + ")";
  return s;
}

Context &context() {
  static Context *c = new Context(); // never destroyed: see ~Context
  return *c;
}

//===----------------------------------------------------------------------===//
// Shorthands
//===----------------------------------------------------------------------===//

bool init(int64_t worldSize, const std::vector<int64_t> &meshShape,
          std::string &error) {
  return context().init(worldSize, meshShape, {}, error);
}

bool active() { return context().active(); }
int64_t rank() { return context().rank(); }
int64_t size() { return context().size(); }
const std::vector<int64_t> &meshShape() { return context().mesh().shape(); }

int64_t groupSize(const int64_t *axes, int64_t count) {
  return context().mesh().groupSize(axes, count);
}

int64_t groupIndex(const int64_t *axes, int64_t count) {
  return context().mesh().groupIndex(axes, count);
}

std::vector<uint8_t> allGatherBytes(const void *data, int64_t bytes) {
  Communicator &world = context().world();
  std::vector<uint8_t> out(static_cast<size_t>(bytes * world.size()));
  world.allGather(data, out.data(), bytes, WEFT_U8);
  return out;
}

int64_t maxOverRanks(int64_t value) {
  int64_t out = value;
  context().world().allReduce(&value, &out, 1, WEFT_I64, Reduction::Max);
  return out;
}

void barrier() { context().world().barrier(); }

void finalize() { context().finalize(); }

void abortAll(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  context().world().abortJob(code);
  std::_Exit(code); // not reached
}

} // namespace comm
} // namespace weft
