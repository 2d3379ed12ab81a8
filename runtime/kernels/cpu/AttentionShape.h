//===- AttentionShape.h - Checks of an attention kernel call --------------===//
//
// attention (q, k, v -> o, lse) and attention_grad (q, k, v, o, lse, do ->
// dq, dk, dv) check their tensors the same way on the CPU and the GPU:
// this header reads the call into the problem's extents or stops with a
// message naming the kernel and what is wrong.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_ATTENTIONSHAPE_H
#define WEFT_RUNTIME_KERNELS_CPU_ATTENTIONSHAPE_H

#include "KernelArgs.h"

#include <cstdint>

namespace weft {
namespace cpu {

#ifdef __CUDACC__
#define WEFT_ATTENTION_HOST_DEVICE __host__ __device__
#else
#define WEFT_ATTENTION_HOST_DEVICE
#endif

/// Where row i of problem b starts in a tensor with `rows` rows of `cols`
/// elements per problem: problem after problem ([B, rows, cols], heads =
/// 1), or seq-major ([N, rows, heads, cols], problem b = n * heads + h),
/// each row heads * cols from the next. The CPU and GPU kernels both
/// address rows through it.
inline WEFT_ATTENTION_HOST_DEVICE int64_t attentionRow(int64_t b, int64_t i,
                                                       int64_t rows,
                                                       int64_t cols,
                                                       int64_t heads) {
  return ((b / heads) * rows + i) * heads * cols + (b % heads) * cols;
}

/// One attention call: `batch` independent (Sq x D) . (Sk x D)^T problems.
/// Problem p's rows are rowStride(cols) elements apart from rowBase(p, rows,
/// cols) on: contiguous rows of one problem after another, or, seq-major
/// ([..., S, H, cols]: `heads` > 1 problems per batch entry), the rows of
/// the problems of one batch entry interleaved.
struct AttentionShape {
  int64_t batch = 1, sq = 0, sk = 0, d = 0, dv = 0;
  int64_t heads = 1; // seq-major: H, the problems each batch entry holds
  bool seqMajor = false;
  int64_t dtype = WEFT_F32; // of q, k, v, o (and do, dq, dk, dv)
  double scale = 1.0;
  bool causal = false;
  /// Keys query `i` sees: [0, keysSeen(i)).
  int64_t keysSeen(int64_t i) const {
    if (!causal)
      return sk;
    const int64_t n = i + sk - sq + 1;
    return n < 0 ? 0 : (n > sk ? sk : n);
  }
  /// Where problem p's first row of a tensor with `rows` rows of `cols`
  /// elements starts, and the distance between its rows.
  int64_t rowBase(int64_t p, int64_t rows, int64_t cols) const {
    return attentionRow(p, 0, rows, cols, heads);
  }
  int64_t rowStride(int64_t cols) const { return heads * cols; }
};

/// Reads attention's (grad = false: 5 tensors) or attention_grad's (grad =
/// true: 9 tensors) call; see KernelABI.h.
inline AttentionShape attentionShape(const KernelArgs &args, bool grad) {
  const int count = grad ? 9 : 5;
  args.expectTensors(count, count);
  if (args.numAttrs() != 2 && args.numAttrs() != 3)
    args.expectAttrs(2);
  const TensorArg &q = args.tensor(0), &k = args.tensor(1), &v = args.tensor(2);
  const int lseIndex =
      4; // the forward's second result, the grad's fifth operand
  AttentionShape s;
  s.seqMajor = args.numAttrs() == 3 && args.attr(2) != 0;
  s.dtype = q.dtype;
  if (s.dtype != WEFT_F32 && s.dtype != WEFT_BF16 && s.dtype != WEFT_F16)
    args.unsupportedDType(s.dtype);
  const int minRank = s.seqMajor ? 3 : 2;
  if (q.rank < minRank || k.rank != q.rank || v.rank != q.rank)
    args.invalid(s.seqMajor ? "q, k and v need one rank of at least 3 "
                              "(seq-major: [..., S, H, D])"
                            : "q, k and v need one rank of at least 2");
  // The batch dims, then (seq-major) S and H, else S.
  const int lead = q.rank - minRank;
  for (int i = 0; i < lead; ++i)
    if (k.dims[i] != q.dims[i] || v.dims[i] != q.dims[i])
      args.invalid("q, k and v need the same leading (batch) dims");
  if (s.seqMajor) {
    s.heads = q.dim(-2);
    if (k.dim(-2) != s.heads || v.dim(-2) != s.heads)
      args.invalid("q, k and v need the same heads (dim -2, seq-major)");
  }
  const int seq = s.seqMajor ? -3 : -2;
  s.batch = q.extent(0, lead) * s.heads;
  s.sq = q.dim(seq);
  s.d = q.dim(-1);
  s.sk = k.dim(seq);
  s.dv = v.dim(-1);
  if (k.dim(-1) != s.d)
    args.invalid("k's last dim must equal q's (the head size)");
  if (v.dim(seq) != s.sk)
    args.invalid("v must have as many rows as k");
  // The tensors shaped like q, k, v (all but lse) and their expected dims.
  auto expectLike = [&](int index, const TensorArg &like, const char *what) {
    const TensorArg &t = args.tensor(index);
    args.expectDType(index, s.dtype);
    if (t.rank != like.rank)
      args.invalid(what);
    for (int i = 0; i < t.rank; ++i)
      if (t.dims[i] != like.dims[i])
        args.invalid(what);
  };
  args.expectDType(1, s.dtype);
  args.expectDType(2, s.dtype);
  const TensorArg &o = args.tensor(3);
  args.expectDType(3, s.dtype);
  if (o.rank != q.rank || o.dim(seq) != s.sq || o.dim(-1) != s.dv ||
      (s.seqMajor && o.dim(-2) != s.heads))
    args.invalid(s.seqMajor ? "o must be [..., Sq, H, Dv]"
                            : "o must be [..., Sq, Dv]");
  for (int i = 0; i < lead; ++i)
    if (o.dims[i] != q.dims[i])
      args.invalid("o must have q's leading (batch) dims");
  const TensorArg &lse = args.tensor(lseIndex);
  args.expectDType(lseIndex, WEFT_F32);
  if (lse.rank != q.rank - 1 || lse.numel != s.batch * s.sq ||
      lse.dim(-1) != s.sq)
    args.invalid(s.seqMajor ? "lse must be [..., H, Sq] (f32)"
                            : "lse must be [..., Sq] (f32)");
  for (int i = 0; i < lead; ++i)
    if (lse.dims[i] != q.dims[i])
      args.invalid("lse must have q's leading (batch) dims");
  if (grad) {
    expectLike(5, o, "do must have o's shape and dtype");
    expectLike(6, q, "dq must have q's shape and dtype");
    expectLike(7, k, "dk must have k's shape and dtype");
    expectLike(8, v, "dv must have v's shape and dtype");
  }
  s.scale = args.attrDouble(0);
  s.causal = args.attr(1) != 0;
  return s;
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_ATTENTIONSHAPE_H
