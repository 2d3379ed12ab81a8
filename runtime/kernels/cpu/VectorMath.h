//===- VectorMath.h - Loop-friendly float math ----------------------------===//
//
// exp, tanh, erf and sigmoid written as straight-line float arithmetic (no
// calls, no branches) so GCC vectorizes the loops that use them; libm's
// versions are scalar calls. exp: range reduction by ln2 and a degree-7 Taylor
// polynomial on |r| <= ln2/2, accurate to about 1 ulp, with correct
// overflow to +inf, gradual underflow to 0 and NaN propagation.
//
// The loops that use them live in RowOps.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_VECTORMATH_H
#define WEFT_RUNTIME_KERNELS_CPU_VECTORMATH_H

#include <cstdint>
#include <cstring>
#include <limits>

namespace weft {
namespace cpu {

inline float asFloat(int32_t i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}

inline int32_t asInt(float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i;
}

/// Splits x into n*ln2 + r with |r| <= ln2/2; returns r and sets n.
inline float expReduce(float x, int32_t &n) {
  // Adding 1.5*2^23 rounds x*log2(e) to an integer held in the low bits.
  const float kShifter = 12582912.0f;
  float t = x * 1.44269504088896341f + kShifter;
  // Unsigned arithmetic: for NaN input the bits are garbage, not UB.
  n = static_cast<int32_t>(static_cast<uint32_t>(asInt(t)) -
                           static_cast<uint32_t>(asInt(kShifter)));
  float nf = t - kShifter;
  // ln2 split so nf * kLn2Hi is exact for |n| < 2^9.
  float r = x - nf * 0.693145751953125f;
  return r - nf * 1.428606765330187e-06f;
}

/// e^r - 1 for |r| <= ln2/2 (Taylor, degree 7).
inline float expm1Small(float r) {
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  return p * r;
}

/// 2^n for -126 <= n <= 127.
inline float pow2i(int32_t n) {
  return asFloat(static_cast<int32_t>((static_cast<uint32_t>(n) + 127u) << 23));
}

inline float fastExp(float x) {
  // Below -104 the result is under half the smallest subnormal; above 89
  // the scaling overflows to +inf. NaN passes both comparisons.
  x = x < -104.0f ? -104.0f : x;
  x = x > 89.0f ? 89.0f : x;
  int32_t n;
  float r = expReduce(x, n);
  float p = expm1Small(r) + 1.0f;
  // Two scalings keep each factor a normal float for n in [-150, 128].
  int32_t half = n / 2;
  return p * pow2i(half) *
         pow2i(static_cast<int32_t>(static_cast<uint32_t>(n) -
                                    static_cast<uint32_t>(half)));
}

/// e^x - 1 for 0 <= x <= 20, accurate near 0 (used by tanh).
inline float fastExpm1NonNeg(float x) {
  int32_t n;
  float r = expReduce(x, n);
  float s = pow2i(n);
  return s * expm1Small(r) + (s - 1.0f);
}

inline float fastTanh(float x) {
  float a = x < 0.0f ? -x : x;
  // tanh(9) rounds to 1 in float.
  a = a > 9.0f ? 9.0f : a;
  float e = fastExpm1NonNeg(2.0f * a);
  float t = e / (e + 2.0f);
  t = x < 0.0f ? -t : t;
  return x != x ? x : t;
}

/// erf, within about 2 ulp. |x| <= 0.9: x * P(x^2); 0.9 < |x| < 3.92:
/// 1 - exp(Q(|x|) - x^2) with Q a fit of log(erfc(x)) + x^2, which is
/// smooth; beyond, erf rounds to +-1. Both polynomials are Chebyshev
/// interpolants converted to monomials (coefficients derived for weft).
inline float fastErf(float x) {
  float a = x < 0.0f ? -x : x;
  float t = a * a;
  float ps = -6.1026870428e-04f;
  ps = ps * t + 5.0144841524e-03f;
  ps = ps * t - 2.6780719129e-02f;
  ps = ps * t + 1.1282194093e-01f;
  ps = ps * t - 3.7612528805e-01f;
  ps = ps * t + 1.1283791547e+00f;
  float small = a * ps;
  float c = a > 3.92f ? 3.92f : a;
  float u = c * 6.6225165563e-01f - 1.5960264901e+00f;
  float q = 4.5071440386e-05f;
  q = q * u - 2.5886431756e-04f;
  q = q * u + 1.0183462838e-03f;
  q = q * u - 3.6448639541e-03f;
  q = q * u + 1.2291668460e-02f;
  q = q * u - 4.0190048992e-02f;
  q = q * u + 1.3485967083e-01f;
  q = q * u - 5.4820572153e-01f;
  q = q * u - 1.5246114842e+00f;
  float large = 1.0f - fastExp(q - c * c);
  float r = a <= 0.9f ? small : a >= 3.92f ? 1.0f : large;
  r = x < 0.0f ? -r : r;
  return x != x ? x : r;
}

/// 1 / (1 + e^-x): e^-x overflows to +inf for very negative x, giving 0.
inline float fastSigmoid(float x) { return 1.0f / (1.0f + fastExp(-x)); }

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_VECTORMATH_H
