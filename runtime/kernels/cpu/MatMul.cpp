//===- MatMul.cpp - matmul kernel -----------------------------------------===//
//
// c[..., M, N] = op(a)[..., M, K] x op(b)[..., K, N] with numpy-broadcast
// batch dims. When b has no batch of its own (a Linear layer applied to
// [B, S, K] activations) the batch folds into M and the whole product is one
// gemm. Other batches run one gemm per matrix: whole matrices spread over the
// pool when there are at least as many as threads (or they are small), else
// one after another, each split over the pool. A split cuts M when B is the
// smaller operand (each thread then reads all of B), else N. Every gemm call
// is single-threaded gemmTile (Gemm.h; weft's AVX-512 tiles, transposed
// operands included, else OpenBLAS at one thread), so only weft's pool runs
// threads.
//
//===----------------------------------------------------------------------===//

#include "Broadcast.h"
#include "Gemm.h"
#include "Parallel.h"
#include "Widen.h"

#include <cstring>
#include <vector>

using namespace weft;
using namespace weft::cpu;

namespace {

/// Multiply-adds below which a gemm is not split over threads.
constexpr int64_t kMinParallelMacs = int64_t(1) << 17;

struct GemmShape {
  int64_t m, n, k;
  bool transA, transB;
};

/// One gemm on the calling thread, through gemmTile (weft's AVX-512 tiles
/// where available, transposed operands included).
void gemm(const GemmShape &s, const float *a, int64_t lda, const float *b,
          int64_t ldb, float *c, int64_t ldc) {
  if (s.m == 0 || s.n == 0)
    return;
  if (s.k == 0) {
    for (int64_t i = 0; i < s.m; ++i)
      std::memset(c + i * ldc, 0, static_cast<size_t>(s.n) * sizeof(float));
    return;
  }
  gemmTile(s.m, s.n, s.k, a, lda, s.transA, b, ldb, s.transB, c, ldc, nullptr,
           false);
}

/// Leading dimensions of untouched operands of shape s.
int64_t leadA(const GemmShape &s) { return s.transA ? s.m : s.k; }
int64_t leadB(const GemmShape &s) { return s.transB ? s.k : s.n; }

/// One gemm split over the pool: along M (rows of C) when B is the smaller
/// operand to share, else along N, in ranges of whole 16-column vectors.
void parallelGemm(const GemmShape &s, const float *a, const float *b,
                  float *c) {
  const int64_t lda = leadA(s), ldb = leadB(s);
  const int64_t macs = s.m * s.n * (s.k > 0 ? s.k : 1);
  const int threads = numThreads();
  if (threads <= 1 || macs < 2 * kMinParallelMacs)
    return gemm(s, a, lda, b, ldb, c, s.n);
  const bool splitM = s.n <= s.m || s.n < 32 * threads;
  if (splitM) {
    // Few, tall ranges (two per thread, whole 12-row tiles at least): each
    // range reads all of B.
    const int64_t rowMacs = s.n * (s.k > 0 ? s.k : 1);
    int64_t grain = (kMinParallelMacs + rowMacs - 1) / rowMacs;
    const int64_t perRange = (s.m + 2 * threads - 1) / (2 * threads);
    grain = grain > perRange ? grain : perRange;
    grain = grain < 12 ? 12 : grain;
    parallelFor(s.m, grain, [&](int64_t m0, int64_t m1) {
      GemmShape part = s;
      part.m = m1 - m0;
      gemm(part, a + (s.transA ? m0 : m0 * lda), lda, b, ldb, c + m0 * s.n,
           s.n);
    });
  } else {
    const int64_t units = (s.n + 15) / 16;
    const int64_t unitMacs = 16 * s.m * (s.k > 0 ? s.k : 1);
    const int64_t grain = (kMinParallelMacs + unitMacs - 1) / unitMacs;
    parallelFor(units, grain, [&](int64_t u0, int64_t u1) {
      const int64_t n0 = u0 * 16, n1 = u1 * 16 < s.n ? u1 * 16 : s.n;
      GemmShape part = s;
      part.n = n1 - n0;
      gemm(part, a, lda, b + (s.transB ? n0 * ldb : n0), ldb, c + n0, s.n);
    });
  }
}

/// A view of t's leading (batch) dims only.
TensorArg batchView(const TensorArg &t) {
  TensorArg v = t;
  v.rank = t.rank - 2;
  v.numel = t.extent(0, v.rank);
  return v;
}

} // namespace

