//===- GradRowOps.cpp - Vectorized row loops of the backward kernels ------===//
//
// Like RowOps.cpp: every exported function carries WEFT_GRAD_ROW_OP, so GCC
// builds it for each listed x86 level and the loader picks one; reductions
// keep 8 or 32 partial results so they vectorize without reassociating
// floats (32 where the loop would otherwise wait on the adds' latency).
//
//===----------------------------------------------------------------------===//

#include "GradRowOps.h"
#include "RowOps.h"
#include "VectorMath.h"

#include <cmath>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    defined(__linux__) && !defined(WEFT_DISABLE_ISA_CLONES)
#define WEFT_GRAD_ROW_OP                                                       \
  __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define WEFT_GRAD_ROW_OP
#endif

namespace weft {
namespace cpu {
namespace {

inline float sum8(const float *acc) {
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) +
         ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

/// Partial results per reduction: enough independent adds in flight to
/// hide their latency at every vector width.
constexpr int kWide = 32;

inline float sumWide(const float *acc) {
  float s = 0.0f;
  for (int j = 0; j < kWide; ++j)
    s += acc[j];
  return s;
}

inline float sumOf(const float *__restrict x, int64_t n) {
  float acc[kWide] = {};
  int64_t i = 0;
  for (; i + kWide <= n; i += kWide)
    for (int j = 0; j < kWide; ++j)
      acc[j] += x[i + j];
  float s = sumWide(acc);
  for (; i < n; ++i)
    s += x[i];
  return s;
}

inline float dotOf(const float *__restrict a, const float *__restrict b,
                   int64_t n) {
  float acc[kWide] = {};
  int64_t i = 0;
  for (; i + kWide <= n; i += kWide)
    for (int j = 0; j < kWide; ++j)
      acc[j] += a[i + j] * b[i + j];
  float s = sumWide(acc);
  for (; i < n; ++i)
    s += a[i] * b[i];
  return s;
}

} // namespace

WEFT_GRAD_ROW_OP void mulAddRow(float *__restrict acc,
                                const float *__restrict a,
                                const float *__restrict b, int64_t strideB,
                                int64_t n) {
  if (strideB == 1) {
    for (int64_t i = 0; i < n; ++i)
      acc[i] += a[i] * b[i];
  } else if (strideB == 2) {
    for (int64_t i = 0; i < n; ++i)
      acc[i] += a[i] * b[2 * i];
  } else {
    for (int64_t i = 0; i < n; ++i)
      acc[i] += a[i] * b[i * strideB];
  }
}

WEFT_GRAD_ROW_OP void scatterAxpyRow(float *__restrict dst, int64_t stride,
                                     const float *__restrict src, float w,
                                     int64_t n) {
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] += w * src[i];
  } else if (stride == 2) {
    for (int64_t i = 0; i < n; ++i)
      dst[2 * i] += w * src[i];
  } else {
    for (int64_t i = 0; i < n; ++i)
      dst[i * stride] += w * src[i];
  }
}

WEFT_GRAD_ROW_OP void scatterAddRow(float *__restrict dst, int64_t stride,
                                    const float *__restrict src, int64_t n) {
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] += src[i];
  } else if (stride == 2) {
    for (int64_t i = 0; i < n; ++i)
      dst[2 * i] += src[i];
  } else {
    for (int64_t i = 0; i < n; ++i)
      dst[i * stride] += src[i];
  }
}

WEFT_GRAD_ROW_OP void maxPoolArgRow(const float *__restrict src, int64_t stride,
                                    int32_t base, float *__restrict best,
                                    int32_t *__restrict pos, int64_t n) {
  const int32_t s = static_cast<int32_t>(stride);
  if (s == 1) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = src[i];
      const bool take =
          pos[i] < 0 || v > best[i] || (v != v && best[i] == best[i]);
      best[i] = take ? v : best[i];
      pos[i] = take ? base + static_cast<int32_t>(i) : pos[i];
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const float v = src[i * stride];
      const bool take =
          pos[i] < 0 || v > best[i] || (v != v && best[i] == best[i]);
      best[i] = take ? v : best[i];
      pos[i] = take ? base + static_cast<int32_t>(i) * s : pos[i];
    }
  }
}

WEFT_GRAD_ROW_OP void softmaxGradRow(const float *y, const float *dy, float *dx,
                                     int64_t n, bool log) {
  if (log) {
    const float s = sumOf(dy, n);
    for (int64_t i = 0; i < n; ++i)
      dx[i] = dy[i] - fastExp(y[i]) * s;
  } else {
    const float s = dotOf(dy, y, n);
    for (int64_t i = 0; i < n; ++i)
      dx[i] = y[i] * (dy[i] - s);
  }
}

