//===- DataMovement.cu - GPU kernels that only move elements --------------===//
//
// expand, trilu, transpose, concat, split, slice, slice_grad and copy, for
// every dtype (slice_grad: f32), with the checks and messages of the CPU
// kernels (DataMovement.cpp, DataMovementGrad.cpp, Transpose.cpp, whose
// plans they reuse).
//
// Most of them are one strided copy: a contiguous range of elements and a
// strided view of another tensor (a slice, a broadcast, a transpose that
// keeps the innermost dim). When the view's innermost dim is contiguous,
// elements are moved in the widest unit (up to 16 bytes) that divides its
// rows, strides and both pointers. Transposes that move the innermost dim
// go through shared-memory tiles so reads and writes both coalesce.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/DataKernelUtil.cuh"

#include "runtime/kernels/cpu/Broadcast.h"
#include "runtime/kernels/cpu/DTypes.h"
#include "runtime/kernels/cpu/SlicePlan.h"

#include <algorithm>

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::data;

namespace {

/// Enqueues a device-to-device copy on the compute stream.
void copyAsync(void *dst, const void *src, int64_t bytes, const char *kernel) {
  if (bytes == 0 || dst == src)
    return;
  cudaError_t err = cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes),
                                    cudaMemcpyDeviceToDevice, computeStream());
  if (err != cudaSuccess)
    fatal(kExitFailure, "kernel %s: copy failed: CUDA error %s (%s)", kernel,
          cudaGetErrorName(err), cudaGetErrorString(err));
}

//===-- strided copies ----------------------------------------------------===//

/// Gather: contig[i] = view[off(i)]; scatter: view[off(i)] = contig[i].
template <class U, class Calc, bool kScatter>
__global__ void __launch_bounds__(kBlock)
    stridedCopy(U *view, U *contig, typename Calc::Index n,
                const __grid_constant__ Calc calc) {
  using Index = typename Calc::Index;
  const Index step = gridStep<Index>();
  for (Index i = gridStart<Index>(); i < n; i += step) {
    typename Calc::Offset off[1];
    calc.get(i, off);
    if (kScatter)
      view[off[0]] = contig[i];
    else
      contig[i] = view[off[0]];
  }
}

/// Moves the n elements (of `elemSize` bytes) of a contiguous range to or
/// from the strided view at `view`: dims[rank] and strides[rank] in
/// elements, outermost first; offsets from `view` lie within `addressed`
/// elements either way.
void copyStrided(char *view, char *contig, int rank, const int64_t *dimsIn,
                 const int64_t *stridesIn, int64_t n, int64_t elemSize,
                 int64_t addressed, bool scatter, const char *kernel) {
  if (n == 0)
    return;
  int64_t dims[kMaxRank];
  int64_t strides[1][kMaxRank];
  std::copy(dimsIn, dimsIn + rank, dims);
  std::copy(stridesIn, stridesIn + rank, strides[0]);
  const int last = rank - 1;
  int64_t unit = elemSize;
  if (strides[0][last] == 1) {
    for (int64_t u = 16; u > elemSize; u /= 2) {
      bool fits = (dims[last] * elemSize) % u == 0 && aligned(view, u) &&
                  aligned(contig, u);
      for (int d = 0; d < last && fits; ++d)
        fits = (strides[0][d] * elemSize) % u == 0;
      if (fits) {
        unit = u;
        break;
      }
    }
  }
  if (unit != elemSize) {
    const int64_t f = unit / elemSize;
    dims[last] /= f;
    for (int d = 0; d < last; ++d)
      strides[0][d] /= f;
    n /= f;
    addressed = addressed / f + 1;
  }
  if (rank == 1 && strides[0][0] == 1) {
    if (scatter)
      copyAsync(view, contig, n * unit, kernel);
    else
      copyAsync(contig, view, n * unit, kernel);
    return;
  }
  dispatchUnit(unit, [&](auto tag) {
    using U = typename decltype(tag)::type;
    withOffsets<1>(rank, dims, strides, n, addressed, [&](auto calc) {
      using Calc = decltype(calc);
      const auto count = static_cast<typename Calc::Index>(n);
      U *v = reinterpret_cast<U *>(view);
      U *c = reinterpret_cast<U *>(contig);
      if (scatter)
        stridedCopy<U, Calc, true>
            <<<blocksFor(n), kBlock, 0, computeStream()>>>(v, c, count, calc);
      else
        stridedCopy<U, Calc, false>
            <<<blocksFor(n), kBlock, 0, computeStream()>>>(v, c, count, calc);
    });
  });
  checkLaunch(kernel);
}

