//===- FusedTest.cpp - fused elementwise kernel ---------------------------===//
//
// weft_k_fused against the unfused kernels run one by one on f32 tensors
// (unary, binary, cast there and back for each instruction's rounding,
// expand and cast for the results): the results must be the same bits.
// Chains (GELU, several results), every opcode on special values, every
// broadcast kind, 16-bit operands, results and roundings, a result sharing
// an operand's buffer, random programs; then the checks of a bad program.
//
//===----------------------------------------------------------------------===//

#include "FusedTestUtil.h"

#include <algorithm>
#include <limits>

using namespace weft;
using namespace weft::test;

namespace {

//===-- the unfused reference ---------------------------------------------===//

Tensor cast(Tensor &x, int64_t dtype) {
  Tensor y(dtype, x.dims);
  KernelCall()
      .raw(x.dtype, x.dims, x.data())
      .raw(y.dtype, y.dims, y.data())
      .run(weft_k_cast);
  return y;
}

/// The program run as the compiler would without fusion: every register an
/// f32 tensor of its own broadcast shape.
std::vector<Tensor> runUnfused(const Program &p, std::vector<Tensor> operands,
                               const std::vector<Tensor> &results) {
  std::vector<Tensor> reg;
  for (Tensor &x : operands)
    reg.push_back(cast(x, WEFT_F32));
  for (double v : p.imms)
    reg.push_back(valuesOf(WEFT_F32, {}, {static_cast<float>(v)}));
  for (const auto &c : p.code) {
    const int64_t op = c[0], dtype = c[3];
    Tensor &a = reg[c[1]];
    Tensor y;
    if (op < WEFT_FUSED_BINARY) {
      y = Tensor(WEFT_F32, a.dims);
      KernelCall()
          .raw(WEFT_F32, a.dims, a.data())
          .raw(WEFT_F32, y.dims, y.data())
          .attr(op)
          .run(weft_k_unary);
    } else if (op == kCopy) {
      y = cast(a, WEFT_F32);
    } else {
      Tensor &b = reg[c[2]];
      y = Tensor(WEFT_F32, broadcastDims(a.dims, b.dims));
      KernelCall()
          .raw(WEFT_F32, a.dims, a.data())
          .raw(WEFT_F32, b.dims, b.data())
          .raw(WEFT_F32, y.dims, y.data())
          .attr(op - WEFT_FUSED_BINARY)
          .run(weft_k_binary);
    }
    if (dtype != WEFT_F32) {
      Tensor narrow = cast(y, dtype);
      y = cast(narrow, WEFT_F32);
    }
    reg.push_back(std::move(y));
  }
  std::vector<Tensor> want;
  for (size_t t = 0; t < results.size(); ++t) {
    Tensor &r = reg[p.out[t]];
    Tensor full(WEFT_F32, results[t].dims);
    KernelCall()
        .raw(WEFT_F32, r.dims, r.data())
        .raw(WEFT_F32, full.dims, full.data())
        .run(weft_k_expand);
    want.push_back(cast(full, results[t].dtype));
  }
  return want;
}

/// Runs p fused and unfused on `operands`, results of `resultTypes` and
/// the iteration shape `dims`; expects the same bits.
void check(const Program &p, const std::vector<Tensor> &operands,
           const std::vector<int64_t> &resultTypes, const Dims &dims,
           const std::string &what) {
  std::vector<Tensor> results;
  for (int64_t dt : resultTypes)
    results.emplace_back(dt, dims);
  std::vector<Tensor> want = runUnfused(p, operands, results);
  std::vector<Tensor> in = operands;
  runFused(p, in, results);
  for (size_t t = 0; t < results.size(); ++t)
    expectSameBits(results[t], want[t], what + " result " + std::to_string(t));
}

/// The GELU chain of a bf16 activation with an f32 bias [C]:
/// y = 0.5 * t * (1 + erf(t / sqrt 2)), t = x + bias; results y (bf16),
/// t (f32, kept for the gradient) and y before rounding (f32).
Program geluProgram() {
  Program p;
  p.numOperands = 2;
  const GeluRegisters r = appendGelu(p, WEFT_BF16);
  p.out = {r.rounded, r.t, r.y};
  return p;
}

TEST(Fused, GeluChain) {
  for (const Dims &dims : {Dims{8, 129, 96}, Dims{3, 5, 7}, Dims{1, 1, 96}}) {
    std::vector<Tensor> ops = {randomOf(WEFT_BF16, dims, -5, 5),
                               randomOf(WEFT_F32, {dims.back()}, -1, 1)};
    check(geluProgram(), ops, {WEFT_BF16, WEFT_F32, WEFT_F32}, dims, "gelu");
  }
}

/// Inputs with the special values and a spread of ordinary ones.
std::vector<float> specialValues(int64_t n) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v = {0.0f, -0.0f, 1.0f,    -1.0f, 2.0f,  0.5f,
                          inf,  -inf,  nan,     1e-8f, -3.5f, 89.5f,
                          -110, 1e30f, -1e-40f, 3.92f, 0.9f,  9.0f};
  std::uniform_real_distribution<float> dist(-12.0f, 12.0f);
  while (static_cast<int64_t>(v.size()) < n)
    v.push_back(dist(rng()));
  return v;
}

