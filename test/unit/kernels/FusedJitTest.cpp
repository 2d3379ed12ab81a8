//===- FusedJitTest.cpp - Fused kernels compiled by NVRTC, without a GPU --===//
//
// FusedJit.h generates a CUDA source per fused program and compiles it with
// NVRTC, which needs no GPU: this test lowers programs as the GPU kernel
// does (FusedLowering.h), generates their sources and compiles them for
// sm_80 and sm_90. It checks that every program the lowering produces
// compiles (random programs, every opcode and access, the longest
// programs), that a GELU gradient keeps its slots in registers (ptxas: no
// stack frame, no spills), that the source depends on what the kernel is
// specialized on and nothing else, and that a program the generator does
// not know gets no source. Whether the compiled kernels give the
// interpreter's bits is test/cuda/FusedKernelTest.cpp's (on a GPU).
//
//===----------------------------------------------------------------------===//

#include "FusedTestUtil.h"

#include "runtime/kernels/cpu/FusedProgram.h"
#include "runtime/kernels/cuda/FusedJit.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include <unistd.h>

using namespace weft;
using namespace weft::test;
using weft::cuda::FusedJitProgram;
using weft::cuda::FusedMicroOp;

namespace {

/// The kernel program of `p` over iteration shape `iter`, as
/// weft_cuda_k_fused builds it (operands and results in their own
/// buffers).
FusedJitProgram jitProgramOf(const Program &p, std::vector<Tensor> operands,
                             const std::vector<int64_t> &resultTypes,
                             const Dims &iter) {
  std::vector<void *> bufs;
  std::vector<int64_t> desc = {
      static_cast<int64_t>(operands.size() + resultTypes.size())};
  for (Tensor &t : operands) {
    bufs.push_back(t.data());
    desc.push_back(t.dtype);
    desc.push_back(static_cast<int64_t>(t.dims.size()));
    desc.insert(desc.end(), t.dims.begin(), t.dims.end());
  }
  std::vector<Tensor> results;
  for (int64_t dt : resultTypes)
    results.emplace_back(dt, iter);
  for (Tensor &t : results) {
    bufs.push_back(t.data());
    desc.push_back(t.dtype);
    desc.push_back(static_cast<int64_t>(t.dims.size()));
    desc.insert(desc.end(), t.dims.begin(), t.dims.end());
  }
  const std::vector<int64_t> attrs = p.attrs();
  desc.push_back(static_cast<int64_t>(attrs.size()));
  desc.insert(desc.end(), attrs.begin(), attrs.end());
  cpu::KernelArgs args("fused", bufs.data(), desc.data());
  const cpu::FusedProgram prog = cpu::decodeFusedProgram(args);
  const cuda::FusedMicroProgram micro = cuda::lowerFusedCall(args, prog);
  FusedJitProgram jit;
  jit.ops = micro.ops;
  jit.numSlots = micro.numSlots;
  for (int i = 0; i < prog.numOperands; ++i) {
    jit.operandType.push_back(static_cast<uint8_t>(operands[i].dtype));
    jit.operandAccess.push_back(static_cast<uint8_t>(prog.access[i]));
  }
  for (int64_t dt : resultTypes)
    jit.resultType.push_back(static_cast<uint8_t>(dt));
  return jit;
}

/// Compiles prog's source for sm_<arch>; NVRTC's log (ptxas's report
/// included) in `log`.
bool compiles(const FusedJitProgram &prog, int arch, std::string &log,
              const std::string &what) {
  const std::string source = cuda::fusedJitSource(prog);
  EXPECT_FALSE(source.empty()) << what;
  std::vector<char> cubin;
  const bool ok =
      cuda::fusedJitCompile(source, arch, cubin, log, {"--ptxas-options=-v"});
  EXPECT_TRUE(ok) << what << ": " << log << "\n" << source;
  if (!ok)
    return false;
  // An ELF object that holds the kernel's name.
  EXPECT_GE(cubin.size(), 4u) << what;
  EXPECT_TRUE(std::equal(cubin.begin(), cubin.begin() + 4,
                         "\x7f"
                         "ELF"))
      << what;
  const std::string name = cuda::kFusedJitKernel;
  EXPECT_NE(std::search(cubin.begin(), cubin.end(), name.begin(), name.end()),
            cubin.end())
      << what;
  return true;
}

/// The ptxas report's figure before `what` ("bytes stack frame", "bytes
/// spill stores", "registers"); -1 when missing.
long reported(const std::string &log, const std::string &what) {
  std::smatch m;
  if (std::regex_search(log, m, std::regex("([0-9]+) " + what)))
    return std::stol(m[1]);
  return -1;
}

/// GELU's gradient as PyTorch's export gives it after weft's fusion
/// (weft-recompute-elementwise): from the bf16 product x and the bias b,
/// recompute u = x + b, the erf and the exp, and take dy in.
Program geluGrad(double halfValue = 0.5) {
  Program p;
  p.numOperands = 3; // product (bf16), bias (f32, suffix), dy (bf16)
  const int64_t rsqrt2 = p.imm(1.0 / std::sqrt(2.0)), one = p.imm(1.0),
                half = p.imm(halfValue), minusHalf = p.imm(-0.5),
                c = p.imm(1.0 / std::sqrt(2.0 * M_PI));
  const int64_t u = p.op(kAdd, p.op(kCopy, 0), 1);
  const int64_t z = p.op(kMul, u, rsqrt2);
  const int64_t cdf =
      p.op(kMul, p.op(kAdd, p.op(WEFT_UNARY_ERF, z), one), half);
  const int64_t pdf = p.op(
      kMul, p.op(WEFT_UNARY_EXP, p.op(kMul, p.op(kMul, u, u), minusHalf)), c);
  const int64_t g = p.op(kAdd, cdf, p.op(kMul, u, pdf));
  const int64_t dx = p.op(kMul, g, p.op(kCopy, 2));
  p.out = {p.op(kCopy, dx, -1, WEFT_BF16), dx};
  return p;
}

/// geluGrad's kernel program over `iter` (the bias: its last dim).
FusedJitProgram geluGradJit(const Dims &iter, double halfValue = 0.5) {
  return jitProgramOf(geluGrad(halfValue),
                      {randomOf(WEFT_BF16, iter),
                       randomOf(WEFT_F32, {iter.back()}),
                       randomOf(WEFT_BF16, iter)},
                      {WEFT_BF16, WEFT_F32}, iter);
}

TEST(FusedJit, RandomProgramsCompile) {
  std::mt19937 gen(5);
  const Dims iter = {3, 7, 5};
  const std::vector<Dims> shapes = {iter, {5}, {7, 5}, {}, {3, 1, 5}};
  for (int trial = 0; trial < 12; ++trial) {
    RandomProgram r = randomProgram(gen, shapes, 6);
    FusedJitProgram jit =
        jitProgramOf(r.program, r.operands, r.resultTypes, iter);
    jit.index64 = trial % 3 == 2;
    std::string log;
    compiles(jit, trial % 2 ? 80 : 90, log,
             "random program " + std::to_string(trial));
  }
}

TEST(FusedJit, GeluGradientKeepsItsSlotsInRegisters) {
  FusedJitProgram jit = geluGradJit({64, 96});
  ASSERT_GE(jit.numSlots, 1) << "the lowering should spill u";
  EXPECT_EQ(jit.operandAccess[1],
            static_cast<uint8_t>(cpu::FusedAccess::Suffix));
  std::string log;
  ASSERT_TRUE(compiles(jit, 90, log, "gelu gradient"));
  EXPECT_EQ(reported(log, "bytes stack frame"), 0) << log;
  EXPECT_EQ(reported(log, "bytes spill stores"), 0) << log;
  EXPECT_GT(reported(log, "registers"), 0) << log;
  if (std::getenv("WEFT_TEST_VERBOSE"))
    std::printf("%s\n", log.c_str());
}

TEST(FusedJit, LongestProgramsCompile) {
  // 64 registers in all: 2 operands, 62 instructions, the most results,
  // every op in turn (sqrt and log of values kept positive).
  Program p;
  p.numOperands = 2;
  int64_t last = p.op(kAdd, 0, 1);
  const int64_t ops[] = {WEFT_UNARY_EXP,     kMul, WEFT_UNARY_TANH, kSub,
                         WEFT_UNARY_SIGMOID, kMax, WEFT_UNARY_ERF,  kMin,
                         WEFT_UNARY_RELU,    kDiv, WEFT_UNARY_NEG,  kPow};
  std::vector<int64_t> made = {last};
  for (int j = 1; j < WEFT_FUSED_MAX_REGISTERS - 2; ++j) {
    const int64_t op = ops[j % 12];
    last =
        op >= WEFT_FUSED_BINARY ? p.op(op, last, made[j / 2]) : p.op(op, last);
    made.push_back(last);
  }
  for (int t = 0; t < WEFT_FUSED_MAX_RESULTS; ++t)
    p.out.push_back(made[made.size() - 1 - 7 * t]);
  const Dims iter = {4, 33};
  FusedJitProgram jit = jitProgramOf(
      p, {randomOf(WEFT_F16, iter), randomOf(WEFT_BF16, {1, 33})},
      std::vector<int64_t>(WEFT_FUSED_MAX_RESULTS, WEFT_F32), iter);
  EXPECT_GT(jit.ops.size(), 70u);
  std::string log;
  compiles(jit, 90, log, "longest");
}

TEST(FusedJit, SourceDependsOnTheSpecializationOnly) {
  // Shapes and immediates travel in the parameter block: two GELU
  // gradients of other sizes and another constant share a source.
  FusedJitProgram a = geluGradJit({8, 96});
  FusedJitProgram b = geluGradJit({3, 5, 40}, 0.25);
  EXPECT_EQ(a.key(), b.key());
  EXPECT_EQ(cuda::fusedJitSource(a), cuda::fusedJitSource(b));
  // Another element type, access, index width or block: another kernel.
  for (int variant = 0; variant < 4; ++variant) {
    FusedJitProgram c = a;
    if (variant == 0)
      c.operandType[2] = WEFT_F16;
    else if (variant == 1)
      c.operandAccess[1] = static_cast<uint8_t>(cpu::FusedAccess::General);
    else if (variant == 2)
      c.index64 = true;
    else
      c.block = 128;
    EXPECT_NE(c.key(), a.key()) << variant;
    EXPECT_NE(cuda::fusedJitSource(c), cuda::fusedJitSource(a)) << variant;
  }
}

TEST(FusedJit, UnknownProgramsGetNoSource) {
  FusedJitProgram base = geluGradJit({8, 96});
  ASSERT_FALSE(cuda::fusedJitSource(base).empty());
  std::vector<FusedJitProgram> bad(6, base);
  bad[0].ops[0].code = 200;                          // no such micro-op
  bad[1].ops[0].source = 9;                          // no such input
  bad[2].operandType[0] = WEFT_I64;                  // an operand it loads
  bad[3].ops.back().result = WEFT_FUSED_MAX_RESULTS; // no such result
  bad[4].ops[0].round = WEFT_I32;                    // no such rounding
  bad[5].operandAccess.pop_back();                   // descriptions disagree
  for (size_t i = 0; i < bad.size(); ++i)
    EXPECT_EQ(cuda::fusedJitSource(bad[i]), "") << i;
  // NVRTC's errors come back in the log.
  std::vector<char> cubin;
  std::string log;
  EXPECT_FALSE(cuda::fusedJitCompile("this is not CUDA", 90, cubin, log));
  EXPECT_NE(log.find("error"), std::string::npos) << log;
}

} // namespace