//===-- transpose ---------------------------------------------------------===//

constexpr int kTile = 32;
constexpr int kTileRows = 8;

/// A transpose whose innermost output dim `l` is strided in x, walked in
/// 32x32 tiles of the plane of l and of the dim `q` that is contiguous in
/// x, over the remaining (outer) dims. Tile t is (outer o, q tile, l tile),
/// l tile fastest; with `small` (fewer than 2^31 tiles) its indices come
/// from magic division rather than 64-bit `/`.
struct TileParams {
  int nOuter = 0;
  bool small = false;
  int64_t outerExtent[kMaxRank] = {};
  int64_t outerIn[kMaxRank] = {};
  int64_t outerOut[kMaxRank] = {};
  IntDivider outerDiv[kMaxRank];
  IntDivider tilesLDiv, tilesQDiv;
  int64_t eq = 0, el = 0; // extents of q and l
  int64_t isl = 0;        // x's stride along l
  int64_t osq = 0;        // y's stride along q
  int64_t tilesQ = 0, tilesL = 0, total = 0;
};

template <class U>
__global__ void __launch_bounds__(kTile *kTileRows)
    transposeTiles(const U *x, U *y, const __grid_constant__ TileParams p) {
  // One padding column keeps the column reads free of bank conflicts.
  __shared__ U tile[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t t = blockIdx.x; t < p.total; t += gridDim.x) {
    int64_t tl, tq, inOff = 0, outOff = 0;
    if (p.small) {
      uint32_t rest, l, q, o, idx;
      p.tilesLDiv.divmod(static_cast<uint32_t>(t), rest, l);
      p.tilesQDiv.divmod(rest, o, q);
      tl = l;
      tq = q;
      for (int i = p.nOuter - 1; i >= 0; --i) {
        p.outerDiv[i].divmod(o, rest, idx);
        o = rest;
        inOff += idx * p.outerIn[i];
        outOff += idx * p.outerOut[i];
      }
    } else {
      tl = t % p.tilesL;
      tq = (t / p.tilesL) % p.tilesQ;
      int64_t o = t / (p.tilesL * p.tilesQ);
      for (int i = p.nOuter - 1; i >= 0; --i) {
        const int64_t idx = o % p.outerExtent[i];
        o /= p.outerExtent[i];
        inOff += idx * p.outerIn[i];
        outOff += idx * p.outerOut[i];
      }
    }
    const int64_t q0 = tq * kTile, l0 = tl * kTile;
    // Reads: a warp takes consecutive q (contiguous in x).
    for (int j = ty; j < kTile; j += kTileRows) {
      const int64_t l = l0 + j, q = q0 + tx;
      if (l < p.el && q < p.eq)
        tile[j][tx] = x[inOff + q + l * p.isl];
    }
    __syncthreads();
    // Writes: a warp takes consecutive l (contiguous in y).
    for (int j = ty; j < kTile; j += kTileRows) {
      const int64_t q = q0 + j, l = l0 + tx;
      if (q < p.eq && l < p.el)
        y[outOff + q * p.osq + l] = tile[tx][j];
    }
    __syncthreads();
  }
}

//===-- concat and split --------------------------------------------------===//

constexpr int kPiecesPerLaunch = 16;

/// Up to kPiecesPerLaunch pieces of `units` units each: rows of `rowUnits`
/// units that sit at unit offset `offUnits` in the rows of the whole
/// tensor (rowDiv divides by rowUnits on the 32-bit path).
struct PieceBatch {
  int count = 0;
  void *ptr[kPiecesPerLaunch] = {};
  int64_t rowUnits[kPiecesPerLaunch] = {};
  int64_t offUnits[kPiecesPerLaunch] = {};
  int64_t units[kPiecesPerLaunch] = {};
  IntDivider rowDiv[kPiecesPerLaunch];
};

