//===- Loss.cu - softmax_xent and softmax_xent_grad kernels ---------------===//
//
// The GPU versions of runtime/kernels/cpu/Loss.cpp and LossGrad.cpp (ONNX
// SoftmaxCrossEntropyLoss on f32 scores [N, C, d...], i64 or i32 labels
// [N, d...], optional class weights [C]):
//
//   log_prob = (x - max) - log(sum e^(x - max))   over the classes
//   loss[n, d] = -w[label] * log_prob[n, label, d]
//   dscores = c * (softmax - onehot(label)),  c = w[label] * g
//
// with g the loss gradient of the position (none), dloss (sum) or
// dloss / W (mean; W the summed weights of the positions not ignored).
// Positions whose label is ignore_index weigh 0 and get loss 0 and a zero
// gradient. A label out of [0, C) (and not ignored) cannot stop the GPU:
// it is recorded in the device error word (the executor fails the step
// with the message) and the position is treated as ignored meanwhile.
//
// Scores without trailing dims (d = 1) go one row of classes per warp
// (registers) or per block (several passes) as softmax does; with trailing
// dims one thread per position walks its strided column of classes. The
// reductions (the mean's or sum's total, and the mean's weight total) run
// in double in one block with a fixed order, so they repeat bitwise.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/LossLabels.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/MathUtil.cuh"

#include <string>
#include <type_traits>

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::math;

namespace {

/// Threads of the one-block reductions.
constexpr int kReduceThreads = 1024;

/// The label attributes and class weights (cpu::XentLabels, whose
/// weightOf() runs here too) and the device error word, as a kernel
/// argument.
struct LabelInfo : cpu::XentLabels {
  int *errorWord;
  int errorCode;
};

/// Class of position i, or -1 when it is ignored or (recording the error
/// when `report`) out of range.
template <class L>
static __device__ inline int64_t classOf(const L *labels, int64_t i,
                                         const LabelInfo &info, bool report) {
  const int64_t l = static_cast<int64_t>(labels[i]);
  if (info.hasIgnore && l == info.ignoreIndex)
    return -1;
  if (l < 0 || l >= info.classes) {
    if (report)
      atomicCAS(info.errorWord, 0, info.errorCode);
    return -1;
  }
  return l;
}

/// The row xr's largest score `m` (block-wide) and the block's sum of
/// e^(x - m) over the row.
static __device__ inline float blockExpSum(const float *xr, int64_t c,
                                           float *shared, float &m) {
  m = kNegInf;
  for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
    m = xr[i] > m ? xr[i] : m;
  m = blockMax(m, shared);
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
    sum += expf(xr[i] - m);
  return blockSum(sum, shared);
}

//===-- softmax_xent ------------------------------------------------------===//

/// Loss and weight of position p, whose scores (class l at xp[l * stride])
/// have the max m and the log-sum logSum.
template <class L>
static __device__ inline void
positionLoss(const float *xp, int64_t stride, const L *labels, int64_t p,
             const LabelInfo &info, float m, float logSum, float *loss,
             float *weight) {
  const int64_t l = classOf(labels, p, info, true);
  if (l < 0) {
    loss[p] = 0.0f;
    if (weight)
      weight[p] = 0.0f;
    return;
  }
  const float w = info.weightOf(l);
  loss[p] = -w * ((xp[l * stride] - m) - logSum);
  if (weight)
    weight[p] = w;
}

template <int VPT, int VEC, class L>
__global__ void xentWarpKernel(const float *x, const L *labels, LabelInfo info,
                               float *logProb, float *loss, float *weight,
                               int64_t rows) {
  const int64_t c = info.classes;
  const int lane = threadIdx.x & 31;
  for (int64_t r = firstWarpRow(); r < rows; r += warpRowStep()) {
    const float *xr = x + r * c;
    float v[VPT];
    loadRow<VPT, VEC>(xr, c, lane, v, kNegInf);
    const float m = warpRowMax(v);
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < VPT; ++s)
      if (slotValid<VEC>(s, lane, c))
        sum += expf(v[s] - m);
    const float logSum = logf(warpSum(sum));
    if (logProb) {
#pragma unroll
      for (int s = 0; s < VPT; ++s)
        v[s] = (v[s] - m) - logSum;
      storeRow<VPT, VEC>(logProb + r * c, c, lane, v);
    }
    if (lane == 0)
      positionLoss(xr, 1, labels, r, info, m, logSum, loss, weight);
  }
}

template <class L>
__global__ void xentBlockKernel(const float *x, const L *labels, LabelInfo info,
                                float *logProb, float *loss, float *weight,
                                int64_t rows) {
  __shared__ float shared[32];
  const int64_t c = info.classes;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *xr = x + r * c;
    float m;
    const float logSum = logf(blockExpSum(xr, c, shared, m));
    if (logProb)
      for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
        logProb[r * c + i] = (xr[i] - m) - logSum;
    if (threadIdx.x == 0)
      positionLoss(xr, 1, labels, r, info, m, logSum, loss, weight);
  }
}

