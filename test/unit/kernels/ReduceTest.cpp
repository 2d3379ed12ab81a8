//===- ReduceTest.cpp - reduce kernel -------------------------------------===//

#include "KernelTestUtil.h"

#include <algorithm>
#include <limits>

using namespace weft::test;

namespace {

template <class T>
std::vector<T> referenceReduce(const HostTensor<T> &x, const Dims &axes,
                               int64_t op, Dims &outDims) {
  outDims.clear();
  std::vector<bool> reduced(x.dims.size(), false);
  for (int64_t a : axes)
    reduced[a] = true;
  for (size_t d = 0; d < x.dims.size(); ++d)
    outDims.push_back(reduced[d] ? 1 : x.dims[d]); // keepdims form
  std::vector<double> acc(static_cast<size_t>(numelOf(outDims)),
                          op == WEFT_REDUCE_MAX ? -1e300 : 0.0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    Dims idx = unravel(i, x.dims);
    for (size_t d = 0; d < idx.size(); ++d)
      if (reduced[d])
        idx[d] = 0;
    double &a = acc[ravel(idx, outDims)];
    a = op == WEFT_REDUCE_MAX ? std::max<double>(a, x[i]) : a + x[i];
  }
  int64_t count = numelOf(outDims) ? x.numel() / numelOf(outDims) : 0;
  std::vector<T> out(acc.size());
  for (size_t i = 0; i < acc.size(); ++i)
    out[i] = static_cast<T>(op == WEFT_REDUCE_MEAN ? acc[i] / count : acc[i]);
  return out;
}

/// weft_k_reduce of x into y over `axes`.
template <class T>
void runReduce(HostTensor<T> &x, HostTensor<T> &y, int64_t op,
               const Dims &axes) {
  KernelCall()
      .tensor(x)
      .tensor(y)
      .attr(op)
      .attr(static_cast<int64_t>(axes.size()))
      .attrs(axes)
      .run(weft_k_reduce);
}

template <class T>
void checkReduce(const Dims &dims, const Dims &axes, int64_t op,
                 bool keepDims = true) {
  SCOPED_TRACE(testing::Message() << "op " << op << " naxes " << axes.size());
  auto x = randomTensor<T>(dims, -100, 100);
  Dims outDims;
  std::vector<T> e = referenceReduce(x, axes, op, outDims);
  if (!keepDims) {
    Dims squeezed;
    for (size_t d = 0; d < dims.size(); ++d)
      if (std::find(axes.begin(), axes.end(), int64_t(d)) == axes.end())
        squeezed.push_back(dims[d]);
    outDims = squeezed;
  }
  HostTensor<T> y(outDims);
  runReduce(x, y, op, axes);
  if constexpr (std::is_floating_point_v<T>) {
    // A sum with cancellation rounds relative to the magnitudes summed, not
    // to the result: 1e-6 of the same reduction of |x| (300000 values of
    // up to 100 can cancel to a few thousand).
    HostTensor<T> magnitudes = x;
    for (T &v : magnitudes.data)
      v = std::abs(v);
    Dims unused;
    const std::vector<T> scale = referenceReduce(magnitudes, axes, op, unused);
    ASSERT_EQ(y.data.size(), e.size());
    for (size_t i = 0; i < e.size(); ++i)
      EXPECT_NEAR(y.data[i], e[i],
                  1e-3 + 1e-5 * std::abs(e[i]) + 1e-6 * scale[i])
          << "at " << i;
  } else {
    EXPECT_EQ(y.data, e);
  }
}

TEST(Reduce, F32AxisPatterns) {
  const std::vector<std::pair<Dims, Dims>> cases = {
      {{5, 6}, {1}},                // rows
      {{5, 6}, {0}},                // columns
      {{3, 4, 5}, {1}},             // middle
      {{2, 3, 4, 5}, {2, 3}},       // spatial (global pool)
      {{2, 3, 4, 5}, {0, 2}},       // interleaved: general path
      {{2, 3, 4, 5}, {1, 3}},       // interleaved: general path, rows
      {{16, 8, 6, 7}, {0, 2, 3}},   // BatchNorm statistics: rows
      {{2, 3, 4, 5}, {0, 1, 2, 3}}, // everything
      {{4, 1, 6}, {1}},             // unit axis only
      {{4, 1, 6}, {0, 1}},
      {{7}, {}},            // nothing
      {{300000}, {0}},      // long row: parallel blocks
      {{64, 2048}, {0}},    // wide columns: parallel chunks
      {{8, 128, 768}, {2}}, // transformer mean
  };
  for (int64_t op : {WEFT_REDUCE_SUM, WEFT_REDUCE_MEAN, WEFT_REDUCE_MAX})
    for (const auto &[dims, axes] : cases) {
      checkReduce<float>(dims, axes, op);
      checkReduce<float>(dims, axes, op, /*keepDims=*/false);
    }
}

// Sums over many rows and few columns (a bias gradient) run in row blocks
// of max(64, ceil(rows / 64)) rows, each summed in order, the blocks then
// added in order: bitwise this float reference, whatever the threads.
TEST(Reduce, RowBlocksAreFixedByTheShape) {
  const std::vector<std::pair<Dims, Dims>> cases = {
      {{32, 32, 512}, {0, 1}}, // [1024 rows, 512]: 16 blocks of 64
      {{2, 300, 1500}, {1}},   // two outer rows, two column chunks
  };
  for (const auto &[dims, axes] : cases) {
    auto x = randomTensor<float>(dims, -100, 100);
    const int64_t outer = axes.front() == 0 ? 1 : dims[0];
    const int64_t inner = dims.back();
    const int64_t rows = x.numel() / outer / inner;
    const int64_t block = std::max<int64_t>(64, (rows + 63) / 64);
    std::vector<float> expected(static_cast<size_t>(outer * inner));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        float total = 0;
        for (int64_t b = 0; b < rows; b += block) {
          float part = 0;
          for (int64_t i = b; i < std::min(rows, b + block); ++i)
            part += x[(o * rows + i) * inner + j];
          total = b == 0 ? part : total + part;
        }
        expected[static_cast<size_t>(o * inner + j)] = total;
      }
    Dims outDims = dims;
    for (int64_t a : axes)
      outDims[static_cast<size_t>(a)] = 1;
    HostTensor<float> y(outDims);
    runReduce(x, y, WEFT_REDUCE_SUM, axes);
    EXPECT_EQ(y.data, expected);
  }
}

