//===- Gather.cu - GPU gather and scatter_add kernels ---------------------===//
//
// gather moves whole rows (the elements after the axis), in the widest
// unit that divides them, with the checks of the CPU kernel
// (DataMovement.cpp); an index out of range is recorded in the device error
// word and its row of y is zeroed.
//
// scatter_add (gather's gradient, f32) must give the same bits on every
// run, so it uses no float atomics. The index positions are sorted by the
// row they name (CUB's radix sort is stable: equal rows keep position
// order), which makes every row of y a run of consecutive sorted
// positions. Runs are cut into segments at every multiple of kSegment
// sorted positions; one thread per (segment, column) sums its segment in
// order. A run that crosses no multiple of kSegment is one segment and
// writes its y row directly, summed from 0 in index order as the CPU
// kernel does (so such runs match it bit for bit); longer runs leave
// per-segment partial sums that a second pass adds in segment order. Every
// sum has a fixed order, whatever the GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/GatherIndices.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/DataKernelUtil.cuh"

#include <cub/device/device_radix_sort.cuh>

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::data;

namespace {

//===-- gather ------------------------------------------------------------===//

/// y[o, j, c] = data[o, idx[j], c] with rows of `rowDiv.divisor` units.
template <class U, class I, class Index, class Div>
__global__ void __launch_bounds__(kBlock)
    gatherRows(const U *data, const I *idx, U *y, Index total, Div rowDiv,
               Div nDiv, int64_t extent, int *error, int code) {
  const Index step = gridStep<Index>();
  for (Index t = gridStart<Index>(); t < total; t += step) {
    Index oj, c, o, j;
    rowDiv.divmod(t, oj, c);
    nDiv.divmod(oj, o, j);
    int64_t v = static_cast<int64_t>(idx[j]);
    if (v < -extent || v >= extent) {
      reportDeviceError(error, code);
      y[t] = U{};
      continue;
    }
    v = v < 0 ? v + extent : v;
    const int64_t row = static_cast<int64_t>(o) * extent + v;
    y[t] = data[row * static_cast<int64_t>(rowDiv.divisor) +
                static_cast<int64_t>(c)];
  }
}

int gatherErrorCode() {
  static const int code = registerDeviceError(
      "gather: index out of range [-extent, extent) of the data's axis");
  return code;
}

template <class I>
void gatherTyped(const cpu::TensorArg &data, const cpu::TensorArg &indices,
                 const cpu::TensorArg &y, int64_t axis) {
  const int code = gatherErrorCode();
  const int64_t n = indices.numel;
  const int64_t extent = data.dims[axis];
  const int64_t outer = data.extent(0, static_cast<int>(axis));
  const int64_t rowBytes =
      data.extent(static_cast<int>(axis) + 1, data.rank) * data.elemSize();
  int64_t unit = 16;
  while (unit > 1 && (rowBytes % unit != 0 || !aligned(data.data, unit) ||
                      !aligned(y.data, unit)))
    unit /= 2;
  const int64_t rowUnits = rowBytes / unit;
  const int64_t total = outer * n * rowUnits;
  const int blocks = blocksFor(total);
  const I *idx = indices.as<I>();
  dispatchUnit(unit, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U *src = static_cast<const U *>(data.data);
    U *dst = static_cast<U *>(y.data);
    cudaStream_t s = computeStream();
    if (total <= kInt32Limit)
      gatherRows<<<blocks, kBlock, 0, s>>>(
          src, idx, dst, static_cast<uint32_t>(total),
          IntDivider(static_cast<uint32_t>(rowUnits)),
          IntDivider(static_cast<uint32_t>(n)), extent, errorWord(), code);
    else
      gatherRows<<<blocks, kBlock, 0, s>>>(src, idx, dst, total,
                                           Divider64(rowUnits), Divider64(n),
                                           extent, errorWord(), code);
  });
  checkLaunch("gather");
}

//===-- scatter_add -------------------------------------------------------===//

/// Sorted positions per segment; a power of two.
constexpr int64_t kSegment = 32;

/// keys[j] = the row index j names (`extent` for an index out of range,
/// which sorts last and is skipped), pos[j] = j.
template <class I>
__global__ void __launch_bounds__(kBlock)
    makeKeys(const I *idx, int64_t n, int64_t extent, uint32_t *keys,
             int32_t *pos, int *error, int code) {
  const int64_t step = gridStep<int64_t>();
  for (int64_t j = gridStart<int64_t>(); j < n; j += step) {
    const int64_t v = static_cast<int64_t>(idx[j]);
    int64_t key = v < 0 ? v + extent : v;
    if (v < -extent || v >= extent) {
      reportDeviceError(error, code);
      key = extent;
    }
    keys[j] = static_cast<uint32_t>(key);
    pos[j] = static_cast<int32_t>(j);
  }
}

