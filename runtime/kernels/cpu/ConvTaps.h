//===- ConvTaps.h - Dropping the taps of a conv that read only padding ----===//
//
// A tap of a conv window can lie in the padding for every output position:
// a 3x3 "same" conv on a 1x1 image reads the input through its centre tap
// only, the other eight always multiply zeros. Along each dim the taps that
// read the input for some output form one range [lo, hi) (both ends of each
// tap's valid output range move monotonically with the tap), so dropping the
// rest is the same conv with kernel hi - lo and lo dilations less leading
// padding, and a weight tensor cut to those taps. The cut conv gives the
// same y, the same dx, and dw on the kept taps (zero on the others), with
// up to kernelSize times fewer multiply-adds.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_CONVTAPS_H
#define WEFT_RUNTIME_KERNELS_CPU_CONVTAPS_H

#include "ConvGeometry.h"
#include "Parallel.h"
#include "Scratch.h"

namespace weft {
namespace cpu {

/// The conv with its dead taps dropped: `shape` has the cut geometry, and
/// the kept taps of the full kernel start at `lo` along each dim.
struct LiveTaps {
  ConvShape shape;
  int64_t lo[WindowGeometry::kDims];
  int64_t fullKernel[WindowGeometry::kDims];
};

/// Whether `s` has taps that read only padding and some that do not; when
/// it does, `out` describes the conv without them.
inline bool findDeadTaps(const ConvShape &s, LiveTaps &out) {
  const WindowGeometry &g = s.g;
  bool dead = false;
  out.shape = s;
  for (int d = 0; d < WindowGeometry::kDims; ++d) {
    int64_t lo = 0, hi = g.kernel[d];
    auto live = [&](int64_t k) {
      int64_t a, b;
      g.validOutputs(d, k, a, b);
      return a < b;
    };
    while (lo < hi && !live(lo))
      ++lo;
    while (hi > lo && !live(hi - 1))
      --hi;
    if (lo == hi)
      return false; // every output reads padding only: nothing to cut to
    dead = dead || lo > 0 || hi < g.kernel[d];
    WindowGeometry &t = out.shape.g;
    t.kernel[d] = hi - lo;
    t.padBegin[d] = g.padBegin[d] - lo * g.dilation[d];
    const int64_t end = g.padEnd[d] - (g.kernel[d] - hi) * g.dilation[d];
    t.padEnd[d] = end > 0 ? end : 0;
    out.lo[d] = lo;
    out.fullKernel[d] = g.kernel[d];
  }
  return dead;
}

/// Visits the kept taps of `live`, for pairs [q0, q1) of (output channel,
/// input channel): fn(full, cut, count) for each run of `count` taps at
/// offsets `full` into the full-kernel weight layout and `cut` into the cut
/// one.
template <class Fn>
void forEachLiveRun(const LiveTaps &live, int64_t q0, int64_t q1, Fn fn) {
  const int64_t *k = live.shape.g.kernel, *K = live.fullKernel;
  const int64_t fullTaps = K[0] * K[1] * K[2], kept = k[0] * k[1] * k[2];
  for (int64_t q = q0; q < q1; ++q)
    for (int64_t a = 0; a < k[0]; ++a)
      for (int64_t b = 0; b < k[1]; ++b)
        fn(q * fullTaps + ((a + live.lo[0]) * K[1] + b + live.lo[1]) * K[2] +
               live.lo[2],
           q * kept + (a * k[1] + b) * k[2], k[2]);
}

/// The kept taps of pairs [q0, q1) of weight w, in the cut layout.
inline void cutWeights(const LiveTaps &live, int64_t q0, int64_t q1,
                       const float *w, float *cut) {
  forEachLiveRun(live, q0, q1, [&](int64_t f, int64_t c, int64_t n) {
    for (int64_t t = 0; t < n; ++t)
      cut[c + t] = w[f + t];
  });
}

/// Pairs [q0, q1) of a weight gradient dw from the cut conv's gradient:
/// the kept taps' values, zero for the dropped ones.
inline void uncutWeights(const LiveTaps &live, int64_t q0, int64_t q1,
                         const float *cut, float *dw) {
  const int64_t *K = live.fullKernel;
  const int64_t fullTaps = K[0] * K[1] * K[2];
  for (int64_t i = q0 * fullTaps; i < q1 * fullTaps; ++i)
    dw[i] = 0.0f;
  forEachLiveRun(live, q0, q1, [&](int64_t f, int64_t c, int64_t n) {
    for (int64_t t = 0; t < n; ++t)
      dw[f + t] = cut[c + t];
  });
}

/// When `s` has dead taps, cuts them: `s` becomes the cut conv and the
/// cut weights, copied in parallel into kOperandSlot of the calling thread,
/// are returned. Otherwise returns w.
inline const float *dropDeadTaps(ConvShape &s, const float *w) {
  LiveTaps live;
  if (!findDeadTaps(s, live))
    return w;
  const int64_t pairs = s.outChannels * s.cg;
  float *cut = scratch<float>(kOperandSlot, pairs * live.shape.taps());
  parallelFor(pairs, grainFor(s.taps()), [&](int64_t q0, int64_t q1) {
    cutWeights(live, q0, q1, w, cut);
  });
  s = live.shape;
  return cut;
}

/// Output positions per plane up to which depthwise convs (forward and
/// gradients) read their taps through tapOffsetTable: below it, a call per
/// output row and tap costs more than the plane's arithmetic.
constexpr int64_t kSmallPlane = 64;

/// Rows [0, rows) of a zero-padded copy of input plane `x` (1-D or 2-D),
/// `width` floats a row: xp[r * width + j] is x at (r - padBegin[1],
/// j - padBegin[2]), 0 outside it. With unit strides, output (oh, ow) then
/// reads tap (th, tw) at (oh + th) * width + ow + tw.
inline void padPlane(const WindowGeometry &g, const float *x, float *xp,
                     int64_t width, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t ih = r - g.padBegin[1];
    for (int64_t j = 0; j < width; ++j) {
      const int64_t iw = j - g.padBegin[2];
      xp[r * width + j] = ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2]
                              ? x[ih * g.in[2] + iw]
                              : 0.0f;
    }
  }
}

/// Where each tap reads for each output position: offsets[t * P + q] is
/// the offset in an input plane of tap t (row-major over the kernel) of
/// output position q (P = g.outSize()), or -1 where it reads padding. For
/// small images, whose rows are too short for a call per output row.
inline void tapOffsetTable(const WindowGeometry &g, int64_t *offsets) {
  const int64_t P = g.outSize();
  const int64_t *k = g.kernel, *o = g.out;
  for (int64_t t = 0; t < g.kernelSize(); ++t) {
    const int64_t tap[3] = {t / (k[1] * k[2]), t / k[2] % k[1], t % k[2]};
    for (int64_t q = 0; q < P; ++q) {
      const int64_t pos[3] = {q / (o[1] * o[2]), q / o[2] % o[1], q % o[2]};
      int64_t at = 0;
      for (int d = 0; d < WindowGeometry::kDims && at >= 0; ++d) {
        const int64_t i =
            pos[d] * g.stride[d] - g.padBegin[d] + tap[d] * g.dilation[d];
        at = i >= 0 && i < g.in[d] ? at * g.in[d] + i : -1;
      }
      offsets[t * P + q] = at;
    }
  }
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_CONVTAPS_H
