//===- RtcStd.cuh - The C++ library the NVRTC-compiled kernels use --------===//
//
// NVRTC has no C++ library and no C headers: the fused kernels weft
// compiles at run time (FusedJit.h) get this header under the names
// <cstdint>, <stdint.h>, <limits>, <type_traits> and <string.h>. It holds
// what DeviceScalar.cuh, ElementwiseMath.cuh, FusedDevice.cuh and
// KernelABI.h use of them, nothing more (memcpy is NVRTC's own). nvcc never
// sees it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CUDA_RTCSTD_CUH
#define WEFT_RUNTIME_KERNELS_CUDA_RTCSTD_CUH

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
typedef decltype(sizeof(0)) size_t;

namespace std {
using ::int16_t;
using ::int32_t;
using ::int64_t;
using ::int8_t;
using ::size_t;
using ::uint16_t;
using ::uint32_t;
using ::uint64_t;
using ::uint8_t;

template <class T, T v> struct integral_constant {
  static constexpr T value = v;
};
using true_type = integral_constant<bool, true>;
using false_type = integral_constant<bool, false>;

template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class A, class B> constexpr bool is_same_v = is_same<A, B>::value;

template <class T> struct is_integral : false_type {};
template <> struct is_integral<bool> : true_type {};
template <> struct is_integral<char> : true_type {};
template <> struct is_integral<signed char> : true_type {};
template <> struct is_integral<unsigned char> : true_type {};
template <> struct is_integral<short> : true_type {};
template <> struct is_integral<unsigned short> : true_type {};
template <> struct is_integral<int> : true_type {};
template <> struct is_integral<unsigned int> : true_type {};
template <> struct is_integral<long> : true_type {};
template <> struct is_integral<unsigned long> : true_type {};
template <> struct is_integral<long long> : true_type {};
template <> struct is_integral<unsigned long long> : true_type {};
template <class T> constexpr bool is_integral_v = is_integral<T>::value;

template <class T> struct make_unsigned;
template <> struct make_unsigned<signed char> { using type = unsigned char; };
template <> struct make_unsigned<unsigned char> { using type = unsigned char; };
template <> struct make_unsigned<short> { using type = unsigned short; };
template <> struct make_unsigned<unsigned short> {
  using type = unsigned short;
};
template <> struct make_unsigned<int> { using type = unsigned int; };
template <> struct make_unsigned<unsigned int> { using type = unsigned int; };
template <> struct make_unsigned<long> { using type = unsigned long; };
template <> struct make_unsigned<unsigned long> { using type = unsigned long; };
template <> struct make_unsigned<long long> {
  using type = unsigned long long;
};
template <> struct make_unsigned<unsigned long long> {
  using type = unsigned long long;
};
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;

template <class T> struct numeric_limits;
template <> struct numeric_limits<float> {
  __device__ static float infinity() { return __int_as_float(0x7f800000); }
};
template <> struct numeric_limits<double> {
  __device__ static double infinity() {
    return __longlong_as_double(0x7ff0000000000000LL);
  }
};
} // namespace std

#endif // WEFT_RUNTIME_KERNELS_CUDA_RTCSTD_CUH