TEST(Reduce, IntegersSumAndMax) {
  for (int64_t op : {WEFT_REDUCE_SUM, WEFT_REDUCE_MAX}) {
    checkReduce<int64_t>({3, 4, 5}, {0, 2}, op);
    checkReduce<int64_t>({3, 4, 5}, {2}, op);
    checkReduce<int32_t>({6, 7}, {0}, op);
    checkReduce<int32_t>({6, 7}, {0, 1}, op);
  }
  checkReduce<double>({4, 5}, {1}, WEFT_REDUCE_MEAN);
}

TEST(ReduceDeath, MeanOverIntegersIsRejected) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(checkReduce<int64_t>({3, 4}, {1}, WEFT_REDUCE_MEAN),
              testing::ExitedWithCode(1), "mean");
}

} // namespace

// A NaN anywhere in a reduced group makes its max NaN (numpy, PyTorch, and
// the dialect's folder agree), on the vector row path and the others.
TEST(Reduce, MaxPropagatesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const Dims &axes : {Dims{1}, Dims{0}}) {
    HostTensor<float> x({3, 40});
    for (int64_t i = 0; i < x.numel(); ++i)
      x[i] = static_cast<float>(i % 17);
    x[41] = nan; // row 1, column 1
    Dims outDims = axes[0] == 1 ? Dims{3, 1} : Dims{1, 40};
    HostTensor<float> y(outDims);
    runReduce(x, y, WEFT_REDUCE_MAX, axes);
    for (int64_t i = 0; i < y.numel(); ++i) {
      bool nanGroup = axes[0] == 1 ? i == 1 : i == 1;
      EXPECT_EQ(std::isnan(y[i]), nanGroup) << "output " << i;
    }
  }
  // Interleaved axes, the innermost contiguous (whole rows): channel 1 of
  // [N, C, W] over N and W.
  HostTensor<float> x({4, 3, 40});
  for (int64_t i = 0; i < x.numel(); ++i)
    x[i] = static_cast<float>(i % 23);
  x[(2 * 3 + 1) * 40 + 5] = nan;
  HostTensor<float> y({1, 3, 1});
  runReduce(x, y, WEFT_REDUCE_MAX, {0, 2});
  EXPECT_FALSE(std::isnan(y[0]));
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_FALSE(std::isnan(y[2]));
  EXPECT_EQ(y[0], 22.0f);
}
