//===- ConvGeometry.h - Spatial geometry of conv and pooling windows ------===//
//
// Conv and the pools take 1 to 3 spatial dims. Their geometry is normalized
// to exactly 3 dims by prepending unit dims (extent 1, kernel 1, stride 1,
// no padding), so one loop nest serves 1-D, 2-D and 3-D.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_CONVGEOMETRY_H
#define WEFT_RUNTIME_KERNELS_CPU_CONVGEOMETRY_H

#include "KernelArgs.h"

namespace weft {
namespace cpu {

/// The methods are constexpr so that the GPU kernels (runtime/kernels/cuda,
/// built with --expt-relaxed-constexpr) call them on the device too.
struct WindowGeometry {
  static constexpr int kDims = 3;
  int64_t in[kDims];
  int64_t out[kDims];
  int64_t kernel[kDims];
  int64_t stride[kDims];
  int64_t padBegin[kDims];
  int64_t padEnd[kDims];
  int64_t dilation[kDims];

  constexpr int64_t inSize() const { return in[0] * in[1] * in[2]; }
  constexpr int64_t outSize() const { return out[0] * out[1] * out[2]; }
  constexpr int64_t kernelSize() const {
    return kernel[0] * kernel[1] * kernel[2];
  }

  /// Output positions o along dim d whose tap k (input index o*stride -
  /// padBegin + k*dilation) lies in [0, in): the range [lo, hi).
  constexpr void validOutputs(int d, int64_t k, int64_t &lo,
                              int64_t &hi) const {
    int64_t offset = k * dilation[d] - padBegin[d];
    // o*stride + offset >= 0  and  o*stride + offset <= in - 1
    lo = offset >= 0 ? 0 : (-offset + stride[d] - 1) / stride[d];
    int64_t top = in[d] - 1 - offset;
    hi = top < 0 ? 0 : top / stride[d] + 1;
    if (hi > out[d])
      hi = out[d];
    if (lo > hi)
      lo = hi;
  }

  /// Taps k in [0, kernel) of output position o along dim d that lie in
  /// [0, in): the range [lo, hi).
  constexpr void validTaps(int d, int64_t o, int64_t &lo, int64_t &hi) const {
    int64_t start = o * stride[d] - padBegin[d];
    int64_t dil = dilation[d];
    lo = start >= 0 ? 0 : (-start + dil - 1) / dil;
    int64_t top = in[d] - 1 - start;
    hi = top < 0 ? 0 : top / dil + 1;
    if (hi > kernel[d])
      hi = kernel[d];
    if (lo > hi)
      lo = hi;
  }
};

/// Geometry of an NC... input `x` and result `y`, with s = rank - 2
/// spatial dims (1 to 3). `kernel`, `strides`, `dilations` point to s
/// values (dilations may be null: all 1), `pads` to 2s (begins, then ends).
inline WindowGeometry makeWindowGeometry(const KernelArgs &args,
                                         const TensorArg &x, const TensorArg &y,
                                         const int64_t *kernel,
                                         const int64_t *strides,
                                         const int64_t *pads,
                                         const int64_t *dilations) {
  int s = x.rank - 2;
  if (s < 1 || s > WindowGeometry::kDims || y.rank != x.rank)
    args.invalid("expected 1 to 3 spatial dims");
  WindowGeometry g;
  int lead = WindowGeometry::kDims - s;
  for (int d = 0; d < WindowGeometry::kDims; ++d) {
    int i = d - lead;
    bool real = i >= 0;
    g.in[d] = real ? x.dims[2 + i] : 1;
    g.out[d] = real ? y.dims[2 + i] : 1;
    g.kernel[d] = real ? kernel[i] : 1;
    g.stride[d] = real ? strides[i] : 1;
    g.padBegin[d] = real ? pads[i] : 0;
    g.padEnd[d] = real ? pads[s + i] : 0;
    g.dilation[d] = real && dilations ? dilations[i] : 1;
    if (g.kernel[d] < 1 || g.stride[d] < 1 || g.dilation[d] < 1)
      args.invalid("kernel, strides and dilations must be >= 1");
    if (g.padBegin[d] < 0 || g.padEnd[d] < 0)
      args.invalid("pads must be >= 0");
  }
  return g;
}

/// Channel layout and window geometry of conv and of its gradients, so that
/// the forward and backward kernels read and check them the same way.
struct ConvShape {
  WindowGeometry g;
  int64_t batch, channels, outChannels, groups;
  int64_t cg, ocg; // channels per group, in and out

  int64_t taps() const { return g.kernelSize(); }
  bool pointwise() const {
    for (int d = 0; d < WindowGeometry::kDims; ++d)
      if (g.kernel[d] != 1 || g.stride[d] != 1 || g.padBegin[d] != 0 ||
          g.in[d] != g.out[d])
        return false;
    return true;
  }
};

/// Reads and checks the shape of a conv: `in` is x (or dx), `out` y (or
/// dy), `w` the weight (or its gradient). Attribute `groupsAttr` holds the
/// group count and the next one the 4s array of kernel attributes (strides,
/// pads, dilations). `rankError` is the message for mismatched ranks.
inline ConvShape makeConvShape(const KernelArgs &args, const TensorArg &in,
                               const TensorArg &out, const TensorArg &w,
                               int groupsAttr, const char *rankError) {
  if (in.rank < 3 || w.rank != in.rank || out.rank != in.rank)
    args.invalid(rankError);
  const int s = in.rank - 2;
  const int64_t *a = args.attrArray(groupsAttr + 1, 4 * s);
  ConvShape p;
  p.g = makeWindowGeometry(args, in, out, w.dims + 2, a, a + s, a + 3 * s);
  p.batch = in.dims[0];
  p.channels = in.dims[1];
  p.outChannels = out.dims[1];
  p.groups = args.attr(groupsAttr);
  if (p.groups < 1 || p.channels % p.groups != 0 ||
      p.outChannels % p.groups != 0 || w.dims[0] != p.outChannels ||
      w.dims[1] * p.groups != p.channels || out.dims[0] != p.batch)
    args.invalid("inconsistent channel, group or weight dims");
  p.cg = p.channels / p.groups;
  p.ocg = p.outChannels / p.groups;
  return p;
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_CONVGEOMETRY_H
