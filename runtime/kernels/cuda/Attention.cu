//===- Attention.cu - attention and attention_grad kernels ----------------===//
//
// Scaled dot-product attention (KernelABI.h: attention, attention_grad)
// without the Sq x Sk score matrix in memory, flash-attention style. With
// B the product of the leading dims, q [B, Sq, D], k [B, Sk, D], v [B, Sk,
// Dv], o [B, Sq, Dv], lse [B, Sq] (f32), off = Sk - Sq, and query i seeing
// key j when j < Sk and (not causal or j <= i + off):
//
//   s_ij = scale * q_i.k_j,  lse_i = log sum_j e^s_ij,  o_i = sum_j p_ij v_j
//   backward: p_ij = e^(s_ij - lse_i),  D_i = dO_i.O_i,
//             dS_ij = p_ij (dO_i.v_j - D_i),
//             dQ = scale dS K,  dK = scale dS^T Q,  dV = P^T dO
//
// Two implementations, picked per call:
//
// Tensor cores (bf16 / f16, D and Dv multiples of 16 in [16, 128], 16-byte
// aligned tensors but lse, sm_80+): mma.sync m16n8k16 with f32 accumulators,
// 128 threads (4 warps) per block, 64-row tiles in shared memory (rows padded
// to DMAX + 8 elements, DMAX = 64 or 128, so the fragment loads hit 32
// different banks), filled with cp.async, the next tile loading while the
// current one is used (double buffering). The scores of a warp's 16 rows
// stay in registers (the accumulator layout of one mma is the operand
// layout of the next: P and dS go on as bf16/f16 without shared memory).
//
//   forward   one block per (b, 64 queries); each warp owns 16 queries and
//             walks the 64-key tiles with an online softmax (exp2 domain);
//             P is rounded to the input dtype before P.V.
//             smem: K, V x 2 buffers = 4 x 64 x (DMAX+8) x 2 bytes
//             (36.0 KB for DMAX 64, 68.0 KB for 128).
//   dK, dV    one block per (b, 64 keys); each warp owns 16 keys, keeps its
//             dK and dV rows in registers and walks the query tiles (BQ =
//             64 queries, 32 for DMAX 128) recomputing P^T from lse;
//             smem: K, V + 2 x (Q, dO, lse, D) tiles (55.0 / 68.5 KB).
//   dQ        one block per (b, 64 queries); each warp owns 16 queries,
//             keeps dQ in registers and walks the key tiles;
//             smem: Q, dO + 2 x (K, V) tiles (54.0 / 102.0 KB).
//   D_i       a small kernel (one warp per row) into scratch (f32 [B*Sq]).
//
// With causal, tiles no query of the block sees are skipped (the loops end
// at the last visible tile, or start at the first for dK/dV) and only the
// tiles crossing the diagonal or the sequence ends test each element.
//
// SIMT fallback (everything else: f32, any D and Dv, unaligned buffers):
// f32 math throughout, one warp per (row, 128-column chunk of the result).
// Lanes split the feature dims of each dot product (warp reductions);
// the forward takes the keys 32 at a time for the online softmax (one
// lane per key). The chunks of a row recompute its scores: D or Dv over
// 128 costs a recomputation, not correctness.
//
// Nothing uses atomics and every reduction's order depends on the shape
// only, so both kernels repeat bitwise. Outputs must not alias inputs.
//
// This file: the entry points, the SIMT kernels and D_i; AttentionTc.cu:
// the tensor-core kernels; AttentionCommon.cuh: what both take.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/AttentionShape.h"
#include "runtime/kernels/cuda/AttentionCommon.cuh"
#include "runtime/kernels/cuda/CudaKernels.h"

#include <climits>
#include <type_traits>

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::math;
using namespace weft::cuda::attention;

