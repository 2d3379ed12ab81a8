//===- NcclCollectives.cpp - The collective kernels on device buffers -----===//
//
// all_reduce, all_gather, reduce_scatter, all_to_all and broadcast (each
// blocking and as *_start), comm_wait, comm_progress, all_slice and
// mesh_offset of KernelABI.h for --target cuda bundles: every buffer is
// device memory of this rank's GPU (NcclComm.h has the streams and slots).
//
// A blocking collective enqueues its NCCL work on its group's lane and
// makes the compute stream wait for it. A *_start returns once the work is
// enqueued; comm_wait makes the compute stream wait for it. The contract
// lets the compute kernels after a start overwrite x at once, so what the
// collective still needs of x is copied first, on the compute stream (y
// itself, untouched until the wait, serves when it can: x goes into y, or
// into its own block of y, and the collective runs in place).
//
// Blocks of a dim other than the leading one are not contiguous: gathers
// receive into group-major scratch that a copy on the lane interleaves into
// y, scatters pack x group-major first (CollectiveCall.h's BlockLayout,
// NcclKernels.h's copyRows). all_to_all is grouped ncclSend/ncclRecv with
// every member (its own block a device copy).
//
// Reductions: f32 and f64 average with ncclAvg; bf16, i64 and i32 sum and
// divide on the device after (bf16 in f32, rounded once; integers truncate
// as the CPU collectives do), since NCCL's average of those scales each
// contribution first. NCCL reduces bf16 natively, rounding at each step of
// its ring or tree, where the CPU backend sums in f32 and rounds once: the
// results agree within bf16's precision, not bit for bit.
//
// A group of one rank copies (device to device, on the compute stream).
// comm_progress does nothing: NCCL's kernels move the data on the GPU by
// themselves (and NCCL's own proxy thread drives the network), so unlike
// MPI nothing has to be polled from the host between a start and its wait.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/nccl/NcclComm.h"

#include "runtime/cuda/CudaRuntime.h"

#include <cstring>

using namespace weft;
using namespace weft::comm;
using namespace weft::nccl;
using cpu::TensorArg;