/// blockIdx.y picks the piece. kConcat: whole <- pieces, else pieces <-
/// whole. k32: the whole tensor has fewer than 2^31 units.
template <class U, bool kConcat, bool k32>
__global__ void __launch_bounds__(kBlock)
    movePieces(U *whole, int64_t wholeRow,
               const __grid_constant__ PieceBatch b) {
  const int k = blockIdx.y;
  U *piece = static_cast<U *>(b.ptr[k]);
  if (k32) {
    const uint32_t n = static_cast<uint32_t>(b.units[k]);
    const uint32_t row = static_cast<uint32_t>(wholeRow);
    const uint32_t off = static_cast<uint32_t>(b.offUnits[k]);
    const uint32_t step = gridStep<uint32_t>();
    for (uint32_t i = gridStart<uint32_t>(); i < n; i += step) {
      uint32_t o, c;
      b.rowDiv[k].divmod(i, o, c);
      const uint32_t w = o * row + off + c;
      if (kConcat)
        whole[w] = piece[i];
      else
        piece[i] = whole[w];
    }
  } else {
    const int64_t n = b.units[k], len = b.rowUnits[k];
    const int64_t step = gridStep<int64_t>();
    for (int64_t i = gridStart<int64_t>(); i < n; i += step) {
      const int64_t o = i / len;
      const int64_t w = o * wholeRow + b.offUnits[k] + (i - o * len);
      if (kConcat)
        whole[w] = piece[i];
      else
        piece[i] = whole[w];
    }
  }
}

/// Checks `axis` and that every tensor in [first, last) matches `ref`
/// except along `axis`; returns the sum of their extents along it.
int64_t checkPieces(const cpu::KernelArgs &args, const cpu::TensorArg &ref,
                    int64_t axis, int first, int last) {
  if (axis < 0 || axis >= ref.rank)
    args.invalid("axis out of range");
  int64_t total = 0;
  for (int i = first; i < last; ++i) {
    const cpu::TensorArg &t = args.tensor(i);
    if (t.dtype != ref.dtype || t.rank != ref.rank)
      args.invalid("pieces differ in dtype or rank");
    for (int d = 0; d < ref.rank; ++d)
      if (d != axis && t.dims[d] != ref.dims[d])
        args.invalid("pieces differ outside the axis");
    total += t.dims[axis];
  }
  return total;
}

void concatOrSplit(const cpu::KernelArgs &args, bool concat) {
  args.expectTensors(2, 1 << 20);
  args.expectAttrs(1);
  const int n = args.numTensors();
  const cpu::TensorArg &whole = concat ? args.tensor(n - 1) : args.tensor(0);
  const int first = concat ? 0 : 1, last = concat ? n - 1 : n;
  const int64_t axis = args.attr(0);
  if (checkPieces(args, whole, axis, first, last) != whole.dims[axis])
    args.invalid("piece extents do not add up along the axis");
  if (whole.numel == 0)
    return;
  const int64_t es = whole.elemSize();
  const int64_t outer = whole.extent(0, static_cast<int>(axis));
  const int64_t inner = whole.extent(static_cast<int>(axis) + 1, whole.rank);
  const int64_t wholeRow = whole.dims[axis] * inner * es;
  char *wholePtr = whole.as<char>();
  if (outer == 1) {
    // Each piece is one contiguous block of the whole.
    int64_t off = 0;
    for (int i = first; i < last; ++i) {
      const cpu::TensorArg &t = args.tensor(i);
      if (concat)
        copyAsync(wholePtr + off, t.data, t.bytes(), args.kernel());
      else
        copyAsync(t.data, wholePtr + off, t.bytes(), args.kernel());
      off += t.bytes();
    }
    return;
  }
  // The widest unit dividing every row, offset and pointer.
  int64_t unit = 16;
  for (; unit > 1; unit /= 2) {
    bool fits = wholeRow % unit == 0 && aligned(wholePtr, unit);
    for (int i = first; i < last && fits; ++i) {
      const cpu::TensorArg &t = args.tensor(i);
      fits = (t.dims[axis] * inner * es) % unit == 0 && aligned(t.data, unit);
    }
    if (fits)
      break;
  }
  const bool small = whole.numel * es / unit <= kInt32Limit;
  const int64_t wholeUnits = wholeRow / unit;
  PieceBatch batch;
  int64_t off = 0, largest = 0;
  auto flush = [&] {
    if (batch.count == 0)
      return;
    dim3 grid(static_cast<unsigned>(blocksFor(largest)),
              static_cast<unsigned>(batch.count));
    dispatchUnit(unit, [&](auto tag) {
      using U = typename decltype(tag)::type;
      U *w = reinterpret_cast<U *>(wholePtr);
      cudaStream_t s = computeStream();
      if (concat && small)
        movePieces<U, true, true><<<grid, kBlock, 0, s>>>(w, wholeUnits, batch);
      else if (concat)
        movePieces<U, true, false>
            <<<grid, kBlock, 0, s>>>(w, wholeUnits, batch);
      else if (small)
        movePieces<U, false, true>
            <<<grid, kBlock, 0, s>>>(w, wholeUnits, batch);
      else
        movePieces<U, false, false>
            <<<grid, kBlock, 0, s>>>(w, wholeUnits, batch);
    });
    checkLaunch(args.kernel());
    batch = PieceBatch();
    largest = 0;
  };
  for (int i = first; i < last; ++i) {
    const cpu::TensorArg &t = args.tensor(i);
    const int64_t rowUnits = t.dims[axis] * inner * es / unit;
    if (rowUnits > 0) {
      const int k = batch.count++;
      batch.ptr[k] = t.data;
      batch.rowUnits[k] = rowUnits;
      batch.offUnits[k] = off;
      batch.units[k] = rowUnits * outer;
      if (small)
        batch.rowDiv[k] = IntDivider(static_cast<uint32_t>(rowUnits));
      largest = std::max(largest, rowUnits * outer);
      if (batch.count == kPiecesPerLaunch)
        flush();
    }
    off += rowUnits;
  }
  flush();
}

