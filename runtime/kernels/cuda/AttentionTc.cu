//===- AttentionTc.cu - The tensor-core attention kernels -----------------===//
//
// The bf16 / f16 kernels of attention and attention_grad on mma.sync
// (Attention.cu describes the algorithms and picks them per call): the
// forward, the dK/dV and the dQ kernels, their tile helpers and launchers.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/AttentionCommon.cuh"
#include "runtime/kernels/cuda/CudaKernels.h"

#include <cstring>

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::math;
using namespace weft::cuda::attention;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define WEFT_ATTENTION_NO_MMA 1 // the host never picks the tensor-core path
#else
#define WEFT_ATTENTION_NO_MMA 0
#endif

namespace {

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
                                        int rows, int valid, int cols,
                                        int64_t ld) {
  const int cpr = cols >> 3;
  const int total = rows * cpr;
  for (int idx = threadIdx.x; idx < total; idx += blockDim.x) {
    const int r = idx / cpr, c = idx - r * cpr;
    const bool ok = r < valid;
    cpAsync16(s + r * SROW + c * 8,
              ok ? g + static_cast<int64_t>(r) * ld + c * 8 : g, ok);
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

/// Problem b's first row in a tensor of 16-bit elements with `rows` rows
/// of `cols` per problem (rowOf: problems one after another, or their rows
/// interleaved, seq-major).
template <class T>
static __device__ inline const uint16_t *
batchRows(const T *x, const AttnDims &p, int64_t b, int rows, int cols) {
  return reinterpret_cast<const uint16_t *>(x) + rowOf(p, b, 0, rows, cols);
}

/// Starts the copy of rows [r0, r0 + ROWS) of two row-major tensors of n
/// rows (a: aCols wide, b: bCols wide; `heads` problems' rows interleaved,
/// so a row is heads * cols from the next) into the shared tiles aS and
/// bS, as one cp.async group; rows from n on are zero-filled.
template <int SROW, int ROWS>
static __device__ inline void
asyncTilePair(uint16_t *aS, const uint16_t *a, int aCols, uint16_t *bS,
              const uint16_t *b, int bCols, int r0, int n, int heads) {
  const int64_t aLd = int64_t(heads) * aCols, bLd = int64_t(heads) * bCols;
  asyncTile<SROW>(aS, a + int64_t(r0) * aLd, ROWS, min(ROWS, n - r0), aCols,
                  aLd);
  asyncTile<SROW>(bS, b + int64_t(r0) * bLd, ROWS, min(ROWS, n - r0), bCols,
                  bLd);
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
/// columns of the row-major out, whose rows are heads * cols apart.
template <class T, bool SCALED, int NT>
static __device__ __forceinline__ void
storeRows(T *out, const float (&acc)[NT][4], int r0, int rows, int cols,
          int heads, int t, float s0, float s1) {
  const int r1 = r0 + 8;
  const int64_t ld = int64_t(heads) * cols;
#pragma unroll
  for (int n = 0; n < NT; ++n) {
    if (n * 8 < cols) {
      const int c = n * 8 + 2 * t;
      if (r0 < rows)
        *reinterpret_cast<uint32_t *>(out + int64_t(r0) * ld + c) =
            SCALED ? Tc<T>::pack(acc[n][0] * s0, acc[n][1] * s0)
                   : Tc<T>::pack(acc[n][0], acc[n][1]);
      if (r1 < rows)
        *reinterpret_cast<uint32_t *>(out + int64_t(r1) * ld + c) =
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
    const uint16_t *qb = batchRows(qp, p, b, p.sq, p.d);
    const uint16_t *kb = batchRows(kp, p, b, p.sk, p.d);
    const uint16_t *vb = batchRows(vp, p, b, p.sk, p.dv);
    const int64_t ldq = rowStride(p, p.d);
    const int nKT = keyTilesSeen(p, q0);
    if (nKT > 0)
      asyncTilePair<SROW, kTile>(kS, kb, p.d, vS, vb, p.dv, 0, p.sk, p.heads);

    // This warp's 16 query rows as A operands, for the whole tile loop.
    uint32_t qf[KT][4];
#pragma unroll
    for (int kk = 0; kk < KT; ++kk) {
      if (kk * 16 < p.d) {
        const uint16_t *q0p = qb + int64_t(r0) * ldq + kk * 16 + 2 * t;
        const uint16_t *q1p = qb + int64_t(r1) * ldq + kk * 16 + 2 * t;
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
                                   (kt + 1) * kTile, p.sk, p.heads);
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
    storeRows<T, true>(op + rowOf(p, b, 0, p.sq, p.dv), oacc, r0, p.sq, p.dv,
                       p.heads, t, inv0, inv1);
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
    const uint16_t *qb = batchRows(qp, p, b, p.sq, p.d);
    const uint16_t *dob = batchRows(dop, p, b, p.sq, p.dv);
    const uint16_t *kb = batchRows(kp, p, b, p.sk, p.d);
    const uint16_t *vb = batchRows(vp, p, b, p.sk, p.dv);
    const float *lb = lse + b * p.sq, *db = dvec + b * p.sq;
    asyncTilePair<SROW, kTile>(kS, kb, p.d, vS, vb, p.dv, k0, p.sk, p.heads);
    // The query tiles that see a key of this tile: from the first query
    // seeing key k0 to the end.
    const int qtBegin = firstQuerySeeing(p, k0) / BQ;

    // Starts loading query tile qt into buffer buf.
    auto issue = [&](int qt, int buf) {
      const int i0 = qt * BQ;
      asyncTilePair<SROW, BQ>(qS + buf * QTILE, qb, p.d, doS + buf * QTILE, dob,
                              p.dv, i0, p.sq, p.heads);
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
    storeRows<T, true>(dkp + rowOf(p, b, 0, p.sk, p.d), dk, r0, p.sk, p.d,
                       p.heads, t, p.scale, p.scale);
    storeRows<T, false>(dvp + rowOf(p, b, 0, p.sk, p.dv), dv, r0, p.sk, p.dv,
                        p.heads, t, 1.0f, 1.0f);
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
    const uint16_t *qb = batchRows(qp, p, b, p.sq, p.d);
    const uint16_t *dob = batchRows(dop, p, b, p.sq, p.dv);
    const uint16_t *kb = batchRows(kp, p, b, p.sk, p.d);
    const uint16_t *vb = batchRows(vp, p, b, p.sk, p.dv);
    asyncTilePair<SROW, kTile>(qS, qb, p.d, doS, dob, p.dv, q0, p.sq, p.heads);
    const int nKT = keyTilesSeen(p, q0);
    if (nKT > 0)
      asyncTilePair<SROW, kTile>(kS, kb, p.d, vS, vb, p.dv, 0, p.sk, p.heads);
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
                                   (kt + 1) * kTile, p.sk, p.heads);
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

    storeRows<T, true>(dqp + rowOf(p, b, 0, p.sq, p.d), dq, r0, p.sq, p.d,
                       p.heads, t, p.scale, p.scale);
  }
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

} // namespace

bool weft::cuda::attention::tensorCoresCompiled() {
  static const bool compiled = [] {
    cudaFuncAttributes a;
    if (cudaFuncGetAttributes(&a, attnFwdTc<__nv_bfloat16, 64>) !=
        cudaSuccess) {
      (void)cudaGetLastError(); // not a launch error for checkLaunch
      return false;
    }
    return a.ptxVersion >= 80;
  }();
  return compiled;
}

template <class T>
void weft::cuda::attention::launchForwardTc(const void *q, const void *k,
                                            const void *v, void *o, float *lse,
                                            const AttnDims &p,
                                            cudaStream_t stream) {
  dispatchDMax(p, [&](auto dmax) {
    constexpr int DMAX = decltype(dmax)::value;
    launchTc<attnFwdTc<T, DMAX>>(p.batch * ceilDiv(p.sq, kTile),
                                 fwdSmemBytes<DMAX>(), stream, in<T>(q),
                                 in<T>(k), in<T>(v), out<T>(o), lse, p);
  });
}

template <class T>
void weft::cuda::attention::launchBackwardTc(
    const void *q, const void *k, const void *v, const void *dout,
    const float *lse, const float *dvec, void *dq, void *dk, void *dv,
    const AttnDims &p, cudaStream_t stream) {
  dispatchDMax(p, [&](auto dmax) {
    constexpr int DMAX = decltype(dmax)::value;
    launchTc<attnBwdKvTc<T, DMAX>>(
        p.batch * ceilDiv(p.sk, kTile), kvSmemBytes<DMAX>(), stream, in<T>(q),
        in<T>(k), in<T>(v), in<T>(dout), lse, dvec, out<T>(dk), out<T>(dv), p);
    checkLaunch("attention_grad");
    launchTc<attnBwdQTc<T, DMAX>>(
        p.batch * ceilDiv(p.sq, kTile), qSmemBytes<DMAX>(), stream, in<T>(q),
        in<T>(k), in<T>(v), in<T>(dout), lse, dvec, out<T>(dq), p);
  });
}

#define WEFT_ATTENTION_TC(T)                                                   \
  template void weft::cuda::attention::launchForwardTc<T>(                     \
      const void *, const void *, const void *, void *, float *,               \
      const AttnDims &, cudaStream_t);                                         \
  template void weft::cuda::attention::launchBackwardTc<T>(                    \
      const void *, const void *, const void *, const void *, const float *,   \
      const float *, void *, void *, void *, const AttnDims &, cudaStream_t);
WEFT_ATTENTION_TC(__nv_bfloat16)
WEFT_ATTENTION_TC(__half)
#undef WEFT_ATTENTION_TC