/// Trailing dims: one thread per position p = (sample, j), classes strided
/// by d.
template <class L>
__global__ void xentColumnKernel(const float *x, const L *labels,
                                 LabelInfo info, float *logProb, float *loss,
                                 float *weight, int64_t positions, int64_t d) {
  const int64_t c = info.classes;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       p < positions; p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = p / d * c * d + p % d;
    float m;
    const float logSum = logf(columnExpSum(x, base, c, d, m));
    if (logProb)
      for (int64_t k = 0; k < c; ++k)
        logProb[base + k * d] = (x[base + k * d] - m) - logSum;
    positionLoss(x + base, d, labels, p, info, m, logSum, loss, weight);
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

//===-- softmax_xent_grad -------------------------------------------------===//

/// Summed weight (double, fixed order) of the positions not ignored, for
/// the mean's gradient.
template <class L>
__global__ void xentWeightTotalKernel(const L *labels, LabelInfo info,
                                      int64_t positions, double *total) {
  __shared__ double shared[32];
  double w = 0.0;
  for (int64_t i = threadIdx.x; i < positions; i += blockDim.x) {
    const int64_t l = classOf(labels, i, info, false);
    if (l >= 0)
      w += info.weightOf(l);
  }
  w = blockSum(w, shared);
  if (threadIdx.x == 0)
    *total = w;
}

/// How each position's coefficient c = w[label] * g is formed.
struct GradScale {
  const float *dloss;
  int64_t reduction;
  const double *total; // mean only
};

static __device__ inline float
coefOf(const GradScale &gs, const LabelInfo &info, int64_t p, int64_t l) {
  float g;
  if (gs.reduction == WEFT_LOSS_NONE)
    g = gs.dloss[p];
  else if (gs.reduction == WEFT_LOSS_SUM)
    g = gs.dloss[0];
  else
    g = static_cast<float>(static_cast<double>(gs.dloss[0]) / *gs.total);
  return info.weightOf(l) * g;
}

/// dscores of class k from its e^(x - max): e * f, then minus coef at the
/// label l (two roundings, as the CPU).
static __device__ inline float classGrad(float e, float f, float coef,
                                         int64_t k, int64_t l) {
  float v = __fmul_rn(e, f);
  if (k == l)
    v = __fsub_rn(v, coef);
  return v;
}

template <int VPT, int VEC, class L>
__global__ void xentGradWarpKernel(const float *x, const L *labels,
                                   LabelInfo info, GradScale gs, float *dx,
                                   int64_t rows) {
  const int64_t c = info.classes;
  const int lane = threadIdx.x & 31;
  for (int64_t r = firstWarpRow(); r < rows; r += warpRowStep()) {
    float v[VPT];
    const int64_t l = classOf(labels, r, info, lane == 0);
    if (l < 0) {
#pragma unroll
      for (int s = 0; s < VPT; ++s)
        v[s] = 0.0f;
      storeRow<VPT, VEC>(dx + r * c, c, lane, v);
      continue;
    }
    const float coef = coefOf(gs, info, r, l);
    loadRow<VPT, VEC>(x + r * c, c, lane, v, kNegInf);
    const float m = warpRowMax(v);
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < VPT; ++s) {
      v[s] = slotValid<VEC>(s, lane, c) ? expf(v[s] - m) : 0.0f;
      sum += v[s];
    }
    const float f = coef / warpSum(sum);
#pragma unroll
    for (int s = 0; s < VPT; ++s)
      v[s] = classGrad(v[s], f, coef, slotElement<VEC>(s, lane), l);
    storeRow<VPT, VEC>(dx + r * c, c, lane, v);
  }
}

template <class L>
__global__ void xentGradBlockKernel(const float *x, const L *labels,
                                    LabelInfo info, GradScale gs, float *dx,
                                    int64_t rows) {
  __shared__ float shared[32];
  const int64_t c = info.classes;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *xr = x + r * c;
    float *dr = dx + r * c;
    const int64_t l = classOf(labels, r, info, threadIdx.x == 0);
    if (l < 0) {
      for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
        dr[i] = 0.0f;
      continue;
    }
    const float coef = coefOf(gs, info, r, l);
    float m;
    const float f = coef / blockExpSum(xr, c, shared, m);
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
      dr[i] = classGrad(expf(xr[i] - m), f, coef, i, l);
  }
}

