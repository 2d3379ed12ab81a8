//===- Pooling.cu - max_pool, avg_pool and their gradients ----------------===//
//
// The GPU versions of runtime/kernels/cpu/Pooling.cpp and PoolingGrad.cpp
// (f32, 1 to 3 spatial dims normalized to 3, ceil-mode extents fixed by the
// result's dims, so taps outside the input are simply skipped).
//
// Forward: one thread per output. max_pool starts from -inf (padding never
// wins) and lets a NaN through; avg_pool adds the taps inside the input in
// window order (d, h, w) from 0 and divides by the CPU's divisor (taps
// inside the padded input, or inside the input itself), so its results are
// bitwise the CPU's. A global average pool repeats the CPU's 8-way
// partial sums (eight lanes of a warp, combined in the CPU's pairing) and
// its multiply by 1/size.
//
// Gradients gather instead of scattering: one thread per input element
// walks the outputs whose window covers it, in the order the CPU's
// scatter visits them, so there are no atomics and the sums repeat. For
// max_pool_grad a first kernel records each window's argmax (first
// maximum in window order, the first NaN beating every number, as
// PyTorch); the gather then adds dy of the windows whose argmax is the
// element.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/PoolWindow.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/MathUtil.cuh"

#include <climits>

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::math;

namespace {

/// PoolWindow.h's tapCount (avg_pool's divisor factor along d) on the device:
/// the CPU's leaves lo and hi uninitialized, so it cannot be constexpr.
static __device__ inline int64_t tapCount(const Window &g, bool countPad, int d,
                                          int64_t o) {
  if (countPad)
    return cpu::paddedTaps(g, d, o);
  int64_t lo, hi;
  g.validTaps(d, o, lo, hi);
  return hi - lo;
}

__global__ void maxPoolKernel(const float *x, float *y, Window g,
                              int64_t total) {
  const int64_t outSize = g.outSize(), inSize = g.inSize();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float *xp = x + i / outSize * inSize;
    int64_t o[3], lo[3], hi[3];
    g.outputWindow(i % outSize, o, lo, hi);
    float best = kNegInf;
    forEachInBox(lo, hi, [&](int64_t kd, int64_t kh, int64_t kw) {
      const float v = xp[g.tapOffset(o, kd, kh, kw)];
      best = (v > best || v != v) ? v : best;
    });
    y[i] = best;
  }
}

__global__ void avgPoolKernel(const float *x, float *y, Window g, bool countPad,
                              int64_t total) {
  const int64_t outSize = g.outSize(), inSize = g.inSize();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float *xp = x + i / outSize * inSize;
    int64_t o[3], lo[3], hi[3];
    g.outputWindow(i % outSize, o, lo, hi);
    float sum = 0.0f;
    forEachInBox(lo, hi, [&](int64_t kd, int64_t kh, int64_t kw) {
      sum += xp[g.tapOffset(o, kd, kh, kw)];
    });
    const int64_t count = tapCount(g, countPad, 0, o[0]) *
                          tapCount(g, countPad, 1, o[1]) *
                          tapCount(g, countPad, 2, o[2]);
    y[i] = cpu::divideByTaps(sum, count);
  }
}

/// Global average: eight lanes per plane. Lane j sums elements j, j+8, ...
/// of the plane's whole 8-element groups (the CPU's acc[j]); the partials
/// combine as ((a0+a4)+(a1+a5)) + ((a2+a6)+(a3+a7)), then lane 0 adds the
/// tail in order and scales by 1/size.
__global__ void globalAvgPoolKernel(const float *x, float *y, int64_t planes,
                                    int64_t size, float scale) {
  const int lane = threadIdx.x & 31, j = lane & 7;
  const int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5;
  const int64_t warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  const int64_t whole = size / 8 * 8;
  // Every lane of a warp runs the same iterations (the shuffles need them).
  for (int64_t base = warp * 4; base < planes; base += warps * 4) {
    const int64_t p = base + (lane >> 3);
    const bool valid = p < planes;
    const float *xp = x + (valid ? p : 0) * size;
    float acc = 0.0f;
    if (valid)
      for (int64_t i = 0; i < whole; i += 8)
        acc += xp[i + j];
    float t = acc + __shfl_xor_sync(0xffffffffu, acc, 4);
    float u = t + __shfl_xor_sync(0xffffffffu, t, 1);
    float s = u + __shfl_xor_sync(0xffffffffu, u, 2);
    if (valid && j == 0) {
      for (int64_t i = whole; i < size; ++i)
        s += xp[i];
      y[p] = s * scale;
    }
  }
}

