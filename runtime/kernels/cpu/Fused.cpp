//===- Fused.cpp - fused elementwise kernel -------------------------------===//
//
// weft_k_fused runs a chain of elementwise instructions (FusedProgram.h) in
// one pass over memory: a blocked interpreter. The iteration space is cut
// into chunks of kChunk elements; per chunk the operands are widened into
// float arrays, each instruction runs as one tight loop over the chunk, and
// the results are narrowed into their buffers. Chunks run on the pool.
//
// The bits are those of the unfused kernels on f32 tensors: the unary ops
// are unaryRow (as weft_k_unary), the binary ops the element functions of
// ElementwiseMath.h (as weft_k_binary, pow by a one-element exponent
// included) and the rounding Float16.h's (as weft_k_cast). Each instruction
// is its own loop storing to memory, so no arithmetic of two instructions
// contracts into one FMA.
//
// Registers that are the same for every element (FusedProgram::uniform)
// are computed once per call, and reach the loops as scalars, as a
// one-element tensor reaches the binary kernel's loops. The others live in
// chunk arrays ("slots") reused once their last reader ran, so a chain
// touches a few L1-resident arrays. f32 operands of the full shape are
// read in place unless a result shares their buffer.
//
//===----------------------------------------------------------------------===//

#include "Broadcast.h"
#include "DTypes.h"
#include "ElementwiseMath.h"
#include "FusedProgram.h"
#include "Parallel.h"
#include "RowOps.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

using namespace weft;
using namespace weft::cpu;

namespace {

/// Elements per chunk: a few slots of them stay in L1.
constexpr int64_t kChunk = 512;

/// One input of an instruction over a chunk: an array, or (p null) the
/// value `s` at every element.
struct Src {
  const float *p = nullptr;
  float s = 0;
  bool scalar() const { return p == nullptr; }
};

template <class Op>
void binaryLoop(Src a, Src b, float *__restrict d, int64_t n, Op op) {
  if (!a.scalar() && !b.scalar()) {
    const float *__restrict pa = a.p;
    const float *__restrict pb = b.p;
    for (int64_t i = 0; i < n; ++i)
      d[i] = op(pa[i], pb[i]);
  } else if (!a.scalar()) {
    const float *__restrict pa = a.p;
    const float vb = b.s;
    for (int64_t i = 0; i < n; ++i)
      d[i] = op(pa[i], vb);
  } else if (!b.scalar()) {
    const float *__restrict pb = b.p;
    const float va = a.s;
    for (int64_t i = 0; i < n; ++i)
      d[i] = op(va, pb[i]);
  } else {
    const float v = op(a.s, b.s);
    for (int64_t i = 0; i < n; ++i)
      d[i] = v;
  }
}

template <class Op>
void unaryLoop(Src a, float *__restrict d, int64_t n, Op op) {
  if (a.scalar()) {
    const float v = op(a.s);
    for (int64_t i = 0; i < n; ++i)
      d[i] = v;
    return;
  }
  const float *__restrict pa = a.p;
  for (int64_t i = 0; i < n; ++i)
    d[i] = op(pa[i]);
}

/// Rounds d to `dtype` and widens it back, as a cast there and back does.
void roundTo(int dtype, float *__restrict d, int64_t n) {
  if (dtype == WEFT_BF16)
    for (int64_t i = 0; i < n; ++i)
      d[i] = bfloat16ToFloat(floatToBFloat16(d[i]));
  else if (dtype == WEFT_F16)
    for (int64_t i = 0; i < n; ++i)
      d[i] = halfToFloat(floatToHalf(d[i]));
}

/// d[0, n) = instruction `in` of a and b (b unused by unary ops and
/// copies), rounded to its dtype. d is none of the inputs' arrays.
void runInstr(const FusedInstr &in, Src a, Src b, float *d, int64_t n) {
  if (in.op <= WEFT_UNARY_SIGMOID) {
    // unaryRow holds weft_k_unary's loops (and their ISA clones).
    unaryRow(in.op, a.scalar() ? &a.s : a.p, d, a.scalar() ? 1 : n);
    if (a.scalar())
      std::fill(d + 1, d + n, d[0]);
  } else {
    switch (in.op - WEFT_FUSED_BINARY) {
    case WEFT_BINARY_ADD:
      binaryLoop(a, b, d, n, [](float x, float y) { return wrapAdd(x, y); });
      break;
    case WEFT_BINARY_SUB:
      binaryLoop(a, b, d, n, [](float x, float y) { return wrapSub(x, y); });
      break;
    case WEFT_BINARY_MUL:
      binaryLoop(a, b, d, n, [](float x, float y) { return wrapMul(x, y); });
      break;
    case WEFT_BINARY_DIV:
      binaryLoop(a, b, d, n, [](float x, float y) { return x / y; });
      break;
    case WEFT_BINARY_POW:
      // A one-element exponent takes the binary kernel's arithmetic.
      if (!b.scalar() ||
          !withPowByScalar(b.s, [&](auto f) { unaryLoop(a, d, n, f); }))
        binaryLoop(a, b, d, n, [](float x, float y) { return std::pow(x, y); });
      break;
    case WEFT_BINARY_MAX:
      binaryLoop(a, b, d, n,
                 [](float x, float y) { return propagatingMax(x, y); });
      break;
    case WEFT_BINARY_MIN:
      binaryLoop(a, b, d, n,
                 [](float x, float y) { return propagatingMin(x, y); });
      break;
    default: // WEFT_FUSED_COPY
      unaryLoop(a, d, n, [](float x) { return x; });
      break;
    }
  }
  roundTo(in.dtype, d, n);
}

//===-- element access ----------------------------------------------------===//

template <class S> void widenRun(const S *x, float *__restrict d, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    d[i] = widen(x[i]);
}

template <class S> float widenOne(const void *x, int64_t i) {
  return widen(static_cast<const S *>(x)[i]);
}

/// Calls f(S{}) with the storage type of a fused dtype.
template <class F> void dispatchFusedDType(int64_t dtype, F &&f) {
  if (dtype == WEFT_BF16)
    f(BFloat16{});
  else if (dtype == WEFT_F16)
    f(Half{});
  else
    f(float{});
}

float loadScalar(const TensorArg &x) {
  float v = 0;
  dispatchFusedDType(x.dtype,
                     [&](auto tag) { v = widenOne<decltype(tag)>(x.data, 0); });
  return v;
}

/// One call's execution plan over the decoded program.
class FusedRun {
public:
  FusedRun(const KernelArgs &args, const FusedProgram &p) : args_(args), p_(p) {
    const TensorArg &iter = args.tensor(p.numOperands);
    for (int i = 0; i < p.numOperands; ++i) {
      const TensorArg &x = args.tensor(i);
      direct_[i] = nullptr;
      if (!p.live[i] || p.uniform[i])
        continue;
      if (p.access[i] == FusedAccess::General) {
        const TensorArg *ins[1] = {&x};
        general_[i] = makeBroadcastPlan(args, iter, ins);
      }
      bool shared = false;
      for (int t = 0; t < p.numResults; ++t)
        shared = shared || args.tensor(p.numOperands + t).data == x.data;
      if (p.access[i] == FusedAccess::Full && x.dtype == WEFT_F32 && !shared)
        direct_[i] = x.as<float>();
    }
    assignSlots();
    computeUniforms();
  }

