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
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/AttentionShape.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/MathUtil.cuh"

#include <climits>
#include <cstring>
#include <type_traits>

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::math;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define WEFT_ATTENTION_NO_MMA 1 // the host never picks the tensor-core path
#else
#define WEFT_ATTENTION_NO_MMA 0
#endif

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.69314718055994531f;

//===-- Shapes ------------------------------------------------------------===//

/// A call's shape, as the kernels take it.
struct AttnDims {
  int64_t batch;
  int sq, sk, d, dv;
  int off; // sk - sq: query i sees key j <= i + off (causal)
  bool causal;
  float scale;
  float scaleLog2; // scale * log2(e)
};

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
  return s;
}

/// The last key any query of rows [q0, q1) sees, or -1.
static __host__ __device__ inline int lastKeySeen(const AttnDims &p, int q0,
                                                  int q1) {
  if (p.sk == 0 || q1 <= q0)
    return -1;
  if (!p.causal)
    return p.sk - 1;
  const int64_t j = static_cast<int64_t>(q1 - 1) + p.off;
  return j < 0 ? -1 : (j >= p.sk ? p.sk - 1 : static_cast<int>(j));
}

/// First query that sees key j (Sq when none does).
static __host__ __device__ inline int firstQuerySeeing(const AttnDims &p,
                                                       int j) {
  if (!p.causal)
    return 0;
  const int64_t i = static_cast<int64_t>(j) - p.off;
  return i < 0 ? 0 : (i > p.sq ? p.sq : static_cast<int>(i));
}

//===-- Tensor-core helpers -----------------------------------------------===//

/// The two-element vector of the 16-bit types of the tensor-core path.
template <class T> struct TcPair;
template <> struct TcPair<__nv_bfloat16> {
  static __device__ inline __nv_bfloat162 make(float lo, float hi) {
    return __floats2bfloat162_rn(lo, hi);
  }
};
template <> struct TcPair<__half> {
  static __device__ inline __half2 make(float lo, float hi) {
    return __floats2half2_rn(lo, hi);
  }
};

/// mma.sync m16n8k16 with f32 accumulators c, A operand a and B operands b0,
/// b1 of PTX type TY ("bf16" or "f16").
#define WEFT_ATTENTION_MMA(TY)                                                 \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TY "." TY ".f32 "      \
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "                \
               "{%0, %1, %2, %3};\n"                                           \
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))

/// The 16-bit types of the tensor-core path: packing two floats into a
/// .b32 operand register (the lower column in the low half) and the mma.
template <class T> struct Tc {
  static __device__ inline uint32_t pack(float lo, float hi) {
    const auto h = TcPair<T>::make(lo, hi);
    uint32_t u;
    memcpy(&u, &h, 4);
    return u;
  }
  static __device__ inline void mma(float (&c)[4], const uint32_t (&a)[4],
                                    uint32_t b0, uint32_t b1) {
#if !WEFT_ATTENTION_NO_MMA
    if constexpr (std::is_same_v<T, __nv_bfloat16>)
      WEFT_ATTENTION_MMA("bf16");
    else
      WEFT_ATTENTION_MMA("f16");
#else
    __trap();
#endif
  }
};

#undef WEFT_ATTENTION_MMA

/// Two consecutive 16-bit elements (4-byte aligned) as one register.
static __device__ inline uint32_t ld32(const uint16_t *p) {
  return *reinterpret_cast<const uint32_t *>(p);
}

static __device__ inline uint32_t smemAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// 16 bytes global -> shared without passing through registers; zeros
/// instead when !valid (src is then not read).
static __device__ inline void cpAsync16(void *dst, const void *src,
                                        bool valid) {
#if !WEFT_ATTENTION_NO_MMA
  asm volatile(
      "cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smemAddress(dst)),
      "l"(src), "r"(valid ? 16 : 0)
      : "memory");
#else
  __trap();
#endif
}