namespace {

DeviceComm &dc() { return DeviceComm::get(); }

/// NCCL's type for reducing `dtype`; fails naming the call for the others.
ncclDataType_t reductionType(const CollectiveCall &call, int64_t dtype) {
  switch (dtype) {
  case WEFT_F32:
    return ncclFloat32;
  case WEFT_F64:
    return ncclFloat64;
  case WEFT_BF16:
    return ncclBfloat16;
  case WEFT_I64:
    return ncclInt64;
  case WEFT_I32:
    return ncclInt32;
  default:
    call.fail(std::string("cannot reduce dtype ") + weftDTypeName(dtype) +
              " (f32, f64, bf16, i64 and i32 can be)");
  }
}

/// The NCCL operation of a reduction, and what to divide its result by.
struct ReduceOp {
  ncclRedOp_t op;
  int64_t divisor;
};

ReduceOp reduceOp(Reduction reduction, int64_t dtype, int64_t g) {
  switch (reduction) {
  case Reduction::Sum:
    return {ncclSum, 1};
  case Reduction::Max:
    return {ncclMax, 1};
  case Reduction::Min:
    return {ncclMin, 1};
  case Reduction::Avg:
    break;
  }
  if (dtype == WEFT_F32 || dtype == WEFT_F64)
    return {ncclAvg, 1};
  return {ncclSum, g};
}

/// A type that moves elements of `size` bytes unchanged (no arithmetic
/// touches them, so the 2-byte one may be a float type).
ncclDataType_t movementType(int64_t size) {
  switch (size) {
  case 8:
    return ncclUint64;
  case 4:
    return ncclUint32;
  case 2:
    return ncclFloat16;
  default:
    return ncclUint8;
  }
}

uint8_t *bytesAt(void *base, int64_t offset) {
  return static_cast<uint8_t *>(base) + offset;
}
const uint8_t *bytesAt(const void *base, int64_t offset) {
  return static_cast<const uint8_t *>(base) + offset;
}

/// whole [outer][g][row] -> packed [g][outer][row] on `stream`.
void packBlocks(const BlockLayout &layout, const void *whole, void *packed,
                cudaStream_t stream, DeviceComm &comm, const char *kernel) {
  if (layout.contiguous()) {
    const int64_t bytes = layout.blocks * layout.row;
    if (bytes > 0 && whole != packed)
      comm.checkCuda(cudaMemcpyAsync(packed, whole, static_cast<size_t>(bytes),
                                     cudaMemcpyDeviceToDevice, stream),
                     kernel);
    return;
  }
  copyRows(packed, whole, layout.blocks, layout.outer, layout.row,
           layout.outer * layout.row, layout.row, layout.row,
           layout.blocks * layout.row, stream);
}

/// packed [g][outer][row] -> whole [outer][g][row] on `stream`.
void unpackBlocks(const BlockLayout &layout, const void *packed, void *whole,
                  cudaStream_t stream, DeviceComm &comm, const char *kernel) {
  if (layout.contiguous()) {
    const int64_t bytes = layout.blocks * layout.row;
    if (bytes > 0 && whole != packed)
      comm.checkCuda(cudaMemcpyAsync(whole, packed, static_cast<size_t>(bytes),
                                     cudaMemcpyDeviceToDevice, stream),
                     kernel);
    return;
  }
  copyRows(whole, packed, layout.blocks, layout.outer, layout.row, layout.row,
           layout.blocks * layout.row, layout.outer * layout.row, layout.row,
           stream);
}

/// Ends a call's lane work: the compute stream waits for it (blocking
/// kernels) or its slot keeps it until comm_wait (*_start).
void finishCall(LaneWork &work, bool async, int64_t slot, void *result) {
  EventRef done = work.finish();
  if (async)
    dc().startSlot(slot, result, work.kernel(), std::move(done));
  else
    dc().computeWaits(done, work.kernel());
}

/// A group of one rank: y = x, and a *_start's slot holds nothing.
void copyForOne(const TensorArg &x, const TensorArg &y, bool async,
                int64_t slot, const char *kernel) {
  dc().copyOnCompute(y.data, x.data, x.bytes(), kernel);
  if (async)
    dc().startSlot(slot, y.data, kernel, nullptr);
}

void allReduce(const char *kernel, void *const *bufs, const int64_t *desc,
               bool async) {
  const int64_t first = async ? 1 : 0; // the attributes after the slot
  CollectiveCall call(kernel, bufs, desc, first + 1);
  const TensorArg &x = call.x(), &y = call.y();
  call.expectSameShape();
  const int64_t slot = async ? call.attr(0) : 0;
  const Reduction reduction = call.reduction(first);
  const ncclDataType_t type = reductionType(call, x.dtype);
  const int64_t g = call.groupSize();
  if (!dc().viaNccl(g))
    return copyForOne(x, y, async, slot, kernel);
  Lane &lane = dc().groupLane(call, first + 1);
  const void *in = x.data;
  if (async) { // x goes into y; the collective runs in place there
    dc().copyOnCompute(y.data, x.data, x.bytes(), kernel);
    in = y.data;
  }
  LaneWork work(dc(), lane, kernel);
  const ReduceOp op = reduceOp(reduction, x.dtype, g);
  if (x.numel > 0) {
    work.group([&] {
      return ncclAllReduce(in, y.data, static_cast<size_t>(x.numel), type,
                           op.op, lane.comm, work.stream());
    });
    divideBy(y.data, y.numel, y.dtype, op.divisor, work.stream());
  }
  finishCall(work, async, slot, y.data);
}

void allGather(const char *kernel, void *const *bufs, const int64_t *desc,
               bool async) {
  const int64_t first = async ? 1 : 0;
  CollectiveCall call(kernel, bufs, desc, first + 1);
  const TensorArg &x = call.x(), &y = call.y();
  const int64_t slot = async ? call.attr(0) : 0;
  const int64_t dim = call.dim(first, x, "dim");
  call.expectJoined(x, "x", y, "y", dim);
  const int64_t g = call.groupSize();
  if (!dc().viaNccl(g))
    return copyForOne(x, y, async, slot, kernel);
  Lane &lane = dc().groupLane(call, first + 1);
  const ncclDataType_t type = movementType(x.elemSize());
  const size_t count = static_cast<size_t>(x.numel);
  const int64_t own = static_cast<int64_t>(lane.rank) * x.bytes();
  const BlockLayout layout(y, dim, g);
  if (layout.contiguous()) {
    const void *in = x.data;
    if (async) { // x goes to its own block of y, gathered in place
      dc().copyOnCompute(bytesAt(y.data, own), x.data, x.bytes(), kernel);
      in = bytesAt(y.data, own);
    }
    LaneWork work(dc(), lane, kernel);
    if (count)
      work.group([&] {
        return ncclAllGather(in, y.data, count, type, lane.comm, work.stream());
      });
    return finishCall(work, async, slot, y.data);
  }
  // Gathered group-major into scratch, then interleaved into y.
  void *packed = nullptr;
  const void *in = x.data;
  if (async) {
    packed = dc().allocate(static_cast<size_t>(y.bytes()),
                           cuda::computeStream(), kernel);
    dc().copyOnCompute(bytesAt(packed, own), x.data, x.bytes(), kernel);
    in = bytesAt(packed, own);
  }
  LaneWork work(dc(), lane, kernel);
  if (async)
    work.adopt(packed);
  else
    packed = work.scratch(y.bytes());
  if (count)
    work.group([&] {
      return ncclAllGather(in, packed, count, type, lane.comm, work.stream());
    });
  unpackBlocks(layout, packed, y.data, work.stream(), dc(), kernel);
  finishCall(work, async, slot, y.data);
}

void reduceScatter(const char *kernel, void *const *bufs, const int64_t *desc,
                   bool async) {
  const int64_t first = async ? 1 : 0;
  CollectiveCall call(kernel, bufs, desc, first + 2);
  const TensorArg &x = call.x(), &y = call.y();
  const int64_t slot = async ? call.attr(0) : 0;
  const Reduction reduction = call.reduction(first);
  const int64_t dim = call.dim(first + 1, x, "dim");
  call.expectJoined(y, "y", x, "x", dim);
  const ncclDataType_t type = reductionType(call, x.dtype);
  const int64_t g = call.groupSize();
  if (!dc().viaNccl(g))
    return copyForOne(x, y, async, slot, kernel);
  Lane &lane = dc().groupLane(call, first + 2);
  const BlockLayout layout(x, dim, g);
  // NCCL reads x group-major, and never in place unless y is x's block of
  // this rank: x is packed into scratch unless it can be read as it is.
  const void *in = x.data;
  void *packed = nullptr;
  if (async) {
    packed = dc().allocate(static_cast<size_t>(x.bytes()),
                           cuda::computeStream(), kernel);
    packBlocks(layout, x.data, packed, cuda::computeStream(), dc(), kernel);
    in = packed;
  }
  LaneWork work(dc(), lane, kernel);
  if (async) {
    work.adopt(packed);
  } else if (!layout.contiguous() || x.data == y.data) {
    packed = work.scratch(x.bytes());
    packBlocks(layout, x.data, packed, work.stream(), dc(), kernel);
    in = packed;
  }
  const ReduceOp op = reduceOp(reduction, x.dtype, g);
  if (y.numel > 0) {
    work.group([&] {
      return ncclReduceScatter(in, y.data, static_cast<size_t>(y.numel), type,
                               op.op, lane.comm, work.stream());
    });
    divideBy(y.data, y.numel, y.dtype, op.divisor, work.stream());
  }
  finishCall(work, async, slot, y.data);
}

// x's block j along split_dim goes to group index j; the blocks received
// from indices 0..g-1 are joined along concat_dim.
void allToAll(const char *kernel, void *const *bufs, const int64_t *desc,
              bool async) {
  const int64_t first = async ? 1 : 0;
  CollectiveCall call(kernel, bufs, desc, first + 2);
  const TensorArg &x = call.x(), &y = call.y();
  const int64_t slot = async ? call.attr(0) : 0;
  const int64_t split = call.dim(first, x, "split_dim");
  const int64_t concat = call.dim(first + 1, x, "concat_dim");
  const int64_t blockNumel = call.expectAllToAll(split, concat);
  const int64_t g = call.groupSize();
  if (!dc().viaNccl(g))
    return copyForOne(x, y, async, slot, kernel);
  Lane &lane = dc().groupLane(call, first + 2);
  const BlockLayout sendLayout(x, split, g), recvLayout(y, concat, g);
  const int64_t blockBytes = blockNumel * x.elemSize();
  const ncclDataType_t type = movementType(x.elemSize());
  const void *send = x.data;
  void *packedIn = nullptr;
  if (async) {
    packedIn = dc().allocate(static_cast<size_t>(x.bytes()),
                             cuda::computeStream(), kernel);
    packBlocks(sendLayout, x.data, packedIn, cuda::computeStream(), dc(),
               kernel);
    send = packedIn;
  }
  LaneWork work(dc(), lane, kernel);
  if (async) {
    work.adopt(packedIn);
  } else if (!sendLayout.contiguous() || x.data == y.data) {
    packedIn = work.scratch(x.bytes());
    packBlocks(sendLayout, x.data, packedIn, work.stream(), dc(), kernel);
    send = packedIn;
  }
  void *recv = recvLayout.contiguous() ? y.data : work.scratch(y.bytes());
  const int me = lane.rank;
  if (blockBytes > 0) {
    dc().checkCuda(cudaMemcpyAsync(bytesAt(recv, me * blockBytes),
                                   bytesAt(send, me * blockBytes),
                                   static_cast<size_t>(blockBytes),
                                   cudaMemcpyDeviceToDevice, work.stream()),
                   kernel);
    if (g > 1)
      work.group([&] {
        for (int j = 0; j < static_cast<int>(g); ++j) {
          if (j == me)
            continue;
          ncclResult_t r = ncclSend(bytesAt(send, j * blockBytes),
                                    static_cast<size_t>(blockNumel), type, j,
                                    lane.comm, work.stream());
          if (r != ncclSuccess && r != ncclInProgress)
            return r;
          r = ncclRecv(bytesAt(recv, j * blockBytes),
                       static_cast<size_t>(blockNumel), type, j, lane.comm,
                       work.stream());
          if (r != ncclSuccess && r != ncclInProgress)
            return r;
        }
        return ncclSuccess;
      });
  }
  if (!recvLayout.contiguous())
    unpackBlocks(recvLayout, recv, y.data, work.stream(), dc(), kernel);
  finishCall(work, async, slot, y.data);
}

void broadcast(const char *kernel, void *const *bufs, const int64_t *desc,
               bool async) {
  const int64_t first = async ? 1 : 0;
  CollectiveCall call(kernel, bufs, desc, first + 1);
  const TensorArg &x = call.x(), &y = call.y();
  call.expectSameShape();
  const int64_t slot = async ? call.attr(0) : 0;
  const int64_t root = call.attr(first);
  const int64_t g = call.groupSize();
  if (root < 0 || root >= g)
    call.fail("root " + std::to_string(root) + " is not a group index (the " +
              "group has " + std::to_string(g) + " ranks)");
  if (!dc().viaNccl(g))
    return copyForOne(x, y, async, slot, kernel);
  Lane &lane = dc().groupLane(call, first + 1);
  // Only the root's x is read; other ranks receive into y.
  const void *in = y.data;
  if (lane.rank == root) {
    in = x.data;
    if (async) {
      dc().copyOnCompute(y.data, x.data, x.bytes(), kernel);
      in = y.data;
    }
  }
  LaneWork work(dc(), lane, kernel);
  if (y.numel > 0)
    work.group([&] {
      return ncclBroadcast(in, y.data, static_cast<size_t>(y.numel),
                           movementType(y.elemSize()), static_cast<int>(root),
                           lane.comm, work.stream());
    });
  finishCall(work, async, slot, y.data);
}

} // namespace

