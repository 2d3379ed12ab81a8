//===- Float16.h - IEEE half and bfloat16 conversions ---------------------===//
//
// Conversions between float and the two 16-bit float formats the runtime
// stores (WEFT_F16, WEFT_BF16). Narrowing rounds to nearest, ties to even;
// NaN stays NaN (quiet), infinities and signed zeros are kept, and half
// subnormals are produced and read exactly. Header-only so the kernels, the
// tensor I/O and the tests share one definition.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_FLOAT16_H
#define WEFT_RUNTIME_FLOAT16_H

#include <stdint.h>
#include <string.h>

namespace weft {

inline uint32_t floatBits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

inline float bitsToFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/// float -> IEEE binary16, round to nearest even.
inline uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t absBits = x & 0x7fffffffu;
  if (absBits >= 0x7f800000u) {
    // Inf stays Inf; NaN keeps its top payload bits and is made quiet.
    if (absBits == 0x7f800000u)
      return sign | 0x7c00u;
    return sign | 0x7e00u | static_cast<uint16_t>((absBits >> 13) & 0x1ffu);
  }
  // 65520 and above round to infinity.
  if (absBits >= 0x477ff000u)
    return sign | 0x7c00u;
  if (absBits >= 0x38800000u) {
    // Normal half: rebias the exponent (127 -> 15) and round the 13 dropped
    // mantissa bits; a carry correctly bumps the exponent.
    uint32_t mant = absBits + 0xc8000000u; // exponent - 112
    uint32_t roundBit = (mant >> 13) & 1u;
    mant += 0x0fffu + roundBit;
    return sign | static_cast<uint16_t>(mant >> 13);
  }
  if (absBits < 0x33000000u) // below half of the smallest subnormal
    return sign;
  // Subnormal half: value = m * 2^-24 with m < 1024.
  uint32_t exp = absBits >> 23;
  uint32_t mant = (absBits & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - exp; // 14..24 (value = mant * 2^(exp-150))
  uint32_t half = mant >> shift;
  uint32_t rem = mant & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (half & 1u)))
    ++half;
  return sign | static_cast<uint16_t>(half);
}

/// IEEE binary16 -> float (exact).
inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu)
    return bitsToFloat(sign | 0x7f800000u | (mant << 13));
  if (exp != 0)
    return bitsToFloat(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0)
    return bitsToFloat(sign);
  // Subnormal: normalize the mantissa.
  int e = -1;
  do {
    ++e;
    mant <<= 1;
  } while ((mant & 0x400u) == 0);
  return bitsToFloat(sign | ((112u - e) << 23) | ((mant & 0x3ffu) << 13));
}

/// float -> bfloat16 (the top half of a float), round to nearest even.
inline uint16_t floatToBFloat16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x0040u); // quiet NaN
  uint32_t roundBit = (x >> 16) & 1u;
  x += 0x7fffu + roundBit;
  return static_cast<uint16_t>(x >> 16);
}

/// bfloat16 -> float (exact).
inline float bfloat16ToFloat(uint16_t b) {
  return bitsToFloat(static_cast<uint32_t>(b) << 16);
}

} // namespace weft

#endif // WEFT_RUNTIME_FLOAT16_H