namespace {

struct AttnShape {
  AttnDims dims;
  int64_t dtype;
};

/// Checks an attention (5 tensors) or attention_grad (9 tensors) call as
/// the CPU does (AttentionShape.h).
AttnShape checkAttention(const cpu::KernelArgs &args, bool grad) {
  const cpu::AttentionShape c = cpu::attentionShape(args, grad);
  if (c.sq > INT_MAX / 2 || c.sk > INT_MAX / 2 || c.d > INT_MAX / 2 ||
      c.dv > INT_MAX / 2)
    args.invalid("sequence or feature dims too large");
  AttnShape s;
  s.dtype = c.dtype;
  s.dims.batch = c.batch;
  s.dims.sq = static_cast<int>(c.sq);
  s.dims.sk = static_cast<int>(c.sk);
  s.dims.d = static_cast<int>(c.d);
  s.dims.dv = static_cast<int>(c.dv);
  s.dims.off = static_cast<int>(c.sk - c.sq);
  s.dims.causal = c.causal;
  s.dims.scale = static_cast<float>(c.scale);
  s.dims.scaleLog2 = static_cast<float>(c.scale * 1.4426950408889634);
  if (c.heads > INT_MAX)
    args.invalid("too many heads");
  s.dims.heads = static_cast<int>(c.heads);
  return s;
}

//===-- D_i = rowsum(dO o O) ----------------------------------------------===//

constexpr int kWarps = 4; // warps per block of the warp-per-row kernels

template <class T>
__global__ void attnRowDotKernel(const T *__restrict__ dout,
                                 const T *__restrict__ o,
                                 float *__restrict__ dvec, int64_t rows,
                                 int64_t n, AttnDims p) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = blockIdx.x * int64_t(kWarps) + (threadIdx.x >> 5); r < rows;
       r += int64_t(gridDim.x) * kWarps) {
    float s = 0.0f;
    const int64_t at = rowOf(p, r / p.sq, r % p.sq, p.sq, static_cast<int>(n));
    for (int64_t c = lane; c < n; c += 32)
      s = fmaf(toFloat(dout[at + c]), toFloat(o[at + c]), s);
    s = warpSum(s);
    if (lane == 0)
      dvec[r] = s;
  }
}

//===-- SIMT fallback -----------------------------------------------------===//

/// Register slots per lane: a warp holds 128 columns of a result row, and
/// the first 128 elements of the row it dots with.
constexpr int kSlots = 4;
constexpr int kChunkCols = 32 * kSlots;

/// The first kChunkCols elements of row x (n long), lane's share, in f32.
template <class T>
static __device__ inline void loadSlots(float (&reg)[kSlots], const T *x,
                                        int64_t n, int lane) {
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int64_t c = lane + 32 * s;
    reg[s] = c < n ? toFloat(x[c]) : 0.0f;
  }
}

/// The lane's partial sum of x . y over n elements, x's first kChunkCols in
/// `reg` (from loadSlots); warpSum gives the dot product. The order of the
/// products depends on n only, so x . y and y . x agree bitwise.
template <class T>
static __device__ inline float partialDot(const float (&reg)[kSlots],
                                          const T *x, const T *y, int64_t n,
                                          int lane) {
  float s = 0.0f;
#pragma unroll
  for (int sl = 0; sl < kSlots; ++sl) {
    const int64_t c = lane + 32 * sl;
    if (c < n)
      s = fmaf(reg[sl], toFloat(y[c]), s);
  }
  for (int64_t c = kChunkCols + lane; c < n; c += 32)
    s = fmaf(toFloat(x[c]), toFloat(y[c]), s);
  return s;
}

/// Keys query i sees: [0, count).
static __device__ inline int keysSeen(const AttnDims &p, int i) {
  if (!p.causal)
    return p.sk;
  const int64_t n = static_cast<int64_t>(i) + p.off + 1;
  return n < 0 ? 0 : (n > p.sk ? p.sk : static_cast<int>(n));
}

