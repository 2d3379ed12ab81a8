//===- FusedProgram.h - The fused kernel's program, decoded and checked ---===//
//
// What weft_k_fused (CPU, Fused.cpp) and weft_cuda_k_fused (GPU, Fused.cu)
// read from a call (x0..xn-1 -> y0..ym-1; n, m, k, imm[k], q, q x (opcode,
// a, b, dtype), out[m]; KernelABI.h) and check the same way, once per call
// on the host: the counts against the tensors and WeftFusedLimits, every
// instruction's opcode, registers (SSA: only earlier ones) and dtype, the
// result shapes, the operands' broadcasting and the buffers results may
// share. A bad program is a fatal error naming the kernel and the fault.
//
// Besides the program it records what both backends plan with: how each
// operand's elements map to the iteration space (FusedAccess), which
// registers hold one value for every element (uniform: immediates,
// one-element operands and what is computed from them alone), and each
// register's last use.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_FUSEDPROGRAM_H
#define WEFT_RUNTIME_KERNELS_CPU_FUSEDPROGRAM_H

#include "KernelArgs.h"

#include <cstdarg>
#include <cstdio>

namespace weft {
namespace cpu {

/// How element i (row-major over the iteration shape) of an operand is
/// found.
enum class FusedAccess : uint8_t {
  Full,    // the iteration shape (up to leading 1s): element i
  Scalar,  // one element: element 0
  Suffix,  // the trailing dims of the iteration shape: element i % numel
  General, // any other broadcast: numpy strides (a BroadcastPlan<1>)
};

struct FusedInstr {
  int op = 0;    // WeftUnaryOp code, WEFT_FUSED_BINARY + WeftBinaryOp code,
                 // or WEFT_FUSED_COPY
  int a = 0;     // registers read
  int b = -1;    // -1 for unary ops and copies
  int dtype = 0; // WEFT_F32, WEFT_BF16 or WEFT_F16: the result's rounding
};

struct FusedProgram {
  int numOperands = 0, numResults = 0, numImms = 0, numInstrs = 0;
  /// The immediates, converted to float (registers n..n+k-1).
  float imm[WEFT_FUSED_MAX_REGISTERS] = {};
  FusedInstr instr[WEFT_FUSED_MAX_REGISTERS];
  /// The register each result takes.
  int out[WEFT_FUSED_MAX_RESULTS] = {};
  FusedAccess access[WEFT_FUSED_MAX_OPERANDS] = {};
  /// The same value at every element of the iteration space.
  bool uniform[WEFT_FUSED_MAX_REGISTERS] = {};
  /// Registers a result depends on; an instruction whose register is not
  /// live need not run.
  bool live[WEFT_FUSED_MAX_REGISTERS] = {};
  /// Index of the last live instruction reading each register; numInstrs
  /// when a result takes it; -1 when nothing live reads it.
  int lastUse[WEFT_FUSED_MAX_REGISTERS] = {};
  /// Elements of the iteration shape (the results' shape).
  int64_t numel = 0;

