//===- ParallelTest.cpp - thread pool of the CPU kernels ------------------===//

#include "runtime/kernels/cpu/Parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

using namespace weft::cpu;

namespace {

TEST(Parallel, CoversEveryIndexOnce) {
  EXPECT_GE(numThreads(), 1);
  for (int64_t n : {0, 1, 7, 1000, 123457}) {
    for (int64_t grain : {1, 16, 100000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallelFor(n, grain, [&](int64_t b, int64_t e) {
        ASSERT_LE(0, b);
        ASSERT_LE(b, e);
        ASSERT_LE(e, n);
        for (int64_t i = b; i < e; ++i)
          hits[i].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << "n " << n << " grain " << grain;
    }
  }
}

TEST(Parallel, NestedLoopsRunInline) {
  std::atomic<int64_t> total{0};
  parallelFor(64, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      parallelFor(100, 1,
                  [&](int64_t b2, int64_t e2) { total.fetch_add(e2 - b2); });
  });
  EXPECT_EQ(total.load(), 6400);
}

TEST(Parallel, ManyShortLoops) {
  // Exercises the wake/sleep handshake.
  int64_t sum = 0;
  for (int rep = 0; rep < 2000; ++rep) {
    std::atomic<int64_t> s{0};
    parallelFor(8, 1, [&](int64_t b, int64_t e) { s.fetch_add(e - b); });
    sum += s.load();
  }
  EXPECT_EQ(sum, 16000);
}

TEST(Parallel, ParallelMemcpy) {
  std::vector<char> src(5 << 20), dst(5 << 20);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<char>(i * 31);
  parallelMemcpy(dst.data(), src.data(), static_cast<int64_t>(src.size()));
  EXPECT_EQ(src, dst);
}

} // namespace