extern "C" void weft_k_matmul(void *const *bufs, const int64_t *desc) {
  if (runBF16AsF32(bufs, desc, 1, weft_k_matmul))
    return;
  KernelArgs args("matmul", bufs, desc);
  args.expectTensors(3, 3);
  args.expectAttrs(2);
  const TensorArg &a = args.tensor(0);
  const TensorArg &b = args.tensor(1);
  const TensorArg &c = args.tensor(2);
  for (int i = 0; i < 3; ++i)
    if (args.tensor(i).dtype != WEFT_F32)
      args.unsupportedDType(args.tensor(i).dtype);
  if (a.rank < 2 || b.rank < 2 || c.rank < 2)
    args.invalid("operands must have rank >= 2");
  GemmShape s;
  s.transA = args.attr(0) != 0;
  s.transB = args.attr(1) != 0;
  s.m = s.transA ? a.dim(-1) : a.dim(-2);
  s.k = s.transA ? a.dim(-2) : a.dim(-1);
  s.n = s.transB ? b.dim(-2) : b.dim(-1);
  int64_t kb = s.transB ? b.dim(-1) : b.dim(-2);
  if (kb != s.k || c.dim(-2) != s.m || c.dim(-1) != s.n)
    args.invalid("inner or result dims do not match");

  const float *pa = a.as<float>();
  const float *pb = b.as<float>();
  float *pc = c.as<float>();
  TensorArg cBatch = batchView(c);
  TensorArg aBatch = batchView(a);
  TensorArg bBatch = batchView(b);
  const int64_t batch = cBatch.numel;
  if (batch == 0)
    return;
  numThreads(); // starts the pool, which sets OpenBLAS to one thread

  // b shared by every batch and a's rows contiguous: one tall gemm.
  if (bBatch.numel == 1 && !s.transA && aBatch.numel == batch) {
    GemmShape tall = s;
    tall.m = s.m * batch;
    return parallelGemm(tall, pa, pb, pc);
  }
  if (batch == 1)
    return parallelGemm(s, pa, pb, pc);

  // Offsets (in matrices) of a and b for every batch index of c.
  const TensorArg *ins[2] = {&aBatch, &bBatch};
  BroadcastPlan<2> plan = makeBroadcastPlan(args, cBatch, ins);
  std::vector<int64_t> offsets(static_cast<size_t>(2 * batch));
  forEachRow(plan, 0, batch,
             [&](const int64_t *off, int64_t outOff, int64_t n) {
               for (int64_t i = 0; i < n; ++i) {
                 offsets[2 * (outOff + i)] = off[0] + i * plan.rowStride(0);
                 offsets[2 * (outOff + i) + 1] = off[1] + i * plan.rowStride(1);
               }
             });
  const int64_t aSize = s.m * s.k, bSize = s.k * s.n, cSize = s.m * s.n;
  const int64_t macs = s.m * s.n * (s.k > 0 ? s.k : 1);
  if (batch >= numThreads() || macs < 2 * kMinParallelMacs) {
    // Whole matrices per thread.
    const int64_t grain = (kMinParallelMacs + macs - 1) / macs;
    parallelFor(batch, grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        gemm(s, pa + offsets[2 * i] * aSize, leadA(s),
             pb + offsets[2 * i + 1] * bSize, leadB(s), pc + i * cSize, s.n);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i)
      parallelGemm(s, pa + offsets[2 * i] * aSize,
                   pb + offsets[2 * i + 1] * bSize, pc + i * cSize);
  }
}
