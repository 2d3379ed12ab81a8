//===- Collectives.cpp - The collective kernels of KernelABI.h ------------===//
//
// all_reduce, all_gather, reduce_scatter and all_slice over the groups of
// the device mesh (Comm.h). Blocks of a dim other than the leading one are
// not contiguous: gathers receive into rank-major scratch and interleave,
// reduce-scatters pack before sending. bf16 is reduced in f32 (widened,
// reduced, rounded once). A group of one rank copies.
//
//===----------------------------------------------------------------------===//
#include "CommInternal.h"

#include "../kernels/cpu/KernelArgs.h"
#include "weft/runtime/Float16.h"

#include <cstring>
#include <vector>

using namespace weft;
using namespace weft::cpu;

namespace {

/// The mesh axes at attribute `at` ([count, axes...]).
struct Axes {
  const int64_t *axes;
  int64_t count;
};

Axes readAxes(const KernelArgs &args, int64_t at) {
  args.expectAttrs(at + 1);
  int64_t count = args.attr(at);
  if (count < 0)
    args.invalid("negative number of mesh axes");
  const int64_t *axes = args.attrArray(at + 1, count);
  for (int64_t i = 0; i < count; ++i)
    if (axes[i] < 0 ||
        (comm::active() &&
         axes[i] >= static_cast<int64_t>(comm::meshShape().size())))
      args.invalid("mesh axis out of range");
  return {axes, count};
}

/// Checks that `big` is `small`'s g blocks joined along `dim` (all_gather's
/// result, reduce_scatter's and all_slice's operand).
void expectBlocks(const KernelArgs &args, const TensorArg &small,
                  const TensorArg &big, int64_t dim, int64_t g) {
  if (dim < 0 || dim >= small.rank || small.rank != big.rank ||
      big.dim(static_cast<int>(dim)) != small.dim(static_cast<int>(dim)) * g ||
      big.numel != small.numel * g)
    args.invalid("the tensors are not one block and its group's blocks "
                 "joined along the given dim");
}

/// [outer, d * inner] view of a tensor around dim `dim`.
struct Split {
  int64_t outer = 1, inner = 1;
};

Split around(const TensorArg &t, int64_t dim) {
  Split s;
  for (int64_t d = 0; d < dim; ++d)
    s.outer *= t.dim(static_cast<int>(d));
  for (int64_t d = dim + 1; d < t.rank; ++d)
    s.inner *= t.dim(static_cast<int>(d));
  return s;
}

#if WEFT_HAVE_MPI
MPI_Datatype mpiType(const KernelArgs &args, int64_t dtype) {
  switch (dtype) {
  case WEFT_F32:
    return MPI_FLOAT;
  case WEFT_F64:
    return MPI_DOUBLE;
  case WEFT_I64:
    return MPI_INT64_T;
  case WEFT_I32:
    return MPI_INT32_T;
  default:
    args.unsupportedDType(dtype);
  }
}

MPI_Op mpiOp(const KernelArgs &args, int64_t reduction) {
  switch (reduction) {
  case 0:
    return MPI_SUM;
  case 1:
    return MPI_MAX;
  case 2:
    return MPI_MIN;
  default:
    args.invalid("unknown reduction");
  }
}
#endif

/// Runs `reduce` on f32 copies of bf16 data (widened, then rounded back).
template <class F>
void inF32(const TensorArg &x, const TensorArg &y, F &&reduce) {
  std::vector<float> in(static_cast<size_t>(x.numel)),
      out(static_cast<size_t>(y.numel));
  const uint16_t *px = x.as<uint16_t>();
  for (int64_t i = 0; i < x.numel; ++i)
    in[i] = bfloat16ToFloat(px[i]);
  reduce(in.data(), out.data());
  uint16_t *py = y.as<uint16_t>();
  for (int64_t i = 0; i < y.numel; ++i)
    py[i] = floatToBFloat16(out[i]);
}

/// The common head of every collective call: x -> y of one dtype,
/// `leading` attributes, then the mesh axes of the group.
struct CollectiveCall {
  CollectiveCall(const char *kernel, void *const *bufs, const int64_t *desc,
                 int64_t leading)
      : args(kernel, bufs, desc) {
    args.expectTensors(2, 2);
    args.expectDType(1, args.tensor(0).dtype);
    args.expectAttrs(leading);
    axes = readAxes(args, leading);
    groupSize = comm::groupSize(axes.axes, axes.count);
  }
  KernelArgs args;
  Axes axes{nullptr, 0};
  int64_t groupSize = 1;
  const TensorArg &x() const { return args.tensor(0); }
  const TensorArg &y() const { return args.tensor(1); }
};

} // namespace

