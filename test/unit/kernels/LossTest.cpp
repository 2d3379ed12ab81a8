//===- LossTest.cpp - softmax_xent kernel ---------------------------------===//

#include "KernelTestUtil.h"

#include "weft/runtime/Float16.h"

#include <cmath>
#include <limits>

using namespace weft::test;

namespace {

struct XentCase {
  Dims scores; // [N, C, d...]
  int64_t reduction;
  bool hasIgnore;
  int64_t ignoreIndex;
  bool hasWeights;
  bool hasLogProb;
};

void checkXent(const XentCase &c) {
  SCOPED_TRACE(testing::Message()
               << "reduction " << c.reduction << " ignore " << c.hasIgnore
               << " weights " << c.hasWeights);
  const int64_t n = c.scores[0], classes = c.scores[1];
  Dims labelDims = {n};
  labelDims.insert(labelDims.end(), c.scores.begin() + 2, c.scores.end());
  const int64_t d = numelOf(labelDims) / n;
  auto scores = randomTensor<float>(c.scores, -4, 4);
  auto labels = randomTensor<int64_t>(labelDims, 0, classes - 1);
  if (c.hasIgnore)
    for (int64_t i = 0; i < labels.numel(); i += 3)
      labels[i] = c.ignoreIndex;
  auto weights = randomTensor<float>({classes}, 0.2, 2.0);
  HostTensor<float> loss(c.reduction == WEFT_LOSS_NONE ? labelDims : Dims{});
  HostTensor<float> logProb(c.scores);

  KernelCall call;
  call.tensor(scores).tensor(labels);
  if (c.hasWeights)
    call.tensor(weights);
  call.tensor(loss);
  if (c.hasLogProb)
    call.tensor(logProb);
  call.attrs(
          {c.reduction, c.hasIgnore, c.ignoreIndex, c.hasWeights, c.hasLogProb})
      .run(weft_k_softmax_xent);

  // Reference in double.
  std::vector<double> lp(static_cast<size_t>(scores.numel()));
  for (int64_t s = 0; s < n; ++s)
    for (int64_t j = 0; j < d; ++j) {
      double m = -1e300, sum = 0;
      for (int64_t k = 0; k < classes; ++k)
        m = std::max<double>(m, scores[(s * classes + k) * d + j]);
      for (int64_t k = 0; k < classes; ++k)
        sum += std::exp(scores[(s * classes + k) * d + j] - m);
      for (int64_t k = 0; k < classes; ++k)
        lp[(s * classes + k) * d + j] =
            scores[(s * classes + k) * d + j] - m - std::log(sum);
    }
  std::vector<float> perPos(static_cast<size_t>(n * d));
  double total = 0, weightSum = 0;
  for (int64_t s = 0; s < n; ++s)
    for (int64_t j = 0; j < d; ++j) {
      int64_t l = labels[s * d + j];
      if (c.hasIgnore && l == c.ignoreIndex)
        continue;
      double w = c.hasWeights ? weights[l] : 1.0;
      double v = -w * lp[(s * classes + l) * d + j];
      perPos[s * d + j] = static_cast<float>(v);
      total += v;
      weightSum += w;
    }
  if (c.reduction == WEFT_LOSS_NONE)
    expectClose(loss.data, perPos, 1e-5, 1e-5);
  else if (c.reduction == WEFT_LOSS_SUM)
    EXPECT_NEAR(loss[0], total, 1e-4 * std::fabs(total) + 1e-5);
  else
    EXPECT_NEAR(loss[0], total / weightSum,
                1e-5 * std::fabs(total / weightSum) + 1e-6);
  if (c.hasLogProb) {
    std::vector<float> e(lp.begin(), lp.end());
    expectClose(logProb.data, e, 1e-5, 1e-5);
  }
}

TEST(SoftmaxXent, TwoDimScores) {
  for (int64_t red : {WEFT_LOSS_NONE, WEFT_LOSS_MEAN, WEFT_LOSS_SUM})
    for (bool ignore : {false, true})
      for (bool weights : {false, true})
        checkXent({{8, 5}, red, ignore, 2, weights, true});
}

TEST(SoftmaxXent, SpatialScores) {
  for (int64_t red : {WEFT_LOSS_NONE, WEFT_LOSS_MEAN, WEFT_LOSS_SUM})
    for (bool weights : {false, true})
      checkXent(
          {{3, 4, 5, 2}, red, true, -100, weights, red == WEFT_LOSS_MEAN});
  // Language-model shape: many rows, wide vocabulary, no log_prob output.
  checkXent({{512, 1000}, WEFT_LOSS_MEAN, true, -100, false, false});
}

TEST(SoftmaxXent, IgnoredRowsLeaveTheMeanDenominator) {
  // Two rows, the second ignored: the mean is the first row's loss alone.
  HostTensor<float> scores({2, 3}, {1, 2, 3, 5, 5, 5});
  HostTensor<int64_t> labels({2}, {2, -1});
  HostTensor<float> loss(Dims{});
  KernelCall()
      .tensor(scores)
      .tensor(labels)
      .tensor(loss)
      .attrs({WEFT_LOSS_MEAN, 1, -1, 0, 0})
      .run(weft_k_softmax_xent);
  double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(loss[0], lse - 3.0, 1e-6);
  // All ignored: 0 / 0.
  labels[0] = -1;
  KernelCall()
      .tensor(scores)
      .tensor(labels)
      .tensor(loss)
      .attrs({WEFT_LOSS_MEAN, 1, -1, 0, 0})
      .run(weft_k_softmax_xent);
  EXPECT_TRUE(std::isnan(loss[0]));
}

TEST(SoftmaxXent, Int32LabelsAndWeightedMean) {
  HostTensor<float> scores({3, 2}, {0, 0, 1, 0, 0, 1});
  HostTensor<int32_t> labels({3}, {0, 1, 1});
  HostTensor<float> weights({2}, {1.0f, 3.0f});
  HostTensor<float> loss(Dims{});
  KernelCall()
      .tensor(scores)
      .tensor(labels)
      .tensor(weights)
      .tensor(loss)
      .attrs({WEFT_LOSS_MEAN, 0, 0, 1, 0})
      .run(weft_k_softmax_xent);
  double l0 = std::log(2.0), l1 = std::log(1 + std::exp(1.0)),
         l2 = std::log(1 + std::exp(-1.0));
  EXPECT_NEAR(loss[0], (1 * l0 + 3 * l1 + 3 * l2) / 7.0, 1e-6);
}

TEST(SoftmaxXentDeath, LabelOutOfRange) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        HostTensor<float> scores({1, 3});
        HostTensor<int64_t> labels({1}, {3});
        HostTensor<float> loss(Dims{});
        KernelCall()
            .tensor(scores)
            .tensor(labels)
            .tensor(loss)
            .attrs({WEFT_LOSS_SUM, 0, 0, 0, 0})
            .run(weft_k_softmax_xent);
      },
      testing::ExitedWithCode(2), "label 3 out of range");
}

