//===- Optimizers.cu - adamw and sgd kernels ------------------------------===//
//
// The GPU versions of runtime/kernels/cpu/Optimizers.cpp: torch.optim's
// AdamW and SGD (1.13's single-tensor paths), one fused elementwise kernel
// per call. Each float operation is written with an explicitly rounded
// intrinsic (__fmul_rn, __fadd_rn, ...) in the CPU's order: nvcc would
// otherwise fuse multiply-adds the CPU rounds twice, and parameters
// updated a million times would drift from the CPU's trajectory. The
// constants derived from the attributes are rounded on the host exactly as
// the CPU does; those that depend on the step number are computed on the
// device, because the step is an i64 in device memory (it advances on the
// GPU, and reading it back would synchronize).
//
// Results may share buffers with the operands they replace: each element
// is read before it is written, by the thread that writes it. AdamW takes
// the step's powers once per block and moves aligned tensors four floats
// at a time (the same operations per element, so the same bits).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/KernelArgs.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/MathUtil.cuh"

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::math;

namespace {

/// Reads the step number into t; below 1 the first thread records the
/// error in the device error word, and the update must be skipped (false).
static __device__ inline bool readStep(const int64_t *step, int *errorWord,
                                       int errorCode, int64_t &t) {
  t = *step;
  if (t < 1) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
      atomicCAS(errorWord, 0, errorCode);
    return false;
  }
  return true;
}

struct AdamConstants {
  double lr, beta1, beta2, weightDecay;
  LrSchedule schedule;
  float b1, b2, oneMinusB1, oneMinusB2, eps;
};

/// One element's AdamW update, in the CPU's order of rounded operations.
struct AdamUpdate {
  float decay, b1, b2, oneMinusB1, oneMinusB2, eps, stepSize, correction2Sqrt;
  __device__ inline void operator()(float param, float g, float m, float v,
                                    float &paramOut, float &mOut,
                                    float &vOut) const {
    const float p = __fmul_rn(param, decay);
    const float mi = __fadd_rn(__fmul_rn(m, b1), __fmul_rn(g, oneMinusB1));
    const float vi =
        __fadd_rn(__fmul_rn(v, b2), __fmul_rn(__fmul_rn(g, g), oneMinusB2));
    const float denom =
        __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), correction2Sqrt), eps);
    paramOut = __fsub_rn(p, __fmul_rn(stepSize, __fdiv_rn(mi, denom)));
    mOut = mi;
    vOut = vi;
  }
};

/// The step's constants, once per block (the first thread reads the step
/// and takes the powers in double): false when the step is invalid.
__device__ inline bool adamStepConstants(const int64_t *step,
                                         const AdamConstants &k, AdamUpdate &u,
                                         int *errorWord, int errorCode) {
  __shared__ float decay, stepSize, correction2Sqrt;
  __shared__ int valid;
  if (threadIdx.x == 0) {
    int64_t t;
    valid = readStep(step, errorWord, errorCode, t) ? 1 : 0;
    if (valid) {
      // The update's rate and bias corrections in double, then rounded to
      // float, as the CPU.
      const double lr = scheduledLr(k.schedule, k.lr, t);
      const double correction1 = 1.0 - pow(k.beta1, static_cast<double>(t));
      const double correction2 = 1.0 - pow(k.beta2, static_cast<double>(t));
      decay = static_cast<float>(1.0 - lr * k.weightDecay);
      stepSize = static_cast<float>(lr / correction1);
      correction2Sqrt = static_cast<float>(sqrt(correction2));
    }
  }
  __syncthreads();
  u = {decay,        k.b1,  k.b2,     k.oneMinusB1,
       k.oneMinusB2, k.eps, stepSize, correction2Sqrt};
  return valid != 0;
}

/// Grid-stride AdamW; with kVec every pointer is 16-byte aligned and the
/// first n / 4 * 4 elements go four at a time (float4), the rest one by
/// one. Each thread reads its elements before it writes them (results may
/// share the operands' buffers).
template <bool kVec>
__global__ void adamwKernel(const float *param, const float *grad,
                            const float *m, const float *v, const int64_t *step,
                            float *paramOut, float *mOut, float *vOut,
                            int64_t n, AdamConstants k, int *errorWord,
                            int errorCode) {
  AdamUpdate u;
  if (!adamStepConstants(step, k, u, errorWord, errorCode))
    return;
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t done = 0;
  if (kVec) {
    const int64_t quads = n / 4;
    for (int64_t q = first; q < quads; q += stride) {
      const float4 p4 = reinterpret_cast<const float4 *>(param)[q];
      const float4 g4 = reinterpret_cast<const float4 *>(grad)[q];
      const float4 m4 = reinterpret_cast<const float4 *>(m)[q];
      const float4 v4 = reinterpret_cast<const float4 *>(v)[q];
      float4 po, mo, vo;
      u(p4.x, g4.x, m4.x, v4.x, po.x, mo.x, vo.x);
      u(p4.y, g4.y, m4.y, v4.y, po.y, mo.y, vo.y);
      u(p4.z, g4.z, m4.z, v4.z, po.z, mo.z, vo.z);
      u(p4.w, g4.w, m4.w, v4.w, po.w, mo.w, vo.w);
      reinterpret_cast<float4 *>(paramOut)[q] = po;
      reinterpret_cast<float4 *>(mOut)[q] = mo;
      reinterpret_cast<float4 *>(vOut)[q] = vo;
    }
    done = quads * 4;
  }
  for (int64_t i = done + first; i < n; i += stride)
    u(param[i], grad[i], m[i], v[i], paramOut[i], mOut[i], vOut[i]);
}

