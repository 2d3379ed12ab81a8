//===- LossTest.cpp - softmax_xent kernel ---------------------------------===//

#include "KernelTestUtil.h"

#include <cmath>

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

} // namespace