//===-- padded classes and 16-bit scores
//-------------------------------------===//

/// Forward (loss and log_prob) and gradient of one call on `scores` (any
/// dtype, given as raw bytes) with `attrs` (+ classes when > 0).
struct XentRun {
  HostTensor<float> loss;
  std::vector<float> logProb, dscores; // widened to f32
};

template <class S>
XentRun runXent(HostTensor<S> &scores, HostTensor<int64_t> &labels,
                int64_t reduction, int64_t classes) {
  XentRun r{
      HostTensor<float>(reduction == WEFT_LOSS_NONE ? labels.dims : Dims{}),
      {},
      {}};
  HostTensor<S> logProb = HostTensor<S>::like(scores.dims, scores.dtype);
  HostTensor<S> dscores = HostTensor<S>::like(scores.dims, scores.dtype);
  std::vector<int64_t> attrs = {reduction, 1, -100, 0, 1};
  if (classes > 0)
    attrs.push_back(classes);
  KernelCall()
      .tensor(scores)
      .tensor(labels)
      .tensor(r.loss)
      .tensor(logProb)
      .attrs(attrs)
      .run(weft_k_softmax_xent);
  HostTensor<float> dloss(r.loss.dims);
  for (float &g : dloss.data)
    g = 0.75f;
  std::vector<int64_t> gradAttrs = {reduction, 1, -100, 0};
  if (classes > 0)
    gradAttrs.push_back(classes);
  KernelCall()
      .tensor(scores)
      .tensor(labels)
      .tensor(dloss)
      .tensor(dscores)
      .attrs(gradAttrs)
      .run(weft_k_softmax_xent_grad);
  auto widenAll = [&](const HostTensor<S> &t) {
    std::vector<float> out(t.data.size());
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<S, float>)
        out[i] = t.data[i];
      else
        out[i] = weft::bfloat16ToFloat(t.data[i]);
    }
    return out;
  };
  r.logProb = widenAll(logProb);
  r.dscores = widenAll(dscores);
  return r;
}

