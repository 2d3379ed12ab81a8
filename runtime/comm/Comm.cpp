//===- Comm.cpp - The ranks of a run and their communicators (MPI) --------===//
#include "CommInternal.h"

#include "weft/runtime/Diagnostics.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sched.h>
#include <unistd.h>

namespace weft {
namespace comm {

namespace {

struct Context {
  bool active = false;
  int64_t rank = 0, size = 1;
  std::vector<int64_t> shape;
#if WEFT_HAVE_MPI
  std::map<std::vector<int64_t>, MPI_Comm> groups;
#endif
};

Context &ctx() {
  static Context c;
  return c;
}

std::vector<int64_t> coordinates(int64_t rank,
                                 const std::vector<int64_t> &shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    c[i] = rank % shape[i];
    rank /= shape[i];
  }
  return c;
}

double timeoutSeconds() {
  const char *env = std::getenv("WEFT_COMM_TIMEOUT");
  if (env && *env) {
    char *end = nullptr;
    double v = std::strtod(env, &end);
    if (end && *end == '\0' && v > 0)
      return v;
  }
  return 300.0;
}

} // namespace

bool active() { return ctx().active; }
int64_t rank() { return ctx().rank; }
int64_t size() { return ctx().size; }
const std::vector<int64_t> &meshShape() { return ctx().shape; }

int64_t groupSize(const int64_t *axes, int64_t count) {
  int64_t n = 1;
  for (int64_t i = 0; i < count; ++i)
    n *= axes[i] < static_cast<int64_t>(ctx().shape.size())
             ? ctx().shape[axes[i]]
             : 1;
  return n;
}

int64_t groupIndex(const int64_t *axes, int64_t count) {
  if (!ctx().active)
    return 0;
  std::vector<int64_t> c = coordinates(ctx().rank, ctx().shape);
  int64_t index = 0;
  for (int64_t i = 0; i < count; ++i)
    index = index * ctx().shape[axes[i]] + c[axes[i]];
  return index;
}

std::string describeGroup(const char *op, const int64_t *axes, int64_t count) {
  std::string s = std::string(op) + " over mesh axes [";
  for (int64_t i = 0; i < count; ++i)
    s += (i ? "," : "") + std::to_string(axes[i]);
  s += "] (ranks ";
  // The members: every rank whose coordinates off `axes` match this one's.
  std::vector<int64_t> mine = coordinates(ctx().rank, ctx().shape);
  bool first = true;
  for (int64_t r = 0; r < ctx().size; ++r) {
    std::vector<int64_t> c = coordinates(r, ctx().shape);
    bool same = true;
    for (size_t a = 0; a < c.size(); ++a) {
      bool inGroup = false;
      for (int64_t i = 0; i < count; ++i)
        inGroup |= axes[i] == static_cast<int64_t>(a);
      same &= inGroup || c[a] == mine[a];
    }
    if (same) {
      s += (first ? "" : ",") + std::to_string(r);
      first = false;
    }
  }
  return s + ")";
}

void abortAll(int code) {
  std::fflush(stderr);
#if WEFT_HAVE_MPI
  if (ctx().active)
    MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

#if WEFT_HAVE_MPI

bool init(int64_t worldSize, const std::vector<int64_t> &meshShape,
          std::string &error) {
  Context &c = ctx();
  c.shape = meshShape;
  if (worldSize <= 1)
    return true;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    bool launched = std::getenv("OMPI_COMM_WORLD_SIZE") ||
                    std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK") ||
                    std::getenv("SLURM_NTASKS");
    if (!launched) {
      error = "this bundle runs on " + std::to_string(worldSize) +
              " ranks: start it with 'weft run|train -n " +
              std::to_string(worldSize) + "' (mpirun) or srun";
      return false;
    }
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  c.rank = r;
  c.size = n;
  c.active = true;
  if (n != worldSize) {
    error = "this bundle was compiled for " + std::to_string(worldSize) +
            " ranks but " + std::to_string(n) +
            " were started (recompile with --devices " + std::to_string(n) +
            ")";
    return false;
  }
  return true;
}

void finalize() {
  Context &c = ctx();
  if (!c.active)
    return;
  for (auto &entry : c.groups)
    MPI_Comm_free(&entry.second);
  c.groups.clear();
  c.active = false;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

MPI_Comm group(const int64_t *axes, int64_t count) {
  Context &c = ctx();
  std::vector<int64_t> key(axes, axes + count);
  auto it = c.groups.find(key);
  if (it != c.groups.end())
    return it->second;
  std::vector<int64_t> coords = coordinates(c.rank, c.shape);
  int64_t color = 0;
  for (size_t a = 0; a < c.shape.size(); ++a) {
    bool inGroup = false;
    for (int64_t i = 0; i < count; ++i)
      inGroup |= axes[i] == static_cast<int64_t>(a);
    if (!inGroup)
      color = color * c.shape[a] + coords[a];
  }
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color),
                 static_cast<int>(groupIndex(axes, count)), &comm);
  c.groups[key] = comm;
  return comm;
}

/// What this rank is waiting for, for the termination handler: when another
/// rank dies, mpirun terminates the survivors, each of which then says
/// which collective it was in.
char gWaitingFor[512];

void onTerminate(int signal) {
  if (gWaitingFor[0]) {
    const char prefix[] = "weft: error: ";
    const char suffix[] = " interrupted: another rank failed\n";
    ssize_t ignored = ::write(STDERR_FILENO, prefix, sizeof prefix - 1);
    ignored = ::write(STDERR_FILENO, gWaitingFor, std::strlen(gWaitingFor));
    ignored = ::write(STDERR_FILENO, suffix, sizeof suffix - 1);
    (void)ignored;
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void wait(MPI_Request &request, const char *op, const int64_t *axes,
          int64_t count) {
  static bool handlerInstalled = false;
  if (!handlerInstalled) {
    std::signal(SIGTERM, onTerminate);
    handlerInstalled = true;
  }
  std::snprintf(gWaitingFor, sizeof gWaitingFor, "rank %lld: %s",
                static_cast<long long>(ctx().rank),
                describeGroup(op, axes, count).c_str());
  struct Clear {
    ~Clear() { gWaitingFor[0] = '\0'; }
  } clear;
  const double limit = timeoutSeconds();
  auto start = std::chrono::steady_clock::now();
  int done = 0;
  for (uint64_t spins = 0;; ++spins) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done)
      return;
    if ((spins & 1023) == 0) {
      double elapsed = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      if (elapsed > limit) {
        std::fprintf(stderr,
                     "weft: error: rank %lld: %s did not finish within %g s; "
                     "a rank may have died or diverged (WEFT_COMM_TIMEOUT)\n",
                     static_cast<long long>(ctx().rank),
                     describeGroup(op, axes, count).c_str(), limit);
        abortAll(1);
      }
    }
    sched_yield();
  }
}

std::vector<uint8_t> allGatherBytes(const void *data, int64_t bytes) {
  std::vector<uint8_t> out(static_cast<size_t>(bytes * ctx().size));
  if (!ctx().active) {
    std::copy(static_cast<const uint8_t *>(data),
              static_cast<const uint8_t *>(data) + bytes, out.begin());
    return out;
  }
  MPI_Request request;
  MPI_Iallgather(data, static_cast<int>(bytes), MPI_BYTE, out.data(),
                 static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD, &request);
  wait(request, "start-up check", nullptr, 0);
  return out;
}

int64_t maxOverRanks(int64_t value) {
  if (!ctx().active)
    return value;
  long long in = value, out = 0;
  MPI_Request request;
  MPI_Iallreduce(&in, &out, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD,
                 &request);
  wait(request, "max over ranks", nullptr, 0);
  return out;
}

void barrier() {
  if (!ctx().active)
    return;
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  wait(request, "barrier", nullptr, 0);
}

#else // !WEFT_HAVE_MPI

bool init(int64_t worldSize, const std::vector<int64_t> &meshShape,
          std::string &error) {
  ctx().shape = meshShape;
  if (worldSize <= 1)
    return true;
  error = "this runtime was built without MPI and cannot run a bundle for " +
          std::to_string(worldSize) + " ranks";
  return false;
}
void finalize() {}
std::vector<uint8_t> allGatherBytes(const void *data, int64_t bytes) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  return std::vector<uint8_t>(p, p + bytes);
}
int64_t maxOverRanks(int64_t value) { return value; }
void barrier() {}

#endif

} // namespace comm
} // namespace weft
