//===- ConvPoolGradTest.cpp - conv and pooling gradient kernels -----------===//
//
// conv_grad_input / conv_grad_weight against finite differences of conv,
// max_pool_grad / avg_pool_grad against those of the pools (conv and
// avg_pool are linear, so the differences are exact up to rounding), plus
// cases worked by hand and a thread-count determinism check.
//
//===----------------------------------------------------------------------===//

#include "GradTestUtil.h"

using namespace weft::test;

namespace {

//===-- conv --------------------------------------------------------------===//

struct ConvGradCase {
  Dims x; // [N, C, spatial...]
  int64_t outC, group;
  Dims kernel, strides, pads, dilations;

  Dims wDims() const {
    Dims w = {outC, x[1] / group};
    w.insert(w.end(), kernel.begin(), kernel.end());
    return w;
  }
  Dims yDims() const {
    const size_t s = kernel.size();
    Dims out = {x[0], outC};
    for (size_t i = 0; i < s; ++i) {
      int64_t span = dilations[i] * (kernel[i] - 1) + 1;
      out.push_back((x[2 + i] + pads[i] + pads[s + i] - span) / strides[i] + 1);
    }
    return out;
  }
  void addAttrs(KernelCall &call) const {
    call.attr(group).attrs(strides).attrs(pads).attrs(dilations);
  }
};

std::vector<float> runConv(const ConvGradCase &c, const std::vector<float> &xv,
                           const std::vector<float> &wv) {
  HostTensor<float> x(c.x, xv), w(c.wDims(), wv), y(c.yDims());
  KernelCall call;
  call.tensor(x).tensor(w).tensor(y).attr(0);
  c.addAttrs(call);
  call.run(weft_k_conv);
  return y.data;
}

std::vector<float> runGradInput(const ConvGradCase &c, HostTensor<float> &dy,
                                HostTensor<float> &w) {
  HostTensor<float> dx(c.x);
  KernelCall call;
  call.tensor(dy).tensor(w).tensor(dx);
  c.addAttrs(call);
  call.run(weft_k_conv_grad_input);
  return dx.data;
}

std::vector<float> runGradWeight(const ConvGradCase &c, HostTensor<float> &x,
                                 HostTensor<float> &dy) {
  HostTensor<float> dw(c.wDims());
  KernelCall call;
  call.tensor(x).tensor(dy).tensor(dw);
  c.addAttrs(call);
  call.run(weft_k_conv_grad_weight);
  return dw.data;
}

void checkConvGrad(const ConvGradCase &c) {
  SCOPED_TRACE(testing::Message()
               << "x dims " << c.x.size() << " C " << c.x[1] << " outC "
               << c.outC << " group " << c.group);
  auto x = randomTensor<float>(c.x);
  auto w = randomTensor<float>(c.wDims());
  const std::vector<double> r = randomProjection(numelOf(c.yDims()));
  HostTensor<float> dy(c.yDims(), asFloats(r));
  checkAgainstForward(
      runGradInput(c, dy, w), x.data,
      [&](const std::vector<float> &v) { return runConv(c, v, w.data); }, r,
      0.5, 1e-4, 1e-4);
  checkAgainstForward(
      runGradWeight(c, x, dy), w.data,
      [&](const std::vector<float> &v) { return runConv(c, x.data, v); }, r,
      0.5, 1e-4, 1e-4);
}

TEST(ConvGrad, TwoDims) {
  checkConvGrad({{2, 3, 6, 5}, 4, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}});
  // Groups, stride 2, uneven pads, dilation 2.
  checkConvGrad({{1, 4, 9, 8}, 6, 2, {3, 2}, {2, 2}, {1, 0, 2, 1}, {2, 2}});
  checkConvGrad({{2, 2, 7, 7}, 3, 1, {3, 3}, {2, 1}, {0, 1, 1, 0}, {1, 2}});
}

TEST(ConvGrad, OneAndThreeDims) {
  checkConvGrad({{2, 3, 11}, 2, 1, {3}, {2}, {1, 2}, {2}});
  checkConvGrad({{1, 4, 8}, 4, 2, {2}, {1}, {0, 1}, {1}});
  checkConvGrad({{1, 2, 4, 5, 4},
                 2,
                 1,
                 {2, 3, 2},
                 {1, 2, 1},
                 {0, 1, 1, 1, 0, 0},
                 {1, 1, 2}});
}

