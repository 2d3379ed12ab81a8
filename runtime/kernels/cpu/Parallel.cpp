//===- Parallel.cpp - Thread pool of the CPU kernels ----------------------===//
//
// Workers spin briefly on a generation counter after each loop (kernels come
// in quick succession), then sleep on a condition variable. A loop is split
// into a few more chunks than threads and chunks are claimed from an atomic
// counter, which evens out threads slowed by other processes.
//
//===----------------------------------------------------------------------===//

#include "Parallel.h"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WEFT_CPU_RELAX() _mm_pause()
#else
#define WEFT_CPU_RELAX() std::this_thread::yield()
#endif

extern "C" void openblas_set_num_threads(int numThreads);

namespace weft {
namespace cpu {
namespace {

thread_local bool tInsideLoop = false;

int threadsFromEnvironment() {
  int n = 0;
  if (const char *env = std::getenv("WEFT_NUM_THREADS")) {
    char *end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v > 0)
      n = static_cast<int>(v > 1024 ? 1024 : v);
  }
  if (n == 0)
    n = static_cast<int>(std::thread::hardware_concurrency());
  return n < 1 ? 1 : n;
}

class ThreadPool {
public:
  explicit ThreadPool(int threads) : threads_(threads) {
    openblas_set_num_threads(1);
    for (int i = 1; i < threads; ++i)
      workers_.emplace_back([this] { workerLoop(); });
  }

  int size() const { return threads_; }

  /// Runs fn over [0, n) in `chunks` pieces; returns when all are done.
  /// Returns false (nothing run) when another thread is using the pool.
  bool run(int64_t n, int64_t chunks, RangeFn fn) {
    std::unique_lock<std::mutex> submit(submitMu_, std::try_to_lock);
    if (!submit.owns_lock())
      return false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &fn;
      n_ = n;
      chunks_ = chunks;
      nextChunk_.store(0, std::memory_order_relaxed);
      open_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    tInsideLoop = true;
    runChunks(fn, n, chunks);
    tInsideLoop = false;
    {
      // No worker joins after this; wait for those that did.
      std::lock_guard<std::mutex> lock(mu_);
      open_ = false;
    }
    for (int spins = 0; active_.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins < 1024)
        WEFT_CPU_RELAX();
      else
        std::this_thread::yield();
    }
    job_ = nullptr;
    return true;
  }

private:
  void runChunks(RangeFn fn, int64_t n, int64_t chunks) {
    for (;;) {
      int64_t c = nextChunk_.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks)
        return;
      // Balanced split: chunk c covers [c*n/chunks, (c+1)*n/chunks).
      int64_t begin = c * n / chunks;
      int64_t end = (c + 1) * n / chunks;
      fn(begin, end);
    }
  }

  void workerLoop() {
    tInsideLoop = true;
    uint64_t seen = generation_.load(std::memory_order_acquire);
    for (;;) {
      for (int spins = 0; spins < kSpinIterations &&
                          generation_.load(std::memory_order_acquire) == seen;
           ++spins)
        WEFT_CPU_RELAX();
      RangeFn *job = nullptr;
      int64_t n = 0, chunks = 0;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] {
          return generation_.load(std::memory_order_relaxed) != seen;
        });
        seen = generation_.load(std::memory_order_relaxed);
        if (!open_)
          continue;
        job = job_;
        n = n_;
        chunks = chunks_;
        active_.fetch_add(1, std::memory_order_relaxed);
      }
      runChunks(*job, n, chunks);
      active_.fetch_sub(1, std::memory_order_release);
    }
  }

  // About 20-100 us depending on the CPU's pause latency: long enough to catch
  // back-to-back kernels, short enough not to starve OpenBLAS's threads.
  static constexpr int kSpinIterations = 2000;

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex submitMu_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> nextChunk_{0};
  std::atomic<int> active_{0};
  // The current loop; guarded by mu_.
  RangeFn *job_ = nullptr;
  int64_t n_ = 0;
  int64_t chunks_ = 0;
  bool open_ = false;
};

ThreadPool &pool() {
  // Never destroyed: workers may still be parked when the process exits,
  // including through weft::fatal from inside a loop.
  static ThreadPool *instance = new ThreadPool(threadsFromEnvironment());
  return *instance;
}

} // namespace

int numThreads() { return pool().size(); }

void parallelFor(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0)
    return;
  if (grain < 1)
    grain = 1;
  if (n <= grain || tInsideLoop) {
    fn(0, n);
    return;
  }
  ThreadPool &p = pool();
  int threads = p.size();
  if (threads <= 1) {
    fn(0, n);
    return;
  }
  int64_t chunks = (n + grain - 1) / grain;
  int64_t maxChunks = 4 * static_cast<int64_t>(threads);
  if (chunks > maxChunks)
    chunks = maxChunks;
  if (!p.run(n, chunks, fn))
    fn(0, n);
}

void parallelMemcpy(void *dst, const void *src, int64_t bytes) {
  // Copies are bandwidth bound: only very large ones gain from threads.
  constexpr int64_t kBlock = 1 << 20;
  if (bytes <= 0 || dst == src)
    return;
  char *d = static_cast<char *>(dst);
  const char *s = static_cast<const char *>(src);
  if (bytes <= 2 * kBlock) {
    std::memcpy(d, s, static_cast<size_t>(bytes));
    return;
  }
  int64_t blocks = (bytes + kBlock - 1) / kBlock;
  parallelFor(blocks, 1, [&](int64_t begin, int64_t end) {
    int64_t lo = begin * kBlock;
    int64_t hi = end * kBlock < bytes ? end * kBlock : bytes;
    std::memcpy(d + lo, s + lo, static_cast<size_t>(hi - lo));
  });
}

} // namespace cpu
} // namespace weft
