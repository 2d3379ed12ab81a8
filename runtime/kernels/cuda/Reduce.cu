//===- Reduce.cu - GPU reduce kernel --------------------------------------===//
//
// Sum, mean and max over a set of axes with the dtypes of the CPU kernel
// (Reduce.cpp): f32 and f64 for all three, i64 and i32 for sum and max,
// bf16 accumulated in f32 and rounded once (bf16 and f32 may be mixed, as
// the CPU's widening allows). Max lets NaN through; mean divides the sum
// by the reduced count; an empty reduction gives the identity (mean: NaN).
//
// Unit dims are dropped and neighbouring reduced or kept dims merged, so
// a reduction is a series of stages [outer, R, inner] -> [outer, inner],
// innermost reduced group first (one stage unless reduced and kept dims
// interleave): rows (inner = 1) by a thread, a warp or a block per row
// with 16-byte loads; columns by blocks of W columns x H row lanes.
// Few long rows or columns are cut into fixed chunks whose partial results
// a second pass combines. Every choice depends on the shape alone (and on
// 16-byte alignment, which the memory plan fixes) and every combination
// has a fixed order (shuffle trees, no atomics), so the result is the same
// bits on every run.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/ReduceAxes.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/DataKernelUtil.cuh"

#include "weft/runtime/Float16.h"

#include <algorithm>
#include <vector>

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::data;

namespace {

//===-- accumulation ------------------------------------------------------===//

template <class Acc> struct SumOp {
  __device__ Acc identity() const { return Acc(0); }
  __device__ Acc operator()(Acc a, Acc b) const {
    if constexpr (std::is_integral_v<Acc>) // wraps, as the CPU's sums do
      return static_cast<Acc>(static_cast<std::make_unsigned_t<Acc>>(a) +
                              static_cast<std::make_unsigned_t<Acc>>(b));
    else
      return a + b;
  }
};

template <class Acc> struct MaxOp {
  __device__ Acc identity() const {
    if constexpr (std::numeric_limits<Acc>::has_infinity)
      return -std::numeric_limits<Acc>::infinity();
    else
      return std::numeric_limits<Acc>::lowest();
  }
  // NaN wins, as numpy, PyTorch and the binary max kernel do.
  __device__ Acc operator()(Acc a, Acc b) const {
    return (b > a || b != b) ? b : a;
  }
};

template <class Acc, class In> static __device__ inline Acc load(In v) {
  if constexpr (std::is_same_v<In, BF16>)
    return toFloat(v);
  else
    return static_cast<Acc>(v);
}

template <class Out, class Acc> static __device__ inline Out store(Acc v) {
  if constexpr (std::is_same_v<Out, BF16>)
    return toBF16(v);
  else
    return static_cast<Out>(v);
}

/// The last step of a result: divide by the count for a mean (in the
/// accumulation type, as the CPU kernel; integers have no mean), then
/// round to the result type.
template <class Acc, class Out> struct Finish {
  bool mean = false;
  Acc count = Acc(1);
  __device__ Out operator()(Acc a) const {
    if constexpr (std::is_floating_point_v<Acc>)
      a = mean ? a / count : a;
    return store<Out>(a);
  }
};

/// y = x element by element when nothing is reduced (a mean divides by 1),
/// through the accumulation type's rounding.
template <class In, class Acc, class Out> struct CopyOp {
  __device__ Out operator()(In v) const { return store<Out>(load<Acc>(v)); }
};

//===-- kernels -----------------------------------------------------------===//

/// Rows of R <= 16 elements: a thread per row.
template <class In, class Acc, class Out, class Op>
__global__ void __launch_bounds__(kBlock)
    rowsByThread(const In *x, Out *y, int64_t outer, int64_t R, Op op,
                 Finish<Acc, Out> fin) {
  const int64_t step = gridStep<int64_t>();
  for (int64_t row = gridStart<int64_t>(); row < outer; row += step) {
    const In *p = x + row * R;
    Acc acc = op.identity();
    for (int64_t i = 0; i < R; ++i)
      acc = op(acc, load<Acc>(p[i]));
    y[row] = fin(acc);
  }
}

/// Rows of up to 512 elements: a warp per row.
template <class In, class Acc, class Out, class Op>
__global__ void __launch_bounds__(kBlock)
    rowsByWarp(const In *x, Out *y, int64_t outer, int64_t R, Op op,
               Finish<Acc, Out> fin) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = gridStep<int64_t>() / 32;
  for (int64_t row = gridStart<int64_t>() / 32; row < outer; row += warps) {
    const In *p = x + row * R;
    Acc acc = op.identity();
    for (int64_t i = lane; i < R; i += 32)
      acc = op(acc, load<Acc>(p[i]));
    acc = warpReduce(acc, op);
    if (lane == 0)
      y[row] = fin(acc);
  }
}

