//===- conv_bench.cpp - Throughput of the CPU conv kernels ----------------===//
//
// Times weft_k_conv, weft_k_conv_grad_input and weft_k_conv_grad_weight on
// 2-D convolutions and prints milliseconds and GFLOP/s (2 flops per
// multiply-add of the direct method, padding taps included, as frameworks
// count them) per kernel:
//
//   weft_conv_bench [--repeat R] [--warmup W] [--min] [--json FILE]
//                   [SHAPE ...]
//
// SHAPE is N,C,H,W,OC,K,S,P (batch, input channels, input height and width,
// output channels, square kernel, stride, padding). Without shapes it runs
// the convolutions of torchvision's resnet18 on 32x32 images at batch 16
// (the bench/run_training_bench.py --model resnet18_bn step), each once
// with its count in the network. The pool's size is WEFT_NUM_THREADS. On a
// shared, noisy host --min (the fastest call rather than the median)
// compares two builds more reliably.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/KernelABI.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct Shape {
  int64_t n, c, h, w, oc, k, s, p;
  int count = 1; // times the network runs it
  int64_t oh() const { return (h + 2 * p - k) / s + 1; }
  int64_t ow() const { return (w + 2 * p - k) / s + 1; }
  double flops() const {
    return 2.0 * double(n * oc * oh() * ow()) * double(c * k * k);
  }
};

/// (bufs, desc) of KernelABI.h for 4-D f32 tensors and integer attributes.
struct Call {
  std::vector<void *> bufs;
  std::vector<int64_t> tensors, attrs;
  void tensor(std::vector<float> &data, std::vector<int64_t> dims) {
    bufs.push_back(data.data());
    tensors.push_back(WEFT_F32);
    tensors.push_back(static_cast<int64_t>(dims.size()));
    tensors.insert(tensors.end(), dims.begin(), dims.end());
  }
  std::vector<int64_t> desc() const {
    std::vector<int64_t> d{static_cast<int64_t>(bufs.size())};
    d.insert(d.end(), tensors.begin(), tensors.end());
    d.push_back(static_cast<int64_t>(attrs.size()));
    d.insert(d.end(), attrs.begin(), attrs.end());
    return d;
  }
};

std::vector<float> randomData(int64_t n, std::mt19937 &gen) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Median (or, with `fastest`, least) milliseconds of `repeat` calls after
/// `warmup` untimed ones.
template <class Fn> double timeMs(int repeat, int warmup, bool fastest, Fn fn) {
  for (int i = 0; i < warmup; ++i)
    fn();
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return fastest ? ms.front() : ms[ms.size() / 2];
}

bool parseShape(const char *text, Shape &s) {
  int64_t v[8];
  int used = 0;
  if (std::sscanf(text, "%ld,%ld,%ld,%ld,%ld,%ld,%ld,%ld%n", &v[0], &v[1],
                  &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &used) != 8 ||
      text[used] != '\0')
    return false;
  s = Shape{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
  for (int64_t x : v)
    if (x < 0)
      return false;
  return s.n > 0 && s.c > 0 && s.oc > 0 && s.k > 0 && s.s > 0 && s.oh() > 0 &&
         s.ow() > 0;
}

std::vector<Shape> resnet18Shapes() {
  // 32x32 input: stem 7x7/2 to 16x16, max pool to 8x8, then stages at
  // 8x8, 4x4, 2x2 and 1x1.
  return {
      {16, 3, 32, 32, 64, 7, 2, 3, 1},  {16, 64, 8, 8, 64, 3, 1, 1, 4},
      {16, 64, 8, 8, 128, 3, 2, 1, 1},  {16, 64, 8, 8, 128, 1, 2, 0, 1},
      {16, 128, 4, 4, 128, 3, 1, 1, 3}, {16, 128, 4, 4, 256, 3, 2, 1, 1},
      {16, 128, 4, 4, 256, 1, 2, 0, 1}, {16, 256, 2, 2, 256, 3, 1, 1, 3},
      {16, 256, 2, 2, 512, 3, 2, 1, 1}, {16, 256, 2, 2, 512, 1, 2, 0, 1},
      {16, 512, 1, 1, 512, 3, 1, 1, 3},
  };
}

} // namespace