extern "C" void weft_k_all_reduce(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("all_reduce", bufs, desc, 1);
  const KernelArgs &args = call.args;
  const TensorArg &x = call.x(), &y = call.y();
  const Axes a = call.axes;
  args.expectSameNumel(0, 1);
  int64_t reduction = args.attr(0);
  if (call.groupSize == 1 || !comm::active()) {
    if (x.data != y.data)
      std::memcpy(y.data, x.data, static_cast<size_t>(x.bytes()));
    return;
  }
#if WEFT_HAVE_MPI
  MPI_Comm group = comm::group(a.axes, a.count);
  auto run = [&](const void *in, void *out, MPI_Datatype type, int64_t n) {
    MPI_Request request;
    MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out, static_cast<int>(n),
                   type, mpiOp(args, reduction), group, &request);
    comm::wait(request, "all_reduce", a.axes, a.count);
  };
  if (x.dtype == WEFT_BF16)
    return inF32(
        x, y, [&](float *in, float *out) { run(in, out, MPI_FLOAT, x.numel); });
  run(x.data, y.data, mpiType(args, x.dtype), x.numel);
#endif
}

extern "C" void weft_k_all_gather(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("all_gather", bufs, desc, 1);
  const KernelArgs &args = call.args;
  const TensorArg &x = call.x(), &y = call.y();
  const Axes a = call.axes;
  const int64_t dim = args.attr(0), g = call.groupSize;
  expectBlocks(args, x, y, dim, g);
  if (g == 1 || !comm::active()) {
    std::memcpy(y.data, x.data, static_cast<size_t>(x.bytes()));
    return;
  }
#if WEFT_HAVE_MPI
  Split s = around(x, dim);
  const int64_t block = x.bytes(); // one rank's contribution
  const bool leading = s.outer == 1;
  std::vector<uint8_t> scratch(leading ? 0 : static_cast<size_t>(y.bytes()));
  void *recv = leading ? y.data : scratch.data();
  MPI_Request request;
  MPI_Iallgather(x.data, static_cast<int>(block), MPI_BYTE, recv,
                 static_cast<int>(block), MPI_BYTE,
                 comm::group(a.axes, a.count), &request);
  comm::wait(request, "all_gather", a.axes, a.count);
  if (leading)
    return;
  // scratch is [g][outer][d * inner]; y is [outer][g][d * inner].
  const int64_t row = x.dim(static_cast<int>(dim)) * s.inner * x.elemSize();
  uint8_t *py = y.as<uint8_t>();
  for (int64_t r = 0; r < g; ++r)
    for (int64_t o = 0; o < s.outer; ++o)
      std::memcpy(py + (o * g + r) * row, scratch.data() + r * block + o * row,
                  static_cast<size_t>(row));
#endif
}

extern "C" void weft_k_reduce_scatter(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("reduce_scatter", bufs, desc, 2);
  const KernelArgs &args = call.args;
  const TensorArg &x = call.x(), &y = call.y();
  const Axes a = call.axes;
  const int64_t reduction = args.attr(0), dim = args.attr(1),
                g = call.groupSize;
  expectBlocks(args, y, x, dim, g);
  if (g == 1 || !comm::active()) {
    std::memcpy(y.data, x.data, static_cast<size_t>(y.bytes()));
    return;
  }
#if WEFT_HAVE_MPI
  Split s = around(y, dim);
  const int64_t elem = x.elemSize();
  const int64_t row = y.dim(static_cast<int>(dim)) * s.inner * elem;
  // Pack x [outer][g][d * inner] into [g][outer][d * inner] unless the
  // blocks are already contiguous.
  std::vector<uint8_t> packed;
  const void *send = x.data;
  if (s.outer > 1) {
    packed.resize(static_cast<size_t>(x.bytes()));
    const uint8_t *px = x.as<uint8_t>();
    for (int64_t r = 0; r < g; ++r)
      for (int64_t o = 0; o < s.outer; ++o)
        std::memcpy(packed.data() + (r * s.outer + o) * row,
                    px + (o * g + r) * row, static_cast<size_t>(row));
    send = packed.data();
  }
  MPI_Comm group = comm::group(a.axes, a.count);
  auto run = [&](const void *in, void *out, MPI_Datatype type) {
    MPI_Request request;
    MPI_Ireduce_scatter_block(in, out, static_cast<int>(y.numel), type,
                              mpiOp(args, reduction), group, &request);
    comm::wait(request, "reduce_scatter", a.axes, a.count);
  };
  if (x.dtype == WEFT_BF16) {
    TensorArg packedX = x;
    packedX.data = const_cast<void *>(send);
    return inF32(packedX, y,
                 [&](float *in, float *out) { run(in, out, MPI_FLOAT); });
  }
  run(send, y.data, mpiType(args, x.dtype));
#endif
}

extern "C" void weft_k_all_slice(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("all_slice", bufs, desc, 1);
  const KernelArgs &args = call.args;
  const TensorArg &x = call.x(), &y = call.y();
  const Axes a = call.axes;
  const int64_t dim = args.attr(0), g = call.groupSize;
  expectBlocks(args, y, x, dim, g);
  // This rank's block: no communication.
  int64_t index = comm::groupIndex(a.axes, a.count);
  Split s = around(y, dim);
  const int64_t row = y.dim(static_cast<int>(dim)) * s.inner * x.elemSize();
  const uint8_t *px = x.as<uint8_t>();
  uint8_t *py = y.as<uint8_t>();
  for (int64_t o = 0; o < s.outer; ++o)
    std::memcpy(py + o * row, px + (o * g + index) * row,
                static_cast<size_t>(row));
}
