//===- FusedLowering.h - The GPU fused kernel's micro-ops, from a program
//--===//
//
// weft_cuda_k_fused (Fused.cu) does not interpret a FusedProgram directly:
// the host lowers it to micro-ops of a small machine whose one register
// stays in the GPU's registers, so an instruction is one micro-op that
// computes in place:
//
//   acc      V floats (a thread's group of elements), kept between steps
//   t        V floats, the step's input: an operand (loaded), an
//            immediate, a slot or acc
//   slots    V floats each, in local memory: values read again later
//
// An instruction runs as acc = op(acc), acc = op(acc, t) or op(t, acc),
// after a move into acc when neither of its inputs is there. Its result
// stays in acc; it is spilled to a slot (reused after the value's last
// reader) only when read again after acc has moved on. Copies that do not
// round are renamings. The results' stores come last, after every operand
// read, so a result may share a same-shaped operand's buffer (an operand a
// result takes as is, when its buffer is shared, is captured first).
//
// Host-only C++ (no CUDA), so the CPU unit tests can check the lowering
// with an emulator of the machine.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CUDA_FUSEDLOWERING_H
#define WEFT_RUNTIME_KERNELS_CUDA_FUSEDLOWERING_H

#include "runtime/kernels/cpu/FusedProgram.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace weft {
namespace cuda {

/// Where a micro-op's input t comes from.
enum FusedSource : uint8_t {
  kSourceNone,    // no input
  kSourceAcc,     // t = acc
  kSourceImm,     // an immediate at every element
  kSourceSlot,    // a spilled value
  kSourceOperand, // an operand, loaded
};

/// Micro-op codes, dense so the kernel's dispatch can be a jump table.
enum FusedMicroCode : uint8_t {
  // 0..7: acc = unary op (WeftUnaryOp code) of acc.
  kMicroBinary = 8,     // + WeftBinaryOp code (ADD..MIN): acc = op(acc, t)
  kMicroBinaryRev = 15, // + WeftBinaryOp code: acc = op(t, acc)
  kMicroPowScalar = 22, // acc = pow of acc by t, t uniform (powByScalar)
  kMicroPowScalarRev,   // acc = pow of t by acc, acc uniform
  kMicroMove,           // acc = t
  kMicroKeep,           // acc unchanged (a copy that only rounds)
  kMicroStore,          // result `result` = t
};

/// One step of the machine: before it, acc is spilled to `spillSlot` when
/// `spill`; then t is read from `source`/`index`, the code runs, and acc
/// is rounded to `round` (WEFT_F32: not at all).
struct FusedMicroOp {
  uint8_t code = kMicroKeep;
  uint8_t source = kSourceNone;
  uint8_t index = 0;
  uint8_t round = WEFT_F32;
  bool spill = false;
  uint8_t spillSlot = 0;
  uint8_t result = 0;
};

/// Upper bound of a lowered program's length: at most 2 micro-ops per
/// instruction, 1 per result and 1 per captured operand.
constexpr int kMaxFusedMicroOps =
    2 * WEFT_FUSED_MAX_REGISTERS + 2 * WEFT_FUSED_MAX_RESULTS;

struct FusedMicroProgram {
  std::vector<FusedMicroOp> ops;
  int numSlots = 0;
};

/// Lowers `prog`; shared[i] says whether some result's buffer is operand
/// i's.
class FusedLowering {
public:
  FusedLowering(const cpu::FusedProgram &prog, const bool *shared)
      : p_(prog), shared_(shared) {}

  FusedMicroProgram run() {
    // Registers: the program's, then one per operand for its captured
    // value. A copy that does not round is its input, renamed.
    const int regs = p_.numRegs() + p_.numOperands;
    canon_.resize(regs);
    for (int r = 0; r < regs; ++r)
      canon_[r] = r;
    for (int j = 0; j < p_.numInstrs; ++j) {
      const cpu::FusedInstr &in = p_.instr[j];
      if (!p_.live[p_.instrReg(j)])
        continue;
      if (in.op == WEFT_FUSED_COPY && in.dtype == WEFT_F32)
        canon_[p_.instrReg(j)] = canon_[in.a];
      else
        live_.push_back(j);
    }
    const int numLive = static_cast<int>(live_.size());
    uses_.assign(regs, {});
    slotOf_.assign(regs, -1);
    for (int k = 0; k < numLive; ++k) {
      const cpu::FusedInstr &in = p_.instr[live_[k]];
      uses_[canon_[in.a]].push_back(k);
      if (in.b >= 0 && canon_[in.b] != canon_[in.a])
        uses_[canon_[in.b]].push_back(k);
    }
    std::vector<int> source(p_.numResults);
    for (int t = 0; t < p_.numResults; ++t) {
      const int r = canon_[p_.out[t]];
      source[t] = isOperand(r) && shared_[r] ? p_.numRegs() + r : r;
      uses_[source[t]].push_back(numLive + t);
    }

    for (int k = 0; k < numLive; ++k) {
      instruction(k);
      release(k);
    }
    // Operands a result takes, whose buffer a result overwrites: read
    // before any store.
    for (int i = 0; i < p_.numOperands; ++i) {
      const int captured = p_.numRegs() + i;
      if (uses_[captured].empty())
        continue;
      FusedMicroOp m = step(kMicroMove, numLive);
      m.source = kSourceOperand;
      m.index = static_cast<uint8_t>(i);
      out_.ops.push_back(m);
      accReg_ = captured;
    }
    for (int t = 0; t < p_.numResults; ++t) {
      FusedMicroOp m;
      m.code = kMicroStore;
      m.result = static_cast<uint8_t>(t);
      setSource(m, source[t]);
      out_.ops.push_back(m);
      release(numLive + t);
    }
    out_.numSlots = numSlots_;
    return out_;
  }

private:
  bool isOperand(int r) const { return r < p_.numOperands; }
  bool isImm(int r) const { return p_.isImm(r); }
  /// Whether register r is read at position `pos` or later.
  bool neededFrom(int r, int pos) const {
    return !uses_[r].empty() && uses_[r].back() >= pos;
  }

