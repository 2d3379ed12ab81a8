//===- RowOps.cu - softmax, layer_norm, batch_norm and their gradients ----===//
//
// The GPU versions of runtime/kernels/cpu/Normalization.cpp and
// NormalizationGrad.cpp, all f32, with the CPU's formulas:
//
//   softmax       y = e^(x - max) / sum,   log: (x - max) - log(sum)
//   softmax_grad  dx = y * (dy - sum(dy * y)),  log: dy - e^y * sum(dy)
//   layer_norm    y = (x - mean) * rstd * scale + bias,
//                 rstd = 1 / sqrt(mean((x - mean)^2) + eps)  (two passes)
//   layer_norm_grad  dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
//                 g = dy * scale; dscale = sum_rows dy * xhat, dbias = sum dy
//   batch_norm    y = x * m + (bias - mean * m),  m = scale / sqrt(var + eps)
//
// Rows along the innermost axis of up to 1024 elements go one per warp,
// held in registers (32 per lane at most) and read with float4 loads when
// the row length and the pointers allow; longer rows go one per block of
// 512 threads in several passes over the row (which stays in L1/L2).
// Softmax over a non-innermost axis runs one thread per column, strided.
// Every reduction has a fixed order given the shape, and layer_norm_grad's
// column sums are per-chunk partials summed in chunk order by a second
// kernel (no float atomics), so results repeat bitwise.
//
// Outputs may alias inputs (y = x in place): each element is read before
// it is written, by the thread that writes it.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/NormShapes.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/DeviceScalar.cuh"
#include "runtime/kernels/cuda/MathUtil.cuh"

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::math;