static __device__ inline void cpAsyncCommit() {
#if !WEFT_ATTENTION_NO_MMA
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most N of this thread's committed groups are pending.
template <int N> static __device__ inline void cpAsyncWait() {
#if !WEFT_ATTENTION_NO_MMA
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

/// B operands of two n8 tiles from a row-major [k][n] tile in shared
/// memory (16 k-rows from k0, 16 n-columns from n0; stride SROW):
/// b[0], b[1] for columns n0..n0+7 and b[2], b[3] for n0+8..n0+15.
/// ldmatrix .trans hands lane (g, t) the elements [k0 + 2t (+1)][n + g].
template <int SROW>
static __device__ inline void loadBTrans(uint32_t (&b)[4], const uint16_t *s,
                                         int k0, int n0, int lane) {
  const uint16_t *p = s + (k0 + (lane & 7) + ((lane >> 3) & 1) * 8) * SROW +
                      n0 + (lane >> 4) * 8;
#if !WEFT_ATTENTION_NO_MMA
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
      : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
      : "r"(smemAddress(p))
      : "memory");
#else
  (void)p;
  __trap();
#endif
}

/// The A operand (16 x 16, row-major) at rows r0.., columns k0.. of a
/// shared tile: lane (g, t) holds [g][2t..], [g+8][2t..], [g][2t+8..],
/// [g+8][2t+8..].
template <int SROW>
static __device__ inline void loadA(uint32_t (&a)[4], const uint16_t *s, int r0,
                                    int k0, int g, int t) {
  const uint16_t *p = s + (r0 + g) * SROW + k0 + 2 * t;
  a[0] = ld32(p);
  a[1] = ld32(p + 8 * SROW);
  a[2] = ld32(p + 8);
  a[3] = ld32(p + 8 * SROW + 8);
}

/// The B operand of one n8 tile whose n index runs along the rows of a
/// shared tile (K for Q.K^T, V for dO.V^T): lane (g, t) holds
/// [n0 + g][k0 + 2t..] and [n0 + g][k0 + 2t + 8..].
template <int SROW>
static __device__ inline void loadB(uint32_t &b0, uint32_t &b1,
                                    const uint16_t *s, int n0, int k0, int g,
                                    int t) {
  const uint16_t *p = s + (n0 + g) * SROW + k0 + 2 * t;
  b0 = ld32(p);
  b1 = ld32(p + 8);
}

/// Starts the copy of rows [0, rows) x columns [0, cols) (cols a multiple
/// of 8) of the row-major global tile g into the shared tile s (stride
/// SROW); rows from `valid` on are zero-filled. The whole block calls it.
template <int SROW>
static __device__ inline void asyncTile(uint16_t *s, const uint16_t *g,
                                        int rows, int valid, int cols) {
  const int cpr = cols >> 3;
  const int total = rows * cpr;
  for (int idx = threadIdx.x; idx < total; idx += blockDim.x) {
    const int r = idx / cpr, c = idx - r * cpr;
    const bool ok = r < valid;
    cpAsync16(s + r * SROW + c * 8,
              ok ? g + static_cast<int64_t>(r) * cols + c * 8 : g, ok);
  }
}

static __device__ inline float quadMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

static __device__ inline float quadSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

constexpr int kTcThreads = 128; // 4 warps of 16 rows each
constexpr int kTile = 64;       // rows of the Q, K and V tiles

template <int DMAX> constexpr int tcRow() { return DMAX + 8; }

//===-- Tensor-core tile helpers ------------------------------------------===//

/// Batch b of a [B, rows, cols] tensor of 16-bit elements.
template <class T>
static __device__ inline const uint16_t *batchRows(const T *x, int64_t b,
                                                   int rows, int cols) {
  return reinterpret_cast<const uint16_t *>(x) + b * rows * int64_t(cols);
}

/// Starts the copy of rows [r0, r0 + ROWS) of two row-major tensors of n
/// rows (a: aCols wide, b: bCols wide) into the shared tiles aS and bS, as
/// one cp.async group; rows from n on are zero-filled.
template <int SROW, int ROWS>
static __device__ inline void
asyncTilePair(uint16_t *aS, const uint16_t *a, int aCols, uint16_t *bS,
              const uint16_t *b, int bCols, int r0, int n) {
  asyncTile<SROW>(aS, a + int64_t(r0) * aCols, ROWS, min(ROWS, n - r0), aCols);
  asyncTile<SROW>(bS, b + int64_t(r0) * bCols, ROWS, min(ROWS, n - r0), bCols);
  cpAsyncCommit();
}

/// Double buffering: makes the current tile's buffer ready for the block,
/// first starting the next tile's group with issue() when `more`.
template <class F>
static __device__ __forceinline__ void nextTileReady(bool more, F &&issue) {
  if (more) {
    issue();
    cpAsyncWait<1>();
  } else {
    cpAsyncWait<0>();
  }
  __syncthreads();
}

template <int N>
static __device__ __forceinline__ void zeroAcc(float (&c)[N][4]) {
#pragma unroll
  for (int n = 0; n < N; ++n)
    c[n][0] = c[n][1] = c[n][2] = c[n][3] = 0.0f;
}

/// Row (from the warp's first) and column (from the tile's first) of
/// element e of n-tile n in the accumulator layout.
static __device__ inline int fragRow(int e, int g) { return g + (e >> 1) * 8; }
static __device__ inline int fragCol(int n, int e, int t) {
  return n * 8 + 2 * t + (e & 1);
}

/// acc[n] += A B^T over the first `depth` (a multiple of 16) of KT * 16
/// columns: A the warp's 16 rows (frag(a, kk) fills the operand of columns
/// kk * 16..), B the rows n * 8.. of the shared tile bS.
template <class T, int SROW, int KT, int N, class F>
static __device__ __forceinline__ void
mmaRowsByTile(float (&acc)[N][4], F &&frag, const uint16_t *bS, int depth,
              int g, int t) {
#pragma unroll
  for (int kk = 0; kk < KT; ++kk) {
    if (kk * 16 < depth) {
      uint32_t a[4];
      frag(a, kk);
#pragma unroll
      for (int n = 0; n < N; ++n) {
        uint32_t b0, b1;
        loadB<SROW>(b0, b1, bS, n * 8, kk * 16, g, t);
        Tc<T>::mma(acc[n], a, b0, b1);
      }
    }
  }
}

/// mmaRowsByTile with A the 16 rows from aRow of the shared tile aS.
template <class T, int SROW, int KT, int N>
static __device__ __forceinline__ void
mmaSharedRowsByTile(float (&acc)[N][4], const uint16_t *aS, int aRow,
                    const uint16_t *bS, int depth, int g, int t) {
  mmaRowsByTile<T, SROW, KT>(
      acc,
      [&](uint32_t(&a)[4], int kk) { loadA<SROW>(a, aS, aRow, kk * 16, g, t); },
      bS, depth, g, t);
}

/// Step kk (16 k-indices) of acc += S B: the A operand is the score
/// registers s (n-tiles 2kk and 2kk + 1, rounded to T), B the rows kk * 16..
/// of the shared tile bS (ldmatrix.trans), over its first `width` columns.
template <class T, int SROW, int KT, int N>
static __device__ __forceinline__ void
mmaScoresByTile(float (&acc)[2 * KT][4], const float (&s)[N][4], int kk,
                const uint16_t *bS, int width, int lane) {
  uint32_t a[4];
  a[0] = Tc<T>::pack(s[2 * kk][0], s[2 * kk][1]);
  a[1] = Tc<T>::pack(s[2 * kk][2], s[2 * kk][3]);
  a[2] = Tc<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
  a[3] = Tc<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
  for (int dp = 0; dp < KT; ++dp) {
    if (dp * 16 < width) {
      uint32_t bb[4];
      loadBTrans<SROW>(bb, bS, kk * 16, dp * 16, lane);
      Tc<T>::mma(acc[2 * dp], a, bb[0], bb[1]);
      Tc<T>::mma(acc[2 * dp + 1], a, bb[2], bb[3]);
    }
  }
}

/// Stores the warp's rows r0 and r0 + 8 (those below `rows`) of acc,
/// scaled by s0 and s1 when SCALED and rounded to T, into the first `cols`
/// columns of the row-major out.
template <class T, bool SCALED, int NT>
static __device__ __forceinline__ void
storeRows(T *out, const float (&acc)[NT][4], int r0, int rows, int cols, int t,
          float s0, float s1) {
  const int r1 = r0 + 8;
#pragma unroll
  for (int n = 0; n < NT; ++n) {
    if (n * 8 < cols) {
      const int c = n * 8 + 2 * t;
      if (r0 < rows)
        *reinterpret_cast<uint32_t *>(out + int64_t(r0) * cols + c) =
            SCALED ? Tc<T>::pack(acc[n][0] * s0, acc[n][1] * s0)
                   : Tc<T>::pack(acc[n][0], acc[n][1]);
      if (r1 < rows)
        *reinterpret_cast<uint32_t *>(out + int64_t(r1) * cols + c) =
            SCALED ? Tc<T>::pack(acc[n][2] * s1, acc[n][3] * s1)
                   : Tc<T>::pack(acc[n][2], acc[n][3]);
    }
  }
}

/// Grid-stride tile `tile` of the kernels with one block per (b, 64
/// queries): the longest rows first with causal.
struct QueryTile {
  int64_t b;
  int q0;
};
static __device__ inline QueryTile queryTile(const AttnDims &p, int64_t tile,
                                             int nQT) {
  const int64_t b = tile / nQT;
  int qt = static_cast<int>(tile - b * nQT);
  if (p.causal) // the longest rows first
    qt = nQT - 1 - qt;
  return {b, qt * kTile};
}

/// Key tiles that queries [q0, q0 + kTile) see: [0, count).
static __device__ inline int keyTilesSeen(const AttnDims &p, int q0) {
  const int last = lastKeySeen(p, q0, min(q0 + kTile, p.sq));
  return last < 0 ? 0 : last / kTile + 1;
}

/// Whether key tile [k0, k0 + kTile) needs the per-element mask for the 16
/// queries from wq0: it crosses the end of the keys or the diagonal.
static __device__ inline bool keyTileMasked(const AttnDims &p, int k0,
                                            int wq0) {
  return k0 + kTile > p.sk || (p.causal && k0 + kTile - 1 > wq0 + p.off);
}

/// Whether query `row` does not see key `col` (col >= 0).
static __device__ inline bool keyHidden(const AttnDims &p, int row, int col) {
  return col >= p.sk || (p.causal && col > row + p.off);
}

//===-- Tensor-core forward -----------------------------------------------===//

template <int DMAX> constexpr size_t fwdSmemBytes() {
  return size_t(4) * kTile * tcRow<DMAX>() * 2;
}

template <class T, int DMAX>
__global__ void __launch_bounds__(kTcThreads)
    attnFwdTc(const T *__restrict__ qp, const T *__restrict__ kp,
              const T *__restrict__ vp, T *__restrict__ op,
              float *__restrict__ lse, AttnDims p) {
  constexpr int SROW = tcRow<DMAX>(), KT = DMAX / 16, NT = DMAX / 8;
  constexpr int TILE = kTile * SROW;
  extern __shared__ __align__(16) unsigned char smem[];
  uint16_t *kS = reinterpret_cast<uint16_t *>(smem); // [2][TILE]
  uint16_t *vS = kS + 2 * TILE;                      // [2][TILE]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int nQT = (p.sq + kTile - 1) / kTile;
  const int64_t tiles = p.batch * nQT;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const auto [b, q0] = queryTile(p, tile, nQT);
    const int wq0 = q0 + warp * 16;
    const int r0 = wq0 + g, r1 = r0 + 8;
    const uint16_t *qb = batchRows(qp, b, p.sq, p.d);
    const uint16_t *kb = batchRows(kp, b, p.sk, p.d);
    const uint16_t *vb = batchRows(vp, b, p.sk, p.dv);
    const int nKT = keyTilesSeen(p, q0);
    if (nKT > 0)
      asyncTilePair<SROW, kTile>(kS, kb, p.d, vS, vb, p.dv, 0, p.sk);

    // This warp's 16 query rows as A operands, for the whole tile loop.
    uint32_t qf[KT][4];
#pragma unroll
    for (int kk = 0; kk < KT; ++kk) {
      if (kk * 16 < p.d) {
        const uint16_t *q0p = qb + int64_t(r0) * p.d + kk * 16 + 2 * t;
        const uint16_t *q1p = qb + int64_t(r1) * p.d + kk * 16 + 2 * t;
        qf[kk][0] = r0 < p.sq ? ld32(q0p) : 0u;
        qf[kk][1] = r1 < p.sq ? ld32(q1p) : 0u;
        qf[kk][2] = r0 < p.sq ? ld32(q0p + 8) : 0u;
        qf[kk][3] = r1 < p.sq ? ld32(q1p + 8) : 0u;
      } else {
        qf[kk][0] = qf[kk][1] = qf[kk][2] = qf[kk][3] = 0u;
      }
    }

    float oacc[NT][4];
    zeroAcc(oacc);
    float m0 = kNegInf, m1 = kNegInf, l0 = 0.0f, l1 = 0.0f;

    for (int kt = 0; kt < nKT; ++kt) {
      const int cur = kt & 1;
      nextTileReady(kt + 1 < nKT, [&] {
        asyncTilePair<SROW, kTile>(kS + (cur ^ 1) * TILE, kb, p.d,
                                   vS + (cur ^ 1) * TILE, vb, p.dv,
                                   (kt + 1) * kTile, p.sk);
      });
      const uint16_t *ks = kS + cur * TILE, *vs = vS + cur * TILE;
      const int k0 = kt * kTile;

      // S = Q K^T for 16 queries x 64 keys (8 n-tiles of 8 keys).
      float s[8][4];
      zeroAcc(s);
      mmaRowsByTile<T, SROW, KT>(
          s,
          [&](uint32_t(&a)[4], int kk) {
            a[0] = qf[kk][0];
            a[1] = qf[kk][1];
            a[2] = qf[kk][2];
            a[3] = qf[kk][3];
          },
          ks, p.d, g, t);

      // Scale to the exp2 domain, mask, and the online softmax update.
      const bool maskTile = keyTileMasked(p, k0, wq0);
      float mx0 = kNegInf, mx1 = kNegInf;
#pragma unroll
      for (int n = 0; n < 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = s[n][e] * p.scaleLog2;
          if (maskTile) {
            if (keyHidden(p, wq0 + fragRow(e, g), k0 + fragCol(n, e, t)))
              x = kNegInf;
          }
          s[n][e] = x;
        }
        mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
        mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
      }
      mx0 = quadMax(mx0);
      mx1 = quadMax(mx1);
      const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
      // A row that has seen no key yet keeps -inf: subtract 0 instead.
      const float mu0 = mn0 == kNegInf ? 0.0f : mn0;
      const float mu1 = mn1 == kNegInf ? 0.0f : mn1;
      const float alpha0 = exp2f(m0 - mu0), alpha1 = exp2f(m1 - mu1);
      m0 = mn0;
      m1 = mn1;
      float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
      for (int n = 0; n < 8; ++n) {
        s[n][0] = exp2f(s[n][0] - mu0);
        s[n][1] = exp2f(s[n][1] - mu0);
        s[n][2] = exp2f(s[n][2] - mu1);
        s[n][3] = exp2f(s[n][3] - mu1);
        sum0 += s[n][0] + s[n][1];
        sum1 += s[n][2] + s[n][3];
      }
      l0 = l0 * alpha0 + sum0;
      l1 = l1 * alpha1 + sum1;
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        oacc[n][0] *= alpha0;
        oacc[n][1] *= alpha0;
        oacc[n][2] *= alpha1;
        oacc[n][3] *= alpha1;
      }

      // O += P V: P (rounded to T) from the score registers, 4 k-steps of
      // 16 keys; V^T operands by ldmatrix.trans.
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        mmaScoresByTile<T, SROW, KT>(oacc, s, kk, vs, p.dv, lane);
      __syncthreads(); // the next iteration prefetches into this buffer
    }

    l0 = quadSum(l0);
    l1 = quadSum(l1);
    const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f;
    const float inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
    storeRows<T, true>(op + b * p.sq * int64_t(p.dv), oacc, r0, p.sq, p.dv, t,
                       inv0, inv1);
    if (t == 0) {
      float *lb = lse + b * p.sq;
      if (r0 < p.sq)
        lb[r0] = l0 > 0.0f ? m0 * kLn2 + logf(l0) : kNegInf;
      if (r1 < p.sq)
        lb[r1] = l1 > 0.0f ? m1 * kLn2 + logf(l1) : kNegInf;
    }
  }
}