TEST(Fused, EveryOpcode) {
  const int64_t n = 3001;
  Tensor a = valuesOf(WEFT_F32, {n}, specialValues(n));
  std::vector<float> bv = specialValues(n);
  std::reverse(bv.begin(), bv.end());
  Tensor b = valuesOf(WEFT_F32, {n}, bv);
  for (int64_t op : everyFusedOpcode())
    for (int64_t dtype : {WEFT_F32, WEFT_BF16, WEFT_F16}) {
      Program p;
      p.numOperands = 2;
      const bool binary = op >= kAdd && op <= kMin;
      p.out = {p.op(op, 0, binary ? 1 : -1, dtype)};
      check(p, {a, b}, {WEFT_F32}, {n},
            "op " + std::to_string(op) + " " + weftDTypeName(dtype));
    }
}

TEST(Fused, PowByScalarExponent) {
  // A uniform exponent (immediate, one-element operand, or computed from
  // them) takes the binary kernel's arithmetic for 2, 1, 3, 0.5 and -1.
  Tensor x = randomOf(WEFT_F32, {2, 700}, -4, 4);
  x.set(0, -std::numeric_limits<float>::infinity());
  x.set(1, -0.0f);
  for (double e : {2.0, 1.0, 3.0, 0.5, -1.0, 1.7, -2.0, 0.0}) {
    Program imm;
    imm.numOperands = 1;
    const int64_t ei = imm.imm(e);
    imm.out = {imm.op(kPow, 0, ei)};
    check(imm, {x}, {WEFT_F32}, {2, 700}, "pow imm " + std::to_string(e));

    Program scalar;
    scalar.numOperands = 2;
    scalar.out = {scalar.op(kPow, 0, 1)};
    check(scalar, {x, valuesOf(WEFT_F32, {1}, {static_cast<float>(e)})},
          {WEFT_F32}, {2, 700}, "pow scalar operand " + std::to_string(e));

    Program computed;
    computed.numOperands = 1;
    const int64_t h = computed.imm(e / 2);
    const int64_t sum = computed.op(kAdd, h, h);
    computed.out = {computed.op(kPow, 0, sum)};
    check(computed, {x}, {WEFT_F32}, {2, 700},
          "pow computed " + std::to_string(e));
  }
  // A full-shape exponent of twos is plain pow.
  Program full;
  full.numOperands = 2;
  full.out = {full.op(kPow, 0, 1)};
  Tensor twos = valuesOf(WEFT_F32, {2, 700}, std::vector<float>(1400, 2.0f));
  check(full, {x, twos}, {WEFT_F32}, {2, 700}, "pow full");
  // A uniform base with a varying exponent.
  Program base;
  base.numOperands = 1;
  const int64_t two = base.imm(2.0);
  base.out = {base.op(kPow, two, 0)};
  check(base, {x}, {WEFT_F32}, {2, 700}, "pow uniform base");
}

TEST(Fused, Broadcasting) {
  const Dims iter = {2, 4, 5, 6};
  // operand shapes: full, full with a leading 1, scalar (rank 0 and 1),
  // suffix, suffix with leading 1s, general ones.
  const Dims shapes[] = {{2, 4, 5, 6}, {1, 4, 5, 6}, {},          {1},
                         {6},          {5, 6},       {1, 5, 6},   {4, 1, 6},
                         {2, 1, 5, 1}, {4, 5, 1},    {2, 4, 1, 1}};
  for (const Dims &s : shapes)
    for (int64_t dtype : {WEFT_F32, WEFT_BF16}) {
      // x0 * x1 - tanh(x1) with x1 broadcast.
      Program p;
      p.numOperands = 2;
      const int64_t m = p.op(kMul, 0, 1);
      const int64_t t = p.op(WEFT_UNARY_TANH, 1);
      p.out = {p.op(kSub, m, t), t};
      std::string name = "shape [";
      for (int64_t d : s)
        name += std::to_string(d) + ",";
      check(p, {randomOf(WEFT_F32, iter), randomOf(dtype, s)},
            {WEFT_F32, WEFT_F16}, iter, name + "] " + weftDTypeName(dtype));
    }
}

