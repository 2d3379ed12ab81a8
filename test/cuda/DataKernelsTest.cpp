//===- DataKernelsTest.cpp - GPU data kernels against their CPU twins -----===//
//
// Runs every elementwise, data-movement, gather and reduction kernel of
// runtime/kernels/cuda (DataKernels.cmake) on the CPU and the GPU with the
// same inputs and compares, for every dtype each one accepts: broadcasting
// shapes, odd and large sizes, transposes, reductions and slices of several
// layouts. scatter_add must also give the same bits on two GPU runs. Ends
// with throughput lines for a few memory-bound kernels. Exits 1 when a case
// fails, 77 without a GPU. topk and dropout are in DataKernelsDrawTest.cpp
// (one executable).
//
//===----------------------------------------------------------------------===//

#include "DataKernelsCommon.h"

#include "runtime/cuda/CudaRuntime.h"
#include "runtime/kernels/cuda/CudaKernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

using namespace weft;
using namespace weft::test;
using namespace weft::test::data;

namespace {

//===-- unary -------------------------------------------------------------===//

void testUnary() {
  const Dims sizes[] = {{1}, {7, 13}, {3, 5, 11}, {(1 << 20) + 3}};
  for (int op = WEFT_UNARY_NEG; op <= WEFT_UNARY_ATAN; ++op) {
    if (op == WEFT_UNARY_NOT)
      continue;
    // Positive inputs for sqrt and log, a wide range for the rest.
    const bool positive = op == WEFT_UNARY_SQRT || op == WEFT_UNARY_LOG;
    const double lo = positive ? 0.001 : -12, hi = positive ? 50 : 12;
    for (int64_t dtype : {WEFT_F32, WEFT_F64})
      for (const Dims &d : sizes) {
        KernelCase c;
        c.name = name("unary", dtype,
                      "op " + std::to_string(op) + " " + dimsName(d));
        c.cpu = weft_k_unary;
        c.gpu = weft_cuda_k_unary;
        c.operands = {input(dtype, d, lo, hi, 11 + op)};
        c.results = {zeroTensor(dtype, d)};
        c.attrs = {op};
        expect(c);
      }
  }
  for (int64_t dtype : {WEFT_I64, WEFT_I32})
    for (int op : {WEFT_UNARY_NEG, WEFT_UNARY_RELU}) {
      KernelCase c;
      c.name = name("unary", dtype, "op " + std::to_string(op));
      c.cpu = weft_k_unary;
      c.gpu = weft_cuda_k_unary;
      c.operands = {smallInts(dtype, {1001}, -1000, 1000, 3)};
      c.results = {zeroTensor(dtype, {1001})};
      c.attrs = {op};
      expect(c);
    }
  KernelCase c;
  c.name = name("unary", WEFT_BOOL, "not");
  c.cpu = weft_k_unary;
  c.gpu = weft_cuda_k_unary;
  c.operands = {smallInts(WEFT_BOOL, {4099}, 0, 2, 5)};
  c.results = {zeroTensor(WEFT_BOOL, {4099})};
  c.attrs = {WEFT_UNARY_NOT};
  expect(c);
}

//===-- binary, compare, where --------------------------------------------===//

struct Shapes {
  Dims a, b, c;
};

// Same shape, scalars, a row, a column, an outer product, rank 4 with unit
// dims, a large same-shape and a large broadcast.
const Shapes kBroadcasts[] = {
    {{37, 19}, {37, 19}, {37, 19}},
    {{37, 19}, {1}, {37, 19}},
    {{}, {5, 9}, {5, 9}},
    {{33, 67}, {67}, {33, 67}},
    {{33, 1}, {33, 67}, {33, 67}},
    {{33, 1}, {1, 67}, {33, 67}},
    {{2, 1, 5, 7}, {3, 1, 7}, {2, 3, 5, 7}},
    {{4, 3, 1, 1}, {1, 3, 6, 5}, {4, 3, 6, 5}},
    {{(1 << 20) + 3}, {(1 << 20) + 3}, {(1 << 20) + 3}},
    {{1031, 1025}, {1025}, {1031, 1025}},
};

void testBinary() {
  for (int64_t dtype : {WEFT_F32, WEFT_F64, WEFT_I64, WEFT_I32})
    for (int op = WEFT_BINARY_ADD; op <= WEFT_BINARY_MIN; ++op)
      for (const Shapes &s : kBroadcasts) {
        KernelCase c;
        c.name = name("binary", dtype,
                      "op " + std::to_string(op) + " " + dimsName(s.a) + " " +
                          dimsName(s.b));
        c.cpu = weft_k_binary;
        c.gpu = weft_cuda_k_binary;
        HostTensor a, b;
        if (op == WEFT_BINARY_POW && isFloat(dtype)) {
          a = input(dtype, s.a, 0.1, 3, 21);
          b = input(dtype, s.b, -3, 3, 22);
        } else if (op == WEFT_BINARY_POW) {
          a = smallInts(dtype, s.a, -4, 5, 21);
          b = smallInts(dtype, s.b, -2, 9, 22);
        } else if (op == WEFT_BINARY_DIV && !isFloat(dtype)) {
          a = smallInts(dtype, s.a, -1000, 1000, 21);
          b = nonZeroInts(dtype, s.b, -7, 8, 22);
        } else {
          a = input(dtype, s.a, -100, 100, 21);
          b = input(dtype, s.b, isFloat(dtype) ? 0.5 : -100, 100, 22);
        }
        c.operands = {a, b};
        c.results = {zeroTensor(dtype, s.c)};
        c.attrs = {op};
        // CUDA's powf is within 4 ulp, glibc's within 1.
        if (op == WEFT_BINARY_POW && dtype == WEFT_F32)
          c.rtol = 2e-6;
        expect(c);
      }
  // The remainder, against the CPU's fmod and %.
  for (int64_t dtype : {WEFT_F32, WEFT_F64, WEFT_I64, WEFT_I32})
    for (const Shapes &s : kBroadcasts) {
      KernelCase c;
      c.name =
          name("binary", dtype, "rem " + dimsName(s.a) + " " + dimsName(s.b));
      c.cpu = weft_k_binary;
      c.gpu = weft_cuda_k_binary;
      if (isFloat(dtype))
        c.operands = {input(dtype, s.a, -1e6, 1e6, 26),
                      input(dtype, s.b, 0.1, 7, 27)};
      else
        c.operands = {smallInts(dtype, s.a, -1000, 1000, 26),
                      nonZeroInts(dtype, s.b, -7, 8, 27)};
      c.results = {zeroTensor(dtype, s.c)};
      c.attrs = {WEFT_BINARY_REM};
      expect(c);
    }
  // Pow by a scalar takes the CPU's shortcuts for these exponents.
  for (int64_t dtype : {WEFT_F32, WEFT_F64})
    for (double e : {2.0, 1.0, 3.0, 0.5, -1.0, 1.7, 0.0}) {
      KernelCase c;
      c.name = name("binary", dtype, "pow by " + std::to_string(e));
      c.cpu = weft_k_binary;
      c.gpu = weft_cuda_k_binary;
      c.operands = {input(dtype, {1000, 3}, 0, 4, 23),
                    tensorOf(dtype, {1}, {e})};
      c.results = {zeroTensor(dtype, {1000, 3})};
      c.attrs = {WEFT_BINARY_POW};
      c.rtol = 2e-6;
      expect(c);
    }
  for (int op :
       {WEFT_BINARY_AND, WEFT_BINARY_OR, WEFT_BINARY_MAX, WEFT_BINARY_MIN})
    for (const Shapes &s : kBroadcasts) {
      KernelCase c;
      c.name = name("binary", WEFT_BOOL,
                    "op " + std::to_string(op) + " " + dimsName(s.c));
      c.cpu = weft_k_binary;
      c.gpu = weft_cuda_k_binary;
      c.operands = {smallInts(WEFT_BOOL, s.a, 0, 2, 24),
                    smallInts(WEFT_BOOL, s.b, 0, 2, 25)};
      c.results = {zeroTensor(WEFT_BOOL, s.c)};
      c.attrs = {op};
      expect(c);
    }
}

void testCompare() {
  for (int64_t dtype : kAllTypes)
    for (int op = WEFT_CMP_EQ; op <= WEFT_CMP_GE; ++op)
      for (const Shapes &s : kBroadcasts) {
        KernelCase c;
        c.name = name("compare", dtype,
                      "op " + std::to_string(op) + " " + dimsName(s.c));
        c.cpu = weft_k_compare;
        c.gpu = weft_cuda_k_compare;
        // Few distinct values, so equal pairs occur.
        c.operands = {smallInts(dtype, s.a, -3, 4, 31),
                      smallInts(dtype, s.b, -3, 4, 32)};
        c.results = {zeroTensor(WEFT_BOOL, s.c)};
        c.attrs = {op};
        expect(c);
      }
}

void testWhere() {
  const struct {
    Dims cond, x, y, z;
  } shapes[] = {
      {{129, 65}, {129, 65}, {129, 65}, {129, 65}},
      {{65}, {129, 65}, {129, 65}, {129, 65}},
      {{129, 1}, {}, {129, 65}, {129, 65}},
      {{2, 1, 5, 1}, {3, 1, 4}, {1}, {2, 3, 5, 4}},
      {{(1 << 20) + 3}, {(1 << 20) + 3}, {(1 << 20) + 3}, {(1 << 20) + 3}},
  };
  for (size_t i = 0; i < std::size(shapes); ++i)
    for (int64_t dtype : typesFor(i)) {
      const auto &s = shapes[i];
      KernelCase c;
      c.name =
          name("where", dtype, dimsName(s.z) + " cond " + dimsName(s.cond));
      c.cpu = weft_k_where;
      c.gpu = weft_cuda_k_where;
      c.operands = {smallInts(WEFT_BOOL, s.cond, 0, 2, 41),
                    input(dtype, s.x, -50, 50, 42),
                    input(dtype, s.y, -50, 50, 43)};
      c.results = {zeroTensor(dtype, s.z)};
      expect(c);
    }
}

//===-- cast --------------------------------------------------------------===//

void testCast() {
  for (int64_t from : kAllTypes)
    for (int64_t to : kAllTypes) {
      KernelCase c;
      c.name = std::string("cast ") + weftDTypeName(from) + " -> " +
               weftDTypeName(to);
      c.cpu = weft_k_cast;
      c.gpu = weft_cuda_k_cast;
      // Fractions, negatives and values out of the small types' range
      // (saturation, wrapping); 16-bit floats round.
      HostTensor x = isFloat(from) ? randomTensor(from, {1003}, -300, 300, 51)
                                   : smallInts(from, {1003}, -300, 300, 51);
      c.operands = {x};
      c.results = {zeroTensor(to, {1003})};
      c.rtol = 0;
      c.atol = 0;
      expect(c);
    }
  KernelCase c;
  c.name = "cast f32 -> bf16 large";
  c.cpu = weft_k_cast;
  c.gpu = weft_cuda_k_cast;
  c.operands = {randomTensor(WEFT_F32, {(1 << 20) + 3}, -1e5, 1e5, 52)};
  c.results = {zeroTensor(WEFT_BF16, {(1 << 20) + 3})};
  c.rtol = 0;
  c.atol = 0;
  expect(c);
}

//===-- data movement -----------------------------------------------------===//

KernelCase movement(const char *kernel, KernelFn cpu, KernelFn gpu,
                    int64_t dtype, std::vector<HostTensor> operands,
                    std::vector<Dims> results, std::vector<int64_t> attrs,
                    const std::string &what) {
  KernelCase c;
  c.name = name(kernel, dtype, what);
  c.cpu = cpu;
  c.gpu = gpu;
  c.operands = std::move(operands);
  for (Dims &d : results)
    c.results.push_back(zeroTensor(dtype, std::move(d)));
  c.attrs = std::move(attrs);
  c.rtol = 0;
  c.atol = 0;
  return c;
}

void testExpand() {
  const std::pair<Dims, Dims> shapes[] = {
      {{67}, {33, 67}},      {{33, 1}, {33, 67}},
      {{}, {5, 7}},          {{1, 3, 1, 5}, {2, 3, 4, 5}},
      {{1, 64}, {1000, 64}}, {{3, 1, 8}, {3, 100, 8}},
      {{1025}, {1025}},      {{2, 1}, {2, 1 << 19}},
  };
  for (size_t i = 0; i < std::size(shapes); ++i)
    for (int64_t dtype : typesFor(i))
      expect(movement(
          "expand", weft_k_expand, weft_cuda_k_expand, dtype,
          {input(dtype, shapes[i].first, -50, 50, 61)}, {shapes[i].second}, {},
          dimsName(shapes[i].first) + " -> " + dimsName(shapes[i].second)));
}

void testTrilu() {
  const Dims shapes[] = {
      {5, 7}, {7, 5}, {3, 4, 6}, {2, 2, 33, 65}, {1024, 1027}};
  for (size_t i = 0; i < std::size(shapes); ++i)
    for (int64_t dtype : typesFor(i))
      for (int upper : {0, 1})
        for (int64_t k : {-2, 0, 3, 100})
          expect(movement(
              "trilu", weft_k_trilu, weft_cuda_k_trilu, dtype,
              {input(dtype, shapes[i], -50, 50, 71)}, {shapes[i]}, {upper, k},
              dimsName(shapes[i]) + (upper ? " upper k " : " lower k ") +
                  std::to_string(k)));
}

void testTranspose() {
  const std::pair<Dims, Dims> cases[] = {
      {{33, 65}, {1, 0}},
      {{1, 65}, {1, 0}},
      {{4, 5, 6}, {0, 2, 1}},
      {{4, 5, 6}, {1, 0, 2}},
      {{4, 5, 6}, {1, 2, 0}},
      {{4, 5, 6}, {2, 0, 1}},
      {{4, 5, 6}, {2, 1, 0}},
      {{17, 40, 35}, {2, 1, 0}},
      {{2, 3, 4, 5}, {0, 2, 1, 3}},
      {{2, 3, 4, 5}, {3, 2, 1, 0}},
      {{2, 3, 4, 5}, {0, 3, 1, 2}},
      {{2, 3, 4, 5}, {1, 0, 3, 2}},
      {{8, 1, 16, 64}, {0, 2, 1, 3}},
      {{8, 128, 12, 64}, {0, 2, 1, 3}},
      {{8, 12, 128, 64}, {0, 1, 3, 2}},
      {{1000, 1001}, {1, 0}},
  };
  for (size_t i = 0; i < std::size(cases); ++i)
    for (int64_t dtype : typesFor(i)) {
      const auto &tc = cases[i];
      Dims out;
      for (int64_t p : tc.second)
        out.push_back(tc.first[p]);
      std::string perm;
      for (int64_t p : tc.second)
        perm += std::to_string(p);
      expect(movement("transpose", weft_k_transpose, weft_cuda_k_transpose,
                      dtype, {input(dtype, tc.first, -50, 50, 81)}, {out},
                      tc.second, dimsName(tc.first) + " perm " + perm));
    }
}

void testConcatSplit() {
  const Dims base = {4, 6, 10};
  const int64_t extents[] = {1, 3, 5};
  for (int64_t axis = 0; axis < 3; ++axis)
    for (int64_t dtype : typesFor(static_cast<size_t>(axis))) {
      std::vector<HostTensor> pieces;
      std::vector<Dims> pieceDims;
      Dims whole = base;
      whole[axis] = 0;
      for (int i = 0; i < 3; ++i) {
        Dims d = base;
        d[axis] = extents[i];
        whole[axis] += extents[i];
        pieces.push_back(input(dtype, d, -50, 50, 91 + i));
        pieceDims.push_back(d);
      }
      const std::string what = "axis " + std::to_string(axis);
      expect(movement("concat", weft_k_concat, weft_cuda_k_concat, dtype,
                      pieces, {whole}, {axis}, what));
      expect(movement("split", weft_k_split, weft_cuda_k_split, dtype,
                      {input(dtype, whole, -50, 50, 95)}, pieceDims, {axis},
                      what));
    }
  // Many pieces (more than one launch's worth) and 16-byte rows.
  std::vector<HostTensor> pieces;
  std::vector<Dims> pieceDims;
  int64_t total = 0;
  for (int i = 0; i < 37; ++i) {
    const int64_t w = 4 * (i % 5 + 1);
    pieces.push_back(input(WEFT_F32, {300, w}, -50, 50, 100 + i));
    pieceDims.push_back({300, w});
    total += w;
  }
  expect(movement("concat", weft_k_concat, weft_cuda_k_concat, WEFT_F32, pieces,
                  {{300, total}}, {1}, "37 pieces"));
  expect(movement("split", weft_k_split, weft_cuda_k_split, WEFT_F32,
                  {input(WEFT_F32, {300, total}, -50, 50, 99)}, pieceDims, {1},
                  "37 pieces"));
}

struct SliceSpec {
  Dims whole, starts, steps, part;
};

const SliceSpec kSlices[] = {
    {{100}, {3}, {2}, {40}},
    {{100}, {99}, {-1}, {100}},
    {{100}, {97}, {-3}, {30}},
    {{10, 20}, {2, 0}, {1, 1}, {5, 20}},
    {{10, 20}, {9, 19}, {-1, -2}, {10, 10}},
    {{10, 20}, {0, 4}, {3, 1}, {4, 12}},
    {{4, 5, 6, 7}, {1, 0, 5, 6}, {1, 2, -1, -1}, {3, 3, 6, 7}},
    {{4, 5, 6, 8}, {0, 1, 0, 0}, {1, 1, 1, 1}, {4, 3, 6, 8}},
    {{64, 1024}, {0, 512}, {1, 1}, {64, 512}},
};

void testSlice() {
  for (size_t i = 0; i < std::size(kSlices); ++i)
    for (int64_t dtype : typesFor(i)) {
      const SliceSpec &s = kSlices[i];
      std::vector<int64_t> attrs = s.starts;
      attrs.insert(attrs.end(), s.steps.begin(), s.steps.end());
      expect(movement("slice", weft_k_slice, weft_cuda_k_slice, dtype,
                      {input(dtype, s.whole, -50, 50, 111)}, {s.part}, attrs,
                      dimsName(s.whole) + " -> " + dimsName(s.part)));
    }
  for (const SliceSpec &s : kSlices) {
    std::vector<int64_t> attrs = s.starts;
    attrs.insert(attrs.end(), s.steps.begin(), s.steps.end());
    expect(movement("slice_grad", weft_k_slice_grad, weft_cuda_k_slice_grad,
                    WEFT_F32, {input(WEFT_F32, s.part, -50, 50, 112)},
                    {s.whole}, attrs,
                    dimsName(s.part) + " -> " + dimsName(s.whole)));
  }
}

void testCopy() {
  for (int64_t dtype : typesFor(0))
    expect(movement("copy", weft_k_copy, weft_cuda_k_copy, dtype,
                    {input(dtype, {1001, 3}, -50, 50, 121)}, {{3003}}, {},
                    "[1001x3] -> [3003]"));
}

//===-- gather and scatter_add --------------------------------------------===//

struct GatherSpec {
  Dims data;
  Dims indices;
  int64_t axis;
};

const GatherSpec kGathers[] = {
    {{1000, 64}, {8, 33}, 0},  // embedding lookup
    {{50, 7}, {301}, 0},       // many repeats, odd rows
    {{6, 40, 5}, {3, 4}, 1},   // middle axis
    {{6, 5, 40}, {17}, 2},     // last axis
    {{30000, 128}, {4096}, 0}, // large, 16-byte rows
};

void testGather() {
  for (size_t i = 0; i < std::size(kGathers); ++i)
    for (int64_t dtype : typesFor(i))
      for (int64_t indexType : {WEFT_I64, WEFT_I32}) {
        const GatherSpec &g = kGathers[i];
        const int64_t extent = g.data[g.axis];
        Dims out(g.data.begin(), g.data.begin() + g.axis);
        out.insert(out.end(), g.indices.begin(), g.indices.end());
        out.insert(out.end(), g.data.begin() + g.axis + 1, g.data.end());
        // Negative indices count from the end.
        HostTensor idx =
            smallInts(indexType, g.indices, -static_cast<int>(extent),
                      static_cast<int>(extent), 131);
        expect(
            movement("gather", weft_k_gather, weft_cuda_k_gather, dtype,
                     {input(dtype, g.data, -50, 50, 132), idx}, {out}, {g.axis},
                     std::string(weftDTypeName(indexType)) + " " +
                         dimsName(g.data) + " axis " + std::to_string(g.axis)));
      }
}

/// Runs scatter_add twice on the GPU and checks that both results have the
/// same bits.
bool scatterAddRepeats(const KernelCase &c) {
  std::vector<int64_t> desc = {3};
  std::vector<const HostTensor *> all = {&c.operands[0], &c.operands[1],
                                         &c.results[0]};
  for (const HostTensor *t : all) {
    desc.push_back(t->dtype);
    desc.push_back(static_cast<int64_t>(t->dims.size()));
    desc.insert(desc.end(), t->dims.begin(), t->dims.end());
  }
  desc.push_back(static_cast<int64_t>(c.attrs.size()));
  desc.insert(desc.end(), c.attrs.begin(), c.attrs.end());
  void *bufs[3];
  for (int i = 0; i < 3; ++i) {
    cuda::check(cudaMalloc(&bufs[i], std::max<size_t>(all[i]->bytes.size(), 1)),
                "test allocation");
    cuda::check(cudaMemcpy(bufs[i], all[i]->bytes.data(), all[i]->bytes.size(),
                           cudaMemcpyHostToDevice),
                "test upload");
  }
  std::vector<unsigned char> first(c.results[0].bytes.size());
  std::vector<unsigned char> second(first.size());
  weft_cuda_k_scatter_add(bufs, desc.data());
  cuda::synchronize();
  cuda::check(
      cudaMemcpy(first.data(), bufs[2], first.size(), cudaMemcpyDeviceToHost),
      "test download");
  // Dirty the result so a kernel that skipped elements would show.
  cuda::check(cudaMemset(bufs[2], 0x7f, first.size()), "test fill");
  weft_cuda_k_scatter_add(bufs, desc.data());
  cuda::synchronize();
  cuda::check(
      cudaMemcpy(second.data(), bufs[2], second.size(), cudaMemcpyDeviceToHost),
      "test download");
  for (void *b : bufs)
    cuda::check(cudaFree(b), "test free");
  const bool same = first == second;
  std::printf("%s %s: two GPU runs %s\n", same ? "PASS" : "FAIL",
              c.name.c_str(), same ? "bitwise equal" : "differ");
  return same;
}

void testScatterAdd() {
  struct Spec {
    Dims y;
    Dims indices;
    int64_t axis;
    int hot; // > 0: this many leading indices all name row 3
  };
  const Spec specs[] = {
      {{1000, 64}, {8, 33}, 0, 0},    // embedding gradient
      {{50, 7}, {301}, 0, 0},         // runs longer than a segment
      {{6, 40, 5}, {3, 4}, 1, 0},     // middle axis
      {{6, 5, 40}, {17}, 2, 0},       // last axis
      {{500, 96}, {20000}, 0, 15000}, // one very long run
      {{30000, 128}, {4096}, 0, 0},   // large
  };
  for (int64_t indexType : {WEFT_I64, WEFT_I32})
    for (const Spec &s : specs) {
      const int64_t extent = s.y[s.axis];
      HostTensor idx =
          smallInts(indexType, s.indices, -static_cast<int>(extent),
                    static_cast<int>(extent), 141);
      if (s.hot > 0) {
        std::vector<double> values;
        for (int64_t i = 0; i < idx.numel(); ++i)
          values.push_back(i < s.hot ? (i % 2 ? 3 : 3 - extent) : idx.at(i));
        idx = tensorOf(indexType, s.indices, values);
      }
      Dims updates(s.y.begin(), s.y.begin() + s.axis);
      updates.insert(updates.end(), s.indices.begin(), s.indices.end());
      updates.insert(updates.end(), s.y.begin() + s.axis + 1, s.y.end());
      KernelCase c;
      c.name = std::string("scatter_add f32 ") + weftDTypeName(indexType) +
               " " + dimsName(s.y) + " axis " + std::to_string(s.axis) +
               (s.hot ? " hot row" : "");
      c.cpu = weft_k_scatter_add;
      c.gpu = weft_cuda_k_scatter_add;
      // Positive updates: sums in a different order stay within rtol.
      c.operands = {idx, randomTensor(WEFT_F32, updates, 0, 1, 142)};
      c.results = {zeroTensor(WEFT_F32, s.y)};
      c.attrs = {s.axis};
      // Most runs are summed in the CPU's order; the hot row (15000 terms)
      // carries the CPU's own sequential rounding error.
      c.rtol = s.hot ? 1e-4 : 1e-6;
      c.atol = 1e-6;
      expect(c);
      if (!scatterAddRepeats(c))
        ++failures;
    }
}

//===-- reduce ------------------------------------------------------------===//

void reduceCase(int64_t dtype, int64_t outType, int op, const Dims &x,
                const std::vector<int64_t> &axes, double rtol) {
  Dims y;
  for (size_t d = 0; d < x.size(); ++d) {
    bool reduced = false;
    for (int64_t a : axes)
      reduced = reduced || a == static_cast<int64_t>(d);
    if (!reduced)
      y.push_back(x[d]);
  }
  std::string axesName;
  for (int64_t a : axes)
    axesName += std::to_string(a);
  KernelCase c;
  c.name = std::string("reduce ") + weftDTypeName(dtype) + "->" +
           weftDTypeName(outType) + " op " + std::to_string(op) + " " +
           dimsName(x) + " axes " + axesName;
  c.cpu = weft_k_reduce;
  c.gpu = weft_cuda_k_reduce;
  // Positive floats keep the relative error of reordered sums small.
  c.operands = {isFloat(dtype) ? randomTensor(dtype, x, 0, 1, 151)
                               : smallInts(dtype, x, -1000, 1000, 151)};
  c.results = {zeroTensor(outType, y)};
  c.attrs = {op, static_cast<int64_t>(axes.size())};
  c.attrs.insert(c.attrs.end(), axes.begin(), axes.end());
  c.rtol = rtol;
  expect(c);
}

void testReduce() {
  const std::pair<Dims, std::vector<int64_t>> layouts[] = {
      {{37, 5}, {1}},         // short rows
      {{37, 100}, {1}},       // warp rows
      {{37, 1000}, {1}},      // block rows
      {{3, 100003}, {1}},     // few long rows (chunked)
      {{(1 << 20) + 3}, {0}}, // one long row
      {{1000, 33}, {0}},      // columns
      {{100000, 3}, {0}},     // narrow columns (chunked)
      {{7, 300, 65}, {1}},    // middle axis
      {{7, 300, 65}, {0, 2}}, // interleaved
      {{4, 6, 5, 9}, {1, 3}}, // interleaved, rank 4
      {{4, 6, 5, 9}, {0, 1, 2, 3}},
      {{32, 64, 7, 7}, {0, 2, 3}}, // batch-norm statistics
      {{5, 1, 7}, {1}},            // a unit axis only
      {{5, 0, 7}, {1}},            // empty reduction
  };
  for (const auto &l : layouts) {
    for (int op : {WEFT_REDUCE_SUM, WEFT_REDUCE_MEAN, WEFT_REDUCE_MAX}) {
      // The CPU sums long rows and columns mostly sequentially: its
      // rounding error, not the GPU's, sets the f32 tolerance.
      reduceCase(WEFT_F32, WEFT_F32, op, l.first, l.second, 1e-4);
      reduceCase(WEFT_F64, WEFT_F64, op, l.first, l.second, 1e-12);
      // bf16 results may round the other way after a reordered sum.
      reduceCase(WEFT_BF16, WEFT_BF16, op, l.first, l.second, 1e-2);
    }
    for (int op : {WEFT_REDUCE_SUM, WEFT_REDUCE_MAX}) {
      reduceCase(WEFT_I64, WEFT_I64, op, l.first, l.second, 0);
      reduceCase(WEFT_I32, WEFT_I32, op, l.first, l.second, 0);
    }
  }
  reduceCase(WEFT_BF16, WEFT_F32, WEFT_REDUCE_SUM, {64, 513}, {1}, 1e-4);
  // A bias gradient read in bf16 (a widening folded into the sum).
  reduceCase(WEFT_BF16, WEFT_F32, WEFT_REDUCE_SUM, {8, 64, 96}, {0, 1}, 1e-4);
  reduceCase(WEFT_F32, WEFT_BF16, WEFT_REDUCE_MEAN, {64, 513}, {0}, 1e-2);
}

//===-- throughput --------------------------------------------------------===//

/// A device tensor of `bytes` (contents left as cudaMalloc gives them).
void *deviceBuffer(size_t bytes) {
  void *p = nullptr;
  cuda::check(cudaMalloc(&p, bytes), "benchmark allocation");
  cuda::check(cudaMemset(p, 0, bytes), "benchmark fill");
  return p;
}

void throughput(const char *what, KernelFn kernel,
                const std::vector<void *> &bufs,
                const std::vector<int64_t> &desc, double bytes) {
  const double ms =
      gpuMilliseconds([&] { kernel(bufs.data(), desc.data()); }, 20);
  std::printf("throughput %s: %.3f ms, %.0f GB/s\n", what, ms,
              bytes / (ms * 1e6));
}

void benchmarks() {
  const int64_t n = int64_t(1) << 26;
  void *a = deviceBuffer(n * 4), *b = deviceBuffer(n * 4);
  void *c = deviceBuffer(n * 4);
  throughput("binary add f32 64M", weft_cuda_k_binary, {a, b, c},
             kernelDesc({{WEFT_F32, {n}}, {WEFT_F32, {n}}, {WEFT_F32, {n}}},
                        {WEFT_BINARY_ADD}),
             12.0 * n);
  throughput("cast f32->bf16 64M", weft_cuda_k_cast, {a, c},
             kernelDesc({{WEFT_F32, {n}}, {WEFT_BF16, {n}}}, {}), 6.0 * n);
  const int64_t t = 4096;
  throughput("transpose f32 4096x4096", weft_cuda_k_transpose, {a, c},
             kernelDesc({{WEFT_F32, {t, t}}, {WEFT_F32, {t, t}}}, {1, 0}),
             8.0 * t * t);
  const int64_t r = 8192;
  throughput("reduce sum f32 rows of 8192x8192", weft_cuda_k_reduce, {a, c},
             kernelDesc({{WEFT_F32, {r, r}}, {WEFT_F32, {r}}},
                        {WEFT_REDUCE_SUM, 1, 1}),
             4.0 * r * r);
  for (void *p : {a, b, c})
    cuda::check(cudaFree(p), "benchmark free");
}

} // namespace

int main() {
  skipWithoutGpu();
  testUnary();
  testBinary();
  testCompare();
  testWhere();
  testCast();
  testExpand();
  testTrilu();
  testTranspose();
  testConcatSplit();
  testSlice();
  testCopy();
  testGather();
  testScatterAdd();
  testTopK();
  testDropout();
  testRandom();
  testReduce();
  benchmarks();
  if (failures > 0) {
    std::printf("%d case(s) failed\n", failures);
    return 1;
  }
  std::printf("all cases passed\n");
  return 0;
}