  /// A micro-op that overwrites acc: acc's value is spilled first when it
  /// is computed (not an operand or immediate, which can be read again),
  /// read at `pos` or later, and not in a slot yet.
  FusedMicroOp step(FusedMicroCode code, int pos) {
    FusedMicroOp m;
    m.code = code;
    const int r = accReg_;
    if (r < 0 || isOperand(r) || isImm(r) || slotOf_[r] >= 0 ||
        !neededFrom(r, pos))
      return m;
    int s;
    if (freeSlots_.empty()) {
      s = numSlots_++;
    } else {
      s = freeSlots_.back();
      freeSlots_.pop_back();
    }
    slotOf_[r] = s;
    m.spill = true;
    m.spillSlot = static_cast<uint8_t>(s);
    return m;
  }

  /// t of m = register r, which is not in acc.
  void setSource(FusedMicroOp &m, int r) {
    if (r == accReg_) {
      m.source = kSourceAcc;
    } else if (slotOf_[r] >= 0) {
      m.source = kSourceSlot;
      m.index = static_cast<uint8_t>(slotOf_[r]);
    } else if (isImm(r)) {
      m.source = kSourceImm;
      m.index = static_cast<uint8_t>(r - p_.numOperands);
    } else if (isOperand(r)) {
      m.source = kSourceOperand;
      m.index = static_cast<uint8_t>(r);
    } else {
      // Computed values are in acc or a slot whenever they are read.
      fatal(kExitFailure, "kernel fused: register %d lost in lowering", r);
    }
  }

  /// acc = register r (at position `pos`).
  void ensureAcc(int r, int pos) {
    if (accReg_ == r)
      return;
    FusedMicroOp m = step(kMicroMove, pos);
    setSource(m, r);
    out_.ops.push_back(m);
    accReg_ = r;
    lastMade_ = -1;
  }

  void instruction(int k) {
    const int j = live_[k];
    const cpu::FusedInstr &in = p_.instr[j];
    const int a = canon_[in.a];
    FusedMicroOp m;
    if (in.op == WEFT_FUSED_COPY && accReg_ == a && lastMade_ == a &&
        out_.ops.back().round == WEFT_F32 && uses_[a].size() == 1) {
      // A rounding copy of the value the last step made, read nowhere
      // else: that step rounds.
      out_.ops.back().round = static_cast<uint8_t>(in.dtype);
      accReg_ = lastMade_ = p_.instrReg(j);
      return;
    }
    if (!cpu::FusedProgram::isBinary(in.op)) {
      ensureAcc(a, k);
      m = step(in.op == WEFT_FUSED_COPY ? kMicroKeep
                                        : static_cast<FusedMicroCode>(in.op),
               k + 1);
    } else {
      const int b = canon_[in.b];
      const bool scalarPow =
          in.op - WEFT_FUSED_BINARY == WEFT_BINARY_POW && p_.uniform[in.b];
      const int op = in.op - WEFT_FUSED_BINARY;
      // Normal: acc holds a, t reads b; reversed: acc holds b, t reads a.
      const bool normal = accReg_ == a || accReg_ != b;
      if (normal)
        ensureAcc(a, k);
      m = step(scalarPow ? (normal ? kMicroPowScalar : kMicroPowScalarRev)
                         : static_cast<FusedMicroCode>(
                               (normal ? kMicroBinary : kMicroBinaryRev) + op),
               k + 1);
      setSource(m, normal ? b : a);
    }
    m.round = static_cast<uint8_t>(in.dtype);
    out_.ops.push_back(m);
    accReg_ = lastMade_ = p_.instrReg(j);
  }

  /// Frees the slots of values no position after `pos` reads.
  void release(int pos) {
    for (size_t r = 0; r < slotOf_.size(); ++r)
      if (slotOf_[r] >= 0 && !neededFrom(static_cast<int>(r), pos + 1)) {
        freeSlots_.push_back(slotOf_[r]);
        slotOf_[r] = -1;
      }
  }

  const cpu::FusedProgram &p_;
  const bool *shared_;
  std::vector<int> live_, canon_;
  /// Positions reading each register: live instruction k at k, result t at
  /// live_.size() + t; ascending.
  std::vector<std::vector<int>> uses_;
  std::vector<int> slotOf_, freeSlots_;
  /// acc's register, and the register the last step computed (-1 after a
  /// move or store).
  int accReg_ = -1, lastMade_ = -1, numSlots_ = 0;
  FusedMicroProgram out_;
};

/// Lowers the program of the call `args`: an operand counts as shared when
/// some result of the call writes its buffer (the kernel and the unit
/// test's emulation of it both lower through here).
inline FusedMicroProgram lowerFusedCall(const cpu::KernelArgs &args,
                                        const cpu::FusedProgram &prog) {
  bool shared[WEFT_FUSED_MAX_OPERANDS] = {};
  for (int i = 0; i < prog.numOperands; ++i)
    for (int t = 0; t < prog.numResults; ++t)
      shared[i] = shared[i] ||
                  args.tensor(prog.numOperands + t).data == args.tensor(i).data;
  return FusedLowering(prog, shared).run();
}

} // namespace cuda
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CUDA_FUSEDLOWERING_H
