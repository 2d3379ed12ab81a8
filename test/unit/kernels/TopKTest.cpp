// weft_k_topk against a reference: a stable sort of each row by the
// kernel's order (value, NaN above every number, ties in index order).
#include "KernelTestUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace weft::test;

namespace {

template <class T> struct TopK {
  HostTensor<T> values;
  HostTensor<int64_t> indices;
};

template <class T>
TopK<T> runTopK(HostTensor<T> &x, int64_t axis, int64_t k, bool largest) {
  Dims out = x.dims;
  out[axis] = k;
  TopK<T> r{HostTensor<T>(out), HostTensor<int64_t>(out)};
  KernelCall()
      .tensor(x)
      .tensor(r.values)
      .tensor(r.indices)
      .attr(axis)
      .attr(largest ? 1 : 0)
      .run(weft_k_topk);
  return r;
}

/// The reference: each row's indices stably sorted by value.
template <class T>
void expectTopK(HostTensor<T> &x, int64_t axis, int64_t k, bool largest) {
  SCOPED_TRACE("axis " + std::to_string(axis) + " k " + std::to_string(k) +
               (largest ? " largest" : " smallest"));
  TopK<T> got = runTopK(x, axis, k, largest);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= x.dims[d];
  for (size_t d = axis + 1; d < x.dims.size(); ++d)
    inner *= x.dims[d];
  const int64_t n = x.dims[axis];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < inner; ++c) {
      auto at = [&](int64_t j) { return x.data[(o * n + j) * inner + c]; };
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
        const T a = at(i), b = at(j);
        const bool aNan = a != a, bNan = b != b;
        if (aNan && bNan)
          return false; // stable: index order
        if (aNan || bNan)
          return aNan == largest; // NaN above every number
        return largest ? a > b : a < b;
      });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t pos = (o * k + j) * inner + c;
        ASSERT_EQ(got.indices.data[pos], order[j]) << "row " << o << "," << c;
        const T v = got.values.data[pos];
        if (v == v)
          ASSERT_EQ(v, at(order[j]));
        else
          ASSERT_TRUE(at(order[j]) != at(order[j]));
      }
    }
}

TEST(TopK, RandomRowsEveryAxis) {
  auto x = randomTensor<float>({4, 7, 5}, -3, 3);
  for (int64_t axis = 0; axis < 3; ++axis)
    for (int64_t k : {int64_t(0), int64_t(1), x.dims[axis] / 2, x.dims[axis]})
      for (bool largest : {true, false})
        expectTopK(x, axis, k, largest);
  auto d = randomTensor<double>({3, 9}, -1, 1);
  expectTopK(d, 1, 4, true);
}

TEST(TopK, TiesKeepIndexOrderAndNaNIsLargest) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor<float> x({2, 6}, {1, 3, nan, 3, 1, -2, 5, 5, 5, 5, 5, 5});
  TopK<float> big = runTopK(x, 1, 4, true);
  EXPECT_EQ(big.indices.data, (std::vector<int64_t>{2, 1, 3, 0, 0, 1, 2, 3}));
  EXPECT_TRUE(std::isnan(big.values.data[0]));
  EXPECT_EQ(big.values.data[1], 3.0f);
  TopK<float> small = runTopK(x, 1, 3, false);
  EXPECT_EQ(small.indices.data, (std::vector<int64_t>{5, 0, 4, 0, 1, 2}));
  // NaN sorts after every number when the smallest come first.
  TopK<float> all = runTopK(x, 1, 6, false);
  EXPECT_EQ(all.indices.data[5], 2);
}

TEST(TopK, Integers) {
  HostTensor<int64_t> lengths({6}, {3, 6, 2, 5, 6, 1});
  TopK<int64_t> r = runTopK(lengths, 0, 6, true);
  EXPECT_EQ(r.values.data, (std::vector<int64_t>{6, 6, 5, 3, 2, 1}));
  EXPECT_EQ(r.indices.data, (std::vector<int64_t>{1, 4, 3, 0, 2, 5}));
  auto y = randomTensor<int32_t>({5, 8}, -4, 4);
  expectTopK(y, 1, 5, false);
}

TEST(TopKDeath, KLargerThanTheAxis) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        HostTensor<float> x({2, 3}, {1, 2, 3, 4, 5, 6});
        HostTensor<float> v({2, 4});
        HostTensor<int64_t> i({2, 4});
        KernelCall().tensor(x).tensor(v).tensor(i).attr(1).attr(1).run(
            weft_k_topk);
      },
      testing::ExitedWithCode(1), "k exceeds");
}

} // namespace
