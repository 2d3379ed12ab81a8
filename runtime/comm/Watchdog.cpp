//===- Watchdog.cpp - No wait on another rank lasts forever ---------------===//
//
// Every wait polls its transfer (which also drives the backend's progress)
// and yields the core in between, so oversubscribed ranks still move. Past
// WEFT_COMM_TIMEOUT seconds it prints what it waited for and aborts the
// job. While a rank waits, a SIGTERM (what mpirun sends the survivors when
// one rank dies) prints the same description before the default action.
//
//===----------------------------------------------------------------------===//
#include "CommInternal.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sched.h>
#include <unistd.h>

namespace weft {
namespace comm {

namespace {

/// What this rank waits for, for the SIGTERM handler (null op: nothing).
/// Kept as pointers, formatted only in the handler: waits are frequent.
const char *volatile gWaitingOp = nullptr;
const char *volatile gWaitingGroup = nullptr;
volatile int64_t gWaitingRank = 0;

void writeText(const char *text) {
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void onTerminate(int signal) {
  const char *op = gWaitingOp;
  if (op) {
    // Only async-signal-safe calls: write() and hand-made digits.
    char digits[24];
    int n = 0;
    uint64_t rank = static_cast<uint64_t>(gWaitingRank);
    do {
      digits[n++] = static_cast<char>('0' + rank % 10);
      rank /= 10;
    } while (rank && n < 23);
    char number[24];
    for (int i = 0; i < n; ++i)
      number[i] = digits[n - 1 - i];
    number[n] = '\0';
    writeText("weft: error: rank ");
    writeText(number);
    writeText(": ");
    writeText(op);
    writeText(" over ");
    writeText(gWaitingGroup);
    writeText(" interrupted: another rank failed\n");
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void installTerminateHandler() {
  static bool installed = false;
  if (installed)
    return;
  installed = true;
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = onTerminate;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
}

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

} // namespace

double commTimeoutSeconds() {
  static double value = [] {
    const char *env = std::getenv("WEFT_COMM_TIMEOUT");
    if (env && *env) {
      char *end = nullptr;
      double v = std::strtod(env, &end);
      if (end && *end == '\0' && v > 0)
        return v;
      std::fprintf(stderr,
                   "weft: warning: ignoring WEFT_COMM_TIMEOUT='%s' (not a "
                   "positive number of seconds); using 300\n",
                   env);
    }
    return 300.0;
  }();
  return value;
}

std::string formatRanks(const std::vector<int64_t> &ranks) {
  std::string s;
  const size_t shown = 16;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (!s.empty())
      s += ",";
    if (j - i >= 2) { // three or more consecutive ranks: a range
      s += std::to_string(ranks[i]) + "-" + std::to_string(ranks[j]);
      i = j + 1;
    } else {
      s += std::to_string(ranks[i]);
      ++i;
    }
    if (s.size() > shown * 4 && i < ranks.size()) {
      s += ",... (" + std::to_string(ranks.size()) + " ranks)";
      break;
    }
  }
  return s;
}

void watchTransfer(Request::Transfer &transfer, const char *op,
                   Communicator &comm) {
  installTerminateHandler();
  const int64_t worldRank = comm.worldRanks()[comm.rank()];
  gWaitingRank = worldRank;
  gWaitingGroup = comm.name().c_str();
  gWaitingOp = op;
  struct Clear {
    ~Clear() { gWaitingOp = nullptr; }
  } clear;
  const double limit = commTimeoutSeconds();
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t polls = 1;; ++polls) {
    if (transfer.test())
      return;
    if ((polls & 63) == 0) {
      double elapsed = seconds(std::chrono::steady_clock::now() - start);
      if (elapsed > limit) {
        std::fflush(stdout);
        std::fprintf(stderr,
                     "weft: error: rank %lld: %s over %s did not finish "
                     "within %g s (waited %.1f s); a rank may have died or "
                     "diverged (WEFT_COMM_TIMEOUT)\n",
                     static_cast<long long>(worldRank), op, comm.name().c_str(),
                     limit, elapsed);
        std::fflush(stderr);
        comm.abortJob(1);
      }
    }
    if (polls > 256)
      sched_yield();
  }
}

} // namespace comm
} // namespace weft
