//===- MatMulTest.cpp - matmul kernel -------------------------------------===//

#include "KernelTestUtil.h"

#include "runtime/kernels/cpu/Gemm.h"

using namespace weft::test;

namespace {

/// c[batch..., m, n] in double from a and b with optional transposes and
/// broadcast batch dims.
std::vector<float> referenceMatMul(const HostTensor<float> &a,
                                   const HostTensor<float> &b, bool ta, bool tb,
                                   const Dims &cDims) {
  const int ra = static_cast<int>(a.dims.size());
  const int rc = static_cast<int>(cDims.size());
  const int64_t m = cDims[rc - 2], n = cDims[rc - 1];
  const int64_t k = ta ? a.dims[ra - 2] : a.dims[ra - 1];
  Dims cBatch(cDims.begin(), cDims.end() - 2);
  Dims aBatch(a.dims.begin(), a.dims.end() - 2);
  Dims bBatch(b.dims.begin(), b.dims.end() - 2);
  std::vector<float> out(static_cast<size_t>(numelOf(cDims)));
  for (int64_t bi = 0; bi < numelOf(cBatch); ++bi) {
    Dims idx = unravel(bi, cBatch);
    const float *pa = a.data.data() + broadcastIndex(idx, aBatch) * m * k;
    const float *pb = b.data.data() + broadcastIndex(idx, bBatch) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += double(ta ? pa[p * m + i] : pa[i * k + p]) *
               double(tb ? pb[j * k + p] : pb[p * n + j]);
        out[(bi * m + i) * n + j] = static_cast<float>(s);
      }
  }
  return out;
}

void checkMatMul(const Dims &aDims, const Dims &bDims, bool ta, bool tb,
                 const Dims &cDims) {
  SCOPED_TRACE(testing::Message() << "ta=" << ta << " tb=" << tb);
  auto a = randomTensor<float>(aDims);
  auto b = randomTensor<float>(bDims);
  HostTensor<float> c(cDims);
  KernelCall().tensor(a).tensor(b).tensor(c).attrs({ta, tb}).run(weft_k_matmul);
  expectClose(c.data, referenceMatMul(a, b, ta, tb, cDims), 1e-4, 1e-5);
}

TEST(MatMul, TwoDimsWithTransposes) {
  checkMatMul({5, 7}, {7, 3}, false, false, {5, 3});
  checkMatMul({7, 5}, {7, 3}, true, false, {5, 3});
  checkMatMul({5, 7}, {3, 7}, false, true, {5, 3});
  checkMatMul({7, 5}, {3, 7}, true, true, {5, 3});
  checkMatMul({1, 1}, {1, 1}, false, false, {1, 1});
}

TEST(MatMul, SharedWeightsFoldIntoOneGemm) {
  // Linear layer: [B, S, K] x [K, N].
  checkMatMul({2, 9, 16}, {16, 8}, false, false, {2, 9, 8});
  checkMatMul({2, 9, 16}, {8, 16}, false, true, {2, 9, 8});
  checkMatMul({2, 3, 9, 16}, {1, 16, 8}, false, false, {2, 3, 9, 8});
  // Transposed a cannot fold; still correct.
  checkMatMul({3, 16, 9}, {16, 8}, true, false, {3, 9, 8});
}

TEST(MatMul, BatchedWithBroadcastBatchDims) {
  checkMatMul({4, 6, 5}, {4, 5, 7}, false, false, {4, 6, 7});
  checkMatMul({2, 1, 6, 5}, {3, 5, 7}, false, false, {2, 3, 6, 7});
  checkMatMul({6, 5}, {3, 5, 7}, false, false, {3, 6, 7});
  checkMatMul({2, 3, 5, 6}, {2, 3, 7, 5}, true, true, {2, 3, 6, 7});
  // Attention-like: many small matrices run on the pool.
  checkMatMul({2, 8, 32, 16}, {2, 8, 16, 32}, false, false, {2, 8, 32, 32});
}

TEST(MatMul, LargeSplitOverThreads) {
  // Split by rows (n <= m) and by 16-column ranges (n > m), odd sizes, every
  // transpose; a batch smaller than the thread count splits each matrix.
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    checkMatMul(ta ? Dims{257, 300} : Dims{300, 257},
                tb ? Dims{129, 257} : Dims{257, 129}, ta, tb, {300, 129});
    checkMatMul(ta ? Dims{64, 40} : Dims{40, 64},
                tb ? Dims{701, 64} : Dims{64, 701}, ta, tb, {40, 701});
  }
  checkMatMul({2, 160, 200}, {2, 200, 150}, false, false, {2, 160, 150});
  checkMatMul({1, 96, 300}, {1, 300, 500}, false, false, {1, 96, 500});
  // Linear layer folded into one tall gemm.
  checkMatMul({3, 70, 64}, {64, 90}, false, false, {3, 70, 90});
}

TEST(MatMul, OnOpenBlas) {
  weft::cpu::gemmForceBlasForTesting(true);
  checkMatMul({300, 257}, {257, 129}, false, false, {300, 129});
  checkMatMul({40, 64}, {64, 701}, false, false, {40, 701});
  checkMatMul({2, 8, 32, 16}, {2, 8, 16, 32}, false, false, {2, 8, 32, 32});
  weft::cpu::gemmForceBlasForTesting(false);
}

TEST(MatMul, EmptyInnerDimGivesZeros) {
  HostTensor<float> a({3, 0}), b({0, 2});
  HostTensor<float> c({3, 2}, {1, 1, 1, 1, 1, 1});
  KernelCall().tensor(a).tensor(b).tensor(c).attrs({0, 0}).run(weft_k_matmul);
  EXPECT_EQ(c.data, std::vector<float>(6, 0.0f));
}

} // namespace
