//===- GradKernelTest.cpp - scatter_add, slice, softmax, norm, loss grads -===//
//
// Each backward kernel against finite differences of its forward kernel,
// plus small cases worked by hand. Conv and pooling gradients are in
// ConvPoolGradTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "GradTestUtil.h"

using namespace weft::test;

namespace {

//===-- scatter_add (gradient of gather) ----------------------------------===//

template <class I> void checkScatterAdd(Dims data, Dims idxDims, int64_t axis) {
  SCOPED_TRACE(testing::Message() << "axis " << axis);
  const int64_t extent = data[axis];
  auto idx = randomTensor<I>(idxDims, static_cast<double>(-extent),
                             static_cast<double>(extent - 1));
  Dims yDims(data.begin(), data.begin() + axis);
  yDims.insert(yDims.end(), idxDims.begin(), idxDims.end());
  yDims.insert(yDims.end(), data.begin() + axis + 1, data.end());
  const std::vector<double> r = randomProjection(numelOf(yDims));
  HostTensor<float> updates(yDims, asFloats(r));
  HostTensor<float> grad(data);
  KernelCall().tensor(idx).tensor(updates).tensor(grad).attr(axis).run(
      weft_k_scatter_add);
  Forward gather = [&](const std::vector<float> &v) {
    HostTensor<float> d(data, v);
    HostTensor<float> y(yDims);
    KernelCall().tensor(d).tensor(idx).tensor(y).attr(axis).run(weft_k_gather);
    return y.data;
  };
  checkAgainstForward(grad.data, randomTensor<float>(data).data, gather, r, 0.5,
                      1e-5, 1e-5);
}

TEST(ScatterAddGrad, MatchesGatherFiniteDifferences) {
  checkScatterAdd<int64_t>({7, 3}, {5}, 0);
  checkScatterAdd<int32_t>({2, 5, 4}, {3, 2}, 1);
  checkScatterAdd<int64_t>({3, 4}, {6}, 1);
  checkScatterAdd<int64_t>({4, 3}, {2, 20}, 0);   // many repeats
  checkScatterAdd<int32_t>({3, 2, 1100}, {3}, 1); // two column chunks
}

TEST(ScatterAddGrad, RepeatedAndNegativeIndices) {
  HostTensor<int64_t> idx({4}, {1, -1, 1, -4});
  HostTensor<float> upd({4}, {1, 2, 4, 8});
  HostTensor<float> y({4}, {9, 9, 9, 9}); // overwritten, not accumulated
  KernelCall().tensor(idx).tensor(upd).tensor(y).attr(0).run(
      weft_k_scatter_add);
  EXPECT_EQ(y.data, (std::vector<float>{8, 5, 0, 2}));

  HostTensor<int32_t> idx2({2}, {2, -1});
  HostTensor<float> upd2({2, 2}, {1, 2, 3, 4});
  HostTensor<float> y2({2, 3});
  KernelCall().tensor(idx2).tensor(upd2).tensor(y2).attr(1).run(
      weft_k_scatter_add);
  EXPECT_EQ(y2.data, (std::vector<float>{0, 0, 3, 0, 0, 7}));
}

TEST(ScatterAddGradDeath, IndexOutOfRange) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        HostTensor<int64_t> idx({2}, {0, 3});
        HostTensor<float> upd({2});
        HostTensor<float> y({3});
        KernelCall().tensor(idx).tensor(upd).tensor(y).attr(0).run(
            weft_k_scatter_add);
      },
      testing::ExitedWithCode(2), "index 3 out of range");
}

//===-- slice_grad --------------------------------------------------------===//

void checkSliceGrad(Dims x, Dims starts, Dims steps, Dims yDims) {
  const std::vector<double> r = randomProjection(numelOf(yDims));
  HostTensor<float> dy(yDims, asFloats(r));
  HostTensor<float> dx(x);
  KernelCall().tensor(dy).tensor(dx).attrs(starts).attrs(steps).run(
      weft_k_slice_grad);
  Forward slice = [&](const std::vector<float> &v) {
    HostTensor<float> in(x, v);
    HostTensor<float> y(yDims);
    KernelCall().tensor(in).tensor(y).attrs(starts).attrs(steps).run(
        weft_k_slice);
    return y.data;
  };
  checkAgainstForward(dx.data, randomTensor<float>(x).data, slice, r, 0.5, 1e-6,
                      1e-6);
}