WEFT_GRAD_ROW_OP void softmaxGradColumns(const float *y, const float *dy,
                                         float *dx, int64_t n, int64_t stride,
                                         int64_t width, bool log, float *acc) {
  float *__restrict s = acc;
  for (int64_t j = 0; j < width; ++j)
    s[j] = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float *yr = y + i * stride, *dr = dy + i * stride;
    if (log) {
      for (int64_t j = 0; j < width; ++j)
        s[j] += dr[j];
    } else {
      for (int64_t j = 0; j < width; ++j)
        s[j] += dr[j] * yr[j];
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const float *yr = y + i * stride, *dr = dy + i * stride;
    float *out = dx + i * stride;
    if (log) {
      for (int64_t j = 0; j < width; ++j)
        out[j] = dr[j] - fastExp(yr[j]) * s[j];
    } else {
      for (int64_t j = 0; j < width; ++j)
        out[j] = yr[j] * (dr[j] - s[j]);
    }
  }
}

WEFT_GRAD_ROW_OP void
layerNormGradRow(const float *__restrict x, const float *__restrict dy,
                 const float *__restrict scale, float *__restrict dx,
                 float *__restrict dscale, float *__restrict dbias, int64_t n,
                 float epsilon) {
  // Mean, then variance from squared deviations, as layerNormRow.
  const float mean = sumOf(x, n) / static_cast<float>(n);
  float acc[kWide] = {}, acc2[kWide] = {};
  int64_t i;
  for (i = 0; i + kWide <= n; i += kWide)
    for (int j = 0; j < kWide; ++j) {
      const float d = x[i + j] - mean;
      acc[j] += d * d;
    }
  float sq = sumWide(acc);
  for (; i < n; ++i)
    sq += (x[i] - mean) * (x[i] - mean);
  const float rstd = 1.0f / std::sqrt(sq / static_cast<float>(n) + epsilon);
  // sg = sum(g), sgx = sum(g * xhat) with g = dy * scale.
  for (int j = 0; j < kWide; ++j)
    acc[j] = 0.0f;
  for (i = 0; i + kWide <= n; i += kWide)
    for (int j = 0; j < kWide; ++j) {
      const float g = dy[i + j] * scale[i + j];
      acc[j] += g;
      acc2[j] += g * ((x[i + j] - mean) * rstd);
    }
  float sg = sumWide(acc), sgx = sumWide(acc2);
  for (; i < n; ++i) {
    const float g = dy[i] * scale[i];
    sg += g;
    sgx += g * ((x[i] - mean) * rstd);
  }
  const float inv = 1.0f / static_cast<float>(n);
  const float mg = sg * inv, mgx = sgx * inv;
  // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
  for (i = 0; i < n; ++i) {
    const float xh = (x[i] - mean) * rstd;
    const float d = dy[i];
    dx[i] = rstd * ((d * scale[i] - mg) - xh * mgx);
    dscale[i] += d * xh;
    dbias[i] += d;
  }
}

WEFT_GRAD_ROW_OP void xentGradRow(const float *__restrict x,
                                  float *__restrict dx, int64_t c, float coef,
                                  int64_t label) {
  const float m = rowMax(x, c);
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= c; i += 8)
    for (int j = 0; j < 8; ++j) {
      float e = fastExp(x[i + j] - m);
      dx[i + j] = e;
      acc[j] += e;
    }
  float s = sum8(acc);
  for (; i < c; ++i) {
    float e = fastExp(x[i] - m);
    dx[i] = e;
    s += e;
  }
  const float f = coef / s;
  for (i = 0; i < c; ++i)
    dx[i] *= f;
  dx[label] -= coef;
}

WEFT_GRAD_ROW_OP void
xentGradColumns(const float *__restrict x, float *__restrict dx, int64_t c,
                int64_t stride, int64_t width, const float *__restrict coef,
                const int64_t *__restrict label, float *__restrict acc) {
  float *__restrict mx = acc;
  float *__restrict f = acc + width;
  for (int64_t j = 0; j < width; ++j) {
    mx[j] = -std::numeric_limits<float>::infinity();
    f[j] = 0.0f;
  }
  for (int64_t k = 0; k < c; ++k) {
    const float *row = x + k * stride;
    for (int64_t j = 0; j < width; ++j)
      mx[j] = row[j] > mx[j] ? row[j] : mx[j];
  }
  for (int64_t k = 0; k < c; ++k) {
    const float *row = x + k * stride;
    float *out = dx + k * stride;
    for (int64_t j = 0; j < width; ++j) {
      float e = fastExp(row[j] - mx[j]);
      out[j] = e;
      f[j] += e;
    }
  }
  for (int64_t j = 0; j < width; ++j)
    f[j] = coef[j] / f[j];
  for (int64_t k = 0; k < c; ++k) {
    float *out = dx + k * stride;
    for (int64_t j = 0; j < width; ++j)
      out[j] *= f[j];
  }
  for (int64_t j = 0; j < width; ++j) {
    if (label[j] >= 0) {
      dx[label[j] * stride + j] -= coef[j];
    } else {
      for (int64_t k = 0; k < c; ++k)
        dx[k * stride + j] = 0.0f;
    }
  }
}

} // namespace cpu
} // namespace weft