//===-- Tensor-core backward: dK and dV -----------------------------------===//

/// Queries per tile of the dK/dV kernel (registers: dK and dV hold DMAX/2
/// floats each per thread).
template <int DMAX> constexpr int kvQueryTile() { return DMAX <= 64 ? 64 : 32; }

template <int DMAX> constexpr size_t kvSmemBytes() {
  return size_t(2) * kTile * tcRow<DMAX>() * 2 +
         size_t(4) * kvQueryTile<DMAX>() * tcRow<DMAX>() * 2 +
         size_t(4) * kvQueryTile<DMAX>() * 4;
}

template <class T, int DMAX>
__global__ void __launch_bounds__(kTcThreads)
    attnBwdKvTc(const T *__restrict__ qp, const T *__restrict__ kp,
                const T *__restrict__ vp, const T *__restrict__ dop,
                const float *__restrict__ lse, const float *__restrict__ dvec,
                T *__restrict__ dkp, T *__restrict__ dvp, AttnDims p) {
  constexpr int SROW = tcRow<DMAX>(), KT = DMAX / 16, NT = DMAX / 8;
  constexpr int BQ = kvQueryTile<DMAX>(), QN = BQ / 8;
  constexpr int KTILE = kTile * SROW, QTILE = BQ * SROW;
  extern __shared__ __align__(16) unsigned char smem[];
  uint16_t *kS = reinterpret_cast<uint16_t *>(smem);        // [KTILE]
  uint16_t *vS = kS + KTILE;                                // [KTILE]
  uint16_t *qS = vS + KTILE;                                // [2][QTILE]
  uint16_t *doS = qS + 2 * QTILE;                           // [2][QTILE]
  float *lseS = reinterpret_cast<float *>(doS + 2 * QTILE); // [2][BQ]
  float *dS = lseS + 2 * BQ;                                // [2][BQ]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int nKT = (p.sk + kTile - 1) / kTile;
  const int nQ = (p.sq + BQ - 1) / BQ;
  const int64_t tiles = p.batch * nKT;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t b = tile / nKT;
    const int kt = static_cast<int>(tile - b * nKT);
    const int k0 = kt * kTile, wk0 = k0 + warp * 16;
    const uint16_t *qb = batchRows(qp, b, p.sq, p.d);
    const uint16_t *dob = batchRows(dop, b, p.sq, p.dv);
    const uint16_t *kb = batchRows(kp, b, p.sk, p.d);
    const uint16_t *vb = batchRows(vp, b, p.sk, p.dv);
    const float *lb = lse + b * p.sq, *db = dvec + b * p.sq;
    asyncTilePair<SROW, kTile>(kS, kb, p.d, vS, vb, p.dv, k0, p.sk);
    // The query tiles that see a key of this tile: from the first query
    // seeing key k0 to the end.
    const int qtBegin = firstQuerySeeing(p, k0) / BQ;

    // Starts loading query tile qt into buffer buf.
    auto issue = [&](int qt, int buf) {
      const int i0 = qt * BQ;
      asyncTilePair<SROW, BQ>(qS + buf * QTILE, qb, p.d, doS + buf * QTILE, dob,
                              p.dv, i0, p.sq);
      for (int r = threadIdx.x; r < BQ; r += blockDim.x) {
        const bool ok = i0 + r < p.sq;
        lseS[buf * BQ + r] = ok ? lb[i0 + r] * kLog2e : 0.0f;
        dS[buf * BQ + r] = ok ? db[i0 + r] : 0.0f;
      }
    };
    if (qtBegin < nQ)
      issue(qtBegin, 0);

    float dk[NT][4], dv[NT][4];
    zeroAcc(dk);
    zeroAcc(dv);

    for (int qt = qtBegin; qt < nQ; ++qt) {
      const int cur = (qt - qtBegin) & 1;
      nextTileReady(qt + 1 < nQ, [&] { issue(qt + 1, cur ^ 1); });
      const uint16_t *qs = qS + cur * QTILE, *dos = doS + cur * QTILE;
      const float *ls = lseS + cur * BQ, *ds = dS + cur * BQ;
      const int i0 = qt * BQ;

      // S^T = K Q^T and dP^T = V dO^T for this warp's 16 keys x BQ queries.
      float st[QN][4], dpt[QN][4];
      zeroAcc(st);
      zeroAcc(dpt);
      mmaSharedRowsByTile<T, SROW, KT>(st, kS, warp * 16, qs, p.d, g, t);
      mmaSharedRowsByTile<T, SROW, KT>(dpt, vS, warp * 16, dos, p.dv, g, t);

      // P^T = exp(S^T - lse) (0 where masked), dS^T = P^T (dP^T - D).
      const bool maskTile =
          i0 + BQ > p.sq || (p.causal && wk0 + 15 > i0 + p.off);
#pragma unroll
      for (int n = 0; n < QN; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int ql = fragCol(n, e, t);
          float pv = exp2f(fmaf(st[n][e], p.scaleLog2, -ls[ql]));
          if (maskTile) {
            const int key = wk0 + fragRow(e, g);
            if (i0 + ql >= p.sq || (p.causal && key > i0 + ql + p.off))
              pv = 0.0f;
          }
          st[n][e] = pv;
          dpt[n][e] = pv * (dpt[n][e] - ds[ql]);
        }
      }

      // dV += P^T dO and dK += dS^T Q: k runs over the BQ queries.
#pragma unroll
      for (int kq = 0; kq < BQ / 16; ++kq) {
        mmaScoresByTile<T, SROW, KT>(dv, st, kq, dos, p.dv, lane);
        mmaScoresByTile<T, SROW, KT>(dk, dpt, kq, qs, p.d, lane);
      }
      __syncthreads(); // the next iteration prefetches into this buffer
    }
    cpAsyncWait<0>(); // the K/V group when no query tile ran
    __syncthreads();  // K and V are refilled by the next tile

    const int r0 = wk0 + g;
    storeRows<T, true>(dkp + b * p.sk * int64_t(p.d), dk, r0, p.sk, p.d, t,
                       p.scale, p.scale);
    storeRows<T, false>(dvp + b * p.sk * int64_t(p.dv), dv, r0, p.sk, p.dv, t,
                        1.0f, 1.0f);
  }
}

