//===- Cast.cu - GPU cast kernel ------------------------------------------===//
//
// Converts between any two dtypes exactly as runtime/kernels/cpu/Cast.cpp:
// values go through the wider type, 16-bit floats through float (nearest
// even when narrowing, so f64 -> bf16 rounds twice as on the CPU),
// integers to floats as C does, floats to integers truncating toward zero
// with NaN -> 0 and saturation, anything to bool as != 0, bool as 0 or 1.
// Equal dtypes copy.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/DataKernelUtil.cuh"

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::data;

namespace {

/// Converts one value of a type with arithmetic (not F16, BF16 or Bool)
/// to D.
template <class D, class S> static __device__ inline D convertScalar(S v) {
  if constexpr (std::is_same_v<D, F16>) {
    return toF16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<D, BF16>) {
    return toBF16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<D, Bool>) {
    return Bool{static_cast<uint8_t>(v != S(0))};
  } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    // Out of range (and NaN) is undefined in C++; 0 for NaN and saturation
    // for the rest, as the CPU kernel.
    return v != v ? D(0)
           : v <= static_cast<S>(std::numeric_limits<D>::lowest())
               ? std::numeric_limits<D>::lowest()
           : v >= static_cast<S>(std::numeric_limits<D>::max())
               ? std::numeric_limits<D>::max()
               : static_cast<D>(v);
  } else {
    return static_cast<D>(v);
  }
}

template <class S, class D> struct ConvertOp {
  __device__ D operator()(S v) const {
    if constexpr (std::is_same_v<S, D>)
      return v;
    else if constexpr (std::is_same_v<S, Bool>)
      return convertScalar<D>(static_cast<uint8_t>(v.bits != 0));
    else
      return convertScalar<D>(widen(v));
  }
};

} // namespace

extern "C" void weft_cuda_k_cast(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("cast", bufs, desc);
  args.expectTensors(2, 2);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &y = args.tensor(1);
  args.expectSameNumel(0, 1);
  if (x.dtype == y.dtype) {
    if (x.data != y.data && x.bytes() > 0)
      check(cudaMemcpyAsync(y.data, x.data, static_cast<size_t>(x.bytes()),
                            cudaMemcpyDeviceToDevice, computeStream()),
            "kernel cast: copying");
    return;
  }
  dispatchAnyType(x.dtype, args, [&](auto srcTag) {
    using S = typename decltype(srcTag)::type;
    dispatchAnyType(y.dtype, args, [&](auto dstTag) {
      using D = typename decltype(dstTag)::type;
      launchMap(x.as<S>(), y.as<D>(), x.numel, ConvertOp<S, D>{}, "cast");
    });
  });
}