namespace {

//===-- Row access --------------------------------------------------------===//

// The warp-per-row kernels hold a row in register slots (MathUtil.cuh's
// loadRow / storeRow); the block-per-row ones walk it VEC floats at a time.

/// VEC consecutive floats at p (16-byte aligned when VEC == 4).
template <int VEC>
static __device__ inline void loadVec(const float *p, float (&v)[VEC]) {
  if constexpr (VEC == 4) {
    const float4 t = *reinterpret_cast<const float4 *>(p);
    v[0] = t.x;
    v[1] = t.y;
    v[2] = t.z;
    v[3] = t.w;
  } else {
    v[0] = *p;
  }
}

template <int VEC>
static __device__ inline void storeVec(float *p, const float (&v)[VEC]) {
  if constexpr (VEC == 4)
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
  else
    *p = v[0];
}

/// The bits of v as a bf16 or f16 (H), rounded as the cast kernel rounds.
template <class H> static __device__ inline uint32_t castBits(float v) {
  if constexpr (std::is_same_v<H, data::BF16>)
    return data::toBF16(v).bits;
  else
    return data::toF16(v).bits;
}

/// VEC values rounded to bf16 or f16 (8-byte aligned when VEC == 4): a
/// layer norm whose cast weft-fuse-elementwise folded in.
template <int VEC, class H>
static __device__ inline void storeVec(H *p, const float (&v)[VEC]) {
  storeVec16<VEC>(p, v, [](float x) { return castBits<H>(x); });
}

/// storeRow for any output element type.
template <int VPT, int VEC, class Y>
static __device__ inline void storeRowAs(Y *row, int64_t n, int lane,
                                         const float (&v)[VPT]) {
  if constexpr (std::is_same_v<Y, float>)
    storeRow<VPT, VEC>(row, n, lane, v);
  else
    storeRow16<VPT, VEC>(row, n, lane, v,
                         [](float x) { return castBits<Y>(x); });
}

/// One pass of a block over row[0, n): calls f(i, v) for each of this
/// thread's VEC-float chunks in turn (block-strided), i the chunk's start
/// and v its values.
template <int VEC, class F>
static __device__ inline void forEachChunk(const float *row, int64_t n, F &&f) {
  for (int64_t i = threadIdx.x * int64_t(VEC); i < n;
       i += int64_t(blockDim.x) * VEC) {
    float v[VEC];
    loadVec<VEC>(row + i, v);
    f(i, v);
  }
}

//===-- Host dispatch -----------------------------------------------------===//

/// Checks a call of `tensors` f32 tensors and `attrs` attributes.
void expectF32Call(const cpu::KernelArgs &args, int tensors, int attrs) {
  args.expectTensors(tensors, tensors);
  args.expectAttrs(attrs);
  cpu::expectAllF32(args);
}

/// Calls f(Int<VEC>) for a block-per-row kernel.
template <class F> void dispatchVec(bool vec4, F &&f) {
  if (vec4)
    f(Int<4>());
  else
    f(Int<1>());
}

/// Launches a row-wise op over `rows` rows of n floats, float4 access when
/// `vec4`: rows of up to kWarpRowMax go one per warp, warp(Int<VPT>,
/// Int<VEC>, grid, threads) launching the op's warp kernel; longer rows one
/// per block, block(Int<VEC>, grid, threads).
template <class Warp, class Block>
void launchRows(int64_t rows, int64_t n, bool vec4, Warp &&warp,
                Block &&block) {
  if (n <= kWarpRowMax) {
    dispatchWarpRow(n, vec4, [&](auto vpt, auto vec) {
      warp(vpt, vec, gridFor(rows, kWarpRows), 32 * kWarpRows);
    });
  } else {
    dispatchVec(vec4,
                [&](auto vec) { block(vec, gridFor(rows, 1), kRowThreads); });
  }
}

//===-- softmax -----------------------------------------------------------===//

template <int VPT, int VEC>
__global__ void softmaxWarpKernel(const float *x, float *y, int64_t rows,
                                  int64_t n, bool log) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = firstWarpRow(); r < rows; r += warpRowStep()) {
    float v[VPT];
    loadRow<VPT, VEC>(x + r * n, n, lane, v, kNegInf);
    const float m = warpRowMax(v);
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < VPT; ++s) {
      if (slotValid<VEC>(s, lane, n)) {
        const float e = expf(v[s] - m);
        sum += e;
        if (!log)
          v[s] = e;
      }
    }
    sum = warpSum(sum);
    if (log) {
      // (x - max) - log(sum), as the CPU: keeps the small log term.
      const float logSum = logf(sum);
#pragma unroll
      for (int s = 0; s < VPT; ++s)
        v[s] = (v[s] - m) - logSum;
    } else {
      const float inv = 1.0f / sum;
#pragma unroll
      for (int s = 0; s < VPT; ++s)
        v[s] *= inv;
    }
    storeRow<VPT, VEC>(y + r * n, n, lane, v);
  }
}

template <int VEC>
__global__ void softmaxBlockKernel(const float *x, float *y, int64_t rows,
                                   int64_t n, bool log) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    float m = kNegInf;
    forEachChunk<VEC>(xr, n, [&](int64_t, float(&v)[VEC]) {
#pragma unroll
      for (int q = 0; q < VEC; ++q)
        m = v[q] > m ? v[q] : m;
    });
    m = blockMax(m, shared);
    float sum = 0.0f;
    forEachChunk<VEC>(xr, n, [&](int64_t, float(&v)[VEC]) {
#pragma unroll
      for (int q = 0; q < VEC; ++q)
        sum += expf(v[q] - m);
    });
    sum = blockSum(sum, shared);
    const float logSum = logf(sum), inv = 1.0f / sum;
    forEachChunk<VEC>(xr, n, [&](int64_t i, float(&v)[VEC]) {
#pragma unroll
      for (int q = 0; q < VEC; ++q)
        v[q] = log ? (v[q] - m) - logSum : expf(v[q] - m) * inv;
      storeVec<VEC>(yr + i, v);
    });
  }
}

