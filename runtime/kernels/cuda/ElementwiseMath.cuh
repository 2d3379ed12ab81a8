//===- ElementwiseMath.cuh - Element functions of the GPU unary/binary ----===//
//
// The per-element math of weft_cuda_k_unary and weft_cuda_k_binary
// (Elementwise.cu), shared with weft_cuda_k_fused (Fused.cu) so a fused
// chain gives the bits of the unfused kernels: f32 exp, tanh, erf and
// sigmoid as the CPU's polynomials (VectorMath.h, so both backends agree to
// rounding), wrapping integer arithmetic, numpy's NaN-propagating max/min
// and pow, with the exponents pow by a one-element exponent turns into
// plain arithmetic.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CUDA_ELEMENTWISEMATH_CUH
#define WEFT_RUNTIME_KERNELS_CUDA_ELEMENTWISEMATH_CUH

#include "weft/runtime/KernelABI.h"

#include <cstdint>
#include <limits>
#include <type_traits>

namespace weft {
namespace cuda {
namespace data {

//===-- float math of VectorMath.h ----------------------------------------===//

static __device__ inline float expReduce(float x, int32_t &n) {
  const float kShifter = 12582912.0f;
  const float t = x * 1.44269504088896341f + kShifter;
  n = static_cast<int32_t>(static_cast<uint32_t>(__float_as_int(t)) -
                           static_cast<uint32_t>(__float_as_int(kShifter)));
  const float nf = t - kShifter;
  const float r = x - nf * 0.693145751953125f;
  return r - nf * 1.428606765330187e-06f;
}

static __device__ inline float expm1Small(float r) {
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  return p * r;
}

static __device__ inline float pow2i(int32_t n) {
  return __int_as_float(
      static_cast<int32_t>((static_cast<uint32_t>(n) + 127u) << 23));
}

static __device__ inline float fastExp(float x) {
  x = x < -104.0f ? -104.0f : x;
  x = x > 89.0f ? 89.0f : x;
  int32_t n;
  const float r = expReduce(x, n);
  const float p = expm1Small(r) + 1.0f;
  const int32_t half = n / 2;
  return p * pow2i(half) *
         pow2i(static_cast<int32_t>(static_cast<uint32_t>(n) -
                                    static_cast<uint32_t>(half)));
}

static __device__ inline float fastExpm1NonNeg(float x) {
  int32_t n;
  const float r = expReduce(x, n);
  const float s = pow2i(n);
  return s * expm1Small(r) + (s - 1.0f);
}

static __device__ inline float fastTanh(float x) {
  float a = x < 0.0f ? -x : x;
  a = a > 9.0f ? 9.0f : a;
  const float e = fastExpm1NonNeg(2.0f * a);
  float t = e / (e + 2.0f);
  t = x < 0.0f ? -t : t;
  return x != x ? x : t;
}

static __device__ inline float fastErf(float x) {
  const float a = x < 0.0f ? -x : x;
  const float t = a * a;
  float ps = -6.1026870428e-04f;
  ps = ps * t + 5.0144841524e-03f;
  ps = ps * t - 2.6780719129e-02f;
  ps = ps * t + 1.1282194093e-01f;
  ps = ps * t - 3.7612528805e-01f;
  ps = ps * t + 1.1283791547e+00f;
  const float small = a * ps;
  const float c = a > 3.92f ? 3.92f : a;
  const float u = c * 6.6225165563e-01f - 1.5960264901e+00f;
  float q = 4.5071440386e-05f;
  q = q * u - 2.5886431756e-04f;
  q = q * u + 1.0183462838e-03f;
  q = q * u - 3.6448639541e-03f;
  q = q * u + 1.2291668460e-02f;
  q = q * u - 4.0190048992e-02f;
  q = q * u + 1.3485967083e-01f;
  q = q * u - 5.4820572153e-01f;
  q = q * u - 1.5246114842e+00f;
  const float large = 1.0f - fastExp(q - c * c);
  float r = a <= 0.9f ? small : a >= 3.92f ? 1.0f : large;
  r = x < 0.0f ? -r : r;
  return x != x ? x : r;
}

static __device__ inline float fastSigmoid(float x) {
  return 1.0f / (1.0f + fastExp(-x));
}

//===-- integer arithmetic (wrapping, as the CPU kernels) -----------------===//

template <class T> static __device__ inline T wrapNeg(T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(v));
  else
    return -v;
}
template <class T> static __device__ inline T wrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a + b;
}
template <class T> static __device__ inline T wrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) -
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a - b;
}
template <class T> static __device__ inline T wrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) *
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a * b;
}

