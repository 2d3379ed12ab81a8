//===- ElementwiseTest.cpp - unary, binary, compare and where kernels -----===//

#include "KernelTestUtil.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace weft::test;

namespace {

template <class T> HostTensor<T> runUnary(int64_t op, HostTensor<T> x) {
  HostTensor<T> y = HostTensor<T>::like(x.dims, x.dtype);
  KernelCall().tensor(x).tensor(y).attr(op).run(weft_k_unary);
  return y;
}

template <class T, class Ref>
void checkUnaryF(int64_t op, Ref ref, HostTensor<T> x, double rtol = 2e-6,
                 double atol = 1e-7) {
  HostTensor<T> y = runUnary(op, x);
  std::vector<T> expected(x.data.size());
  for (size_t i = 0; i < x.data.size(); ++i)
    expected[i] = static_cast<T>(ref(static_cast<double>(x.data[i])));
  expectClose(y.data, expected, rtol, atol);
}

/// Values covering the interesting ranges of the transcendental functions.
HostTensor<float> unaryInputs(bool positiveOnly) {
  std::vector<float> v = {0.0f,   -0.0f, 1e-8f,   -1e-8f, 1e-3f,  0.3f,   -0.7f,
                          1.0f,   -2.5f, 5.0f,    -9.5f,  20.0f,  -40.0f, 87.0f,
                          -87.0f, 88.5f, -103.0f, 200.0f, -200.0f};
  auto r = randomTensor<float>({100000}, -12.0, 12.0);
  v.insert(v.end(), r.data.begin(), r.data.end());
  if (positiveOnly)
    for (float &f : v)
      f = std::fabs(f) + 1e-6f;
  return HostTensor<float>({static_cast<int64_t>(v.size())}, v);
}

TEST(Unary, F32MatchesLibm) {
  HostTensor<float> x = unaryInputs(false);
  checkUnaryF(
      WEFT_UNARY_NEG, [](double v) { return -v; }, x, 0, 0);
  checkUnaryF(
      WEFT_UNARY_RELU, [](double v) { return v < 0 ? 0.0 : v; }, x, 0, 0);
  checkUnaryF(
      WEFT_UNARY_TANH, [](double v) { return std::tanh(v); }, x, 4e-7, 1e-7);
  checkUnaryF(
      WEFT_UNARY_ERF, [](double v) { return std::erf(v); }, x, 4e-7, 1e-7);
  checkUnaryF(
      WEFT_UNARY_SIGMOID, [](double v) { return 1.0 / (1.0 + std::exp(-v)); },
      x, 1e-6, 1e-30);
  checkUnaryF(
      WEFT_UNARY_EXP, [](double v) { return std::exp(v); }, x, 3e-7, 1e-37);
  checkUnaryF(
      WEFT_UNARY_SIN, [](double v) { return std::sin(v); }, x, 2e-7, 1e-30);
  checkUnaryF(
      WEFT_UNARY_COS, [](double v) { return std::cos(v); }, x, 2e-7, 1e-30);
  checkUnaryF(
      WEFT_UNARY_ATAN, [](double v) { return std::atan(v); }, x, 2e-7, 1e-30);
  checkUnaryF(
      WEFT_UNARY_FLOOR, [](double v) { return std::floor(v); }, x, 0, 0);
  checkUnaryF(
      WEFT_UNARY_CEIL, [](double v) { return std::ceil(v); }, x, 0, 0);
  checkUnaryF(
      WEFT_UNARY_ROUND, [](double v) { return std::nearbyint(v); }, x, 0, 0);
  // Round's ties go to even.
  HostTensor<float> ties({4}, {0.5f, 1.5f, -2.5f, 3.5f});
  EXPECT_EQ(runUnary(WEFT_UNARY_ROUND, ties).data,
            (std::vector<float>{0.0f, 2.0f, -2.0f, 4.0f}));
  HostTensor<float> pos = unaryInputs(true);
  checkUnaryF(
      WEFT_UNARY_SQRT, [](double v) { return std::sqrt(v); }, pos, 1e-7, 0);
  checkUnaryF(
      WEFT_UNARY_LOG, [](double v) { return std::log(v); }, pos, 1e-6, 1e-7);
}

TEST(Unary, F32SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor<float> x({5}, {inf, -inf, nan, 89.0f, -110.0f});
  HostTensor<float> e = runUnary(WEFT_UNARY_EXP, x);
  EXPECT_EQ(e[0], inf);
  EXPECT_EQ(e[1], 0.0f);
  EXPECT_TRUE(std::isnan(e[2]));
  EXPECT_EQ(e[3], inf);
  EXPECT_EQ(e[4], 0.0f);
  HostTensor<float> t = runUnary(WEFT_UNARY_TANH, x);
  EXPECT_EQ(t[0], 1.0f);
  EXPECT_EQ(t[1], -1.0f);
  EXPECT_TRUE(std::isnan(t[2]));
  HostTensor<float> s = runUnary(WEFT_UNARY_SIGMOID, x);
  EXPECT_EQ(s[0], 1.0f);
  EXPECT_EQ(s[1], 0.0f);
  EXPECT_EQ(s[4], 0.0f);
  // A tiny subnormal exp is still produced (gradual underflow).
  HostTensor<float> sub =
      runUnary(WEFT_UNARY_EXP, HostTensor<float>({1}, {-100.0f}));
  EXPECT_NEAR(sub[0], std::exp(-100.0), 1e-44);
  EXPECT_GT(sub[0], 0.0f);
}

TEST(Unary, F64AndIntegers) {
  auto x = randomTensor<double>({1000}, -5, 5);
  checkUnaryF(
      WEFT_UNARY_EXP, [](double v) { return std::exp(v); }, x, 1e-15, 0);
  checkUnaryF(
      WEFT_UNARY_SIGMOID, [](double v) { return 1.0 / (1.0 + std::exp(-v)); },
      x, 1e-14, 0);
  checkUnaryF(
      WEFT_UNARY_SIN, [](double v) { return std::sin(v); }, x, 0, 0);
  checkUnaryF(
      WEFT_UNARY_COS, [](double v) { return std::cos(v); }, x, 0, 0);
  checkUnaryF(
      WEFT_UNARY_ATAN, [](double v) { return std::atan(v); }, x, 0, 0);
  HostTensor<int64_t> i({4}, {-3, 0, 7, std::numeric_limits<int64_t>::min()});
  HostTensor<int64_t> neg = runUnary(WEFT_UNARY_NEG, i);
  EXPECT_EQ(neg.data, (std::vector<int64_t>{
                          3, 0, -7, std::numeric_limits<int64_t>::min()}));
  HostTensor<int32_t> j({3}, {-3, 0, 7});
  EXPECT_EQ(runUnary(WEFT_UNARY_RELU, j).data, (std::vector<int32_t>{0, 0, 7}));
}

TEST(Unary, BoolNot) {
  BoolTensor x = makeBool({4}, {0, 1, 1, 0});
  BoolTensor y = runUnary(WEFT_UNARY_NOT, x);
  EXPECT_EQ(y.data, (std::vector<uint8_t>{1, 0, 0, 1}));
}

TEST(UnaryDeath, UnsupportedDType) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        HostTensor<int64_t> x({2}, {1, 2});
        runUnary(WEFT_UNARY_EXP, x);
      },
      testing::ExitedWithCode(1), "unary");
}