/// Each output's argmax: the plane-relative offset of its first maximum in
/// window order (a NaN beats numbers; the first NaN wins), -1 without taps.
__global__ void maxPoolArgmaxKernel(const float *x, int32_t *arg, Window g,
                                    int64_t total) {
  const int64_t outSize = g.outSize(), inSize = g.inSize();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float *xp = x + i / outSize * inSize;
    int64_t o[3], lo[3], hi[3];
    g.outputWindow(i % outSize, o, lo, hi);
    float best = 0.0f;
    int64_t pos = -1;
    for (int64_t kd = lo[0]; kd < hi[0]; ++kd)
      for (int64_t kh = lo[1]; kh < hi[1]; ++kh)
        for (int64_t kw = lo[2]; kw < hi[2]; ++kw) {
          const int64_t off = g.tapOffset(o, kd, kh, kw);
          const float v = xp[off];
          if (pos < 0 || v > best || (v != v && best == best)) {
            best = v;
            pos = off;
          }
        }
    arg[i] = static_cast<int32_t>(pos);
  }
}

/// dx of each input element: dy of the windows whose argmax it is, in
/// output order (od, oh, ow), as the CPU adds them.
__global__ void maxPoolGradKernel(const int32_t *arg, const float *dy,
                                  float *dx, Window g, int64_t total) {
  const int64_t outSize = g.outSize(), inSize = g.inSize();
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t plane = e / inSize, q = e % inSize;
    int64_t i[3], lo[3], hi[3];
    g.coveringWindow(q, i, lo, hi);
    const int32_t *ap = arg + plane * outSize;
    const float *dyp = dy + plane * outSize;
    float acc = 0.0f;
    forEachInBox(lo, hi, [&](int64_t od, int64_t oh, int64_t ow) {
      const int64_t o = g.outputAt(od, oh, ow);
      if (ap[o] == q)
        acc += dyp[o];
    });
    dx[e] = acc;
  }
}

/// dx of each input element: dy / divisor of every window covering it.
/// The CPU's scatter visits a given element in window order (od, oh), then
/// taps kw ascending, i.e. ow descending.
__global__ void avgPoolGradKernel(const float *dy, float *dx, Window g,
                                  bool countPad, int64_t total) {
  const int64_t outSize = g.outSize(), inSize = g.inSize();
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t plane = e / inSize, q = e % inSize;
    int64_t i[3], lo[3], hi[3];
    g.coveringWindow(q, i, lo, hi);
    const float *dyp = dy + plane * outSize;
    float acc = 0.0f;
    for (int64_t od = lo[0]; od < hi[0]; ++od) {
      const int64_t cd = tapCount(g, countPad, 0, od);
      for (int64_t oh = lo[1]; oh < hi[1]; ++oh) {
        const int64_t cdh = cd * tapCount(g, countPad, 1, oh);
        for (int64_t ow = hi[2] - 1; ow >= lo[2]; --ow)
          acc += cpu::divideByTaps(dyp[g.outputAt(od, oh, ow)],
                                   cdh * tapCount(g, countPad, 2, ow));
      }
    }
    dx[e] = acc;
  }
}

bool isGlobal(const cpu::WindowGeometry &g) {
  for (int d = 0; d < cpu::WindowGeometry::kDims; ++d)
    if (g.out[d] != 1 || g.kernel[d] != g.in[d] || g.padBegin[d] != 0 ||
        g.dilation[d] != 1)
      return false;
  return true;
}

void checkPoolTensors(const cpu::KernelArgs &args) {
  args.expectTensors(2, 2);
  args.expectDType(0, WEFT_F32);
  args.expectDType(1, WEFT_F32);
  cpu::checkPoolOperands(args, args.tensor(0), args.tensor(1));
}