/// Softmax down the columns of [outer, n, inner] blocks, one thread per
/// (outer, inner) column.
__global__ void softmaxColumnKernel(const float *x, float *y, int64_t outer,
                                    int64_t n, int64_t inner, bool log) {
  const int64_t columns = outer * inner;
  for (int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       col < columns; col += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = col / inner * n * inner + col % inner;
    float m;
    const float sum = columnExpSum(x, base, n, inner, m);
    const float logSum = logf(sum), inv = 1.0f / sum;
    for (int64_t k = 0; k < n; ++k) {
      const float v = x[base + k * inner];
      y[base + k * inner] = log ? (v - m) - logSum : expf(v - m) * inv;
    }
  }
}

__global__ void fillKernel(float *y, float value) { *y = value; }

//===-- softmax_grad ------------------------------------------------------===//

template <int VPT, int VEC>
__global__ void softmaxGradWarpKernel(const float *y, const float *dy,
                                      float *dx, int64_t rows, int64_t n,
                                      bool log) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = firstWarpRow(); r < rows; r += warpRowStep()) {
    float yv[VPT], dv[VPT];
    loadRow<VPT, VEC>(y + r * n, n, lane, yv, 0.0f);
    loadRow<VPT, VEC>(dy + r * n, n, lane, dv, 0.0f);
    float s = 0.0f;
#pragma unroll
    for (int q = 0; q < VPT; ++q)
      s += log ? dv[q] : dv[q] * yv[q];
    s = warpSum(s);
#pragma unroll
    for (int q = 0; q < VPT; ++q)
      dv[q] = log ? dv[q] - expf(yv[q]) * s : yv[q] * (dv[q] - s);
    storeRow<VPT, VEC>(dx + r * n, n, lane, dv);
  }
}

template <int VEC>
__global__ void softmaxGradBlockKernel(const float *y, const float *dy,
                                       float *dx, int64_t rows, int64_t n,
                                       bool log) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *yr = y + r * n, *dyr = dy + r * n;
    float *dxr = dx + r * n;
    float s = 0.0f;
    forEachChunk<VEC>(yr, n, [&](int64_t i, float(&yv)[VEC]) {
      float dv[VEC];
      loadVec<VEC>(dyr + i, dv);
#pragma unroll
      for (int q = 0; q < VEC; ++q)
        s += log ? dv[q] : dv[q] * yv[q];
    });
    s = blockSum(s, shared);
    forEachChunk<VEC>(yr, n, [&](int64_t i, float(&yv)[VEC]) {
      float dv[VEC];
      loadVec<VEC>(dyr + i, dv);
#pragma unroll
      for (int q = 0; q < VEC; ++q)
        dv[q] = log ? dv[q] - expf(yv[q]) * s : yv[q] * (dv[q] - s);
      storeVec<VEC>(dxr + i, dv);
    });
  }
}

__global__ void softmaxGradColumnKernel(const float *y, const float *dy,
                                        float *dx, int64_t outer, int64_t n,
                                        int64_t inner, bool log) {
  const int64_t columns = outer * inner;
  for (int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       col < columns; col += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = col / inner * n * inner + col % inner;
    float s = 0.0f;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = base + k * inner;
      s += log ? dy[i] : dy[i] * y[i];
    }
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = base + k * inner;
      const float yv = y[i], dv = dy[i];
      dx[i] = log ? dv - expf(yv) * s : yv * (dv - s);
    }
  }
}

//===-- layer_norm --------------------------------------------------------===//

/// mean and rstd of a row from the lane's share (padding slots hold 0),
/// as layerNormRow: the mean, then the mean squared deviation.
template <int VPT, int VEC>
static __device__ inline void rowMoments(const float (&v)[VPT], int lane,
                                         int64_t n, float eps, float &mean,
                                         float &rstd) {
  float s = 0.0f;
#pragma unroll
  for (int q = 0; q < VPT; ++q)
    s += v[q];
  mean = warpSum(s) / static_cast<float>(n);
  float sq = 0.0f;
#pragma unroll
  for (int q = 0; q < VPT; ++q)
    if (slotValid<VEC>(q, lane, n)) {
      const float d = v[q] - mean;
      sq += d * d;
    }
  const float var = warpSum(sq) / static_cast<float>(n);
  rstd = 1.0f / sqrtf(var + eps);
}

