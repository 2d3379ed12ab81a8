//===- Loss.cu - softmax_xent and softmax_xent_grad kernels ---------------===//
//
// The GPU versions of runtime/kernels/cpu/Loss.cpp and LossGrad.cpp (ONNX
// SoftmaxCrossEntropyLoss on f32, bf16 or f16 scores [N, C, d...], i64 or
// i32 labels [N, d...], optional f32 class weights [classes]):
//
//   log_prob = (x - max) - log(sum e^(x - max))   over the classes
//   loss[n, d] = -w[label] * log_prob[n, label, d]
//   dscores = c * (softmax - onehot(label)),  c = w[label] * g
//
// with g the loss gradient of the position (none), dloss (sum) or
// dloss / W (mean; W the summed weights of the positions not ignored).
// Positions whose label is ignore_index weigh 0 and get loss 0 and a zero
// gradient. A label out of [0, classes) (and not ignored) cannot stop the
// GPU: it is recorded in the device error word (the executor fails the
// step with the message) and the position is treated as ignored meanwhile.
//
// Only the first `classes` entries of dim 1 (C unless the optional last
// attribute says fewer) are classes; the other C - classes pad the rows (a
// vocabulary padded to a multiple of 8): max, sum and labels ignore them,
// log_prob is -inf and dscores 0 there, and the row stride stays C. All
// arithmetic is f32; bf16 and f16 scores are widened on load, and log_prob
// and dscores (the scores' dtype) are rounded once at the store. Loss,
// dloss and weights are f32.
//
// Scores without trailing dims (d = 1) go one row per warp (rows of up to
// kWarpRowMax entries, held in registers) or one row per block; with
// trailing dims one thread per position walks its strided column of
// classes. A block's row lives in registers (RowCache) up to 56k bf16/f16
// entries (16-byte loads where rows are 16-byte aligned) or 16k entries
// otherwise, so the forward reads it once and the gradient reads it once
// and writes it once; those blocks stay resident, each looping over rows
// and having L2 fetch its next row while it works on one. Longer rows are
// read again from memory (bf16/f16: max and sum in one pass). f32 rows
// keep the order of operations they always had (the same entries per
// thread, e^ by expf), so f32 results with classes == C are unchanged;
// bf16/f16 rows take e^ as exp2f of the scaled difference (the MUFU
// instruction alone, whose error is far below their rounding). The
// reductions (the mean's or sum's total, and the mean's weight total) run
// in double in one block with a fixed order, so they repeat bitwise; every
// row reduction's order depends on the launch shape alone, which depends
// on the shape, dtype and alignment of the operands.
//
// This file: softmax_xent; LossGrad.cu: softmax_xent_grad; XentCommon.cuh:
// what both take.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/XentCommon.cuh"

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::math;
using namespace weft::cuda::xent;

namespace {

//===-- softmax_xent ------------------------------------------------------===//

static __device__ inline void writeLoss(const LabelInfo &info, int64_t p,
                                        int64_t l, float xl, float m,
                                        float logSum, float *loss,
                                        float *weight) {
  const float w = info.weightOf(l);
  loss[p] = -w * ((xl - m) - logSum);
  if (weight)
    weight[p] = w;
}

static __device__ inline void writeIgnored(int64_t p, float *loss,
                                           float *weight) {
  loss[p] = 0.0f;
  if (weight)
    weight[p] = 0.0f;
}

/// Loss and weight of position p, whose scores (class l at xp[l * stride])
/// have the max m and the log-sum logSum.
template <class T>
static __device__ inline void
positionLoss(const T *xp, int64_t stride, int64_t p, const LabelInfo &info,
             float m, float logSum, float *loss, float *weight) {
  const int64_t l = classOf(info, p, true);
  if (l < 0)
    writeIgnored(p, loss, weight);
  else
    writeLoss(info, p, l, toFloat(xp[l * stride]), m, logSum, loss, weight);
}

template <int VPT, int VEC, class T>
__global__ void xentWarpKernel(const T *x, LabelInfo info, T *logProb,
                               float *loss, float *weight, int64_t rows) {
  const int64_t c = info.c, classes = info.classes;
  const int lane = threadIdx.x & 31;
  for (int64_t r = firstWarpRow(); r < rows; r += warpRowStep()) {
    const T *xr = x + r * c;
    float v[VPT];
    loadScores<VPT, VEC>(xr, c, lane, v);
    if (classes < c)
      padSlots<VPT, VEC>(v, lane, classes);
    const float m = warpRowMax(v);
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < VPT; ++s)
      if (slotValid<VEC>(s, lane, classes))
        sum += expShift<T>(v[s], m);
    const float logSum = logf(warpSum(sum));
    if (logProb) {
#pragma unroll
      for (int s = 0; s < VPT; ++s)
        v[s] = slotValid<VEC>(s, lane, classes) ? (v[s] - m) - logSum : kNegInf;
      storeScores<VPT, VEC>(logProb + r * c, c, lane, v);
    }
    if (lane == 0)
      positionLoss(xr, 1, r, info, m, logSum, loss, weight);
  }
}