TEST(ConvGrad, DepthwiseAndOneInputChannel) {
  checkConvGrad({{2, 3, 7, 7}, 3, 3, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}});
  checkConvGrad({{1, 2, 6, 6}, 4, 2, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}});
  checkConvGrad({{1, 2, 9}, 2, 2, {3}, {1}, {2, 2}, {2}});
  checkConvGrad({{2, 2, 3, 5, 4},
                 2,
                 2,
                 {2, 2, 3},
                 {1, 2, 1},
                 {1, 0, 1, 0, 1, 1},
                 {1, 1, 1}});
  // Small planes (at most 64 outputs: an offset table), stride 1 (the input
  // gradient as a depthwise conv) and 5x5 on 2x2 images (dead taps).
  checkConvGrad({{3, 8, 5, 5}, 8, 8, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}});
  checkConvGrad({{4, 6, 2, 2}, 6, 6, {5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}});
  // Strided with more than 64 outputs: output row by output row.
  checkConvGrad({{2, 2, 20, 20}, 2, 2, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}});
  // One input channel but many outputs: the gemm path with cg = 1.
  checkConvGrad({{2, 1, 5, 5}, 6, 1, {2, 2}, {1, 1}, {0, 0, 1, 1}, {1, 1}});
}

TEST(ConvGrad, Pointwise) {
  checkConvGrad({{2, 4, 3, 3}, 5, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}});
  checkConvGrad({{1, 6, 4}, 4, 2, {1}, {1}, {0, 0}, {1}});
  checkConvGrad({{1, 3, 5, 5}, 2, 1, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}});
}

TEST(ConvGrad, FewPositionsImagesTogether) {
  // Fewer than 64 output positions and several images: the products run
  // over all the images' columns (as in conv's FewPositionsImagesTogether).
  checkConvGrad({{6, 8, 4, 4}, 10, 1, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}});
  checkConvGrad({{5, 12, 6, 5}, 18, 3, {2, 2}, {1, 1}, {0, 1, 1, 0}, {1, 1}});
  checkConvGrad({{7, 6, 5}, 4, 1, {3}, {1}, {1, 1}, {1}});
  checkConvGrad({{9, 8, 4, 4}, 5, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}});
  checkConvGrad({{3, 10, 1, 1}, 6, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}});
}

TEST(ConvGrad, DeadTapsDropped) {
  // As conv's DeadTapsDropped: dw is zero on the dropped taps.
  checkConvGrad({{4, 6, 1, 1}, 5, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}});
  checkConvGrad({{3, 4, 2, 2}, 3, 1, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}});
  checkConvGrad({{1, 3, 1, 6}, 4, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}});
  checkConvGrad({{2, 4, 2, 9}, 4, 2, {5, 3}, {1, 2}, {3, 0, 3, 1}, {1, 1}});
  checkConvGrad({{2, 4, 3}, 4, 1, {5}, {1}, {4, 0}, {1}});
  checkConvGrad({{2, 3, 3, 3}, 4, 1, {3, 3}, {1, 1}, {3, 3, 3, 3}, {3, 3}});
}

