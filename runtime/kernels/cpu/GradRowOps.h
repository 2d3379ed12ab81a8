//===- GradRowOps.h - Vectorized row loops of the backward kernels --------===//
//
// The inner loops of the gradient kernels, built like RowOps.cpp for three
// x86 levels selected at load time. Every function works on one row (or one
// block of columns) and is deterministic: its result depends only on its
// arguments, never on how callers split their work over threads.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_GRADROWOPS_H
#define WEFT_RUNTIME_KERNELS_CPU_GRADROWOPS_H

#include <cstdint>

namespace weft {
namespace cpu {

/// acc[i] += a[i] * b[i * strideB].
void mulAddRow(float *acc, const float *a, const float *b, int64_t strideB,
               int64_t n);

/// dst[i * stride] += w * src[i].
void scatterAxpyRow(float *dst, int64_t stride, const float *src, float w,
                    int64_t n);
/// dst[i * stride] += src[i].
void scatterAddRow(float *dst, int64_t stride, const float *src, int64_t n);

/// One tap of a max-pool window for n outputs: output i reads
/// src[i * stride], at plane offset base + i * stride. It replaces the
/// output's running maximum (best[i], at pos[i]; pos < 0 before the first
/// tap) when it is the first tap, larger, or the first NaN.
void maxPoolArgRow(const float *src, int64_t stride, int32_t base, float *best,
                   int32_t *pos, int64_t n);

/// Gradient of softmax (log = false: dx = y * (dy - sum(dy * y))) or of
/// log-softmax (dx = dy - exp(y) * sum(dy)) over one row; y is the forward
/// result. dx may alias y or dy.
void softmaxGradRow(const float *y, const float *dy, float *dx, int64_t n,
                    bool log);
/// The same over the n rows of a [n, stride] block, for columns [0, width),
/// with the sums taken down the columns; `acc` holds width floats.
void softmaxGradColumns(const float *y, const float *dy, float *dx, int64_t n,
                        int64_t stride, int64_t width, bool log, float *acc);

/// Layer-norm backward of one row of n elements: recomputes the row's mean
/// and inverse standard deviation as layerNormRow does, writes dx and adds
/// dy * xhat to dscale[i] and dy to dbias[i].
void layerNormGradRow(const float *x, const float *dy, const float *scale,
                      float *dx, float *dscale, float *dbias, int64_t n,
                      float epsilon);

/// dx = coef * (softmax(x) - onehot(label)) over one row of c classes.
void xentGradRow(const float *x, float *dx, int64_t c, float coef,
                 int64_t label);
/// The same for `width` positions laid out as columns of a [c, stride]
/// block: column j uses coef[j] and label[j] (label < 0: the column is
/// ignored and gets 0). `acc` holds 2 * width floats.
void xentGradColumns(const float *x, float *dx, int64_t c, int64_t stride,
                     int64_t width, const float *coef, const int64_t *label,
                     float *acc);

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_GRADROWOPS_H
