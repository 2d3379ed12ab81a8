//===- Attention.cpp - Fused scaled dot-product attention on the CPU ------===//
//
//   attention       o = softmax(scale * q k^T [causal]) v, lse per query
//   attention_grad  dq, dk, dv from o, lse and do
//
// A problem's rows are read and written where AttentionShape says they are
// (one after another, or seq-major: the heads' rows interleaved), gathered
// into contiguous f32 rows first; the arithmetic is the same either way.
//
// Queries go in blocks of kQueryBlock rows; a block's scores (rows x the
// keys it sees) live in per-thread scratch and never in the arena, so the
// memory is O(rows x Sk) per thread instead of O(Sq x Sk) per problem. The
// products run on gemmTile. The forward splits the (problem, block) pairs
// over the pool; the backward splits the problems, each thread summing its
// problem's dk and dv over the blocks in order, so results do not depend on
// the thread count.
//
//===----------------------------------------------------------------------===//
#include "AttentionShape.h"
#include "DTypes.h"
#include "Gemm.h"
#include "Parallel.h"
#include "Scratch.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace weft::cpu;

namespace {

constexpr int64_t kQueryBlock = 32;

/// `rows` rows of `cols` elements, `stride` apart from `src`, as
/// contiguous f32: `src` itself for contiguous f32, else widened (and
/// gathered) into `buf`.
template <class T>
const float *rowsAsFloat(const T *src, int64_t rows, int64_t cols,
                         int64_t stride, float *buf) {
  if constexpr (std::is_same_v<T, float>)
    if (stride == cols)
      return src;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      buf[r * cols + c] = widen(src[r * stride + c]);
  return buf;
}

/// Stores contiguous f32 rows into rows `stride` apart, rounded to T.
template <class T>
void storeRows(const float *src, int64_t rows, int64_t cols, int64_t stride,
               T *dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[r * stride + c] = narrowTo<T>(src[r * cols + c]);
}

/// Keys the rows [row0, row0 + rows) see together: the last row's.
int64_t blockKeys(const AttentionShape &s, int64_t row0, int64_t rows) {
  return s.keysSeen(row0 + rows - 1);
}

/// Scores of `rows` queries (q: rows x D) against keys [0, keys): p (rows x
/// keys, ld keys) = scale * q k^T, masked entries left as they are.
void scores(const AttentionShape &s, const float *q, const float *k,
            int64_t rows, int64_t keys, float *p) {
  gemmTile(rows, keys, s.d, q, s.d, false, k, s.d, true, p, keys, nullptr,
           false);
  const float scale = static_cast<float>(s.scale);
  for (int64_t i = 0; i < rows * keys; ++i)
    p[i] *= scale;
}

template <class T>
void attentionForward(const AttentionShape &s, const KernelArgs &args) {
  const T *q = args.tensor(0).as<T>();
  const T *k = args.tensor(1).as<T>();
  const T *v = args.tensor(2).as<T>();
  T *o = args.tensor(3).as<T>();
  float *lse = args.tensor(4).as<float>();
  const int64_t blocks = (s.sq + kQueryBlock - 1) / kQueryBlock;
  const int64_t work = s.sk * (s.d + s.dv) * kQueryBlock;
  parallelFor(
      s.batch * blocks,
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(work, 1)),
      [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
          const int64_t b = task / blocks;
          const int64_t row0 = task % blocks * kQueryBlock;
          const int64_t rows = std::min(kQueryBlock, s.sq - row0);
          const int64_t keys = blockKeys(s, row0, rows);
          const float *qf = rowsAsFloat(
              q + s.rowBase(b, s.sq, s.d) + row0 * s.rowStride(s.d), rows, s.d,
              s.rowStride(s.d), scratch<float>(0, rows * s.d));
          const float *kf =
              rowsAsFloat(k + s.rowBase(b, s.sk, s.d), keys, s.d,
                          s.rowStride(s.d), scratch<float>(1, s.sk * s.d));
          const float *vf =
              rowsAsFloat(v + s.rowBase(b, s.sk, s.dv), keys, s.dv,
                          s.rowStride(s.dv), scratch<float>(2, s.sk * s.dv));
          float *p = scratch<float>(3, rows * std::max<int64_t>(keys, 1));
          float *out = scratch<float>(4, rows * s.dv);
          if (keys > 0)
            scores(s, qf, kf, rows, keys, p);
          for (int64_t r = 0; r < rows; ++r) {
            float *row = p + r * keys;
            const int64_t n = s.keysSeen(row0 + r);
            float *l = lse + b * s.sq + row0 + r;
            if (n == 0) {
              std::fill(row, row + keys, 0.0f);
              *l = -std::numeric_limits<float>::infinity();
              continue;
            }
            float max = row[0];
            for (int64_t j = 1; j < n; ++j)
              max = std::max(max, row[j]);
            float sum = 0.0f;
            for (int64_t j = 0; j < n; ++j) {
              row[j] = std::exp(row[j] - max);
              sum += row[j];
            }
            const float inv = 1.0f / sum;
            for (int64_t j = 0; j < n; ++j)
              row[j] *= inv;
            std::fill(row + n, row + keys, 0.0f);
            *l = max + std::log(sum);
          }
          if (keys > 0)
            gemmTile(rows, s.dv, keys, p, keys, vf, s.dv, out, s.dv, nullptr,
                     false);
          else
            std::fill(out, out + rows * s.dv, 0.0f);
          storeRows(out, rows, s.dv, s.rowStride(s.dv),
                    o + s.rowBase(b, s.sq, s.dv) + row0 * s.rowStride(s.dv));
        }
      });
}

