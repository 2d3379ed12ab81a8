//===- NormalizationTest.cpp - batch_norm, layer_norm and softmax kernels -===//

#include "KernelTestUtil.h"

#include <cmath>

using namespace weft::test;

namespace {

TEST(BatchNorm, PerChannelAffine) {
  for (Dims dims : {Dims{2, 3, 4, 5}, Dims{3, 4}, Dims{2, 64, 30, 30}}) {
    const int64_t c = dims[1];
    auto x = randomTensor<float>(dims);
    auto scale = randomTensor<float>({c});
    auto bias = randomTensor<float>({c});
    auto mean = randomTensor<float>({c});
    auto var = randomTensor<float>({c}, 0.1, 2.0);
    HostTensor<float> y(dims);
    const double eps = 1e-5;
    KernelCall()
        .tensor(x)
        .tensor(scale)
        .tensor(bias)
        .tensor(mean)
        .tensor(var)
        .tensor(y)
        .attrDouble(eps)
        .run(weft_k_batch_norm);
    std::vector<float> e(x.data.size());
    const int64_t inner = x.numel() / (dims[0] * c);
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t ch = (i / inner) % c;
      e[i] = static_cast<float>(
          (x[i] - mean[ch]) / std::sqrt(var[ch] + eps) * scale[ch] + bias[ch]);
    }
    expectClose(y.data, e, 1e-5, 1e-5);
  }
}

/// A layer norm's operands: x of `dims`, scale and bias over the dims from
/// `axis` on (`inner` values).
struct LayerNormOperands {
  int64_t inner = 1;
  HostTensor<float> x, scale, bias;
  LayerNormOperands(const Dims &dims, int64_t axis) {
    for (size_t d = axis; d < dims.size(); ++d)
      inner *= dims[d];
    x = randomTensor<float>(dims, -3, 5);
    scale = randomTensor<float>({inner});
    bias = randomTensor<float>({inner});
  }
};

void checkLayerNorm(const Dims &dims, int64_t axis, bool hasBias) {
  LayerNormOperands in(dims, axis);
  const int64_t inner = in.inner;
  auto &x = in.x, &scale = in.scale, &bias = in.bias;
  HostTensor<float> y(dims);
  const double eps = 1e-5;
  KernelCall call;
  call.tensor(x).tensor(scale);
  if (hasBias)
    call.tensor(bias);
  call.tensor(y).attr(axis).attrDouble(eps).attr(hasBias).run(
      weft_k_layer_norm);
  std::vector<float> e(x.data.size());
  for (int64_t r = 0; r < x.numel() / inner; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; ++i)
      mean += x[r * inner + i];
    mean /= inner;
    for (int64_t i = 0; i < inner; ++i)
      var += (x[r * inner + i] - mean) * (x[r * inner + i] - mean);
    var /= inner;
    for (int64_t i = 0; i < inner; ++i)
      e[r * inner + i] = static_cast<float>(
          (x[r * inner + i] - mean) / std::sqrt(var + eps) * scale[i] +
          (hasBias ? bias[i] : 0.0));
  }
  expectClose(y.data, e, 1e-4, 1e-5);
}

TEST(LayerNorm, LastAxisAndSeveral) {
  checkLayerNorm({4, 7, 32}, 2, true);
  checkLayerNorm({4, 7, 32}, 2, false);
  checkLayerNorm({3, 5, 6}, 1, true);
  checkLayerNorm({256, 768}, 1, true);
  checkLayerNorm({5, 3}, 0, true);
}

/// A layer norm with a bf16 / f16 result (a cast weft-fuse-elementwise
/// folded in) holds the f32 result rounded once: bitwise what the cast
/// kernel makes of it.
void checkLayerNormRounded(const Dims &dims, int64_t axis, WeftDType out) {
  LayerNormOperands in(dims, axis);
  auto &x = in.x, &scale = in.scale, &bias = in.bias;
  HostTensor<float> wide(dims);
  HostTensor<uint16_t> narrow(dims, out), cast(dims, out);
  KernelCall toWide, toNarrow;
  toWide.tensor(x).tensor(scale).tensor(bias).tensor(wide);
  toNarrow.tensor(x).tensor(scale).tensor(bias).tensor(narrow);
  for (KernelCall *call : {&toWide, &toNarrow})
    call->attr(axis).attrDouble(1e-5).attr(1).run(weft_k_layer_norm);
  KernelCall().tensor(wide).tensor(cast).run(weft_k_cast);
  EXPECT_EQ(narrow.data, cast.data) << weftDTypeName(out);
  // Not all zeros: the rounded values are the row's.
  EXPECT_NE(narrow.data, std::vector<uint16_t>(narrow.data.size(), 0));
}

