//===- CalibrateCalls.cpp - weft-calibrate: the kernels it rates ----------===//
//
// ratedKernels(): the element-wise, data-movement, normalization and loss
// kernels weft calibrate rates by their own speed (CalibrateCalls.h).
//
//===----------------------------------------------------------------------===//

#include "tools/weft/CalibrateCalls.h"

namespace weft::calibrate {

std::vector<RatedKernel> ratedKernels() {
  using T = KernelStream::Tensor;
  auto stream = [](KernelStream::Fn fn, std::vector<T> tensors,
                   std::vector<int64_t> attrs) -> std::unique_ptr<Stream> {
    return std::make_unique<KernelStream>(fn, std::move(tensors),
                                          std::move(attrs));
  };
  auto rowsOf = [](int64_t n, int64_t inner) {
    return std::max<int64_t>(1, n / inner);
  };
  std::vector<RatedKernel> k;
  // Same shapes, a row broadcast (a bias) and a scalar (a scale).
  k.push_back({"binary", [=](int64_t n) {
                 return stream(weft_k_binary,
                               {{{n}}, {{n}}, {{n}, WEFT_F32, true}},
                               {WEFT_BINARY_ADD});
               }});
  k.push_back({"binary", [=](int64_t n) {
                 int64_t r = rowsOf(n, 128);
                 return stream(
                     weft_k_binary,
                     {{{r, 128}}, {{128}}, {{r, 128}, WEFT_F32, true}},
                     {WEFT_BINARY_ADD});
               }});
  k.push_back({"binary", [=](int64_t n) {
                 return stream(weft_k_binary,
                               {{{n}}, {{}}, {{n}, WEFT_F32, true}},
                               {WEFT_BINARY_MUL});
               }});
  for (int64_t op : {int64_t(WEFT_UNARY_TANH), int64_t(WEFT_UNARY_ERF)})
    k.push_back(
        {"unary", [=](int64_t n) {
           return stream(weft_k_unary, {{{n}}, {{n}, WEFT_F32, true}}, {op});
         }});
  k.push_back(
      {"cast", [=](int64_t n) {
         return stream(weft_k_cast, {{{n}}, {{n}, WEFT_BF16, true}}, {});
       }});
  k.push_back({"transpose", [=](int64_t n) {
                 int64_t r = rowsOf(n, 128);
                 return stream(weft_k_transpose,
                               {{{r, 128}}, {{128, r}, WEFT_F32, true}},
                               {1, 0});
               }});
  k.push_back({"reduce", [=](int64_t n) {
                 int64_t r = rowsOf(n, 128);
                 return stream(weft_k_reduce,
                               {{{r, 128}}, {{1, 128}, WEFT_F32, true}},
                               {WEFT_REDUCE_SUM, 1, 0});
               }});
  k.push_back({"layer_norm", [=](int64_t n) {
                 int64_t r = rowsOf(n, 128);
                 return stream(
                     weft_k_layer_norm,
                     {{{r, 128}}, {{128}}, {{128}}, {{r, 128}, WEFT_F32, true}},
                     {1, weftDoubleToAttr(1e-5), 1});
               }});
  k.push_back({"layer_norm_grad", [=](int64_t n) {
                 int64_t r = rowsOf(n, 128);
                 return stream(weft_k_layer_norm_grad,
                               {{{r, 128}},
                                {{128}},
                                {{r, 128}},
                                {{r, 128}, WEFT_F32, true},
                                {{128}, WEFT_F32, true},
                                {{128}, WEFT_F32, true}},
                               {1, weftDoubleToAttr(1e-5)});
               }});
  k.push_back({"softmax", [=](int64_t n) {
                 int64_t r = rowsOf(n, 32);
                 return stream(weft_k_softmax,
                               {{{r, 32}}, {{r, 32}, WEFT_F32, true}}, {1, 0});
               }});
  k.push_back({"softmax_grad", [=](int64_t n) {
                 int64_t r = rowsOf(n, 32);
                 return stream(
                     weft_k_softmax_grad,
                     {{{r, 32}}, {{r, 32}}, {{r, 32}, WEFT_F32, true}}, {1, 0});
               }});
  k.push_back({"softmax_xent", [=](int64_t n) {
                 int64_t r = rowsOf(n, 256);
                 return stream(weft_k_softmax_xent,
                               {{{r, 256}},
                                {{r}, WEFT_I64, false, 256},
                                {{}, WEFT_F32, true}},
                               {WEFT_LOSS_MEAN, 0, 0, 0, 0});
               }});
  k.push_back({"softmax_xent_grad", [=](int64_t n) {
                 int64_t r = rowsOf(n, 256);
                 return stream(weft_k_softmax_xent_grad,
                               {{{r, 256}},
                                {{r}, WEFT_I64, false, 256},
                                {{}},
                                {{r, 256}, WEFT_F32, true}},
                               {WEFT_LOSS_MEAN, 0, 0, 0});
               }});
  return k;
}

} // namespace weft::calibrate