/// dx and dw of project(conv(x, w), dy) by direct loops in double.
void referenceConvGrads(const ConvGradCase &c, const HostTensor<float> &x,
                        const HostTensor<float> &w, const HostTensor<float> &dy,
                        std::vector<float> &dx, std::vector<float> &dw) {
  const size_t s = c.kernel.size();
  const Dims yd = c.yDims();
  const int64_t cg = c.x[1] / c.group, ocg = c.outC / c.group;
  const int64_t taps = numelOf(c.kernel);
  const Dims xs(c.x.begin() + 2, c.x.end());
  const int64_t inSize = numelOf(xs), outSize = numelOf(yd) / (yd[0] * yd[1]);
  std::vector<double> gx(x.data.size()), gw(w.data.size());
  std::vector<int64_t> tapOffset(static_cast<size_t>(taps * outSize), -1);
  for (int64_t o = 0; o < outSize; ++o) { // input offset of (o, tap)
    Dims oi = unravel(o, Dims(yd.begin() + 2, yd.end()));
    for (int64_t t = 0; t < taps; ++t) {
      Dims ti = unravel(t, c.kernel), pos(s);
      bool inside = true;
      for (size_t d = 0; d < s; ++d) {
        pos[d] = oi[d] * c.strides[d] - c.pads[d] + ti[d] * c.dilations[d];
        inside = inside && pos[d] >= 0 && pos[d] < xs[d];
      }
      if (inside)
        tapOffset[o * taps + t] = ravel(pos, xs);
    }
  }
  for (int64_t n = 0; n < c.x[0]; ++n)
    for (int64_t oc = 0; oc < c.outC; ++oc)
      for (int64_t ci = 0; ci < cg; ++ci) {
        const int64_t xBase = (n * c.x[1] + oc / ocg * cg + ci) * inSize;
        const int64_t wBase = (oc * cg + ci) * taps;
        for (int64_t o = 0; o < outSize; ++o) {
          const double g = dy[(n * c.outC + oc) * outSize + o];
          for (int64_t t = 0; t < taps; ++t) {
            const int64_t off = tapOffset[o * taps + t];
            if (off < 0)
              continue;
            gx[xBase + off] += g * w[wBase + t];
            gw[wBase + t] += g * x[xBase + off];
          }
        }
      }
  dx.assign(gx.begin(), gx.end());
  dw.assign(gw.begin(), gw.end());
}