//===-- Tensor-core backward: dQ ------------------------------------------===//

template <int DMAX> constexpr size_t qSmemBytes() {
  return size_t(6) * kTile * tcRow<DMAX>() * 2;
}

template <class T, int DMAX>
__global__ void __launch_bounds__(kTcThreads)
    attnBwdQTc(const T *__restrict__ qp, const T *__restrict__ kp,
               const T *__restrict__ vp, const T *__restrict__ dop,
               const float *__restrict__ lse, const float *__restrict__ dvec,
               T *__restrict__ dqp, AttnDims p) {
  constexpr int SROW = tcRow<DMAX>(), KT = DMAX / 16, NT = DMAX / 8;
  constexpr int TILE = kTile * SROW;
  extern __shared__ __align__(16) unsigned char smem[];
  uint16_t *qS = reinterpret_cast<uint16_t *>(smem); // [TILE]
  uint16_t *doS = qS + TILE;                         // [TILE]
  uint16_t *kS = doS + TILE;                         // [2][TILE]
  uint16_t *vS = kS + 2 * TILE;                      // [2][TILE]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int nQT = (p.sq + kTile - 1) / kTile;
  const int64_t tiles = p.batch * nQT;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const auto [b, q0] = queryTile(p, tile, nQT);
    const int wq0 = q0 + warp * 16;
    const int r0 = wq0 + g, r1 = r0 + 8;
    const uint16_t *qb = batchRows(qp, b, p.sq, p.d);
    const uint16_t *dob = batchRows(dop, b, p.sq, p.dv);
    const uint16_t *kb = batchRows(kp, b, p.sk, p.d);
    const uint16_t *vb = batchRows(vp, b, p.sk, p.dv);
    asyncTilePair<SROW, kTile>(qS, qb, p.d, doS, dob, p.dv, q0, p.sq);
    const int nKT = keyTilesSeen(p, q0);
    if (nKT > 0)
      asyncTilePair<SROW, kTile>(kS, kb, p.d, vS, vb, p.dv, 0, p.sk);
    // lse (exp2 domain) and D of rows r0 and r1.
    const float *lb = lse + b * p.sq, *db = dvec + b * p.sq;
    const float ls0 = r0 < p.sq ? lb[r0] * kLog2e : 0.0f;
    const float ls1 = r1 < p.sq ? lb[r1] * kLog2e : 0.0f;
    const float d0 = r0 < p.sq ? db[r0] : 0.0f;
    const float d1 = r1 < p.sq ? db[r1] : 0.0f;

    float dq[NT][4];
    zeroAcc(dq);

    for (int kt = 0; kt < nKT; ++kt) {
      const int cur = kt & 1;
      nextTileReady(kt + 1 < nKT, [&] {
        asyncTilePair<SROW, kTile>(kS + (cur ^ 1) * TILE, kb, p.d,
                                   vS + (cur ^ 1) * TILE, vb, p.dv,
                                   (kt + 1) * kTile, p.sk);
      });
      const uint16_t *ks = kS + cur * TILE, *vs = vS + cur * TILE;
      const int k0 = kt * kTile;

      // S = Q K^T and dP = dO V^T for this warp's 16 queries x 64 keys.
      float s[8][4], dpm[8][4];
      zeroAcc(s);
      zeroAcc(dpm);
      mmaSharedRowsByTile<T, SROW, KT>(s, qS, warp * 16, ks, p.d, g, t);
      mmaSharedRowsByTile<T, SROW, KT>(dpm, doS, warp * 16, vs, p.dv, g, t);

      // P = exp(S - lse) (0 where masked), dS = P (dP - D) into s.
      const bool maskTile = keyTileMasked(p, k0, wq0);
#pragma unroll
      for (int n = 0; n < 8; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const bool hi = e >= 2;
          float pv = exp2f(fmaf(s[n][e], p.scaleLog2, hi ? -ls1 : -ls0));
          if (maskTile) {
            if (keyHidden(p, wq0 + fragRow(e, g), k0 + fragCol(n, e, t)))
              pv = 0.0f;
          }
          s[n][e] = pv * (dpm[n][e] - (hi ? d1 : d0));
        }
      }

      // dQ += dS K: k runs over the 64 keys, K operands by ldmatrix.trans.
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        mmaScoresByTile<T, SROW, KT>(dq, s, kk, ks, p.d, lane);
      __syncthreads(); // the next iteration prefetches into this buffer
    }
    cpAsyncWait<0>(); // the Q/dO group when no key tile ran
    __syncthreads();  // Q and dO are refilled by the next tile

    storeRows<T, true>(dqp + b * p.sq * int64_t(p.d), dq, r0, p.sq, p.d, t,
                       p.scale, p.scale);
  }
}

