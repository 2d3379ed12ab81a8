//===- PoolingTest.cpp - max_pool and avg_pool kernels --------------------===//

#include "KernelTestUtil.h"

#include <limits>

using namespace weft::test;

namespace {

struct PoolCase {
  Dims x;
  Dims kernel, strides, pads, dilations;
  bool ceilMode;
};

Dims poolOutDims(const PoolCase &c) {
  const size_t s = c.kernel.size();
  Dims out = {c.x[0], c.x[1]};
  for (size_t i = 0; i < s; ++i) {
    int64_t span = c.dilations[i] * (c.kernel[i] - 1) + 1;
    int64_t room = c.x[2 + i] + c.pads[i] + c.pads[s + i] - span;
    int64_t o = (c.ceilMode ? (room + c.strides[i] - 1) / c.strides[i]
                            : room / c.strides[i]) +
                1;
    out.push_back(o);
  }
  return out;
}

/// Max (mode 0), or average counting padding (1) or not (2).
std::vector<float> referencePool(const PoolCase &c, const HostTensor<float> &x,
                                 const Dims &yDims, int mode) {
  const size_t s = c.kernel.size();
  Dims xs(c.x.begin() + 2, c.x.end());
  std::vector<float> y(static_cast<size_t>(numelOf(yDims)));
  for (int64_t i = 0; i < numelOf(yDims); ++i) {
    Dims idx = unravel(i, yDims);
    double best = -std::numeric_limits<double>::infinity(), sum = 0;
    int64_t inPadded = 0, inInput = 0;
    for (int64_t t = 0; t < numelOf(c.kernel); ++t) {
      Dims tap = unravel(t, c.kernel);
      Dims pos(s);
      bool inside = true, padded = true;
      for (size_t d = 0; d < s; ++d) {
        pos[d] =
            idx[2 + d] * c.strides[d] - c.pads[d] + tap[d] * c.dilations[d];
        inside = inside && pos[d] >= 0 && pos[d] < xs[d];
        padded =
            padded && pos[d] >= -c.pads[d] && pos[d] < xs[d] + c.pads[s + d];
      }
      inPadded += padded;
      if (!inside)
        continue;
      ++inInput;
      float v = x[(idx[0] * c.x[1] + idx[1]) * numelOf(xs) + ravel(pos, xs)];
      best = v > best ? v : best;
      sum += v;
    }
    if (mode == 0)
      y[i] = static_cast<float>(best);
    else
      y[i] = static_cast<float>(sum / double(mode == 1 ? inPadded : inInput));
  }
  return y;
}

void checkMaxPool(const PoolCase &c) {
  auto x = randomTensor<float>(c.x);
  Dims yDims = poolOutDims(c);
  HostTensor<float> y(yDims);
  KernelCall()
      .tensor(x)
      .tensor(y)
      .attrs(c.kernel)
      .attrs(c.strides)
      .attrs(c.pads)
      .attrs(c.dilations)
      .run(weft_k_max_pool);
  expectClose(y.data, referencePool(c, x, yDims, 0), 0, 0);
}

void checkAvgPool(const PoolCase &c, bool countPad) {
  auto x = randomTensor<float>(c.x);
  Dims yDims = poolOutDims(c);
  HostTensor<float> y(yDims);
  KernelCall()
      .tensor(x)
      .tensor(y)
      .attr(countPad)
      .attrs(c.kernel)
      .attrs(c.strides)
      .attrs(c.pads)
      .run(weft_k_avg_pool);
  expectClose(y.data, referencePool(c, x, yDims, countPad ? 1 : 2), 1e-5, 1e-6);
}

TEST(MaxPool, TwoDims) {
  checkMaxPool({{1, 2, 8, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false});
  // ResNet: 3x3 stride 2 pad 1.
  checkMaxPool({{2, 3, 16, 16}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false});
  checkMaxPool({{1, 2, 9, 7}, {3, 2}, {2, 1}, {1, 0, 0, 1}, {2, 2}, false});
}

TEST(MaxPool, CeilModeWindowsPastTheInput) {
  checkMaxPool({{1, 2, 8, 8}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true});
  checkMaxPool({{1, 1, 7, 10}, {2, 3}, {3, 3}, {1, 1, 1, 0}, {1, 1}, true});
  checkMaxPool({{1, 1, 9, 9}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {2, 2}, true});
}

TEST(MaxPool, OneAndThreeDims) {
  checkMaxPool({{2, 3, 15}, {3}, {2}, {1, 1}, {1}, false});
  checkMaxPool({{1, 2, 5, 6, 7},
                {2, 2, 3},
                {2, 1, 2},
                {0, 1, 1, 1, 0, 1},
                {1, 1, 1},
                true});
}

TEST(MaxPool, ManyPlanesInParallel) {
  checkMaxPool({{4, 64, 20, 20}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false});
}

TEST(AvgPool, CountIncludePadBothWays) {
  for (bool countPad : {false, true}) {
    SCOPED_TRACE(countPad);
    checkAvgPool({{1, 2, 8, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false},
                 countPad);
    checkAvgPool({{2, 3, 7, 7}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},
                 countPad);
    checkAvgPool({{1, 2, 9, 6}, {3, 2}, {2, 2}, {1, 0, 2, 1}, {1, 1}, false},
                 countPad);
  }
}

TEST(AvgPool, CeilModeCountsOnlyThePaddedInput) {
  for (bool countPad : {false, true}) {
    SCOPED_TRACE(countPad);
    checkAvgPool({{1, 1, 8, 8}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true},
                 countPad);
    checkAvgPool({{1, 2, 7, 5}, {2, 3}, {3, 2}, {0, 1, 0, 0}, {1, 1}, true},
                 countPad);
    checkAvgPool({{2, 3, 11}, {4}, {3}, {2, 1}, {1}, true}, countPad);
  }
}

TEST(AvgPool, GlobalAndThreeDims) {
  checkAvgPool({{2, 16, 7, 7}, {7, 7}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false},
               false);
  checkAvgPool({{1, 2, 4, 5, 6},
                {2, 2, 2},
                {2, 2, 2},
                {0, 0, 1, 1, 1, 1},
                {1, 1, 1},
                true},
               true);
}

TEST(AvgPool, CeilModeExample) {
  // 1x1x4x4, kernel 3, stride 2, pad 1, ceil mode: windows at -1, 1, 3.
  // The last one spans rows 3..5 of which row 4 is padding and row 5 is past
  // it, so count_include_pad divides by 2 positions per dim there.
  HostTensor<float> x({1, 1, 4, 4});
  for (int64_t i = 0; i < 16; ++i)
    x[i] = static_cast<float>(i);
  HostTensor<float> y({1, 1, 3, 3});
  KernelCall()
      .tensor(x)
      .tensor(y)
      .attrs({1, 3, 3, 2, 2, 1, 1, 1, 1})
      .run(weft_k_avg_pool);
  // Bottom-right window: only x[15] inside; padded positions: rows 3,4 x
  // cols 3,4 = 4 positions.
  EXPECT_FLOAT_EQ(y[8], 15.0f / 4.0f);
  // Top-left window: rows -1..1, cols -1..1: 9 padded positions.
  EXPECT_FLOAT_EQ(y[0], (0 + 1 + 4 + 5) / 9.0f);
}

} // namespace