  void run() {
    const int64_t numel = p_.numel;
    if (numel == 0)
      return;
    int work = 1;
    for (int j = 0; j < p_.numInstrs; ++j)
      work += p_.live[p_.instrReg(j)] && !p_.uniform[p_.instrReg(j)];
    const int64_t grain = std::max<int64_t>(kChunk, kParallelGrain / work);
    const size_t scratchFloats = static_cast<size_t>(numSlots_) * kChunk;
    parallelFor(numel, grain, [&](int64_t begin, int64_t end) {
      // Per thread, grown only: steady-state calls allocate nothing.
      thread_local std::vector<float> scratch;
      if (scratch.size() < scratchFloats)
        scratch.resize(scratchFloats);
      for (int64_t c0 = begin; c0 < end; c0 += kChunk)
        runChunk(c0, std::min(kChunk, end - c0), scratch.data());
    });
  }

private:
  /// Slots for the live registers that vary: the operands read through a
  /// copy (alive from the chunk's start), then each instruction's result,
  /// freeing inputs after their last reader.
  void assignSlots() {
    std::vector<int> freeSlots;
    auto take = [&] {
      if (freeSlots.empty())
        return numSlots_++;
      const int s = freeSlots.back();
      freeSlots.pop_back();
      return s;
    };
    for (int r = 0; r < p_.numRegs(); ++r)
      slot_[r] = -1;
    for (int i = 0; i < p_.numOperands; ++i)
      if (p_.live[i] && !p_.uniform[i] && !direct_[i])
        slot_[i] = take();
    for (int j = 0; j < p_.numInstrs; ++j) {
      const int reg = p_.instrReg(j);
      if (!p_.live[reg] || p_.uniform[reg])
        continue;
      // Taken before the inputs are freed: runInstr's arrays are distinct.
      slot_[reg] = take();
      const FusedInstr &in = p_.instr[j];
      auto release = [&](int input) {
        if (input >= 0 && slot_[input] >= 0 && p_.lastUse[input] == j)
          freeSlots.push_back(slot_[input]);
      };
      release(in.a);
      if (in.b != in.a)
        release(in.b);
    }
  }

