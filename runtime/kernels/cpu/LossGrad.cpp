//===- LossGrad.cpp - softmax_xent_grad kernel ----------------------------===//
//
// Gradient of softmax_xent (Loss.cpp) with respect to the scores:
//
//   dscores[n, :, d] = c[n, d] * (softmax(scores[n, :, d]) - onehot(label))
//   c[n, d] = w[label] * g[n, d]
//
// with g = dloss[n, d] (reduction none), dloss (sum), or dloss / W (mean,
// W the summed weights of the positions not ignored, or their count without
// weights, summed in double in order as the forward kernel does). Ignored
// positions get 0. Work splits into (sample, column chunk) tasks. Scores
// of bf16 or f16 are widened (and dscores rounded once); with the `classes`
// attribute dscores is 0 in the padding entries of dim 1.
//
//===----------------------------------------------------------------------===//

#include "GradRowOps.h"
#include "LossLabels.h"
#include "Parallel.h"
#include "Scratch.h"
#include "XentScores.h"

#include <cstring>
#include <vector>

using namespace weft;
using namespace weft::cpu;

namespace {

/// Positions per task when scores have trailing dims.
constexpr int64_t kXentColumns = 256;

/// c is the number of classes (the padding left out).
struct XentGradProblem : XentShape {
  XentScores scores;
  void *dscores;        // the scores' shape and dtype
  const int64_t *label; // per position; -1 when ignored
  const float *coef;    // per position
};

void xentGrad(const XentGradProblem &p) {
  if (p.d == 1) {
    parallelFor(p.n, grainFor(3 * p.c), [&](int64_t b, int64_t e) {
      const bool direct = p.scores.direct();
      float *buf = direct ? nullptr : scratch<float>(1, 2 * p.c);
      for (int64_t s = b; s < e; ++s) {
        float *out =
            direct ? static_cast<float *>(p.dscores) + s * p.c : buf + p.c;
        if (p.label[s] < 0)
          std::memset(out, 0, static_cast<size_t>(p.c) * sizeof(float));
        else
          xentGradRow(p.scores.sample(s, buf), out, p.c, p.coef[s], p.label[s]);
        if (!direct)
          p.scores.store(p.dscores, s, out, 0.0f);
      }
    });
    return;
  }
  if (!p.scores.direct()) {
    // Whole samples (widened), one task each.
    parallelFor(p.n, grainFor(3 * p.c * p.d), [&](int64_t b, int64_t e) {
      float *acc = scratch<float>(0, 2 * kXentColumns);
      float *buf = scratch<float>(1, 2 * p.c * p.d);
      for (int64_t s = b; s < e; ++s) {
        const float *x = p.scores.sample(s, buf);
        float *out = buf + p.c * p.d;
        for (int64_t j0 = 0; j0 < p.d; j0 += kXentColumns) {
          const int64_t j1 = j0 + kXentColumns < p.d ? j0 + kXentColumns : p.d;
          xentGradColumns(x + j0, out + j0, p.c, p.d, j1 - j0,
                          p.coef + s * p.d + j0, p.label + s * p.d + j0, acc);
        }
        p.scores.store(p.dscores, s, out, 0.0f);
      }
    });
    return;
  }
  const int64_t chunks = (p.d + kXentColumns - 1) / kXentColumns;
  const int64_t width = p.d < kXentColumns ? p.d : kXentColumns;
  parallelFor(
      p.n * chunks, grainFor(3 * p.c * width), [&](int64_t b, int64_t e) {
        float *acc = scratch<float>(0, 2 * width);
        for (int64_t t = b; t < e; ++t) {
          const int64_t s = t / chunks;
          const int64_t j0 = (t % chunks) * kXentColumns;
          const int64_t j1 = j0 + kXentColumns < p.d ? j0 + kXentColumns : p.d;
          const int64_t off = s * p.c * p.d + j0;
          xentGradColumns(static_cast<const float *>(p.scores.data) + off,
                          static_cast<float *>(p.dscores) + off, p.c, p.d,
                          j1 - j0, p.coef + s * p.d + j0,
                          p.label + s * p.d + j0, acc);
        }
      });
}

/// Fills label (-1 when ignored) and the weight of each position; returns
/// the summed weight in double, in position order.
template <class L>
double readLabels(const L *labels, int64_t positions, const XentLabels &info,
                  int64_t *label, float *weightOf) {
  double total = 0.0;
  for (int64_t i = 0; i < positions; ++i) {
    const int64_t l = static_cast<int64_t>(labels[i]);
    if (info.ignored(l)) {
      label[i] = -1;
      weightOf[i] = 0.0f;
      continue;
    }
    info.checkRange("softmax_xent_grad", l);
    label[i] = l;
    weightOf[i] = info.weightOf(l);
    total += weightOf[i];
  }
  return total;
}

} // namespace

