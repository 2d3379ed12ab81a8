//===- BF16ProductTest.cpp - bf16 calls of the product kernels ------------===//
//
// Mixed precision's kernels (matmul, conv, conv gradients, reduce) take bf16
// tensors by running their f32 versions on widened copies and rounding the
// result once. Each case runs a kernel on bf16 operands and on their exact
// f32 widenings; the bf16 result must be the f32 one rounded to nearest
// even, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include "weft/runtime/Float16.h"

using namespace weft::test;

namespace {

/// Operands in both forms: bf16 bits and their exact f32 values.
struct Operand {
  HostTensor<uint16_t> low;
  HostTensor<float> wide;
};

Operand randomOperand(const Dims &dims) {
  HostTensor<float> f = randomTensor<float>(dims);
  Operand op{HostTensor<uint16_t>(dims, WEFT_BF16), HostTensor<float>(dims)};
  for (int64_t i = 0; i < f.numel(); ++i) {
    op.low[i] = weft::floatToBFloat16(f[i]);
    op.wide[i] = weft::bfloat16ToFloat(op.low[i]);
  }
  return op;
}

/// Runs `kernel` on bf16 operands and on f32 ones; compares the result.
void checkBF16(KernelFn kernel, std::vector<Operand> operands,
               const Dims &resultDims, const std::vector<int64_t> &attrs) {
  HostTensor<uint16_t> low(resultDims, WEFT_BF16);
  HostTensor<float> wide(resultDims);
  KernelCall lowCall, wideCall;
  for (Operand &op : operands) {
    lowCall.tensor(op.low);
    wideCall.tensor(op.wide);
  }
  lowCall.tensor(low).attrs(attrs).run(kernel);
  wideCall.tensor(wide).attrs(attrs).run(kernel);
  int mismatches = 0;
  for (int64_t i = 0; i < low.numel() && mismatches < 5; ++i)
    if (low[i] != weft::floatToBFloat16(wide[i])) {
      ADD_FAILURE() << "element " << i << ": bf16 result "
                    << weft::bfloat16ToFloat(low[i]) << ", f32 result "
                    << wide[i];
      ++mismatches;
    }
}

TEST(BF16Products, MatMul) {
  // Plain, transposed, batched with a shared weight, broadcast batch.
  checkBF16(weft_k_matmul, {randomOperand({5, 7}), randomOperand({7, 3})},
            {5, 3}, {0, 0});
  checkBF16(weft_k_matmul, {randomOperand({7, 5}), randomOperand({3, 7})},
            {5, 3}, {1, 1});
  checkBF16(weft_k_matmul, {randomOperand({2, 9, 64}), randomOperand({64, 40})},
            {2, 9, 40}, {0, 0});
  checkBF16(weft_k_matmul,
            {randomOperand({3, 1, 4, 8}), randomOperand({2, 8, 6})},
            {3, 2, 4, 6}, {0, 0});
}

TEST(BF16Products, ConvAndGradients) {
  // x [2, 4, 9, 9], w [6, 4, 3, 3], stride 1, pad 1: y [2, 6, 9, 9].
  const std::vector<int64_t> geometry = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  std::vector<int64_t> convAttrs = {0};
  convAttrs.insert(convAttrs.end(), geometry.begin(), geometry.end());
  checkBF16(weft_k_conv,
            {randomOperand({2, 4, 9, 9}), randomOperand({6, 4, 3, 3})},
            {2, 6, 9, 9}, convAttrs);
  checkBF16(weft_k_conv_grad_input,
            {randomOperand({2, 6, 9, 9}), randomOperand({6, 4, 3, 3})},
            {2, 4, 9, 9}, geometry);
  checkBF16(weft_k_conv_grad_weight,
            {randomOperand({2, 4, 9, 9}), randomOperand({2, 6, 9, 9})},
            {6, 4, 3, 3}, geometry);
}

TEST(BF16Products, ReduceSum) {
  // The sum of a broadcast product's gradient: 2 axes of [3, 4, 50].
  checkBF16(weft_k_reduce, {randomOperand({3, 4, 50})}, {4},
            {WEFT_REDUCE_SUM, 2, 0, 2});
}

} // namespace