TEST(ConvGrad, LargeChunkedMatchesReference) {
  // Sizes that split grad_input over channel chunks and im2col blocks and
  // grad_weight over batch chunks and column chunks.
  const ConvGradCase cases[] = {
      {{1, 64, 40, 40}, 64, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {{2, 8, 200, 200}, 8, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {{16, 3, 96, 96}, 16, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {{2, 32, 50, 50}, 64, 4, {3, 3}, {2, 2}, {1, 0, 1, 2}, {1, 2}},
      {{2, 256, 30, 30}, 256, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      // Images together in chunks (60 x 9 positions: 56 images, then 4;
      // dw adds the chunks), and resnet18's last stage on 1x1 images.
      {{60, 16, 3, 3}, 24, 1, {2, 2}, {1, 1}, {1, 1, 0, 0}, {1, 1}},
      {{16, 64, 1, 1}, 64, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}}};
  for (const ConvGradCase &c : cases) {
    SCOPED_TRACE(testing::Message()
                 << "N " << c.x[0] << " C " << c.x[1] << " H " << c.x[2]);
    auto x = randomTensor<float>(c.x);
    auto w = randomTensor<float>(c.wDims());
    auto dy = randomTensor<float>(c.yDims());
    std::vector<float> dx, dw;
    referenceConvGrads(c, x, w, dy, dx, dw);
    expectClose(runGradInput(c, dy, w), dx, 1e-4, 1e-4);
    expectClose(runGradWeight(c, x, dy), dw, 1e-4, 1e-3);
  }
}

TEST(ConvGrad, ByHand) {
  // y = [1+2, 2+3] for x = [1, 2, 3], w = [1, 1].
  ConvGradCase c{{1, 1, 3}, 1, 1, {2}, {1}, {0, 0}, {1}};
  HostTensor<float> x({1, 1, 3}, {1, 2, 3});
  HostTensor<float> w({1, 1, 2}, {1, 1});
  HostTensor<float> dy({1, 1, 2}, {1, 1});
  EXPECT_EQ(runGradInput(c, dy, w), (std::vector<float>{1, 2, 1}));
  EXPECT_EQ(runGradWeight(c, x, dy), (std::vector<float>{3, 5}));
  // Stride 2, pad 1: y[0] = w1 x0, y[1] = w0 x1 + w1 x2.
  ConvGradCase s{{1, 1, 3}, 1, 1, {2}, {2}, {1, 0}, {1}};
  HostTensor<float> w2({1, 1, 2}, {2, 3});
  HostTensor<float> dy2({1, 1, 2}, {1, 10});
  EXPECT_EQ(runGradInput(s, dy2, w2), (std::vector<float>{3, 20, 30}));
  EXPECT_EQ(runGradWeight(s, x, dy2), (std::vector<float>{20, 1 + 30}));
}

//===-- pools -------------------------------------------------------------===//

struct PoolGradCase {
  Dims x;
  Dims kernel, strides, pads, dilations;
  bool ceilMode;

  Dims yDims() const {
    const size_t s = kernel.size();
    Dims out = {x[0], x[1]};
    for (size_t i = 0; i < s; ++i) {
      int64_t span = dilations[i] * (kernel[i] - 1) + 1;
      int64_t room = x[2 + i] + pads[i] + pads[s + i] - span;
      out.push_back((ceilMode ? (room + strides[i] - 1) / strides[i]
                              : room / strides[i]) +
                    1);
    }
    return out;
  }
};

std::vector<float> runMaxPool(const PoolGradCase &c,
                              const std::vector<float> &xv) {
  HostTensor<float> x(c.x, xv), y(c.yDims());
  KernelCall()
      .tensor(x)
      .tensor(y)
      .attrs(c.kernel)
      .attrs(c.strides)
      .attrs(c.pads)
      .attrs(c.dilations)
      .run(weft_k_max_pool);
  return y.data;
}

std::vector<float> runMaxPoolGrad(const PoolGradCase &c, HostTensor<float> &x,
                                  HostTensor<float> &dy) {
  HostTensor<float> dx(c.x);
  KernelCall()
      .tensor(x)
      .tensor(dy)
      .tensor(dx)
      .attrs(c.kernel)
      .attrs(c.strides)
      .attrs(c.pads)
      .attrs(c.dilations)
      .run(weft_k_max_pool_grad);
  return dx.data;
}

std::vector<float> runAvgPool(const PoolGradCase &c, bool countPad,
                              const std::vector<float> &xv) {
  HostTensor<float> x(c.x, xv), y(c.yDims());
  KernelCall()
      .tensor(x)
      .tensor(y)
      .attr(countPad)
      .attrs(c.kernel)
      .attrs(c.strides)
      .attrs(c.pads)
      .run(weft_k_avg_pool);
  return y.data;
}

std::vector<float> runAvgPoolGrad(const PoolGradCase &c, bool countPad,
                                  HostTensor<float> &dy) {
  HostTensor<float> dx(c.x);
  KernelCall()
      .tensor(dy)
      .tensor(dx)
      .attr(countPad)
      .attrs(c.kernel)
      .attrs(c.strides)
      .attrs(c.pads)
      .run(weft_k_avg_pool_grad);
  return dx.data;
}

void checkPoolGrads(const PoolGradCase &c) {
  SCOPED_TRACE(testing::Message()
               << "rank " << c.x.size() << " ceil " << c.ceilMode);
  const std::vector<double> r = randomProjection(numelOf(c.yDims()));
  HostTensor<float> dy(c.yDims(), asFloats(r));
  HostTensor<float> x(c.x, distinctValues(numelOf(c.x)));
  checkAgainstForward(
      runMaxPoolGrad(c, x, dy), x.data,
      [&](const std::vector<float> &v) { return runMaxPool(c, v); }, r, 1e-2,
      1e-4, 1e-4);
  bool dilated = false;
  for (int64_t d : c.dilations)
    dilated = dilated || d != 1;
  if (dilated) // avg_pool has no dilations
    return;
  for (bool countPad : {false, true}) {
    SCOPED_TRACE(countPad);
    checkAgainstForward(
        runAvgPoolGrad(c, countPad, dy), x.data,
        [&](const std::vector<float> &v) { return runAvgPool(c, countPad, v); },
        r, 0.5, 1e-5, 1e-5);
  }
}

TEST(PoolGrad, TwoDims) {
  checkPoolGrads({{1, 2, 8, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false});
  checkPoolGrads({{2, 3, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false});
  checkPoolGrads({{1, 2, 7, 6}, {3, 2}, {1, 2}, {1, 0, 2, 1}, {1, 1}, false});
  checkPoolGrads({{1, 2, 9, 7}, {3, 2}, {2, 1}, {1, 0, 0, 1}, {2, 2}, false});
}

TEST(PoolGrad, CeilModeOneAndThreeDims) {
  checkPoolGrads({{1, 1, 8, 8}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true});
  checkPoolGrads({{1, 2, 7, 5}, {2, 3}, {3, 2}, {0, 1, 0, 0}, {1, 1}, true});
  checkPoolGrads({{2, 3, 11}, {4}, {3}, {2, 1}, {1}, true});
  checkPoolGrads({{2, 2, 15}, {3}, {2}, {1, 1}, {1}, false});
  checkPoolGrads({{1, 2, 5, 6, 7},
                  {2, 2, 3},
                  {2, 1, 2},
                  {0, 1, 1, 1, 0, 1},
                  {1, 1, 1},
                  true});
}

TEST(MaxPoolGrad, FirstMaximumWinsAndOverlapsAccumulate) {
  // All equal: the window's first tap takes the gradient.
  PoolGradCase c{{1, 1, 2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false};
  HostTensor<float> x({1, 1, 2, 2}, {1, 1, 1, 1});
  HostTensor<float> dy({1, 1, 1, 1}, {5});
  EXPECT_EQ(runMaxPoolGrad(c, x, dy), (std::vector<float>{5, 0, 0, 0}));
  // [[1, 2, 2], [2, 0, 0]], 2x2 windows at columns 0 and 1: both maxima
  // are first found at (0, 1), so its gradient sums both windows'.
  PoolGradCase c2{{1, 1, 2, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false};
  HostTensor<float> x2({1, 1, 2, 3}, {1, 2, 2, 2, 0, 0});
  HostTensor<float> dy2({1, 1, 1, 2}, {1, 10});
  EXPECT_EQ(runMaxPoolGrad(c2, x2, dy2),
            (std::vector<float>{0, 11, 0, 0, 0, 0}));
  // Padding never wins, even against negative values: windows [pad, -1],
  // [-1, -2], [-2, pad].
  PoolGradCase c3{{1, 1, 2}, {2}, {1}, {1, 1}, {1}, false};
  HostTensor<float> x3({1, 1, 2}, {-1, -2});
  HostTensor<float> dy3({1, 1, 3}, {1, 10, 100});
  EXPECT_EQ(runMaxPoolGrad(c3, x3, dy3), (std::vector<float>{11, 100}));
}

TEST(AvgPoolGrad, DivisorsWithAndWithoutPadding) {
  // x[4], kernel 3, stride 2, pads 1/1, ceil mode: windows [-1, 1], [1, 3],
  // [3, 5]. count_include_pad divides by 3, 3, 2 (the last window stops
  // at the padded end 5), otherwise by 2, 3, 1.
  PoolGradCase c{{1, 1, 4}, {3}, {2}, {1, 1}, {1}, true};
  ASSERT_EQ(c.yDims(), (Dims{1, 1, 3}));
  HostTensor<float> dy({1, 1, 3}, {6, 6, 6});
  EXPECT_EQ(runAvgPoolGrad(c, true, dy), (std::vector<float>{2, 4, 2, 5}));
  EXPECT_EQ(runAvgPoolGrad(c, false, dy), (std::vector<float>{3, 5, 2, 8}));
}

//===-- determinism -------------------------------------------------------===//

TEST(GradDeterminism, ConvAndPoolIndependentOfThreadCount) {
  const ConvGradCase cases[] = {
      {{8, 32, 24, 24}, 32, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      // Few dw columns, many images: dw sums batch chunks.
      {{16, 3, 96, 96}, 16, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {{1, 64, 30, 30}, 64, 1, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {{2, 8, 3, 40}, 16, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {{4, 16, 20, 20}, 16, 16, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      // The input gradient by Winograd over passes of several images.
      {{20, 32, 4, 4}, 48, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      // Images together, in two chunks, with dead taps.
      {{60, 32, 3, 3}, 40, 1, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {{16, 96, 1, 1}, 64, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}}};
  for (const ConvGradCase &c : cases) {
    auto x = randomTensor<float>(c.x);
    auto w = randomTensor<float>(c.wDims());
    auto dy = randomTensor<float>(c.yDims());
    expectSameSerialAndPooled([&] { return runGradInput(c, dy, w); });
    expectSameSerialAndPooled([&] { return runGradWeight(c, x, dy); });
  }
  PoolGradCase p{{4, 16, 20, 20}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false};
  auto x = randomTensor<float>(p.x);
  auto dy = randomTensor<float>(p.yDims());
  expectSameSerialAndPooled([&] { return runMaxPoolGrad(p, x, dy); });
  expectSameSerialAndPooled([&] { return runAvgPoolGrad(p, true, dy); });
}

} // namespace