TEST(SliceGrad, MatchesSliceFiniteDifferences) {
  checkSliceGrad({6, 5}, {5, 1}, {-2, 2}, {3, 2});
  checkSliceGrad({4, 3, 5}, {0, 2, 4}, {1, -1, -1}, {4, 3, 5});
  checkSliceGrad({7}, {1}, {3}, {2});
  checkSliceGrad({3, 1, 8}, {1, 0, 2}, {1, 1, 1}, {2, 1, 5});
}

TEST(SliceGrad, NegativeStepByHand) {
  HostTensor<float> dy({3}, {1, 2, 3});
  HostTensor<float> dx({5}, {7, 7, 7, 7, 7});
  KernelCall().tensor(dy).tensor(dx).attrs({4, -2}).run(weft_k_slice_grad);
  EXPECT_EQ(dx.data, (std::vector<float>{3, 0, 2, 0, 1}));
}

//===-- softmax_grad ------------------------------------------------------===//

std::vector<float> runSoftmax(const Dims &dims, const std::vector<float> &x,
                              int64_t axis, bool log) {
  HostTensor<float> in(dims, x);
  HostTensor<float> y(dims);
  KernelCall().tensor(in).tensor(y).attr(axis).attr(log).run(weft_k_softmax);
  return y.data;
}

void checkSoftmaxGrad(Dims dims, int64_t axis, bool log) {
  SCOPED_TRACE(testing::Message() << "axis " << axis << " log " << log);
  auto x = randomTensor<float>(dims, -2, 2);
  HostTensor<float> y(dims, runSoftmax(dims, x.data, axis, log));
  const std::vector<double> r = randomProjection(x.numel());
  HostTensor<float> dy(dims, asFloats(r));
  HostTensor<float> dx(dims);
  KernelCall().tensor(y).tensor(dy).tensor(dx).attr(axis).attr(log).run(
      weft_k_softmax_grad);
  checkAgainstForward(
      dx.data, x.data,
      [&](const std::vector<float> &v) {
        return runSoftmax(dims, v, axis, log);
      },
      r, 1e-2);
}

TEST(SoftmaxGrad, MatchesSoftmaxFiniteDifferences) {
  for (bool log : {false, true}) {
    checkSoftmaxGrad({3, 7}, 1, log);
    checkSoftmaxGrad({2, 5, 3}, 1, log);
    checkSoftmaxGrad({4, 6}, 0, log);
    checkSoftmaxGrad({2, 3, 20}, 2, log);
  }
}

TEST(SoftmaxGrad, ByHand) {
  // y = softmax([0, 0]) = [.5, .5], dy = [1, 0]: sum(dy * y) = .5.
  HostTensor<float> y({2}, {0.5f, 0.5f});
  HostTensor<float> dy({2}, {1, 0});
  HostTensor<float> dx({2});
  KernelCall().tensor(y).tensor(dy).tensor(dx).attr(0).attr(0).run(
      weft_k_softmax_grad);
  EXPECT_EQ(dx.data, (std::vector<float>{0.25f, -0.25f}));
  // log_softmax: dx = dy - exp(y) * sum(dy).
  HostTensor<float> ly({2}, {std::log(0.5f), std::log(0.5f)});
  KernelCall().tensor(ly).tensor(dy).tensor(dx).attr(0).attr(1).run(
      weft_k_softmax_grad);
  expectClose(dx.data, std::vector<float>{0.5f, -0.5f}, 1e-6, 1e-7);
}

//===-- layer_norm_grad ---------------------------------------------------===//

struct LayerNormGrads {
  std::vector<float> dx, dscale, dbias;
};