//===-- binary ------------------------------------------------------------===//

template <class T> using BinRef = std::function<T(T, T)>;

template <class T>
HostTensor<T> runBinary(int64_t op, HostTensor<T> &a, HostTensor<T> &b,
                        const Dims &outDims) {
  HostTensor<T> c = HostTensor<T>::like(outDims, a.dtype);
  KernelCall().tensor(a).tensor(b).tensor(c).attr(op).run(weft_k_binary);
  return c;
}

template <class T>
std::vector<T> referenceBinary(const HostTensor<T> &a, const HostTensor<T> &b,
                               const Dims &outDims, const BinRef<T> &f) {
  std::vector<T> out(static_cast<size_t>(numelOf(outDims)));
  for (int64_t i = 0; i < numelOf(outDims); ++i) {
    Dims idx = unravel(i, outDims);
    out[i] = f(a[broadcastIndex(idx, a.dims)], b[broadcastIndex(idx, b.dims)]);
  }
  return out;
}

struct ShapeCase {
  Dims a, b, out;
};

const std::vector<ShapeCase> &broadcastCases() {
  static const std::vector<ShapeCase> cases = {
      {{7, 5}, {7, 5}, {7, 5}},                   // same shape
      {{7, 5}, {}, {7, 5}},                       // rank-0 scalar
      {{1}, {6, 3}, {6, 3}},                      // one-element left
      {{4, 6}, {6}, {4, 6}},                      // trailing row (bias)
      {{2, 3, 4, 5}, {3, 1, 1}, {2, 3, 4, 5}},    // per channel
      {{3, 1, 5}, {4, 1}, {3, 4, 5}},             // both broadcast
      {{4, 1}, {1, 6}, {4, 6}},                   // outer product
      {{2, 1, 3, 1}, {1, 5, 1, 2}, {2, 5, 3, 2}}, // alternating
      {{}, {}, {}},                               // scalars
      {{64, 1024}, {1024}, {64, 1024}},           // large: parallel
      {{300000}, {300000}, {300000}},             // large same shape
      {{8, 128, 64}, {8, 1, 64}, {8, 128, 64}},   // middle broadcast
  };
  return cases;
}

