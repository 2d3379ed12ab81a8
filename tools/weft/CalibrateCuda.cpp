//===- CalibrateCuda.cpp - weft-calibrate-cuda: this GPU for the cost model
//-===//
//
//   weft-calibrate-cuda -o CLUSTER.json [--quick]
//
// What `weft calibrate --target cuda` starts: it measures this machine's
// GPU through the CUDA backend's own kernels (the weft_k_* entry points a
// --target cuda bundle calls, on device buffers, timed with CUDA events on
// the compute stream) and writes a cluster description ("weft-cluster/1",
// tools/weftc/planner/Cluster.h) atomically. Units are SI.
//
//   compute   weft_k_matmul on n x n x n products of random bf16 and f32
//             operands, n = 256 .. 8192 (--quick: .. 4096); the median of
//             several timed calls per size. peak_flops.bf16 and .fp32 are
//             the best rates (fp32 as the bundles run it: full fp32, not
//             TF32); gemm_efficiency is the bf16 curve [2n^3, rate / peak]
//             (bundles train in bf16 on GPUs).
//   memory    weft_k_binary add of 256 MiB f32 arrays: operands + result
//             bytes per second (a GPU does not read the lines it writes, so
//             the cost model counts GPU traffic that way); "cache_bytes" is
//             the L2 size and "cache_bandwidth" the same add on arrays that
//             fill a quarter of it; "kernel_bandwidth.adamw" weft_k_adamw
//             on 16M parameters; the other "kernel_bandwidth" entries rate
//             the element-wise, cast, transpose, reduce, layer-norm and
//             cross-entropy kernels on GPT-2 small's shapes.
//   attention weft_k_attention and weft_k_attention_grad on bf16 [8, 12,
//             1024, 64] causal (GPT-2 small's): "kernel_efficiency" holds
//             their rates over peak_flops.bf16 (FLOPs as the cost model
//             counts them).
//   overhead  weft_k_binary add of one element back to back: the time per
//             call, host enqueue or GPU, whichever is longer
//             ("kernel_overhead_s"); and the same adds recorded as a CUDA
//             graph and replayed, per kernel ("kernel_overhead_graph_s":
//             what a one-rank step pays, which the CUDA backend replays).
//   links     one process sees one GPU's kernels only: NCCL's links between
//             GPUs are not measured here. They are copied from the datasheet
//             preset of the GPU's family (h100-sxm for H100/H200, a100-sxm
//             for A100, else h100-sxm) and marked "links_assumed".
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaRuntime.h"
#include "weft/runtime/FileUtil.h"
#include "weft/runtime/KernelABI.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using weft::cuda::check;

/// One kernel call's operands and results (device buffers) and its desc.
struct Call {
  std::vector<void *> bufs;
  std::vector<int64_t> desc;

  /// Appends a tensor of `dtype` and `dims` at `data` to the call.
  void tensor(void *data, int64_t dtype, std::vector<int64_t> dims) {
    bufs.push_back(data);
    if (desc.empty())
      desc.push_back(0);
    ++desc[0];
    desc.push_back(dtype);
    desc.push_back(static_cast<int64_t>(dims.size()));
    desc.insert(desc.end(), dims.begin(), dims.end());
  }
  void attrs(std::vector<int64_t> values) {
    desc.push_back(static_cast<int64_t>(values.size()));
    desc.insert(desc.end(), values.begin(), values.end());
  }
};

/// Seconds per call of `fn`: two warm-up calls, then trials of `calls`
/// calls timed with events on the compute stream; the median trial.
template <class Fn> double timeCalls(Fn fn, int calls, int trials) {
  fn();
  fn();
  cudaEvent_t begin, end;
  check(cudaEventCreate(&begin), "creating a timing event");
  check(cudaEventCreate(&end), "creating a timing event");
  std::vector<double> per;
  for (int t = 0; t < trials; ++t) {
    check(cudaEventRecord(begin, weft::cuda::computeStream()), "timing");
    for (int i = 0; i < calls; ++i)
      fn();
    check(cudaEventRecord(end, weft::cuda::computeStream()), "timing");
    check(cudaEventSynchronize(end), "timing");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, begin, end), "timing");
    per.push_back(ms * 1e-3 / calls);
  }
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