TEST(Fused, BroadcastAcrossChunks) {
  // Large enough for several chunks and threads; periods that do not
  // divide the chunk size.
  const Dims iter = {1000, 7, 13};
  for (const Dims &s : {Dims{7, 13}, Dims{13}, Dims{1000, 1, 13},
                        Dims{1000, 7, 1}, Dims{1, 7, 1}}) {
    Program p;
    p.numOperands = 2;
    const int64_t sum = p.op(kAdd, 0, 1);
    p.out = {p.op(WEFT_UNARY_SIGMOID, sum, -1, WEFT_BF16)};
    check(p, {randomOf(WEFT_BF16, iter), randomOf(WEFT_F32, s)}, {WEFT_BF16},
          iter, "chunks");
  }
}

TEST(Fused, SixteenBitOperandsResultsAndRoundings) {
  const Dims dims = {37, 41};
  for (int64_t xt : {WEFT_F32, WEFT_BF16, WEFT_F16})
    for (int64_t mid : {WEFT_F32, WEFT_BF16, WEFT_F16})
      for (int64_t yt : {WEFT_F32, WEFT_BF16, WEFT_F16}) {
        Program p;
        p.numOperands = 2;
        const int64_t c = p.imm(0.1);
        const int64_t e = p.op(WEFT_UNARY_EXP, 0, -1, mid);
        const int64_t s = p.op(kMul, e, c, mid);
        const int64_t d = p.op(kDiv, s, 1);
        p.out = {d, s};
        check(p, {randomOf(xt, dims, -8, 8), randomOf(WEFT_F16, dims, 1, 2)},
              {yt, WEFT_F32}, dims,
              std::string(weftDTypeName(xt)) + "/" + weftDTypeName(mid) + "/" +
                  weftDTypeName(yt));
      }
}

TEST(Fused, ResultSharesOperandBuffer) {
  const Dims dims = {3, 5000};
  for (int64_t dtype : {WEFT_F32, WEFT_BF16}) {
    Program p;
    p.numOperands = 2;
    const int64_t s = p.op(kAdd, 0, 1);
    const int64_t r = p.op(WEFT_UNARY_RELU, s);
    p.out = {r, 0, s}; // y1 = the old x0: read before y0 overwrites it
    std::vector<Tensor> ops = {randomOf(dtype, dims), randomOf(WEFT_F32, {1})};
    std::vector<Tensor> results = {Tensor(dtype, dims), Tensor(dtype, dims),
                                   Tensor(WEFT_F32, dims)};
    std::vector<Tensor> want = runUnfused(p, ops, results);
    KernelCall call;
    for (Tensor &t : ops)
      call.raw(t.dtype, t.dims, t.data());
    call.raw(dtype, dims, ops[0].data()); // y0 in x0's buffer
    for (size_t t = 1; t < results.size(); ++t)
      call.raw(results[t].dtype, dims, results[t].data());
    call.attrs(p.attrs()).run(weft_k_fused);
    expectSameBits(ops[0], want[0], "in place y0");
    expectSameBits(results[1], want[1], "in place y1");
    expectSameBits(results[2], want[2], "in place y2");
  }
}

TEST(Fused, ImmediateAndOperandResultsAndDeadCode) {
  // No operands: a constant fill; results taken straight from an operand
  // or an immediate; an instruction and an operand nothing reads.
  Program fill;
  const int64_t c = fill.imm(1.0 / 3.0);
  fill.out = {c, fill.op(WEFT_UNARY_EXP, c, -1, WEFT_BF16)};
  check(fill, {}, {WEFT_BF16, WEFT_F32}, {4, 33}, "fill");

  Program p;
  p.numOperands = 3;
  const int64_t k = p.imm(-2.5);
  p.op(WEFT_UNARY_LOG, 2); // dead
  const int64_t m = p.op(kMax, 0, k);
  p.out = {m, 0, k, 1};
  check(p,
        {randomOf(WEFT_F32, {5, 300}), randomOf(WEFT_BF16, {300}),
         randomOf(WEFT_F32, {5, 300})},
        {WEFT_F32, WEFT_BF16, WEFT_F16, WEFT_F32}, {5, 300}, "direct");

  Program empty;
  empty.numOperands = 1;
  empty.out = {empty.op(WEFT_UNARY_NEG, 0)};
  check(empty, {randomOf(WEFT_F32, {0, 4})}, {WEFT_F32}, {0, 4}, "empty");
}

TEST(Fused, RandomPrograms) {
  std::mt19937 gen(2024);
  const Dims iter = {3, 17, 40};
  const std::vector<Dims> shapes = {iter, {40},       {17, 40},
                                    {},   {3, 1, 40}, {3, 17, 1}};
  for (int trial = 0; trial < 60; ++trial) {
    RandomProgram r = randomProgram(gen, shapes);
    check(r.program, r.operands, r.resultTypes, iter,
          "random program " + std::to_string(trial));
  }
}

