//===- LossGrad.cu - softmax_xent_grad kernels ----------------------------===//
//
// The gradient of softmax_xent with respect to the scores on the GPU (the
// version of runtime/kernels/cpu/LossGrad.cpp; Loss.cu describes the
// layouts and paths both share, XentCommon.cuh holds them).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/XentCommon.cuh"

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::math;
using namespace weft::cuda::xent;

namespace {

//===-- softmax_xent_grad -------------------------------------------------===//

/// Summed weight (double, fixed order) of the positions not ignored, for
/// the mean's gradient.
__global__ void xentWeightTotalKernel(LabelInfo info, int64_t positions,
                                      double *total) {
  __shared__ double shared[32];
  double w = 0.0;
  for (int64_t i = threadIdx.x; i < positions; i += blockDim.x) {
    const int64_t l = classOf(info, i, false);
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

/// dscores of class k (< classes) from its e^(x - max): e * f, then minus
/// coef at the label l (two roundings, as the CPU).
static __device__ inline float classGrad(float e, float f, float coef,
                                         int64_t k, int64_t l) {
  float v = __fmul_rn(e, f);
  if (k == l)
    v = __fsub_rn(v, coef);
  return v;
}

template <int VPT, int VEC, class T>
__global__ void xentGradWarpKernel(const T *x, LabelInfo info, GradScale gs,
                                   T *dx, int64_t rows) {
  const int64_t c = info.c, classes = info.classes;
  const int lane = threadIdx.x & 31;
  for (int64_t r = firstWarpRow(); r < rows; r += warpRowStep()) {
    float v[VPT];
    const int64_t l = classOf(info, r, lane == 0);
    if (l < 0) {
#pragma unroll
      for (int s = 0; s < VPT; ++s)
        v[s] = 0.0f;
      storeScores<VPT, VEC>(dx + r * c, c, lane, v);
      continue;
    }
    const float coef = coefOf(gs, info, r, l);
    loadScores<VPT, VEC>(x + r * c, c, lane, v);
    if (classes < c)
      padSlots<VPT, VEC>(v, lane, classes);
    const float m = warpRowMax(v);
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < VPT; ++s) {
      v[s] = slotValid<VEC>(s, lane, classes) ? expShift<T>(v[s], m) : 0.0f;
      sum += v[s];
    }
    const float f = coef / warpSum(sum);
#pragma unroll
    for (int s = 0; s < VPT; ++s)
      v[s] = slotValid<VEC>(s, lane, classes)
                 ? classGrad(v[s], f, coef, slotElement<VEC>(s, lane), l)
                 : 0.0f;
    storeScores<VPT, VEC>(dx + r * c, c, lane, v);
  }
}

template <class T, int E, int NV>
__global__ void __launch_bounds__(E == 1 ? kRowThreads : kPackedRowThreads)
    xentGradCachedKernel(const T *x, LabelInfo info, GradScale gs, T *dx,
                         int64_t rows) {
  __shared__ float shared[32];
  const int c = static_cast<int>(info.c);
  const int classes = static_cast<int>(info.classes);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    T *dr = dx + r * c;
    // The row first (an ignored row's read is wasted, but the label's
    // latency hides behind it).
    RowCache<T, E, NV> row;
    row.load(x + r * c, c, classes);
    if (r + gridDim.x < rows)
      row.prefetch(x + (r + gridDim.x) * c, c);
    const int l = static_cast<int>(classOf(info, r, threadIdx.x == 0));
    if (l < 0) {
      RowCache<T, E, NV>::storeZeros(dr, c);
      continue;
    }
    const float coef = coefOf(gs, info, r, l);
    float m;
    const float f = coef / row.expSum(c, shared, m);
    row.storeGrad(dr, c, classes, m, f, coef, l);
  }
}

template <class T>
__global__ void xentGradLongKernel(const T *x, LabelInfo info, GradScale gs,
                                   T *dx, int64_t rows) {
  __shared__ float shared[64];
  const int64_t c = info.c, classes = info.classes;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * c;
    T *dr = dx + r * c;
    const int64_t l = classOf(info, r, threadIdx.x == 0);
    if (l < 0) {
      for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
        storeFloat(dr + i, 0.0f);
      continue;
    }
    const float coef = coefOf(gs, info, r, l);
    float m;
    const float f = coef / longExpSum(xr, classes, shared, m);
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
      storeFloat(dr + i, i < classes ? classGrad(expShift<T>(toFloat(xr[i]), m),
                                                 f, coef, i, l)
                                     : 0.0f);
  }
}