//===-- trilu -------------------------------------------------------------===//

/// y = x with the elements outside the kept triangle zeroed; y may be x.
template <class U, class Index, class Div>
__global__ void __launch_bounds__(kBlock)
    triluKernel(const U *x, U *y, Index n, Div cols, Div rows, bool upper,
                int64_t k) {
  const Index step = gridStep<Index>();
  for (Index i = gridStart<Index>(); i < n; i += step) {
    Index r, j, matrix, row;
    cols.divmod(i, r, j);
    rows.divmod(r, matrix, row);
    // Kept columns: upper j >= row + k, lower j <= row + k.
    const int64_t edge = static_cast<int64_t>(row) + k;
    const bool keep = upper ? static_cast<int64_t>(j) >= edge
                            : static_cast<int64_t>(j) <= edge;
    y[i] = keep ? x[i] : U(0);
  }
}

} // namespace

extern "C" void weft_cuda_k_expand(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("expand", bufs, desc);
  args.expectTensors(2, 2);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &y = args.tensor(1);
  args.expectDType(1, x.dtype);
  const cpu::TensorArg *ins[1] = {&x};
  const cpu::BroadcastPlan<1> plan = cpu::makeBroadcastPlan(args, y, ins);
  copyStrided(x.as<char>(), y.as<char>(), plan.rank, plan.dims, plan.strides[0],
              plan.numel, x.elemSize(), x.numel, false, "expand");
}

extern "C" void weft_cuda_k_trilu(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("trilu", bufs, desc);
  args.expectTensors(2, 2);
  args.expectAttrs(2);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &y = args.tensor(1);
  args.expectDType(1, x.dtype);
  args.expectSameNumel(0, 1);
  if (x.rank < 2)
    args.invalid("input must have rank >= 2");
  const bool upper = args.attr(0) != 0;
  const int64_t k = args.attr(1);
  if (x.numel == 0)
    return;
  const int64_t m = x.dim(-2), n = x.dim(-1);
  cpu::dispatchByElementSize(x.elemSize(), args, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U *src = x.as<U>();
    U *dst = y.as<U>();
    const int blocks = blocksFor(x.numel);
    cudaStream_t s = computeStream();
    if (x.numel <= kInt32Limit)
      triluKernel<<<blocks, kBlock, 0, s>>>(
          src, dst, static_cast<uint32_t>(x.numel),
          IntDivider(static_cast<uint32_t>(n)),
          IntDivider(static_cast<uint32_t>(m)), upper, k);
    else
      triluKernel<<<blocks, kBlock, 0, s>>>(src, dst, x.numel, Divider64(n),
                                            Divider64(m), upper, k);
  });
  checkLaunch("trilu");
}