TEST(Binary, F32AllOpsBroadcasting) {
  const std::vector<std::pair<int64_t, BinRef<float>>> ops = {
      {WEFT_BINARY_ADD, [](float x, float y) { return x + y; }},
      {WEFT_BINARY_SUB, [](float x, float y) { return x - y; }},
      {WEFT_BINARY_MUL, [](float x, float y) { return x * y; }},
      {WEFT_BINARY_DIV, [](float x, float y) { return x / y; }},
      {WEFT_BINARY_MAX, [](float x, float y) { return x > y ? x : y; }},
      {WEFT_BINARY_MIN, [](float x, float y) { return x < y ? x : y; }},
      {WEFT_BINARY_POW,
       [](float x, float y) { return std::pow(std::fabs(x), y); }},
  };
  for (const ShapeCase &sc : broadcastCases()) {
    auto a = randomTensor<float>(sc.a, 0.1, 3.0);
    auto b = randomTensor<float>(sc.b, 0.5, 2.0);
    for (const auto &[op, f] : ops) {
      SCOPED_TRACE(op);
      auto c = runBinary(op, a, b, sc.out);
      expectClose(c.data, referenceBinary<float>(a, b, sc.out, f), 0, 0);
    }
  }
}

TEST(Binary, F32PowScalarExponents) {
  auto a = randomTensor<float>({1000}, 0.0, 4.0);
  a[0] = 0.0f;
  for (float e : {2.0f, 0.5f, 3.0f, 1.0f, -1.0f, 1.7f}) {
    HostTensor<float> b({}, {e});
    auto c = runBinary(WEFT_BINARY_POW, a, b, a.dims);
    expectClose(
        c.data,
        referenceBinary<float>(a, b, a.dims,
                               [](float x, float y) { return std::pow(x, y); }),
        2e-7, 0);
  }
}

TEST(Binary, F64Ops) {
  auto a = randomTensor<double>({5, 4}, -3, 3);
  auto b = randomTensor<double>({4}, 0.5, 2);
  auto c = runBinary(WEFT_BINARY_DIV, a, b, a.dims);
  expectClose(c.data,
              referenceBinary<double>(a, b, a.dims,
                                      [](double x, double y) { return x / y; }),
              0, 0);
}

TEST(Binary, IntegerDivTruncatesAndPow) {
  HostTensor<int64_t> a({6}, {7, -7, 7, -7, 0, 9});
  HostTensor<int64_t> b({6}, {2, 2, -2, -2, 5, -1});
  EXPECT_EQ(runBinary(WEFT_BINARY_DIV, a, b, a.dims).data,
            (std::vector<int64_t>{3, -3, -3, 3, 0, -9}));
  HostTensor<int64_t> base({5}, {2, -3, 5, 1, 2});
  HostTensor<int64_t> ex({5}, {10, 3, 0, -4, -1});
  EXPECT_EQ(runBinary(WEFT_BINARY_POW, base, ex, base.dims).data,
            (std::vector<int64_t>{1024, -27, 1, 1, 0}));
  HostTensor<int32_t> c({4}, {5, -5, 100, -100});
  HostTensor<int32_t> d({}, {3});
  EXPECT_EQ(runBinary(WEFT_BINARY_DIV, c, d, c.dims).data,
            (std::vector<int32_t>{1, -1, 33, -33}));
  EXPECT_EQ(runBinary(WEFT_BINARY_SUB, c, d, c.dims).data,
            (std::vector<int32_t>{2, -8, 97, -103}));
  EXPECT_EQ(runBinary(WEFT_BINARY_MAX, c, d, c.dims).data,
            (std::vector<int32_t>{5, 3, 100, 3}));
}

