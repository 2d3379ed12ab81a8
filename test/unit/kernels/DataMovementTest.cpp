//===- DataMovementTest.cpp - Kernels that only move elements -------------===//

#include "KernelTestUtil.h"

using namespace weft::test;

namespace {

template <class T> void checkTranspose(const Dims &dims, const Dims &perm) {
  SCOPED_TRACE(testing::Message()
               << "rank " << dims.size() << " elem " << sizeof(T));
  auto x = randomTensor<T>(dims, -100, 100);
  Dims outDims;
  for (int64_t p : perm)
    outDims.push_back(dims[p]);
  HostTensor<T> y(outDims);
  KernelCall().tensor(x).tensor(y).attrs(perm).run(weft_k_transpose);
  for (int64_t i = 0; i < y.numel(); ++i) {
    Dims oi = unravel(i, outDims), xi(dims.size());
    for (size_t d = 0; d < perm.size(); ++d)
      xi[perm[d]] = oi[d];
    ASSERT_EQ(y[i], x[ravel(xi, dims)]) << "at " << i;
  }
}

TEST(Transpose, Permutations) {
  checkTranspose<float>({3, 5}, {1, 0});
  checkTranspose<float>({70, 45}, {1, 0}); // several tiles, ragged edges
  checkTranspose<float>({2, 3, 4}, {0, 2, 1});
  checkTranspose<float>({2, 3, 4}, {2, 0, 1});
  checkTranspose<float>({2, 3, 4}, {1, 0, 2});         // whole rows move
  checkTranspose<float>({2, 3, 4, 5}, {0, 2, 3, 1});   // NCHW -> NHWC
  checkTranspose<float>({2, 8, 16, 64}, {0, 2, 1, 3}); // attention heads
  checkTranspose<float>({2, 1, 3, 1}, {3, 2, 1, 0});   // unit dims
  checkTranspose<float>({4, 5}, {0, 1});               // identity
  checkTranspose<int64_t>({3, 4, 5}, {2, 1, 0});
  checkTranspose<int8_t>({6, 7}, {1, 0});
  checkTranspose<int32_t>({2, 3, 2, 3, 2}, {4, 2, 0, 3, 1});
  checkTranspose<float>({256, 384}, {1, 0}); // parallel
}

TEST(Transpose, SixteenBitElements) {
  HostTensor<uint16_t> x({2, 3}, {1, 2, 3, 4, 5, 6}, WEFT_F16);
  HostTensor<uint16_t> y({3, 2}, WEFT_F16);
  KernelCall().tensor(x).tensor(y).attrs({1, 0}).run(weft_k_transpose);
  EXPECT_EQ(y.data, (std::vector<uint16_t>{1, 4, 2, 5, 3, 6}));
}

TEST(Concat, AlongEachAxis) {
  auto a = randomTensor<float>({2, 3, 4});
  for (int64_t axis = 0; axis < 3; ++axis) {
    Dims bd = a.dims, cd = a.dims, yd = a.dims;
    bd[axis] = 1;
    cd[axis] = 2;
    yd[axis] = a.dims[axis] + 3;
    auto b = randomTensor<float>(bd);
    auto c = randomTensor<float>(cd);
    HostTensor<float> y(yd);
    KernelCall().tensor(a).tensor(b).tensor(c).tensor(y).attr(axis).run(
        weft_k_concat);
    for (int64_t i = 0; i < y.numel(); ++i) {
      Dims idx = unravel(i, yd);
      int64_t k = idx[axis];
      float e;
      if (k < a.dims[axis]) {
        e = a[ravel(idx, a.dims)];
      } else if (k < a.dims[axis] + 1) {
        idx[axis] -= a.dims[axis];
        e = b[ravel(idx, bd)];
      } else {
        idx[axis] -= a.dims[axis] + 1;
        e = c[ravel(idx, cd)];
      }
      ASSERT_EQ(y[i], e) << "axis " << axis << " at " << i;
    }
  }
}

TEST(Split, InverseOfConcat) {
  auto x = randomTensor<int64_t>({3, 10, 2}, -9, 9);
  HostTensor<int64_t> a({3, 3, 2}), b({3, 7, 2});
  KernelCall().tensor(x).tensor(a).tensor(b).attr(1).run(weft_k_split);
  HostTensor<int64_t> back({3, 10, 2});
  KernelCall().tensor(a).tensor(b).tensor(back).attr(1).run(weft_k_concat);
  EXPECT_EQ(back.data, x.data);
  EXPECT_EQ(a[0], x[0]);
  EXPECT_EQ(b[0], x[6]);
  // Large split along axis 0: whole-piece copies.
  auto big = randomTensor<float>({4, 300000});
  HostTensor<float> p0({1, 300000}), p1({3, 300000});
  KernelCall().tensor(big).tensor(p0).tensor(p1).attr(0).run(weft_k_split);
  EXPECT_EQ(p1[0], big[300000]);
  EXPECT_EQ(p1.data.back(), big.data.back());
}

template <class T>
void checkSlice(const Dims &dims, const Dims &starts, const Dims &steps,
                const Dims &counts) {
  auto x = randomTensor<T>(dims, -100, 100);
  HostTensor<T> y(counts);
  KernelCall().tensor(x).tensor(y).attrs(starts).attrs(steps).run(weft_k_slice);
  for (int64_t i = 0; i < y.numel(); ++i) {
    Dims idx = unravel(i, counts);
    for (size_t d = 0; d < idx.size(); ++d)
      idx[d] = starts[d] + idx[d] * steps[d];
    ASSERT_EQ(y[i], x[ravel(idx, dims)]) << "at " << i;
  }
}

TEST(Slice, StepsIncludingNegative) {
  checkSlice<float>({10}, {2}, {1}, {5});
  checkSlice<float>({10}, {9}, {-1}, {10});          // reverse
  checkSlice<float>({10}, {8}, {-3}, {3});           // 8, 5, 2
  checkSlice<float>({4, 6}, {1, 0}, {1, 1}, {2, 6}); // rows
  checkSlice<float>({4, 6}, {3, 5}, {-2, -2}, {2, 3});
  checkSlice<int64_t>({3, 4, 5}, {0, 1, 4}, {2, 2, -1}, {2, 2, 5});
  checkSlice<int8_t>({5, 5}, {0, 1}, {1, 3}, {5, 2});
  checkSlice<float>({2, 3, 4}, {1, 2, 3}, {1, 1, 1}, {1, 1, 1});
  checkSlice<float>({64, 1024}, {0, 512}, {1, 1}, {64, 512}); // qkv split
}

template <class I>
void checkGather(const Dims &dims, int64_t axis, const Dims &idxDims,
                 const std::vector<I> &values) {
  auto data = randomTensor<float>(dims);
  HostTensor<I> indices(idxDims, values);
  Dims outDims(dims.begin(), dims.begin() + axis);
  outDims.insert(outDims.end(), idxDims.begin(), idxDims.end());
  outDims.insert(outDims.end(), dims.begin() + axis + 1, dims.end());
  HostTensor<float> y(outDims);
  KernelCall().tensor(data).tensor(indices).tensor(y).attr(axis).run(
      weft_k_gather);
  const size_t ir = idxDims.size();
  for (int64_t i = 0; i < y.numel(); ++i) {
    Dims oi = unravel(i, outDims);
    Dims ii(oi.begin() + axis, oi.begin() + axis + ir);
    int64_t v = static_cast<int64_t>(indices[ravel(ii, idxDims)]);
    if (v < 0)
      v += dims[axis];
    Dims xi(oi.begin(), oi.begin() + axis);
    xi.push_back(v);
    xi.insert(xi.end(), oi.begin() + axis + ir, oi.end());
    ASSERT_EQ(y[i], data[ravel(xi, dims)]) << "at " << i;
  }
}

TEST(Gather, AxesAndNegativeIndices) {
  checkGather<int64_t>({5, 3}, 0, {4}, {0, -1, 2, -5});
  checkGather<int64_t>({2, 5, 3}, 1, {2, 2}, {4, -2, 0, 1});
  checkGather<int32_t>({4, 6}, 1, {3}, {-6, 5, 0});
  checkGather<int64_t>({7}, 0, {}, {-3}); // scalar index
  // Embedding lookup.
  std::vector<int64_t> tokens(512);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<int64_t>((i * 37) % 1000);
  checkGather<int64_t>({1000, 64}, 0, {4, 128}, tokens);
}

TEST(GatherDeath, IndexOutOfRange) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(checkGather<int64_t>({5, 3}, 0, {2}, {1, 5}),
              testing::ExitedWithCode(2),
              "gather: index 5 out of range \\[-5, 5\\)");
  EXPECT_EXIT(checkGather<int32_t>({5, 3}, 1, {1}, {-4}),
              testing::ExitedWithCode(2),
              "gather: index -4 out of range \\[-3, 3\\)");
}