LayerNormGrads runLayerNormGrad(const Dims &dims, int64_t axis,
                                HostTensor<float> &x, HostTensor<float> &scale,
                                HostTensor<float> &dy, double eps) {
  HostTensor<float> dx(dims), dscale(scale.dims), dbias(scale.dims);
  KernelCall()
      .tensor(x)
      .tensor(scale)
      .tensor(dy)
      .tensor(dx)
      .tensor(dscale)
      .tensor(dbias)
      .attr(axis)
      .attrDouble(eps)
      .run(weft_k_layer_norm_grad);
  return {dx.data, dscale.data, dbias.data};
}

void checkLayerNormGrad(Dims dims, int64_t axis) {
  SCOPED_TRACE(testing::Message() << "axis " << axis);
  const double eps = 1e-5;
  Dims inner(dims.begin() + axis, dims.end());
  auto x = randomTensor<float>(dims, -2, 2);
  auto scale = randomTensor<float>(inner, 0.5, 1.5);
  auto bias = randomTensor<float>(inner);
  const std::vector<double> r = randomProjection(x.numel());
  HostTensor<float> dy(dims, asFloats(r));
  LayerNormGrads g = runLayerNormGrad(dims, axis, x, scale, dy, eps);
  auto forward = [&](const std::vector<float> &xv, const std::vector<float> &sv,
                     const std::vector<float> &bv) {
    HostTensor<float> in(dims, xv), s(inner, sv), b(inner, bv), y(dims);
    KernelCall()
        .tensor(in)
        .tensor(s)
        .tensor(b)
        .tensor(y)
        .attr(axis)
        .attrDouble(eps)
        .attr(1)
        .run(weft_k_layer_norm);
    return y.data;
  };
  checkAgainstForward(
      g.dx, x.data,
      [&](const std::vector<float> &v) {
        return forward(v, scale.data, bias.data);
      },
      r, 1e-2);
  checkAgainstForward(
      g.dscale, scale.data,
      [&](const std::vector<float> &v) {
        return forward(x.data, v, bias.data);
      },
      r, 1e-2);
  checkAgainstForward(
      g.dbias, bias.data,
      [&](const std::vector<float> &v) {
        return forward(x.data, scale.data, v);
      },
      r, 1e-2);
}

TEST(LayerNormGrad, MatchesLayerNormFiniteDifferences) {
  checkLayerNormGrad({3, 4, 5}, 1);
  checkLayerNormGrad({6, 8}, 1);
  checkLayerNormGrad({2, 3, 4}, 2);
  checkLayerNormGrad({5, 3}, 0);
  checkLayerNormGrad({4, 37}, 1);
}