extern "C" void weft_k_all_reduce(void *const *bufs, const int64_t *desc) {
  allReduce("all_reduce", bufs, desc, /*async=*/false);
}

extern "C" void weft_k_all_reduce_start(void *const *bufs,
                                        const int64_t *desc) {
  allReduce("all_reduce_start", bufs, desc, /*async=*/true);
}

extern "C" void weft_k_all_gather(void *const *bufs, const int64_t *desc) {
  allGather("all_gather", bufs, desc, /*async=*/false);
}

extern "C" void weft_k_all_gather_start(void *const *bufs,
                                        const int64_t *desc) {
  allGather("all_gather_start", bufs, desc, /*async=*/true);
}

extern "C" void weft_k_reduce_scatter(void *const *bufs, const int64_t *desc) {
  reduceScatter("reduce_scatter", bufs, desc, /*async=*/false);
}

extern "C" void weft_k_reduce_scatter_start(void *const *bufs,
                                            const int64_t *desc) {
  reduceScatter("reduce_scatter_start", bufs, desc, /*async=*/true);
}

extern "C" void weft_k_all_to_all(void *const *bufs, const int64_t *desc) {
  allToAll("all_to_all", bufs, desc, /*async=*/false);
}

extern "C" void weft_k_all_to_all_start(void *const *bufs,
                                        const int64_t *desc) {
  allToAll("all_to_all_start", bufs, desc, /*async=*/true);
}

