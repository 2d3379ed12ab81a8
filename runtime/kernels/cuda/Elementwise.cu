//===- Elementwise.cu - GPU unary and binary kernels ----------------------===//
//
// The GPU twins of runtime/kernels/cpu/Elementwise.cpp, with its dtypes and
// messages: arithmetic on f32, f64, i64 and i32 (integers wrap; Div
// truncates toward zero), the logical ops on bool. The element functions
// are ElementwiseMath.cuh's (shared with the fused kernel); integer
// division by zero is reported through the device error word.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/DataKernelUtil.cuh"
#include "runtime/kernels/cuda/ElementwiseMath.cuh"

#include "runtime/kernels/cpu/Broadcast.h"
#include "runtime/kernels/cpu/DTypes.h"

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::data;

namespace {

//===-- unary -------------------------------------------------------------===//

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
  case WEFT_UNARY_SIN:
    return runUnary<T, WEFT_UNARY_SIN>(x, y);
  case WEFT_UNARY_COS:
    return runUnary<T, WEFT_UNARY_COS>(x, y);
  case WEFT_UNARY_FLOOR:
    return runUnary<T, WEFT_UNARY_FLOOR>(x, y);
  case WEFT_UNARY_CEIL:
    return runUnary<T, WEFT_UNARY_CEIL>(x, y);
  case WEFT_UNARY_ROUND:
    return runUnary<T, WEFT_UNARY_ROUND>(x, y);
  case WEFT_UNARY_ATAN:
    return runUnary<T, WEFT_UNARY_ATAN>(x, y);
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

/// C's % (MIN % -1 is 0); a zero divisor records an error like IntDivOp.
template <class T> struct IntRemOp {
  int *error;
  int code;
  __device__ T operator()(T a, T b) const {
    if (b == 0) {
      reportDeviceError(error, code);
      return T(0);
    }
    return b == T(-1) ? T(0) : static_cast<T>(a % b);
  }
};
template <class T> struct FloatRemOp {
  __device__ T operator()(T a, T b) const { return fmod(a, b); }
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

/// Pow by a one-element exponent with `a` the result's shape
/// (powByScalar).
template <class T> struct PowByScalarOp {
  const T *e;
  __device__ T operator()(T v) const { return powByScalar(v, *e); }
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
  case WEFT_BINARY_REM:
    if constexpr (std::is_integral_v<T>) {
      static const int code =
          registerDeviceError("kernel binary: integer remainder by zero");
      return launchBinary(plan, a, b, c, IntRemOp<T>{errorWord(), code},
                          "binary");
    } else {
      return launchBinary(plan, a, b, c, FloatRemOp<T>{}, "binary");
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
    return launchBinary(plan, a, b, c, PropagatingMaxOp<T>{}, "binary");
  case WEFT_BINARY_MIN:
    return launchBinary(plan, a, b, c, PropagatingMinOp<T>{}, "binary");
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
    return launchBinary(plan, a, b, c, PropagatingMaxOp<uint8_t>{}, "binary");
  case WEFT_BINARY_MIN:
    return launchBinary(plan, a, b, c, PropagatingMinOp<uint8_t>{}, "binary");
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
