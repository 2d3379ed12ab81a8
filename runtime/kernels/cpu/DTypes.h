//===- DTypes.h - C++ types of the runtime's dtype codes ------------------===//
//
// Maps WeftDType codes to C++ element types so kernels are written once as
// templates and instantiated per dtype by the dispatch helpers below.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_DTYPES_H
#define WEFT_RUNTIME_KERNELS_CPU_DTYPES_H

#include "KernelArgs.h"
#include "weft/runtime/Float16.h"

#include <cstdint>
#include <type_traits>

namespace weft {
namespace cpu {

/// Storage types of the 16-bit floats; arithmetic goes through float.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

template <class T> struct TypeTag { using type = T; };

/// Value of an element in the type arithmetic and comparisons use.
template <class T> inline T widen(T v) { return v; }
inline float widen(Half v) { return halfToFloat(v.bits); }
inline float widen(BFloat16 v) { return bfloat16ToFloat(v.bits); }

/// `v` rounded to T (to nearest even for the 16-bit floats).
template <class T> inline T narrowTo(float v) {
  if constexpr (std::is_same_v<T, BFloat16>)
    return BFloat16{floatToBFloat16(v)};
  else if constexpr (std::is_same_v<T, Half>)
    return Half{floatToHalf(v)};
  else
    return v;
}

/// Calls f(TypeTag<T>{}) for the float dtypes kernels compute on in f32:
/// f32, bf16 and f16; anything else is an unsupported dtype.
template <class F>
void dispatchF32Or16(int64_t dtype, const KernelArgs &args, F &&f) {
  switch (dtype) {
  case WEFT_F32:
    return f(TypeTag<float>{});
  case WEFT_BF16:
    return f(TypeTag<BFloat16>{});
  case WEFT_F16:
    return f(TypeTag<Half>{});
  default:
    args.unsupportedDType(dtype);
  }
}

/// Calls f(TypeTag<T>{}) for the element type of `dtype`, for every dtype.
template <class F>
void dispatchAnyDType(int64_t dtype, const KernelArgs &args, F &&f) {
  switch (dtype) {
  case WEFT_F32:
    return f(TypeTag<float>{});
  case WEFT_F16:
    return f(TypeTag<Half>{});
  case WEFT_BF16:
    return f(TypeTag<BFloat16>{});
  case WEFT_F64:
    return f(TypeTag<double>{});
  case WEFT_I64:
    return f(TypeTag<int64_t>{});
  case WEFT_I32:
    return f(TypeTag<int32_t>{});
  case WEFT_I8:
    return f(TypeTag<int8_t>{});
  case WEFT_U8:
    return f(TypeTag<uint8_t>{});
  case WEFT_BOOL:
    return f(TypeTag<bool>{});
  default:
    args.unsupportedDType(dtype);
  }
}

/// As dispatchAnyDType, for the dtypes with arithmetic: f32, f64, i64, i32.
template <class F>
void dispatchArithmeticDType(int64_t dtype, const KernelArgs &args, F &&f) {
  switch (dtype) {
  case WEFT_F32:
    return f(TypeTag<float>{});
  case WEFT_F64:
    return f(TypeTag<double>{});
  case WEFT_I64:
    return f(TypeTag<int64_t>{});
  case WEFT_I32:
    return f(TypeTag<int32_t>{});
  default:
    args.unsupportedDType(dtype);
  }
}

/// Calls f(TypeTag<U>{}) with an unsigned integer type of `bytes` bytes, for
/// kernels that only move elements.
template <class F>
void dispatchByElementSize(int64_t bytes, const KernelArgs &args, F &&f) {
  switch (bytes) {
  case 1:
    return f(TypeTag<uint8_t>{});
  case 2:
    return f(TypeTag<uint16_t>{});
  case 4:
    return f(TypeTag<uint32_t>{});
  case 8:
    return f(TypeTag<uint64_t>{});
  default:
    args.invalid("unsupported element size");
  }
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_DTYPES_H