template <class L>
__global__ void xentGradColumnKernel(const float *x, const L *labels,
                                     LabelInfo info, GradScale gs, float *dx,
                                     int64_t positions, int64_t d) {
  const int64_t c = info.classes;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       p < positions; p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = p / d * c * d + p % d;
    const int64_t l = classOf(labels, p, info, true);
    if (l < 0) {
      for (int64_t k = 0; k < c; ++k)
        dx[base + k * d] = 0.0f;
      continue;
    }
    const float coef = coefOf(gs, info, p, l);
    float m;
    const float f = coef / columnExpSum(x, base, c, d, m);
    for (int64_t k = 0; k < c; ++k)
      dx[base + k * d] = classGrad(expf(x[base + k * d] - m), f, coef, k, l);
  }
}

/// The device error code (registerDeviceError) of a label out of range in
/// `kernel`.
int labelRangeError(const char *kernel) {
  const std::string message = std::string("kernel ") + kernel +
                              ": a label is out of range [0, classes) and "
                              "is not the ignore_index";
  return registerDeviceError(message.c_str());
}

/// Checks scores (tensor 0), labels (1) and weights (2, when given), and
/// that `numel` (the loss or its gradient) fits `reduction` (LossLabels.h).
cpu::XentShape checkXentShape(const cpu::KernelArgs &args, bool hasWeights,
                              int64_t reduction, int64_t numel,
                              const char *unreducedError,
                              const char *reducedError) {
  const cpu::XentShape shape =
      cpu::checkXentOperands(args, args.tensor(0), args.tensor(1),
                             hasWeights ? &args.tensor(2) : nullptr);
  cpu::checkLossNumel(args, reduction, numel, shape.positions(), unreducedError,
                      reducedError);
  return shape;
}

/// The label attributes (1: has ignore_index, 2: ignore_index) and the
/// weights (tensor 2, when given) of a call with `classes` classes, after
/// checking that the labels are i64 or i32.
LabelInfo labelInfo(const cpu::KernelArgs &args, const cpu::TensorArg &labels,
                    int64_t classes, bool hasWeights, int errorCode) {
  if (labels.dtype != WEFT_I64 && labels.dtype != WEFT_I32)
    args.unsupportedDType(labels.dtype);
  LabelInfo info;
  info.classes = classes;
  info.hasIgnore = args.attr(1) != 0;
  info.ignoreIndex = args.attr(2);
  info.weights = hasWeights ? args.tensor(2).as<float>() : nullptr;
  info.errorWord = errorWord();
  info.errorCode = errorCode;
  return info;
}

/// Launches an xent kernel over the positions of `shape`: with trailing
/// dims one thread per position, column(grid, threads); otherwise rows of
/// up to kWarpRowMax classes one per warp, warp(Int<VPT>, Int<VEC>, grid,
/// threads) (float4 access when `vec4`), longer rows one per block,
/// block(grid, threads).
template <class Column, class Warp, class Block>
void launchXent(const cpu::XentShape &shape, bool vec4, Column &&column,
                Warp &&warp, Block &&block) {
  const int64_t positions = shape.positions();
  if (shape.d != 1) {
    column(gridFor(positions, kBlock), kBlock);
  } else if (shape.c <= kWarpRowMax) {
    dispatchWarpRow(shape.c, vec4, [&](auto vpt, auto vec) {
      warp(vpt, vec, gridFor(positions, kWarpRows), 32 * kWarpRows);
    });
  } else {
    block(gridFor(positions, 1), kRowThreads);
  }
}

