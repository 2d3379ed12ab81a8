//===- RowOps.h - Vectorized loops over contiguous rows -------------------===//
//
// The float inner loops that are compute bound (exp, erf, tanh) or run at
// cache speed (softmax, layer norm, pooling, depthwise conv rows). They are
// defined once in RowOps.cpp and built for three x86 levels (baseline SSE2,
// AVX2+FMA, AVX-512) selected when the library loads, so one binary uses the
// widest vectors of the machine it runs on. Kernels call them per row.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_ROWOPS_H
#define WEFT_RUNTIME_KERNELS_CPU_ROWOPS_H

#include <cstdint>

namespace weft {
namespace cpu {

/// y[i] = op(x[i]) for a WeftUnaryOp float op other than NOT; false if the
/// op is not a float op. y may alias x.
bool unaryRow(int64_t op, const float *x, float *y, int64_t n);

float rowSum(const float *x, int64_t n);
/// sum over i < n of a[i] * b[i].
float rowDot(const float *a, const float *b, int64_t n);
/// Largest element; -inf for an empty row. NaN elements are skipped.
float rowMax(const float *x, int64_t n);
/// Sum of e^(x[i] - shift).
float rowExpShiftedSum(const float *x, int64_t n, float shift);

/// Softmax (log = false) or log-softmax of one row; y may alias x.
void softmaxRow(const float *x, float *y, int64_t n, bool log);
/// Softmax over n rows of a [n, stride] block, for columns [0, width);
/// `acc` holds 2 * width floats of scratch. y may alias x.
void softmaxColumns(const float *x, float *y, int64_t n, int64_t stride,
                    int64_t width, bool log, float *acc);

/// y = (x - mean) * rstd * scale + bias (bias may be null), mean and rstd
/// computed over the row.
void layerNormRow(const float *x, float *y, int64_t n, const float *scale,
                  const float *bias, float epsilon);

/// y[i] = x[i] * mul + add.
void affineRow(const float *x, float *y, int64_t n, float mul, float add);
/// y[i] *= s.
void scaleRow(float *y, int64_t n, float s);

/// dst[i] += w * src[i * stride].
void axpyRow(float *dst, const float *src, int64_t stride, float w, int64_t n);
/// dst[i] = max(dst[i], src[i * stride]); NaN in src wins.
void maxRow(float *dst, const float *src, int64_t stride, int64_t n);
/// dst[i] += src[i * stride].
void addRow(float *dst, const float *src, int64_t stride, int64_t n);

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_ROWOPS_H
