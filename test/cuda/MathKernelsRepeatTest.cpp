//===- MathKernelsRepeatTest.cpp - Repetition, device errors, throughput --===//
//
// The part of weft_cuda_math_kernels_test (MathKernelsTest.cpp has the
// comparisons and main) that checks behaviour rather than values: the
// reductions repeat bitwise (layer_norm_grad, conv_grad_weight,
// softmax_xent, also on padded bf16 classes), a bad label reaches the
// device error word, and the throughput lines.
//
//===----------------------------------------------------------------------===//

#include "MathKernelsCommon.h"

#include "runtime/cuda/CudaRuntime.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/Gemm.h"
#include "weft/runtime/Float16.h"
#include "weft/runtime/KernelABI.h"
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
using namespace weft;
using namespace weft::test;

namespace weft::test::math {

//===-- Determinism and device errors -------------------------------------===//

/// Runs the GPU kernel of `c` twice on fresh copies of its operands and
/// returns whether every result is bitwise the same.
bool repeatsBitwise(const KernelCase &c) {
  const std::vector<int64_t> desc = kernelDesc(c);
  std::vector<std::vector<unsigned char>> first;
  for (int run = 0; run < 2; ++run) {
    std::vector<void *> bufs;
    for (const HostTensor &t : c.operands)
      bufs.push_back(uploadTensor(t));
    for (const HostTensor &t : c.results) {
      void *p = nullptr;
      cuda::check(cudaMalloc(&p, std::max<size_t>(t.bytes.size(), 1)),
                  "test allocation");
      // Different garbage each run: results must not depend on it.
      cuda::check(cudaMemset(p, run ? 0x7f : 0x11, t.bytes.size()),
                  "test fill");
      bufs.push_back(p);
    }
    c.gpu(bufs.data(), desc.data());
    cuda::synchronize();
    for (size_t r = 0; r < c.results.size(); ++r) {
      std::vector<unsigned char> got(c.results[r].bytes.size());
      cuda::check(cudaMemcpy(got.data(), bufs[c.operands.size() + r],
                             got.size(), cudaMemcpyDeviceToHost),
                  "test download");
      if (run == 0)
        first.push_back(std::move(got));
      else if (got != first[r])
        return false;
    }
    for (void *p : bufs)
      cuda::check(cudaFree(p), "test free");
  }
  return true;
}

void determinismTests() {
  for (const Dims &dims : {Dims{2048, 1024}, Dims{3, 4096}, Dims{5000, 96}}) {
    KernelCase c;
    c.name = "layer_norm_grad";
    c.gpu = weft_cuda_k_layer_norm_grad;
    Dims inner = {dims[1]};
    c.operands = {rnd(WEFT_F32, dims, -3, 3), rnd(WEFT_F32, inner, 0.5, 1.5),
                  rnd(WEFT_F32, dims)};
    c.results = {zeroTensor(WEFT_F32, dims), zeroTensor(WEFT_F32, inner),
                 zeroTensor(WEFT_F32, inner)};
    c.attrs = {1, bits(1e-5)};
    const bool ok = repeatsBitwise(c);
    std::printf("%s layer_norm_grad %s repeats bitwise\n", ok ? "PASS" : "FAIL",
                dimsName(dims).c_str());
    failures += ok ? 0 : 1;
  }
  {
    KernelCase c;
    c.gpu = weft_cuda_k_conv_grad_weight;
    c.operands = {rnd(WEFT_F32, {16, 8, 28, 28}),
                  rnd(WEFT_F32, {16, 16, 28, 28})};
    c.results = {zeroTensor(WEFT_F32, {16, 8, 3, 3})};
    c.attrs = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const bool ok = repeatsBitwise(c);
    std::printf("%s conv_grad_weight repeats bitwise\n", ok ? "PASS" : "FAIL");
    failures += ok ? 0 : 1;
  }
  {
    KernelCase c;
    c.gpu = weft_cuda_k_softmax_xent;
    c.operands = {rnd(WEFT_F32, {4096, 500}, -5, 5),
                  labelsOf(WEFT_I64, {4096}, 500, -100, 7)};
    c.results = {zeroTensor(WEFT_F32, {})};
    c.attrs = {WEFT_LOSS_MEAN, 1, -100, 0, 0};
    const bool ok = repeatsBitwise(c);
    std::printf("%s softmax_xent mean repeats bitwise\n", ok ? "PASS" : "FAIL");
    failures += ok ? 0 : 1;
  }
  // bf16 rows of padded classes, in registers (16-byte chunks).
  for (int grad = 0; grad < 2; ++grad) {
    KernelCase c;
    c.gpu = grad ? weft_cuda_k_softmax_xent_grad : weft_cuda_k_softmax_xent;
    c.operands = {rnd(WEFT_BF16, {1024, 50264}, -5, 5),
                  labelsOf(WEFT_I64, {1024}, 50257, -100, 7)};
    if (grad)
      c.operands.push_back(tensorOf(WEFT_F32, {}, {1.0}));
    c.results = {zeroTensor(grad ? WEFT_BF16 : WEFT_F32,
                            grad ? Dims{1024, 50264} : Dims{})};
    c.attrs = {WEFT_LOSS_MEAN, 1, -100, 0};
    if (!grad)
      c.attrs.push_back(0);
    c.attrs.push_back(50257);
    const bool ok = repeatsBitwise(c);
    std::printf("%s softmax_xent%s bf16 classes 50257 mean repeats bitwise\n",
                ok ? "PASS" : "FAIL", grad ? "_grad" : "");
    failures += ok ? 0 : 1;
  }
}

/// A label out of range must reach the device error word (without
/// stopping the stream); the word is cleared again afterwards. With the
/// `classes` attribute a label naming a padding entry is out of range.
void deviceErrorTests() {
  for (int padded = 0; padded < 2; ++padded)
    for (KernelFn fn :
         {weft_cuda_k_softmax_xent, weft_cuda_k_softmax_xent_grad}) {
      const bool grad = fn == weft_cuda_k_softmax_xent_grad;
      const int64_t dtype = padded ? WEFT_BF16 : WEFT_F32;
      const Dims scores = padded ? Dims{3, 8} : Dims{3, 5};
      KernelCase c;
      c.operands = {rnd(dtype, scores), tensorOf(WEFT_I64, {3}, {1, 7, 2})};
      if (padded)
        c.operands[1] = tensorOf(WEFT_I64, {3}, {1, 5, 2}); // classes 5
      if (grad)
        c.operands.push_back(tensorOf(WEFT_F32, {}, {1.0}));
      c.results = {grad ? zeroTensor(dtype, scores) : zeroTensor(WEFT_F32, {})};
      c.attrs = {WEFT_LOSS_MEAN, 0, 0, 0};
      if (!grad)
        c.attrs.push_back(0);
      if (padded)
        c.attrs.push_back(5);
      const std::vector<int64_t> desc = kernelDesc(c);
      std::vector<void *> bufs;
      for (const std::vector<HostTensor> *list : {&c.operands, &c.results})
        for (const HostTensor &t : *list)
          bufs.push_back(uploadTensor(t));
      fn(bufs.data(), desc.data());
      cuda::synchronize();
      int word = 0;
      cuda::check(cudaMemcpy(&word, cuda::errorWord(), sizeof word,
                             cudaMemcpyDeviceToHost),
                  "reading the error word");
      cuda::check(cudaMemset(cuda::errorWord(), 0, sizeof word),
                  "clearing the error word");
      const bool ok = word != 0;
      std::printf("%s %s%s reports a label out of range (code %d)\n",
                  ok ? "PASS" : "FAIL",
                  grad ? "softmax_xent_grad" : "softmax_xent",
                  padded ? " bf16 classes 5 of 8" : "", word);
      failures += ok ? 0 : 1;
      for (void *p : bufs)
        cuda::check(cudaFree(p), "test free");
    }
}

//===-- Throughput --------------------------------------------------------===//

/// A device call of `kernel` on tensors of `shapes` (all `dtype`), filled
/// with a small constant.
struct DeviceCall {
  std::vector<int64_t> desc;
  std::vector<void *> bufs;

