//===- Conv.cu - conv, conv_grad_input and conv_grad_weight kernels -------===//
//
// The GPU versions of runtime/kernels/cpu/Conv.cpp and ConvGrad.cpp: 1-D to
// 3-D convolutions with groups, strides, pads and dilations, on f32 or bf16
// tensors in any mix (each bf16 tensor is widened to f32 as it is read,
// products accumulate in f32 and bf16 results are rounded once, like the
// CPU's runBF16AsF32).
//
// Per group g, with T taps, K = Cg * T and P output positions per image,
// the forward is the GEMM y_g[OCg, P] = w_g[OCg, K] x cols_g[K, P]. The
// images go in chunks (as many as fit a scratch budget); for each chunk:
//
//   conv              im2col(x) -> cols [C*T, nb*P]; per group (one
//                     strided-batched GEMM over the groups)
//                     ytmp_g[OCg, nb*P] = w_g x cols_g; then y = ytmp + bias
//                     reordered to [n, OC, P] and rounded to y's dtype
//   conv_grad_input   dy reordered to dyT [OC, nb*P];
//                     colsG_g[K, nb*P] = w_g^T x dyT_g; col2im(colsG) -> dx
//                     as a gather (each dx element sums its taps in order)
//   conv_grad_weight  cols as for conv, dyT as for grad_input;
//                     dw_g[OCg, K] += dyT_g x cols_g^T, the chunks added in
//                     order through the GEMM's beta
//
// Nothing uses atomics and the chunking depends only on the shape, so all
// three repeat bitwise. Depthwise convs (one input channel per group) run
// forward as a direct kernel, one thread per output: their GEMMs would be
// degenerate.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/ConvGeometry.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/MathUtil.cuh"

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::math;

namespace {

/// Floats of one chunk's temporaries (cols, reordered dy or y) at most,
/// unless a single image needs more.
constexpr int64_t kChunkFloats = int64_t(1) << 25;

/// A conv's shape as the kernels need it.
struct ConvDims {
  Window g;
  int64_t batch, channels, outChannels, groups, cg, ocg;
  int64_t taps, positions, depth; // T, P, K = cg * T
};

ConvDims convDims(const cpu::ConvShape &s) {
  ConvDims d;
  d.g = Window::from(s.g);
  d.batch = s.batch;
  d.channels = s.channels;
  d.outChannels = s.outChannels;
  d.groups = s.groups;
  d.cg = s.cg;
  d.ocg = s.ocg;
  d.taps = d.g.kernelSize();
  d.positions = d.g.outSize();
  d.depth = d.cg * d.taps;
  return d;
}

/// Images per chunk for temporaries of `perImage` floats per image.
int64_t chunkImages(const ConvDims &d, int64_t perImage) {
  int64_t nb = perImage > 0 ? kChunkFloats / perImage : d.batch;
  nb = nb < 1 ? 1 : nb;
  return nb > d.batch ? d.batch : nb;
}

bool isBf16(const cpu::TensorArg &t) { return t.dtype == WEFT_BF16; }

void expectF32OrBf16(const cpu::KernelArgs &args) {
  for (int i = 0; i < args.numTensors(); ++i)
    if (args.tensor(i).dtype != WEFT_F32 && args.tensor(i).dtype != WEFT_BF16)
      args.unsupportedDType(args.tensor(i).dtype);
}

/// cols[(c * T + t) * (nb * P) + i * P + p] = x[n0 + i, c] at the input
/// position tap t of output p reads (0 in the padding).
__global__ void im2colKernel(const void *x, bool xBf16, ConvDims d, int64_t n0,
                             int64_t nb, float *cols) {
  const Window &g = d.g;
  const int64_t width = nb * d.positions;
  const int64_t total = d.channels * d.taps * width;
  const int64_t inSize = g.inSize();
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = idx / width, col = idx % width;
    const int64_t c = row / d.taps, i = col / d.positions;
    int64_t k[3], o[3];
    g.splitTap(row % d.taps, k);
    g.splitOutput(col % d.positions, o);
    float v = 0.0f;
    const int64_t id = g.inputIndex(0, o[0], k[0]);
    const int64_t ih = g.inputIndex(1, o[1], k[1]);
    const int64_t iw = g.inputIndex(2, o[2], k[2]);
    if (id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 &&
        iw < g.in[2])
      v = loadAs(x,
                 ((n0 + i) * d.channels + c) * inSize +
                     (id * g.in[1] + ih) * g.in[2] + iw,
                 xBf16);
    cols[idx] = v;
  }
}