/// Long rows: a block per chunk of `chunk` elements of a row (chunks per
/// row: `chunks`), result b = row * chunks + chunk index. kVec: x, rows
/// and chunks are 16-byte aligned, so the block reads 16-byte packs.
template <class In, class Acc, class Out, class Op, bool kVec>
__global__ void __launch_bounds__(kBlock)
    rowsByBlock(const In *x, Out *y, int64_t R, int64_t chunk, int64_t chunks,
                int64_t numOut, Op op, Finish<Acc, Out> fin) {
  __shared__ Acc smem[32];
  for (int64_t b = blockIdx.x; b < numOut; b += gridDim.x) {
    const int64_t row = b / chunks;
    const int64_t begin = (b - row * chunks) * chunk;
    const int64_t len = min(chunk, R - begin);
    const In *p = x + row * R + begin;
    Acc acc = op.identity();
    int64_t done = 0;
    if (kVec) {
      constexpr int V = 16 / sizeof(In);
      const int64_t packs = len / V;
      const Pack<In, V> *pp = reinterpret_cast<const Pack<In, V> *>(p);
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < packs; i += kBlock) {
        const Pack<In, V> v = pp[i];
#pragma unroll
        for (int j = 0; j < V; ++j)
          acc = op(acc, load<Acc>(v.v[j]));
      }
      done = packs * V;
    }
    for (int64_t i = done + threadIdx.x; i < len; i += kBlock)
      acc = op(acc, load<Acc>(p[i]));
    acc = blockReduce<kBlock>(acc, op, smem);
    if (threadIdx.x == 0)
      y[b] = fin(acc);
    __syncthreads();
  }
}

/// Columns: x is [outer, R, inner]; a block of blockDim.x (W) columns by
/// blockDim.y (H, a power of two) row lanes reduces rows [k * chunkRows,
/// (k + 1) * chunkRows) of one column tile; the lanes combine in a tree.
/// Result [outer, chunks, inner].
template <class In, class Acc, class Out, class Op>
__global__ void __launch_bounds__(kBlock)
    columnsByBlock(const In *x, Out *y, int64_t R, int64_t inner,
                   int64_t chunkRows, int64_t chunks, int64_t colTiles,
                   int64_t numBlocks, Op op, Finish<Acc, Out> fin) {
  __shared__ Acc smem[kBlock];
  const int W = blockDim.x, H = blockDim.y;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t b = blockIdx.x; b < numBlocks; b += gridDim.x) {
    const int64_t tile = b % colTiles;
    const int64_t k = (b / colTiles) % chunks;
    const int64_t o = b / (colTiles * chunks);
    const int64_t c = tile * W + tx;
    const int64_t r0 = k * chunkRows;
    const int64_t r1 = min(R, r0 + chunkRows);
    Acc acc = op.identity();
    if (c < inner) {
      const In *p = x + o * R * inner + c;
#pragma unroll 4
      for (int64_t r = r0 + ty; r < r1; r += H)
        acc = op(acc, load<Acc>(p[r * inner]));
    }
    smem[ty * W + tx] = acc;
    __syncthreads();
    for (int s = H / 2; s > 0; s /= 2) {
      if (ty < s)
        smem[ty * W + tx] = op(smem[ty * W + tx], smem[(ty + s) * W + tx]);
      __syncthreads();
    }
    if (ty == 0 && c < inner)
      y[(o * chunks + k) * inner + c] = fin(smem[tx]);
    __syncthreads();
  }
}