int main(int argc, char **argv) {
  int repeat = 20, warmup = 3;
  const char *jsonPath = nullptr;
  bool fastest = false;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--min") {
      fastest = true;
      continue;
    }
    if ((a == "--repeat" || a == "--warmup" || a == "--json") && i + 1 < argc) {
      const char *v = argv[++i];
      if (a == "--json") {
        jsonPath = v;
        continue;
      }
      int n = std::atoi(v);
      if (n < (a == "--repeat" ? 1 : 0)) {
        std::fprintf(stderr, "weft_conv_bench: bad %s '%s'\n", a.c_str(), v);
        return 2;
      }
      (a == "--repeat" ? repeat : warmup) = n;
      continue;
    }
    Shape s;
    if (!parseShape(argv[i], s)) {
      std::fprintf(stderr,
                   "weft_conv_bench: bad argument '%s' (expected --repeat R, "
                   "--warmup W, --min, --json FILE or N,C,H,W,OC,K,S,P)\n",
                   argv[i]);
      return 2;
    }
    shapes.push_back(s);
  }
  const bool network = shapes.empty();
  if (network)
    shapes = resnet18Shapes();

  std::mt19937 gen(7);
  const char *names[3] = {"conv", "grad_input", "grad_weight"};
  double total[3] = {0, 0, 0};
  std::string json = "[";
  std::printf("%-28s %5s %10s %8s %10s %8s %10s %8s\n", "N,C,H,W,OC,K,S,P",
              "count", "conv ms", "GF/s", "dx ms", "GF/s", "dw ms", "GF/s");
  for (const Shape &s : shapes) {
    std::vector<int64_t> xd{s.n, s.c, s.h, s.w}, wd{s.oc, s.c, s.k, s.k},
        yd{s.n, s.oc, s.oh(), s.ow()};
    auto x = randomData(s.n * s.c * s.h * s.w, gen);
    auto w = randomData(s.oc * s.c * s.k * s.k, gen);
    auto dy = randomData(s.n * s.oc * s.oh() * s.ow(), gen);
    std::vector<float> y(dy.size()), dx(x.size()), dw(w.size());
    const std::vector<int64_t> geometry{1, s.s, s.s, s.p, s.p, s.p, s.p, 1, 1};
    Call calls[3];
    calls[0].tensor(x, xd);
    calls[0].tensor(w, wd);
    calls[0].tensor(y, yd);
    calls[0].attrs = {0};
    calls[1].tensor(dy, yd);
    calls[1].tensor(w, wd);
    calls[1].tensor(dx, xd);
    calls[2].tensor(x, xd);
    calls[2].tensor(dy, yd);
    calls[2].tensor(dw, wd);
    calls[0].attrs.insert(calls[0].attrs.end(), geometry.begin(),
                          geometry.end());
    calls[1].attrs = geometry;
    calls[2].attrs = geometry;
    void (*fns[3])(void *const *, const int64_t *) = {
        weft_k_conv, weft_k_conv_grad_input, weft_k_conv_grad_weight};
    double ms[3];
    for (int k = 0; k < 3; ++k) {
      std::vector<int64_t> d = calls[k].desc();
      ms[k] = timeMs(repeat, warmup, fastest,
                     [&] { fns[k](calls[k].bufs.data(), d.data()); });
      total[k] += ms[k] * s.count;
    }
    char label[64];
    std::snprintf(label, sizeof label, "%ld,%ld,%ld,%ld,%ld,%ld,%ld,%ld", s.n,
                  s.c, s.h, s.w, s.oc, s.k, s.s, s.p);
    const double gf = s.flops() * 1e-6;
    std::printf("%-28s %5d %10.3f %8.1f %10.3f %8.1f %10.3f %8.1f\n", label,
                s.count, ms[0], gf / ms[0], ms[1], gf / ms[1], ms[2],
                gf / ms[2]);
    char entry[256];
    std::snprintf(entry, sizeof entry,
                  "%s{\"shape\":\"%s\",\"count\":%d,\"gflop\":%.6f,"
                  "\"conv_ms\":%.4f,\"grad_input_ms\":%.4f,"
                  "\"grad_weight_ms\":%.4f}",
                  json.size() > 1 ? "," : "", label, s.count, gf * 1e-3, ms[0],
                  ms[1], ms[2]);
    json += entry;
  }
  json += "]";
  if (network)
    std::printf("resnet18 total (ms, counts applied): %s %.2f  %s %.2f  %s "
                "%.2f  all %.2f\n",
                names[0], total[0], names[1], total[1], names[2], total[2],
                total[0] + total[1] + total[2]);
  if (jsonPath) {
    FILE *f = std::fopen(jsonPath, "w");
    if (!f) {
      std::fprintf(stderr, "weft_conv_bench: cannot write %s\n", jsonPath);
      return 1;
    }
    std::fprintf(f,
                 "{\"repeat\":%d,\"warmup\":%d,\"statistic\":\"%s\","
                 "\"shapes\":%s}\n",
                 repeat, warmup, fastest ? "min" : "median", json.c_str());
    std::fclose(f);
  }
  return 0;
}