/// dyT[oc * (nb * P) + i * P + p] = dy[n0 + i, oc, p] in f32.
__global__ void reorderDyKernel(const void *dy, bool dyBf16, ConvDims d,
                                int64_t n0, int64_t nb, float *dyT) {
  const int64_t width = nb * d.positions;
  const int64_t total = d.outChannels * width;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t oc = idx / width, col = idx % width;
    const int64_t i = col / d.positions, p = col % d.positions;
    dyT[idx] =
        loadAs(dy, ((n0 + i) * d.outChannels + oc) * d.positions + p, dyBf16);
  }
}

/// y[n0 + i, oc, p] = ytmp[oc * (nb * P) + i * P + p] (+ bias[oc]).
__global__ void convEpilogueKernel(const float *ytmp, const void *bias,
                                   bool biasBf16, void *y, bool yBf16,
                                   ConvDims d, int64_t n0, int64_t nb) {
  const int64_t total = nb * d.outChannels * d.positions;
  const int64_t width = nb * d.positions;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = idx % d.positions;
    const int64_t oc = idx / d.positions % d.outChannels;
    const int64_t i = idx / (d.positions * d.outChannels);
    float v = ytmp[oc * width + i * d.positions + p];
    if (bias)
      v += loadAs(bias, oc, biasBf16);
    storeAs(y, n0 * d.outChannels * d.positions + idx, yBf16, v);
  }
}

/// dx[n0 + i, c, q] = the sum over taps t (in order) of colsG at the
/// output position whose tap t reads input position q.
__global__ void col2imKernel(const float *colsG, void *dx, bool dxBf16,
                             ConvDims d, int64_t n0, int64_t nb) {
  const Window &g = d.g;
  const int64_t inSize = g.inSize();
  const int64_t width = nb * d.positions;
  const int64_t total = nb * d.channels * inSize;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t q = idx % inSize;
    const int64_t c = idx / inSize % d.channels;
    const int64_t i = idx / (inSize * d.channels);
    int64_t iq[3]; // q as (id, ih, iw)
    g.splitInput(q, iq);
    const float *base = colsG + c * d.taps * width + i * d.positions;
    float acc = 0.0f;
    for (int64_t td = 0; td < g.kernel[0]; ++td) {
      const int64_t od = g.outputOf(0, iq[0], td);
      if (od < 0)
        continue;
      for (int64_t th = 0; th < g.kernel[1]; ++th) {
        const int64_t oh = g.outputOf(1, iq[1], th);
        if (oh < 0)
          continue;
        for (int64_t tw = 0; tw < g.kernel[2]; ++tw) {
          const int64_t ow = g.outputOf(2, iq[2], tw);
          if (ow < 0)
            continue;
          acc += base[g.tapAt(td, th, tw) * width + g.outputAt(od, oh, ow)];
        }
      }
    }
    storeAs(dx, n0 * d.channels * inSize + idx, dxBf16, acc);
  }
}

/// Direct conv, one thread per output: bias, then w * x over the group's
/// channels and the taps inside the input, in order.
__global__ void convDirectKernel(const void *x, bool xBf16, const void *w,
                                 bool wBf16, const void *bias, bool biasBf16,
                                 void *y, bool yBf16, ConvDims d) {
  const Window &g = d.g;
  const int64_t total = d.batch * d.outChannels * d.positions;
  const int64_t inSize = g.inSize();
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = idx % d.positions;
    const int64_t oc = idx / d.positions % d.outChannels;
    const int64_t n = idx / (d.positions * d.outChannels);
    const int64_t grp = oc / d.ocg;
    int64_t o[3], lo[3], hi[3];
    g.outputWindow(p, o, lo, hi);
    float acc = bias ? loadAs(bias, oc, biasBf16) : 0.0f;
    for (int64_t c = 0; c < d.cg; ++c) {
      const int64_t xBase = (n * d.channels + grp * d.cg + c) * inSize;
      const int64_t wBase = (oc * d.cg + c) * d.taps;
      forEachInBox(lo, hi, [&](int64_t kd, int64_t kh, int64_t kw) {
        acc = fmaf(loadAs(w, wBase + g.tapAt(kd, kh, kw), wBf16),
                   loadAs(x, xBase + g.tapOffset(o, kd, kh, kw), xBf16), acc);
      });
    }
    storeAs(y, idx, yBf16, acc);
  }
}

/// The operands of conv_grad_input (dy, w, dx) and conv_grad_weight (x, dy,
/// dw): three f32 or bf16 tensors.
void expectGradTensors(const cpu::KernelArgs &args) {
  args.expectTensors(3, 3);
  expectF32OrBf16(args);
}