template <class Out>
__global__ void __launch_bounds__(kBlock) fill(Out *y, int64_t n, Out v) {
  const int64_t step = gridStep<int64_t>();
  for (int64_t i = gridStart<int64_t>(); i < n; i += step)
    y[i] = v;
}

//===-- stages ------------------------------------------------------------===//

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Reduces x [outer, R, inner] (R >= 2) into y [outer, inner]. With
/// allowSplit, too few rows or columns for the GPU are cut into chunks
/// whose partial results go through scratch() and a second stage.
template <class In, class Out, class Acc, class Op>
void reduceStage(const In *x, Out *y, int64_t outer, int64_t R, int64_t inner,
                 Op op, Finish<Acc, Out> fin, bool allowSplit) {
  cudaStream_t s = computeStream();
  const Finish<Acc, Acc> keep{};
  if (inner == 1) {
    if (R <= 16) {
      rowsByThread<<<blocksFor(outer), kBlock, 0, s>>>(x, y, outer, R, op, fin);
      return checkLaunch("reduce");
    }
    if (R <= 512) {
      rowsByWarp<<<blocksFor(outer * 32), kBlock, 0, s>>>(x, y, outer, R, op,
                                                          fin);
      return checkLaunch("reduce");
    }
    // Long rows: a block each, or fixed chunks of them when the rows are
    // too few to fill the GPU.
    int64_t chunks = 1;
    if (allowSplit && R > 16384 && outer < 1024)
      chunks = std::min(ceilDiv(R, 8192), ceilDiv(2048, outer));
    int64_t chunk = R;
    if (chunks > 1) {
      chunk = ceilDiv(ceilDiv(R, chunks), 16) * 16;
      chunks = ceilDiv(R, chunk);
    }
    const bool vec = aligned(x, 16) && (R * sizeof(In)) % 16 == 0 &&
                     (chunk * sizeof(In)) % 16 == 0;
    auto launch = [&](auto *dst, auto finish) {
      const int64_t numOut = outer * chunks;
      const int blocks = blocksFor(numOut * kBlock);
      using D = std::remove_pointer_t<decltype(dst)>;
      if (vec)
        rowsByBlock<In, Acc, D, Op, true><<<blocks, kBlock, 0, s>>>(
            x, dst, R, chunk, chunks, numOut, op, finish);
      else
        rowsByBlock<In, Acc, D, Op, false><<<blocks, kBlock, 0, s>>>(
            x, dst, R, chunk, chunks, numOut, op, finish);
      checkLaunch("reduce");
    };
    if (chunks == 1)
      return launch(y, fin);
    Acc *partial = static_cast<Acc *>(
        scratch(static_cast<size_t>(outer * chunks) * sizeof(Acc)));
    launch(partial, keep);
    return reduceStage<Acc, Out, Acc>(partial, y, outer, chunks, 1, op, fin,
                                      false);
  }
  // Columns: W adjacent columns (a power of two up to 32) read together,
  // H = 256 / W rows in flight per tile.
  int W = 2;
  while (W < 32 && W < inner)
    W *= 2;
  const int H = kBlock / W;
  const int64_t colTiles = ceilDiv(inner, W);
  int64_t chunks = 1;
  if (allowSplit && outer * colTiles < 1024)
    chunks = std::min(ceilDiv(R, 16 * H), ceilDiv(2048, outer * colTiles));
  int64_t chunkRows = R;
  if (chunks > 1) {
    chunkRows = ceilDiv(R, chunks);
    chunks = ceilDiv(R, chunkRows);
  }
  const int64_t numBlocks = outer * chunks * colTiles;
  const int blocks = blocksFor(numBlocks * kBlock);
  const dim3 block(W, H);
  if (chunks == 1) {
    columnsByBlock<In, Acc, Out, Op><<<blocks, block, 0, s>>>(
        x, y, R, inner, chunkRows, 1, colTiles, numBlocks, op, fin);
    return checkLaunch("reduce");
  }
  Acc *partial = static_cast<Acc *>(
      scratch(static_cast<size_t>(outer * chunks * inner) * sizeof(Acc)));
  columnsByBlock<In, Acc, Acc, Op><<<blocks, block, 0, s>>>(
      x, partial, R, inner, chunkRows, chunks, colTiles, numBlocks, op, keep);
  checkLaunch("reduce");
  reduceStage<Acc, Out, Acc>(partial, y, outer, chunks, inner, op, fin, false);
}