struct SgdConstants {
  double lr;
  LrSchedule schedule;
  float momentum, dampening, weightDecay;
  bool nesterov;
};

__global__ void sgdKernel(const float *param, const float *grad,
                          const float *buf, const int64_t *step,
                          float *paramOut, float *bufOut, int64_t n,
                          SgdConstants k, int *errorWord, int errorCode) {
  int64_t t;
  if (!readStep(step, errorWord, errorCode, t))
    return;
  // PyTorch creates the momentum buffer on the first step as a copy of the
  // (decayed) gradient; later steps blend it.
  const bool firstStep = t == 1;
  const float lr = static_cast<float>(scheduledLr(k.schedule, k.lr, t));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float p = param[i];
    float d = grad[i];
    if (k.weightDecay != 0.0f)
      d = __fadd_rn(d, __fmul_rn(p, k.weightDecay));
    if (buf) {
      const float bi = firstStep ? d
                                 : __fadd_rn(__fmul_rn(buf[i], k.momentum),
                                             __fmul_rn(d, k.dampening));
      bufOut[i] = bi;
      d = k.nesterov ? __fadd_rn(d, __fmul_rn(bi, k.momentum)) : bi;
    }
    paramOut[i] = __fsub_rn(p, __fmul_rn(d, lr));
  }
}

void expectStep(const cpu::KernelArgs &args, int index) {
  const cpu::TensorArg &step = args.tensor(index);
  if (step.dtype != WEFT_I64 || step.numel != 1)
    args.invalid("the step must be one i64");
}

void expectF32Like(const cpu::KernelArgs &args, int first, int last) {
  for (int i = first; i <= last; ++i) {
    args.expectDType(i, WEFT_F32);
    args.expectSameNumel(first, i);
  }
}

} // namespace

extern "C" void weft_cuda_k_adamw(void *const *bufs, const int64_t *desc) {
  static const int errorCode =
      registerDeviceError("kernel adamw: the step number must be at least 1");
  cpu::KernelArgs args("adamw", bufs, desc);
  args.expectTensors(8, 8);
  args.expectAttrs(5);
  expectF32Like(args, 0, 3);
  expectF32Like(args, 5, 7);
  args.expectSameNumel(0, 5);
  expectStep(args, 4);
  const double lr = args.attrDouble(0), beta1 = args.attrDouble(1),
               beta2 = args.attrDouble(2), eps = args.attrDouble(3),
               weightDecay = args.attrDouble(4);
  AdamConstants k;
  k.lr = lr;
  k.beta1 = beta1;
  k.beta2 = beta2;
  k.weightDecay = weightDecay;
  k.schedule = args.lrSchedule(5);
  k.b1 = static_cast<float>(beta1);
  k.b2 = static_cast<float>(beta2);
  k.oneMinusB1 = static_cast<float>(1.0 - beta1);
  k.oneMinusB2 = static_cast<float>(1.0 - beta2);
  k.eps = static_cast<float>(eps);
  const int64_t n = args.tensor(0).numel;
  if (n == 0)
    return;
  bool aligned = true;
  for (int i : {0, 1, 2, 3, 5, 6, 7})
    aligned &= reinterpret_cast<uintptr_t>(args.tensor(i).data) % 16 == 0;
  auto kernel = aligned ? adamwKernel<true> : adamwKernel<false>;
  kernel<<<blocksFor(aligned ? (n + 3) / 4 : n), kBlock, 0, computeStream()>>>(
      args.tensor(0).as<float>(), args.tensor(1).as<float>(),
      args.tensor(2).as<float>(), args.tensor(3).as<float>(),
      args.tensor(4).as<int64_t>(), args.tensor(5).as<float>(),
      args.tensor(6).as<float>(), args.tensor(7).as<float>(), n, k, errorWord(),
      errorCode);
  checkLaunch("adamw");
}

extern "C" void weft_cuda_k_sgd(void *const *bufs, const int64_t *desc) {
  static const int errorCode =
      registerDeviceError("kernel sgd: the step number must be at least 1");
  cpu::KernelArgs args("sgd", bufs, desc);
  args.expectAttrs(6);
  const bool hasBuffer = args.attr(5) != 0;
  args.expectTensors(hasBuffer ? 6 : 4, hasBuffer ? 6 : 4);
  const int stepIndex = hasBuffer ? 3 : 2;
  const int firstOut = stepIndex + 1;
  expectF32Like(args, 0, hasBuffer ? 2 : 1);
  expectF32Like(args, firstOut, args.numTensors() - 1);
  args.expectSameNumel(0, firstOut);
  expectStep(args, stepIndex);
  SgdConstants k;
  k.lr = args.attrDouble(0);
  k.schedule = args.lrSchedule(6);
  k.momentum = static_cast<float>(args.attrDouble(1));
  k.dampening = static_cast<float>(1.0 - args.attrDouble(2));
  k.weightDecay = static_cast<float>(args.attrDouble(3));
  k.nesterov = args.attr(4) != 0;
  const int64_t n = args.tensor(0).numel;
  if (n == 0)
    return;
  sgdKernel<<<blocksFor(n), kBlock, 0, computeStream()>>>(
      args.tensor(0).as<float>(), args.tensor(1).as<float>(),
      hasBuffer ? args.tensor(2).as<float>() : nullptr,
      args.tensor(stepIndex).as<int64_t>(), args.tensor(firstOut).as<float>(),
      hasBuffer ? args.tensor(firstOut + 1).as<float>() : nullptr, n, k,
      errorWord(), errorCode);
  checkLaunch("sgd");
}