void *deviceAlloc(size_t bytes) {
  void *p = nullptr;
  check(cudaMalloc(&p, std::max<size_t>(bytes, 256)), "allocating a buffer");
  return p;
}

/// `n` f32 values uniform in [-1, 1) on the device, and their bf16 copy.
struct RandomData {
  float *f32 = nullptr;
  void *bf16 = nullptr;
  int64_t n = 0;
};

RandomData randomData(int64_t n) {
  RandomData d;
  d.n = n;
  std::vector<float> host(static_cast<size_t>(n));
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float &v : host)
    v = dist(gen);
  d.f32 = static_cast<float *>(deviceAlloc(n * sizeof(float)));
  d.bf16 = deviceAlloc(n * 2);
  check(
      cudaMemcpy(d.f32, host.data(), n * sizeof(float), cudaMemcpyHostToDevice),
      "uploading random data");
  Call cast;
  cast.tensor(d.f32, WEFT_F32, {n});
  cast.tensor(d.bf16, WEFT_BF16, {n});
  cast.attrs({});
  weft_k_cast(cast.bufs.data(), cast.desc.data());
  check(cudaDeviceSynchronize(), "converting random data");
  return d;
}

struct GemmPoint {
  int64_t n;
  double rate;
};

/// n x n x n products of `dtype` operands taken from `data`.
std::vector<GemmPoint> measureGemm(const RandomData &data, int64_t dtype,
                                   const std::vector<int64_t> &sizes) {
  std::vector<GemmPoint> points;
  for (int64_t n : sizes) {
    void *a = dtype == WEFT_BF16 ? data.bf16 : static_cast<void *>(data.f32);
    size_t elem = dtype == WEFT_BF16 ? 2 : 4;
    // b is a later stretch of the same random data; c its own buffer.
    void *b = static_cast<char *>(a) + n * n * elem;
    void *c = deviceAlloc(n * n * elem);
    Call mm;
    mm.tensor(a, dtype, {n, n});
    mm.tensor(b, dtype, {n, n});
    mm.tensor(c, dtype, {n, n});
    mm.attrs({0, 0});
    const double flops = 2.0 * n * n * n;
    // Enough calls for about 20 ms a trial at 100 TFLOP/s.
    int calls = static_cast<int>(std::clamp(2e12 / flops, 1.0, 1000.0));
    double t = timeCalls([&] { weft_k_matmul(mm.bufs.data(), mm.desc.data()); },
                         calls, 5);
    check(cudaFree(c), "freeing a buffer");
    points.push_back({n, flops / t});
    std::printf("  %-5s n=%-5lld %9.2f TFLOP/s\n",
                dtype == WEFT_BF16 ? "bf16" : "fp32", static_cast<long long>(n),
                flops / t / 1e12);
  }
  return points;
}

/// Operands + result bytes per second of c = a + b over `n` f32 elements.
double measureAdd(int64_t n, int trials) {
  float *a = static_cast<float *>(deviceAlloc(n * 4));
  float *b = static_cast<float *>(deviceAlloc(n * 4));
  float *c = static_cast<float *>(deviceAlloc(n * 4));
  check(cudaMemset(a, 0, n * 4), "clearing a buffer");
  check(cudaMemset(b, 0, n * 4), "clearing a buffer");
  Call add;
  add.tensor(a, WEFT_F32, {n});
  add.tensor(b, WEFT_F32, {n});
  add.tensor(c, WEFT_F32, {n});
  add.attrs({WEFT_BINARY_ADD});
  int calls = static_cast<int>(std::clamp(4e9 / (12.0 * n), 1.0, 2000.0));
  double t = timeCalls([&] { weft_k_binary(add.bufs.data(), add.desc.data()); },
                       calls, trials);
  for (float *p : {a, b, c})
    check(cudaFree(p), "freeing a buffer");
  return 12.0 * n / t;
}

