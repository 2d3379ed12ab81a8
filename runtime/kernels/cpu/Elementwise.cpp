//===- Elementwise.cpp - unary, binary and compare kernels ----------------===//
//
// Arithmetic runs on f32, f64, i64 and i32; integer arithmetic wraps (it is
// done in the unsigned type) and Div truncates toward zero as in C. The
// logical ops run on bool, comparisons on every dtype (16-bit floats are
// compared as float).
//
//===----------------------------------------------------------------------===//

#include "DTypes.h"
#include "ElementwiseLoops.h"
#include "ElementwiseMath.h"
#include "RowOps.h"

#include <cmath>
#include <limits>
#include <type_traits>

using namespace weft;
using namespace weft::cpu;

namespace {

// Transcendental maps cost ~10x a load/store; split them finer.
constexpr int64_t kCheapGrain = kParallelGrain;
constexpr int64_t kCostlyGrain = kParallelGrain / 8;

template <class T> T intDiv(T a, T b) {
  if (b == 0)
    fatal(kExitBadInput, "kernel binary: integer division by zero");
  // -MIN / -1 overflows (and traps on x86); wrap it like the other ops.
  return b == -1 ? wrapNeg(a) : static_cast<T>(a / b);
}

template <class T> T intRem(T a, T b) {
  if (b == 0)
    fatal(kExitBadInput, "kernel binary: integer remainder by zero");
  // MIN % -1 overflows (and traps on x86); its remainder is 0.
  return b == -1 ? T(0) : static_cast<T>(a % b);
}

template <class T> T intPow(T base, T exp) {
  if (exp < 0) // 1 / base^-exp, truncated toward zero
    return base == 1 ? 1 : base == -1 ? ((exp & 1) ? -1 : 1) : 0;
  T result = 1;
  while (exp != 0) {
    if (exp & 1)
      result = wrapMul(result, base);
    base = wrapMul(base, base);
    exp >>= 1;
  }
  return result;
}

//===-- unary -------------------------------------------------------------===//

[[noreturn]] void unsupportedUnary(int64_t op, int64_t dtype) {
  fatal(kExitFailure, "kernel unary: op %lld is not defined for dtype %s",
        static_cast<long long>(op), dtypeName(dtype));
}

void unaryF32(int64_t op, const float *x, float *y, int64_t n) {
  if (op < WEFT_UNARY_NEG || op > WEFT_UNARY_ATAN || op == WEFT_UNARY_NOT)
    unsupportedUnary(op, WEFT_F32);
  const bool cheap =
      op == WEFT_UNARY_NEG || op == WEFT_UNARY_RELU || op == WEFT_UNARY_SQRT;
  parallelFor(n, cheap ? kCheapGrain : kCostlyGrain,
              [&](int64_t begin, int64_t end) {
                unaryRow(op, x + begin, y + begin, end - begin);
              });
}

void unaryF64(int64_t op, const double *x, double *y, int64_t n) {
  switch (op) {
  case WEFT_UNARY_NEG:
    return mapElements(x, y, n, kCheapGrain, [](double v) { return -v; });
  case WEFT_UNARY_SQRT:
    return mapElements(x, y, n, kCheapGrain,
                       [](double v) { return std::sqrt(v); });
  case WEFT_UNARY_EXP:
    return mapElements(x, y, n, kCostlyGrain,
                       [](double v) { return std::exp(v); });
  case WEFT_UNARY_LOG:
    return mapElements(x, y, n, kCostlyGrain,
                       [](double v) { return std::log(v); });
  case WEFT_UNARY_TANH:
    return mapElements(x, y, n, kCostlyGrain,
                       [](double v) { return std::tanh(v); });
  case WEFT_UNARY_ERF:
    return mapElements(x, y, n, kCostlyGrain,
                       [](double v) { return std::erf(v); });
  case WEFT_UNARY_RELU:
    return mapElements(x, y, n, kCheapGrain,
                       [](double v) { return v < 0.0 ? 0.0 : v; });
  case WEFT_UNARY_SIGMOID:
    return mapElements(x, y, n, kCostlyGrain, [](double v) {
      return v >= 0 ? 1.0 / (1.0 + std::exp(-v))
                    : std::exp(v) / (1.0 + std::exp(v));
    });
  case WEFT_UNARY_SIN:
    return mapElements(x, y, n, kCostlyGrain,
                       [](double v) { return std::sin(v); });
  case WEFT_UNARY_COS:
    return mapElements(x, y, n, kCostlyGrain,
                       [](double v) { return std::cos(v); });
  case WEFT_UNARY_FLOOR:
    return mapElements(x, y, n, kCheapGrain,
                       [](double v) { return std::floor(v); });
  case WEFT_UNARY_CEIL:
    return mapElements(x, y, n, kCheapGrain,
                       [](double v) { return std::ceil(v); });
  case WEFT_UNARY_ROUND:
    return mapElements(x, y, n, kCheapGrain,
                       [](double v) { return std::nearbyint(v); });
  case WEFT_UNARY_ATAN:
    return mapElements(x, y, n, kCostlyGrain,
                       [](double v) { return std::atan(v); });
  default:
    unsupportedUnary(op, WEFT_F64);
  }
}

template <class T>
void unaryInt(int64_t op, int64_t dtype, const T *x, T *y, int64_t n) {
  switch (op) {
  case WEFT_UNARY_NEG:
    return mapElements(x, y, n, kCheapGrain, [](T v) { return wrapNeg(v); });
  case WEFT_UNARY_RELU:
    return mapElements(x, y, n, kCheapGrain,
                       [](T v) { return v < 0 ? T(0) : v; });
  default:
    unsupportedUnary(op, dtype);
  }
}

//===-- binary ------------------------------------------------------------===//

[[noreturn]] void unsupportedBinary(int64_t op, int64_t dtype) {
  fatal(kExitFailure, "kernel binary: op %lld is not defined for dtype %s",
        static_cast<long long>(op), dtypeName(dtype));
}

/// Pow with one scalar float exponent as plain arithmetic where
/// withPowByScalar knows `e`; false otherwise.
template <class T> bool powByScalar(const T *a, T e, T *c, int64_t n) {
  return withPowByScalar(
      e, [&](auto op) { mapElements(a, c, n, kCheapGrain, op); });
}

template <class T>
void binaryArith(int64_t op, int64_t dtype, const BroadcastPlan<2> &plan,
                 const TensorArg &ta, const TensorArg &tb, T *c) {
  const T *a = ta.as<T>();
  const T *b = tb.as<T>();
  switch (op) {
  case WEFT_BINARY_ADD:
    return mapBroadcast2(plan, a, b, c, kCheapGrain,
                         [](T x, T y) { return wrapAdd(x, y); });
  case WEFT_BINARY_SUB:
    return mapBroadcast2(plan, a, b, c, kCheapGrain,
                         [](T x, T y) { return wrapSub(x, y); });
  case WEFT_BINARY_MUL:
    return mapBroadcast2(plan, a, b, c, kCheapGrain,
                         [](T x, T y) { return wrapMul(x, y); });
  case WEFT_BINARY_DIV:
    if constexpr (std::is_integral_v<T>)
      return mapBroadcast2(plan, a, b, c, kCostlyGrain,
                           [](T x, T y) { return intDiv(x, y); });
    else
      return mapBroadcast2(plan, a, b, c, kCheapGrain,
                           [](T x, T y) { return x / y; });
  case WEFT_BINARY_REM:
    if constexpr (std::is_integral_v<T>)
      return mapBroadcast2(plan, a, b, c, kCostlyGrain,
                           [](T x, T y) { return intRem(x, y); });
    else
      return mapBroadcast2(plan, a, b, c, kCostlyGrain,
                           [](T x, T y) { return std::fmod(x, y); });
  case WEFT_BINARY_POW:
    if constexpr (std::is_integral_v<T>) {
      return mapBroadcast2(plan, a, b, c, kCostlyGrain,
                           [](T x, T y) { return intPow(x, y); });
    } else {
      if (tb.numel == 1 && ta.numel == plan.numel &&
          powByScalar(a, *b, c, plan.numel))
        return;
      return mapBroadcast2(plan, a, b, c, kCostlyGrain,
                           [](T x, T y) { return std::pow(x, y); });
    }
  case WEFT_BINARY_MAX:
    return mapBroadcast2(plan, a, b, c, kCheapGrain,
                         [](T x, T y) { return propagatingMax(x, y); });
  case WEFT_BINARY_MIN:
    return mapBroadcast2(plan, a, b, c, kCheapGrain,
                         [](T x, T y) { return propagatingMin(x, y); });
  default:
    unsupportedBinary(op, dtype);
  }
}

void binaryBool(int64_t op, const BroadcastPlan<2> &plan, const uint8_t *a,
                const uint8_t *b, uint8_t *c) {
  switch (op) {
  case WEFT_BINARY_AND:
    return mapBroadcast2(plan, a, b, c, kCheapGrain, [](uint8_t x, uint8_t y) {
      return static_cast<uint8_t>((x != 0) & (y != 0));
    });
  case WEFT_BINARY_OR:
    return mapBroadcast2(plan, a, b, c, kCheapGrain, [](uint8_t x, uint8_t y) {
      return static_cast<uint8_t>((x != 0) | (y != 0));
    });
  case WEFT_BINARY_MAX:
    return mapBroadcast2(plan, a, b, c, kCheapGrain,
                         [](uint8_t x, uint8_t y) { return x > y ? x : y; });
  case WEFT_BINARY_MIN:
    return mapBroadcast2(plan, a, b, c, kCheapGrain,
                         [](uint8_t x, uint8_t y) { return x < y ? x : y; });
  default:
    unsupportedBinary(op, WEFT_BOOL);
  }
}

//===-- compare -----------------------------------------------------------===//

template <class T>
void compareTyped(const KernelArgs &args, int64_t op,
                  const BroadcastPlan<2> &plan, const T *a, const T *b,
                  uint8_t *c) {
  switch (op) {
  case WEFT_CMP_EQ:
    return mapBroadcast2(plan, a, b, c, kCheapGrain, [](T x, T y) {
      return static_cast<uint8_t>(widen(x) == widen(y));
    });
  case WEFT_CMP_LT:
    return mapBroadcast2(plan, a, b, c, kCheapGrain, [](T x, T y) {
      return static_cast<uint8_t>(widen(x) < widen(y));
    });
  case WEFT_CMP_GT:
    return mapBroadcast2(plan, a, b, c, kCheapGrain, [](T x, T y) {
      return static_cast<uint8_t>(widen(x) > widen(y));
    });
  case WEFT_CMP_LE:
    return mapBroadcast2(plan, a, b, c, kCheapGrain, [](T x, T y) {
      return static_cast<uint8_t>(widen(x) <= widen(y));
    });
  case WEFT_CMP_GE:
    return mapBroadcast2(plan, a, b, c, kCheapGrain, [](T x, T y) {
      return static_cast<uint8_t>(widen(x) >= widen(y));
    });
  default:
    fatal(kExitFailure, "kernel %s: unknown op %lld", args.kernel(),
          static_cast<long long>(op));
  }
}

} // namespace

