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

#include "ConvGeometry.h"
#include "Parallel.h"
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

/// Taps of output position o along dim d inside [-padBegin, in + padEnd).
int64_t paddedTaps(const WindowGeometry &g, int d, int64_t o) {
  int64_t start = o * g.stride[d] - g.padBegin[d];
  int64_t lo = start < -g.padBegin[d] ? -g.padBegin[d] : start;
  int64_t end = start + g.kernel[d];
  int64_t limit = g.in[d] + g.padEnd[d];
  int64_t hi = end > limit ? limit : end;
  return hi > lo ? hi - lo : 0;
}

/// Divisor of each output position along dim d.
int64_t tapCount(const WindowGeometry &g, bool countPad, int d, int64_t o) {
  if (countPad)
    return paddedTaps(g, d, o);
  int64_t lo, hi;
  g.validTaps(d, o, lo, hi);
  return hi - lo;
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
      for (int64_t i = 0; i < ow; ++i) {
        int64_t count = dhCount * wCount[i];
        // A window entirely in the padding averages nothing: 0, not NaN.
        dst[i] = count > 0 ? dst[i] / static_cast<float>(count) : 0.0f;
      }
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
  const TensorArg &x = args.tensor(0), &y = args.tensor(1);
  if (x.rank < 3 || y.rank != x.rank || y.dims[0] != x.dims[0] ||
      y.dims[1] != x.dims[1])
    args.invalid("expected NC... tensors with matching N and C");
}

} // namespace

extern "C" void weft_k_max_pool(void *const *bufs, const int64_t *desc) {
  KernelArgs args("max_pool", bufs, desc);
  checkPoolTensors(args);
  const TensorArg &x = args.tensor(0), &y = args.tensor(1);
  const int s = x.rank - 2;
  const int64_t *a = args.attrArray(0, 5 * s);
  WindowGeometry g =
      makeWindowGeometry(args, x, y, a, a + s, a + 2 * s, a + 4 * s);
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
  const int s = x.rank - 2;
  const int64_t *a = args.attrArray(0, 1 + 4 * s);
  const bool countPad = a[0] != 0;
  WindowGeometry g =
      makeWindowGeometry(args, x, y, a + 1, a + 1 + s, a + 1 + 2 * s, nullptr);
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
  std::vector<int64_t> wCount(g.out[2]);
  for (int64_t i = 0; i < g.out[2]; ++i)
    wCount[i] = tapCount(g, countPad, 2, i);
  parallelFor(planes, grainFor(g.outSize() * g.kernelSize()),
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i)
                  avgPoolPlane(g, countPad, wCount.data(), px + i * g.inSize(),
                               py + i * g.outSize());
              });
}
