//===- Elementwise.cu - GPU unary and binary kernels ----------------------===//
//
// The GPU twins of runtime/kernels/cpu/Elementwise.cpp, with its dtypes and
// messages: arithmetic on f32, f64, i64 and i32 (integers wrap; Div
// truncates toward zero), the logical ops on bool. f32 exp, tanh, erf and
// sigmoid use the CPU's polynomials (VectorMath.h) so both backends agree
// to rounding; integer division by zero is reported through the device
// error word.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/DataKernelUtil.cuh"

#include "runtime/kernels/cpu/Broadcast.h"
#include "runtime/kernels/cpu/DTypes.h"

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::data;

namespace {

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

//===-- unary -------------------------------------------------------------===//

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
    } else if constexpr (std::is_same_v<T, float>) {
      if constexpr (kOp == WEFT_UNARY_EXP)
        return fastExp(v);
      else if constexpr (kOp == WEFT_UNARY_TANH)
        return fastTanh(v);
      else if constexpr (kOp == WEFT_UNARY_ERF)
        return fastErf(v);
      else
        return 1.0f / (1.0f + fastExp(-v));
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

struct NotOp {
  __device__ uint8_t operator()(uint8_t v) const {
    return static_cast<uint8_t>(v == 0);
  }
};

[[noreturn]] void unsupportedUnary(int64_t op, int64_t dtype) {
  fatal(kExitFailure, "kernel unary: op %lld is not defined for dtype %s",
        static_cast<long long>(op), cpu::dtypeName(dtype));
}

template <class T, int kOp>
void runUnary(const cpu::TensorArg &x, const cpu::TensorArg &y) {
  launchMap(x.as<T>(), y.as<T>(), x.numel, UnaryOp<T, kOp>{}, "unary");
}

template <class T>
void unaryFloat(int64_t op, const cpu::TensorArg &x, const cpu::TensorArg &y) {
  switch (op) {
  case WEFT_UNARY_NEG:
    return runUnary<T, WEFT_UNARY_NEG>(x, y);
  case WEFT_UNARY_SQRT:
    return runUnary<T, WEFT_UNARY_SQRT>(x, y);
  case WEFT_UNARY_EXP:
    return runUnary<T, WEFT_UNARY_EXP>(x, y);
  case WEFT_UNARY_LOG:
    return runUnary<T, WEFT_UNARY_LOG>(x, y);
  case WEFT_UNARY_TANH:
    return runUnary<T, WEFT_UNARY_TANH>(x, y);
  case WEFT_UNARY_ERF:
    return runUnary<T, WEFT_UNARY_ERF>(x, y);
  case WEFT_UNARY_RELU:
    return runUnary<T, WEFT_UNARY_RELU>(x, y);
  case WEFT_UNARY_SIGMOID:
    return runUnary<T, WEFT_UNARY_SIGMOID>(x, y);
  default:
    unsupportedUnary(op, x.dtype);
  }
}

template <class T>
void unaryInt(int64_t op, const cpu::TensorArg &x, const cpu::TensorArg &y) {
  switch (op) {
  case WEFT_UNARY_NEG:
    return runUnary<T, WEFT_UNARY_NEG>(x, y);
  case WEFT_UNARY_RELU:
    return runUnary<T, WEFT_UNARY_RELU>(x, y);
  default:
    unsupportedUnary(op, x.dtype);
  }
}

//===-- binary ------------------------------------------------------------===//

template <class T> struct AddOp {
  __device__ T operator()(T a, T b) const { return wrapAdd(a, b); }
};
template <class T> struct SubOp {
  __device__ T operator()(T a, T b) const { return wrapSub(a, b); }
};
template <class T> struct MulOp {
  __device__ T operator()(T a, T b) const { return wrapMul(a, b); }
};
template <class T> struct FloatDivOp {
  __device__ T operator()(T a, T b) const { return a / b; }
};

/// Integer division truncating toward zero; -MIN / -1 wraps like the other
/// ops. Division by zero records an error (the CPU kernel exits) and gives
/// 0.
template <class T> struct IntDivOp {
  int *error;
  int code;
  __device__ T operator()(T a, T b) const {
    if (b == 0) {
      reportDeviceError(error, code);
      return T(0);
    }
    return b == T(-1) ? wrapNeg(a) : static_cast<T>(a / b);
  }
};

template <class T> struct IntPowOp {
  __device__ T operator()(T base, T exp) const {
    if (exp < 0) // 1 / base^-exp, truncated toward zero
      return base == 1 ? T(1) : base == -1 ? ((exp & 1) ? T(-1) : T(1)) : T(0);
    T result = 1;
    while (exp != 0) {
      if (exp & 1)
        result = wrapMul(result, base);
      base = wrapMul(base, base);
      exp >>= 1;
    }
    return result;
  }
};

template <class T> struct FloatPowOp {
  __device__ T operator()(T a, T b) const { return pow(a, b); }
};

/// Pow by a one-element exponent with `a` the result's shape: the CPU
/// kernel turns the exponents 2, 1, 3, 0.5 and -1 into plain arithmetic
/// (reading the exponent on the host); here every element reads it, and
/// the branch is uniform.
template <class T> struct PowByScalarOp {
  const T *e;
  __device__ T operator()(T v) const {
    const T p = *e;
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
};

// Max/Min propagate NaN like numpy's maximum/minimum.
template <class T> struct MaxOp {
  __device__ T operator()(T a, T b) const { return (a != a || a > b) ? a : b; }
};
template <class T> struct MinOp {
  __device__ T operator()(T a, T b) const { return (a != a || a < b) ? a : b; }
};

struct AndOp {
  __device__ uint8_t operator()(uint8_t a, uint8_t b) const {
    return static_cast<uint8_t>((a != 0) & (b != 0));
  }
};
struct OrOp {
  __device__ uint8_t operator()(uint8_t a, uint8_t b) const {
    return static_cast<uint8_t>((a != 0) | (b != 0));
  }
};

[[noreturn]] void unsupportedBinary(int64_t op, int64_t dtype) {
  fatal(kExitFailure, "kernel binary: op %lld is not defined for dtype %s",
        static_cast<long long>(op), cpu::dtypeName(dtype));
}

template <class T>
void binaryArith(int64_t op, const cpu::BroadcastPlan<2> &plan,
                 const cpu::TensorArg &ta, const cpu::TensorArg &tb,
                 const cpu::TensorArg &tc) {
  const T *a = ta.as<T>();
  const T *b = tb.as<T>();
  T *c = tc.as<T>();
  switch (op) {
  case WEFT_BINARY_ADD:
    return launchBinary(plan, a, b, c, AddOp<T>{}, "binary");
  case WEFT_BINARY_SUB:
    return launchBinary(plan, a, b, c, SubOp<T>{}, "binary");
  case WEFT_BINARY_MUL:
    return launchBinary(plan, a, b, c, MulOp<T>{}, "binary");
  case WEFT_BINARY_DIV:
    if constexpr (std::is_integral_v<T>) {
      static const int code =
          registerDeviceError("kernel binary: integer division by zero");
      return launchBinary(plan, a, b, c, IntDivOp<T>{errorWord(), code},
                          "binary");
    } else {
      return launchBinary(plan, a, b, c, FloatDivOp<T>{}, "binary");
    }
  case WEFT_BINARY_POW:
    if constexpr (std::is_integral_v<T>) {
      return launchBinary(plan, a, b, c, IntPowOp<T>{}, "binary");
    } else {
      if (tb.numel == 1 && ta.numel == plan.numel)
        return launchMap(a, c, plan.numel, PowByScalarOp<T>{b}, "binary");
      return launchBinary(plan, a, b, c, FloatPowOp<T>{}, "binary");
    }
  case WEFT_BINARY_MAX:
    return launchBinary(plan, a, b, c, MaxOp<T>{}, "binary");
  case WEFT_BINARY_MIN:
    return launchBinary(plan, a, b, c, MinOp<T>{}, "binary");
  default:
    unsupportedBinary(op, ta.dtype);
  }
}

void binaryBool(int64_t op, const cpu::BroadcastPlan<2> &plan, const uint8_t *a,
                const uint8_t *b, uint8_t *c) {
  switch (op) {
  case WEFT_BINARY_AND:
    return launchBinary(plan, a, b, c, AndOp{}, "binary");
  case WEFT_BINARY_OR:
    return launchBinary(plan, a, b, c, OrOp{}, "binary");
  case WEFT_BINARY_MAX:
    return launchBinary(plan, a, b, c, MaxOp<uint8_t>{}, "binary");
  case WEFT_BINARY_MIN:
    return launchBinary(plan, a, b, c, MinOp<uint8_t>{}, "binary");
  default:
    unsupportedBinary(op, WEFT_BOOL);
  }
}

} // namespace

extern "C" void weft_cuda_k_unary(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("unary", bufs, desc);
  args.expectTensors(2, 2);
  args.expectAttrs(1);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &y = args.tensor(1);
  args.expectDType(1, x.dtype);
  args.expectSameNumel(0, 1);
  const int64_t op = args.attr(0);
  switch (x.dtype) {
  case WEFT_F32:
    return unaryFloat<float>(op, x, y);
  case WEFT_F64:
    return unaryFloat<double>(op, x, y);
  case WEFT_I64:
    return unaryInt<int64_t>(op, x, y);
  case WEFT_I32:
    return unaryInt<int32_t>(op, x, y);
  case WEFT_BOOL:
    if (op != WEFT_UNARY_NOT)
      unsupportedUnary(op, x.dtype);
    return launchMap(x.as<uint8_t>(), y.as<uint8_t>(), x.numel, NotOp{},
                     "unary");
  default:
    args.unsupportedDType(x.dtype);
  }
}

extern "C" void weft_cuda_k_binary(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("binary", bufs, desc);
  args.expectTensors(3, 3);
  args.expectAttrs(1);
  const cpu::TensorArg &a = args.tensor(0);
  const cpu::TensorArg &b = args.tensor(1);
  const cpu::TensorArg &c = args.tensor(2);
  args.expectDType(1, a.dtype);
  args.expectDType(2, a.dtype);
  const int64_t op = args.attr(0);
  const cpu::TensorArg *ins[2] = {&a, &b};
  const cpu::BroadcastPlan<2> plan = cpu::makeBroadcastPlan(args, c, ins);
  if (a.dtype == WEFT_BOOL)
    return binaryBool(op, plan, a.as<uint8_t>(), b.as<uint8_t>(),
                      c.as<uint8_t>());
  if (op == WEFT_BINARY_AND || op == WEFT_BINARY_OR)
    unsupportedBinary(op, a.dtype);
  cpu::dispatchArithmeticDType(a.dtype, args, [&](auto tag) {
    using T = typename decltype(tag)::type;
    binaryArith<T>(op, plan, a, b, c);
  });
}