// The remainder is exact where a - b * trunc(a / b) is not: large
// quotients, infinite divisors, signed zeros.
TEST(Binary, FloatRemainderIsExact) {
  const float inf = std::numeric_limits<float>::infinity();
  HostTensor<float> a({8}, {7.5f, -7.5f, 7.5f, 1e10f, 3.0f, -0.0f, inf, 5.0f});
  HostTensor<float> b({8}, {2.0f, 2.0f, -2.0f, 3.0f, inf, 2.0f, 2.0f, 0.0f});
  auto c = runBinary(WEFT_BINARY_REM, a, b, a.dims);
  EXPECT_EQ(c.data[0], 1.5f);
  EXPECT_EQ(c.data[1], -1.5f);
  EXPECT_EQ(c.data[2], 1.5f);
  EXPECT_EQ(c.data[3], 1.0f); // 1e10f = 10000000000 = 3 * 3333333333 + 1
  EXPECT_EQ(c.data[4], 3.0f);
  EXPECT_EQ(c.data[5], 0.0f);
  EXPECT_TRUE(std::signbit(c.data[5]));
  EXPECT_TRUE(std::isnan(c.data[6]));
  EXPECT_TRUE(std::isnan(c.data[7]));
  HostTensor<double> x({2}, {1e300, -5.25});
  HostTensor<double> y({}, {7.0});
  EXPECT_EQ(runBinary(WEFT_BINARY_REM, x, y, x.dims).data,
            (std::vector<double>{std::fmod(1e300, 7.0), -5.25}));
}

TEST(Binary, IntegerRemainderTruncates) {
  HostTensor<int64_t> a({6},
                        {7, -7, 7, -7, std::numeric_limits<int64_t>::min(), 9});
  HostTensor<int64_t> b({6}, {3, 3, -3, -3, -1, 1});
  EXPECT_EQ(runBinary(WEFT_BINARY_REM, a, b, a.dims).data,
            (std::vector<int64_t>{1, -1, 1, -1, 0, 0}));
  HostTensor<int32_t> c({3}, {5, -5, 100});
  HostTensor<int32_t> d({}, {3});
  EXPECT_EQ(runBinary(WEFT_BINARY_REM, c, d, c.dims).data,
            (std::vector<int32_t>{2, -2, 1}));
}

TEST(BinaryDeath, IntegerRemainderByZero) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        HostTensor<int32_t> a({2}, {1, 2});
        HostTensor<int32_t> b({2}, {1, 0});
        runBinary(WEFT_BINARY_REM, a, b, a.dims);
      },
      testing::ExitedWithCode(2), "remainder by zero");
}

TEST(Binary, I64AllOpsBroadcasting) {
  for (const ShapeCase &sc : broadcastCases()) {
    auto a = randomTensor<int64_t>(sc.a, -50, 50);
    auto b = randomTensor<int64_t>(sc.b, 1, 9);
    auto c = runBinary(WEFT_BINARY_MUL, a, b, sc.out);
    EXPECT_EQ(c.data,
              referenceBinary<int64_t>(
                  a, b, sc.out, [](int64_t x, int64_t y) { return x * y; }));
    c = runBinary(WEFT_BINARY_DIV, a, b, sc.out);
    EXPECT_EQ(c.data,
              referenceBinary<int64_t>(
                  a, b, sc.out, [](int64_t x, int64_t y) { return x / y; }));
  }
}

TEST(BinaryDeath, IntegerDivisionByZero) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        HostTensor<int64_t> a({2}, {1, 2});
        HostTensor<int64_t> b({2}, {1, 0});
        runBinary(WEFT_BINARY_DIV, a, b, a.dims);
      },
      testing::ExitedWithCode(2), "division by zero");
}

TEST(Binary, BoolAndOr) {
  BoolTensor a = makeBool({2, 2}, {0, 0, 1, 1});
  BoolTensor b = makeBool({2}, {0, 1});
  BoolTensor c = makeBool({2, 2});
  KernelCall()
      .tensor(a)
      .tensor(b)
      .tensor(c)
      .attr(WEFT_BINARY_AND)
      .run(weft_k_binary);
  EXPECT_EQ(c.data, (std::vector<uint8_t>{0, 0, 0, 1}));
  KernelCall()
      .tensor(a)
      .tensor(b)
      .tensor(c)
      .attr(WEFT_BINARY_OR)
      .run(weft_k_binary);
  EXPECT_EQ(c.data, (std::vector<uint8_t>{0, 1, 1, 1}));
}

//===-- compare -----------------------------------------------------------===//