//===-- D_i = rowsum(dO o O) ----------------------------------------------===//

constexpr int kWarps = 4; // warps per block of the warp-per-row kernels

template <class T>
__global__ void
attnRowDotKernel(const T *__restrict__ dout, const T *__restrict__ o,
                 float *__restrict__ dvec, int64_t rows, int64_t n) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = blockIdx.x * int64_t(kWarps) + (threadIdx.x >> 5); r < rows;
       r += int64_t(gridDim.x) * kWarps) {
    float s = 0.0f;
    for (int64_t c = lane; c < n; c += 32)
      s = fmaf(toFloat(dout[r * n + c]), toFloat(o[r * n + c]), s);
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
    const T *qr = q + row * p.d;
    const T *kb = k + b * p.sk * int64_t(p.d);
    const T *vb = v + b * p.sk * int64_t(p.dv);
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
                partialDot(qreg, qr, kb + int64_t(j0 + jj) * p.d, p.d, lane)) *
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
        const T *vr = vb + int64_t(j0 + jj) * p.dv;
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
        storeFloat(o + row * p.dv + c, l > 0.0f ? acc[s] / l : 0.0f);
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
    const T *qr = q + row * p.d;
    const T *dor = dout + row * p.dv;
    const T *kb = k + b * p.sk * int64_t(p.d);
    const T *vb = v + b * p.sk * int64_t(p.dv);
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
      const T *kr = kb + int64_t(j) * p.d;
      const T *vr = vb + int64_t(j) * p.dv;
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
        storeFloat(dq + row * p.d + c, acc[s] * p.scale);
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
    const T *kr = k + row * p.d;
    const T *vr = v + row * p.dv;
    const T *qb = q + b * p.sq * int64_t(p.d);
    const T *dob = dout + b * p.sq * int64_t(p.dv);
    const float *lb = lse + b * p.sq, *db = dvec + b * p.sq;
    const int64_t c0 = int64_t(chunk) * kChunkCols;
    float kreg[kSlots], vreg[kSlots], dka[kSlots], dva[kSlots];
    loadSlots(kreg, kr, p.d, lane);
    loadSlots(vreg, vr, p.dv, lane);
