//===- FusedProgramBuilder.h - weft_k_fused programs for tests --*- C++ -*-===//
//
// Builds the attributes of a weft_k_fused launch (KernelABI.h) in tests: the
// CPU kernel tests (FusedTest.cpp, FusedLoweringTest.cpp) and the GPU ones
// (test/cuda/FusedKernelTest.cpp). No test framework needed.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_UNIT_KERNELS_FUSEDPROGRAMBUILDER_H
#define WEFT_TEST_UNIT_KERNELS_FUSEDPROGRAMBUILDER_H

#include "weft/runtime/KernelABI.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace weft {
namespace test {

constexpr int64_t kAdd = WEFT_FUSED_BINARY + WEFT_BINARY_ADD;
constexpr int64_t kSub = WEFT_FUSED_BINARY + WEFT_BINARY_SUB;
constexpr int64_t kMul = WEFT_FUSED_BINARY + WEFT_BINARY_MUL;
constexpr int64_t kDiv = WEFT_FUSED_BINARY + WEFT_BINARY_DIV;
constexpr int64_t kPow = WEFT_FUSED_BINARY + WEFT_BINARY_POW;
constexpr int64_t kMax = WEFT_FUSED_BINARY + WEFT_BINARY_MAX;
constexpr int64_t kMin = WEFT_FUSED_BINARY + WEFT_BINARY_MIN;
constexpr int64_t kCopy = WEFT_FUSED_COPY;

/// A fused program: operands, immediates, instructions, result registers.
struct Program {
  int numOperands = 0;
  std::vector<double> imms;
  std::vector<std::array<int64_t, 4>> code; // opcode, a, b, dtype
  std::vector<int64_t> out;

  /// Adds an immediate (all before the first instruction); its register.
  int64_t imm(double v) {
    imms.push_back(v);
    return numOperands + static_cast<int64_t>(imms.size()) - 1;
  }
  /// Appends an instruction; returns its register. Immediates must all be
  /// added before the first instruction.
  int64_t op(int64_t opcode, int64_t a, int64_t b = -1,
             int64_t dtype = WEFT_F32) {
    code.push_back({opcode, a, b, dtype});
    return numOperands + static_cast<int64_t>(imms.size() + code.size()) - 1;
  }
  std::vector<int64_t> attrs() const {
    std::vector<int64_t> a = {numOperands, static_cast<int64_t>(out.size()),
                              static_cast<int64_t>(imms.size())};
    for (double v : imms)
      a.push_back(weftDoubleToAttr(v));
    a.push_back(static_cast<int64_t>(code.size()));
    for (const auto &c : code)
      a.insert(a.end(), c.begin(), c.end());
    a.insert(a.end(), out.begin(), out.end());
    return a;
  }
};

/// The numpy broadcast of two shapes (which must broadcast).
inline std::vector<int64_t> broadcastDims(const std::vector<int64_t> &a,
                                          const std::vector<int64_t> &b) {
  std::vector<int64_t> r(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < r.size(); ++i) {
    const size_t ia = i + a.size(), ib = i + b.size();
    const int64_t da = ia >= r.size() ? a[ia - r.size()] : 1;
    const int64_t db = ib >= r.size() ? b[ib - r.size()] : 1;
    r[i] = da == 1 ? db : da;
  }
  return r;
}

/// Registers of the GELU chain appendGelu adds.
struct GeluRegisters {
  int64_t t, y, rounded;
};

/// The GELU chain of an activation (operand 0) with a bias (operand 1):
/// t = x + bias, y = 0.5 * t * (1 + erf(t / sqrt 2)), and y rounded to
/// `yType`. Adds its three immediates, so call it before other instructions.
inline GeluRegisters appendGelu(Program &p, int64_t yType) {
  const int64_t sqrt2 = p.imm(std::sqrt(2.0)), one = p.imm(1.0),
                half = p.imm(0.5);
  const int64_t x = p.op(kCopy, 0);
  const int64_t t = p.op(kAdd, x, 1);
  const int64_t u = p.op(kDiv, t, sqrt2);
  const int64_t e = p.op(WEFT_UNARY_ERF, u);
  const int64_t s = p.op(kAdd, e, one);
  const int64_t v = p.op(kMul, t, s);
  const int64_t y = p.op(kMul, v, half);
  return {t, y, p.op(kCopy, y, -1, yType)};
}

/// Every opcode a fused program may hold: copy, the unary ones, the
/// binary ones.
inline std::vector<int64_t> everyFusedOpcode() {
  std::vector<int64_t> ops = {kCopy};
  for (int64_t op = WEFT_UNARY_NEG; op <= WEFT_UNARY_SIGMOID; ++op)
    ops.push_back(op);
  for (int64_t op = kAdd; op <= kMin; ++op)
    ops.push_back(op);
  return ops;
}

} // namespace test
} // namespace weft

#endif // WEFT_TEST_UNIT_KERNELS_FUSEDPROGRAMBUILDER_H