template <class T>
void checkCompare(HostTensor<T> a, HostTensor<T> b, const Dims &out,
                  std::function<float(T)> widen) {
  const std::vector<std::pair<int64_t, std::function<bool(float, float)>>> ops =
      {{WEFT_CMP_EQ, [](float x, float y) { return x == y; }},
       {WEFT_CMP_LT, [](float x, float y) { return x < y; }},
       {WEFT_CMP_GT, [](float x, float y) { return x > y; }},
       {WEFT_CMP_LE, [](float x, float y) { return x <= y; }},
       {WEFT_CMP_GE, [](float x, float y) { return x >= y; }}};
  for (const auto &[op, f] : ops) {
    BoolTensor c = makeBool(out);
    KernelCall().tensor(a).tensor(b).tensor(c).attr(op).run(weft_k_compare);
    for (int64_t i = 0; i < c.numel(); ++i) {
      Dims idx = unravel(i, out);
      bool e = f(widen(a[broadcastIndex(idx, a.dims)]),
                 widen(b[broadcastIndex(idx, b.dims)]));
      ASSERT_EQ(c[i], e ? 1 : 0) << "op " << op << " at " << i;
    }
  }
}

TEST(Compare, AllOpsAndDTypes) {
  auto a = randomTensor<int64_t>({3, 4, 5}, -2, 2);
  auto b = randomTensor<int64_t>({4, 1}, -2, 2);
  checkCompare<int64_t>(a, b, {3, 4, 5},
                        [](int64_t v) { return static_cast<float>(v); });
  HostTensor<float> af(a.dims), bf(b.dims);
  for (int64_t i = 0; i < a.numel(); ++i)
    af[i] = static_cast<float>(a[i]) * 0.5f;
  for (int64_t i = 0; i < b.numel(); ++i)
    bf[i] = static_cast<float>(b[i]) * 0.5f;
  checkCompare<float>(af, bf, {3, 4, 5}, [](float v) { return v; });
  // f16: 0x3c00 = 1.0, 0xbc00 = -1.0, 0x0000 = 0, 0x8000 = -0.
  HostTensor<uint16_t> ah({4}, {0x3c00, 0xbc00, 0x0000, 0x8000}, WEFT_F16);
  HostTensor<uint16_t> bh({}, {0x0000}, WEFT_F16);
  checkCompare<uint16_t>(ah, bh, {4}, [](uint16_t v) {
    return v == 0x3c00 ? 1.0f : v == 0xbc00 ? -1.0f : 0.0f;
  });
  HostTensor<int32_t> ai({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor<int32_t> bi({3}, {2, 2, 7});
  checkCompare<int32_t>(ai, bi, {2, 3},
                        [](int32_t v) { return static_cast<float>(v); });
}

//===-- where -------------------------------------------------------------===//

template <class T>
void checkWhere(const Dims &cd, const Dims &xd, const Dims &yd,
                const Dims &out) {
  BoolTensor cond = makeBool(cd);
  for (auto &v : cond.data)
    v = static_cast<uint8_t>(rng()() & 1);
  auto x = randomTensor<T>(xd, -100, 100);
  auto y = randomTensor<T>(yd, -100, 100);
  HostTensor<T> z(out);
  KernelCall().tensor(cond).tensor(x).tensor(y).tensor(z).run(weft_k_where);
  for (int64_t i = 0; i < z.numel(); ++i) {
    Dims idx = unravel(i, out);
    T e = cond[broadcastIndex(idx, cd)] ? x[broadcastIndex(idx, xd)]
                                        : y[broadcastIndex(idx, yd)];
    ASSERT_EQ(z[i], e) << "at " << i;
  }
}

TEST(Where, Broadcasting) {
  checkWhere<float>({4, 5}, {4, 5}, {4, 5}, {4, 5});
  checkWhere<float>({4, 1}, {1, 5}, {}, {4, 5});
  checkWhere<float>({5}, {3, 1, 5}, {2, 1}, {3, 2, 5});
  checkWhere<int64_t>({1, 7}, {6, 7}, {6, 1}, {6, 7});
  checkWhere<int8_t>({2, 3}, {3}, {2, 3}, {2, 3});
  checkWhere<float>({256, 512}, {512}, {256, 512}, {256, 512});
  // Causal-mask style: [S, S] condition over [B, H, S, S] scores.
  checkWhere<float>({16, 16}, {2, 3, 16, 16}, {}, {2, 3, 16, 16});
  // Per-element condition with one or both sides broadcast along rows.
  checkWhere<float>({6, 33}, {}, {6, 33}, {6, 33});
  checkWhere<int64_t>({6, 33}, {6, 1}, {1}, {6, 33});
}

} // namespace