//===-- element ops -------------------------------------------------------===//

/// Unary op kOp (a WeftUnaryOp other than NOT) on an arithmetic type.
template <class T, int kOp> struct UnaryOp {
  __device__ T operator()(T v) const {
    if constexpr (kOp == WEFT_UNARY_NEG) {
      return wrapNeg(v);
    } else if constexpr (kOp == WEFT_UNARY_RELU) {
      return v < T(0) ? T(0) : v;
    } else if constexpr (kOp == WEFT_UNARY_SQRT) {
      return sqrt(v);
    } else if constexpr (kOp == WEFT_UNARY_LOG) {
      return log(v);
    } else if constexpr (kOp == WEFT_UNARY_SIN) {
      return sin(v);
    } else if constexpr (kOp == WEFT_UNARY_COS) {
      return cos(v);
    } else if constexpr (kOp == WEFT_UNARY_FLOOR) {
      return floor(v);
    } else if constexpr (kOp == WEFT_UNARY_CEIL) {
      return ceil(v);
    } else if constexpr (kOp == WEFT_UNARY_ROUND) {
      return rint(v);
    } else if constexpr (kOp == WEFT_UNARY_ATAN) {
      return atan(v);
    } else if constexpr (std::is_same_v<T, float>) {
      if constexpr (kOp == WEFT_UNARY_EXP)
        return fastExp(v);
      else if constexpr (kOp == WEFT_UNARY_TANH)
        return fastTanh(v);
      else if constexpr (kOp == WEFT_UNARY_ERF)
        return fastErf(v);
      else
        return fastSigmoid(v);
    } else {
      if constexpr (kOp == WEFT_UNARY_EXP)
        return exp(v);
      else if constexpr (kOp == WEFT_UNARY_TANH)
        return tanh(v);
      else if constexpr (kOp == WEFT_UNARY_ERF)
        return erf(v);
      else
        return v >= 0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v));
    }
  }
};

template <class T> struct FloatPowOp {
  __device__ T operator()(T a, T b) const { return pow(a, b); }
};

/// v^p for a p that is one element of the exponent tensor: the CPU kernel
/// turns the exponents 2, 1, 3, 0.5 and -1 into plain arithmetic (deciding
/// on the host); here every element decides, and the branch is uniform.
template <class T> static __device__ inline T powByScalar(T v, T p) {
  if (p == T(2))
    return v * v;
  if (p == T(1))
    return v;
  if (p == T(3))
    return v * v * v;
  if (p == T(0.5))
    // pow(-0, .5) = +0 and pow(-inf, .5) = +inf, unlike sqrt.
    return v == -std::numeric_limits<T>::infinity()
               ? std::numeric_limits<T>::infinity()
               : sqrt(v) + T(0);
  if (p == T(-1))
    return T(1) / v;
  return pow(v, p);
}

// Max/Min propagate NaN like numpy's maximum/minimum.
template <class T> struct PropagatingMaxOp {
  __device__ T operator()(T a, T b) const { return (a != a || a > b) ? a : b; }
};
template <class T> struct PropagatingMinOp {
  __device__ T operator()(T a, T b) const { return (a != a || a < b) ? a : b; }
};

} // namespace data
} // namespace cuda
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CUDA_ELEMENTWISEMATH_CUH