  /// The uniform registers' values, with runInstr on one element.
  void computeUniforms() {
    for (int r = 0; r < p_.numRegs(); ++r) {
      if (!p_.uniform[r] || !p_.live[r])
        continue;
      if (p_.isOperand(r)) {
        value_[r] = loadScalar(args_.tensor(r));
      } else if (p_.isImm(r)) {
        value_[r] = p_.imm[r - p_.numOperands];
      } else {
        const FusedInstr &in = p_.instr[r - p_.numOperands - p_.numImms];
        const Src none;
        runInstr(in, Src{nullptr, value_[in.a]},
                 in.b >= 0 ? Src{nullptr, value_[in.b]} : none, &value_[r], 1);
      }
    }
  }

  Src source(int reg, int64_t c0, float *scratch) const {
    if (p_.uniform[reg])
      return Src{nullptr, value_[reg]};
    if (reg < p_.numOperands && direct_[reg])
      return Src{direct_[reg] + c0};
    return Src{scratch + slot_[reg] * kChunk};
  }

  void runChunk(int64_t c0, int64_t len, float *scratch) const {
    for (int i = 0; i < p_.numOperands; ++i)
      if (slot_[i] >= 0)
        loadOperand(i, c0, len, scratch + slot_[i] * kChunk);
    for (int j = 0; j < p_.numInstrs; ++j) {
      const int reg = p_.instrReg(j);
      if (slot_[reg] < 0)
        continue;
      const FusedInstr &in = p_.instr[j];
      const Src none;
      runInstr(in, source(in.a, c0, scratch),
               in.b >= 0 ? source(in.b, c0, scratch) : none,
               scratch + slot_[reg] * kChunk, len);
    }
    for (int t = 0; t < p_.numResults; ++t)
      storeResult(t, source(p_.out[t], c0, scratch), c0, len);
  }

  /// d[0, len) = operand i's elements c0.. of the iteration space.
  void loadOperand(int i, int64_t c0, int64_t len, float *d) const {
    const TensorArg &x = args_.tensor(i);
    dispatchFusedDType(x.dtype, [&](auto tag) {
      using S = decltype(tag);
      const S *src = x.as<S>();
      switch (p_.access[i]) {
      case FusedAccess::Full:
        return widenRun(src + c0, d, len);
      case FusedAccess::Suffix: {
        // Element i is x[i % numel]: whole runs of x between wraps.
        const int64_t period = x.numel;
        int64_t pos = c0 % period;
        for (int64_t done = 0; done < len;) {
          const int64_t run = std::min(period - pos, len - done);
          widenRun(src + pos, d + done, run);
          done += run;
          pos = 0;
        }
        return;
      }
      default: // General (Scalar operands are uniform)
        forEachRow(general_[i], c0, c0 + len,
                   [&](const int64_t *off, int64_t outOff, int64_t count) {
                     float *row = d + (outOff - c0);
                     if (general_[i].rowStride(0) != 0)
                       return widenRun(src + off[0], row, count);
                     std::fill(row, row + count, widen(src[off[0]]));
                   });
      }
    });
  }

  void storeResult(int t, Src v, int64_t c0, int64_t len) const {
    const TensorArg &y = args_.tensor(p_.numOperands + t);
    dispatchFusedDType(y.dtype, [&](auto tag) {
      using S = decltype(tag);
      S *dst = y.as<S>() + c0;
      if (v.scalar()) {
        std::fill(dst, dst + len, narrowTo<S>(v.s));
        return;
      }
      const float *__restrict src = v.p;
      for (int64_t i = 0; i < len; ++i)
        dst[i] = narrowTo<S>(src[i]);
    });
  }

  const KernelArgs &args_;
  const FusedProgram &p_;
  const float *direct_[WEFT_FUSED_MAX_OPERANDS];
  BroadcastPlan<1> general_[WEFT_FUSED_MAX_OPERANDS];
  int slot_[WEFT_FUSED_MAX_REGISTERS];
  float value_[WEFT_FUSED_MAX_REGISTERS] = {};
  int numSlots_ = 0;
};

} // namespace

extern "C" void weft_k_fused(void *const *bufs, const int64_t *desc) {
  KernelArgs args("fused", bufs, desc);
  const FusedProgram program = decodeFusedProgram(args);
  FusedRun(args, program).run();
}
