//===- Cast.cpp - cast kernel ---------------------------------------------===//
//
// Converts between any two dtypes. Values go through the wider of the two
// types: 16-bit floats through float (rounding to nearest even when
// narrowing), integers to floats as C does, floats to integers truncating
// toward zero, anything to bool as != 0, and bool to anything as 0 or 1.
//
//===----------------------------------------------------------------------===//

#include "DTypes.h"
#include "ElementwiseLoops.h"

#include <cstring>
#include <limits>
#include <type_traits>

using namespace weft;
using namespace weft::cpu;

namespace {

/// Converts one value of a non-16-bit type (or float) to D.
template <class D, class S> D convertScalar(S v) {
  if constexpr (std::is_same_v<D, Half>)
    return Half{floatToHalf(static_cast<float>(v))};
  else if constexpr (std::is_same_v<D, BFloat16>)
    return BFloat16{floatToBFloat16(static_cast<float>(v))};
  else if constexpr (std::is_same_v<D, bool>)
    return v != S(0);
  else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>)
    // Out of range (and NaN) is undefined in C++; give 0 for NaN and
    // saturate the rest so the result does not depend on the compiler.
    return v != v ? D(0)
           : v <= static_cast<S>(std::numeric_limits<D>::lowest())
               ? std::numeric_limits<D>::lowest()
           : v >= static_cast<S>(std::numeric_limits<D>::max())
               ? std::numeric_limits<D>::max()
               : static_cast<D>(v);
  else
    return static_cast<D>(v);
}

template <class D, class S> D convert(S v) {
  if constexpr (std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>) {
    if constexpr (std::is_same_v<D, S>)
      return v;
    else
      return convertScalar<D>(widen(v));
  } else {
    return convertScalar<D>(v);
  }
}

} // namespace

extern "C" void weft_k_cast(void *const *bufs, const int64_t *desc) {
  KernelArgs args("cast", bufs, desc);
  args.expectTensors(2, 2);
  const TensorArg &x = args.tensor(0);
  const TensorArg &y = args.tensor(1);
  args.expectSameNumel(0, 1);
  if (x.dtype == y.dtype) {
    if (x.data != y.data)
      std::memcpy(y.data, x.data, static_cast<size_t>(x.bytes()));
    return;
  }
  dispatchAnyDType(x.dtype, args, [&](auto srcTag) {
    using S = typename decltype(srcTag)::type;
    dispatchAnyDType(y.dtype, args, [&](auto dstTag) {
      using D = typename decltype(dstTag)::type;
      mapElements(x.as<S>(), y.as<D>(), x.numel, kParallelGrain,
                  [](S v) { return convert<D>(v); });
    });
  });
}
