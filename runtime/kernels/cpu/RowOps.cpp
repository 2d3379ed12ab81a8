//===- RowOps.cpp - Vectorized loops over contiguous rows -----------------===//
//
// Every exported function carries WEFT_ROW_OP: GCC compiles it for each
// listed x86 level and an ifunc resolver picks one at load time. The helpers
// they inline are plain C++ (VectorMath.h), so each clone vectorizes them at
// its own width. Reductions keep 8 partial results so they vectorize
// without -ffast-math (which would reassociate every float sum in the file).
//
//===----------------------------------------------------------------------===//

#include "RowOps.h"
#include "VectorMath.h"

#include "weft/runtime/KernelABI.h"

#include <cmath>
#include <limits>

// WEFT_DISABLE_ISA_CLONES builds only the baseline (for testing it, or for
// tools that do not understand ifuncs).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    defined(__linux__) && !defined(WEFT_DISABLE_ISA_CLONES)
#define WEFT_ROW_OP                                                            \
  __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define WEFT_ROW_OP
#endif

namespace weft {
namespace cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline float sum8(const float *acc) {
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) +
         ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

inline float sumOf(const float *__restrict x, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      acc[j] += x[i + j];
  float s = sum8(acc);
  for (; i < n; ++i)
    s += x[i];
  return s;
}

inline float maxOf(const float *__restrict x, int64_t n) {
  float acc[8] = {kNegInf, kNegInf, kNegInf, kNegInf,
                  kNegInf, kNegInf, kNegInf, kNegInf};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  float m = kNegInf;
  for (int j = 0; j < 8; ++j)
    m = acc[j] > m ? acc[j] : m;
  for (; i < n; ++i)
    m = x[i] > m ? x[i] : m;
  return m;
}

inline float expShiftedSumOf(const float *__restrict x, int64_t n,
                             float shift) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      acc[j] += fastExp(x[i + j] - shift);
  float s = sum8(acc);
  for (; i < n; ++i)
    s += fastExp(x[i] - shift);
  return s;
}

/// y[i] = e^(x[i] - shift); returns the sum. y may alias x.
inline float expShiftedStore(const float *x, float *y, int64_t n, float shift) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) {
      float e = fastExp(x[i + j] - shift);
      y[i + j] = e;
      acc[j] += e;
    }
  float s = sum8(acc);
  for (; i < n; ++i) {
    float e = fastExp(x[i] - shift);
    y[i] = e;
    s += e;
  }
  return s;
}

inline float squaredDeviationOf(const float *__restrict x, int64_t n, float c) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) {
      float d = x[i + j] - c;
      acc[j] += d * d;
    }
  float s = sum8(acc);
  for (; i < n; ++i)
    s += (x[i] - c) * (x[i] - c);
  return s;
}

} // namespace

WEFT_ROW_OP bool unaryRow(int64_t op, const float *x, float *y, int64_t n) {
  switch (op) {
  case WEFT_UNARY_NEG:
    for (int64_t i = 0; i < n; ++i)
      y[i] = -x[i];
    return true;
  case WEFT_UNARY_SQRT:
    for (int64_t i = 0; i < n; ++i)
      y[i] = std::sqrt(x[i]);
    return true;
  case WEFT_UNARY_EXP:
    for (int64_t i = 0; i < n; ++i)
      y[i] = fastExp(x[i]);
    return true;
  case WEFT_UNARY_LOG:
    for (int64_t i = 0; i < n; ++i)
      y[i] = std::log(x[i]);
    return true;
  case WEFT_UNARY_TANH:
    for (int64_t i = 0; i < n; ++i)
      y[i] = fastTanh(x[i]);
    return true;
  case WEFT_UNARY_ERF:
    for (int64_t i = 0; i < n; ++i)
      y[i] = fastErf(x[i]);
    return true;
  case WEFT_UNARY_RELU:
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] < 0.0f ? 0.0f : x[i];
    return true;
  case WEFT_UNARY_SIGMOID:
    for (int64_t i = 0; i < n; ++i)
      y[i] = fastSigmoid(x[i]);
    return true;
  case WEFT_UNARY_SIN:
    for (int64_t i = 0; i < n; ++i)
      y[i] = std::sin(x[i]);
    return true;
  case WEFT_UNARY_COS:
    for (int64_t i = 0; i < n; ++i)
      y[i] = std::cos(x[i]);
    return true;
  case WEFT_UNARY_FLOOR:
    for (int64_t i = 0; i < n; ++i)
      y[i] = std::floor(x[i]);
    return true;
  case WEFT_UNARY_CEIL:
    for (int64_t i = 0; i < n; ++i)
      y[i] = std::ceil(x[i]);
    return true;
  case WEFT_UNARY_ATAN:
    for (int64_t i = 0; i < n; ++i)
      y[i] = std::atan(x[i]);
    return true;
  case WEFT_UNARY_ROUND:
    // The default rounding mode: to nearest, ties to even (ONNX's Round).
    for (int64_t i = 0; i < n; ++i)
      y[i] = std::nearbyint(x[i]);
    return true;
  default:
    return false;
  }
}