namespace {

/// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  std::string old;
  bool had;
  ScopedEnv(const char *n, const std::string &value) : name(n) {
    const char *v = std::getenv(n);
    had = v != nullptr;
    if (had)
      old = v;
    setenv(n, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had)
      setenv(name.c_str(), old.c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

TEST(FusedJit, CompiledKernelsAreCachedBetweenProcesses) {
  const std::string root = ::testing::TempDir() + "weft-jit-cache-" +
                           std::to_string(static_cast<long>(getpid()));
  ScopedEnv env("WEFT_CACHE_DIR", root);
  EXPECT_EQ(cuda::fusedJitCacheDir(), root + "/cuda-fused");
  const std::string source = cuda::fusedJitSource(geluGradJit({8, 96}));
  std::vector<char> first, second;
  std::string log;
  bool cached = true;
  ASSERT_TRUE(cuda::fusedJitCompileCached(source, 90, first, log, cached))
      << log;
  EXPECT_FALSE(cached) << "nothing was cached yet";
  ASSERT_TRUE(cuda::fusedJitCompileCached(source, 90, second, log, cached))
      << log;
  EXPECT_TRUE(cached) << "the second compile reads the first's cubin";
  EXPECT_EQ(first, second);
  // Another architecture is another entry.
  std::vector<char> sm80;
  ASSERT_TRUE(cuda::fusedJitCompileCached(source, 80, sm80, log, cached));
  EXPECT_FALSE(cached);
  // A damaged entry is compiled again (and rewritten).
  std::string entry;
  for (const auto &e :
       std::filesystem::directory_iterator(root + "/cuda-fused"))
    if (e.path().extension() == ".cubin") {
      std::string bytes;
      std::ifstream in(e.path(), std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
      if (std::equal(first.begin(), first.end(), bytes.begin(), bytes.end()))
        entry = e.path().string();
    }
  ASSERT_FALSE(entry.empty()) << "the sm_90 cubin is in the cache";
  std::ofstream(entry, std::ios::binary | std::ios::trunc) << "garbage";
  std::vector<char> third;
  ASSERT_TRUE(cuda::fusedJitCompileCached(source, 90, third, log, cached));
  EXPECT_FALSE(cached);
  EXPECT_EQ(third, first);
  std::filesystem::remove_all(root);
}

TEST(FusedJit, TheCacheCanBeTurnedOffOrBeUnwritable) {
  {
    ScopedEnv env("WEFT_CACHE_DIR", "off");
    EXPECT_EQ(cuda::fusedJitCacheDir(), "");
    std::vector<char> cubin;
    std::string log;
    bool cached = true;
    EXPECT_TRUE(cuda::fusedJitCompileCached(
        cuda::fusedJitSource(geluGradJit({8, 96})), 90, cubin, log, cached));
    EXPECT_FALSE(cached);
  }
  // A cache directory that cannot be made: the compile still succeeds.
  ScopedEnv env("WEFT_CACHE_DIR", "/proc/weft-no-such-dir");
  std::vector<char> cubin;
  std::string log;
  bool cached = true;
  EXPECT_TRUE(cuda::fusedJitCompileCached(
      cuda::fusedJitSource(geluGradJit({8, 96})), 90, cubin, log, cached))
      << log;
  EXPECT_FALSE(cached);
  EXPECT_FALSE(cubin.empty());
}

} // namespace