void checkPoolGradTensors(const cpu::KernelArgs &args, const cpu::TensorArg &x,
                          const cpu::TensorArg &y) {
  for (int i = 0; i < args.numTensors(); ++i)
    args.expectDType(i, WEFT_F32);
  cpu::checkPoolOperands(args, x, y);
}

} // namespace

extern "C" void weft_cuda_k_max_pool(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("max_pool", bufs, desc);
  checkPoolTensors(args);
  const cpu::TensorArg &x = args.tensor(0), &y = args.tensor(1);
  const Window g = Window::from(cpu::makeMaxPoolGeometry(args, x, y));
  if (y.numel == 0)
    return;
  maxPoolKernel<<<blocksFor(y.numel), kBlock, 0, computeStream()>>>(
      x.as<float>(), y.as<float>(), g, y.numel);
  checkLaunch("max_pool");
}

extern "C" void weft_cuda_k_avg_pool(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("avg_pool", bufs, desc);
  checkPoolTensors(args);
  const cpu::TensorArg &x = args.tensor(0), &y = args.tensor(1);
  bool countPad;
  const cpu::WindowGeometry geometry =
      cpu::makeAvgPoolGeometry(args, x, y, countPad);
  const Window g = Window::from(geometry);
  if (y.numel == 0)
    return;
  cudaStream_t stream = computeStream();
  if (isGlobal(geometry)) {
    const int64_t planes = x.dims[0] * x.dims[1];
    const int64_t size = g.inSize();
    // Four planes per warp.
    globalAvgPoolKernel<<<gridFor(planes, kBlock / 8), kBlock, 0, stream>>>(
        x.as<float>(), y.as<float>(), planes, size,
        1.0f / static_cast<float>(size));
  } else {
    avgPoolKernel<<<blocksFor(y.numel), kBlock, 0, stream>>>(
        x.as<float>(), y.as<float>(), g, countPad, y.numel);
  }
  checkLaunch("avg_pool");
}

extern "C" void weft_cuda_k_max_pool_grad(void *const *bufs,
                                          const int64_t *desc) {
  cpu::KernelArgs args("max_pool_grad", bufs, desc);
  args.expectTensors(3, 3);
  const cpu::TensorArg &x = args.tensor(0), &dy = args.tensor(1),
                       &dx = args.tensor(2);
  checkPoolGradTensors(args, x, dy);
  args.expectSameNumel(0, 2);
  const Window g = Window::from(cpu::makeMaxPoolGeometry(args, x, dy));
  if (g.inSize() > INT32_MAX)
    args.invalid("input planes of more than 2^31 elements");
  if (dx.numel == 0)
    return;
  if (dy.numel == 0) {
    zero(dx.data, static_cast<size_t>(dx.bytes()));
    return;
  }
  ScratchPlan sp;
  const int sArg = sp.add(static_cast<size_t>(dy.numel) * sizeof(int32_t));
  sp.allocate();
  int32_t *arg = sp.at<int32_t>(sArg);
  cudaStream_t stream = computeStream();
  maxPoolArgmaxKernel<<<blocksFor(dy.numel), kBlock, 0, stream>>>(
      x.as<float>(), arg, g, dy.numel);
  checkLaunch("max_pool_grad");
  maxPoolGradKernel<<<blocksFor(dx.numel), kBlock, 0, stream>>>(
      arg, dy.as<float>(), dx.as<float>(), g, dx.numel);
  checkLaunch("max_pool_grad");
}

extern "C" void weft_cuda_k_avg_pool_grad(void *const *bufs,
                                          const int64_t *desc) {
  cpu::KernelArgs args("avg_pool_grad", bufs, desc);
  args.expectTensors(2, 2);
  const cpu::TensorArg &dy = args.tensor(0), &dx = args.tensor(1);
  checkPoolGradTensors(args, dx, dy);
  bool countPad;
  const Window g =
      Window::from(cpu::makeAvgPoolGeometry(args, dx, dy, countPad));
  if (dx.numel == 0)
    return;
  if (dy.numel == 0) {
    zero(dx.data, static_cast<size_t>(dx.bytes()));
    return;
  }
  avgPoolGradKernel<<<blocksFor(dx.numel), kBlock, 0, computeStream()>>>(
      dy.as<float>(), dx.as<float>(), g, countPad, dx.numel);
  checkLaunch("avg_pool_grad");
}