TEST(LayerNormGrad, ConstantRowAndManyRows) {
  // A constant row normalizes to 0: dx = rstd * (g - mean(g)), dscale = 0.
  HostTensor<float> x({1, 4}, {3, 3, 3, 3});
  HostTensor<float> scale({4}, {1, 2, 1, 2});
  HostTensor<float> dy({1, 4}, {1, 1, 1, 1});
  LayerNormGrads g = runLayerNormGrad({1, 4}, 1, x, scale, dy, 0.25);
  // rstd = 1 / sqrt(0.25) = 2; g = [1, 2, 1, 2], mean 1.5.
  EXPECT_EQ(g.dx, (std::vector<float>{-1, 1, -1, 1}));
  EXPECT_EQ(g.dscale, (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(g.dbias, (std::vector<float>{1, 1, 1, 1}));
  // dbias sums dy over rows (here over 300 rows, several row blocks).
  auto big = randomTensor<float>({300, 256});
  auto s = randomTensor<float>({256});
  HostTensor<float> ones({300, 256}, std::vector<float>(300 * 256, 1.0f));
  g = runLayerNormGrad({300, 256}, 1, big, s, ones, 1e-5);
  EXPECT_EQ(g.dbias, std::vector<float>(256, 300.0f));
}

//===-- softmax_xent_grad -------------------------------------------------===//

struct XentGradCase {
  Dims scores;
  int64_t reduction;
  bool hasIgnore;
  int64_t ignoreIndex;
  bool hasWeights;
};

void checkXentGrad(const XentGradCase &c) {
  SCOPED_TRACE(testing::Message()
               << "reduction " << c.reduction << " ignore " << c.hasIgnore
               << " " << c.ignoreIndex << " weights " << c.hasWeights);
  const int64_t n = c.scores[0], classes = c.scores[1];
  Dims labelDims = {n};
  labelDims.insert(labelDims.end(), c.scores.begin() + 2, c.scores.end());
  auto scores = randomTensor<float>(c.scores, -2, 2);
  auto labels = randomTensor<int64_t>(labelDims, 0, classes - 1);
  if (c.hasIgnore && (c.ignoreIndex < 0 || c.ignoreIndex >= classes))
    for (int64_t i = 0; i < labels.numel(); i += 3)
      labels[i] = c.ignoreIndex;
  // An ignored real class: one label that counts whatever the draws were
  // (else a mean over no labels is 0 / 0, and so is its difference).
  if (c.hasIgnore && c.ignoreIndex >= 0 && c.ignoreIndex < classes)
    labels[0] = (c.ignoreIndex + 1) % classes;
  auto weights = randomTensor<float>({classes}, 0.2, 2.0);
  const Dims lossDims = c.reduction == WEFT_LOSS_NONE ? labelDims : Dims{};
  const std::vector<double> r = randomProjection(numelOf(lossDims));
  HostTensor<float> dloss(lossDims, asFloats(r));
  HostTensor<float> dscores(c.scores);
  KernelCall call;
  call.tensor(scores).tensor(labels);
  if (c.hasWeights)
    call.tensor(weights);
  call.tensor(dloss).tensor(dscores);
  call.attrs({c.reduction, c.hasIgnore, c.ignoreIndex, c.hasWeights})
      .run(weft_k_softmax_xent_grad);
  Forward xent = [&](const std::vector<float> &v) {
    HostTensor<float> s(c.scores, v);
    HostTensor<float> loss(lossDims);
    KernelCall fwd;
    fwd.tensor(s).tensor(labels);
    if (c.hasWeights)
      fwd.tensor(weights);
    fwd.tensor(loss)
        .attrs({c.reduction, c.hasIgnore, c.ignoreIndex, c.hasWeights, 0})
        .run(weft_k_softmax_xent);
    return loss.data;
  };
  checkAgainstForward(dscores.data, scores.data, xent, r, 1e-2);
}

TEST(SoftmaxXentGrad, MatchesSoftmaxXentFiniteDifferences) {
  for (int64_t red : {WEFT_LOSS_NONE, WEFT_LOSS_MEAN, WEFT_LOSS_SUM})
    for (bool weights : {false, true}) {
      checkXentGrad({{5, 4}, red, false, 0, weights});
      checkXentGrad({{6, 3}, red, true, -100, weights});
      checkXentGrad({{4, 5}, red, true, 2, weights}); // a real class ignored
      checkXentGrad({{2, 3, 4, 5}, red, true, -1, weights});
      // Two column chunks. A float sum over 600 positions is too coarse
      // for finite differences, so that one is checked by none and mean.
      if (red != WEFT_LOSS_SUM)
        checkXentGrad({{2, 4, 300}, red, false, 0, weights});
    }
}

TEST(SoftmaxXentGrad, ByHand) {
  // Scores 0: softmax [.5, .5]. Row 0 label 0, row 1 ignored; mean over
  // the one counted row.
  HostTensor<float> scores({2, 2});
  HostTensor<int64_t> labels({2}, {0, 7});
  HostTensor<float> dloss(Dims{}, {1.0f});
  HostTensor<float> ds({2, 2});
  KernelCall()
      .tensor(scores)
      .tensor(labels)
      .tensor(dloss)
      .tensor(ds)
      .attrs({WEFT_LOSS_MEAN, 1, 7, 0})
      .run(weft_k_softmax_xent_grad);
  EXPECT_EQ(ds.data, (std::vector<float>{-0.5f, 0.5f, 0, 0}));
  // Weights {2, 3}, labels {0, 1}: mean divides by 5.
  HostTensor<int32_t> labels32({2}, {0, 1});
  HostTensor<float> w({2}, {2, 3});
  for (int64_t red : {WEFT_LOSS_MEAN, WEFT_LOSS_SUM}) {
    KernelCall()
        .tensor(scores)
        .tensor(labels32)
        .tensor(w)
        .tensor(dloss)
        .tensor(ds)
        .attrs({red, 0, 0, 1})
        .run(weft_k_softmax_xent_grad);
    const float f = red == WEFT_LOSS_MEAN ? 5.0f : 1.0f;
    expectClose(ds.data, {-1.0f / f, 1.0f / f, 1.5f / f, -1.5f / f}, 1e-6,
                1e-7);
  }
  // Reduction none scales each row by its own dloss; all ignored gives 0.
  HostTensor<float> perRow({2}, {2.0f, -4.0f});
  KernelCall()
      .tensor(scores)
      .tensor(labels32)
      .tensor(perRow)
      .tensor(ds)
      .attrs({WEFT_LOSS_NONE, 0, 0, 0})
      .run(weft_k_softmax_xent_grad);
  EXPECT_EQ(ds.data, (std::vector<float>{-1, 1, -2, 2}));
  HostTensor<int64_t> ignored({2}, {5, 5});
  KernelCall()
      .tensor(scores)
      .tensor(ignored)
      .tensor(dloss)
      .tensor(ds)
      .attrs({WEFT_LOSS_MEAN, 1, 5, 0})
      .run(weft_k_softmax_xent_grad);
  EXPECT_EQ(ds.data, (std::vector<float>{0, 0, 0, 0}));
}

//===-- determinism -------------------------------------------------------===//

TEST(GradDeterminism, RowKernelsIndependentOfThreadCount) {
  auto idx = randomTensor<int64_t>({20000}, -100, 99);
  auto upd = randomTensor<float>({20000, 8});
  expectSameSerialAndPooled([&] {
    HostTensor<float> y({100, 8});
    KernelCall().tensor(idx).tensor(upd).tensor(y).attr(0).run(
        weft_k_scatter_add);
    return y.data;
  });
  auto x = randomTensor<float>({256, 512}, -2, 2);
  auto scale = randomTensor<float>({512});
  auto dy = randomTensor<float>({256, 512});
  expectSameSerialAndPooled([&] {
    LayerNormGrads g = runLayerNormGrad({256, 512}, 1, x, scale, dy, 1e-5);
    g.dx.insert(g.dx.end(), g.dscale.begin(), g.dscale.end());
    g.dx.insert(g.dx.end(), g.dbias.begin(), g.dbias.end());
    return g.dx;
  });
  auto sx = randomTensor<float>({300, 400}, -2, 2);
  for (int64_t axis : {0, 1}) {
    HostTensor<float> y({300, 400}, runSoftmax({300, 400}, sx.data, axis, 0));
    HostTensor<float> d = randomTensor<float>({300, 400});
    expectSameSerialAndPooled([&] {
      HostTensor<float> dx({300, 400});
      KernelCall().tensor(y).tensor(d).tensor(dx).attr(axis).attr(0).run(
          weft_k_softmax_grad);
      return dx.data;
    });
  }
  auto scores = randomTensor<float>({64, 1000});
  auto labels = randomTensor<int64_t>({64}, 0, 999);
  HostTensor<float> dloss(Dims{}, {1.0f});
  expectSameSerialAndPooled([&] {
    HostTensor<float> ds({64, 1000});
    KernelCall()
        .tensor(scores)
        .tensor(labels)
        .tensor(dloss)
        .tensor(ds)
        .attrs({WEFT_LOSS_MEAN, 0, 0, 0})
        .run(weft_k_softmax_xent_grad);
    return ds.data;
  });
}

} // namespace
