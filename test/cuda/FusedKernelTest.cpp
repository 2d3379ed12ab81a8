//===- FusedKernelTest.cpp - GPU fused kernel against the CPU's and unfused
//-===//
//
// Runs weft_cuda_k_fused on chains (GELU, several results), every opcode,
// every broadcast kind (full, scalar, suffix, general, and a general one of
// more than 6 merged dims), 16-bit operands, results and roundings, odd
// sizes, a result sharing an operand's buffer and 64M-element tensors, and
// compares each
//
//   - with the CPU kernel weft_k_fused: exact for chains of add, sub, mul,
//     div, max, min, neg, relu and copies (and roundings); within a few ulp
//     of f32 (one of a 16-bit result) where exp, log, tanh, erf, sigmoid,
//     pow or sqrt take part (the GPU's FMAs and powf differ from the CPU's);
//   - with the unfused GPU kernels (unary, binary, cast there and back for
//     each rounding, expand and cast for the results) run one by one on f32
//     tensors: the same bits;
//   - with itself on buffers one element off 16-byte alignment (the
//     element-by-element path): the same bits.
//
// The fused kernels are those compiled at run time (FusedJit.h) unless
// WEFT_CUDA_FUSED=interpret (ctest runs the test both ways). Ends with
// throughput lines: GELU and its gradient on 64M bf16 and f32 elements,
// fused against their unfused kernels. Exits 1 when a case fails, 77 without
// a GPU.
//
//===----------------------------------------------------------------------===//

#include "KernelCheck.h"

#include "runtime/cuda/CudaRuntime.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "test/unit/kernels/FusedProgramBuilder.h"
#include "weft/runtime/Float16.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace weft;
using namespace weft::test;