/// AdamW on `n` parameters: operands + results bytes per second.
double measureAdamw(int64_t n) {
  std::vector<void *> t;
  for (int i = 0; i < 4; ++i) {
    t.push_back(deviceAlloc(n * 4));
    check(cudaMemset(t.back(), 0, n * 4), "clearing a buffer");
  }
  void *step = deviceAlloc(8);
  int64_t one = 1;
  check(cudaMemcpy(step, &one, 8, cudaMemcpyHostToDevice), "uploading");
  Call adamw;
  for (int i = 0; i < 4; ++i)
    adamw.tensor(t[i], WEFT_F32, {n});
  adamw.tensor(step, WEFT_I64, {});
  // param', m', v' in place.
  adamw.tensor(t[0], WEFT_F32, {n});
  adamw.tensor(t[2], WEFT_F32, {n});
  adamw.tensor(t[3], WEFT_F32, {n});
  adamw.attrs({weftDoubleToAttr(1e-3), weftDoubleToAttr(0.9),
               weftDoubleToAttr(0.999), weftDoubleToAttr(1e-8),
               weftDoubleToAttr(1e-2)});
  double sec = timeCalls(
      [&] { weft_k_adamw(adamw.bufs.data(), adamw.desc.data()); }, 10, 5);
  for (void *p : t)
    check(cudaFree(p), "freeing a buffer");
  check(cudaFree(step), "freeing a buffer");
  return 7.0 * 4.0 * n / sec;
}

