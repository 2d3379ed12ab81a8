//===- ConvTest.cpp - conv kernel -----------------------------------------===//

#include "KernelTestUtil.h"

#include "runtime/kernels/cpu/Gemm.h"
#include "runtime/kernels/cpu/Winograd.h"

#include <cmath>

using namespace weft::test;

namespace {

struct ConvCase {
  Dims x; // [N, C, spatial...]
  int64_t outC;
  int64_t group;
  Dims kernel;
  Dims strides;
  Dims pads; // begins then ends
  Dims dilations;
  bool bias;
};

Dims convOutDims(const ConvCase &c) {
  const size_t s = c.kernel.size();
  Dims out = {c.x[0], c.outC};
  for (size_t i = 0; i < s; ++i) {
    int64_t span = c.dilations[i] * (c.kernel[i] - 1) + 1;
    out.push_back(
        (c.x[2 + i] + c.pads[i] + c.pads[s + i] - span) / c.strides[i] + 1);
  }
  return out;
}

std::vector<float> referenceConv(const ConvCase &c, const HostTensor<float> &x,
                                 const HostTensor<float> &w,
                                 const HostTensor<float> *bias,
                                 const Dims &yDims) {
  const size_t s = c.kernel.size();
  const int64_t cg = c.x[1] / c.group, ocg = c.outC / c.group;
  Dims ySpatial(yDims.begin() + 2, yDims.end());
  Dims xSpatial(c.x.begin() + 2, c.x.end());
  std::vector<float> y(static_cast<size_t>(numelOf(yDims)));
  for (int64_t i = 0; i < numelOf(yDims); ++i) {
    Dims idx = unravel(i, yDims);
    int64_t n = idx[0], oc = idx[1], g = oc / ocg;
    double acc = bias ? (*bias)[oc] : 0.0;
    for (int64_t ci = 0; ci < cg; ++ci)
      for (int64_t t = 0; t < numelOf(c.kernel); ++t) {
        Dims tap = unravel(t, c.kernel);
        Dims pos(s);
        bool inside = true;
        for (size_t d = 0; d < s; ++d) {
          pos[d] =
              idx[2 + d] * c.strides[d] - c.pads[d] + tap[d] * c.dilations[d];
          inside = inside && pos[d] >= 0 && pos[d] < xSpatial[d];
        }
        if (!inside)
          continue;
        int64_t xi = (n * c.x[1] + g * cg + ci) * numelOf(xSpatial) +
                     ravel(pos, xSpatial);
        int64_t wi = (oc * cg + ci) * numelOf(c.kernel) + t;
        acc += double(x[xi]) * double(w[wi]);
      }
    y[i] = static_cast<float>(acc);
  }
  return y;
}

void checkConv(const ConvCase &c) {
  const size_t s = c.kernel.size();
  auto x = randomTensor<float>(c.x);
  Dims wDims = {c.outC, c.x[1] / c.group};
  wDims.insert(wDims.end(), c.kernel.begin(), c.kernel.end());
  auto w = randomTensor<float>(wDims);
  auto bias = randomTensor<float>({c.outC});
  Dims yDims = convOutDims(c);
  HostTensor<float> y(yDims);
  KernelCall call;
  call.tensor(x).tensor(w);
  if (c.bias)
    call.tensor(bias);
  call.tensor(y)
      .attr(c.bias)
      .attr(c.group)
      .attrs(c.strides)
      .attrs(c.pads)
      .attrs(c.dilations);
  ASSERT_EQ(c.pads.size(), 2 * s);
  call.run(weft_k_conv);
  std::vector<float> ref =
      referenceConv(c, x, w, c.bias ? &bias : nullptr, yDims);
  // Absolute tolerance relative to the typical output: Winograd F(4x4, 3x3)
  // rounds to a few parts per million of it, element-wise.
  double sq = 0;
  for (float v : ref)
    sq += double(v) * v;
  const double rms = ref.empty() ? 0.0 : std::sqrt(sq / double(ref.size()));
  expectClose(y.data, ref, 1e-4, 1e-5 * (rms > 1 ? rms : 1.0));
}

/// Runs checkConv for each case with the gemms on weft's kernels and on
/// OpenBLAS.
void checkConvBothGemms(const std::vector<ConvCase> &cases) {
  for (bool blas : {false, true}) {
    SCOPED_TRACE(blas ? "OpenBLAS gemms" : "weft gemms");
    weft::cpu::gemmForceBlasForTesting(blas);
    for (const ConvCase &c : cases)
      checkConv(c);
  }
  weft::cpu::gemmForceBlasForTesting(false);
}

/// Runs checkConv with Winograd forced to tile size m (when it can run).
void checkWinograd(int m, const std::vector<ConvCase> &cases) {
  SCOPED_TRACE(testing::Message() << "Winograd m=" << m);
  weft::cpu::winogradForceForTesting(m);
  for (const ConvCase &c : cases)
    checkConv(c);
  weft::cpu::winogradForceForTesting(0);
}

TEST(Conv, TwoDimsBasic) {
  checkConv({{1, 3, 8, 8}, 4, 1, {3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false});
  checkConv({{2, 3, 8, 7}, 5, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true});
}

TEST(Conv, StridesPadsDilations) {
  checkConv({{1, 4, 11, 9}, 6, 1, {3, 2}, {2, 3}, {1, 0, 2, 1}, {1, 1}, true});
  checkConv({{2, 2, 12, 12}, 3, 1, {3, 3}, {1, 2}, {2, 2, 2, 2}, {2, 3}, true});
  // ResNet stem: 7x7 stride 2 pad 3.
  checkConv(
      {{1, 3, 32, 32}, 8, 1, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, false});
}

TEST(Conv, Groups) {
  checkConv({{2, 6, 7, 7}, 4, 2, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true});
  checkConv({{1, 8, 9, 9}, 12, 4, {3, 3}, {2, 2}, {0, 1, 1, 0}, {1, 1}, true});
}

TEST(Conv, Depthwise) {
  checkConv({{2, 6, 10, 10}, 6, 6, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true});
  checkConv(
      {{1, 4, 11, 11}, 4, 4, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false});
  // Channel multiplier 2, dilation, asymmetric pads.
  checkConv({{1, 3, 9, 8}, 6, 3, {3, 2}, {1, 2}, {2, 0, 1, 1}, {2, 1}, true});
  // 1-D depthwise.
  checkConv({{2, 4, 20}, 4, 4, {5}, {1}, {2, 2}, {1}, true});
  // Small planes (at most 64 outputs) go through an offset table: stride
  // 1, and stride 2 with two outputs per input channel.
  checkConv({{3, 8, 5, 5}, 8, 8, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true});
  checkConv({{2, 6, 4, 4}, 12, 6, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false});
  // Larger planes: strided row by row, unit strides on padded planes.
  checkConv({{1, 4, 20, 20}, 4, 4, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true});
  checkConv({{2, 3, 12, 9}, 3, 3, {5, 3}, {1, 1}, {2, 1, 2, 1}, {1, 1}, true});
}

TEST(Conv, Pointwise) {
  checkConv({{1, 16, 6, 6}, 8, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, true});
  checkConv({{3, 16, 5, 4}, 8, 2, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false});
  // Strided 1x1 (ResNet downsample) needs im2col.
  checkConv({{1, 8, 8, 8}, 4, 1, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true});
}

TEST(Conv, OneAndThreeSpatialDims) {
  checkConv({{2, 3, 17}, 4, 1, {3}, {2}, {1, 2}, {2}, true});
  checkConv({{1, 2, 5, 6, 7},
             3,
             1,
             {2, 3, 3},
             {1, 2, 1},
             {1, 0, 1, 0, 1, 1},
             {1, 1, 2},
             true});
}

TEST(Conv, WinogradTilesChannelsAndPads) {
  // 3x3 stride 1: partial edge tiles, channel counts off multiples of 16,
  // batch, pads from 0 to 2 (asymmetric), with and without bias; the last
  // two have more weights than tiles (transformed per output block).
  const std::vector<ConvCase> cases = {
      {{1, 16, 10, 10}, 16, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {{2, 20, 9, 11}, 24, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {{1, 5, 13, 7}, 3, 1, {3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false},
      {{1, 32, 5, 6}, 40, 1, {3, 3}, {1, 1}, {2, 2, 2, 2}, {1, 1}, true},
      {{1, 17, 8, 9}, 33, 1, {3, 3}, {1, 1}, {1, 0, 2, 1}, {1, 1}, false},
      {{1, 64, 6, 6}, 64, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {{2, 48, 4, 5}, 80, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},
      // Small images share passes of at least 64 tiles: two passes, the
      // last one short (by tile blocks), and 40 images in one pass by
      // output channel blocks.
      {{21, 16, 4, 4}, 24, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {{37, 40, 2, 3}, 72, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},
      {{40, 96, 2, 2}, 96, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
  };
  checkWinograd(2, cases);
  checkWinograd(4, cases);
  checkWinograd(-1, cases);
}

TEST(Conv, ColumnSplitOddSizes) {
  // One image, many columns: column ranges split over threads, blocks not
  // multiples of 16; stride 1 reads the input as its own phase plane.
  checkConvBothGemms({
      {{1, 16, 37, 41}, 24, 1, {5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}, true},
      {{1, 3, 61, 67}, 8, 1, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, true},
      {{3, 4, 19, 23}, 6, 1, {3, 5}, {1, 1}, {1, 2, 1, 2}, {1, 1}, false},
  });
}

TEST(Conv, StridedPhasePlanes) {
  // Strided convs whose output width matches the strided input width read
  // phase planes (odd extents, dilation); the last ones do not qualify.
  checkConvBothGemms({
      {{1, 8, 45, 39}, 20, 1, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true},
      {{1, 8, 14, 14}, 32, 1, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},
      {{2, 5, 17, 16}, 7, 1, {3, 3}, {2, 3}, {2, 1, 2, 2}, {2, 1}, true},
      {{1, 6, 20, 20}, 9, 1, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},
      {{1, 6, 20, 21}, 9, 1, {4, 4}, {3, 3}, {1, 1, 1, 1}, {1, 1}, true},
  });
}

TEST(Conv, StridedPointwise) {
  // 1x1 strided convs gather only the pixels they read.
  checkConvBothGemms({
      {{1, 64, 14, 14}, 32, 1, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},
      {{2, 20, 15, 13}, 24, 1, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false},
      {{1, 9, 10, 11}, 5, 1, {1, 1}, {3, 2}, {0, 0, 0, 0}, {1, 1}, true},
  });
}

TEST(Conv, FewPositionsAlongOutputChannels) {
  // 7x7 outputs with output channels in whole vectors: y^T = cols^T w^T,
  // per image over threads or one image split over them; pointwise too.
  checkConvBothGemms({
      {{1, 32, 7, 7}, 48, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {{4, 32, 7, 7}, 48, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},
      {{1, 32, 14, 14}, 64, 1, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},
      {{1, 24, 7, 7}, 32, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, true},
      {{1, 64, 7, 7}, 64, 2, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
  });
}

TEST(Conv, GroupsWithWideGroups) {
  // Grouped (not depthwise) with 16+ output channels per group, and few
  // positions split by output channels.
  checkConvBothGemms({
      {{1, 32, 12, 12}, 64, 2, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {{1, 48, 9, 9}, 96, 3, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},
      {{1, 32, 20, 20}, 32, 1, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true},
  });
}

TEST(Conv, BatchParallelAndLarge) {
  // More images than threads: images run on the pool.
  checkConv({{8, 4, 9, 9}, 8, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true});
  // One big image: OpenBLAS threads and a parallel im2col.
  checkConv(
      {{1, 32, 40, 40}, 64, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true});
}

TEST(Conv, FewPositionsImagesTogether) {
  // Fewer than 64 output positions per image and several images: one
  // product over all the images' columns, in chunks of at most 512 columns
  // (60 images of 9 positions: 56, then 4).
  checkConvBothGemms({
      {{16, 32, 4, 4}, 40, 1, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true},
      {{60, 8, 3, 3}, 12, 1, {2, 2}, {1, 1}, {1, 1, 0, 0}, {1, 1}, true},
      {{5, 12, 6, 5}, 18, 3, {2, 2}, {1, 1}, {0, 1, 1, 0}, {1, 1}, false},
      {{7, 16, 5}, 24, 1, {3}, {1}, {1, 1}, {1}, true},
      {{9, 24, 4, 4}, 20, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, true},
      {{3, 20, 1, 1}, 16, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, true},
      {{6, 40, 3, 3}, 8, 1, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false},
  });
}

TEST(Conv, DeadTapsDropped) {
  // Taps that read padding for every output are dropped (ConvTaps.h): the
  // centre tap of a 3x3 "same" conv on 1x1 images; taps 1-2 of a stride-2
  // 3x3 on 2x2; taps along one dim only, with one image; groups and uneven
  // pads; a 1-D conv whose first taps are dead; the middle tap of a dilated
  // conv.
  checkConvBothGemms({
      {{4, 24, 1, 1}, 16, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {{3, 16, 2, 2}, 8, 1, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},
      {{1, 8, 1, 6}, 8, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {{2, 6, 2, 9}, 6, 2, {5, 3}, {1, 2}, {3, 0, 3, 1}, {1, 1}, true},
      {{2, 4, 3}, 4, 1, {5}, {1}, {4, 0}, {1}, false},
      {{2, 4, 3, 3}, 6, 1, {3, 3}, {1, 1}, {3, 3, 3, 3}, {3, 3}, true},
  });
}

} // namespace