template <int VPT, int VEC, class Y>
__global__ void layerNormWarpKernel(const float *x, const float *scale,
                                    const float *bias, Y *y, int64_t rows,
                                    int64_t n, float eps) {
  const int lane = threadIdx.x & 31;
  float sv[VPT], bv[VPT];
  loadRow<VPT, VEC>(scale, n, lane, sv, 0.0f);
  if (bias)
    loadRow<VPT, VEC>(bias, n, lane, bv, 0.0f);
  for (int64_t r = firstWarpRow(); r < rows; r += warpRowStep()) {
    float v[VPT];
    loadRow<VPT, VEC>(x + r * n, n, lane, v, 0.0f);
    float mean, rstd;
    rowMoments<VPT, VEC>(v, lane, n, eps, mean, rstd);
#pragma unroll
    for (int q = 0; q < VPT; ++q)
      v[q] = bias ? (v[q] - mean) * rstd * sv[q] + bv[q]
                  : (v[q] - mean) * rstd * sv[q];
    storeRowAs<VPT, VEC>(y + r * n, n, lane, v);
  }
}

/// Block-wide mean and rstd of row xr (three passes share this).
template <int VEC>
static __device__ inline void blockMoments(const float *xr, int64_t n,
                                           float eps, float *shared,
                                           float &mean, float &rstd) {
  float s = 0.0f;
  forEachChunk<VEC>(xr, n, [&](int64_t, float(&v)[VEC]) {
#pragma unroll
    for (int q = 0; q < VEC; ++q)
      s += v[q];
  });
  mean = blockSum(s, shared) / static_cast<float>(n);
  float sq = 0.0f;
  forEachChunk<VEC>(xr, n, [&](int64_t, float(&v)[VEC]) {
#pragma unroll
    for (int q = 0; q < VEC; ++q) {
      const float d = v[q] - mean;
      sq += d * d;
    }
  });
  const float var = blockSum(sq, shared) / static_cast<float>(n);
  rstd = 1.0f / sqrtf(var + eps);
}

template <int VEC, class Y>
__global__ void layerNormBlockKernel(const float *x, const float *scale,
                                     const float *bias, Y *y, int64_t rows,
                                     int64_t n, float eps) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *xr = x + r * n;
    Y *yr = y + r * n;
    float mean, rstd;
    blockMoments<VEC>(xr, n, eps, shared, mean, rstd);
    forEachChunk<VEC>(xr, n, [&](int64_t i, float(&v)[VEC]) {
      float sv[VEC], bv[VEC];
      loadVec<VEC>(scale + i, sv);
      if (bias)
        loadVec<VEC>(bias + i, bv);
#pragma unroll
      for (int q = 0; q < VEC; ++q)
        v[q] = bias ? (v[q] - mean) * rstd * sv[q] + bv[q]
                    : (v[q] - mean) * rstd * sv[q];
      storeVec<VEC>(yr + i, v);
    });
  }
}

//===-- layer_norm_grad ---------------------------------------------------===//