extern "C" void weft_k_unary(void *const *bufs, const int64_t *desc) {
  KernelArgs args("unary", bufs, desc);
  args.expectTensors(2, 2);
  args.expectAttrs(1);
  const TensorArg &x = args.tensor(0);
  const TensorArg &y = args.tensor(1);
  args.expectDType(1, x.dtype);
  args.expectSameNumel(0, 1);
  int64_t op = args.attr(0);
  int64_t n = x.numel;
  switch (x.dtype) {
  case WEFT_F32:
    return unaryF32(op, x.as<float>(), y.as<float>(), n);
  case WEFT_F64:
    return unaryF64(op, x.as<double>(), y.as<double>(), n);
  case WEFT_I64:
    return unaryInt(op, x.dtype, x.as<int64_t>(), y.as<int64_t>(), n);
  case WEFT_I32:
    return unaryInt(op, x.dtype, x.as<int32_t>(), y.as<int32_t>(), n);
  case WEFT_BOOL:
    if (op != WEFT_UNARY_NOT)
      unsupportedUnary(op, x.dtype);
    return mapElements(x.as<uint8_t>(), y.as<uint8_t>(), n, kCheapGrain,
                       [](uint8_t v) { return static_cast<uint8_t>(v == 0); });
  default:
    args.unsupportedDType(x.dtype);
  }
}

