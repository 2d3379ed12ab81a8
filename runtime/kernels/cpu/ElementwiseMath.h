//===- ElementwiseMath.h - Per-element arithmetic of the binary kernel ----===//
//
// The element functions weft_k_binary applies (Elementwise.cpp), shared with
// weft_k_fused (Fused.cpp) so a fused chain gives the bits of the unfused
// kernels: wrapping integer arithmetic, numpy's NaN-propagating max/min and
// the exponents pow turns into plain arithmetic when the exponent is one
// element. The unary float ops are unaryRow (RowOps.h) for both kernels.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_ELEMENTWISEMATH_H
#define WEFT_RUNTIME_KERNELS_CPU_ELEMENTWISEMATH_H

#include <cmath>
#include <limits>
#include <type_traits>

namespace weft {
namespace cpu {

// Integer arithmetic wraps (it is done in the unsigned type).
template <class T> T wrapNeg(T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(v));
  else
    return -v;
}
template <class T> T wrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a + b;
}
template <class T> T wrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) -
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a - b;
}
template <class T> T wrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) *
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a * b;
}

// Max/Min propagate NaN like numpy's maximum/minimum.
template <class T> T propagatingMax(T a, T b) {
  return (a != a || a > b) ? a : b;
}
template <class T> T propagatingMin(T a, T b) {
  return (a != a || a < b) ? a : b;
}

/// Pow with one scalar float exponent `e`: the common x^2 of decomposed
/// norms, x^0.5, ... as plain arithmetic rather than a pow call per
/// element. Calls map(f) with the element function for `e` and returns
/// true, or returns false when `e` is not one of them (std::pow applies).
template <class T, class Map> bool withPowByScalar(T e, Map &&map) {
  if (e == T(2))
    map([](T v) { return v * v; });
  else if (e == T(1))
    map([](T v) { return v; });
  else if (e == T(3))
    map([](T v) { return v * v * v; });
  else if (e == T(0.5))
    // pow(-0, .5) = +0 and pow(-inf, .5) = +inf, unlike sqrt.
    map([](T v) {
      return v == -std::numeric_limits<T>::infinity()
                 ? std::numeric_limits<T>::infinity()
                 : std::sqrt(v) + T(0);
    });
  else if (e == T(-1))
    map([](T v) { return T(1) / v; });
  else
    return false;
  return true;
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_ELEMENTWISEMATH_H