// Scores [N, C, d] whose dim 1 holds 5 classes and 2 padding entries of
// any value: the loss is that of the 5 classes alone, log_prob is -inf and
// the gradient 0 in the padding, the rest bitwise the compact call's.
TEST(SoftmaxXent, PaddedClasses) {
  const int64_t n = 3, c = 7, classes = 5, d = 2;
  auto padded = randomTensor<float>({n, c, d}, -4, 4);
  HostTensor<float> compact({n, classes, d});
  for (int64_t s = 0; s < n; ++s)
    for (int64_t k = 0; k < classes; ++k)
      for (int64_t j = 0; j < d; ++j)
        compact[(s * classes + k) * d + j] = padded[(s * c + k) * d + j];
  HostTensor<int64_t> labels({n, d}, {0, 4, 2, -100, 3, 1});
  for (int64_t reduction : {WEFT_LOSS_MEAN, WEFT_LOSS_NONE}) {
    XentRun want = runXent(compact, labels, reduction, 0);
    XentRun got = runXent(padded, labels, reduction, classes);
    EXPECT_EQ(got.loss.data, want.loss.data);
    for (int64_t s = 0; s < n; ++s)
      for (int64_t k = 0; k < c; ++k)
        for (int64_t j = 0; j < d; ++j) {
          const int64_t i = (s * c + k) * d + j;
          if (k >= classes) {
            EXPECT_EQ(got.logProb[i], -std::numeric_limits<float>::infinity());
            EXPECT_EQ(got.dscores[i], 0.0f);
            continue;
          }
          const int64_t w = (s * classes + k) * d + j;
          EXPECT_EQ(got.logProb[i], want.logProb[w]) << "log_prob " << i;
          EXPECT_EQ(got.dscores[i], want.dscores[w]) << "dscores " << i;
        }
  }
}

// bf16 scores (an LM head's padded logits): the loss of their f32 values,
// log_prob and the gradient rounded once.
TEST(SoftmaxXent, BF16ScoresArePaddedF32RoundedOnce) {
  const int64_t n = 4, c = 16, classes = 13;
  HostTensor<uint16_t> low({n, c}, WEFT_BF16);
  HostTensor<float> high({n, c});
  auto r = randomTensor<float>({n, c}, -6, 6);
  for (int64_t i = 0; i < n * c; ++i) {
    low[i] = weft::floatToBFloat16(r[i]);
    high[i] = weft::bfloat16ToFloat(low[i]);
  }
  HostTensor<int64_t> labels({n}, {12, 0, -100, 7});
  XentRun want = runXent(high, labels, WEFT_LOSS_MEAN, classes);
  XentRun got = runXent(low, labels, WEFT_LOSS_MEAN, classes);
  EXPECT_EQ(got.loss.data, want.loss.data);
  for (int64_t i = 0; i < n * c; ++i) {
    const float lp = want.logProb[i], g = want.dscores[i];
    EXPECT_EQ(got.logProb[i],
              std::isinf(lp) ? lp
                             : weft::bfloat16ToFloat(weft::floatToBFloat16(lp)))
        << i;
    EXPECT_EQ(got.dscores[i], weft::bfloat16ToFloat(weft::floatToBFloat16(g)))
        << i;
  }
}

// A malformed call (the compiler never makes one): exit code 1.
TEST(SoftmaxXentDeath, ClassesBeyondTheScores) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        HostTensor<float> scores({1, 3});
        HostTensor<int64_t> labels({1}, {0});
        HostTensor<float> loss(Dims{});
        KernelCall()
            .tensor(scores)
            .tensor(labels)
            .tensor(loss)
            .attrs({WEFT_LOSS_SUM, 0, 0, 0, 0, 4})
            .run(weft_k_softmax_xent);
      },
      testing::ExitedWithCode(1), "classes must lie in \\[1, C\\]");
}

// A label among the padding entries is out of range.
TEST(SoftmaxXentDeath, LabelInThePadding) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        HostTensor<float> scores({1, 8});
        HostTensor<int64_t> labels({1}, {6});
        HostTensor<float> loss(Dims{});
        KernelCall()
            .tensor(scores)
            .tensor(labels)
            .tensor(loss)
            .attrs({WEFT_LOSS_SUM, 0, 0, 0, 0, 5})
            .run(weft_k_softmax_xent);
      },
      testing::ExitedWithCode(2), "label 6 out of range \\[0, 5\\)");
}

} // namespace