#pragma unroll
    for (int s = 0; s < kSlots; ++s)
      dka[s] = dva[s] = 0.0f;
    for (int i = firstQuerySeeing(p, j); i < p.sq; ++i) {
      const T *qr = qb + int64_t(i) * p.d;
      const T *dor = dob + int64_t(i) * p.dv;
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
        storeFloat(dv + row * p.dv + c, dva[s]);
      if (c < p.d)
        storeFloat(dk + row * p.d + c, dka[s] * p.scale);
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
  static const bool compiled = [] {
    cudaFuncAttributes a;
    if (cudaFuncGetAttributes(&a, attnFwdTc<__nv_bfloat16, 64>) !=
        cudaSuccess) {
      (void)cudaGetLastError(); // not a launch error for checkLaunch
      return false;
    }
    return a.ptxVersion >= 80;
  }();
  return compiled && computeCapability() >= 80;
}

/// Calls f(Int<DMAX>) for the tensor-core kernels' feature-dim bound.
template <class F> void dispatchDMax(const AttnDims &p, F &&f) {
  if (p.d <= 64 && p.dv <= 64)
    f(Int<64>());
  else
    f(Int<128>());
}

/// Lets `kernel` take `bytes` of dynamic shared memory.
template <class K> void allowSmem(K *kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    check(cudaFuncSetAttribute(kernel,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(bytes)),
          "attention: reserving shared memory");
}

