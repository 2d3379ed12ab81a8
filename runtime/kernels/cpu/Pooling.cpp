//===- Pooling.cpp - max_pool and avg_pool kernels ------------------------===//
//
// Pools over 1 to 3 spatial dims of NC... tensors, one (n, c) plane per
// task. The result's dims fix the output extent, so ceil_mode outputs whose
// windows run past the padded input need no special case: taps outside the
// input are skipped. max_pool treats padding as -inf (a window with no tap
// in the input yields -inf). avg_pool divides by the taps inside the
// padded input (count_include_pad = 1) or inside the input itself (0).
//
//===----------------------------------------------------------------------===//

#include "Parallel.h"
#include "PoolWindow.h"
#include "RowOps.h"

#include <limits>
#include <vector>

using namespace weft;
using namespace weft::cpu;

namespace {

/// Applies `rowOp(dst, src, stride, count)` to output row `dst` (out[2]
/// positions) for every tap of the window rows (kd, kh) that lie in the
/// input, restricted per tap kw to the outputs that tap reaches.
template <class RowOp>
void accumulateRow(const WindowGeometry &g, const float *x, int64_t od,
                   int64_t oh, float *dst, RowOp rowOp) {
  int64_t dLo, dHi, hLo, hHi, wLo, wHi;
  g.validTaps(0, od, dLo, dHi);
  g.validTaps(1, oh, hLo, hHi);
  const int64_t inHW = g.in[1] * g.in[2], inW = g.in[2];
  const int64_t d0 = od * g.stride[0] - g.padBegin[0];
  const int64_t h0 = oh * g.stride[1] - g.padBegin[1];
  for (int64_t kd = dLo; kd < dHi; ++kd)
    for (int64_t kh = hLo; kh < hHi; ++kh) {
      const float *row = x + (d0 + kd * g.dilation[0]) * inHW +
                         (h0 + kh * g.dilation[1]) * inW;
      for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
        g.validOutputs(2, kw, wLo, wHi);
        if (wLo < wHi)
          rowOp(dst + wLo,
                row + wLo * g.stride[2] + kw * g.dilation[2] - g.padBegin[2],
                g.stride[2], wHi - wLo);
      }
    }
}

void maxPoolPlane(const WindowGeometry &g, const float *x, float *y) {
  const int64_t ow = g.out[2];
  for (int64_t od = 0; od < g.out[0]; ++od)
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      float *dst = y + (od * g.out[1] + oh) * ow;
      for (int64_t i = 0; i < ow; ++i)
        dst[i] = -std::numeric_limits<float>::infinity();
      accumulateRow(g, x, od, oh, dst, maxRow);
    }
}

/// `wCount` holds tapCount along the last dim for each output column.
void avgPoolPlane(const WindowGeometry &g, bool countPad, const int64_t *wCount,
                  const float *x, float *y) {
  const int64_t ow = g.out[2];
  for (int64_t od = 0; od < g.out[0]; ++od) {
    const int64_t dCount = tapCount(g, countPad, 0, od);
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      const int64_t dhCount = dCount * tapCount(g, countPad, 1, oh);
      float *dst = y + (od * g.out[1] + oh) * ow;
      for (int64_t i = 0; i < ow; ++i)
        dst[i] = 0.0f;
      accumulateRow(g, x, od, oh, dst, addRow);
      for (int64_t i = 0; i < ow; ++i)
        dst[i] = divideByTaps(dst[i], dhCount * wCount[i]);
    }
  }
}

/// Global pooling: one window covering the whole unpadded plane.
bool isGlobal(const WindowGeometry &g) {
  for (int d = 0; d < WindowGeometry::kDims; ++d)
    if (g.out[d] != 1 || g.kernel[d] != g.in[d] || g.padBegin[d] != 0 ||
        g.dilation[d] != 1)
      return false;
  return true;
}

void checkPoolTensors(const KernelArgs &args) {
  args.expectTensors(2, 2);
  args.expectDType(0, WEFT_F32);
  args.expectDType(1, WEFT_F32);
  checkPoolOperands(args, args.tensor(0), args.tensor(1));
}

} // namespace

extern "C" void weft_k_max_pool(void *const *bufs, const int64_t *desc) {
  KernelArgs args("max_pool", bufs, desc);
  checkPoolTensors(args);
  const TensorArg &x = args.tensor(0), &y = args.tensor(1);
  WindowGeometry g = makeMaxPoolGeometry(args, x, y);
  const int64_t planes = x.dims[0] * x.dims[1];
  const float *px = x.as<float>();
  float *py = y.as<float>();
  parallelFor(planes, grainFor(g.outSize() * g.kernelSize()),
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i)
                  maxPoolPlane(g, px + i * g.inSize(), py + i * g.outSize());
              });
}

extern "C" void weft_k_avg_pool(void *const *bufs, const int64_t *desc) {
  KernelArgs args("avg_pool", bufs, desc);
  checkPoolTensors(args);
  const TensorArg &x = args.tensor(0), &y = args.tensor(1);
  bool countPad;
  WindowGeometry g = makeAvgPoolGeometry(args, x, y, countPad);
  const int64_t planes = x.dims[0] * x.dims[1];
  const float *px = x.as<float>();
  float *py = y.as<float>();
  if (isGlobal(g)) {
    const int64_t size = g.inSize();
    const float scale = 1.0f / static_cast<float>(size);
    parallelFor(planes, grainFor(size), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        py[i] = rowSum(px + i * size, size) * scale;
    });
    return;
  }
  const std::vector<int64_t> wCount = lastDimTapCounts(g, countPad);
  parallelFor(planes, grainFor(g.outSize() * g.kernelSize()),
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i)
                  avgPoolPlane(g, countPad, wCount.data(), px + i * g.inSize(),
                               py + i * g.outSize());
              });
}