/// Operand + result bytes per second of the bundle's other heavy kernels
/// on GPT-2 small's shapes (batch 8 x 1024 tokens, width 768, 12 heads,
/// the padded bf16 vocabulary), by runtime kernel name. Operands are
/// stretches of `data`; results and labels have buffers of their own.
/// Kernels rated in several forms (binary: same shapes, a bias, a scale;
/// unary: tanh and erf) take the mean time.
std::vector<std::pair<std::string, double>>
measureKernels(const RandomData &data) {
  const int64_t rows = 8 * 1024, width = 768, vocab = 50264, classes = 50257;
  int64_t used = 0; // elements of `data` handed out
  std::vector<void *> owned;
  auto elemSize = [](int64_t dtype) {
    return dtype == WEFT_I64 ? 8 : dtype == WEFT_F32 ? 4 : 2;
  };
  auto numel = [](const std::vector<int64_t> &dims) {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  };
  struct Rated {
    Call call;
    double bytes = 0;
  };
  auto operand = [&](Rated &r, int64_t dtype, std::vector<int64_t> dims) {
    const int64_t n = numel(dims);
    const size_t bytes = static_cast<size_t>(n * elemSize(dtype));
    r.bytes += static_cast<double>(bytes);
    if (n > data.n) { // more than the random data: zeros of its own
      owned.push_back(deviceAlloc(bytes));
      check(cudaMemset(owned.back(), 0, bytes), "clearing a buffer");
      r.call.tensor(owned.back(), dtype, dims);
      return;
    }
    if (used + n > data.n)
      used = 0; // reuse the random data from its start
    char *base = static_cast<char *>(
        dtype == WEFT_BF16 ? data.bf16 : static_cast<void *>(data.f32));
    r.call.tensor(base + used * elemSize(dtype), dtype, dims);
    used += n;
  };
  auto result = [&](Rated &r, int64_t dtype, std::vector<int64_t> dims) {
    const int64_t n = numel(dims);
    owned.push_back(deviceAlloc(static_cast<size_t>(n * elemSize(dtype))));
    r.call.tensor(owned.back(), dtype, dims);
    r.bytes += static_cast<double>(n * elemSize(dtype));
  };
  // Labels in [0, classes).
  std::vector<int64_t> host(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i)
    host[static_cast<size_t>(i)] = (i * 7919) % classes;
  void *labels = deviceAlloc(static_cast<size_t>(rows) * 8);
  owned.push_back(labels);
  check(cudaMemcpy(labels, host.data(), static_cast<size_t>(rows) * 8,
                   cudaMemcpyHostToDevice),
        "uploading labels");

  using Fn = void (*)(void *const *, const int64_t *);
  // Seconds per byte of each form, by kernel name.
  std::map<std::string, std::vector<double>> seconds;
  auto rate = [&](const std::string &name, Fn fn, Rated &r) {
    const double t =
        timeCalls([&] { fn(r.call.bufs.data(), r.call.desc.data()); }, 20, 5);
    seconds[name].push_back(t / r.bytes);
  };
  const std::vector<int64_t> act = {rows, width};
  // Binary: same shapes, a bias, a scale.
  const std::vector<std::pair<std::vector<int64_t>, int64_t>> binaries = {
      {act, WEFT_BINARY_ADD},
      {{width}, WEFT_BINARY_ADD},
      {{}, WEFT_BINARY_MUL}};
  for (const auto &[other, op] : binaries) {
    Rated r;
    operand(r, WEFT_F32, act);
    operand(r, WEFT_F32, other);
    result(r, WEFT_F32, act);
    r.call.attrs({op});
    rate("binary", weft_k_binary, r);
  }
  for (int64_t op : {int64_t(WEFT_UNARY_TANH), int64_t(WEFT_UNARY_ERF)}) {
    Rated r;
    operand(r, WEFT_F32, act);
    result(r, WEFT_F32, act);
    r.call.attrs({op});
    rate("unary", weft_k_unary, r);
  }
  {
    Rated r;
    operand(r, WEFT_F32, act);
    result(r, WEFT_BF16, act);
    r.call.attrs({});
    rate("cast", weft_k_cast, r);
  }
  {
    Rated r; // the heads' split: [B, S, H, D] -> [B, H, S, D]
    operand(r, WEFT_BF16, {8, 1024, 12, 64});
    result(r, WEFT_BF16, {8, 12, 1024, 64});
    r.call.attrs({0, 2, 1, 3});
    rate("transpose", weft_k_transpose, r);
  }
  {
    Rated r; // a bias gradient: the sum over batch and tokens
    operand(r, WEFT_F32, {8, 1024, width});
    result(r, WEFT_F32, {1, 1, width});
    r.call.attrs({WEFT_REDUCE_SUM, 2, 0, 1});
    rate("reduce", weft_k_reduce, r);
  }
  {
    Rated r;
    operand(r, WEFT_F32, act);
    operand(r, WEFT_F32, {width});
    operand(r, WEFT_F32, {width});
    result(r, WEFT_F32, act);
    r.call.attrs({1, weftDoubleToAttr(1e-5), 1});
    rate("layer_norm", weft_k_layer_norm, r);
  }
  {
    Rated r;
    operand(r, WEFT_F32, act);
    operand(r, WEFT_F32, {width});
    operand(r, WEFT_F32, act);
    result(r, WEFT_F32, act);
    result(r, WEFT_F32, {width});
    result(r, WEFT_F32, {width});
    r.call.attrs({1, weftDoubleToAttr(1e-5)});
    rate("layer_norm_grad", weft_k_layer_norm_grad, r);
  }
  {
    Rated r; // the LM head's padded bf16 logits
    operand(r, WEFT_BF16, {rows, vocab});
    r.call.tensor(labels, WEFT_I64, {rows});
    r.bytes += static_cast<double>(rows) * 8;
    result(r, WEFT_F32, {});
    r.call.attrs({WEFT_LOSS_MEAN, 0, 0, 0, 0, classes});
    rate("softmax_xent", weft_k_softmax_xent, r);
  }
  {
    Rated r;
    operand(r, WEFT_BF16, {rows, vocab});
    r.call.tensor(labels, WEFT_I64, {rows});
    r.bytes += static_cast<double>(rows) * 8;
    operand(r, WEFT_F32, {});
    result(r, WEFT_BF16, {rows, vocab});
    r.call.attrs({WEFT_LOSS_MEAN, 0, 0, 0, classes});
    rate("softmax_xent_grad", weft_k_softmax_xent_grad, r);
  }
  check(cudaDeviceSynchronize(), "rating kernels");
  for (void *p : owned)
    check(cudaFree(p), "freeing a buffer");
  std::vector<std::pair<std::string, double>> rates;
  for (const auto &[name, perByte] : seconds) {
    double mean = 0;
    for (double t : perByte)
      mean += t;
    rates.push_back({name, static_cast<double>(perByte.size()) / mean});
  }
  return rates;
}