/// A gradient's dims from `in` (x or dx), dy and the weight (w or dw).
ConvDims gradDims(const cpu::KernelArgs &args, const cpu::TensorArg &in,
                  const cpu::TensorArg &dy, const cpu::TensorArg &w) {
  return convDims(cpu::makeConvShape(
      args, in, dy, w, 0, "expected x, w and dy of equal rank >= 3"));
}

/// Whether the gradient `result` is complete without a GEMM: it is empty,
/// or nothing contributes to it (`nothing`) and it is zeroed.
bool trivialGrad(const cpu::TensorArg &result, bool nothing) {
  if (result.numel == 0)
    return true;
  if (nothing) {
    zero(result.data, static_cast<size_t>(result.bytes()));
    return true;
  }
  return false;
}

/// The temporaries of a chunked call, carved from one scratch() buffer:
/// cols [C*T, nb*P] (cols or colsG), per output channel rows [OC, nb*P]
/// (ytmp or dyT) and, when `weights` (w, or dw for conv_grad_weight) is
/// bf16, an f32 copy of it.
struct ConvScratch {
  int64_t nb; // images per chunk
  float *cols, *rows;
  float *weights; // null unless `weights` is bf16
};

ConvScratch convScratch(const ConvDims &d, const cpu::TensorArg &weights) {
  ConvScratch s;
  s.nb = chunkImages(d, (d.channels * d.taps + d.outChannels) * d.positions);
  ScratchPlan sp;
  const int sCols =
      sp.add(static_cast<size_t>(d.channels * d.taps * s.nb * d.positions) * 4);
  const int sRows =
      sp.add(static_cast<size_t>(d.outChannels * s.nb * d.positions) * 4);
  const int sW =
      sp.add(isBf16(weights) ? static_cast<size_t>(weights.numel) * 4 : 0);
  sp.allocate();
  s.cols = sp.at<float>(sCols);
  s.rows = sp.at<float>(sRows);
  s.weights = isBf16(weights) ? sp.at<float>(sW) : nullptr;
  return s;
}

/// Calls f(n0, cnt, width) for each chunk of images [n0, n0 + cnt) in
/// order, width = cnt * P its columns.
template <class F> void forEachChunk(const ConvDims &d, int64_t nb, F &&f) {
  for (int64_t n0 = 0; n0 < d.batch; n0 += nb) {
    const int64_t cnt = d.batch - n0 < nb ? d.batch - n0 : nb;
    f(n0, cnt, cnt * d.positions);
  }
}

/// w as f32: its own data, or its bf16 values widened into `widened`.
const float *f32Weights(const cpu::TensorArg &w, float *widened) {
  if (!isBf16(w))
    return w.as<float>();
  convertElements(w.data, WEFT_BF16, widened, WEFT_F32, w.numel);
  return widened;
}

/// Images [n0, n0 + cnt) of x into cols (im2colKernel).
void im2col(const cpu::TensorArg &x, const ConvDims &d, int64_t n0, int64_t cnt,
            float *cols, const char *kernel) {
  const int64_t width = cnt * d.positions;
  im2colKernel<<<blocksFor(d.channels * d.taps * width), kBlock, 0,
                 computeStream()>>>(x.data, isBf16(x), d, n0, cnt, cols);
  checkLaunch(kernel);
}

/// Images [n0, n0 + cnt) of dy into dyT (reorderDyKernel).
void reorderDy(const cpu::TensorArg &dy, const ConvDims &d, int64_t n0,
               int64_t cnt, float *dyT, const char *kernel) {
  const int64_t width = cnt * d.positions;
  reorderDyKernel<<<blocksFor(d.outChannels * width), kBlock, 0,
                    computeStream()>>>(dy.data, isBf16(dy), d, n0, cnt, dyT);
  checkLaunch(kernel);
}

/// An f32 operand of gemm(): `ld` floats per row, consecutive groups
/// `stride` floats apart.
GemmOperand f32Operand(const float *data, bool trans, int64_t ld,
                       int64_t stride) {
  GemmOperand op;
  op.data = data;
  op.trans = trans;
  op.ld = ld;
  op.stride = stride;
  return op;
}

GemmResult f32Result(float *data, int64_t ld, int64_t stride) {
  GemmResult r;
  r.data = data;
  r.ld = ld;
  r.stride = stride;
  return r;
}

} // namespace