WEFT_ROW_OP float rowSum(const float *x, int64_t n) { return sumOf(x, n); }

WEFT_ROW_OP float rowDot(const float *__restrict a, const float *__restrict b,
                         int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      acc[j] += a[i + j] * b[i + j];
  float s = sum8(acc);
  for (; i < n; ++i)
    s += a[i] * b[i];
  return s;
}

WEFT_ROW_OP float rowMax(const float *x, int64_t n) { return maxOf(x, n); }

WEFT_ROW_OP float rowExpShiftedSum(const float *x, int64_t n, float shift) {
  return expShiftedSumOf(x, n, shift);
}

WEFT_ROW_OP void softmaxRow(const float *x, float *y, int64_t n, bool log) {
  const float m = maxOf(x, n);
  if (log) {
    // (x - max) - log(sum), not x - (max + log(sum)): the latter loses the
    // small log term against a large max.
    const float logSum = std::log(expShiftedSumOf(x, n, m));
    for (int64_t i = 0; i < n; ++i)
      y[i] = (x[i] - m) - logSum;
  } else {
    const float inv = 1.0f / expShiftedStore(x, y, n, m);
    for (int64_t i = 0; i < n; ++i)
      y[i] *= inv;
  }
}

WEFT_ROW_OP void softmaxColumns(const float *x, float *y, int64_t n,
                                int64_t stride, int64_t width, bool log,
                                float *acc) {
  float *__restrict mx = acc;
  float *__restrict sum = acc + width;
  for (int64_t j = 0; j < width; ++j) {
    mx[j] = kNegInf;
    sum[j] = 0.0f;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float *row = x + i * stride;
    for (int64_t j = 0; j < width; ++j)
      mx[j] = row[j] > mx[j] ? row[j] : mx[j];
  }
  for (int64_t i = 0; i < n; ++i) {
    const float *row = x + i * stride;
    float *out = y + i * stride;
    if (log) {
      for (int64_t j = 0; j < width; ++j)
        sum[j] += fastExp(row[j] - mx[j]);
    } else {
      for (int64_t j = 0; j < width; ++j) {
        float e = fastExp(row[j] - mx[j]);
        sum[j] += e;
        out[j] = e;
      }
    }
  }
  if (log) {
    for (int64_t j = 0; j < width; ++j)
      sum[j] = std::log(sum[j]);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < width; ++j)
        y[i * stride + j] = (x[i * stride + j] - mx[j]) - sum[j];
  } else {
    for (int64_t j = 0; j < width; ++j)
      sum[j] = 1.0f / sum[j];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < width; ++j)
        y[i * stride + j] *= sum[j];
  }
}

WEFT_ROW_OP void layerNormRow(const float *x, float *y, int64_t n,
                              const float *scale, const float *bias,
                              float epsilon) {
  const float mean = sumOf(x, n) / static_cast<float>(n);
  const float var = squaredDeviationOf(x, n, mean) / static_cast<float>(n);
  const float rstd = 1.0f / std::sqrt(var + epsilon);
  if (bias) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = (x[i] - mean) * rstd * scale[i] + bias[i];
  } else {
    for (int64_t i = 0; i < n; ++i)
      y[i] = (x[i] - mean) * rstd * scale[i];
  }
}

WEFT_ROW_OP void affineRow(const float *x, float *y, int64_t n, float mul,
                           float add) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] * mul + add;
}

WEFT_ROW_OP void scaleRow(float *y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i)
    y[i] *= s;
}

WEFT_ROW_OP void axpyRow(float *__restrict dst, const float *__restrict src,
                         int64_t stride, float w, int64_t n) {
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] += w * src[i];
  } else if (stride == 2) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] += w * src[2 * i];
  } else {
    for (int64_t i = 0; i < n; ++i)
      dst[i] += w * src[i * stride];
  }
}

WEFT_ROW_OP void maxRow(float *__restrict dst, const float *__restrict src,
                        int64_t stride, int64_t n) {
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = (src[i] > dst[i] || src[i] != src[i]) ? src[i] : dst[i];
  } else if (stride == 2) {
    for (int64_t i = 0; i < n; ++i) {
      float v = src[2 * i];
      dst[i] = (v > dst[i] || v != v) ? v : dst[i];
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      float v = src[i * stride];
      dst[i] = (v > dst[i] || v != v) ? v : dst[i];
    }
  }
}

WEFT_ROW_OP void addRow(float *__restrict dst, const float *__restrict src,
                        int64_t stride, int64_t n) {
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] += src[i];
  } else if (stride == 2) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] += src[2 * i];
  } else {
    for (int64_t i = 0; i < n; ++i)
      dst[i] += src[i * stride];
  }
}

} // namespace cpu
} // namespace weft