/// Slot of the partial sum of the segment starting at sorted position p
/// (not the whole run): 2b for the one starting at the block boundary
/// b * kSegment, 2b + 1 for the one starting inside block b (a run start,
/// running to the end of the block).
static __device__ inline int64_t segmentSlot(int64_t p) {
  return 2 * (p / kSegment) + (p % kSegment != 0 ? 1 : 0);
}

/// The shape of one scatter_add: y [outer, extent, inner], updates
/// [outer, n, inner], keys and pos sorted (n of each).
struct ScatterShape {
  const float *updates;
  float *y;
  float *partial; // [2 * ceil(n / kSegment), outer, inner]
  const uint32_t *keys;
  const int32_t *pos;
  int64_t n, extent, outer, inner;
};

/// Item t = (o, p, c), c fastest.
template <class Index, class Div>
static __device__ inline void splitItem(Index t, const Div &colDiv,
                                        const Div &posDiv, int64_t &o,
                                        int64_t &p, int64_t &c) {
  Index op, ci, oi, pi;
  colDiv.divmod(t, op, ci);
  posDiv.divmod(op, oi, pi);
  o = static_cast<int64_t>(oi);
  p = static_cast<int64_t>(pi);
  c = static_cast<int64_t>(ci);
}

/// Pass 1: one thread per (o, segment start p, c) sums the segment.
template <class Index, class Div>
__global__ void __launch_bounds__(kBlock)
    scatterSegments(ScatterShape s, Index total, Div colDiv, Div posDiv) {
  const Index step = gridStep<Index>();
  const uint32_t sentinel = static_cast<uint32_t>(s.extent);
  for (Index t = gridStart<Index>(); t < total; t += step) {
    int64_t o, p, c;
    splitItem(t, colDiv, posDiv, o, p, c);
    const uint32_t k = s.keys[p];
    if (k == sentinel)
      continue;
    const bool runStart = p == 0 || s.keys[p - 1] != k;
    if (!runStart && p % kSegment != 0)
      continue;
    int64_t q = p + 1;
    while (q < s.n && q % kSegment != 0 && s.keys[q] == k)
      ++q;
    const float *u = s.updates + o * s.n * s.inner + c;
    float acc = 0.0f;
    for (int64_t i = p; i < q; ++i)
      acc += u[static_cast<int64_t>(s.pos[i]) * s.inner];
    if (runStart && (q == s.n || s.keys[q] != k))
      s.y[(o * s.extent + k) * s.inner + c] = acc;
    else
      s.partial[(segmentSlot(p) * s.outer + o) * s.inner + c] = acc;
  }
}

/// Pass 2: one thread per (o, run start p, c) of a run longer than its
/// first segment adds the run's partial sums in order.
template <class Index, class Div>
__global__ void __launch_bounds__(kBlock)
    scatterRuns(ScatterShape s, Index total, Div colDiv, Div posDiv) {
  const Index step = gridStep<Index>();
  const uint32_t sentinel = static_cast<uint32_t>(s.extent);
  for (Index t = gridStart<Index>(); t < total; t += step) {
    int64_t o, p, c;
    splitItem(t, colDiv, posDiv, o, p, c);
    const uint32_t k = s.keys[p];
    if (k == sentinel || (p > 0 && s.keys[p - 1] == k))
      continue;
    const int64_t next = (p / kSegment + 1) * kSegment;
    if (next >= s.n || s.keys[next] != k)
      continue;
    const float *part = s.partial + o * s.inner + c;
    const int64_t slotStride = s.outer * s.inner;
    float acc = 0.0f;
    acc += part[segmentSlot(p) * slotStride];
    for (int64_t b = next; b < s.n && s.keys[b] == k; b += kSegment)
      acc += part[segmentSlot(b) * slotStride];
    s.y[(o * s.extent + k) * s.inner + c] = acc;
  }
}

/// Bytes rounded up to the 256-byte alignment of the scratch carve-outs.
size_t carve(size_t bytes) { return (bytes + 255) / 256 * 256; }

int scatterErrorCode() {
  static const int code = registerDeviceError(
      "scatter_add: index out of range [-extent, extent) of the result's "
      "axis");
  return code;
}