/// Rows of up to NV * E * blockDim.x entries, one per block, in registers.
template <class T, int E, int NV>
__global__ void __launch_bounds__(E == 1 ? kRowThreads : kPackedRowThreads)
    xentCachedKernel(const T *x, LabelInfo info, T *logProb, float *loss,
                     float *weight, int64_t rows) {
  __shared__ float shared[32];
  const int c = static_cast<int>(info.c);
  const int classes = static_cast<int>(info.classes);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    RowCache<T, E, NV> row;
    row.load(x + r * c, c, classes);
    if (r + gridDim.x < rows)
      row.prefetch(x + (r + gridDim.x) * c, c);
    const int l = static_cast<int>(classOf(info, r, threadIdx.x == 0));
    float m;
    const float logSum = logf(row.expSum(c, shared, m));
    if (logProb)
      row.storeLogProb(logProb + r * c, c, classes, m, logSum);
    float xl;
    if (l < 0) {
      if (threadIdx.x == 0)
        writeIgnored(r, loss, weight);
    } else if (row.scoreOf(l, c, xl)) {
      writeLoss(info, r, l, xl, m, logSum, loss, weight);
    }
  }
}

/// Rows too long for registers, one per block, read from memory.
template <class T>
__global__ void xentLongKernel(const T *x, LabelInfo info, T *logProb,
                               float *loss, float *weight, int64_t rows) {
  __shared__ float shared[64];
  const int64_t c = info.c, classes = info.classes;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * c;
    float m;
    const float logSum = logf(longExpSum(xr, classes, shared, m));
    if (logProb)
      for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
        storeFloat(logProb + r * c + i,
                   i < classes ? (toFloat(xr[i]) - m) - logSum : kNegInf);
    if (threadIdx.x == 0)
      positionLoss(xr, 1, r, info, m, logSum, loss, weight);
  }
}

/// Trailing dims: one thread per position p = (sample, j), classes strided
/// by d.
template <class T>
__global__ void xentColumnKernel(const T *x, LabelInfo info, T *logProb,
                                 float *loss, float *weight, int64_t positions,
                                 int64_t d) {
  const int64_t c = info.c, classes = info.classes;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       p < positions; p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = p / d * c * d + p % d;
    float m;
    const float logSum = logf(columnExpSum(x, base, classes, d, m));
    if (logProb)
      for (int64_t k = 0; k < c; ++k)
        storeFloat(logProb + base + k * d,
                   k < classes ? (toFloat(x[base + k * d]) - m) - logSum
                               : kNegInf);
    positionLoss(x + base, d, p, info, m, logSum, loss, weight);
  }
}