/// One warp per (query row, chunk of 128 columns of o).
template <class T>
__global__ void attnFwdSimt(const T *__restrict__ q, const T *__restrict__ k,
                            const T *__restrict__ v, T *__restrict__ o,
                            float *__restrict__ lse, AttnDims p, int chunks) {
  const int lane = threadIdx.x & 31;
  const int64_t total = p.batch * p.sq * chunks;
  for (int64_t w = blockIdx.x * int64_t(kWarps) + (threadIdx.x >> 5); w < total;
       w += int64_t(gridDim.x) * kWarps) {
    const int64_t row = w / chunks;
    const int chunk = static_cast<int>(w - row * chunks);
    const int64_t b = row / p.sq;
    const int i = static_cast<int>(row - b * p.sq);
    const T *qr = q + rowOf(p, b, i, p.sq, p.d);
    const T *kb = k + rowOf(p, b, 0, p.sk, p.d);
    const T *vb = v + rowOf(p, b, 0, p.sk, p.dv);
    const int64_t ldk = rowStride(p, p.d), ldv = rowStride(p, p.dv);
    const int nk = keysSeen(p, i);
    const int64_t c0 = int64_t(chunk) * kChunkCols;
    float qreg[kSlots], acc[kSlots];
    loadSlots(qreg, qr, p.d, lane);
#pragma unroll
    for (int s = 0; s < kSlots; ++s)
      acc[s] = 0.0f;
    float m = kNegInf, l = 0.0f;
    for (int j0 = 0; j0 < nk; j0 += 32) {
      const int cnt = min(32, nk - j0);
      // Lane jj gets the score of key j0 + jj.
      float mine = kNegInf;
      for (int jj = 0; jj < cnt; ++jj) {
        const float dot =
            warpSum(
                partialDot(qreg, qr, kb + int64_t(j0 + jj) * ldk, p.d, lane)) *
            p.scale;
        if (lane == jj)
          mine = dot;
      }
      const float mn = fmaxf(m, warpMax(mine));
      const float mu = mn == kNegInf ? 0.0f : mn;
      const float alpha = expf(m - mu);
      const float pj = lane < cnt ? expf(mine - mu) : 0.0f;
      l = l * alpha + warpSum(pj);
      m = mn;
#pragma unroll
      for (int s = 0; s < kSlots; ++s)
        acc[s] *= alpha;
      for (int jj = 0; jj < cnt; ++jj) {
        const float pb = __shfl_sync(0xffffffffu, pj, jj);
        const T *vr = vb + int64_t(j0 + jj) * ldv;
#pragma unroll
        for (int s = 0; s < kSlots; ++s) {
          const int64_t c = c0 + lane + 32 * s;
          if (c < p.dv)
            acc[s] = fmaf(pb, toFloat(vr[c]), acc[s]);
        }
      }
    }
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      const int64_t c = c0 + lane + 32 * s;
      if (c < p.dv)
        storeFloat(o + rowOf(p, b, i, p.sq, p.dv) + c,
                   l > 0.0f ? acc[s] / l : 0.0f);
    }
    if (chunk == 0 && lane == 0)
      lse[row] = l > 0.0f ? m + logf(l) : kNegInf;
  }
}

/// One warp per (query row, chunk of 128 columns of dq).
template <class T>
__global__ void
attnBwdQSimt(const T *__restrict__ q, const T *__restrict__ k,
             const T *__restrict__ v, const T *__restrict__ dout,
             const float *__restrict__ lse, const float *__restrict__ dvec,
             T *__restrict__ dq, AttnDims p, int chunks) {
  const int lane = threadIdx.x & 31;
  const int64_t total = p.batch * p.sq * chunks;
  for (int64_t w = blockIdx.x * int64_t(kWarps) + (threadIdx.x >> 5); w < total;
       w += int64_t(gridDim.x) * kWarps) {
    const int64_t row = w / chunks;
    const int chunk = static_cast<int>(w - row * chunks);
    const int64_t b = row / p.sq;
    const int i = static_cast<int>(row - b * p.sq);
    const T *qr = q + rowOf(p, b, i, p.sq, p.d);
    const T *dor = dout + rowOf(p, b, i, p.sq, p.dv);
    const T *kb = k + rowOf(p, b, 0, p.sk, p.d);
    const T *vb = v + rowOf(p, b, 0, p.sk, p.dv);
    const int64_t ldk = rowStride(p, p.d), ldv = rowStride(p, p.dv);
    const int nk = keysSeen(p, i);
    const int64_t c0 = int64_t(chunk) * kChunkCols;
    float qreg[kSlots], doreg[kSlots], acc[kSlots];
    loadSlots(qreg, qr, p.d, lane);
    loadSlots(doreg, dor, p.dv, lane);
#pragma unroll
    for (int s = 0; s < kSlots; ++s)
      acc[s] = 0.0f;
    const float li = nk > 0 ? lse[row] : 0.0f, di = dvec[row];
    for (int j = 0; j < nk; ++j) {
      const T *kr = kb + int64_t(j) * ldk;
      const T *vr = vb + int64_t(j) * ldv;
      const float sd = warpSum(partialDot(qreg, qr, kr, p.d, lane)) * p.scale;
      const float dp = warpSum(partialDot(doreg, dor, vr, p.dv, lane));
      const float ds = expf(sd - li) * (dp - di);
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        const int64_t c = c0 + lane + 32 * s;
        if (c < p.d)
          acc[s] = fmaf(ds, toFloat(kr[c]), acc[s]);
      }
    }
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      const int64_t c = c0 + lane + 32 * s;
      if (c < p.d)
        storeFloat(dq + rowOf(p, b, i, p.sq, p.d) + c, acc[s] * p.scale);
    }
  }
}