template <class I>
void scatterAddTyped(const cpu::KernelArgs &args, const cpu::TensorArg &indices,
                     const cpu::TensorArg &updates, const cpu::TensorArg &y,
                     int64_t axis) {
  const int code = scatterErrorCode();
  const int64_t n = indices.numel;
  const int64_t extent = y.dims[axis];
  if (n > kInt32Limit || extent >= int64_t(0xffffffff))
    args.invalid("too many indices or rows for the GPU kernel");
  zero(y.data, static_cast<size_t>(y.bytes()));
  if (n == 0)
    return;
  const int64_t outer = y.extent(0, static_cast<int>(axis));
  const int64_t inner = y.extent(static_cast<int>(axis) + 1, y.rank);
  int endBit = 1;
  while (endBit < 32 && (static_cast<uint64_t>(extent) >> endBit) != 0)
    ++endBit;

  // One scratch buffer holds both key and position buffers of the sort,
  // the partial sums and CUB's temporary storage.
  const size_t keyBytes = carve(static_cast<size_t>(n) * sizeof(uint32_t));
  const size_t posBytes = carve(static_cast<size_t>(n) * sizeof(int32_t));
  const int64_t slots = 2 * ((n + kSegment - 1) / kSegment);
  const size_t partialBytes =
      carve(static_cast<size_t>(slots * outer * inner) * sizeof(float));
  size_t sortBytes = 0;
  cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr);
  cub::DoubleBuffer<int32_t> pos(nullptr, nullptr);
  check(cub::DeviceRadixSort::SortPairs(nullptr, sortBytes, keys, pos,
                                        static_cast<int>(n), 0, endBit,
                                        computeStream()),
        "kernel scatter_add: sizing the sort");
  char *base = static_cast<char *>(
      scratch(2 * keyBytes + 2 * posBytes + partialBytes + carve(sortBytes)));
  keys = cub::DoubleBuffer<uint32_t>(
      reinterpret_cast<uint32_t *>(base),
      reinterpret_cast<uint32_t *>(base + keyBytes));
  base += 2 * keyBytes;
  pos =
      cub::DoubleBuffer<int32_t>(reinterpret_cast<int32_t *>(base),
                                 reinterpret_cast<int32_t *>(base + posBytes));
  base += 2 * posBytes;
  float *partial = reinterpret_cast<float *>(base);
  void *sortTemp = base + partialBytes;

  cudaStream_t stream = computeStream();
  makeKeys<<<blocksFor(n), kBlock, 0, stream>>>(indices.as<I>(), n, extent,
                                                keys.Current(), pos.Current(),
                                                errorWord(), code);
  checkLaunch("scatter_add");
  if (y.numel == 0)
    return;
  check(cub::DeviceRadixSort::SortPairs(sortTemp, sortBytes, keys, pos,
                                        static_cast<int>(n), 0, endBit, stream),
        "kernel scatter_add: sorting the indices");

  const ScatterShape shape{updates.as<float>(),
                           y.as<float>(),
                           partial,
                           keys.Current(),
                           pos.Current(),
                           n,
                           extent,
                           outer,
                           inner};
  const int64_t total = outer * n * inner;
  const int blocks = blocksFor(total);
  if (total <= kInt32Limit) {
    const auto items = static_cast<uint32_t>(total);
    const IntDivider cols(static_cast<uint32_t>(inner));
    const IntDivider rows(static_cast<uint32_t>(n));
    scatterSegments<<<blocks, kBlock, 0, stream>>>(shape, items, cols, rows);
    scatterRuns<<<blocks, kBlock, 0, stream>>>(shape, items, cols, rows);
  } else {
    const Divider64 cols(inner), rows(n);
    scatterSegments<<<blocks, kBlock, 0, stream>>>(shape, total, cols, rows);
    scatterRuns<<<blocks, kBlock, 0, stream>>>(shape, total, cols, rows);
  }
  checkLaunch("scatter_add");
}

} // namespace

extern "C" void weft_cuda_k_gather(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("gather", bufs, desc);
  const int64_t axis = cpu::checkGather(args);
  const cpu::TensorArg &data = args.tensor(0);
  const cpu::TensorArg &indices = args.tensor(1);
  const cpu::TensorArg &y = args.tensor(2);
  if (y.numel == 0)
    return;
  if (indices.dtype == WEFT_I64)
    gatherTyped<int64_t>(data, indices, y, axis);
  else if (indices.dtype == WEFT_I32)
    gatherTyped<int32_t>(data, indices, y, axis);
  else
    args.unsupportedDType(indices.dtype);
}

extern "C" void weft_cuda_k_scatter_add(void *const *bufs,
                                        const int64_t *desc) {
  cpu::KernelArgs args("scatter_add", bufs, desc);
  args.expectTensors(3, 3);
  args.expectAttrs(1);
  const cpu::TensorArg &indices = args.tensor(0);
  const cpu::TensorArg &updates = args.tensor(1);
  const cpu::TensorArg &y = args.tensor(2);
  args.expectDType(1, WEFT_F32);
  args.expectDType(2, WEFT_F32);
  const int64_t axis = args.attr(0);
  if (axis < 0 || axis >= y.rank)
    args.invalid("axis out of range");
  if (updates.numel != y.extent(0, static_cast<int>(axis)) * indices.numel *
                           y.extent(static_cast<int>(axis) + 1, y.rank))
    args.invalid("updates size does not match the result and indices");
  if (indices.dtype == WEFT_I64)
    scatterAddTyped<int64_t>(args, indices, updates, y, axis);
  else if (indices.dtype == WEFT_I32)
    scatterAddTyped<int32_t>(args, indices, updates, y, axis);
  else
    args.unsupportedDType(indices.dtype);
}
