//===- Winograd.h - 3x3 stride-1 convolution by Winograd's algorithm ------===//
//
// F(m x m, 3 x 3): each m x m block of outputs comes from an (m+2) x (m+2)
// input tile through (m+2)^2 elementwise products in a transformed domain,
// instead of 9 m^2 multiply-adds per (input, output) channel pair. Summed
// over input channels, the products are (m+2)^2 independent gemms
//   M_xi[tiles, OC] = V_xi[tiles, C] x U_xi[C, OC],
// run on gemmTile. See Winograd.cpp for the data layout.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_WINOGRAD_H
#define WEFT_RUNTIME_KERNELS_CPU_WINOGRAD_H

#include <cstdint>

namespace weft {
namespace cpu {

/// A 2-D conv with a 3x3 kernel, stride 1, dilation 1 and one group.
struct Conv3x3 {
  int64_t batch, channels, outChannels;
  int64_t inH, inW, outH, outW;
  int64_t padTop, padLeft;
  const float *x, *w, *bias; // bias may be null
  float *y;
};

/// Output tile size m (2 or 4) Winograd would use for `c`, or 0 when the
/// direct method is expected to be faster or Winograd cannot run here
/// (it needs weft's AVX-512 kernels). The environment variable
/// WEFT_CONV_WINOGRAD, read once, narrows the choice: "0" never uses
/// Winograd, "2" only m = 2 (rounding like direct convolution; m = 4 is a
/// few times less accurate, see Winograd.cpp).
int winogradTileSize(const Conv3x3 &c);

/// Computes c.y with tile size m from winogradTileSize (nonzero).
void winogradConv3x3(const Conv3x3 &c, int m);

/// Makes winogradTileSize return m (2 or 4) whenever Winograd can run, or
/// 0 whenever it returns nonzero (-1); 0 restores the automatic choice.
/// For tests.
void winogradForceForTesting(int m);

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_WINOGRAD_H
