//===- DataKernelsDrawTest.cpp - GPU topk and dropout against the CPU ----===//
//
// The kernels that pick or draw elements: topk's ranks and dropout's masks
// must be the CPU kernels' bit for bit. Part of weft_cuda_data_kernels_test
// (DataKernelsTest.cpp has main).
//
//===----------------------------------------------------------------------===//

#include "DataKernelsCommon.h"

#include "runtime/kernels/cuda/CudaKernels.h"

using namespace weft;
using namespace weft::test;

namespace weft::test::data {

/// topk: the GPU's ranks against the CPU's partial sort, values and
/// indices (both exact), every axis, largest and smallest; rows with ties
/// (small integers) check the index order.
void testTopK() {
  const Dims shapes[] = {{4, 7, 5}, {33, 64}, {3, 1000}};
  for (const Dims &shape : shapes)
    for (int64_t dtype : {WEFT_F32, WEFT_F64, WEFT_I64, WEFT_I32})
      for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis)
        for (bool largest : {true, false}) {
          const int64_t extent = shape[axis];
          for (int64_t k : {int64_t(1), (extent + 1) / 2, extent}) {
            Dims out = shape;
            out[axis] = k;
            KernelCase c;
            c.name = name("topk", dtype,
                          dimsName(shape) + " axis " + std::to_string(axis) +
                              " k " + std::to_string(k) +
                              (largest ? " largest" : " smallest"));
            c.cpu = weft_k_topk;
            c.gpu = weft_cuda_k_topk;
            c.operands = {isFloat(dtype) ? input(dtype, shape, -3, 3, 141)
                                         : smallInts(dtype, shape, -5, 5, 141)};
            c.results = {zeroTensor(dtype, out), zeroTensor(WEFT_I64, out)};
            c.attrs = {axis, largest ? 1 : 0};
            c.rtol = 0;
            c.atol = 0;
            expect(c);
          }
        }
}

/// dropout: the GPU's masks and outputs are the CPU's bit for bit (one
/// Philox draw per element against the CPU's blocks of four), for whole
/// tensors and for a block at offsets inside a larger one.
void testDropout() {
  struct Spec {
    Dims local, global;
    std::vector<double> offsets;
  };
  const Spec specs[] = {{{7, 33}, {7, 33}, {0, 0}},
                        {{4, 1000, 3}, {4, 1000, 3}, {0, 0, 0}},
                        {{3, 5, 8}, {6, 10, 8}, {2, 5, 0}},
                        {{1 << 20}, {1 << 21}, {1 << 20}}};
  for (const Spec &s : specs)
    for (int64_t dtype : {WEFT_F32, WEFT_F64})
      for (double ratio : {0.1, 0.5}) {
        KernelCase c;
        c.name = name("dropout", dtype,
                      dimsName(s.local) + " of " + dimsName(s.global) +
                          " ratio " + std::to_string(ratio));
        c.cpu = weft_k_dropout;
        c.gpu = weft_cuda_k_dropout;
        c.operands = {
            input(dtype, s.local, -3, 3, 141), tensorOf(WEFT_I64, {}, {7}),
            tensorOf(WEFT_I64, {int64_t(s.offsets.size())}, s.offsets)};
        c.results = {zeroTensor(dtype, s.local),
                     zeroTensor(WEFT_BOOL, s.local)};
        c.attrs = {weftDoubleToAttr(ratio), int64_t(1) << 33, 5};
        c.attrs.insert(c.attrs.end(), s.global.begin(), s.global.end());
        c.rtol = 0;
        c.atol = 0;
        expect(c);
      }
}

/// random: the GPU's uniform numbers are the CPU's bit for bit; normal ones
/// go through the device's double log, sqrt and cos, so they may differ in
/// the double's last bits (a few f32 ulps after rounding at most), for whole
/// tensors and for a block at offsets inside a larger one.
void testRandom() {
  struct Spec {
    Dims local, global;
    std::vector<double> offsets;
  };
  const Spec specs[] = {{{7, 33}, {7, 33}, {0, 0}},
                        {{3, 5, 8}, {6, 10, 8}, {2, 5, 0}},
                        {{1 << 20}, {1 << 21}, {1 << 20}}};
  for (const Spec &s : specs)
    for (int64_t dtype : {WEFT_F32, WEFT_F64})
      for (int normal : {0, 1}) {
        KernelCase c;
        c.name = name("random", dtype,
                      dimsName(s.local) + " of " + dimsName(s.global) +
                          (normal ? " normal" : " uniform"));
        c.cpu = weft_k_random;
        c.gpu = weft_cuda_k_random;
        c.operands = {
            input(WEFT_I64, s.local, -3, 3, 142), tensorOf(WEFT_I64, {}, {3}),
            tensorOf(WEFT_I64, {int64_t(s.offsets.size())}, s.offsets)};
        c.results = {zeroTensor(dtype, s.local)};
        c.attrs = {normal, weftDoubleToAttr(normal ? 0.5 : -2.0),
                   weftDoubleToAttr(normal ? 2.0 : 3.0), int64_t(1) << 35, 9};
        c.attrs.insert(c.attrs.end(), s.global.begin(), s.global.end());
        c.rtol = normal ? 1e-14 : 0;
        c.atol = normal ? 1e-13 : 0;
        expect(c);
      }
}

} // namespace weft::test::data