//===-- bad programs ------------------------------------------------------===//

/// Runs a fused call on f32 tensors of `dims`: n operands of opDims, m
/// results of resDims.
void runBad(const std::vector<int64_t> &attrs, const std::vector<Dims> &opDims,
            const std::vector<Dims> &resDims, int64_t resultType = WEFT_F32) {
  std::vector<Tensor> ts;
  for (const Dims &d : opDims)
    ts.emplace_back(WEFT_F32, d);
  for (const Dims &d : resDims)
    ts.emplace_back(resultType, d);
  KernelCall call;
  for (Tensor &t : ts)
    call.raw(t.dtype, t.dims, t.data());
  call.attrs(attrs).run(weft_k_fused);
}

TEST(FusedDeath, BadPrograms) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Dims d = {4, 3};
  // n=1 m=1 k=0 q=1: instruction 0 reads register 1, itself.
  EXPECT_EXIT(
      runBad({1, 1, 0, 1, WEFT_UNARY_EXP, 1, -1, WEFT_F32, 1}, {d}, {d}),
      testing::ExitedWithCode(1),
      "kernel fused: instruction 0: operand a = 1 is not an earlier "
      "register");
  EXPECT_EXIT(runBad({1, 1, 0, 2, kAdd, 0, 2, WEFT_F32, WEFT_UNARY_NEG, 2, -1,
                      WEFT_F32, 2},
                     {d}, {d}),
              testing::ExitedWithCode(1),
              "instruction 0: operand b = 2 is not an earlier register");
  EXPECT_EXIT(
      runBad({1, 1, 0, 1, WEFT_UNARY_NOT, 0, -1, WEFT_F32, 1}, {d}, {d}),
      testing::ExitedWithCode(1),
      "kernel fused: instruction 0: unknown opcode 8");
  EXPECT_EXIT(runBad({1, 1, 0, 1, WEFT_FUSED_BINARY + WEFT_BINARY_AND, 0, 0,
                      WEFT_F32, 1},
                     {d}, {d}),
              testing::ExitedWithCode(1), "unknown opcode 23");
  EXPECT_EXIT(runBad({1, 1, 0, 1, WEFT_UNARY_EXP, 0, 0, WEFT_F32, 1}, {d}, {d}),
              testing::ExitedWithCode(1), "expected -1 for a unary op");
  EXPECT_EXIT(
      runBad({1, 1, 0, 1, WEFT_UNARY_EXP, 0, -1, WEFT_I32, 1}, {d}, {d}),
      testing::ExitedWithCode(1), "instruction 0: dtype i32");
  EXPECT_EXIT(runBad({1, 1, 0, 0, 5}, {d}, {d}), testing::ExitedWithCode(1),
              "result 0 takes register 5");
  EXPECT_EXIT(runBad({1, 1, 0, 0, 0, 99}, {d}, {d}), testing::ExitedWithCode(1),
              "6 attributes, expected 5");
  EXPECT_EXIT(runBad({2, 1, 0, 0, 0}, {d}, {d}), testing::ExitedWithCode(1),
              "n \\+ m = 3 operands and results, but 2 tensors");
  EXPECT_EXIT(runBad({1, 1, 70, 0, 0}, {d}, {d}), testing::ExitedWithCode(1),
              "70 immediates");
}

TEST(FusedDeath, BadShapes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::vector<int64_t> add = {2, 1, 0, 1, kAdd, 0, 1, WEFT_F32, 2};
  EXPECT_EXIT(runBad(add, {{4, 3}, {2}}, {{4, 3}}), testing::ExitedWithCode(1),
              "kernel fused: operand 1 is not broadcastable to the results: "
              "dim 0 is 2, the results' is 3");
  EXPECT_EXIT(runBad(add, {{4, 3}, {1, 4, 3}}, {{4, 3}}),
              testing::ExitedWithCode(1), "operand 1 has rank 3");
  EXPECT_EXIT(runBad({1, 2, 0, 0, 0, 0}, {{4, 3}}, {{4, 3}, {3, 4}}),
              testing::ExitedWithCode(1),
              "kernel fused: result 1's shape differs from result 0's");
  EXPECT_EXIT(runBad({1, 1, 0, 0, 0}, {{4, 3}}, {{4, 3}}, WEFT_F64),
              testing::ExitedWithCode(1), "result 0 is f64");
  // A result in the buffer of an operand of another shape.
  EXPECT_EXIT(
      {
        std::vector<float> x(3);
        KernelCall()
            .raw(WEFT_F32, {3}, x.data())
            .raw(WEFT_F32, {4, 3}, x.data())
            .attrs({1, 1, 0, 0, 0})
            .run(weft_k_fused);
      },
      testing::ExitedWithCode(1),
      "result 0 shares operand 0's buffer but not its shape");
}

} // namespace