/// Launches the tensor-core kernel K, one block per tile (up to gridFor's
/// cap: the kernels stride), with `smem` bytes of dynamic shared memory
/// (reserved once per kernel).
template <auto K, class... A>
void launchTc(int64_t tiles, size_t smem, cudaStream_t stream, A... args) {
  static const bool ready = (allowSmem(K, smem), true);
  (void)ready;
  K<<<gridFor(tiles, 1), kTcThreads, smem, stream>>>(args...);
}

/// Launches a kernel of kWarps warps per block, one warp per item.
template <class K, class... A>
void launchWarps(K *kernel, int64_t items, cudaStream_t stream, A... args) {
  kernel<<<gridFor(items, kWarps), 32 * kWarps, 0, stream>>>(args...);
}

template <class T> const T *in(const void *x) {
  return static_cast<const T *>(x);
}
template <class T> T *out(void *x) { return static_cast<T *>(x); }

template <class T, int DMAX>
void launchFwdTc(const void *q, const void *k, const void *v, void *o,
                 float *lse, const AttnDims &p, cudaStream_t stream) {
  launchTc<attnFwdTc<T, DMAX>>(p.batch * ceilDiv(p.sq, kTile),
                               fwdSmemBytes<DMAX>(), stream, in<T>(q), in<T>(k),
                               in<T>(v), out<T>(o), lse, p);
}