extern "C" void weft_cuda_k_conv(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("conv", bufs, desc);
  args.expectTensors(3, 4);
  args.expectAttrs(2);
  const bool hasBias = args.attr(0) != 0;
  args.expectTensors(hasBias ? 4 : 3, hasBias ? 4 : 3);
  expectF32OrBf16(args);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &w = args.tensor(1);
  const cpu::TensorArg *bias = hasBias ? &args.tensor(2) : nullptr;
  const cpu::TensorArg &y = args.tensor(hasBias ? 3 : 2);
  const ConvDims d = convDims(cpu::makeConvShape(
      args, x, y, w, 1, "expected x, w and y of equal rank >= 3"));
  if (y.numel == 0)
    return;
  cudaStream_t stream = computeStream();
  const void *biasData = bias ? bias->data : nullptr;
  const bool biasBf16 = bias && isBf16(*bias);
  if (d.cg == 1) {
    convDirectKernel<<<blocksFor(y.numel), kBlock, 0, stream>>>(
        x.data, isBf16(x), w.data, isBf16(w), biasData, biasBf16, y.data,
        isBf16(y), d);
    checkLaunch("conv");
    return;
  }
  const ConvScratch s = convScratch(d, w);
  const float *wf = f32Weights(w, s.weights);
  float *cols = s.cols, *ytmp = s.rows;
  forEachChunk(d, s.nb, [&](int64_t n0, int64_t cnt, int64_t width) {
    im2col(x, d, n0, cnt, cols, "conv");
    gemm("conv", d.ocg, width, d.depth, d.groups,
         f32Operand(wf, false, d.depth, d.ocg * d.depth),
         f32Operand(cols, false, width, d.depth * width),
         f32Result(ytmp, width, d.ocg * width), 0.0f);
    convEpilogueKernel<<<blocksFor(d.outChannels * width), kBlock, 0, stream>>>(
        ytmp, biasData, biasBf16, y.data, isBf16(y), d, n0, cnt);
    checkLaunch("conv");
  });
}

extern "C" void weft_cuda_k_conv_grad_input(void *const *bufs,
                                            const int64_t *desc) {
  cpu::KernelArgs args("conv_grad_input", bufs, desc);
  expectGradTensors(args);
  const cpu::TensorArg &dy = args.tensor(0), &w = args.tensor(1),
                       &dx = args.tensor(2);
  const ConvDims d = gradDims(args, dx, dy, w);
  if (trivialGrad(dx, dy.numel == 0 || d.ocg == 0))
    return;
  cudaStream_t stream = computeStream();
  const ConvScratch s = convScratch(d, w);
  const float *wf = f32Weights(w, s.weights);
  float *colsG = s.cols, *dyT = s.rows;
  forEachChunk(d, s.nb, [&](int64_t n0, int64_t cnt, int64_t width) {
    reorderDy(dy, d, n0, cnt, dyT, "conv_grad_input");
    // colsG_g[K, width] = w_g^T [K, OCg] x dyT_g [OCg, width].
    gemm("conv_grad_input", d.depth, width, d.ocg, d.groups,
         f32Operand(wf, true, d.depth, d.ocg * d.depth),
         f32Operand(dyT, false, width, d.ocg * width),
         f32Result(colsG, width, d.depth * width), 0.0f);
    col2imKernel<<<blocksFor(cnt * d.channels * d.g.inSize()), kBlock, 0,
                   stream>>>(colsG, dx.data, isBf16(dx), d, n0, cnt);
    checkLaunch("conv_grad_input");
  });
}

extern "C" void weft_cuda_k_conv_grad_weight(void *const *bufs,
                                             const int64_t *desc) {
  cpu::KernelArgs args("conv_grad_weight", bufs, desc);
  expectGradTensors(args);
  const cpu::TensorArg &x = args.tensor(0), &dy = args.tensor(1),
                       &dw = args.tensor(2);
  const ConvDims d = gradDims(args, x, dy, dw);
  if (trivialGrad(dw, dy.numel == 0 || x.numel == 0))
    return;
  const ConvScratch s = convScratch(d, dw);
  float *cols = s.cols, *dyT = s.rows;
  float *dwf = s.weights ? s.weights : dw.as<float>();
  forEachChunk(d, s.nb, [&](int64_t n0, int64_t cnt, int64_t width) {
    im2col(x, d, n0, cnt, cols, "conv_grad_weight");
    reorderDy(dy, d, n0, cnt, dyT, "conv_grad_weight");
    // dw_g[OCg, K] (+)= dyT_g [OCg, width] x cols_g^T [width, K].
    gemm("conv_grad_weight", d.ocg, d.depth, width, d.groups,
         f32Operand(dyT, false, width, d.ocg * width),
         f32Operand(cols, true, width, d.depth * width),
         f32Result(dwf, d.depth, d.ocg * d.depth), n0 == 0 ? 0.0f : 1.0f);
  });
  if (isBf16(dw))
    convertElements(dwf, WEFT_F32, dw.data, WEFT_BF16, dw.numel);
}