/// One warp per (key row, chunk of 128 columns of both dk and dv).
template <class T>
__global__ void
attnBwdKvSimt(const T *__restrict__ q, const T *__restrict__ k,
              const T *__restrict__ v, const T *__restrict__ dout,
              const float *__restrict__ lse, const float *__restrict__ dvec,
              T *__restrict__ dk, T *__restrict__ dv, AttnDims p, int chunks) {
  const int lane = threadIdx.x & 31;
  const int64_t total = p.batch * p.sk * chunks;
  for (int64_t w = blockIdx.x * int64_t(kWarps) + (threadIdx.x >> 5); w < total;
       w += int64_t(gridDim.x) * kWarps) {
    const int64_t row = w / chunks;
    const int chunk = static_cast<int>(w - row * chunks);
    const int64_t b = row / p.sk;
    const int j = static_cast<int>(row - b * p.sk);
    const T *kr = k + rowOf(p, b, j, p.sk, p.d);
    const T *vr = v + rowOf(p, b, j, p.sk, p.dv);
    const T *qb = q + rowOf(p, b, 0, p.sq, p.d);
    const T *dob = dout + rowOf(p, b, 0, p.sq, p.dv);
    const int64_t ldq = rowStride(p, p.d), ldo = rowStride(p, p.dv);
    const float *lb = lse + b * p.sq, *db = dvec + b * p.sq;
    const int64_t c0 = int64_t(chunk) * kChunkCols;
    float kreg[kSlots], vreg[kSlots], dka[kSlots], dva[kSlots];
    loadSlots(kreg, kr, p.d, lane);
    loadSlots(vreg, vr, p.dv, lane);
#pragma unroll
    for (int s = 0; s < kSlots; ++s)
      dka[s] = dva[s] = 0.0f;
    for (int i = firstQuerySeeing(p, j); i < p.sq; ++i) {
      const T *qr = qb + int64_t(i) * ldq;
      const T *dor = dob + int64_t(i) * ldo;
      const float sd = warpSum(partialDot(kreg, kr, qr, p.d, lane)) * p.scale;
      const float dp = warpSum(partialDot(vreg, vr, dor, p.dv, lane));
      const float pv = expf(sd - lb[i]);
      const float ds = pv * (dp - db[i]);
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        const int64_t c = c0 + lane + 32 * s;
        if (c < p.dv)
          dva[s] = fmaf(pv, toFloat(dor[c]), dva[s]);
        if (c < p.d)
          dka[s] = fmaf(ds, toFloat(qr[c]), dka[s]);
      }
    }
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      const int64_t c = c0 + lane + 32 * s;
      if (c < p.dv)
        storeFloat(dv + rowOf(p, b, j, p.sk, p.dv) + c, dva[s]);
      if (c < p.d)
        storeFloat(dk + rowOf(p, b, j, p.sk, p.d) + c, dka[s] * p.scale);
    }
  }
}

//===-- Host dispatch -----------------------------------------------------===//

/// Calls f(T{}) with T the element type of `dtype` (f32, bf16 or f16).
template <class F> void dispatchFloat(int64_t dtype, F &&f) {
  switch (dtype) {
  case WEFT_BF16:
    return f(__nv_bfloat16{});
  case WEFT_F16:
    return f(__half{});
  default:
    return f(float{});
  }
}

/// Whether the call takes the tensor-core kernels.
bool useTensorCores(const cpu::KernelArgs &args, const AttnShape &s) {
  const AttnDims &p = s.dims;
  if (s.dtype == WEFT_F32 || p.sk == 0)
    return false;
  if (p.d % 16 != 0 || p.dv % 16 != 0 || p.d < 16 || p.dv < 16 || p.d > 128 ||
      p.dv > 128)
    return false;
  for (int i = 0; i < args.numTensors(); ++i) // lse (4) is read per float
    if (i != 4 && !aligned16(args.tensor(i).data))
      return false;
  // The kernels hold mma.sync only when compiled for sm_80 or later.
  return tensorCoresCompiled() && computeCapability() >= 80;
}

