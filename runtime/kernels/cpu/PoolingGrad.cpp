//===- PoolingGrad.cpp - max_pool_grad and avg_pool_grad kernels ----------===//
//
// Gradients of the pools of Pooling.cpp, one (n, c) plane per task, so a
// plane's overlapping windows accumulate on one thread in output order.
// max_pool_grad recomputes each window's argmax over the taps inside the
// input, in window order (d, h, w), and adds the window's gradient there:
// the first maximum wins ties (PyTorch), a NaN beats every number (the
// first NaN wins), padding never wins, and a window with no tap in the input
// routes nothing. avg_pool_grad spreads dy / divisor over each window's taps
// inside the input, with the divisor avg_pool uses.
//
//===----------------------------------------------------------------------===//

#include "GradRowOps.h"
#include "Parallel.h"
#include "PoolWindow.h"
#include "Scratch.h"

#include <climits>
#include <cstring>
#include <vector>

using namespace weft;
using namespace weft::cpu;

namespace {

/// `best` and `pos` hold out[2] values of scratch.
void maxPoolGradPlane(const WindowGeometry &g, const float *x, const float *dy,
                      float *dx, float *best, int32_t *pos) {
  std::memset(dx, 0, static_cast<size_t>(g.inSize()) * sizeof(float));
  const int64_t inHW = g.in[1] * g.in[2], inW = g.in[2], ow = g.out[2];
  for (int64_t od = 0; od < g.out[0]; ++od) {
    int64_t dLo, dHi;
    g.validTaps(0, od, dLo, dHi);
    const int64_t d0 = od * g.stride[0] - g.padBegin[0];
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      int64_t hLo, hHi;
      g.validTaps(1, oh, hLo, hHi);
      const int64_t h0 = oh * g.stride[1] - g.padBegin[1];
      for (int64_t i = 0; i < ow; ++i)
        pos[i] = -1;
      // Taps in window order, each over the outputs it reaches.
      for (int64_t kd = dLo; kd < dHi; ++kd)
        for (int64_t kh = hLo; kh < hHi; ++kh) {
          const int64_t rowOff = (d0 + kd * g.dilation[0]) * inHW +
                                 (h0 + kh * g.dilation[1]) * inW;
          for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
            int64_t wLo, wHi;
            g.validOutputs(2, kw, wLo, wHi);
            if (wLo >= wHi)
              continue;
            const int64_t off =
                rowOff + wLo * g.stride[2] + kw * g.dilation[2] - g.padBegin[2];
            maxPoolArgRow(x + off, g.stride[2], static_cast<int32_t>(off),
                          best + wLo, pos + wLo, wHi - wLo);
          }
        }
      const float *dyRow = dy + (od * g.out[1] + oh) * ow;
      for (int64_t i = 0; i < ow; ++i)
        if (pos[i] >= 0)
          dx[pos[i]] += dyRow[i];
    }
  }
}

/// `wCount` holds tapCount along the last dim per output column; `row`
/// holds out[2] floats of scratch.
void avgPoolGradPlane(const WindowGeometry &g, bool countPad,
                      const int64_t *wCount, const float *dy, float *dx,
                      float *row) {
  std::memset(dx, 0, static_cast<size_t>(g.inSize()) * sizeof(float));
  const int64_t ow = g.out[2];
  const int64_t inHW = g.in[1] * g.in[2], inW = g.in[2];
  for (int64_t od = 0; od < g.out[0]; ++od) {
    const int64_t dCount = tapCount(g, countPad, 0, od);
    int64_t dLo, dHi;
    g.validTaps(0, od, dLo, dHi);
    const int64_t d0 = od * g.stride[0] - g.padBegin[0];
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      const int64_t dhCount = dCount * tapCount(g, countPad, 1, oh);
      int64_t hLo, hHi;
      g.validTaps(1, oh, hLo, hHi);
      const int64_t h0 = oh * g.stride[1] - g.padBegin[1];
      const float *src = dy + (od * g.out[1] + oh) * ow;
      for (int64_t i = 0; i < ow; ++i)
        row[i] = divideByTaps(src[i], dhCount * wCount[i]);
      for (int64_t kd = dLo; kd < dHi; ++kd)
        for (int64_t kh = hLo; kh < hHi; ++kh) {
          float *dst = dx + (d0 + kd) * inHW + (h0 + kh) * inW;
          for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
            int64_t wLo, wHi;
            g.validOutputs(2, kw, wLo, wHi);
            if (wLo < wHi)
              scatterAddRow(dst + wLo * g.stride[2] + kw - g.padBegin[2],
                            g.stride[2], row + wLo, wHi - wLo);
          }
        }
    }
  }
}

/// Checks the NC... operands `x` (or dx's dims) and `y` (or dy's).
void checkPoolGradTensors(const KernelArgs &args, const TensorArg &x,
                          const TensorArg &y) {
  for (int i = 0; i < args.numTensors(); ++i)
    args.expectDType(i, WEFT_F32);
  checkPoolOperands(args, x, y);
}

} // namespace

extern "C" void weft_k_max_pool_grad(void *const *bufs, const int64_t *desc) {
  KernelArgs args("max_pool_grad", bufs, desc);
  args.expectTensors(3, 3);
  const TensorArg &x = args.tensor(0), &dy = args.tensor(1),
                  &dx = args.tensor(2);
  checkPoolGradTensors(args, x, dy);
  args.expectSameNumel(0, 2);
  WindowGeometry g = makeMaxPoolGeometry(args, x, dy);
  const int64_t planes = x.dims[0] * x.dims[1];
  const float *px = x.as<float>(), *pdy = dy.as<float>();
  float *pdx = dx.as<float>();
  if (g.inSize() > INT32_MAX)
    args.invalid("input planes of more than 2^31 elements");
  parallelFor(planes, grainFor(g.inSize() + g.outSize() * g.kernelSize()),
              [&](int64_t begin, int64_t end) {
                float *best = scratch<float>(0, g.out[2]);
                int32_t *pos = scratch<int32_t>(1, g.out[2]);
                for (int64_t i = begin; i < end; ++i)
                  maxPoolGradPlane(g, px + i * g.inSize(),
                                   pdy + i * g.outSize(), pdx + i * g.inSize(),
                                   best, pos);
              });
}

extern "C" void weft_k_avg_pool_grad(void *const *bufs, const int64_t *desc) {
  KernelArgs args("avg_pool_grad", bufs, desc);
  args.expectTensors(2, 2);
  const TensorArg &dy = args.tensor(0), &dx = args.tensor(1);
  checkPoolGradTensors(args, dx, dy);
  bool countPad;
  WindowGeometry g = makeAvgPoolGeometry(args, dx, dy, countPad);
  const int64_t planes = dx.dims[0] * dx.dims[1];
  const float *pdy = dy.as<float>();
  float *pdx = dx.as<float>();
  const std::vector<int64_t> wCount = lastDimTapCounts(g, countPad);
  parallelFor(planes, grainFor(g.inSize() + g.outSize() * g.kernelSize()),
              [&](int64_t begin, int64_t end) {
                float *row = scratch<float>(0, g.out[2]);
                for (int64_t i = begin; i < end; ++i)
                  avgPoolGradPlane(g, countPad, wCount.data(),
                                   pdy + i * g.outSize(), pdx + i * g.inSize(),
                                   row);
              });
}