TEST(LayerNorm, NarrowResultIsTheRoundedF32) {
  for (WeftDType out : {WEFT_BF16, WEFT_F16}) {
    checkLayerNormRounded({4, 7, 32}, 2, out);
    checkLayerNormRounded({256, 768}, 1, out);
    checkLayerNormRounded({3, 5, 6}, 1, out);
  }
}

TEST(LayerNormDeath, OnlyTheResultMayBeNarrow) {
  auto x = randomTensor<float>({4, 8});
  auto scale = randomTensor<float>({8});
  HostTensor<uint16_t> lowScale(Dims{8}, WEFT_BF16);
  HostTensor<int64_t> ints(Dims{4, 8});
  HostTensor<float> y(Dims{4, 8});
  EXPECT_DEATH(KernelCall()
                   .tensor(x)
                   .tensor(scale)
                   .tensor(ints)
                   .attr(1)
                   .attrDouble(1e-5)
                   .attr(0)
                   .run(weft_k_layer_norm),
               "i64");
  EXPECT_DEATH(KernelCall()
                   .tensor(x)
                   .tensor(lowScale)
                   .tensor(y)
                   .attr(1)
                   .attrDouble(1e-5)
                   .attr(0)
                   .run(weft_k_layer_norm),
               "bf16");
}

void checkSoftmax(const Dims &dims, int64_t axis, bool log) {
  auto x = randomTensor<float>(dims, -20, 20);
  HostTensor<float> y(dims);
  KernelCall().tensor(x).tensor(y).attrs({axis, log}).run(weft_k_softmax);
  int64_t n = dims[axis], inner = 1, outer = 1;
  for (size_t d = axis + 1; d < dims.size(); ++d)
    inner *= dims[d];
  for (int64_t d = 0; d < axis; ++d)
    outer *= dims[d];
  std::vector<float> e(x.data.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      double m = -1e300, s = 0;
      for (int64_t i = 0; i < n; ++i)
        m = std::max<double>(m, x[(o * n + i) * inner + j]);
      for (int64_t i = 0; i < n; ++i)
        s += std::exp(x[(o * n + i) * inner + j] - m);
      for (int64_t i = 0; i < n; ++i) {
        double v = x[(o * n + i) * inner + j] - m;
        e[(o * n + i) * inner + j] =
            static_cast<float>(log ? v - std::log(s) : std::exp(v) / s);
      }
    }
  expectClose(y.data, e, 2e-5, log ? 2e-5 : 1e-7);
}

TEST(Softmax, AxesAndLog) {
  for (bool log : {false, true}) {
    SCOPED_TRACE(log);
    checkSoftmax({4, 10}, 1, log);
    checkSoftmax({2, 3, 4, 5}, 3, log);
    checkSoftmax({2, 3, 4, 5}, 1, log);
    checkSoftmax({6, 700}, 0, log); // leading axis, column chunks
    checkSoftmax({2, 12, 64, 64}, 3, log);
    checkSoftmax({1}, 0, log);
  }
}

TEST(Softmax, LargeValuesDoNotOverflow) {
  HostTensor<float> x({3}, {1000.0f, 1000.0f, -1000.0f});
  HostTensor<float> y({3});
  KernelCall().tensor(x).tensor(y).attrs({0, 0}).run(weft_k_softmax);
  EXPECT_FLOAT_EQ(y[0], 0.5f);
  EXPECT_FLOAT_EQ(y[1], 0.5f);
  EXPECT_EQ(y[2], 0.0f);
  KernelCall().tensor(x).tensor(y).attrs({0, 1}).run(weft_k_softmax);
  EXPECT_NEAR(y[0], -std::log(2.0f), 1e-6);
  EXPECT_NEAR(y[2], -2000.0f - std::log(2.0f), 1e-3);
}

} // namespace