extern "C" void weft_k_binary(void *const *bufs, const int64_t *desc) {
  KernelArgs args("binary", bufs, desc);
  args.expectTensors(3, 3);
  args.expectAttrs(1);
  const TensorArg &a = args.tensor(0);
  const TensorArg &b = args.tensor(1);
  const TensorArg &c = args.tensor(2);
  args.expectDType(1, a.dtype);
  args.expectDType(2, a.dtype);
  int64_t op = args.attr(0);
  const TensorArg *ins[2] = {&a, &b};
  BroadcastPlan<2> plan = makeBroadcastPlan(args, c, ins);
  if (a.dtype == WEFT_BOOL)
    return binaryBool(op, plan, a.as<uint8_t>(), b.as<uint8_t>(),
                      c.as<uint8_t>());
  if (op == WEFT_BINARY_AND || op == WEFT_BINARY_OR)
    unsupportedBinary(op, a.dtype);
  dispatchArithmeticDType(a.dtype, args, [&](auto tag) {
    using T = typename decltype(tag)::type;
    binaryArith<T>(op, a.dtype, plan, a, b, c.as<T>());
  });
}

extern "C" void weft_k_compare(void *const *bufs, const int64_t *desc) {
  KernelArgs args("compare", bufs, desc);
  args.expectTensors(3, 3);
  args.expectAttrs(1);
  const TensorArg &a = args.tensor(0);
  const TensorArg &b = args.tensor(1);
  const TensorArg &c = args.tensor(2);
  args.expectDType(1, a.dtype);
  args.expectDType(2, WEFT_BOOL);
  int64_t op = args.attr(0);
  const TensorArg *ins[2] = {&a, &b};
  BroadcastPlan<2> plan = makeBroadcastPlan(args, c, ins);
  dispatchAnyDType(a.dtype, args, [&](auto tag) {
    using T = typename decltype(tag)::type;
    compareTyped<T>(args, op, plan, a.as<T>(), b.as<T>(), c.as<uint8_t>());
  });
}
