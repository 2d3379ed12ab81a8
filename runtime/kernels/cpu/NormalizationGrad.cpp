//===- NormalizationGrad.cpp - layer_norm_grad and softmax_grad kernels ---===//
//
// All f32. layer_norm_grad recomputes each row's mean and inverse standard
// deviation exactly as layer_norm does (float, two passes) and writes
//
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  g = dy * scale,
//
// while dscale = sum over rows of dy * xhat and dbias = sum of dy. Rows go
// to a fixed number of blocks that depends only on the problem size; each
// block sums its rows in order into its own partial dscale/dbias and the
// partials are added in block order, so the sums do not depend on the
// thread count. softmax_grad works per row, or on [axis, column chunk]
// blocks when the axis is not innermost, like softmax.
//
//===----------------------------------------------------------------------===//

#include "GradRowOps.h"
#include "NormShapes.h"
#include "Parallel.h"
#include "Scratch.h"

#include <cstring>
#include <vector>

using namespace weft;
using namespace weft::cpu;

namespace {

/// Most row blocks of layer_norm_grad (each holds 2 partial rows).
constexpr int64_t kMaxNormBlocks = 64;

} // namespace

extern "C" void weft_k_layer_norm_grad(void *const *bufs, const int64_t *desc) {
  KernelArgs args("layer_norm_grad", bufs, desc);
  const NormRows nr = checkLayerNormGrad(args);
  const TensorArg &x = args.tensor(0);
  const int64_t inner = nr.inner, rows = nr.rows;
  const float eps = static_cast<float>(args.attrDouble(1));
  const float *px = x.as<float>();
  const float *scale = args.tensor(1).as<float>();
  const float *pdy = args.tensor(2).as<float>();
  float *pdx = args.tensor(3).as<float>();
  float *dscale = args.tensor(4).as<float>();
  float *dbias = args.tensor(5).as<float>();
  std::memset(dscale, 0, static_cast<size_t>(inner) * sizeof(float));
  std::memset(dbias, 0, static_cast<size_t>(inner) * sizeof(float));
  if (rows == 0)
    return;
  // Block count from the problem size only (never the thread count).
  int64_t blocks = rows * inner / kParallelGrain;
  blocks = blocks < 1 ? 1 : blocks > kMaxNormBlocks ? kMaxNormBlocks : blocks;
  blocks = blocks > rows ? rows : blocks;
  if (blocks == 1) {
    for (int64_t r = 0; r < rows; ++r)
      layerNormGradRow(px + r * inner, pdy + r * inner, scale, pdx + r * inner,
                       dscale, dbias, inner, eps);
    return;
  }
  std::vector<float> partial(static_cast<size_t>(2 * blocks * inner), 0.0f);
  parallelFor(blocks, 1, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      float *ps = partial.data() + 2 * blk * inner;
      float *pb = ps + inner;
      for (int64_t r = blk * rows / blocks; r < (blk + 1) * rows / blocks; ++r)
        layerNormGradRow(px + r * inner, pdy + r * inner, scale,
                         pdx + r * inner, ps, pb, inner, eps);
    }
  });
  // Column sums of the partials, in block order.
  parallelFor(inner, grainFor(2 * blocks), [&](int64_t b, int64_t e) {
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const float *ps = partial.data() + 2 * blk * inner;
      const float *pb = ps + inner;
      for (int64_t i = b; i < e; ++i) {
        dscale[i] += ps[i];
        dbias[i] += pb[i];
      }
    }
  });
}

extern "C" void weft_k_softmax_grad(void *const *bufs, const int64_t *desc) {
  KernelArgs args("softmax_grad", bufs, desc);
  args.expectTensors(3, 3);
  args.expectAttrs(2);
  expectAllF32(args);
  const TensorArg &y = args.tensor(0);
  args.expectSameNumel(0, 1);
  args.expectSameNumel(0, 2);
  const int64_t axis = args.attr(0);
  const bool log = args.attr(1) != 0;
  const float *py = y.as<float>();
  const float *pdy = args.tensor(1).as<float>();
  float *pdx = args.tensor(2).as<float>();
  if (y.rank == 0) { // softmax of a single value is constant
    softmaxGradRow(py, pdy, pdx, 1, log);
    return;
  }
  const SoftmaxAxis sa = softmaxAxis(args, y, axis);
  if (y.numel == 0)
    return;
  const int64_t n = sa.n, inner = sa.inner, outer = sa.outer;
  if (inner == 1) {
    parallelFor(outer, grainFor(3 * n), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        softmaxGradRow(py + r * n, pdy + r * n, pdx + r * n, n, log);
    });
    return;
  }
  const SoftmaxColumnChunks cc(inner);
  const int64_t width = cc.width;
  parallelFor(outer * cc.chunks, grainFor(3 * n * width),
              [&](int64_t begin, int64_t end) {
                float *acc = scratch<float>(0, width);
                for (int64_t t = begin; t < end; ++t) {
                  int64_t r, j0, j1;
                  cc.task(t, r, j0, j1);
                  const int64_t off = r * n * inner + j0;
                  softmaxGradColumns(py + off, pdy + off, pdx + off, n, inner,
                                     j1 - j0, log, acc);
                }
              });
}
