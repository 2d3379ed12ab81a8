//===- CastTest.cpp - cast kernel and the 16-bit float conversions --------===//

#include "KernelTestUtil.h"
#include "weft/runtime/Float16.h"

#include <cstring>
#include <limits>

using namespace weft;
using namespace weft::test;

namespace {

/// Reference half -> double by the definition of binary16.
double halfValue(uint16_t h) {
  int sign = (h >> 15) ? -1 : 1;
  int exp = (h >> 10) & 0x1f;
  int mant = h & 0x3ff;
  if (exp == 0x1f)
    return mant ? std::numeric_limits<double>::quiet_NaN()
                : sign * std::numeric_limits<double>::infinity();
  if (exp == 0)
    return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

TEST(Float16, HalfToFloatIsExactForAllCodes) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = halfToFloat(static_cast<uint16_t>(h));
    double e = halfValue(static_cast<uint16_t>(h));
    if (std::isnan(e)) {
      ASSERT_TRUE(std::isnan(f)) << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), e) << h;
    ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << h;
    // And back: every non-NaN half round-trips.
    ASSERT_EQ(floatToHalf(f), h) << h;
  }
}

TEST(Float16, FloatToHalfRoundsToNearestEven) {
  // Exhaustive over the floats between consecutive positive halves (sampled
  // finely): the result must be the nearest half, ties to the even code.
  for (uint32_t h = 0; h < 0x7bff; h += 7) {
    double lo = halfValue(static_cast<uint16_t>(h));
    double hi = halfValue(static_cast<uint16_t>(h + 1));
    for (int k = 0; k <= 16; ++k) {
      float f = static_cast<float>(lo + (hi - lo) * k / 16.0);
      double df = f;
      uint16_t expect;
      if (df - lo < hi - df)
        expect = static_cast<uint16_t>(h);
      else if (df - lo > hi - df)
        expect = static_cast<uint16_t>(h + 1);
      else
        expect = static_cast<uint16_t>((h & 1) ? h + 1 : h);
      ASSERT_EQ(floatToHalf(f), expect) << "h=" << h << " k=" << k;
      ASSERT_EQ(floatToHalf(-f), expect | 0x8000u);
    }
  }
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000); // tie to even 0
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(floatToHalf(1e-30f), 0x0000);
  uint16_t nan = floatToHalf(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
}

TEST(Float16, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(floatToBFloat16(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(floatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6: rounds up.
  EXPECT_EQ(floatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(
      floatToBFloat16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)),
      0x3f81);
  EXPECT_EQ(floatToBFloat16(-2.0f), 0xc000);
  EXPECT_EQ(floatToBFloat16(std::numeric_limits<float>::max()), 0x7f80);
  uint16_t nan = floatToBFloat16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(nan)));
  EXPECT_EQ(bfloat16ToFloat(0x4049), 3.140625f);
}

/// Runs cast from `src` (dtype `sd`, elements of S) to dtype `dd` stored in
/// D, element by element.
template <class D, class S>
std::vector<D> runCast(const std::vector<S> &src, int64_t sd, int64_t dd) {
  HostTensor<S> x = HostTensor<S>::like({static_cast<int64_t>(src.size())}, sd);
  x.data = src;
  HostTensor<D> y = HostTensor<D>::like(x.dims, dd);
  KernelCall().tensor(x).tensor(y).run(weft_k_cast);
  return y.data;
}

TEST(Cast, BetweenFloatTypes) {
  std::vector<float> v = {0.0f,  -1.5f,     3.14159f, 65504.0f,
                          1e-6f, -70000.0f, 0.1f};
  std::vector<uint16_t> h = runCast<uint16_t>(v, WEFT_F32, WEFT_F16);
  std::vector<uint16_t> b = runCast<uint16_t>(v, WEFT_F32, WEFT_BF16);
  std::vector<double> d = runCast<double>(v, WEFT_F32, WEFT_F64);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(h[i], floatToHalf(v[i]));
    EXPECT_EQ(b[i], floatToBFloat16(v[i]));
    EXPECT_EQ(d[i], static_cast<double>(v[i]));
  }
  std::vector<float> back = runCast<float>(h, WEFT_F16, WEFT_F32);
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(back[i], halfToFloat(h[i]));
  std::vector<uint16_t> hb = runCast<uint16_t>(h, WEFT_F16, WEFT_BF16);
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(hb[i], floatToBFloat16(halfToFloat(h[i])));
  std::vector<float> fromBf = runCast<float>(b, WEFT_BF16, WEFT_F32);
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(fromBf[i], bfloat16ToFloat(b[i]));
}

