//===- FusedLoweringTest.cpp - The GPU fused kernel's micro-ops -----------===//
//
// FusedLowering.h turns a fused program into the micro-ops the GPU kernel
// runs. Without a GPU, this test runs them on an emulator of that machine
// (acc, each step's input t and the slots over groups of 8 elements, with
// the CPU's element functions) and expects the bits of weft_k_fused: random
// programs, the reversed and repeated operands of binary ops, spills, results
// taken from operands and immediates, results sharing operand buffers, and the
// longest programs the limits allow.
//
//===----------------------------------------------------------------------===//

#include "FusedTestUtil.h"

#include "runtime/kernels/cpu/ElementwiseMath.h"
#include "runtime/kernels/cpu/FusedProgram.h"
#include "runtime/kernels/cpu/RowOps.h"
#include "runtime/kernels/cuda/FusedLowering.h"

#include <cmath>

using namespace weft;
using namespace weft::test;
using weft::cuda::FusedLowering;
using weft::cuda::FusedMicroOp;
using weft::cuda::FusedMicroProgram;

namespace {

constexpr int V = 8;

float binaryOf(int op, float x, float y) {
  switch (op) {
  case WEFT_BINARY_ADD:
    return cpu::wrapAdd(x, y);
  case WEFT_BINARY_SUB:
    return cpu::wrapSub(x, y);
  case WEFT_BINARY_MUL:
    return cpu::wrapMul(x, y);
  case WEFT_BINARY_DIV:
    return x / y;
  case WEFT_BINARY_POW:
    return std::pow(x, y);
  case WEFT_BINARY_MAX:
    return cpu::propagatingMax(x, y);
  default:
    return cpu::propagatingMin(x, y);
  }
}

float powScalarOf(float x, float e) {
  float r = 0;
  if (!cpu::withPowByScalar(e, [&](auto f) { r = f(x); }))
    r = std::pow(x, e);
  return r;
}

/// One call's tensors: data pointers and shapes, operands then results.
struct Call {
  std::vector<void *> bufs;
  std::vector<int64_t> desc;
};

Call makeCall(const Program &p, std::vector<Tensor> &operands,
              std::vector<Tensor> &results, const std::vector<int> &inPlace) {
  Call c;
  std::vector<std::pair<int64_t, Dims>> shapes;
  for (Tensor &t : operands) {
    c.bufs.push_back(t.data());
    shapes.emplace_back(t.dtype, t.dims);
  }
  for (size_t t = 0; t < results.size(); ++t) {
    const int alias = t < inPlace.size() ? inPlace[t] : -1;
    c.bufs.push_back(alias >= 0 ? operands[alias].data() : results[t].data());
    shapes.emplace_back(results[t].dtype, results[t].dims);
  }
  c.desc.push_back(static_cast<int64_t>(shapes.size()));
  for (const auto &s : shapes) {
    c.desc.push_back(s.first);
    c.desc.push_back(static_cast<int64_t>(s.second.size()));
    c.desc.insert(c.desc.end(), s.second.begin(), s.second.end());
  }
  const std::vector<int64_t> attrs = p.attrs();
  c.desc.push_back(static_cast<int64_t>(attrs.size()));
  c.desc.insert(c.desc.end(), attrs.begin(), attrs.end());
  return c;
}

/// Element `i` of the iteration space read from tensor t (numpy
/// broadcasting).
float elementOf(const cpu::TensorArg &t, const cpu::TensorArg &iter,
                int64_t i) {
  Dims outDims(iter.dims, iter.dims + iter.rank);
  Dims inDims(t.dims, t.dims + t.rank);
  const int64_t flat = broadcastIndex(unravel(i, outDims), inDims);
  if (t.dtype == WEFT_F32)
    return t.as<float>()[flat];
  const uint16_t h = t.as<uint16_t>()[flat];
  return t.dtype == WEFT_BF16 ? bfloat16ToFloat(h) : halfToFloat(h);
}

void storeElement(const cpu::TensorArg &t, int64_t i, float v) {
  if (t.dtype == WEFT_F32)
    t.as<float>()[i] = v;
  else if (t.dtype == WEFT_BF16)
    t.as<uint16_t>()[i] = floatToBFloat16(v);
  else
    t.as<uint16_t>()[i] = floatToHalf(v);
}

/// Runs the micro-ops of the call's program as the GPU kernel does, group
/// by group; returns the program's micro-ops.
FusedMicroProgram emulate(const Call &call) {
  cpu::KernelArgs args("fused", call.bufs.data(), call.desc.data());
  const cpu::FusedProgram prog = cpu::decodeFusedProgram(args);
  const FusedMicroProgram micro = cuda::lowerFusedCall(args, prog);
  const cpu::TensorArg &iter = args.tensor(prog.numOperands);
  std::vector<std::array<float, V>> file(micro.numSlots);
  for (int64_t base = 0; base < prog.numel; base += V) {
    std::array<float, V> acc = {};
    for (const FusedMicroOp &m : micro.ops) {
      if (m.spill)
        file.at(m.spillSlot) = acc;
      std::array<float, V> t = {};
      for (int e = 0; e < V; ++e) {
        const int64_t i = std::min(base + e, prog.numel - 1);
        if (m.source == cuda::kSourceAcc)
          t[e] = acc[e];
        else if (m.source == cuda::kSourceImm)
          t[e] = prog.imm[m.index];
        else if (m.source == cuda::kSourceSlot)
          t[e] = file.at(m.index)[e];
        else if (m.source == cuda::kSourceOperand)
          t[e] = elementOf(args.tensor(m.index), iter, i);
      }
      const int code = m.code;
      for (int e = 0; e < V; ++e) {
        float &a = acc[e];
        if (code <= WEFT_UNARY_SIGMOID)
          cpu::unaryRow(code, &a, &a, 1);
        else if (code >= cuda::kMicroBinary && code < cuda::kMicroBinaryRev)
          a = binaryOf(code - cuda::kMicroBinary, a, t[e]);
        else if (code >= cuda::kMicroBinaryRev && code < cuda::kMicroPowScalar)
          a = binaryOf(code - cuda::kMicroBinaryRev, t[e], a);
        else if (code == cuda::kMicroPowScalar)
          a = powScalarOf(a, t[e]);
        else if (code == cuda::kMicroPowScalarRev)
          a = powScalarOf(t[e], a);
        else if (code == cuda::kMicroMove)
          a = t[e];
        else if (code == cuda::kMicroStore && base + e < prog.numel)
          storeElement(args.tensor(prog.numOperands + m.result), base + e,
                       t[e]);
        else if (code != cuda::kMicroKeep && code != cuda::kMicroStore)
          ADD_FAILURE() << "unknown micro-op " << code;
        if (m.round == WEFT_BF16)
          a = bfloat16ToFloat(floatToBFloat16(a));
        else if (m.round == WEFT_F16)
          a = halfToFloat(floatToHalf(a));
      }
    }
  }
  return micro;
}

/// The program on the CPU kernel and on the emulator (fresh copies of the
/// operands each, results in `inPlace` operands' buffers): the same bits.
FusedMicroProgram checkLowering(const Program &p,
                                const std::vector<Tensor> &operands,
                                const std::vector<int64_t> &resultTypes,
                                const Dims &iter, const std::string &what,
                                const std::vector<int> &inPlace = {}) {
  std::vector<Tensor> cpuOps = operands, emuOps = operands, cpuRes, emuRes;
  for (int64_t dt : resultTypes) {
    cpuRes.emplace_back(dt, iter);
    emuRes.emplace_back(dt, iter);
  }
  Call c = makeCall(p, cpuOps, cpuRes, inPlace);
  weft_k_fused(c.bufs.data(), c.desc.data());
  FusedMicroProgram micro = emulate(makeCall(p, emuOps, emuRes, inPlace));
  EXPECT_LE(micro.ops.size(), static_cast<size_t>(cuda::kMaxFusedMicroOps))
      << what;
  for (size_t t = 0; t < resultTypes.size(); ++t) {
    const int alias = t < inPlace.size() ? inPlace[t] : -1;
    expectSameBits(alias >= 0 ? emuOps[alias] : emuRes[t],
                   alias >= 0 ? cpuOps[alias] : cpuRes[t],
                   what + " result " + std::to_string(t));
  }
  return micro;
}

TEST(FusedLowering, RandomPrograms) {
  std::mt19937 gen(77);
  const Dims iter = {3, 7, 5};
  const std::vector<Dims> shapes = {iter, {5},       {7, 5},
                                    {},   {3, 1, 5}, {3, 7, 1}};
  for (int trial = 0; trial < 400; ++trial) {
    RandomProgram r = randomProgram(gen, shapes, 6);
    checkLowering(r.program, r.operands, r.resultTypes, iter,
                  "random program " + std::to_string(trial));
  }
}

TEST(FusedLowering, GeluIsOneStepPerInstruction) {
  // x + bias, / sqrt 2, erf, + 1, * (x + bias), * 0.5 rounded to bf16: the
  // f32 copy is a renaming, the rounding copy merges into the product,
  // x + bias is spilled once, and each result is one store.
  Program p;
  p.numOperands = 2;
  const int64_t sqrt2 = p.imm(std::sqrt(2.0)), one = p.imm(1.0),
                half = p.imm(0.5);
  const int64_t x = p.op(kCopy, 0);
  const int64_t t = p.op(kAdd, x, 1);
  const int64_t e = p.op(WEFT_UNARY_ERF, p.op(kDiv, t, sqrt2));
  const int64_t y = p.op(kMul, p.op(kMul, t, p.op(kAdd, e, one)), half);
  p.out = {p.op(kCopy, y, -1, WEFT_BF16), t};
  const Dims iter = {3, 40};
  FusedMicroProgram micro = checkLowering(
      p, {randomOf(WEFT_BF16, iter, -4, 4), randomOf(WEFT_F32, {40})},
      {WEFT_BF16, WEFT_F32}, iter, "gelu");
  EXPECT_EQ(micro.ops.size(), 9u);
  EXPECT_EQ(micro.numSlots, 1);
}

TEST(FusedLowering, OperandOrderAndSpills) {
  // x0 - x1, x1 - (x0 - x1), (x0 - x1) / (x0 - x1), pow both ways, values
  // read long after they are made, results from every kind of register.
  Program p;
  p.numOperands = 2;
  const int64_t k = p.imm(2.0);
  const int64_t d = p.op(kSub, 0, 1); // acc = x0 - x1
  const int64_t e = p.op(kSub, 1, d); // reversed: x1 - acc
  const int64_t q = p.op(kDiv, d, d); // a == b, d spilled
  const int64_t w = p.op(kPow, k, e); // uniform base, acc exponent
  const int64_t v = p.op(kPow, e, k); // by a uniform exponent
  const int64_t z = p.op(kMax, v, w, WEFT_BF16);
  const int64_t y = p.op(kMin, q, z, WEFT_F16);
  p.out = {y, d, 0, k, e};
  const Dims iter = {5, 13};
  checkLowering(p, {randomOf(WEFT_F32, iter, -2, 2), randomOf(WEFT_BF16, {13})},
                {WEFT_F32, WEFT_F32, WEFT_BF16, WEFT_F32, WEFT_F16}, iter,
                "order");
}

TEST(FusedLowering, ResultsSharingOperandBuffers) {
  // y0 in x0's buffer, y1 in x1's; y2 = old x0, y3 = old x1: captured
  // before any store. Then a swap: y0 = x1 into x0, y1 = x0 into x1.
  const Dims iter = {4, 9};
  Program p;
  p.numOperands = 2;
  const int64_t s = p.op(kAdd, 0, 1);
  p.out = {s, p.op(WEFT_UNARY_NEG, s), 0, 1};
  for (int64_t dt : {WEFT_F32, WEFT_BF16})
    checkLowering(p, {randomOf(dt, iter), randomOf(dt, iter)}, {dt, dt, dt, dt},
                  iter, "shared", {0, 1});
  Program swap;
  swap.numOperands = 2;
  swap.out = {1, 0};
  checkLowering(swap, {randomOf(WEFT_F16, iter), randomOf(WEFT_F16, iter)},
                {WEFT_F16, WEFT_F16}, iter, "swap", {0, 1});
}

TEST(FusedLowering, LongestPrograms) {
  // 64 registers: a chain reading every earlier register (many live
  // values, so many slots), and 8 results of 16 operands.
  std::mt19937 gen(5);
  const Dims iter = {2, 11};
  for (int n : {1, 16}) {
    Program p;
    p.numOperands = n;
    std::vector<Tensor> ops;
    for (int i = 0; i < n; ++i)
      ops.push_back(randomOf(WEFT_F32, i % 2 ? Dims{11} : iter, 0.5, 1.5));
    const int k = 4;
    for (int i = 0; i < k; ++i)
      p.imm(0.25 * (i + 1));
    const int q = WEFT_FUSED_MAX_REGISTERS - n - k;
    for (int j = 0; j < q; ++j) {
      const int64_t regs = n + k + j;
      const int64_t a = j == 0 ? 0 : regs - 1;
      const int64_t b = (j * 7 + 3) % regs;
      p.op(j % 3 == 0 ? kMul : j % 3 == 1 ? kAdd : kSub, a, b);
    }
    std::vector<int64_t> types;
    for (int t = 0; t < WEFT_FUSED_MAX_RESULTS; ++t) {
      p.out.push_back(t == 0 ? WEFT_FUSED_MAX_REGISTERS - 1
                             : static_cast<int64_t>(gen() % 64));
      types.push_back(WEFT_F32);
    }
    FusedMicroProgram micro = checkLowering(
        p, ops, types, iter, "longest with " + std::to_string(n) + " operands");
    EXPECT_LE(micro.numSlots, WEFT_FUSED_MAX_REGISTERS);
  }
}

} // namespace