extern "C" void weft_cuda_k_transpose(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("transpose", bufs, desc);
  args.expectTensors(2, 2);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &y = args.tensor(1);
  args.expectDType(1, x.dtype);
  args.expectSameNumel(0, 1);
  const int64_t *perm = args.attrArray(0, x.rank);
  if (y.rank != x.rank)
    args.invalid("result rank differs from the input's");
  // Output dims in order with x's stride each: unit dims dropped, output
  // dims that stay adjacent in x merged (as the CPU kernel).
  int64_t xStride[kMaxRank];
  bool seen[kMaxRank] = {};
  int64_t s = 1;
  for (int d = x.rank - 1; d >= 0; --d) {
    xStride[d] = s;
    s *= x.dims[d];
  }
  int rank = 0;
  int64_t extent[kMaxRank], inStride[kMaxRank], outStride[kMaxRank];
  for (int i = 0; i < x.rank; ++i) {
    const int64_t d = perm[i];
    if (d < 0 || d >= x.rank || seen[d] || y.dims[i] != x.dims[d])
      args.invalid("perm is not a permutation matching the result dims");
    seen[d] = true;
    if (x.dims[d] == 1)
      continue;
    if (rank > 0 && inStride[rank - 1] == xStride[d] * x.dims[d]) {
      extent[rank - 1] *= x.dims[d];
      inStride[rank - 1] = xStride[d];
    } else {
      extent[rank] = x.dims[d];
      inStride[rank] = xStride[d];
      ++rank;
    }
  }
  if (x.numel == 0)
    return;
  if (rank <= 1)
    return copyAsync(y.data, x.data, x.bytes(), "transpose");
  if (inStride[rank - 1] == 1)
    return copyStrided(x.as<char>(), y.as<char>(), rank, extent, inStride,
                       x.numel, x.elemSize(), x.numel, false, "transpose");
  s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    outStride[i] = s;
    s *= extent[i];
  }
  int q = 0;
  while (inStride[q] != 1)
    ++q;
  const int l = rank - 1;
  TileParams p;
  for (int i = 0; i < rank; ++i) {
    if (i == q || i == l)
      continue;
    p.outerExtent[p.nOuter] = extent[i];
    p.outerIn[p.nOuter] = inStride[i];
    p.outerOut[p.nOuter] = outStride[i];
    ++p.nOuter;
  }
  p.eq = extent[q];
  p.el = extent[l];
  p.isl = inStride[l];
  p.osq = outStride[q];
  p.tilesQ = (p.eq + kTile - 1) / kTile;
  p.tilesL = (p.el + kTile - 1) / kTile;
  p.total = x.numel / (p.eq * p.el) * p.tilesQ * p.tilesL;
  p.small = p.total <= kInt32Limit;
  if (p.small) {
    p.tilesLDiv = IntDivider(static_cast<uint32_t>(p.tilesL));
    p.tilesQDiv = IntDivider(static_cast<uint32_t>(p.tilesQ));
    for (int i = 0; i < p.nOuter; ++i)
      p.outerDiv[i] = IntDivider(static_cast<uint32_t>(p.outerExtent[i]));
  }
  const int blocks = blocksFor(p.total * kBlock);
  const dim3 block(kTile, kTileRows);
  cpu::dispatchByElementSize(x.elemSize(), args, [&](auto tag) {
    using U = typename decltype(tag)::type;
    transposeTiles<U>
        <<<blocks, block, 0, computeStream()>>>(x.as<U>(), y.as<U>(), p);
  });
  checkLaunch("transpose");
}

extern "C" void weft_cuda_k_concat(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("concat", bufs, desc);
  concatOrSplit(args, true);
}

extern "C" void weft_cuda_k_split(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("split", bufs, desc);
  concatOrSplit(args, false);
}

extern "C" void weft_cuda_k_slice(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("slice", bufs, desc);
  args.expectTensors(2, 2);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &y = args.tensor(1);
  args.expectDType(1, x.dtype);
  if (y.rank != x.rank)
    args.invalid("result rank differs from the input's");
  const cpu::SlicePlan plan = cpu::makeSlicePlan(args, x, y);
  if (y.numel == 0)
    return;
  copyStrided(x.as<char>() + plan.base * x.elemSize(), y.as<char>(), plan.rank,
              plan.extent, plan.stride, y.numel, x.elemSize(), x.numel, false,
              "slice");
}

extern "C" void weft_cuda_k_slice_grad(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("slice_grad", bufs, desc);
  args.expectTensors(2, 2);
  args.expectDType(0, WEFT_F32);
  args.expectDType(1, WEFT_F32);
  const cpu::TensorArg &dy = args.tensor(0);
  const cpu::TensorArg &dx = args.tensor(1);
  if (dy.rank != dx.rank)
    args.invalid("gradient ranks differ");
  const cpu::SlicePlan plan = cpu::makeSlicePlan(args, dx, dy);
  zero(dx.data, static_cast<size_t>(dx.bytes()));
  if (dy.numel == 0)
    return;
  copyStrided(dx.as<char>() + plan.base * 4, dy.as<char>(), plan.rank,
              plan.extent, plan.stride, dy.numel, 4, dx.numel, true,
              "slice_grad");
}

extern "C" void weft_cuda_k_copy(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("copy", bufs, desc);
  args.expectTensors(2, 2);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &y = args.tensor(1);
  if (x.bytes() != y.bytes())
    args.invalid("input and result differ in byte size");
  copyAsync(y.data, x.data, x.bytes(), "copy");
}