namespace {

using Dims = std::vector<int64_t>;

int failures = 0;

int64_t numelOf(const Dims &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

std::string dimsName(const Dims &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "x" : "") + std::to_string(dims[i]);
  return s + "]";
}

/// One test: the program, its operands, results (dtype and the iteration
/// shape) and the GPU-vs-CPU tolerance.
struct FusedCase {
  std::string name;
  Program program;
  std::vector<HostTensor> operands;
  std::vector<HostTensor> results;
  double rtol = 0, atol = 0;
  std::vector<int> inPlace;
};

//===-- device tensors and the unfused chain ------------------------------===//

struct DeviceTensor {
  int64_t dtype = WEFT_F32;
  Dims dims;
  void *ptr = nullptr;
  int64_t bytes() const { return numelOf(dims) * weftDTypeSize(dtype); }
};

/// A device tensor whose data starts `offset` elements into its allocation
/// (`base`, for cudaFree).
struct DeviceBuffer {
  void *base = nullptr;
  DeviceTensor t;
};

DeviceBuffer deviceAlloc(int64_t dtype, Dims dims, int64_t offset = 0) {
  DeviceBuffer b;
  b.t.dtype = dtype;
  b.t.dims = std::move(dims);
  const int64_t size = weftDTypeSize(dtype);
  cuda::check(cudaMalloc(&b.base, static_cast<size_t>(b.t.bytes() +
                                                      (offset + 1) * size)),
              "test allocation");
  b.t.ptr = static_cast<char *>(b.base) + offset * size;
  return b;
}

DeviceBuffer upload(const HostTensor &h, int64_t offset = 0) {
  DeviceBuffer b = deviceAlloc(h.dtype, h.dims, offset);
  cuda::check(cudaMemcpy(b.t.ptr, h.bytes.data(), h.bytes.size(),
                         cudaMemcpyHostToDevice),
              "test upload");
  return b;
}

HostTensor download(const DeviceTensor &t) {
  HostTensor h = zeroTensor(t.dtype, t.dims);
  cuda::check(
      cudaMemcpy(h.bytes.data(), t.ptr, h.bytes.size(), cudaMemcpyDeviceToHost),
      "test download");
  return h;
}

void call(KernelFn fn, const std::vector<const DeviceTensor *> &ts,
          const std::vector<int64_t> &attrs) {
  std::vector<std::pair<int64_t, std::vector<int64_t>>> shapes;
  std::vector<void *> bufs;
  for (const DeviceTensor *t : ts) {
    shapes.emplace_back(t->dtype, t->dims);
    bufs.push_back(t->ptr);
  }
  std::vector<int64_t> desc = kernelDesc(shapes, attrs);
  fn(bufs.data(), desc.data());
}

/// Allocations of unfused runs, freed together. After rewind() a run of
/// the same program gets the same tensors back (`fresh` false), so a timed
/// loop allocates nothing.
struct Arena {
  std::vector<DeviceBuffer> blocks;
  size_t next = 0;
  DeviceTensor make(int64_t dtype, Dims dims, bool *fresh = nullptr) {
    if (fresh)
      *fresh = next == blocks.size();
    if (next == blocks.size())
      blocks.push_back(deviceAlloc(dtype, std::move(dims)));
    return blocks[next++].t;
  }
  void rewind() { next = 0; }
  ~Arena() {
    for (DeviceBuffer &b : blocks)
      cudaFree(b.base);
  }
};

/// The program as unfused GPU kernels on f32 tensors into `results`.
void runUnfused(const Program &p, const std::vector<DeviceTensor> &operands,
                const std::vector<DeviceTensor> &results, Arena &arena) {
  std::vector<DeviceTensor> reg;
  auto castTo = [&](const DeviceTensor &x, int64_t dtype) {
    DeviceTensor y = arena.make(dtype, x.dims);
    call(weft_cuda_k_cast, {&x, &y}, {});
    return y;
  };
  for (const DeviceTensor &x : operands)
    reg.push_back(castTo(x, WEFT_F32));
  for (double v : p.imms) {
    bool fresh = false;
    DeviceTensor t = arena.make(WEFT_F32, {}, &fresh);
    const float f = static_cast<float>(v);
    if (fresh)
      cuda::check(cudaMemcpy(t.ptr, &f, 4, cudaMemcpyHostToDevice), "upload");
    reg.push_back(t);
  }
  for (const auto &c : p.code) {
    const DeviceTensor a = reg[c[1]];
    DeviceTensor y;
    if (c[0] < WEFT_FUSED_BINARY) {
      y = arena.make(WEFT_F32, a.dims);
      call(weft_cuda_k_unary, {&a, &y}, {c[0]});
    } else if (c[0] == kCopy) {
      y = castTo(a, WEFT_F32);
    } else {
      const DeviceTensor b = reg[c[2]];
      y = arena.make(WEFT_F32, broadcastDims(a.dims, b.dims));
      call(weft_cuda_k_binary, {&a, &b, &y}, {c[0] - WEFT_FUSED_BINARY});
    }
    if (c[3] != WEFT_F32)
      y = castTo(castTo(y, c[3]), WEFT_F32);
    reg.push_back(y);
  }
  for (size_t t = 0; t < results.size(); ++t) {
    DeviceTensor full = arena.make(WEFT_F32, results[t].dims);
    call(weft_cuda_k_expand, {&reg[p.out[t]], &full}, {});
    call(weft_cuda_k_cast, {&full, &results[t]}, {});
  }
}

/// Same bytes, except that any NaN matches any NaN.
bool sameBits(const HostTensor &a, const HostTensor &b, int64_t &where) {
  const size_t size = static_cast<size_t>(weftDTypeSize(a.dtype));
  for (int64_t i = 0, n = a.numel(); i < n; ++i) {
    if (std::memcmp(a.bytes.data() + i * size, b.bytes.data() + i * size,
                    size) == 0 ||
        (std::isnan(a.at(i)) && std::isnan(b.at(i))))
      continue;
    where = i;
    return false;
  }
  return true;
}

/// Fused on the GPU (aligned and one element off) against the unfused GPU
/// kernels: the same bits.
void compareOnGpu(const FusedCase &c) {
  Arena arena;
  std::vector<DeviceBuffer> owned;
  std::vector<DeviceTensor> ops, shifted, fused, fusedShifted, unfused;
  for (const HostTensor &h : c.operands) {
    owned.push_back(upload(h));
    ops.push_back(owned.back().t);
    owned.push_back(upload(h, 1));
    shifted.push_back(owned.back().t);
  }
  for (const HostTensor &h : c.results) {
    owned.push_back(deviceAlloc(h.dtype, h.dims));
    fused.push_back(owned.back().t);
    owned.push_back(deviceAlloc(h.dtype, h.dims, 1));
    fusedShifted.push_back(owned.back().t);
    unfused.push_back(arena.make(h.dtype, h.dims));
  }
  auto runFused = [&](const std::vector<DeviceTensor> &in,
                      const std::vector<DeviceTensor> &outs) {
    std::vector<const DeviceTensor *> ts;
    for (const DeviceTensor &t : in)
      ts.push_back(&t);
    for (const DeviceTensor &t : outs)
      ts.push_back(&t);
    call(weft_cuda_k_fused, ts, c.program.attrs());
  };
  runFused(ops, fused);
  runFused(shifted, fusedShifted);
  runUnfused(c.program, ops, unfused, arena);
  cuda::synchronize();
  cuda::checkDeviceErrors();
  bool ok = true;
  std::string detail;
  for (size_t t = 0; t < c.results.size() && ok; ++t) {
    const HostTensor f = download(fused[t]);
    int64_t where = -1;
    const HostTensor u = download(unfused[t]);
    if (!sameBits(f, u, where)) {
      ok = false;
      detail = " (result " + std::to_string(t) + " element " +
               std::to_string(where) + ": fused " +
               std::to_string(f.at(where)) + " unfused " +
               std::to_string(u.at(where)) + ")";
    } else if (!sameBits(f, download(fusedShifted[t]), where)) {
      ok = false;
      detail = " (result " + std::to_string(t) + " element " +
               std::to_string(where) + " differs when unaligned)";
    }
  }
  std::printf("%s fused %s: gpu fused vs gpu unfused and unaligned%s\n",
              ok ? "PASS" : "FAIL", c.name.c_str(), detail.c_str());
  failures += !ok;
  for (DeviceBuffer &b : owned)
    cuda::check(cudaFree(b.base), "test free");
}

void expect(const FusedCase &c) {
  KernelCase k;
  k.name = "fused " + c.name + ": gpu vs cpu";
  k.cpu = weft_k_fused;
  k.gpu = weft_cuda_k_fused;
  k.operands = c.operands;
  k.results = c.results;
  k.attrs = c.program.attrs();
  k.rtol = c.rtol;
  k.atol = c.atol;
  k.inPlace = c.inPlace;
  failures += !runCase(k);
  if (c.inPlace.empty())
    compareOnGpu(c);
}

//===-- cases -------------------------------------------------------------===//

/// y = 0.5 * t * (1 + erf(t / sqrt 2)), t = x + bias; results y rounded to
/// `yType`, and t (f32, kept for the gradient) unless `onlyY`.
Program geluProgram(int64_t yType, bool onlyY) {
  Program p;
  p.numOperands = 2;
  const GeluRegisters r = appendGelu(p, yType);
  p.out = {r.rounded};
  if (!onlyY)
    p.out.push_back(r.t);
  return p;
}

/// GELU's gradient as weft fuses it (weft-recompute-elementwise): u = x +
/// bias recomputed from the bf16 product x, then dy * (cdf(u) + u pdf(u)),
/// as bf16 and f32 results. Operands x (bf16), bias (f32), dy (bf16).
Program geluGradProgram() {
  Program p;
  p.numOperands = 3;
  const int64_t rsqrt2 = p.imm(1.0 / std::sqrt(2.0)), one = p.imm(1.0),
                half = p.imm(0.5), minusHalf = p.imm(-0.5),
                c = p.imm(1.0 / std::sqrt(2.0 * M_PI));
  const int64_t u = p.op(kAdd, p.op(kCopy, 0), 1);
  const int64_t cdf = p.op(
      kMul, p.op(kAdd, p.op(WEFT_UNARY_ERF, p.op(kMul, u, rsqrt2)), one), half);
  const int64_t pdf = p.op(
      kMul, p.op(WEFT_UNARY_EXP, p.op(kMul, p.op(kMul, u, u), minusHalf)), c);
  const int64_t dx =
      p.op(kMul, p.op(kAdd, cdf, p.op(kMul, u, pdf)), p.op(kCopy, 2));
  p.out = {p.op(kCopy, dx, -1, WEFT_BF16), dx};
  return p;
}

void testGelu() {
  for (const Dims &dims : {Dims{8, 129, 96}, Dims{3, 5, 7}}) {
    FusedCase c;
    c.name = "gelu gradient " + dimsName(dims);
    c.program = geluGradProgram();
    c.operands = {randomTensor(WEFT_BF16, dims, -5, 5, 3),
                  randomTensor(WEFT_F32, {dims.back()}, -1, 1, 4),
                  randomTensor(WEFT_BF16, dims, -2, 2, 5)};
    c.results = {zeroTensor(WEFT_BF16, dims), zeroTensor(WEFT_F32, dims)};
    c.rtol = 8e-3;
    c.atol = 1e-5;
    expect(c);
  }
  for (const Dims &dims : {Dims{8, 129, 96}, Dims{3, 5, 7}, Dims{1001, 64}}) {
    FusedCase c;
    c.name = "gelu bf16 " + dimsName(dims);
    c.program = geluProgram(WEFT_BF16, false);
    c.operands = {randomTensor(WEFT_BF16, dims, -5, 5, 1),
                  randomTensor(WEFT_F32, {dims.back()}, -1, 1, 2)};
    c.results = {zeroTensor(WEFT_BF16, dims), zeroTensor(WEFT_F32, dims)};
    // One bf16 ulp where the f32 value sits next to a rounding boundary.
    c.rtol = 8e-3;
    c.atol = 1e-6;
    expect(c);
  }
}

/// Exact chains: arithmetic without transcendentals, every broadcast kind.
void testExactChains() {
  const Dims iter = {2, 4, 5, 6};
  const Dims shapes[] = {{2, 4, 5, 6}, {1, 4, 5, 6}, {},          {1},
                         {6},          {5, 6},       {1, 5, 6},   {4, 1, 6},
                         {2, 1, 5, 1}, {4, 5, 1},    {2, 4, 1, 1}};
  for (const Dims &s : shapes)
    for (int64_t dtype : {WEFT_F32, WEFT_BF16, WEFT_F16}) {
      FusedCase c;
      c.name = std::string("exact chain ") + weftDTypeName(dtype) + " " +
               dimsName(s);
      Program &p = c.program;
      p.numOperands = 2;
      const int64_t k = p.imm(0.75);
      const int64_t m = p.op(kMul, 0, 1);
      const int64_t d = p.op(kDiv, m, k);
      const int64_t r = p.op(WEFT_UNARY_RELU, d, -1, WEFT_BF16);
      const int64_t n = p.op(WEFT_UNARY_NEG, 1);
      const int64_t mx = p.op(kMax, r, n);
      const int64_t mn = p.op(kMin, mx, 0, WEFT_F16);
      const int64_t sb = p.op(kSub, mn, m);
      p.out = {sb, mx, p.op(kCopy, sb, -1, WEFT_BF16)};
      c.operands = {randomTensor(WEFT_F32, iter, -3, 3, 3),
                    randomTensor(dtype, s, -3, 3, 4)};
      c.results = {zeroTensor(WEFT_F32, iter), zeroTensor(dtype, iter),
                   zeroTensor(WEFT_F16, iter)};
      expect(c);
    }
  // Sizes off the group and vector widths, large broadcasts.
  for (const Dims &dims : {Dims{1}, Dims{7, 13}, Dims{3, 5, 11},
                           Dims{(1 << 20) + 3}, Dims{1031, 1025}}) {
    FusedCase c;
    c.name = "exact chain " + dimsName(dims);
    Program &p = c.program;
    p.numOperands = 3;
    const int64_t a = p.op(kAdd, 0, 1);
    const int64_t b = p.op(kMul, a, 2, WEFT_BF16);
    p.out = {b, p.op(kSub, b, 0)};
    c.operands = {randomTensor(WEFT_BF16, dims, -3, 3, 5),
                  randomTensor(WEFT_F32, {dims.back()}, -3, 3, 6),
                  randomTensor(WEFT_F16, {1}, -3, 3, 7)};
    c.results = {zeroTensor(WEFT_BF16, dims), zeroTensor(WEFT_F32, dims)};
    expect(c);
  }
  // A general operand of more than 6 merged dims (expanded first).
  const Dims wide = {2, 3, 2, 3, 2, 3, 2, 3, 2, 3};
  FusedCase c;
  c.name = "exact chain rank-10 alternating broadcast";
  c.program.numOperands = 2;
  c.program.out = {c.program.op(kAdd, 0, 1)};
  c.operands = {
      randomTensor(WEFT_F32, wide, -3, 3, 8),
      randomTensor(WEFT_BF16, {2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, -3, 3, 9)};
  c.results = {zeroTensor(WEFT_F32, wide)};
  expect(c);
}

void testEveryOpcode() {
  for (int64_t op : everyFusedOpcode())
    for (const Dims &dims : {Dims{4099}, Dims{(1 << 20) + 5}}) {
      const bool positive =
          op == WEFT_UNARY_SQRT || op == WEFT_UNARY_LOG || op == kPow;
      const bool exact = op == kCopy || op == WEFT_UNARY_NEG ||
                         op == WEFT_UNARY_RELU || op == WEFT_UNARY_SQRT ||
                         (op >= kAdd && op <= kMin && op != kPow);
      FusedCase c;
      c.name = "op " + std::to_string(op) + " " + dimsName(dims);
      c.program.numOperands = 2;
      const bool binary = op >= kAdd && op <= kMin;
      c.program.out = {c.program.op(op, 0, binary ? 1 : -1)};
      c.operands = {randomTensor(WEFT_F32, dims, positive ? 0.001 : -12,
                                 positive ? 8 : 12, 11),
                    randomTensor(WEFT_F32, dims, op == kPow ? -3 : 0.5, 3, 12)};
      c.results = {zeroTensor(WEFT_F32, dims)};
      // As the unary and binary comparisons: CUDA's powf is within 4 ulp.
      c.rtol = exact ? 0 : op == kPow ? 2e-6 : 1e-6;
      c.atol = exact ? 0 : 1e-6;
      expect(c);
    }
  // Pow by a uniform exponent: the binary kernel's arithmetic.
  for (double e : {2.0, 1.0, 3.0, 0.5, -1.0, 1.7}) {
    FusedCase c;
    c.name = "pow by immediate " + std::to_string(e);
    c.program.numOperands = 1;
    const int64_t k = c.program.imm(e);
    c.program.out = {c.program.op(kPow, 0, k)};
    c.operands = {randomTensor(WEFT_F32, {1000, 3}, 0, 4, 13)};
    c.results = {zeroTensor(WEFT_F32, {1000, 3})};
    c.rtol = 2e-6;
    c.atol = 1e-6;
    expect(c);
  }
}

void testRoundingsAndAliasing() {
  const Dims dims = {37, 41};
  for (int64_t xt : {WEFT_F32, WEFT_BF16, WEFT_F16})
    for (int64_t mid : {WEFT_F32, WEFT_BF16, WEFT_F16}) {
      FusedCase c;
      c.name = std::string("roundings ") + weftDTypeName(xt) + "/" +
               weftDTypeName(mid);
      Program &p = c.program;
      p.numOperands = 2;
      const int64_t k = p.imm(0.1);
      const int64_t e = p.op(WEFT_UNARY_EXP, 0, -1, mid);
      const int64_t s = p.op(kMul, e, k, mid);
      const int64_t t = p.op(WEFT_UNARY_TANH, s);
      const int64_t g = p.op(WEFT_UNARY_SIGMOID, t, -1, mid);
      p.out = {p.op(kDiv, g, 1), s};
      c.operands = {randomTensor(xt, dims, -8, 8, 14),
                    randomTensor(WEFT_F16, dims, 1, 2, 15)};
      c.results = {zeroTensor(xt, dims), zeroTensor(WEFT_F32, dims)};
      c.rtol = mid == WEFT_F32 && xt == WEFT_F32 ? 1e-5 : 8e-3;
      c.atol = 1e-6;
      expect(c);
    }
  // y0 in x0's buffer; y1 = the old x0.
  for (int64_t dtype : {WEFT_F32, WEFT_BF16}) {
    FusedCase c;
    c.name = std::string("in place ") + weftDTypeName(dtype);
    Program &p = c.program;
    p.numOperands = 2;
    const int64_t s = p.op(kAdd, 0, 1);
    p.out = {p.op(WEFT_UNARY_RELU, s), 0};
    c.operands = {randomTensor(dtype, {3, 5001}, -3, 3, 16),
                  randomTensor(WEFT_F32, {5001}, -1, 1, 17)};
    c.results = {zeroTensor(dtype, {3, 5001}), zeroTensor(dtype, {3, 5001})};
    c.inPlace = {0, -1};
    expect(c);
  }
}

void testLarge() {
  const int64_t n = int64_t(1) << 26, cols = 4096;
  FusedCase c;
  c.name = "gelu bf16 64M";
  c.program = geluProgram(WEFT_BF16, false);
  c.operands = {randomTensor(WEFT_BF16, {n / cols, cols}, -5, 5, 18),
                randomTensor(WEFT_F32, {cols}, -1, 1, 19)};
  c.results = {zeroTensor(WEFT_BF16, {n / cols, cols}),
               zeroTensor(WEFT_F32, {n / cols, cols})};
  c.rtol = 8e-3;
  c.atol = 1e-6;
  expect(c);
  FusedCase e;
  e.name = "exact f32 64M + 3";
  e.program.numOperands = 2;
  const int64_t k = e.program.imm(-0.5);
  const int64_t m = e.program.op(kMul, 0, k);
  e.program.out = {e.program.op(kAdd, m, 1)};
  e.operands = {randomTensor(WEFT_F32, {n + 3}, -3, 3, 20),
                randomTensor(WEFT_F32, {1}, -3, 3, 21)};
  e.results = {zeroTensor(WEFT_F32, {n + 3})};
  expect(e);
}

//===-- throughput --------------------------------------------------------===//

/// Fills t with values spread over [-4, 4) (zeros would send every
/// division down its slow path).
void fillRandom(const DeviceTensor &t) {
  const int64_t n = numelOf(t.dims);
  std::vector<uint16_t> half(t.dtype == WEFT_F32 ? 0 : n);
  std::vector<float> full(t.dtype == WEFT_F32 ? n : 0);
  uint32_t state = 12345;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    const float v = static_cast<float>(state >> 8) * (8.0f / 16777216.0f) - 4;
    if (t.dtype == WEFT_F32)
      full[i] = v;
    else
      half[i] = t.dtype == WEFT_BF16 ? floatToBFloat16(v) : floatToHalf(v);
  }
  cuda::check(
      cudaMemcpy(t.ptr,
                 t.dtype == WEFT_F32 ? static_cast<const void *>(full.data())
                                     : static_cast<const void *>(half.data()),
                 static_cast<size_t>(t.bytes()), cudaMemcpyHostToDevice),
      "benchmark fill");
}

/// Milliseconds of the fused kernel and of the unfused chain on 64M
/// elements, with the GB/s of the fused one's compulsory traffic.
/// (Operands: x of xType, a bias of cols f32, then, for a program of three
/// operands, a second full-shape one of xType.)
void throughput(const char *what, const Program &p, int64_t xType,
                const std::vector<int64_t> &resultTypes) {
  const int64_t cols = 4096, rows = (int64_t(1) << 26) / cols;
  const Dims dims = {rows, cols};
  std::vector<DeviceBuffer> owned = {deviceAlloc(xType, dims),
                                     deviceAlloc(WEFT_F32, {cols})};
  if (p.numOperands == 3)
    owned.push_back(deviceAlloc(xType, dims));
  std::vector<DeviceTensor> ops, results;
  double bytes = 0;
  for (DeviceBuffer &b : owned) {
    fillRandom(b.t);
    ops.push_back(b.t);
    if (b.t.dims == dims)
      bytes += static_cast<double>(b.t.bytes());
  }
  for (int64_t dt : resultTypes) {
    owned.push_back(deviceAlloc(dt, dims));
    results.push_back(owned.back().t);
    bytes += static_cast<double>(owned.back().t.bytes());
  }
  std::vector<const DeviceTensor *> ts;
  for (const DeviceTensor &t : ops)
    ts.push_back(&t);
  for (const DeviceTensor &t : results)
    ts.push_back(&t);
  const std::vector<int64_t> attrs = p.attrs();
  const double fusedMs =
      gpuMilliseconds([&] { call(weft_cuda_k_fused, ts, attrs); }, 20);
  Arena arena;
  const double unfusedMs = gpuMilliseconds(
      [&] {
        arena.rewind();
        runUnfused(p, ops, results, arena);
      },
      5);
  const char *mode = std::getenv("WEFT_CUDA_FUSED");
  std::printf("throughput fused (%s) %s 64M: %.3f ms, %.0f GB/s (unfused "
              "kernels %.3f ms, %.1fx)\n",
              mode && *mode ? mode : "jit", what, fusedMs,
              bytes / (fusedMs * 1e6), unfusedMs, unfusedMs / fusedMs);
  for (DeviceBuffer &b : owned)
    cuda::check(cudaFree(b.base), "benchmark free");
}

void benchmarks() {
  throughput("gelu bf16 -> bf16", geluProgram(WEFT_BF16, true), WEFT_BF16,
             {WEFT_BF16});
  throughput("gelu bf16 -> bf16 + t f32", geluProgram(WEFT_BF16, false),
             WEFT_BF16, {WEFT_BF16, WEFT_F32});
  throughput("gelu f32 -> f32", geluProgram(WEFT_F32, true), WEFT_F32,
             {WEFT_F32});
  throughput("gelu gradient bf16 -> bf16 + f32", geluGradProgram(), WEFT_BF16,
             {WEFT_BF16, WEFT_F32});
  Program axpy;
  axpy.numOperands = 2;
  const int64_t k = axpy.imm(0.5);
  axpy.out = {axpy.op(kAdd, axpy.op(kMul, 0, k), 1, WEFT_BF16)};
  throughput("x * 0.5 + bias bf16 -> bf16", axpy, WEFT_BF16, {WEFT_BF16});
}

} // namespace

int main() {
  skipWithoutGpu();
  testGelu();
  testExactChains();
  testEveryOpcode();
  testRoundingsAndAliasing();
  testLarge();
  benchmarks();
  if (failures > 0) {
    std::printf("%d case(s) failed\n", failures);
    return 1;
  }
  std::printf("all cases passed\n");
  return 0;
}