  DeviceCall(const std::vector<std::pair<int64_t, Dims>> &tensors,
             const std::vector<int64_t> &attrs)
      : desc(kernelDesc(tensors, attrs)) {
    for (const auto &t : tensors) {
      int64_t bytes = weftDTypeSize(t.first);
      for (int64_t d : t.second)
        bytes *= d;
      void *p = nullptr;
      cuda::check(cudaMalloc(&p, static_cast<size_t>(bytes)),
                  "benchmark allocation");
      // 0x3c bytes: 0.0115 in bf16, 0.0115 in f32 too (0x3c3c3c3c).
      cuda::check(cudaMemset(p, 0x3c, static_cast<size_t>(bytes)),
                  "benchmark fill");
      bufs.push_back(p);
    }
  }
  ~DeviceCall() {
    for (void *p : bufs)
      cudaFree(p);
  }
  void run(KernelFn fn) { fn(bufs.data(), desc.data()); }
};

/// softmax_xent and its gradient on GPT-2's LM head logits: bf16 [8192,
/// 50264] with 50257 classes (the padded vocabulary), and the f32 [8192,
/// 50257] logits that the compiled graph cast and sliced them to before.
/// GB/s counts the scores read (and dscores written) once.
void xentThroughput() {
  const int64_t rows = 8192;
  struct S {
    int64_t dtype, c, classes;
  };
  for (const S &s : {S{WEFT_BF16, 50264, 50257}, S{WEFT_F32, 50257, 50257}}) {
    const bool padded = s.classes != s.c;
    const std::vector<int64_t> classesAttr =
        padded ? std::vector<int64_t>{s.classes} : std::vector<int64_t>{};
    std::vector<int64_t> fwdAttrs = {WEFT_LOSS_MEAN, 1, -100, 0, 0};
    std::vector<int64_t> gradAttrs = {WEFT_LOSS_MEAN, 1, -100, 0};
    fwdAttrs.insert(fwdAttrs.end(), classesAttr.begin(), classesAttr.end());
    gradAttrs.insert(gradAttrs.end(), classesAttr.begin(), classesAttr.end());
    DeviceCall fwd({{s.dtype, {rows, s.c}},
                    {WEFT_I64, {rows}},
                    {WEFT_F32, std::vector<int64_t>{}}},
                   fwdAttrs);
    DeviceCall grad({{s.dtype, {rows, s.c}},
                     {WEFT_I64, {rows}},
                     {WEFT_F32, std::vector<int64_t>{}},
                     {s.dtype, {rows, s.c}}},
                    gradAttrs);
    for (DeviceCall *call : {&fwd, &grad}) // labels 0: in range
      cuda::check(cudaMemset(call->bufs[1], 0, rows * sizeof(int64_t)),
                  "benchmark labels");
    const double bytes = static_cast<double>(rows) * s.c *
                         static_cast<double>(weftDTypeSize(s.dtype));
    const double fwdMs =
        gpuMilliseconds([&] { fwd.run(weft_cuda_k_softmax_xent); }, 20);
    const double gradMs =
        gpuMilliseconds([&] { grad.run(weft_cuda_k_softmax_xent_grad); }, 20);
    const std::string name = std::string(weftDTypeName(s.dtype)) + " " +
                             std::to_string(rows) + "x" + std::to_string(s.c) +
                             " classes " + std::to_string(s.classes);
    std::printf("THROUGHPUT softmax_xent %s mean: %.0f GB/s (%.3f ms)\n",
                name.c_str(), bytes / (fwdMs * 1e-3) / 1e9, fwdMs);
    std::printf("THROUGHPUT softmax_xent_grad %s mean: %.0f GB/s (%.3f ms)\n",
                name.c_str(), 2 * bytes / (gradMs * 1e-3) / 1e9, gradMs);
  }
  cuda::checkDeviceErrors();
}

void throughput() {
  {
    const int64_t n = 8192;
    DeviceCall call(
        {{WEFT_BF16, {n, n}}, {WEFT_BF16, {n, n}}, {WEFT_BF16, {n, n}}},
        {0, 0});
    double ms = gpuMilliseconds([&] { call.run(weft_cuda_k_matmul); }, 10);
    std::printf("THROUGHPUT matmul bf16 %lldx%lldx%lld: %.1f TFLOP/s "
                "(%.3f ms)\n",
                (long long)n, (long long)n, (long long)n,
                2.0 * n * n * n / (ms * 1e-3) / 1e12, ms);
  }
  {
    const int64_t n = 4096;
    DeviceCall call(
        {{WEFT_F32, {n, n}}, {WEFT_F32, {n, n}}, {WEFT_F32, {n, n}}}, {0, 0});
    double ms = gpuMilliseconds([&] { call.run(weft_cuda_k_matmul); }, 10);
    std::printf("THROUGHPUT matmul f32 %lldx%lldx%lld: %.1f TFLOP/s "
                "(%.3f ms)\n",
                (long long)n, (long long)n, (long long)n,
                2.0 * n * n * n / (ms * 1e-3) / 1e12, ms);
  }
  {
    const int64_t rows = 16384, n = 1024;
    DeviceCall call({{WEFT_F32, {rows, n}},
                     {WEFT_F32, {n}},
                     {WEFT_F32, {n}},
                     {WEFT_F32, {rows, n}}},
                    {1, bits(1e-5), 1});
    double ms = gpuMilliseconds([&] { call.run(weft_cuda_k_layer_norm); }, 50);
    std::printf("THROUGHPUT layer_norm f32 %lldx%lld: %.0f GB/s (%.3f ms)\n",
                (long long)rows, (long long)n,
                2.0 * rows * n * 4 / (ms * 1e-3) / 1e9, ms);
  }
  xentThroughput();
  {
    const int64_t rows = 16384, n = 1024;
    DeviceCall call({{WEFT_F32, {rows, n}}, {WEFT_F32, {rows, n}}}, {1, 0});
    double ms = gpuMilliseconds([&] { call.run(weft_cuda_k_softmax); }, 50);
    std::printf("THROUGHPUT softmax f32 %lldx%lld: %.0f GB/s (%.3f ms)\n",
                (long long)rows, (long long)n,
                2.0 * rows * n * 4 / (ms * 1e-3) / 1e9, ms);
  }
}

} // namespace weft::test::math
