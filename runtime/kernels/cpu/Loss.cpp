//===- Loss.cpp - softmax_xent kernel -------------------------------------===//
//
// ONNX SoftmaxCrossEntropyLoss on scores [N, C] or [N, C, d1..dk] (f32,
// or bf16 / f16 widened to f32) with i64/i32 labels [N] or [N, d1..dk] and
// optional class weights [C]:
//
//   log_prob = log_softmax(scores, axis 1)
//   loss[n, d] = -w[label] * log_prob[n, label, d]   (w = 1 without weights)
//
// Positions whose label equals ignore_index contribute 0 and weigh 0. The
// mean divides by the summed weights of the other positions (their count
// without weights), so it is NaN when every position is ignored, as in
// ONNX and PyTorch. Per-position losses are summed in double, in order.
// With the `classes` attribute only the first `classes` entries of dim 1
// take part; log_prob is -inf in the rest.
//
//===----------------------------------------------------------------------===//

#include "LossLabels.h"
#include "Parallel.h"
#include "RowOps.h"
#include "Scratch.h"
#include "VectorMath.h"
#include "XentScores.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace weft;
using namespace weft::cpu;

namespace {

/// c is the number of classes (the padding left out).
struct XentProblem : XentShape {
  XentScores scores;
  void *logProb; // null unless requested; the scores' shape and dtype
  XentLabels labels;
};

/// For each of the d positions of sample `x` (f32 [c, d]), the max over
/// classes and the log of the summed exp(x - max); log_prob = (x - max) -
/// logSum.
void logSoftmaxTerms(const XentProblem &p, const float *x, float *mx,
                     float *logSum) {
  if (p.d == 1) {
    mx[0] = rowMax(x, p.c);
    logSum[0] = std::log(rowExpShiftedSum(x, p.c, mx[0]));
    return;
  }
  for (int64_t j = 0; j < p.d; ++j) {
    mx[j] = -std::numeric_limits<float>::infinity();
    logSum[j] = 0.0f;
  }
  for (int64_t k = 0; k < p.c; ++k)
    for (int64_t j = 0; j < p.d; ++j)
      mx[j] = x[k * p.d + j] > mx[j] ? x[k * p.d + j] : mx[j];
  for (int64_t k = 0; k < p.c; ++k)
    for (int64_t j = 0; j < p.d; ++j)
      logSum[j] += fastExp(x[k * p.d + j] - mx[j]);
  for (int64_t j = 0; j < p.d; ++j)
    logSum[j] = std::log(logSum[j]);
}

template <class L>
void computeLosses(const XentProblem &p, const L *labels, float *loss,
                   float *weightOf) {
  // Labels first, serially, so a bad one fails before any work.
  for (int64_t i = 0; i < p.n * p.d; ++i) {
    int64_t l = static_cast<int64_t>(labels[i]);
    if (!p.labels.ignored(l))
      p.labels.checkRange("softmax_xent", l);
  }
  parallelFor(p.n, grainFor(2 * p.c * p.d), [&](int64_t b, int64_t e) {
    float *mx = scratch<float>(0, 2 * p.d);
    float *logSum = mx + p.d;
    const bool direct = p.scores.direct();
    float *buf = direct ? nullptr : scratch<float>(1, 2 * p.c * p.d);
    for (int64_t s = b; s < e; ++s) {
      const float *x = p.scores.sample(s, buf);
      logSoftmaxTerms(p, x, mx, logSum);
      if (p.logProb) {
        float *lp = direct ? static_cast<float *>(p.logProb) + s * p.c * p.d
                           : buf + p.c * p.d;
        for (int64_t k = 0; k < p.c; ++k)
          for (int64_t j = 0; j < p.d; ++j)
            lp[k * p.d + j] = (x[k * p.d + j] - mx[j]) - logSum[j];
        if (!direct)
          p.scores.store(p.logProb, s, lp,
                         -std::numeric_limits<float>::infinity());
      }
      for (int64_t j = 0; j < p.d; ++j) {
        const int64_t i = s * p.d + j;
        const int64_t l = static_cast<int64_t>(labels[i]);
        if (p.labels.ignored(l)) {
          loss[i] = 0.0f;
          weightOf[i] = 0.0f;
          continue;
        }
        const float w = p.labels.weightOf(l);
        loss[i] = -w * ((x[l * p.d + j] - mx[j]) - logSum[j]);
        weightOf[i] = w;
      }
    }
  });
}

} // namespace

extern "C" void weft_k_softmax_xent(void *const *bufs, const int64_t *desc) {
  KernelArgs args("softmax_xent", bufs, desc);
  args.expectAttrs(5);
  const int64_t reduction = args.attr(0);
  const bool hasWeights = args.attr(3) != 0;
  const bool hasLogProb = args.attr(4) != 0;
  const int expected = 3 + (hasWeights ? 1 : 0) + (hasLogProb ? 1 : 0);
  args.expectTensors(expected, expected);
  expectXentScores(args, 0);
  const TensorArg &scores = args.tensor(0);
  const TensorArg &labels = args.tensor(1);
  const int lossIdx = hasWeights ? 3 : 2;
  const TensorArg &lossT = args.tensor(lossIdx);
  args.expectDType(lossIdx, WEFT_F32);
  if (hasWeights)
    args.expectDType(2, WEFT_F32);
  if (hasLogProb) {
    args.expectDType(lossIdx + 1, scores.dtype);
    args.expectSameNumel(0, lossIdx + 1);
  }
  const int64_t classes =
      xentClasses(args, 5, scores.rank >= 2 ? scores.dims[1] : 0);
  XentProblem p;
  static_cast<XentShape &>(p) = checkXentOperands(
      args, scores, labels, hasWeights ? &args.tensor(2) : nullptr, classes);
  p.scores = {scores.data, scores.dtype, p.c, classes, p.d};
  p.c = classes;
  p.logProb = hasLogProb ? args.tensor(lossIdx + 1).data : nullptr;
  p.labels.classes = p.c;
  p.labels.hasIgnore = args.attr(1) != 0;
  p.labels.ignoreIndex = args.attr(2);
  p.labels.weights = hasWeights ? args.tensor(2).as<float>() : nullptr;
  const int64_t positions = p.positions();
  checkLossNumel(args, reduction, lossT.numel, positions,
                 "unreduced loss must have the labels' shape",
                 "reduced loss must be a scalar");

  std::vector<float> weightOf(positions);
  std::vector<float> perPosition;
  float *loss = lossT.as<float>();
  if (reduction != WEFT_LOSS_NONE) {
    perPosition.resize(positions);
    loss = perPosition.data();
  }
  if (p.c == 0 && positions > 0)
    args.invalid("scores have no classes");
  if (labels.dtype == WEFT_I64)
    computeLosses(p, labels.as<int64_t>(), loss, weightOf.data());
  else if (labels.dtype == WEFT_I32)
    computeLosses(p, labels.as<int32_t>(), loss, weightOf.data());
  else
    args.unsupportedDType(labels.dtype);
  if (reduction == WEFT_LOSS_NONE)
    return;
  double sum = 0.0, weight = 0.0;
  for (int64_t i = 0; i < positions; ++i) {
    sum += loss[i];
    weight += weightOf[i];
  }
  lossT.as<float>()[0] =
      static_cast<float>(reduction == WEFT_LOSS_SUM ? sum : sum / weight);
}