/// dx of each row, and the row's (mean, rstd) into stats for the column
/// sums.
template <int VPT, int VEC>
__global__ void layerNormGradWarpKernel(const float *x, const float *scale,
                                        const float *dy, float *dx,
                                        float2 *stats, int64_t rows, int64_t n,
                                        float eps) {
  const int lane = threadIdx.x & 31;
  const float inv = 1.0f / static_cast<float>(n);
  float sv[VPT];
  loadRow<VPT, VEC>(scale, n, lane, sv, 0.0f);
  for (int64_t r = firstWarpRow(); r < rows; r += warpRowStep()) {
    float xv[VPT], dv[VPT];
    loadRow<VPT, VEC>(x + r * n, n, lane, xv, 0.0f);
    loadRow<VPT, VEC>(dy + r * n, n, lane, dv, 0.0f);
    float mean, rstd;
    rowMoments<VPT, VEC>(xv, lane, n, eps, mean, rstd);
    float sg = 0.0f, sgx = 0.0f;
#pragma unroll
    for (int q = 0; q < VPT; ++q) {
      // Padding slots hold dy = 0 and scale = 0: they add nothing.
      const float g = dv[q] * sv[q];
      sg += g;
      sgx += g * ((xv[q] - mean) * rstd);
    }
    const float mg = warpSum(sg) * inv, mgx = warpSum(sgx) * inv;
#pragma unroll
    for (int q = 0; q < VPT; ++q) {
      const float xh = (xv[q] - mean) * rstd;
      xv[q] = rstd * ((dv[q] * sv[q] - mg) - xh * mgx);
    }
    storeRow<VPT, VEC>(dx + r * n, n, lane, xv);
    if (lane == 0)
      stats[r] = make_float2(mean, rstd);
  }
}

template <int VEC>
__global__ void layerNormGradBlockKernel(const float *x, const float *scale,
                                         const float *dy, float *dx,
                                         float2 *stats, int64_t rows, int64_t n,
                                         float eps) {
  __shared__ float shared[32];
  const float inv = 1.0f / static_cast<float>(n);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *xr = x + r * n, *dyr = dy + r * n;
    float *dxr = dx + r * n;
    float mean, rstd;
    blockMoments<VEC>(xr, n, eps, shared, mean, rstd);
    float sg = 0.0f, sgx = 0.0f;
    forEachChunk<VEC>(xr, n, [&](int64_t i, float(&xv)[VEC]) {
      float dv[VEC], sv[VEC];
      loadVec<VEC>(dyr + i, dv);
      loadVec<VEC>(scale + i, sv);
#pragma unroll
      for (int q = 0; q < VEC; ++q) {
        const float g = dv[q] * sv[q];
        sg += g;
        sgx += g * ((xv[q] - mean) * rstd);
      }
    });
    const float mg = blockSum(sg, shared) * inv;
    const float mgx = blockSum(sgx, shared) * inv;
    forEachChunk<VEC>(xr, n, [&](int64_t i, float(&xv)[VEC]) {
      float dv[VEC], sv[VEC];
      loadVec<VEC>(dyr + i, dv);
      loadVec<VEC>(scale + i, sv);
#pragma unroll
      for (int q = 0; q < VEC; ++q) {
        const float xh = (xv[q] - mean) * rstd;
        xv[q] = rstd * ((dv[q] * sv[q] - mg) - xh * mgx);
      }
      storeVec<VEC>(dxr + i, xv);
    });
    if (threadIdx.x == 0)
      stats[r] = make_float2(mean, rstd);
  }
}

/// Columns of dscale / dbias per block of the column-sum kernels.
constexpr int kColumnThreads = 256;

/// Partial column sums over the rows of chunk blockIdx.y, in row order:
/// dscale into out[chunk * 2n + col], dbias into out[chunk * 2n + n + col]
/// (with one chunk, `out` is laid out as dscale then dbias directly).
__global__ void
layerNormColumnPartials(const float *__restrict x, const float *__restrict dy,
                        const float2 *__restrict stats, int64_t rows, int64_t n,
                        int64_t rowsPerChunk, float *__restrict dscale,
                        float *__restrict dbias, int64_t chunkStride) {
  const int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (col >= n)
    return;
  const int64_t r0 = blockIdx.y * rowsPerChunk;
  const int64_t r1 = r0 + rowsPerChunk < rows ? r0 + rowsPerChunk : rows;
  float ds = 0.0f, db = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    const float2 st = stats[r];
    const float d = dy[r * n + col];
    ds += d * ((x[r * n + col] - st.x) * st.y);
    db += d;
  }
  dscale[blockIdx.y * chunkStride + col] = ds;
  dbias[blockIdx.y * chunkStride + col] = db;
}