extern "C" void weft_k_broadcast(void *const *bufs, const int64_t *desc) {
  broadcast("broadcast", bufs, desc, /*async=*/false);
}

extern "C" void weft_k_broadcast_start(void *const *bufs, const int64_t *desc) {
  broadcast("broadcast_start", bufs, desc, /*async=*/true);
}

// This rank's block of x: no communication, a copy on the compute stream.
extern "C" void weft_k_all_slice(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("all_slice", bufs, desc, 1);
  const TensorArg &x = call.x(), &y = call.y();
  const int64_t dim = call.dim(0, x, "dim");
  call.expectJoined(y, "y", x, "x", dim);
  const int64_t g = call.groupSize();
  if (g == 1)
    return dc().copyOnCompute(y.data, x.data, x.bytes(), "all_slice");
  const BlockLayout layout(x, dim, g);
  copyRows(y.data, bytesAt(x.data, call.groupIndex() * layout.row), 1,
           layout.outer, layout.row, 0, layout.row, 0, g * layout.row,
           cuda::computeStream());
}

// Where this rank's block of a dim split over the group starts.
extern "C" void weft_k_mesh_offset(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("mesh_offset", bufs, desc, 1, /*tensors=*/1);
  const TensorArg &y = call.args().tensor(0);
  if (y.dtype != WEFT_I64 || y.numel != 1)
    call.fail("y " + CollectiveCall::typeOf(y) + " is not one i64");
  const int64_t block = call.attr(0);
  if (block < 1)
    call.fail("block " + std::to_string(block) + " is not positive");
  writeInt64(y.as<int64_t>(), call.groupIndex() * block, cuda::computeStream());
}

extern "C" void weft_k_comm_wait(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("comm_wait", bufs, desc);
  args.expectTensors(1, 2);
  args.expectAttrs(1);
  const TensorArg &y = args.tensor(0);
  dc().waitSlot(args.attr(0), y.data);
  if (args.numTensors() == 2 && args.tensor(1).data != y.data) {
    args.expectDType(1, y.dtype);
    args.expectSameNumel(0, 1);
    dc().copyOnCompute(args.tensor(1).data, y.data, y.bytes(), "comm_wait");
  }
}

// Nothing to poll: see the file comment.
extern "C" void weft_k_comm_progress(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("comm_progress", bufs, desc);
  args.expectTensors(0, 0);
}