struct Group {
  int64_t extent;
  bool reduced;
};

/// Runs the stages of a reduction of x (groups: merged dims, outermost
/// first, at least one reduced) into y. Stages but the last write Acc
/// tensors into two halves of one scratch buffer, alternately.
template <class In, class Out, class Acc, class Op>
void reduceGroups(std::vector<Group> groups, const In *x, Out *y, Op op,
                  Finish<Acc, Out> fin) {
  int stages = 0;
  int64_t numel = 1;
  for (const Group &g : groups) {
    stages += g.reduced ? 1 : 0;
    numel *= g.extent;
  }
  // Stage i's result holds numel / (product of the first i+1 reduced
  // extents, innermost first) elements; the first two are the largest.
  std::vector<int64_t> sizes;
  int64_t left = numel;
  for (int i = static_cast<int>(groups.size()) - 1; i >= 0; --i)
    if (groups[i].reduced) {
      left /= groups[i].extent;
      sizes.push_back(left);
    }
  Acc *buffers[2] = {nullptr, nullptr};
  if (stages > 1) {
    const int64_t first = (sizes[0] + 63) / 64 * 64;
    Acc *base = static_cast<Acc *>(
        scratch(static_cast<size_t>(first + (stages > 2 ? sizes[1] : 0)) *
                sizeof(Acc)));
    buffers[0] = base;
    buffers[1] = base + first;
  }
  const Acc *src = nullptr;
  for (int stage = 0; stage < stages; ++stage) {
    int g = static_cast<int>(groups.size()) - 1;
    while (!groups[g].reduced)
      --g;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < g; ++i)
      outer *= groups[i].extent;
    for (int i = g + 1; i < static_cast<int>(groups.size()); ++i)
      inner *= groups[i].extent;
    const int64_t R = groups[g].extent;
    const bool last = stage == stages - 1;
    Acc *dst = last ? nullptr : buffers[stage % 2];
    if (stage == 0 && last)
      reduceStage(x, y, outer, R, inner, op, fin, true);
    else if (stage == 0)
      reduceStage(x, dst, outer, R, inner, op, Finish<Acc, Acc>(), false);
    else if (last)
      reduceStage(src, y, outer, R, inner, op, fin, false);
    else
      reduceStage(src, dst, outer, R, inner, op, Finish<Acc, Acc>(), false);
    src = dst;
    // Drop the group; its kept neighbours become one.
    groups.erase(groups.begin() + g);
    if (g > 0 && g < static_cast<int>(groups.size()) &&
        !groups[g - 1].reduced && !groups[g].reduced) {
      groups[g - 1].extent *= groups[g].extent;
      groups.erase(groups.begin() + g);
    }
  }
}

