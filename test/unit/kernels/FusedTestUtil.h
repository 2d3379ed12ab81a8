//===- FusedTestUtil.h - Fused programs and float tensors in tests --------===//
//
// Shared by the tests of weft_k_fused (FusedTest.cpp) and of the GPU
// kernel's lowering (FusedLoweringTest.cpp): tensors of any float dtype,
// a builder of fused programs (KernelABI.h's attribute layout), random
// programs, and the bitwise comparison of results.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_UNIT_KERNELS_FUSEDTESTUTIL_H
#define WEFT_TEST_UNIT_KERNELS_FUSEDTESTUTIL_H

#include "KernelTestUtil.h"
#include "test/unit/kernels/FusedProgramBuilder.h"
#include "weft/runtime/Float16.h"

#include <array>
#include <cmath>
#include <cstring>
#include <string>

namespace weft {
namespace test {

/// A tensor of any float dtype, stored as its bytes.
struct Tensor {
  int64_t dtype = WEFT_F32;
  Dims dims;
  std::vector<uint8_t> bytes;

  Tensor() = default;
  Tensor(int64_t dt, Dims d) : dtype(dt), dims(std::move(d)) {
    bytes.assign(static_cast<size_t>(numel() * weftDTypeSize(dtype)), 0);
  }
  int64_t numel() const { return numelOf(dims); }
  void *data() { return bytes.data(); }
  float at(int64_t i) const {
    if (dtype == WEFT_F32) {
      float v;
      std::memcpy(&v, bytes.data() + 4 * i, 4);
      return v;
    }
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    return dtype == WEFT_BF16 ? bfloat16ToFloat(h) : halfToFloat(h);
  }
  void set(int64_t i, float v) {
    if (dtype == WEFT_F32) {
      std::memcpy(bytes.data() + 4 * i, &v, 4);
      return;
    }
    uint16_t h = dtype == WEFT_BF16 ? floatToBFloat16(v) : floatToHalf(v);
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
};

inline Tensor randomOf(int64_t dtype, Dims dims, double lo = -3,
                       double hi = 3) {
  Tensor t(dtype, std::move(dims));
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, static_cast<float>(dist(rng())));
  return t;
}

inline Tensor valuesOf(int64_t dtype, Dims dims, const std::vector<float> &v) {
  Tensor t(dtype, std::move(dims));
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
  for (size_t i = 0; i < v.size(); ++i)
    t.set(static_cast<int64_t>(i), v[i]);
  return t;
}

inline void runFused(const Program &p, std::vector<Tensor> &operands,
                     std::vector<Tensor> &results) {
  KernelCall call;
  for (Tensor &t : operands)
    call.raw(t.dtype, t.dims, t.data());
  for (Tensor &t : results)
    call.raw(t.dtype, t.dims, t.data());
  call.attrs(p.attrs()).run(weft_k_fused);
}

/// Same bits, except that any NaN matches any NaN (which of two NaN
/// operands an addition passes on is the compiler's choice).
inline void expectSameBits(const Tensor &got, const Tensor &want,
                           const std::string &what) {
  ASSERT_EQ(got.bytes.size(), want.bytes.size()) << what;
  int failures = 0;
  for (int64_t i = 0; i < want.numel() && failures < 5; ++i) {
    const float g = got.at(i), w = want.at(i);
    if (std::isnan(w) && std::isnan(g))
      continue;
    const size_t size = static_cast<size_t>(weftDTypeSize(want.dtype));
    if (std::memcmp(got.bytes.data() + i * size, want.bytes.data() + i * size,
                    size) != 0) {
      ADD_FAILURE() << what << ": element " << i << " fused " << g
                    << " unfused " << w;
      ++failures;
    }
  }
}

/// A random program of n operands (shapes and dtypes drawn from `shapes`
/// and the float dtypes) over `iter`, with up to 3 immediates, 1 to 12
/// instructions of any opcode and 1 to 3 results; the first result takes
/// the last instruction.
struct RandomProgram {
  Program program;
  std::vector<Tensor> operands;
  std::vector<int64_t> resultTypes;
};
inline RandomProgram randomProgram(std::mt19937 &gen,
                                   const std::vector<Dims> &shapes,
                                   int maxOperands = 4) {
  const int64_t dtypes[] = {WEFT_F32, WEFT_BF16, WEFT_F16};
  RandomProgram r;
  Program &p = r.program;
  p.numOperands = 1 + static_cast<int>(gen() % maxOperands);
  for (int i = 0; i < p.numOperands; ++i)
    r.operands.push_back(
        randomOf(dtypes[gen() % 3], shapes[gen() % shapes.size()], -4, 4));
  const int k = static_cast<int>(gen() % 4);
  for (int i = 0; i < k; ++i)
    p.imm(static_cast<double>(static_cast<int>(gen() % 9) - 4) / 2);
  const int q = 1 + static_cast<int>(gen() % 12);
  for (int j = 0; j < q; ++j) {
    const int64_t regs = p.numOperands + k + j;
    const int64_t kind = gen() % 3;
    const int64_t a = gen() % regs;
    const int64_t dtype =
        gen() % 4 == 0 ? dtypes[gen() % 3] : int64_t(WEFT_F32);
    if (kind == 0)
      p.op(static_cast<int64_t>(gen() % 8), a, -1, dtype);
    else if (kind == 1)
      p.op(kAdd + static_cast<int64_t>(gen() % 7), a, gen() % regs, dtype);
    else
      p.op(kCopy, a, -1, dtype);
  }
  const int m = 1 + static_cast<int>(gen() % 3);
  for (int t = 0; t < m; ++t) {
    p.out.push_back(gen() % (p.numOperands + k + q));
    r.resultTypes.push_back(dtypes[gen() % 3]);
  }
  p.out[0] = p.numOperands + k + q - 1;
  return r;
}

} // namespace test
} // namespace weft

#endif // WEFT_TEST_UNIT_KERNELS_FUSEDTESTUTIL_H