/// Launches a kernel of kWarps warps per block, one warp per item.
template <class K, class... A>
void launchWarps(K *kernel, int64_t items, cudaStream_t stream, A... args) {
  kernel<<<gridFor(items, kWarps), 32 * kWarps, 0, stream>>>(args...);
}

/// Column chunks of the SIMT kernels for rows of n (at least one).
int chunksFor(int64_t n) {
  const int64_t c = ceilDiv(n, kChunkCols);
  return c < 1 ? 1 : static_cast<int>(c);
}

} // namespace

//===-- Entry points ------------------------------------------------------===//

extern "C" void weft_cuda_k_attention(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("attention", bufs, desc);
  const AttnShape s = checkAttention(args, false);
  const AttnDims &p = s.dims;
  if (p.batch == 0 || p.sq == 0)
    return;
  cudaStream_t stream = computeStream();
  const void *q = bufs[0], *k = bufs[1], *v = bufs[2];
  void *o = bufs[3];
  float *lse = static_cast<float *>(bufs[4]);
  const bool tc = useTensorCores(args, s);
  dispatchFloat(s.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, float>) {
      if (tc) {
        launchForwardTc<T>(q, k, v, o, lse, p, stream);
        return;
      }
    }
    const int chunks = chunksFor(p.dv);
    launchWarps(attnFwdSimt<T>, p.batch * p.sq * chunks, stream, in<T>(q),
                in<T>(k), in<T>(v), out<T>(o), lse, p, chunks);
  });
  checkLaunch("attention");
}

extern "C" void weft_cuda_k_attention_grad(void *const *bufs,
                                           const int64_t *desc) {
  cpu::KernelArgs args("attention_grad", bufs, desc);
  const AttnShape s = checkAttention(args, true);
  const AttnDims &p = s.dims;
  if (p.batch == 0)
    return;
  if (p.sq == 0) { // no query: dk = dv = 0
    for (int i = 7; i <= 8; ++i)
      if (args.tensor(i).bytes() > 0)
        zero(bufs[i], static_cast<size_t>(args.tensor(i).bytes()));
    return;
  }
  cudaStream_t stream = computeStream();
  const void *q = bufs[0], *k = bufs[1], *v = bufs[2], *o = bufs[3];
  const float *lse = static_cast<const float *>(bufs[4]);
  const void *dout = bufs[5];
  void *dq = bufs[6], *dk = bufs[7], *dv = bufs[8];
  const int64_t rows = p.batch * p.sq;
  ScratchPlan sp;
  const int sDvec = sp.add(static_cast<size_t>(rows) * sizeof(float));
  sp.allocate();
  float *dvec = sp.at<float>(sDvec);
  const bool tc = useTensorCores(args, s);
  dispatchFloat(s.dtype, [&](auto tag) {
    using T = decltype(tag);
    launchWarps(attnRowDotKernel<T>, rows, stream, in<T>(dout), in<T>(o), dvec,
                rows, int64_t(p.dv), p);
    checkLaunch("attention_grad");
    if constexpr (!std::is_same_v<T, float>) {
      if (tc) {
        launchBackwardTc<T>(q, k, v, dout, lse, dvec, dq, dk, dv, p, stream);
        return;
      }
    }
    const int qChunks = chunksFor(p.d);
    launchWarps(attnBwdQSimt<T>, rows * qChunks, stream, in<T>(q), in<T>(k),
                in<T>(v), in<T>(dout), lse, dvec, out<T>(dq), p, qChunks);
    checkLaunch("attention_grad");
    if (p.sk > 0) {
      const int kvChunks = chunksFor(p.d > p.dv ? p.d : p.dv);
      launchWarps(attnBwdKvSimt<T>, p.batch * p.sk * kvChunks, stream, in<T>(q),
                  in<T>(k), in<T>(v), in<T>(dout), lse, dvec, out<T>(dk),
                  out<T>(dv), p, kvChunks);
    }
  });
  checkLaunch("attention_grad");
}