template <class In, class Out, class Acc>
void reduceTyped(const cpu::KernelArgs &args, int64_t op,
                 const std::vector<Group> &groups, int64_t outCount,
                 int64_t reducedCount) {
  const In *x = args.tensor(0).as<In>();
  Out *y = args.tensor(1).as<Out>();
  const bool isMax = op == WEFT_REDUCE_MAX;
  const bool mean = op == WEFT_REDUCE_MEAN;
  if (reducedCount == 0) { // empty reduction: identity (mean: NaN)
    Acc v = isMax ? (std::numeric_limits<Acc>::has_infinity
                         ? -std::numeric_limits<Acc>::infinity()
                         : std::numeric_limits<Acc>::lowest())
                  : Acc(0);
    if constexpr (std::is_floating_point_v<Acc>)
      if (mean)
        v = std::numeric_limits<Acc>::quiet_NaN();
    Out out;
    if constexpr (std::is_same_v<Out, BF16>)
      out = BF16{floatToBFloat16(v)};
    else
      out = static_cast<Out>(v);
    if (outCount > 0) {
      fill<<<blocksFor(outCount), kBlock, 0, computeStream()>>>(y, outCount,
                                                                out);
      checkLaunch("reduce");
    }
    return;
  }
  if (!std::is_floating_point_v<Acc> && mean)
    fatal(kExitFailure, "kernel %s: mean is not defined for dtype %s",
          args.kernel(), cpu::dtypeName(args.tensor(0).dtype));
  if (outCount == 0)
    return;
  Finish<Acc, Out> fin;
  fin.mean = mean;
  fin.count = static_cast<Acc>(reducedCount);
  bool anyReduced = false;
  for (const Group &g : groups)
    anyReduced = anyReduced || g.reduced;
  if (!anyReduced)
    return launchMap(x, y, outCount, CopyOp<In, Acc, Out>{}, "reduce");
  if (isMax)
    reduceGroups(groups, x, y, MaxOp<Acc>(), fin);
  else
    reduceGroups(groups, x, y, SumOp<Acc>(), fin);
}

} // namespace

extern "C" void weft_cuda_k_reduce(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("reduce", bufs, desc);
  args.expectTensors(2, 2);
  args.expectAttrs(2);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &y = args.tensor(1);
  // bf16 runs as f32 (the CPU kernel widens it), so bf16 and f32 mix.
  const int64_t xType = x.dtype == WEFT_BF16 ? int64_t(WEFT_F32) : x.dtype;
  const int64_t yType = y.dtype == WEFT_BF16 ? int64_t(WEFT_F32) : y.dtype;
  if (yType != xType)
    fatal(kExitFailure, "kernel reduce: tensor 1 is %s, expected %s",
          cpu::dtypeName(yType), cpu::dtypeName(xType));
  const cpu::ReduceAxes spec = cpu::checkReduceAxes(args, x, y);
  const int64_t op = spec.op;
  const bool *reducedAxis = spec.reduced;
  const int64_t reducedCount = spec.reducedCount, outCount = spec.outCount;

  // Merged dims, outermost first.
  std::vector<Group> groups;
  for (int d = 0; d < x.rank; ++d) {
    if (x.dims[d] == 1)
      continue;
    if (!groups.empty() && groups.back().reduced == reducedAxis[d])
      groups.back().extent *= x.dims[d];
    else
      groups.push_back({x.dims[d], reducedAxis[d]});
  }

  const bool bfIn = x.dtype == WEFT_BF16, bfOut = y.dtype == WEFT_BF16;
  switch (xType) {
  case WEFT_F32:
    if (bfIn && bfOut)
      return reduceTyped<BF16, BF16, float>(args, op, groups, outCount,
                                            reducedCount);
    if (bfIn)
      return reduceTyped<BF16, float, float>(args, op, groups, outCount,
                                             reducedCount);
    if (bfOut)
      return reduceTyped<float, BF16, float>(args, op, groups, outCount,
                                             reducedCount);
    return reduceTyped<float, float, float>(args, op, groups, outCount,
                                            reducedCount);
  case WEFT_F64:
    return reduceTyped<double, double, double>(args, op, groups, outCount,
                                               reducedCount);
  case WEFT_I64:
    return reduceTyped<int64_t, int64_t, int64_t>(args, op, groups, outCount,
                                                  reducedCount);
  case WEFT_I32:
    return reduceTyped<int32_t, int32_t, int32_t>(args, op, groups, outCount,
                                                  reducedCount);
  default:
    args.unsupportedDType(xType);
  }
}