TEST(Cast, FloatsToIntegersTruncate) {
  std::vector<float> v = {2.7f, -2.7f, 0.0f, 1e3f, -0.5f};
  EXPECT_EQ(runCast<int64_t>(v, WEFT_F32, WEFT_I64),
            (std::vector<int64_t>{2, -2, 0, 1000, 0}));
  EXPECT_EQ(runCast<int32_t>(v, WEFT_F32, WEFT_I32),
            (std::vector<int32_t>{2, -2, 0, 1000, 0}));
  EXPECT_EQ(runCast<uint8_t>(v, WEFT_F32, WEFT_BOOL),
            (std::vector<uint8_t>{1, 1, 0, 1, 1}));
  std::vector<uint16_t> h = {floatToHalf(-3.75f), floatToHalf(100.5f)};
  EXPECT_EQ(runCast<int64_t>(h, WEFT_F16, WEFT_I64),
            (std::vector<int64_t>{-3, 100}));
  std::vector<double> d = {1e300, -1e300};
  EXPECT_EQ(runCast<int32_t>(d, WEFT_F64, WEFT_I32),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min()}));
}

TEST(Cast, IntegersAndBools) {
  std::vector<int64_t> v = {0, 1, -1, 3000000000LL, -7, 255};
  EXPECT_EQ(runCast<int32_t>(v, WEFT_I64, WEFT_I32),
            (std::vector<int32_t>{0, 1, -1, static_cast<int32_t>(3000000000LL),
                                  -7, 255}));
  EXPECT_EQ(runCast<float>(v, WEFT_I64, WEFT_F32),
            (std::vector<float>{0, 1, -1, 3e9f, -7, 255}));
  EXPECT_EQ(runCast<uint8_t>(v, WEFT_I64, WEFT_BOOL),
            (std::vector<uint8_t>{0, 1, 1, 1, 1, 1}));
  std::vector<uint16_t> h = runCast<uint16_t>(v, WEFT_I64, WEFT_F16);
  EXPECT_EQ(h[1], floatToHalf(1.0f));
  EXPECT_EQ(h[3], 0x7c00); // too large for half: inf
  std::vector<uint16_t> bf = runCast<uint16_t>(v, WEFT_I64, WEFT_BF16);
  EXPECT_EQ(bf[5], floatToBFloat16(255.0f));
  std::vector<int32_t> w = {5, -5, 0};
  EXPECT_EQ(runCast<int64_t>(w, WEFT_I32, WEFT_I64),
            (std::vector<int64_t>{5, -5, 0}));
  EXPECT_EQ(runCast<uint8_t>(w, WEFT_I32, WEFT_BOOL),
            (std::vector<uint8_t>{1, 1, 0}));
  std::vector<uint8_t> b = {0, 1, 1};
  EXPECT_EQ(runCast<float>(b, WEFT_BOOL, WEFT_F32),
            (std::vector<float>{0, 1, 1}));
  EXPECT_EQ(runCast<int64_t>(b, WEFT_BOOL, WEFT_I64),
            (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(runCast<int32_t>(b, WEFT_BOOL, WEFT_I32),
            (std::vector<int32_t>{0, 1, 1}));
  EXPECT_EQ(runCast<uint16_t>(b, WEFT_BOOL, WEFT_F16),
            (std::vector<uint16_t>{0, 0x3c00, 0x3c00}));
  EXPECT_EQ(runCast<uint16_t>(b, WEFT_BOOL, WEFT_BF16),
            (std::vector<uint16_t>{0, 0x3f80, 0x3f80}));
  std::vector<uint16_t> hb = {0x0000, 0x8000, 0x3c00};
  EXPECT_EQ(runCast<uint8_t>(hb, WEFT_F16, WEFT_BOOL),
            (std::vector<uint8_t>{0, 0, 1}));
}

TEST(Cast, LargeTensorSameAsScalarPath) {
  auto x = randomTensor<float>({200000}, -1000, 1000);
  HostTensor<uint16_t> y(x.dims, WEFT_F16);
  KernelCall().tensor(x).tensor(y).run(weft_k_cast);
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_EQ(y[i], floatToHalf(x[i])) << i;
  HostTensor<int64_t> z(x.dims);
  KernelCall().tensor(x).tensor(z).run(weft_k_cast);
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_EQ(z[i], static_cast<int64_t>(x[i])) << i;
}

} // namespace