/// Calls f(label type tag) for i64 or i32 labels.
template <class F>
void dispatchLabels(const cpu::KernelArgs &args, const cpu::TensorArg &labels,
                    F &&f) {
  if (labels.dtype == WEFT_I64)
    f(static_cast<const int64_t *>(labels.data));
  else if (labels.dtype == WEFT_I32)
    f(static_cast<const int32_t *>(labels.data));
  else
    args.unsupportedDType(labels.dtype);
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
  const cpu::TensorArg &labels = args.tensor(1);
  const int lossIdx = hasWeights ? 3 : 2;
  const cpu::TensorArg &lossT = args.tensor(lossIdx);
  args.expectDType(0, WEFT_F32);
  args.expectDType(lossIdx, WEFT_F32);
  if (hasWeights)
    args.expectDType(2, WEFT_F32);
  if (hasLogProb) {
    args.expectDType(lossIdx + 1, WEFT_F32);
    args.expectSameNumel(0, lossIdx + 1);
  }
  const cpu::XentShape shape =
      checkXentShape(args, hasWeights, reduction, lossT.numel,
                     "unreduced loss must have the labels' shape",
                     "reduced loss must be a scalar");
  const int64_t positions = shape.positions();
  if (shape.c == 0 && positions > 0)
    args.invalid("scores have no classes");
  const LabelInfo info =
      labelInfo(args, labels, shape.c, hasWeights, errorCode);
  const bool reduced = reduction != WEFT_LOSS_NONE;
  ScratchPlan sp;
  const int sLoss = sp.add(reduced ? static_cast<size_t>(positions) * 4 : 0);
  const int sWeight = sp.add(reduced ? static_cast<size_t>(positions) * 4 : 0);
  sp.allocate();
  float *loss = reduced ? sp.at<float>(sLoss) : lossT.as<float>();
  float *weight = reduced ? sp.at<float>(sWeight) : nullptr;
  float *logProb = hasLogProb ? args.tensor(lossIdx + 1).as<float>() : nullptr;
  const float *x = scores.as<float>();
  cudaStream_t stream = computeStream();
  if (positions > 0) {
    const bool vec4 =
        shape.c % 4 == 0 && aligned16(x) && (!logProb || aligned16(logProb));
    dispatchLabels(args, labels, [&](auto *pl) {
      using L = std::remove_const_t<std::remove_pointer_t<decltype(pl)>>;
      launchXent(
          shape, vec4,
          [&](unsigned grid, int threads) {
            xentColumnKernel<L><<<grid, threads, 0, stream>>>(
                x, pl, info, logProb, loss, weight, positions, shape.d);
          },
          [&](auto vpt, auto vec, unsigned grid, int threads) {
            xentWarpKernel<decltype(vpt)::value, decltype(vec)::value, L>
                <<<grid, threads, 0, stream>>>(x, pl, info, logProb, loss,
                                               weight, positions);
          },
          [&](unsigned grid, int threads) {
            xentBlockKernel<L><<<grid, threads, 0, stream>>>(
                x, pl, info, logProb, loss, weight, positions);
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

extern "C" void weft_cuda_k_softmax_xent_grad(void *const *bufs,
                                              const int64_t *desc) {
  static const int errorCode = labelRangeError("softmax_xent_grad");
  cpu::KernelArgs args("softmax_xent_grad", bufs, desc);
  args.expectAttrs(4);
  const int64_t reduction = args.attr(0);
  const bool hasWeights = args.attr(3) != 0;
  const int expected = hasWeights ? 5 : 4;
  args.expectTensors(expected, expected);
  const int dlossIdx = hasWeights ? 3 : 2;
  const cpu::TensorArg &scores = args.tensor(0);
  const cpu::TensorArg &labels = args.tensor(1);
  const cpu::TensorArg &dloss = args.tensor(dlossIdx);
  args.expectDType(0, WEFT_F32);
  if (hasWeights)
    args.expectDType(2, WEFT_F32);
  args.expectDType(dlossIdx, WEFT_F32);
  args.expectDType(dlossIdx + 1, WEFT_F32);
  args.expectSameNumel(0, dlossIdx + 1);
  const cpu::XentShape shape =
      checkXentShape(args, hasWeights, reduction, dloss.numel,
                     "dloss of an unreduced loss must have the labels' shape",
                     "dloss of a reduced loss must be a scalar");
  const int64_t positions = shape.positions();
  if (positions == 0 || shape.c == 0) {
    if (positions > 0)
      args.invalid("scores have no classes");
    return;
  }
  const LabelInfo info =
      labelInfo(args, labels, shape.c, hasWeights, errorCode);
  const bool mean = reduction == WEFT_LOSS_MEAN;
  ScratchPlan sp;
  const int sTotal = sp.add(mean ? sizeof(double) : 0);
  sp.allocate();
  GradScale gs;
  gs.dloss = dloss.as<float>();
  gs.reduction = reduction;
  gs.total = mean ? sp.at<double>(sTotal) : nullptr;
  const float *x = scores.as<float>();
  float *dx = args.tensor(dlossIdx + 1).as<float>();
  cudaStream_t stream = computeStream();
  const bool vec4 = shape.c % 4 == 0 && aligned16(x) && aligned16(dx);
  dispatchLabels(args, labels, [&](auto *pl) {
    using L = std::remove_const_t<std::remove_pointer_t<decltype(pl)>>;
    if (mean) {
      xentWeightTotalKernel<L><<<1, kReduceThreads, 0, stream>>>(
          pl, info, positions, sp.at<double>(sTotal));
      checkLaunch("softmax_xent_grad");
    }
    launchXent(
        shape, vec4,
        [&](unsigned grid, int threads) {
          xentGradColumnKernel<L><<<grid, threads, 0, stream>>>(
              x, pl, info, gs, dx, positions, shape.d);
        },
        [&](auto vpt, auto vec, unsigned grid, int threads) {
          xentGradWarpKernel<decltype(vpt)::value, decltype(vec)::value, L>
              <<<grid, threads, 0, stream>>>(x, pl, info, gs, dx, positions);
        },
        [&](unsigned grid, int threads) {
          xentGradBlockKernel<L>
              <<<grid, threads, 0, stream>>>(x, pl, info, gs, dx, positions);
        });
  });
  checkLaunch("softmax_xent_grad");
}