/// Rates (FLOP/s, as the cost model counts attention's FLOPs: per
/// query-key pair of the causal half 4 D + 5 forward, 2.5 times that
/// backward) of the fused
/// attention kernels on bf16 [B, H, S, D] causal operands taken from
/// `data`: weft_k_attention, then weft_k_attention_grad.
std::pair<double, double> measureAttention(const RandomData &data, int64_t b,
                                           int64_t h, int64_t s, int64_t d) {
  const int64_t n = b * h * s * d;
  const std::vector<int64_t> dims = {b, h, s, d}, rows = {b, h, s};
  auto slice = [&](int64_t i) {
    return static_cast<char *>(data.bf16) + i * n * 2;
  };
  void *q = slice(0), *k = slice(1), *v = slice(2), *dout = slice(3);
  void *o = deviceAlloc(n * 2), *lse = deviceAlloc(b * h * s * 4);
  void *dq = deviceAlloc(n * 2), *dk = deviceAlloc(n * 2),
       *dv = deviceAlloc(n * 2);
  const std::vector<int64_t> attrs = {
      weftDoubleToAttr(1.0 / std::sqrt(static_cast<double>(d))), 1};
  Call fwd;
  for (void *t : {q, k, v, o})
    fwd.tensor(t, WEFT_BF16, dims);
  fwd.tensor(lse, WEFT_F32, rows);
  fwd.attrs(attrs);
  Call bwd;
  for (void *t : {q, k, v, o})
    bwd.tensor(t, WEFT_BF16, dims);
  bwd.tensor(lse, WEFT_F32, rows);
  for (void *t : {dout, dq, dk, dv})
    bwd.tensor(t, WEFT_BF16, dims);
  bwd.attrs(attrs);
  const double forwardFlops = b * h * s * s / 2.0 * (4 * d + 5);
  const double fwdSec = timeCalls(
      [&] { weft_k_attention(fwd.bufs.data(), fwd.desc.data()); }, 10, 5);
  const double bwdSec = timeCalls(
      [&] { weft_k_attention_grad(bwd.bufs.data(), bwd.desc.data()); }, 10, 5);
  for (void *t : {o, lse, dq, dk, dv})
    check(cudaFree(t), "freeing a buffer");
  return {forwardFlops / fwdSec, 2.5 * forwardFlops / bwdSec};
}

/// A one-element add on a fresh device buffer: the launch overheads'
/// kernel.
Call oneElementAdd() {
  float *p = static_cast<float *>(deviceAlloc(256));
  check(cudaMemset(p, 0, 256), "clearing a buffer");
  Call add;
  add.tensor(p, WEFT_F32, {1});
  add.tensor(p, WEFT_F32, {1});
  add.tensor(p + 16, WEFT_F32, {1});
  add.attrs({WEFT_BINARY_ADD});
  return add;
}

/// Seconds per back-to-back launch of a one-element add (host enqueue or
/// GPU, whichever is longer).
double measureOverhead() {
  Call add = oneElementAdd();
  return timeCalls([&] { weft_k_binary(add.bufs.data(), add.desc.data()); },
                   2000, 5);
}