TEST(Expand, Broadcasts) {
  for (auto [xd, yd] :
       std::vector<std::pair<Dims, Dims>>{{{3, 1}, {2, 3, 4}},
                                          {{}, {5}},
                                          {{4}, {3, 4}},
                                          {{2, 1, 3}, {2, 4, 3}},
                                          {{1}, {1}}}) {
    auto x = randomTensor<int64_t>(xd, -9, 9);
    HostTensor<int64_t> y(yd);
    KernelCall().tensor(x).tensor(y).run(weft_k_expand);
    for (int64_t i = 0; i < y.numel(); ++i)
      ASSERT_EQ(y[i], x[broadcastIndex(unravel(i, yd), xd)]);
  }
}

TEST(Trilu, UpperAndLowerWithOffsets) {
  for (bool upper : {false, true})
    for (int64_t k : {-5, -1, 0, 1, 2, 7}) {
      Dims dims = {2, 4, 5};
      auto x = randomTensor<float>(dims, 1, 2);
      HostTensor<float> y(dims);
      KernelCall().tensor(x).tensor(y).attrs({upper, k}).run(weft_k_trilu);
      for (int64_t i = 0; i < y.numel(); ++i) {
        Dims idx = unravel(i, dims);
        int64_t r = idx[1], c = idx[2];
        bool keep = upper ? c - r >= k : c - r <= k;
        ASSERT_EQ(y[i], keep ? x[i] : 0.0f)
            << "upper " << upper << " k " << k << " at " << i;
      }
    }
}

TEST(Copy, Bytes) {
  auto x = randomTensor<int32_t>({3, 700000}, -5, 5);
  HostTensor<int32_t> y(x.dims);
  KernelCall().tensor(x).tensor(y).run(weft_k_copy);
  EXPECT_EQ(y.data, x.data);
  // Reshape-like copy between different dims of the same byte size.
  HostTensor<uint8_t> b({4}, {1, 2, 3, 4});
  HostTensor<uint8_t> c({2, 2});
  KernelCall().tensor(b).tensor(c).run(weft_k_copy);
  EXPECT_EQ(c.data, b.data);
}

} // namespace