/// dscale / dbias = the chunks' partials summed in chunk order.
__global__ void layerNormColumnTotals(const float *__restrict partial,
                                      int64_t chunks, int64_t n,
                                      float *__restrict dscale,
                                      float *__restrict dbias) {
  const int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (col >= n)
    return;
  float ds = 0.0f, db = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) {
    ds += partial[c * 2 * n + col];
    db += partial[c * 2 * n + n + col];
  }
  dscale[col] = ds;
  dbias[col] = db;
}

//===-- batch_norm --------------------------------------------------------===//

/// Per channel multiplier and offset, rounded as the CPU's host loop (no
/// fused multiply-add).
__global__ void batchNormFoldKernel(const float *scale, const float *bias,
                                    const float *mean, const float *var,
                                    float eps, int64_t channels, float *mul,
                                    float *add) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= channels)
    return;
  const float m = scale[c] / sqrtf(var[c] + eps);
  mul[c] = m;
  add[c] = __fsub_rn(bias[c], __fmul_rn(mean[c], m));
}

__global__ void batchNormKernel(const float *x, const float *mul,
                                const float *add, float *y, int64_t total,
                                int64_t size, int64_t channels) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i / size % channels;
    y[i] = fmaf(x[i], mul[c], add[c]);
  }
}

} // namespace

//===-- Entry points ------------------------------------------------------===//

extern "C" void weft_cuda_k_softmax(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("softmax", bufs, desc);
  expectF32Call(args, 2, 2);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &y = args.tensor(1);
  args.expectSameNumel(0, 1);
  const int64_t axis = args.attr(0);
  const bool log = args.attr(1) != 0;
  cudaStream_t stream = computeStream();
  const float *px = x.as<float>();
  float *py = y.as<float>();
  if (x.rank == 0) { // softmax of a single value
    fillKernel<<<1, 1, 0, stream>>>(py, log ? 0.0f : 1.0f);
    checkLaunch("softmax");
    return;
  }
  const cpu::SoftmaxAxis sa = cpu::softmaxAxis(args, x, axis);
  const int64_t n = sa.n, inner = sa.inner, outer = sa.outer;
  if (x.numel == 0)
    return;
  if (inner != 1) {
    softmaxColumnKernel<<<gridFor(outer * inner, kBlock), kBlock, 0, stream>>>(
        px, py, outer, n, inner, log);
  } else {
    const bool vec4 = n % 4 == 0 && aligned16(px) && aligned16(py);
    launchRows(
        outer, n, vec4,
        [&](auto vpt, auto vec, unsigned grid, int threads) {
          softmaxWarpKernel<decltype(vpt)::value, decltype(vec)::value>
              <<<grid, threads, 0, stream>>>(px, py, outer, n, log);
        },
        [&](auto vec, unsigned grid, int threads) {
          softmaxBlockKernel<decltype(vec)::value>
              <<<grid, threads, 0, stream>>>(px, py, outer, n, log);
        });
  }
  checkLaunch("softmax");
}

extern "C" void weft_cuda_k_softmax_grad(void *const *bufs,
                                         const int64_t *desc) {
  cpu::KernelArgs args("softmax_grad", bufs, desc);
  expectF32Call(args, 3, 2);
  const cpu::TensorArg &y = args.tensor(0);
  args.expectSameNumel(0, 1);
  args.expectSameNumel(0, 2);
  const int64_t axis = args.attr(0);
  const bool log = args.attr(1) != 0;
  const float *py = y.as<float>();
  const float *pdy = args.tensor(1).as<float>();
  float *pdx = args.tensor(2).as<float>();
  cudaStream_t stream = computeStream();
  int64_t outer = 1, n = 1, inner = 1; // a rank-0 softmax: one row of one
  if (y.rank > 0) {
    const cpu::SoftmaxAxis sa = cpu::softmaxAxis(args, y, axis);
    outer = sa.outer;
    n = sa.n;
    inner = sa.inner;
  }
  if (y.numel == 0)
    return;
  if (inner != 1) {
    softmaxGradColumnKernel<<<gridFor(outer * inner, kBlock), kBlock, 0,
                              stream>>>(py, pdy, pdx, outer, n, inner, log);
  } else {
    const bool vec4 =
        n % 4 == 0 && aligned16(py) && aligned16(pdy) && aligned16(pdx);
    launchRows(
        outer, n, vec4,
        [&](auto vpt, auto vec, unsigned grid, int threads) {
          softmaxGradWarpKernel<decltype(vpt)::value, decltype(vec)::value>
              <<<grid, threads, 0, stream>>>(py, pdy, pdx, outer, n, log);
        },
        [&](auto vec, unsigned grid, int threads) {
          softmaxGradBlockKernel<decltype(vec)::value>
              <<<grid, threads, 0, stream>>>(py, pdy, pdx, outer, n, log);
        });
  }
  checkLaunch("softmax_grad");
}