/// The same one-element add recorded 1000 times as a CUDA graph and
/// replayed: the time per kernel of a step the CUDA backend replays
/// (CudaDevice.cpp). -1 when the recording fails (with the reason).
double measureGraphOverhead() {
  Call add = oneElementAdd();
  weft_k_binary(add.bufs.data(), add.desc.data()); // any first-use work
  constexpr int kKernels = 1000;
  weft::cuda::beginCapture();
  for (int i = 0; i < kKernels; ++i)
    weft_k_binary(add.bufs.data(), add.desc.data());
  const char *why = nullptr;
  cudaGraph_t graph = weft::cuda::endCapture(why);
  if (!graph) {
    std::fprintf(stderr, "weft-calibrate-cuda: recording a graph failed: %s\n",
                 why ? why : "unknown");
    return -1;
  }
  cudaGraphExec_t exec = nullptr;
  check(cudaGraphInstantiate(&exec, graph, 0), "instantiating a graph");
  cudaGraphDestroy(graph);
  const double perGraph = timeCalls(
      [&] {
        check(cudaGraphLaunch(exec, weft::cuda::computeStream()),
              "launching a graph");
      },
      5, 5);
  cudaGraphExecDestroy(exec);
  return perGraph / kKernels;
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

int usage(const char *why) {
  if (why)
    std::fprintf(stderr, "weft-calibrate-cuda: error: %s\n", why);
  std::fprintf(stderr,
               "usage: weft-calibrate-cuda -o CLUSTER.json [--quick]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string output;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-o" && i + 1 < argc)
      output = argv[++i];
    else if (arg == "--quick")
      quick = true;
    else if (arg == "-h" || arg == "--help")
      return usage(nullptr), 0;
    else
      return usage(("unknown argument '" + arg + "'").c_str());
  }
  if (output.empty())
    return usage("-o CLUSTER.json is required");

  int visible = 0;
  cudaError_t err = cudaGetDeviceCount(&visible);
  if (err != cudaSuccess || visible == 0) {
    std::fprintf(stderr,
                 "weft-calibrate-cuda: error: no usable NVIDIA GPU to "
                 "measure (%s)\n",
                 err != cudaSuccess ? cudaGetErrorString(err)
                                    : "no CUDA device found");
    return 1;
  }
  weft::cuda::requireDevice();
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, weft::cuda::device()),
        "reading GPU properties");
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "counting GPUs");
  std::printf("weft-calibrate-cuda: %s (%d visible), %.1f GB, L2 %.1f MB\n",
              prop.name, devices, prop.totalGlobalMem / 1e9,
              prop.l2CacheSize / 1e6);

  std::vector<int64_t> sizes = {256, 512, 1024, 2048, 4096};
  if (!quick)
    sizes.push_back(8192);
  const int64_t largest = sizes.back();
  RandomData data = randomData(2 * largest * largest);
  std::printf("compute (weft_k_matmul, n x n x n):\n");
  std::vector<GemmPoint> bf16 = measureGemm(data, WEFT_BF16, sizes);
  std::vector<GemmPoint> fp32 = measureGemm(data, WEFT_F32, sizes);
  double peakBf16 = 0, peakFp32 = 0;
  for (const GemmPoint &p : bf16)
    peakBf16 = std::max(peakBf16, p.rate);
  for (const GemmPoint &p : fp32)
    peakFp32 = std::max(peakFp32, p.rate);

  const double memory = measureAdd(64ll << 20, 5);
  const double cacheBytes = prop.l2CacheSize;
  const double cache = measureAdd(
      std::max<int64_t>(static_cast<int64_t>(cacheBytes / 48), 1024), 5);
  const double adamw = measureAdamw(16ll << 20);
  const double overhead = measureOverhead();
  const double graphOverhead = measureGraphOverhead();
  const std::vector<std::pair<std::string, double>> kernels =
      measureKernels(data);
  std::printf("memory: add of 256 MiB arrays %.0f GB/s, in L2 %.0f GB/s, "
              "adamw %.0f GB/s\nkernel overhead %.2f us, %.2f us in a CUDA "
              "graph\n",
              memory / 1e9, cache / 1e9, adamw / 1e9, overhead * 1e6,
              graphOverhead * 1e6);
  std::printf("kernels on GPT-2 small's shapes (GB/s, operands + results):");
  for (const auto &[kernel, rate] : kernels)
    std::printf(" %s %.0f", kernel.c_str(), rate / 1e9);
  std::printf("\n");
  // GPT-2-small's attention (batch 8, 12 heads, 1024 tokens, head size 64).
  const auto [attention, attentionGrad] =
      measureAttention(data, 8, 12, 1024, 64);
  std::printf("attention bf16 [8, 12, 1024, 64] causal: forward %.1f, "
              "backward %.1f TFLOP/s\n",
              attention / 1e12, attentionGrad / 1e12);

  const std::string name = prop.name;
  const bool a100 = name.find("A100") != std::string::npos;
  // Datasheet links of the family (Cluster.cpp's presets).
  const char *links =
      a100 ? R"({"intra_node": {"bandwidth": 3.0e11, "latency": 3e-6},
            "inter_node": {"bandwidth": 2.5e10, "latency": 6e-6}})"
           : R"({"intra_node": {"bandwidth": 4.5e11, "latency": 3e-6},
            "inter_node": {"bandwidth": 5.0e10, "latency": 6e-6}})";

  std::string rated;
  for (const auto &[kernel, rate] : kernels)
    rated += ", \"" + kernel + "\": " + num(rate);
  std::string j = "{\n  \"format\": \"weft-cluster/1\", \"name\": \"";
  for (char c : name)
    j += (std::isalnum(static_cast<unsigned char>(c)) ? c : '-');
  j += "-calibrated\",\n  \"nodes\": 1, \"devices_per_node\": " +
       std::to_string(std::max(devices, 1)) +
       ",\n  \"device\": {\"kind\": \"gpu\",\n"
       "    \"peak_flops\": {\"fp32\": " +
       num(peakFp32) + ", \"bf16\": " + num(peakBf16) +
       "},\n    \"memory_bytes\": " + num(double(prop.totalGlobalMem)) +
       ", \"memory_bandwidth\": " + num(memory) +
       ",\n    \"gemm_efficiency\": [";
  for (size_t i = 0; i < bf16.size(); ++i)
    j += std::string(i ? ", " : "") + "[" +
         num(2.0 * bf16[i].n * bf16[i].n * bf16[i].n) + ", " +
         num(std::min(1.0, bf16[i].rate / peakBf16)) + "]";
  j += "],\n    \"cache_bytes\": " + num(cacheBytes) +
       ", \"cache_bandwidth\": " + num(cache) +
       ",\n    \"kernel_bandwidth\": {\"adamw\": " + num(adamw) + rated +
       "},\n    \"kernel_efficiency\": {\"attention\": " +
       num(std::min(1.0, attention / peakBf16)) +
       ", \"attention_grad\": " + num(std::min(1.0, attentionGrad / peakBf16)) +
       "},\n    \"kernel_overhead_s\": " + num(overhead) +
       (graphOverhead >= 0
            ? ", \"kernel_overhead_graph_s\": " + num(graphOverhead)
            : std::string()) +
       "},\n  \"links\": " + links +
       ",\n  \"overlap\": 0.9,\n  \"calibration\": {\"device\": \"" + name +
       "\", \"links_assumed\": \"one process measures one GPU's "
       "kernels: the links are the " +
       (a100 ? "a100-sxm" : "h100-sxm") +
       " datasheet figures\", \"gemm_fp32\": [";
  for (size_t i = 0; i < fp32.size(); ++i)
    j += std::string(i ? ", " : "") + "[" + std::to_string(fp32[i].n) + ", " +
         num(fp32[i].rate) + "]";
  j += "]}\n}\n";
  std::string error;
  if (!weft::writeFileAtomic(output, {{j.data(), j.size()}}, error)) {
    std::fprintf(stderr, "weft-calibrate-cuda: error: %s\n", error.c_str());
    return 1;
  }
  std::printf("wrote %s\n", output.c_str());
  return 0;
}
