//===- Normalization.cpp - batch_norm, layer_norm and softmax kernels -----===//
//
// All f32. batch_norm is the inference form with given statistics, folded
// into one multiply-add per element. layer_norm normalizes each row of the
// trailing dims from `axis` (two passes: mean, then squared deviations).
// softmax and log_softmax subtract the row max before exponentiating; along
// a non-innermost axis they work on whole [axis, inner] blocks so the inner
// loops stay contiguous.
//
//===----------------------------------------------------------------------===//

#include "DTypes.h"
#include "NormShapes.h"
#include "Parallel.h"
#include "RowOps.h"
#include "Scratch.h"

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

using namespace weft;
using namespace weft::cpu;

extern "C" void weft_k_batch_norm(void *const *bufs, const int64_t *desc) {
  KernelArgs args("batch_norm", bufs, desc);
  args.expectTensors(6, 6);
  args.expectAttrs(1);
  expectAllF32(args);
  const TensorArg &x = args.tensor(0);
  const TensorArg &y = args.tensor(5);
  if (x.rank < 2)
    args.invalid("input must have rank >= 2");
  args.expectSameNumel(0, 5);
  const int64_t channels = x.dims[1];
  for (int i = 1; i <= 4; ++i)
    if (args.tensor(i).numel != channels)
      args.invalid("scale, bias, mean and var must hold one value per "
                   "channel");
  const double eps = args.attrDouble(0);
  const float *scale = args.tensor(1).as<float>();
  const float *bias = args.tensor(2).as<float>();
  const float *mean = args.tensor(3).as<float>();
  const float *var = args.tensor(4).as<float>();
  std::vector<float> mul(channels), add(channels);
  for (int64_t c = 0; c < channels; ++c) {
    float m = scale[c] / std::sqrt(var[c] + static_cast<float>(eps));
    mul[c] = m;
    add[c] = bias[c] - mean[c] * m;
  }
  const int64_t planes = x.dims[0] * channels;
  const int64_t size = x.extent(2, x.rank);
  const float *px = x.as<float>();
  float *py = y.as<float>();
  parallelFor(planes, grainFor(size), [&](int64_t begin, int64_t end) {
    // The channel of plane p, counted along (no division per plane: with
    // 1x1 planes, [N, C, 1, 1], that is most of the work).
    int64_t c = begin % channels;
    for (int64_t p = begin; p < end; ++p) {
      if (size == 1)
        py[p] = px[p] * mul[c] + add[c];
      else
        affineRow(px + p * size, py + p * size, size, mul[c], add[c]);
      if (++c == channels)
        c = 0;
    }
  });
}

extern "C" void weft_k_layer_norm(void *const *bufs, const int64_t *desc) {
  KernelArgs args("layer_norm", bufs, desc);
  args.expectAttrs(3);
  const bool hasBias = args.attr(2) != 0;
  args.expectTensors(hasBias ? 4 : 3, hasBias ? 4 : 3);
  expectF32RoundedResult(args);
  const TensorArg &x = args.tensor(0);
  const TensorArg &y = args.tensor(args.numTensors() - 1);
  const NormRows nr = layerNormRows(args, x);
  args.expectSameNumel(0, args.numTensors() - 1);
  const int64_t inner = nr.inner, rows = nr.rows;
  if (args.tensor(1).numel != inner ||
      (hasBias && args.tensor(2).numel != inner))
    args.invalid("scale and bias must hold prod(x.dims[axis:]) values");
  const float eps = static_cast<float>(args.attrDouble(1));
  const float *scale = args.tensor(1).as<float>();
  const float *bias = hasBias ? args.tensor(2).as<float>() : nullptr;
  const float *px = x.as<float>();
  dispatchF32Or16(y.dtype, args, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T *py = y.as<T>();
    parallelFor(rows, grainFor(3 * inner), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        if constexpr (std::is_same_v<T, float>) {
          layerNormRow(px + r * inner, py + r * inner, inner, scale, bias, eps);
        } else {
          // The f32 row, then each value rounded once (a cast's bits).
          float *row = scratch<float>(0, inner);
          layerNormRow(px + r * inner, row, inner, scale, bias, eps);
          T *out = py + r * inner;
          for (int64_t i = 0; i < inner; ++i)
            out[i] = narrowTo<T>(row[i]);
        }
      }
    });
  });
}

extern "C" void weft_k_softmax(void *const *bufs, const int64_t *desc) {
  KernelArgs args("softmax", bufs, desc);
  args.expectTensors(2, 2);
  args.expectAttrs(2);
  expectAllF32(args);
  const TensorArg &x = args.tensor(0);
  const TensorArg &y = args.tensor(1);
  args.expectSameNumel(0, 1);
  const int64_t axis = args.attr(0);
  const bool log = args.attr(1) != 0;
  if (x.rank == 0) { // softmax of a single value
    y.as<float>()[0] = log ? 0.0f : 1.0f;
    return;
  }
  const SoftmaxAxis sa = softmaxAxis(args, x, axis);
  const int64_t n = sa.n, inner = sa.inner, outer = sa.outer;
  if (x.numel == 0)
    return;
  const float *px = x.as<float>();
  float *py = y.as<float>();
  if (inner == 1) {
    parallelFor(outer, grainFor(4 * n), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        softmaxRow(px + r * n, py + r * n, n, log);
    });
    return;
  }
  const SoftmaxColumnChunks cc(inner);
  const int64_t width = cc.width;
  parallelFor(outer * cc.chunks, grainFor(4 * n * width),
              [&](int64_t begin, int64_t end) {
                float *acc = scratch<float>(0, 2 * width);
                for (int64_t t = begin; t < end; ++t) {
                  int64_t r, j0, j1;
                  cc.task(t, r, j0, j1);
                  softmaxColumns(px + r * n * inner + j0,
                                 py + r * n * inner + j0, n, inner, j1 - j0,
                                 log, acc);
                }
              });
}