  int numRegs() const { return numOperands + numImms + numInstrs; }
  /// Register of instruction j's result.
  int instrReg(int j) const { return numOperands + numImms + j; }
  bool isOperand(int reg) const { return reg < numOperands; }
  bool isImm(int reg) const {
    return reg >= numOperands && reg < numOperands + numImms;
  }
  static bool isBinary(int op) { return op >= WEFT_FUSED_BINARY && op < 32; }
};

/// Fails with "kernel <name>: <printf-formatted what>".
[[noreturn]] inline void fusedInvalid(const KernelArgs &args, const char *fmt,
                                      ...)
    __attribute__((format(printf, 2, 3)));
inline void fusedInvalid(const KernelArgs &args, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  args.invalid(what);
}

/// Whether `op` is an instruction code of weft_k_fused.
inline bool isFusedOpcode(int64_t op) {
  return (op >= WEFT_UNARY_NEG && op <= WEFT_UNARY_SIGMOID) ||
         (op >= WEFT_FUSED_BINARY + WEFT_BINARY_ADD &&
          op <= WEFT_FUSED_BINARY + WEFT_BINARY_MIN) ||
         op == WEFT_FUSED_COPY;
}

inline bool isFusedDType(int64_t dtype) {
  return dtype == WEFT_F32 || dtype == WEFT_BF16 || dtype == WEFT_F16;
}

/// How operand `x` broadcasts to `out`, the iteration shape; fails unless
/// it does under numpy's rules.
inline FusedAccess fusedAccessOf(const KernelArgs &args, int index,
                                 const TensorArg &x, const TensorArg &out) {
  if (x.rank > out.rank)
    fusedInvalid(args, "operand %d has rank %d, above the results' %d", index,
                 x.rank, out.rank);
  const int lead = out.rank - x.rank;
  // Innermost dim of x that is broadcast (extent 1 against more), or -1.
  int lastBroadcast = -1;
  for (int d = 0; d < x.rank; ++d) {
    const int64_t extent = x.dims[d], target = out.dims[lead + d];
    if (extent == target)
      continue;
    if (extent != 1)
      fusedInvalid(args,
                   "operand %d is not broadcastable to the results: dim %d "
                   "is %lld, the results' is %lld",
                   index, d, static_cast<long long>(extent),
                   static_cast<long long>(target));
    lastBroadcast = d;
  }
  if (x.numel == out.numel)
    return FusedAccess::Full;
  if (x.numel == 1)
    return FusedAccess::Scalar;
  // Only leading 1s broadcast: x repeats with period numel.
  bool leadingOnly = true;
  for (int d = 0; d <= lastBroadcast; ++d)
    leadingOnly = leadingOnly && x.dims[d] == 1;
  return leadingOnly ? FusedAccess::Suffix : FusedAccess::General;
}

/// Decodes and checks a fused call (see the file comment).
inline FusedProgram decodeFusedProgram(const KernelArgs &args) {
  FusedProgram p;
  args.expectAttrs(3);
  const int64_t n = args.attr(0), m = args.attr(1), k = args.attr(2);
  if (n < 0 || n > WEFT_FUSED_MAX_OPERANDS)
    fusedInvalid(args, "%lld operands, expected 0 to %d",
                 static_cast<long long>(n), WEFT_FUSED_MAX_OPERANDS);
  if (m < 1 || m > WEFT_FUSED_MAX_RESULTS)
    fusedInvalid(args, "%lld results, expected 1 to %d",
                 static_cast<long long>(m), WEFT_FUSED_MAX_RESULTS);
  if (n + m != args.numTensors())
    fusedInvalid(args, "n + m = %lld operands and results, but %d tensors",
                 static_cast<long long>(n + m), args.numTensors());
  if (k < 0 || n + k > WEFT_FUSED_MAX_REGISTERS)
    fusedInvalid(args, "%lld immediates: above %d registers",
                 static_cast<long long>(k), WEFT_FUSED_MAX_REGISTERS);
  args.expectAttrs(3 + k + 1);
  const int64_t q = args.attr(3 + k);
  if (q < 0 || n + k + q > WEFT_FUSED_MAX_REGISTERS)
    fusedInvalid(args, "%lld instructions: n + k + q is above %d registers",
                 static_cast<long long>(q), WEFT_FUSED_MAX_REGISTERS);
  const int64_t expected = 3 + k + 1 + 4 * q + m;
  if (args.numAttrs() != expected)
    fusedInvalid(args,
                 "%lld attributes, expected %lld for n=%lld m=%lld "
                 "k=%lld q=%lld",
                 static_cast<long long>(args.numAttrs()),
                 static_cast<long long>(expected), static_cast<long long>(n),
                 static_cast<long long>(m), static_cast<long long>(k),
                 static_cast<long long>(q));
  p.numOperands = static_cast<int>(n);
  p.numResults = static_cast<int>(m);
  p.numImms = static_cast<int>(k);
  p.numInstrs = static_cast<int>(q);
  for (int i = 0; i < p.numImms; ++i)
    p.imm[i] = static_cast<float>(args.attrDouble(3 + i));

  // Instructions: SSA over the registers before each one.
  const int64_t *code = args.attrArray(3 + k + 1, 4 * q);
  for (int r = 0; r < p.numRegs(); ++r) {
    p.lastUse[r] = -1;
    p.uniform[r] = p.isImm(r);
  }
  for (int j = 0; j < p.numInstrs; ++j) {
    const int64_t *c = code + 4 * j;
    const int64_t op = c[0], a = c[1], b = c[2], dtype = c[3];
    const int64_t before = n + k + j;
    if (!isFusedOpcode(op))
      fusedInvalid(args, "instruction %d: unknown opcode %lld", j,
                   static_cast<long long>(op));
    if (a < 0 || a >= before)
      fusedInvalid(args,
                   "instruction %d: operand a = %lld is not an earlier "
                   "register (0 to %lld)",
                   j, static_cast<long long>(a),
                   static_cast<long long>(before - 1));
    if (FusedProgram::isBinary(static_cast<int>(op))) {
      if (b < 0 || b >= before)
        fusedInvalid(args,
                     "instruction %d: operand b = %lld is not an earlier "
                     "register (0 to %lld)",
                     j, static_cast<long long>(b),
                     static_cast<long long>(before - 1));
    } else if (b != -1) {
      fusedInvalid(args,
                   "instruction %d: b = %lld, expected -1 for a unary op or "
                   "a copy",
                   j, static_cast<long long>(b));
    }
    if (!isFusedDType(dtype))
      fusedInvalid(args, "instruction %d: dtype %s, expected f32, bf16 or f16",
                   j, dtypeName(dtype));
    FusedInstr &in = p.instr[j];
    in.op = static_cast<int>(op);
    in.a = static_cast<int>(a);
    in.b = static_cast<int>(b);
    in.dtype = static_cast<int>(dtype);
  }
  const int64_t *outs = args.attrArray(3 + k + 1 + 4 * q, m);
  for (int t = 0; t < p.numResults; ++t) {
    if (outs[t] < 0 || outs[t] >= p.numRegs())
      fusedInvalid(args, "result %d takes register %lld, not one of 0 to %d", t,
                   static_cast<long long>(outs[t]), p.numRegs() - 1);
    p.out[t] = static_cast<int>(outs[t]);
  }

  // Tensors: float dtypes, one result shape, broadcastable operands.
  const TensorArg &y0 = args.tensor(p.numOperands);
  p.numel = y0.numel;
  for (int t = 0; t < p.numOperands + p.numResults; ++t) {
    const TensorArg &x = args.tensor(t);
    const bool result = t >= p.numOperands;
    const int index = result ? t - p.numOperands : t;
    if (!isFusedDType(x.dtype))
      fusedInvalid(args, "%s %d is %s, expected f32, bf16 or f16",
                   result ? "result" : "operand", index, dtypeName(x.dtype));
    if (!result)
      continue;
    bool same = x.rank == y0.rank;
    for (int d = 0; same && d < x.rank; ++d)
      same = x.dims[d] == y0.dims[d];
    if (!same)
      fusedInvalid(args, "result %d's shape differs from result 0's", index);
  }
  for (int i = 0; i < p.numOperands; ++i) {
    const TensorArg &x = args.tensor(i);
    p.access[i] = fusedAccessOf(args, i, x, y0);
    p.uniform[i] = p.access[i] == FusedAccess::Scalar;
    for (int t = 0; t < p.numResults; ++t) {
      const TensorArg &y = args.tensor(p.numOperands + t);
      if (y.data == x.data && y.numel > 0 &&
          (p.access[i] != FusedAccess::Full || y.dtype != x.dtype))
        fusedInvalid(args,
                     "result %d shares operand %d's buffer but not its shape "
                     "and dtype",
                     t, i);
    }
  }

  // Uniform registers, live registers and last uses.
  for (int j = 0; j < p.numInstrs; ++j) {
    const FusedInstr &in = p.instr[j];
    p.uniform[p.instrReg(j)] = p.uniform[in.a] && (in.b < 0 || p.uniform[in.b]);
  }
  for (int t = 0; t < p.numResults; ++t)
    p.live[p.out[t]] = true;
  for (int j = p.numInstrs - 1; j >= 0; --j) {
    const FusedInstr &in = p.instr[j];
    if (!p.live[p.instrReg(j)])
      continue;
    p.live[in.a] = true;
    if (in.b >= 0)
      p.live[in.b] = true;
  }
  for (int j = 0; j < p.numInstrs; ++j) {
    const FusedInstr &in = p.instr[j];
    if (!p.live[p.instrReg(j)])
      continue;
    p.lastUse[in.a] = j;
    if (in.b >= 0)
      p.lastUse[in.b] = j;
  }
  for (int t = 0; t < p.numResults; ++t)
    p.lastUse[p.out[t]] = p.numInstrs;
  return p;
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_FUSEDPROGRAM_H