extern "C" void weft_cuda_k_layer_norm(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("layer_norm", bufs, desc);
  args.expectAttrs(3);
  const bool hasBias = args.attr(2) != 0;
  args.expectTensors(hasBias ? 4 : 3, hasBias ? 4 : 3);
  cpu::expectF32RoundedResult(args);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &y = args.tensor(args.numTensors() - 1);
  const cpu::NormRows nr = cpu::layerNormRows(args, x);
  args.expectSameNumel(0, args.numTensors() - 1);
  const int64_t n = nr.inner, rows = nr.rows;
  if (args.tensor(1).numel != n || (hasBias && args.tensor(2).numel != n))
    args.invalid("scale and bias must hold prod(x.dims[axis:]) values");
  const float eps = static_cast<float>(args.attrDouble(1));
  const float *scale = args.tensor(1).as<float>();
  const float *bias = hasBias ? args.tensor(2).as<float>() : nullptr;
  const float *px = x.as<float>();
  if (rows == 0)
    return;
  cudaStream_t stream = computeStream();
  const bool vec4 = n % 4 == 0 && aligned16(px) && aligned16(y.data) &&
                    aligned16(scale) && (!bias || aligned16(bias));
  // f32, or rounded once to bf16 / f16 (a folded cast: expectF32Rounded-
  // Result).
  auto launch = [&](auto *py) {
    using Y = std::remove_pointer_t<decltype(py)>;
    launchRows(
        rows, n, vec4,
        [&](auto vpt, auto vec, unsigned grid, int threads) {
          layerNormWarpKernel<decltype(vpt)::value, decltype(vec)::value, Y>
              <<<grid, threads, 0, stream>>>(px, scale, bias, py, rows, n, eps);
        },
        [&](auto vec, unsigned grid, int threads) {
          layerNormBlockKernel<decltype(vec)::value, Y>
              <<<grid, threads, 0, stream>>>(px, scale, bias, py, rows, n, eps);
        });
  };
  if (y.dtype == WEFT_BF16)
    launch(y.as<data::BF16>());
  else if (y.dtype == WEFT_F16)
    launch(y.as<data::F16>());
  else
    launch(y.as<float>());
  checkLaunch("layer_norm");
}

