//===- GemmTest.cpp - single-threaded gemm tiles of the CPU kernels -------===//

#include "runtime/kernels/cpu/Gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace weft::cpu;

namespace {

/// Checks gemmTile on random operands with padded leading dimensions, and
/// that C's padding columns stay untouched.
void checkGemm(int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool bias,
               bool accumulate, int64_t bPad = 5) {
  SCOPED_TRACE(testing::Message()
               << "m=" << m << " n=" << n << " k=" << k << " ta=" << ta
               << " tb=" << tb << " bias=" << bias << " acc=" << accumulate);
  std::mt19937 gen(static_cast<unsigned>(m * 131 + n * 17 + k));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + bPad;
  const int64_t ldc = n + 7;
  std::vector<float> a((ta ? k : m) * lda), b((tb ? n : k) * ldb), c(m * ldc),
      r(m);
  for (float &v : a)
    v = dist(gen);
  for (float &v : b)
    v = dist(gen);
  for (float &v : c)
    v = dist(gen);
  for (float &v : r)
    v = dist(gen);
  const std::vector<float> c0 = c;
  gemmTile(m, n, k, a.data(), lda, ta, b.data(), ldb, tb, c.data(), ldc,
           bias ? r.data() : nullptr, accumulate);
  int failures = 0;
  for (int64_t i = 0; i < m && failures < 5; ++i)
    for (int64_t j = 0; j < ldc && failures < 5; ++j) {
      const float got = c[i * ldc + j];
      if (j >= n) {
        if (got != c0[i * ldc + j]) {
          ADD_FAILURE() << "padding (" << i << ", " << j << ") overwritten";
          ++failures;
        }
        continue;
      }
      double want = accumulate ? c0[i * ldc + j] : bias ? r[i] : 0.0;
      for (int64_t p = 0; p < k; ++p)
        want += double(ta ? a[p * lda + i] : a[i * lda + p]) *
                double(tb ? b[j * ldb + p] : b[p * ldb + j]);
      if (!(std::fabs(got - want) <=
            1e-5 * (1 + std::sqrt(double(k))) + 1e-5 * std::fabs(want))) {
        ADD_FAILURE() << "(" << i << ", " << j << "): got " << got
                      << ", expected " << want;
        ++failures;
      }
    }
}

void checkShapes() {
  for (int64_t m : {1, 5, 12, 13, 25})
    for (int64_t n : {1, 15, 16, 17, 33, 50})
      for (int64_t k : {1, 7, 600})
        for (int t = 0; t < 4; ++t)
          checkGemm(m, n, k, t & 1, t & 2, (m + n) % 2 == 0, (m + k) % 3 == 0);
}

TEST(Gemm, ShapesTransposesBiasAccumulate) { checkShapes(); }

TEST(Gemm, ShapesOnOpenBlas) {
  gemmForceBlasForTesting(true);
  EXPECT_FALSE(gemmUsesOwnKernels());
  checkShapes();
  gemmForceBlasForTesting(false);
}

TEST(Gemm, AliasingRowsOfB) {
  // Rows of B a multiple of 4 KiB apart are packed into panels first.
  for (int64_t pad : {1024 - 50, 2048 - 17, 3000})
    for (bool ta : {false, true}) {
      checkGemm(25, 50, 600, ta, false, true, false, pad);
      checkGemm(30, 17, 9, ta, false, false, true, pad);
      checkGemm(8, 40, 33, ta, false, false, false, pad);
    }
}

TEST(Gemm, EmptyDepth) {
  for (bool blas : {false, true}) {
    gemmForceBlasForTesting(blas);
    checkGemm(3, 20, 0, false, false, true, false);
    checkGemm(3, 20, 0, true, true, false, false);
    checkGemm(3, 20, 0, false, true, true, true);
  }
  gemmForceBlasForTesting(false);
}

} // namespace
