// weft_k_random: the numbers are fixed functions of (seed, step, stream,
// position) (golden values that test/tools/weft_tools.py's weft_random
// reproduces), uniform ones lie in [a, b) and normal ones have the asked
// mean and deviation, `like`'s values and type are not read, and a block
// drawn at its offsets is the whole tensor's block (what every parallel plan
// relies on).
#include "KernelTestUtil.h"

#include <cmath>

using namespace weft::test;

namespace {

template <class T, class L>
HostTensor<T> runRandom(HostTensor<L> &like, bool normal, double a, double b,
                        int64_t step, int64_t seed, int64_t stream,
                        std::vector<int64_t> offsets, const Dims &global) {
  HostTensor<int64_t> stepT(Dims{}, {step});
  HostTensor<int64_t> offsetsT(Dims{static_cast<int64_t>(offsets.size())},
                               offsets);
  HostTensor<T> y(like.dims);
  KernelCall()
      .tensor(like)
      .tensor(stepT)
      .tensor(offsetsT)
      .tensor(y)
      .attr(normal ? 1 : 0)
      .attrDouble(a)
      .attrDouble(b)
      .attr(seed)
      .attr(stream)
      .attrs(global)
      .run(weft_k_random);
  return y;
}

template <class T = float, class L>
HostTensor<T> whole(HostTensor<L> &like, bool normal, double a, double b,
                    int64_t step = 0, int64_t seed = 0, int64_t stream = 0) {
  return runRandom<T>(like, normal, a, b, step, seed, stream,
                      std::vector<int64_t>(like.dims.size(), 0), like.dims);
}

TEST(Random, GoldenNumbers) {
  HostTensor<float> like(Dims{4}, std::vector<float>(4, 0.0f));
  // weft_tools.weft_random((4,), "uniform", 0, 1, 0, 0) and
  // weft_random((4,), "normal", 0, 1, 3, 1, seed=7), rounded to f32.
  const std::vector<float> uniform = {0.39904642f, 0.88052016f, 0.73571277f,
                                      0.6054818f};
  const std::vector<float> normal = {-0.31296945f, -0.5125968f, 0.62747777f,
                                     0.48534366f};
  EXPECT_EQ(whole(like, false, 0.0, 1.0).data, uniform);
  EXPECT_EQ(whole(like, true, 0.0, 1.0, 3, 7, 1).data, normal);
}

TEST(Random, UniformInRangeWithItsMoments) {
  HostTensor<float> like(Dims{300, 400});
  HostTensor<double> y = whole<double>(like, false, -2.0, 3.0, 4, 11, 2);
  double sum = 0, squares = 0, lo = 1e300, hi = -1e300;
  for (double v : y.data) {
    sum += v;
    squares += v * v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const double n = double(y.numel()), mean = sum / n;
  EXPECT_GE(lo, -2.0);
  EXPECT_LT(hi, 3.0);
  EXPECT_LT(lo, -1.99); // 120000 draws reach near both ends
  EXPECT_GT(hi, 2.99);
  // Mean 0.5 (sd of the mean 5/sqrt(12 n) = 0.004), variance 25/12.
  EXPECT_NEAR(mean, 0.5, 0.02);
  EXPECT_NEAR(squares / n - mean * mean, 25.0 / 12.0, 0.05);
}

TEST(Random, NormalWithItsMoments) {
  HostTensor<float> like(Dims{300, 401});
  HostTensor<float> y = whole(like, true, 1.5, 2.0, 4, 11, 2);
  double sum = 0, squares = 0, cubes = 0, beyond2 = 0;
  for (float v : y.data) {
    const double z = (double(v) - 1.5) / 2.0;
    sum += z;
    squares += z * z;
    cubes += z * z * z;
    beyond2 += std::fabs(z) > 2.0;
  }
  const double n = double(y.numel());
  EXPECT_NEAR(sum / n, 0.0, 0.015);
  EXPECT_NEAR(squares / n, 1.0, 0.02);
  EXPECT_NEAR(cubes / n, 0.0, 0.05);
  // P(|z| > 2) = 0.0455.
  EXPECT_NEAR(beyond2 / n, 0.0455, 0.004);
}

TEST(Random, LikeIsOnlyAShape) {
  HostTensor<float> floats = randomTensor<float>({5, 7});
  HostTensor<int64_t> ints(Dims{5, 7}, std::vector<int64_t>(35, 9));
  EXPECT_EQ(whole(floats, true, 0.0, 1.0, 1).data,
            whole(ints, true, 0.0, 1.0, 1).data);
}

TEST(Random, StepStreamAndSeedDrawAnew) {
  HostTensor<float> like(Dims{64, 64});
  const HostTensor<float> base = whole(like, false, 0.0, 1.0);
  EXPECT_EQ(whole(like, false, 0.0, 1.0).data, base.data); // deterministic
  for (auto [step, seed, stream] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 0, 0},
        {0, 1, 0},
        {0, 0, 1},
        {0, int64_t(1) << 40, 0}}) {
    const HostTensor<float> other =
        whole(like, false, 0.0, 1.0, step, seed, stream);
    int64_t below = 0;
    for (int64_t i = 0; i < like.numel(); ++i)
      below += other[i] < base[i];
    // Independent draws: each is below the other about half the time.
    EXPECT_NEAR(double(below) / double(like.numel()), 0.5, 0.05)
        << "step " << step << " seed " << seed << " stream " << stream;
  }
}

TEST(Random, BlocksDrawTheWholeTensorsNumbers) {
  const Dims global = {6, 10, 3};
  HostTensor<float> full(global);
  for (bool normal : {false, true}) {
    HostTensor<float> all = whole(full, normal, 0.0, 1.0, 2, 9, 4);
    // Rows [2, 5), columns [5, 10): a dp x tp block.
    HostTensor<float> block(Dims{3, 5, 3});
    HostTensor<float> part =
        runRandom<float>(block, normal, 0.0, 1.0, 2, 9, 4, {2, 5, 0}, global);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j)
        for (int64_t k = 0; k < 3; ++k)
          ASSERT_EQ(part[(i * 5 + j) * 3 + k],
                    all[((i + 2) * 10 + j + 5) * 3 + k])
              << normal << ": " << i << "," << j << "," << k;
  }
}

TEST(Random, RejectsBadCalls) {
  HostTensor<float> like(Dims{4, 4});
  EXPECT_DEATH(runRandom<float>(like, false, 0, 1, 0, 0, 0, {2, 0}, {5, 4}),
               "outside the global shape");
  EXPECT_DEATH(runRandom<float>(like, true, 0, -1, 0, 0, 0, {0, 0}, {4, 4}),
               "normal scale");
  HostTensor<int64_t> ints(Dims{4, 4});
  EXPECT_DEATH(whole<int64_t>(ints, false, 0.0, 1.0), "dtype");
}

} // namespace