template <class T>
void attentionBackward(const AttentionShape &s, const KernelArgs &args) {
  const T *q = args.tensor(0).as<T>();
  const T *k = args.tensor(1).as<T>();
  const T *v = args.tensor(2).as<T>();
  const T *o = args.tensor(3).as<T>();
  const float *lse = args.tensor(4).as<float>();
  const T *dout = args.tensor(5).as<T>();
  T *dq = args.tensor(6).as<T>();
  T *dk = args.tensor(7).as<T>();
  T *dv = args.tensor(8).as<T>();
  const int64_t work = s.sq * s.sk * (s.d + s.dv);
  parallelFor(s.batch,
              std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(work, 1)),
              [&](int64_t begin, int64_t end) {
                for (int64_t b = begin; b < end; ++b) {
                  const float *qf = rowsAsFloat(q + s.rowBase(b, s.sq, s.d),
                                                s.sq, s.d, s.rowStride(s.d),
                                                scratch<float>(0, s.sq * s.d));
                  const float *kf = rowsAsFloat(k + s.rowBase(b, s.sk, s.d),
                                                s.sk, s.d, s.rowStride(s.d),
                                                scratch<float>(1, s.sk * s.d));
                  const float *vf = rowsAsFloat(v + s.rowBase(b, s.sk, s.dv),
                                                s.sk, s.dv, s.rowStride(s.dv),
                                                scratch<float>(2, s.sk * s.dv));
                  // do, then o's row sums of do * o (D_i), kept beside it.
                  float *dof = scratch<float>(3, s.sq * s.dv + s.sq);
                  float *rowDot = dof + s.sq * s.dv;
                  const int64_t ldo = s.rowStride(s.dv);
                  const T *dob = dout + s.rowBase(b, s.sq, s.dv);
                  const T *ob = o + s.rowBase(b, s.sq, s.dv);
                  for (int64_t i = 0; i < s.sq; ++i) {
                    float acc = 0.0f;
                    for (int64_t j = 0; j < s.dv; ++j) {
                      const float g = widen(dob[i * ldo + j]);
                      dof[i * s.dv + j] = g;
                      acc += g * widen(ob[i * ldo + j]);
                    }
                    rowDot[i] = acc;
                  }
                  // dk and dv (f32 sums), one query block's p and dp.
                  float *grads = scratch<float>(4, s.sk * (s.d + s.dv) +
                                                       2 * kQueryBlock * s.sk +
                                                       kQueryBlock * s.d);
                  float *dkf = grads, *dvf = grads + s.sk * s.d;
                  float *p = dvf + s.sk * s.dv, *dp = p + kQueryBlock * s.sk;
                  float *dqf = dp + kQueryBlock * s.sk;
                  std::fill(dkf, dkf + s.sk * (s.d + s.dv), 0.0f);
                  for (int64_t row0 = 0; row0 < s.sq; row0 += kQueryBlock) {
                    const int64_t rows = std::min(kQueryBlock, s.sq - row0);
                    const int64_t keys = blockKeys(s, row0, rows);
                    const int64_t ldq = s.rowStride(s.d);
                    T *dqb = dq + s.rowBase(b, s.sq, s.d) + row0 * ldq;
                    if (keys == 0) {
                      for (int64_t r = 0; r < rows; ++r)
                        for (int64_t c = 0; c < s.d; ++c)
                          dqb[r * ldq + c] = narrowTo<T>(0.0f);
                      continue;
                    }
                    scores(s, qf + row0 * s.d, kf, rows, keys, p);
                    for (int64_t r = 0; r < rows; ++r) {
                      const int64_t n = s.keysSeen(row0 + r);
                      const float l = lse[b * s.sq + row0 + r];
                      float *row = p + r * keys;
                      for (int64_t j = 0; j < n; ++j)
                        row[j] = std::exp(row[j] - l);
                      std::fill(row + n, row + keys, 0.0f);
                    }
                    const float *dob32 = dof + row0 * s.dv;
                    // dv += p^T do
                    gemmTile(keys, s.dv, rows, p, keys, true, dob32, s.dv,
                             false, dvf, s.dv, nullptr, true);
                    // dp = do v^T, then ds = scale * p * (dp - D_i) in place of
                    // dp
                    gemmTile(rows, keys, s.dv, dob32, s.dv, false, vf, s.dv,
                             true, dp, keys, nullptr, false);
                    const float scale = static_cast<float>(s.scale);
                    for (int64_t r = 0; r < rows; ++r) {
                      const float di = rowDot[row0 + r];
                      for (int64_t j = 0; j < keys; ++j)
                        dp[r * keys + j] =
                            scale * p[r * keys + j] * (dp[r * keys + j] - di);
                    }
                    // dq = ds k, dk += ds^T q
                    gemmTile(rows, s.d, keys, dp, keys, false, kf, s.d, false,
                             dqf, s.d, nullptr, false);
                    storeRows(dqf, rows, s.d, ldq, dqb);
                    gemmTile(keys, s.d, rows, dp, keys, true, qf + row0 * s.d,
                             s.d, false, dkf, s.d, nullptr, true);
                  }
                  storeRows(dkf, s.sk, s.d, s.rowStride(s.d),
                            dk + s.rowBase(b, s.sk, s.d));
                  storeRows(dvf, s.sk, s.dv, s.rowStride(s.dv),
                            dv + s.rowBase(b, s.sk, s.dv));
                }
              });
}

} // namespace

extern "C" void weft_k_attention(void *const *bufs, const int64_t *desc) {
  KernelArgs args("attention", bufs, desc);
  const AttentionShape s = attentionShape(args, /*grad=*/false);
  if (s.batch == 0 || s.sq == 0)
    return;
  dispatchF32Or16(s.dtype, args, [&](auto tag) {
    attentionForward<typename decltype(tag)::type>(s, args);
  });
}

extern "C" void weft_k_attention_grad(void *const *bufs, const int64_t *desc) {
  KernelArgs args("attention_grad", bufs, desc);
  const AttentionShape s = attentionShape(args, /*grad=*/true);
  if (s.batch == 0)
    return;
  dispatchF32Or16(s.dtype, args, [&](auto tag) {
    attentionBackward<typename decltype(tag)::type>(s, args);
  });
}