template <class T>
__global__ void xentGradColumnKernel(const T *x, LabelInfo info, GradScale gs,
                                     T *dx, int64_t positions, int64_t d) {
  const int64_t c = info.c, classes = info.classes;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       p < positions; p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = p / d * c * d + p % d;
    const int64_t l = classOf(info, p, true);
    if (l < 0) {
      for (int64_t k = 0; k < c; ++k)
        storeFloat(dx + base + k * d, 0.0f);
      continue;
    }
    const float coef = coefOf(gs, info, p, l);
    float m;
    const float f = coef / columnExpSum(x, base, classes, d, m);
    for (int64_t k = 0; k < c; ++k)
      storeFloat(dx + base + k * d,
                 k < classes
                     ? classGrad(expShift<T>(toFloat(x[base + k * d]), m), f,
                                 coef, k, l)
                     : 0.0f);
  }
}

} // namespace

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
  const cpu::TensorArg &dloss = args.tensor(dlossIdx);
  if (hasWeights)
    args.expectDType(2, WEFT_F32);
  args.expectDType(dlossIdx, WEFT_F32);
  args.expectDType(dlossIdx + 1, scores.dtype);
  args.expectSameNumel(0, dlossIdx + 1);
  int64_t classes = 0;
  const cpu::XentShape shape =
      checkXentShape(args, hasWeights, reduction, dloss.numel, 4, classes,
                     "dloss of an unreduced loss must have the labels' shape",
                     "dloss of a reduced loss must be a scalar");
  const int64_t positions = shape.positions();
  if (positions == 0)
    return;
  const LabelInfo info =
      labelInfo(args, shape.c, classes, hasWeights, errorCode);
  const bool mean = reduction == WEFT_LOSS_MEAN;
  ScratchPlan sp;
  const int sTotal = sp.add(mean ? sizeof(double) : 0);
  sp.allocate();
  GradScale gs;
  gs.dloss = dloss.as<float>();
  gs.reduction = reduction;
  gs.total = mean ? sp.at<double>(sTotal) : nullptr;
  cudaStream_t stream = computeStream();
  if (mean) {
    xentWeightTotalKernel<<<1, kReduceThreads, 0, stream>>>(
        info, positions, sp.at<double>(sTotal));
    checkLaunch("softmax_xent_grad");
  }
  dispatchScores(scores.dtype, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T *x = scores.as<const T>();
    T *dx = args.tensor(dlossIdx + 1).as<T>();
    launchXent(
        shape, x, dx,
        [&](unsigned grid, int threads) {
          xentGradColumnKernel<T><<<grid, threads, 0, stream>>>(
              x, info, gs, dx, positions, shape.d);
        },
        [&](auto vpt, auto vec, unsigned grid, int threads) {
          xentGradWarpKernel<decltype(vpt)::value, decltype(vec)::value, T>
              <<<grid, threads, 0, stream>>>(x, info, gs, dx, positions);
        },
        [&](auto e, auto nv, int threads) {
          auto *kernel =
              xentGradCachedKernel<T, decltype(e)::value, decltype(nv)::value>;
          kernel<<<residentBlocks(kernel, threads, positions), threads, 0,
                   stream>>>(x, info, gs, dx, positions);
        },
        [&](unsigned grid, int threads) {
          xentGradLongKernel<T>
              <<<grid, threads, 0, stream>>>(x, info, gs, dx, positions);
        });
  });
  checkLaunch("softmax_xent_grad");
}
