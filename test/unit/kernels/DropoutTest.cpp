// weft_k_dropout: the masks are fixed numbers of (seed, step, stream,
// position) (golden bits that test/train/check_training.py's numpy Philox
// reproduces), kept elements are scaled and the others zero, about 1 - ratio
// of them are kept, and a block of the tensor drawn at its offsets is the
// whole tensor's block (what every parallel plan relies on).
#include "KernelTestUtil.h"

#include <cmath>

using namespace weft::test;

namespace {

struct Dropped {
  HostTensor<float> y;
  BoolTensor mask;
};

Dropped runDropout(HostTensor<float> &x, double ratio, int64_t step,
                   int64_t seed, int64_t stream, std::vector<int64_t> offsets,
                   const Dims &global) {
  HostTensor<int64_t> stepT(Dims{}, {step});
  HostTensor<int64_t> offsetsT(Dims{static_cast<int64_t>(offsets.size())},
                               offsets);
  Dropped r{HostTensor<float>(x.dims), makeBool(x.dims)};
  KernelCall()
      .tensor(x)
      .tensor(stepT)
      .tensor(offsetsT)
      .tensor(r.y)
      .tensor(r.mask)
      .attrDouble(ratio)
      .attr(seed)
      .attr(stream)
      .attrs(global)
      .run(weft_k_dropout);
  return r;
}

Dropped whole(HostTensor<float> &x, double ratio, int64_t step, int64_t seed,
              int64_t stream) {
  return runDropout(x, ratio, step, seed, stream,
                    std::vector<int64_t>(x.dims.size(), 0), x.dims);
}

TEST(Dropout, GoldenMasks) {
  HostTensor<float> ones(Dims{16}, std::vector<float>(16, 1.0f));
  const std::vector<uint8_t> first = {0, 1, 1, 1, 1, 0, 1, 0,
                                      0, 0, 0, 0, 1, 0, 1, 0};
  const std::vector<uint8_t> later = {1, 0, 0, 0, 1, 1, 1, 1,
                                      1, 1, 0, 0, 1, 1, 0, 0};
  EXPECT_EQ(whole(ones, 0.5, 0, 0, 0).mask.data, first);
  EXPECT_EQ(whole(ones, 0.5, 3, 7, 1).mask.data, later);
}

TEST(Dropout, ScalesKeptZeroesDropped) {
  auto x = randomTensor<float>({200, 500}, -2, 2);
  for (double ratio : {0.1, 0.5, 0.9}) {
    Dropped d = whole(x, ratio, 5, 42, 3);
    int64_t kept = 0;
    const float scale = float(1.0 / (1.0 - ratio));
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (d.mask[i]) {
        ++kept;
        ASSERT_EQ(d.y[i], x[i] * scale) << i;
      } else {
        ASSERT_EQ(d.y[i], 0.0f) << i;
      }
    }
    // 100000 draws: the kept share is within 1% of 1 - ratio.
    EXPECT_NEAR(double(kept) / double(x.numel()), 1.0 - ratio, 0.01)
        << "ratio " << ratio;
  }
}

TEST(Dropout, StepStreamAndSeedDrawAnew) {
  auto x = randomTensor<float>({64, 64});
  const BoolTensor base = whole(x, 0.5, 0, 0, 0).mask;
  EXPECT_EQ(whole(x, 0.5, 0, 0, 0).mask.data, base.data); // deterministic
  for (auto [step, seed, stream] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 0, 0},
        {0, 1, 0},
        {0, 0, 1},
        {0, int64_t(1) << 40, 0}}) {
    const BoolTensor other = whole(x, 0.5, step, seed, stream).mask;
    int64_t same = 0;
    for (int64_t i = 0; i < x.numel(); ++i)
      same += other[i] == base[i];
    // Independent halves agree on about half of the 4096 elements.
    EXPECT_NEAR(double(same) / double(x.numel()), 0.5, 0.05)
        << "step " << step << " seed " << seed << " stream " << stream;
  }
}

TEST(Dropout, BlocksDrawTheWholeTensorsMasks) {
  const Dims global = {6, 10, 3};
  auto x = randomTensor<float>(global);
  Dropped full = whole(x, 0.3, 2, 9, 4);
  // Rows [2, 5), columns [5, 10): a dp x tp block.
  HostTensor<float> block(Dims{3, 5, 3});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t k = 0; k < 3; ++k)
        block[(i * 5 + j) * 3 + k] = x[((i + 2) * 10 + j + 5) * 3 + k];
  Dropped part = runDropout(block, 0.3, 2, 9, 4, {2, 5, 0}, global);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t k = 0; k < 3; ++k) {
        const int64_t at = ((i + 2) * 10 + j + 5) * 3 + k;
        const int64_t local = (i * 5 + j) * 3 + k;
        ASSERT_EQ(part.mask[local], full.mask[at]) << i << "," << j << "," << k;
        ASSERT_EQ(part.y[local], full.y[at]);
      }
}

TEST(Dropout, RejectsBlocksOutsideTheWhole) {
  auto x = randomTensor<float>({4, 4});
  EXPECT_DEATH(runDropout(x, 0.5, 0, 0, 0, {2, 0}, Dims{5, 4}),
               "outside the global shape");
  EXPECT_DEATH(runDropout(x, 1.0, 0, 0, 0, {0, 0}, Dims{4, 4}),
               "ratio must be in");
}

} // namespace
