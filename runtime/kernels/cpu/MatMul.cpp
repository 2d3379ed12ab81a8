//===- MatMul.cpp - matmul kernel -----------------------------------------===//
//
// c[..., M, N] = op(a)[..., M, K] x op(b)[..., K, N] with numpy-broadcast
// batch dims, on OpenBLAS sgemm. When b has no batch of its own (a Linear
// layer applied to [B, S, K] activations) the batch folds into M and the
// whole product is one sgemm. Other batches run one sgemm per matrix:
// spread over the pool (OpenBLAS kept single-threaded) when there are enough
// matrices or they are too small for OpenBLAS threading to pay, else one after
// another with OpenBLAS's own threads.
//
//===----------------------------------------------------------------------===//

#include "Broadcast.h"
#include "Parallel.h"

#include <cblas.h>
#include <cstring>
#include <vector>

using namespace weft;
using namespace weft::cpu;

namespace {

/// Up to this many multiply-adds a gemm is too small for OpenBLAS's own
/// threading to pay (its per-call synchronization costs tens of
/// microseconds), so independent gemms of this size run one per thread.
constexpr int64_t kSmallGemm = int64_t(1) << 22;

struct GemmShape {
  int64_t m, n, k;
  bool transA, transB;
};

void gemm(const GemmShape &s, const float *a, const float *b, float *c) {
  if (s.m == 0 || s.n == 0)
    return;
  if (s.k == 0) {
    std::memset(c, 0, static_cast<size_t>(s.m * s.n) * sizeof(float));
    return;
  }
  cblas_sgemm(CblasRowMajor, s.transA ? CblasTrans : CblasNoTrans,
              s.transB ? CblasTrans : CblasNoTrans, static_cast<int>(s.m),
              static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, a,
              static_cast<int>(s.transA ? s.m : s.k), b,
              static_cast<int>(s.transB ? s.k : s.n), 0.0f, c,
              static_cast<int>(s.n));
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
  numThreads(); // starts the pool, which sets OpenBLAS's thread count

  // b shared by every batch and a's rows contiguous: one tall gemm.
  if (bBatch.numel == 1 && !s.transA && aBatch.numel == batch) {
    GemmShape tall = s;
    tall.m = s.m * batch;
    return gemm(tall, pa, pb, pc);
  }
  if (batch == 1)
    return gemm(s, pa, pb, pc);

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
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      gemm(s, pa + offsets[2 * i] * aSize, pb + offsets[2 * i + 1] * bSize,
           pc + i * cSize);
  };
  const int64_t macs = s.m * s.n * (s.k > 0 ? s.k : 1);
  if (macs <= kSmallGemm || batch >= numThreads()) {
    BlasSingleThreadScope serialBlas;
    parallelFor(batch, grainFor(macs / 8), run);
  } else {
    run(0, batch);
  }
}