/// out[0] = sum of loss (sum) or sum of loss / sum of weight (mean), both
/// sums in double, in one block with a fixed order.
__global__ void xentReduceKernel(const float *loss, const float *weight,
                                 int64_t positions, bool mean, float *out) {
  __shared__ double shared[32];
  double s = 0.0, w = 0.0;
  for (int64_t i = threadIdx.x; i < positions; i += blockDim.x) {
    s += loss[i];
    w += weight[i];
  }
  s = blockSum(s, shared);
  w = blockSum(w, shared);
  if (threadIdx.x == 0)
    *out = static_cast<float>(mean ? s / w : s);
}

} // namespace

extern "C" void weft_cuda_k_softmax_xent(void *const *bufs,
                                         const int64_t *desc) {
  static const int errorCode = labelRangeError("softmax_xent");
  cpu::KernelArgs args("softmax_xent", bufs, desc);
  args.expectAttrs(5);
  const int64_t reduction = args.attr(0);
  const bool hasWeights = args.attr(3) != 0;
  const bool hasLogProb = args.attr(4) != 0;
  const int expected = 3 + (hasWeights ? 1 : 0) + (hasLogProb ? 1 : 0);
  args.expectTensors(expected, expected);
  const cpu::TensorArg &scores = args.tensor(0);
  const int lossIdx = hasWeights ? 3 : 2;
  const cpu::TensorArg &lossT = args.tensor(lossIdx);
  args.expectDType(lossIdx, WEFT_F32);
  if (hasWeights)
    args.expectDType(2, WEFT_F32);
  if (hasLogProb) {
    args.expectDType(lossIdx + 1, scores.dtype);
    args.expectSameNumel(0, lossIdx + 1);
  }
  int64_t classes = 0;
  const cpu::XentShape shape =
      checkXentShape(args, hasWeights, reduction, lossT.numel, 5, classes,
                     "unreduced loss must have the labels' shape",
                     "reduced loss must be a scalar");
  const int64_t positions = shape.positions();
  const LabelInfo info =
      labelInfo(args, shape.c, classes, hasWeights, errorCode);
  const bool reduced = reduction != WEFT_LOSS_NONE;
  ScratchPlan sp;
  const int sLoss = sp.add(reduced ? static_cast<size_t>(positions) * 4 : 0);
  const int sWeight = sp.add(reduced ? static_cast<size_t>(positions) * 4 : 0);
  sp.allocate();
  float *loss = reduced ? sp.at<float>(sLoss) : lossT.as<float>();
  float *weight = reduced ? sp.at<float>(sWeight) : nullptr;
  cudaStream_t stream = computeStream();
  if (positions > 0) {
    dispatchScores(scores.dtype, [&](auto *tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const T *x = scores.as<const T>();
      T *lp = hasLogProb ? args.tensor(lossIdx + 1).as<T>() : nullptr;
      launchXent(
          shape, x, lp,
          [&](unsigned grid, int threads) {
            xentColumnKernel<T><<<grid, threads, 0, stream>>>(
                x, info, lp, loss, weight, positions, shape.d);
          },
          [&](auto vpt, auto vec, unsigned grid, int threads) {
            xentWarpKernel<decltype(vpt)::value, decltype(vec)::value, T>
                <<<grid, threads, 0, stream>>>(x, info, lp, loss, weight,
                                               positions);
          },
          [&](auto e, auto nv, int threads) {
            auto *kernel =
                xentCachedKernel<T, decltype(e)::value, decltype(nv)::value>;
            kernel<<<residentBlocks(kernel, threads, positions), threads, 0,
                     stream>>>(x, info, lp, loss, weight, positions);
          },
          [&](unsigned grid, int threads) {
            xentLongKernel<T><<<grid, threads, 0, stream>>>(x, info, lp, loss,
                                                            weight, positions);
          });
    });
    checkLaunch("softmax_xent");
  }
  if (reduced) {
    xentReduceKernel<<<1, kReduceThreads, 0, stream>>>(
        loss, weight, positions, reduction == WEFT_LOSS_MEAN,
        lossT.as<float>());
    checkLaunch("softmax_xent");
  }
}