extern "C" void weft_cuda_k_layer_norm_grad(void *const *bufs,
                                            const int64_t *desc) {
  cpu::KernelArgs args("layer_norm_grad", bufs, desc);
  const cpu::NormRows nr = cpu::checkLayerNormGrad(args);
  const cpu::TensorArg &x = args.tensor(0);
  const int64_t n = nr.inner, rows = nr.rows;
  const float eps = static_cast<float>(args.attrDouble(1));
  const float *px = x.as<float>();
  const float *scale = args.tensor(1).as<float>();
  const float *pdy = args.tensor(2).as<float>();
  float *pdx = args.tensor(3).as<float>();
  float *dscale = args.tensor(4).as<float>();
  float *dbias = args.tensor(5).as<float>();
  if (rows == 0) {
    zero(dscale, static_cast<size_t>(n) * sizeof(float));
    zero(dbias, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  // Row chunks of the column sums: from the shape only, so the summation
  // order never depends on the device.
  const int64_t rowsPerChunk =
      ceilDiv(rows, 512) > 32 ? ceilDiv(rows, 512) : 32;
  const int64_t chunks = ceilDiv(rows, rowsPerChunk);
  ScratchPlan sp;
  const int sStats = sp.add(static_cast<size_t>(rows) * sizeof(float2));
  const int sPartial =
      sp.add(chunks > 1 ? static_cast<size_t>(2 * chunks * n) * 4 : 0);
  sp.allocate();
  float2 *stats = sp.at<float2>(sStats);
  cudaStream_t stream = computeStream();
  const bool vec4 = n % 4 == 0 && aligned16(px) && aligned16(pdy) &&
                    aligned16(pdx) && aligned16(scale);
  launchRows(
      rows, n, vec4,
      [&](auto vpt, auto vec, unsigned grid, int threads) {
        layerNormGradWarpKernel<decltype(vpt)::value, decltype(vec)::value>
            <<<grid, threads, 0, stream>>>(px, scale, pdy, pdx, stats, rows, n,
                                           eps);
      },
      [&](auto vec, unsigned grid, int threads) {
        layerNormGradBlockKernel<decltype(vec)::value>
            <<<grid, threads, 0, stream>>>(px, scale, pdy, pdx, stats, rows, n,
                                           eps);
      });
  checkLaunch("layer_norm_grad");
  const dim3 grid(static_cast<unsigned>(ceilDiv(n, kColumnThreads)),
                  static_cast<unsigned>(chunks));
  if (chunks == 1) {
    layerNormColumnPartials<<<grid, kColumnThreads, 0, stream>>>(
        px, pdy, stats, rows, n, rowsPerChunk, dscale, dbias, 0);
  } else {
    float *partial = sp.at<float>(sPartial);
    layerNormColumnPartials<<<grid, kColumnThreads, 0, stream>>>(
        px, pdy, stats, rows, n, rowsPerChunk, partial, partial + n, 2 * n);
    checkLaunch("layer_norm_grad");
    layerNormColumnTotals<<<static_cast<unsigned>(ceilDiv(n, kColumnThreads)),
                            kColumnThreads, 0, stream>>>(partial, chunks, n,
                                                         dscale, dbias);
  }
  checkLaunch("layer_norm_grad");
}

extern "C" void weft_cuda_k_batch_norm(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("batch_norm", bufs, desc);
  expectF32Call(args, 6, 1);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &y = args.tensor(5);
  if (x.rank < 2)
    args.invalid("input must have rank >= 2");
  args.expectSameNumel(0, 5);
  const int64_t channels = x.dims[1];
  for (int i = 1; i <= 4; ++i)
    if (args.tensor(i).numel != channels)
      args.invalid("scale, bias, mean and var must hold one value per "
                   "channel");
  const float eps = static_cast<float>(args.attrDouble(0));
  if (x.numel == 0)
    return;
  ScratchPlan sp;
  const int sMul = sp.add(static_cast<size_t>(channels) * 4);
  const int sAdd = sp.add(static_cast<size_t>(channels) * 4);
  sp.allocate();
  float *mul = sp.at<float>(sMul), *add = sp.at<float>(sAdd);
  cudaStream_t stream = computeStream();
  batchNormFoldKernel<<<gridFor(channels, kBlock), kBlock, 0, stream>>>(
      args.tensor(1).as<float>(), args.tensor(2).as<float>(),
      args.tensor(3).as<float>(), args.tensor(4).as<float>(), eps, channels,
      mul, add);
  checkLaunch("batch_norm");
  batchNormKernel<<<blocksFor(x.numel), kBlock, 0, stream>>>(
      x.as<float>(), mul, add, y.as<float>(), x.numel, x.extent(2, x.rank),
      channels);
  checkLaunch("batch_norm");
}
