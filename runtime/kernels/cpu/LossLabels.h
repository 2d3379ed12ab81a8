//===- LossLabels.h - Operand checks and label handling of softmax_xent ---===//
//
// What softmax_xent (Loss.cpp) and softmax_xent_grad (LossGrad.cpp) must
// agree on: the scores / labels / weights shapes, the loss shape of each
// reduction, which labels are ignored, the range check of the others and
// the weight of each position.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_LOSSLABELS_H
#define WEFT_RUNTIME_KERNELS_CPU_LOSSLABELS_H

#include "KernelArgs.h"

namespace weft {
namespace cpu {

/// Scores [n, c, d...] viewed as [n, c, d].
struct XentShape {
  int64_t n, c, d; // batch, classes, positions per sample
  int64_t positions() const { return n * d; }
};

/// The `classes` attribute of a softmax_xent / softmax_xent_grad call: the
/// attribute at `index` when the call has it, else all C entries of dim 1.
/// Fails unless 1 <= classes <= C (or C is 0 and the attribute absent).
inline int64_t xentClasses(const KernelArgs &args, int64_t index, int64_t c) {
  if (args.numAttrs() <= index)
    return c;
  const int64_t classes = args.attr(index);
  if (classes < 1 || classes > c)
    args.invalid("classes must lie in [1, C] (C = the scores' dim 1)");
  return classes;
}

/// Scores of f32, bf16 or f16.
inline void expectXentScores(const KernelArgs &args, int index) {
  const int64_t dtype = args.tensor(index).dtype;
  if (dtype != WEFT_F32 && dtype != WEFT_BF16 && dtype != WEFT_F16)
    args.unsupportedDType(dtype);
}

/// Checks scores [N, C, d...] against labels [N, d...] and, when `weights`
/// is given, weights [classes] (classes < 0: C).
inline XentShape checkXentOperands(const KernelArgs &args,
                                   const TensorArg &scores,
                                   const TensorArg &labels,
                                   const TensorArg *weights,
                                   int64_t classes = -1) {
  if (scores.rank < 2 || labels.rank != scores.rank - 1 ||
      labels.dims[0] != scores.dims[0])
    args.invalid("expected scores [N, C, d...] and labels [N, d...]");
  for (int i = 2; i < scores.rank; ++i)
    if (labels.dims[i - 1] != scores.dims[i])
      args.invalid("labels' trailing dims differ from the scores'");
  XentShape s;
  s.n = scores.dims[0];
  s.c = scores.dims[1];
  s.d = scores.extent(2, scores.rank);
  if (weights && weights->numel != (classes < 0 ? s.c : classes))
    args.invalid("weights must hold one value per class");
  return s;
}

/// Checks that `numel` (of the loss or its gradient) fits `reduction`:
/// `positions` values unreduced (else fails with `unreducedError`), one
/// value reduced (else `reducedError`).
inline void checkLossNumel(const KernelArgs &args, int64_t reduction,
                           int64_t numel, int64_t positions,
                           const char *unreducedError,
                           const char *reducedError) {
  if (reduction == WEFT_LOSS_NONE) {
    if (numel != positions)
      args.invalid(unreducedError);
  } else if (reduction == WEFT_LOSS_MEAN || reduction == WEFT_LOSS_SUM) {
    if (numel != 1)
      args.invalid(reducedError);
  } else {
    args.invalid("unknown reduction");
  }
}

/// The label attributes and class weights of softmax_xent. weightOf() is
/// constexpr so that the GPU kernels (Loss.cu) call it on the device too.
struct XentLabels {
  int64_t classes;
  bool hasIgnore;
  int64_t ignoreIndex;
  const float *weights; // null without weights

  bool ignored(int64_t l) const { return hasIgnore && l == ignoreIndex; }
  /// Fails unless the label `l` (not ignored) names a class.
  void checkRange(const char *kernel, int64_t l) const {
    if (l < 0 || l >= classes)
      fatal(kExitBadInput, "%s: label %lld out of range [0, %lld)", kernel,
            static_cast<long long>(l), static_cast<long long>(classes));
  }
  constexpr float weightOf(int64_t l) const {
    return weights ? weights[l] : 1.0f;
  }
};

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_LOSSLABELS_H