template <class T, int DMAX>
void launchBwdTc(const void *q, const void *k, const void *v, const void *dout,
                 const float *lse, const float *dvec, void *dq, void *dk,
                 void *dv, const AttnDims &p, cudaStream_t stream) {
  launchTc<attnBwdKvTc<T, DMAX>>(
      p.batch * ceilDiv(p.sk, kTile), kvSmemBytes<DMAX>(), stream, in<T>(q),
      in<T>(k), in<T>(v), in<T>(dout), lse, dvec, out<T>(dk), out<T>(dv), p);
  checkLaunch("attention_grad");
  launchTc<attnBwdQTc<T, DMAX>>(
      p.batch * ceilDiv(p.sq, kTile), qSmemBytes<DMAX>(), stream, in<T>(q),
      in<T>(k), in<T>(v), in<T>(dout), lse, dvec, out<T>(dq), p);
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
        dispatchDMax(p, [&](auto dmax) {
          launchFwdTc<T, decltype(dmax)::value>(q, k, v, o, lse, p, stream);
        });
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
                rows, int64_t(p.dv));
    checkLaunch("attention_grad");
    if constexpr (!std::is_same_v<T, float>) {
      if (tc) {
        dispatchDMax(p, [&](auto dmax) {
          launchBwdTc<T, decltype(dmax)::value>(q, k, v, dout, lse, dvec, dq,
                                                dk, dv, p, stream);
        });
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