extern "C" void weft_k_softmax_xent_grad(void *const *bufs,
                                         const int64_t *desc) {
  KernelArgs args("softmax_xent_grad", bufs, desc);
  args.expectAttrs(4);
  const int64_t reduction = args.attr(0);
  const bool hasWeights = args.attr(3) != 0;
  const int expected = hasWeights ? 5 : 4;
  args.expectTensors(expected, expected);
  expectXentScores(args, 0);
  const int dlossIdx = hasWeights ? 3 : 2;
  const TensorArg &scores = args.tensor(0);
  const TensorArg &labels = args.tensor(1);
  const TensorArg &dloss = args.tensor(dlossIdx);
  if (hasWeights)
    args.expectDType(2, WEFT_F32);
  args.expectDType(dlossIdx, WEFT_F32);
  args.expectDType(dlossIdx + 1, scores.dtype);
  args.expectSameNumel(0, dlossIdx + 1);
  const int64_t classes =
      xentClasses(args, 4, scores.rank >= 2 ? scores.dims[1] : 0);
  XentGradProblem p;
  static_cast<XentShape &>(p) = checkXentOperands(
      args, scores, labels, hasWeights ? &args.tensor(2) : nullptr, classes);
  p.scores = {scores.data, scores.dtype, p.c, classes, p.d};
  p.c = classes;
  const int64_t positions = p.positions();
  XentLabels info;
  info.classes = p.c;
  info.hasIgnore = args.attr(1) != 0;
  info.ignoreIndex = args.attr(2);
  info.weights = hasWeights ? args.tensor(2).as<float>() : nullptr;
  checkLossNumel(args, reduction, dloss.numel, positions,
                 "dloss of an unreduced loss must have the labels' shape",
                 "dloss of a reduced loss must be a scalar");
  if (positions == 0 || p.c == 0) {
    if (positions > 0)
      args.invalid("scores have no classes");
    return;
  }
  std::vector<int64_t> label(static_cast<size_t>(positions));
  std::vector<float> coef(static_cast<size_t>(positions));
  double total = 0.0;
  if (labels.dtype == WEFT_I64)
    total = readLabels(labels.as<int64_t>(), positions, info, label.data(),
                       coef.data());
  else if (labels.dtype == WEFT_I32)
    total = readLabels(labels.as<int32_t>(), positions, info, label.data(),
                       coef.data());
  else
    args.unsupportedDType(labels.dtype);
  // coef holds each position's weight; scale it by its loss gradient.
  const float *g = dloss.as<float>();
  if (reduction == WEFT_LOSS_NONE) {
    for (int64_t i = 0; i < positions; ++i)
      coef[i] *= g[i];
  } else {
    // Mean over no position (all ignored) is NaN forward; every position
    // is ignored then and gets 0 regardless.
    const float s = reduction == WEFT_LOSS_SUM
                        ? g[0]
                        : static_cast<float>(static_cast<double>(g[0]) / total);
    for (int64_t i = 0; i < positions; ++i)
      coef[i] *= s;
  }
  p.dscores = args.tensor(dlossIdx + 1).data;
  p.label = label.data();
  p.coef = coef.data();
  xentGrad(p);
}
