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

#include <type_traits>

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::math;

namespace {

constexpr int kWarpRows = 4;
constexpr int kRowThreads = 512;
constexpr int64_t kWarpRowMax = 1024;
constexpr int kReduceThreads = 1024;

/// The label attributes and weights, as a kernel argument.
struct LabelInfo {
  int64_t classes;
  bool hasIgnore;
  int64_t ignoreIndex;
  const float *weights; // null without weights
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

static __device__ inline float weightOf(const LabelInfo &info, int64_t l) {
  return info.weights ? info.weights[l] : 1.0f;
}

bool aligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

template <int VPT, int VEC>
static __device__ inline void loadRow(const float *row, int64_t n, int lane,
                                      float (&v)[VPT]) {
#pragma unroll
  for (int j = 0; j < VPT / VEC; ++j) {
    const int64_t base = (static_cast<int64_t>(j) * 32 + lane) * VEC;
    if constexpr (VEC == 4) {
      if (base < n) {
        const float4 t = *reinterpret_cast<const float4 *>(row + base);
        v[4 * j] = t.x;
        v[4 * j + 1] = t.y;
        v[4 * j + 2] = t.z;
        v[4 * j + 3] = t.w;
      } else {
        v[4 * j] = v[4 * j + 1] = v[4 * j + 2] = v[4 * j + 3] = kNegInf;
      }
    } else {
      v[j] = base < n ? row[base] : kNegInf;
    }
  }
}

template <int VPT, int VEC>
static __device__ inline void storeRow(float *row, int64_t n, int lane,
                                       const float (&v)[VPT]) {
#pragma unroll
  for (int j = 0; j < VPT / VEC; ++j) {
    const int64_t base = (static_cast<int64_t>(j) * 32 + lane) * VEC;
    if (base >= n)
      continue;
    if constexpr (VEC == 4)
      *reinterpret_cast<float4 *>(row + base) =
          make_float4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
    else
      row[base] = v[j];
  }
}

/// Element index of the lane's slot s.
template <int VEC> static __device__ inline int64_t slotIndex(int s, int lane) {
  return (static_cast<int64_t>(s / VEC) * 32 + lane) * VEC + s % VEC;
}

template <int N> using IntC = std::integral_constant<int, N>;

template <class F> void dispatchWarpRow(int64_t n, bool vec4, F &&f) {
  if (n <= 32)
    return f(IntC<1>(), IntC<1>());
  if (n <= 64)
    return f(IntC<2>(), IntC<1>());
  if (n <= 128)
    return vec4 ? f(IntC<4>(), IntC<4>()) : f(IntC<4>(), IntC<1>());
  if (n <= 256)
    return vec4 ? f(IntC<8>(), IntC<4>()) : f(IntC<8>(), IntC<1>());
  if (n <= 512)
    return vec4 ? f(IntC<16>(), IntC<4>()) : f(IntC<16>(), IntC<1>());
  return vec4 ? f(IntC<32>(), IntC<4>()) : f(IntC<32>(), IntC<1>());
}

//===-- softmax_xent ------------------------------------------------------===//

/// Loss and weight of row r's position, from its max and log-sum.
template <class L>
static __device__ inline void
rowLoss(const float *xr, const L *labels, int64_t r, const LabelInfo &info,
        float m, float logSum, float *loss, float *weight) {
  const int64_t l = classOf(labels, r, info, true);
  if (l < 0) {
    loss[r] = 0.0f;
    if (weight)
      weight[r] = 0.0f;
    return;
  }
  const float w = weightOf(info, l);
  loss[r] = -w * ((xr[l] - m) - logSum);
  if (weight)
    weight[r] = w;
}

template <int VPT, int VEC, class L>
__global__ void xentWarpKernel(const float *x, const L *labels, LabelInfo info,
                               float *logProb, float *loss, float *weight,
                               int64_t rows) {
  const int64_t c = info.classes;
  const int lane = threadIdx.x & 31;
  for (int64_t r = blockIdx.x * int64_t(kWarpRows) + (threadIdx.x >> 5);
       r < rows; r += int64_t(gridDim.x) * kWarpRows) {
    const float *xr = x + r * c;
    float v[VPT];
    loadRow<VPT, VEC>(xr, c, lane, v);
    float m = kNegInf;
#pragma unroll
    for (int s = 0; s < VPT; ++s)
      m = v[s] > m ? v[s] : m;
    m = warpMax(m);
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < VPT; ++s)
      if (slotIndex<VEC>(s, lane) < c)
        sum += expf(v[s] - m);
    const float logSum = logf(warpSum(sum));
    if (logProb) {
#pragma unroll
      for (int s = 0; s < VPT; ++s)
        v[s] = (v[s] - m) - logSum;
      storeRow<VPT, VEC>(logProb + r * c, c, lane, v);
    }
    if (lane == 0)
      rowLoss(xr, labels, r, info, m, logSum, loss, weight);
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
    float m = kNegInf;
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
      m = xr[i] > m ? xr[i] : m;
    m = blockMax(m, shared);
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
      sum += expf(xr[i] - m);
    const float logSum = logf(blockSum(sum, shared));
    if (logProb)
      for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
        logProb[r * c + i] = (xr[i] - m) - logSum;
    if (threadIdx.x == 0)
      rowLoss(xr, labels, r, info, m, logSum, loss, weight);
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
    float m = kNegInf;
    for (int64_t k = 0; k < c; ++k) {
      const float v = x[base + k * d];
      m = v > m ? v : m;
    }
    float sum = 0.0f;
    for (int64_t k = 0; k < c; ++k)
      sum += expf(x[base + k * d] - m);
    const float logSum = logf(sum);
    if (logProb)
      for (int64_t k = 0; k < c; ++k)
        logProb[base + k * d] = (x[base + k * d] - m) - logSum;
    const int64_t l = classOf(labels, p, info, true);
    if (l < 0) {
      loss[p] = 0.0f;
      if (weight)
        weight[p] = 0.0f;
      continue;
    }
    const float w = weightOf(info, l);
    loss[p] = -w * ((x[base + l * d] - m) - logSum);
    if (weight)
      weight[p] = w;
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
      w += weightOf(info, l);
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
  return weightOf(info, l) * g;
}

template <int VPT, int VEC, class L>
__global__ void xentGradWarpKernel(const float *x, const L *labels,
                                   LabelInfo info, GradScale gs, float *dx,
                                   int64_t rows) {
  const int64_t c = info.classes;
  const int lane = threadIdx.x & 31;
  for (int64_t r = blockIdx.x * int64_t(kWarpRows) + (threadIdx.x >> 5);
       r < rows; r += int64_t(gridDim.x) * kWarpRows) {
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
    loadRow<VPT, VEC>(x + r * c, c, lane, v);
    float m = kNegInf;
#pragma unroll
    for (int s = 0; s < VPT; ++s)
      m = v[s] > m ? v[s] : m;
    m = warpMax(m);
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < VPT; ++s) {
      v[s] = slotIndex<VEC>(s, lane) < c ? expf(v[s] - m) : 0.0f;
      sum += v[s];
    }
    const float f = coef / warpSum(sum);
#pragma unroll
    for (int s = 0; s < VPT; ++s) {
      // e * f, then minus coef at the label: two roundings, as the CPU.
      v[s] = __fmul_rn(v[s], f);
      if (slotIndex<VEC>(s, lane) == l)
        v[s] = __fsub_rn(v[s], coef);
    }
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
    float m = kNegInf;
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
      m = xr[i] > m ? xr[i] : m;
    m = blockMax(m, shared);
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
      sum += expf(xr[i] - m);
    const float f = coef / blockSum(sum, shared);
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x) {
      float v = __fmul_rn(expf(xr[i] - m), f);
      if (i == l)
        v = __fsub_rn(v, coef);
      dr[i] = v;
    }
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
    float m = kNegInf;
    for (int64_t k = 0; k < c; ++k) {
      const float v = x[base + k * d];
      m = v > m ? v : m;
    }
    float sum = 0.0f;
    for (int64_t k = 0; k < c; ++k)
      sum += expf(x[base + k * d] - m);
    const float f = coef / sum;
    for (int64_t k = 0; k < c; ++k) {
      float v = __fmul_rn(expf(x[base + k * d] - m), f);
      if (k == l)
        v = __fsub_rn(v, coef);
      dx[base + k * d] = v;
    }
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
  static const int errorCode = registerDeviceError(
      "kernel softmax_xent: a label is out of range [0, classes) and is not "
      "the ignore_index");
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
  const cpu::XentShape shape = cpu::checkXentOperands(
      args, scores, labels, hasWeights ? &args.tensor(2) : nullptr);
  const int64_t positions = shape.positions();
  cpu::checkLossNumel(args, reduction, lossT.numel, positions,
                      "unreduced loss must have the labels' shape",
                      "reduced loss must be a scalar");
  if (shape.c == 0 && positions > 0)
    args.invalid("scores have no classes");
  if (labels.dtype != WEFT_I64 && labels.dtype != WEFT_I32)
    args.unsupportedDType(labels.dtype);
  LabelInfo info;
  info.classes = shape.c;
  info.hasIgnore = args.attr(1) != 0;
  info.ignoreIndex = args.attr(2);
  info.weights = hasWeights ? args.tensor(2).as<float>() : nullptr;
  info.errorWord = errorWord();
  info.errorCode = errorCode;
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
    dispatchLabels(args, labels, [&](auto *pl) {
      using L = std::remove_const_t<std::remove_pointer_t<decltype(pl)>>;
      if (shape.d != 1) {
        xentColumnKernel<L><<<gridFor(positions, kBlock), kBlock, 0, stream>>>(
            x, pl, info, logProb, loss, weight, positions, shape.d);
      } else if (shape.c <= kWarpRowMax) {
        const bool vec4 = shape.c % 4 == 0 && aligned16(x) &&
                          (!logProb || aligned16(logProb));
        dispatchWarpRow(shape.c, vec4, [&](auto vpt, auto vec) {
          xentWarpKernel<decltype(vpt)::value, decltype(vec)::value, L>
              <<<gridFor(positions, kWarpRows), 32 * kWarpRows, 0, stream>>>(
                  x, pl, info, logProb, loss, weight, positions);
        });
      } else {
        xentBlockKernel<L><<<gridFor(positions, 1), kRowThreads, 0, stream>>>(
            x, pl, info, logProb, loss, weight, positions);
      }
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
  static const int errorCode = registerDeviceError(
      "kernel softmax_xent_grad: a label is out of range [0, classes) and is "
      "not the ignore_index");
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
  const cpu::XentShape shape = cpu::checkXentOperands(
      args, scores, labels, hasWeights ? &args.tensor(2) : nullptr);
  const int64_t positions = shape.positions();
  cpu::checkLossNumel(args, reduction, dloss.numel, positions,
                      "dloss of an unreduced loss must have the labels' shape",
                      "dloss of a reduced loss must be a scalar");
  if (positions == 0 || shape.c == 0) {
    if (positions > 0)
      args.invalid("scores have no classes");
    return;
  }
  if (labels.dtype != WEFT_I64 && labels.dtype != WEFT_I32)
    args.unsupportedDType(labels.dtype);
  LabelInfo info;
  info.classes = shape.c;
  info.hasIgnore = args.attr(1) != 0;
  info.ignoreIndex = args.attr(2);
  info.weights = hasWeights ? args.tensor(2).as<float>() : nullptr;
  info.errorWord = errorWord();
  info.errorCode = errorCode;
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
  dispatchLabels(args, labels, [&](auto *pl) {
    using L = std::remove_const_t<std::remove_pointer_t<decltype(pl)>>;
    if (mean) {
      xentWeightTotalKernel<L><<<1, kReduceThreads, 0, stream>>>(
          pl, info, positions, sp.at<double>(sTotal));
      checkLaunch("softmax_xent_grad");
    }
    if (shape.d != 1) {
      xentGradColumnKernel<L>
          <<<gridFor(positions, kBlock), kBlock, 0, stream>>>(
              x, pl, info, gs, dx, positions, shape.d);
    } else if (shape.c <= kWarpRowMax) {
      const bool vec4 = shape.c % 4 == 0 && aligned16(x) && aligned16(dx);
      dispatchWarpRow(shape.c, vec4, [&](auto vpt, auto vec) {
        xentGradWarpKernel<decltype(vpt)::value, decltype(vec)::value, L>
            <<<gridFor(positions, kWarpRows), 32 * kWarpRows, 0, stream>>>(
                x, pl, info, gs, dx, positions);
      });
    } else {
      xentGradBlockKernel<L><<<gridFor(positions, 1), kRowThreads, 0, stream>>>(
          x, pl, info, gs, dx, positions);
    }
  });
  checkLaunch("softmax_xent_grad");
}
