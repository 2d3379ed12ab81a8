//===- Collectives.cpp - The blocking collective kernels of KernelABI.h ---===//
//
// all_reduce, all_gather, reduce_scatter, all_to_all, broadcast and
// all_slice over the groups of the device mesh (Comm.h), mesh_offset, and
// the bucket forms reduce_scatter_pieces and all_gather_pieces.
// Blocks of a dim other than the leading one are not contiguous: gathers
// receive into group-major scratch and interleave, scatters pack before
// sending. A group of one rank copies (the Communicator does).
//
//===----------------------------------------------------------------------===//
#include "CollectiveCall.h"

#include <cstring>
#include <vector>

using namespace weft;
using namespace weft::comm;

extern "C" void weft_k_all_reduce(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("all_reduce", bufs, desc, 1);
  const cpu::TensorArg &x = call.x(), &y = call.y();
  call.expectSameShape();
  call.group().allReduce(x.data, y.data, x.numel, x.dtype, call.reduction(0));
}

extern "C" void weft_k_all_gather(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("all_gather", bufs, desc, 1);
  const cpu::TensorArg &x = call.x(), &y = call.y();
  const int64_t dim = call.dim(0, x, "dim");
  call.expectJoined(x, "x", y, "y", dim);
  Communicator &group = call.group();
  BlockLayout layout(y, dim, call.groupSize());
  if (layout.contiguous())
    return group.allGather(x.data, y.data, x.numel, x.dtype);
  std::vector<uint8_t> packed(static_cast<size_t>(y.bytes()));
  group.allGather(x.data, packed.data(), x.numel, x.dtype);
  layout.unpack(packed.data(), y.data);
}

extern "C" void weft_k_reduce_scatter(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("reduce_scatter", bufs, desc, 2);
  const cpu::TensorArg &x = call.x(), &y = call.y();
  const Reduction op = call.reduction(0);
  const int64_t dim = call.dim(1, x, "dim");
  call.expectJoined(y, "y", x, "x", dim);
  Communicator &group = call.group();
  BlockLayout layout(x, dim, call.groupSize());
  if (layout.contiguous() && x.data != y.data)
    return group.reduceScatter(x.data, y.data, y.numel, x.dtype, op);
  std::vector<uint8_t> packed(static_cast<size_t>(x.bytes()));
  layout.pack(x.data, packed.data());
  group.reduceScatter(packed.data(), y.data, y.numel, x.dtype, op);
}

// A bucket: pieces x_1..x_n (each the group's n blocks, flat) -> y, block
// rank() of each piece's reduction, one after the other. The bucket's
// blocks are never packed where the backend moves them in place.
extern "C" void weft_k_reduce_scatter_pieces(void *const *bufs,
                                             const int64_t *desc) {
  CollectiveCall call("reduce_scatter_pieces", bufs, desc, 1,
                      CollectiveCall::kBucket);
  void *y = nullptr;
  Request request = call.reduceScatterPieces(0, y);
  call.group().wait(request);
}

// Its inverse: x (one block of each piece) -> pieces y_1..y_n, block j of
// each from group index j.
extern "C" void weft_k_all_gather_pieces(void *const *bufs,
                                         const int64_t *desc) {
  CollectiveCall call("all_gather_pieces", bufs, desc, 0,
                      CollectiveCall::kBucket);
  void *y = nullptr;
  Request request = call.allGatherPieces(y);
  call.group().wait(request);
}

// x's block j along split_dim goes to group index j; the blocks received
// from indices 0..g-1 are joined along concat_dim.
extern "C" void weft_k_all_to_all(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("all_to_all", bufs, desc, 2);
  const cpu::TensorArg &x = call.x(), &y = call.y();
  const int64_t split = call.dim(0, x, "split_dim");
  const int64_t concat = call.dim(1, x, "concat_dim");
  const int64_t blockNumel = call.expectAllToAll(split, concat);
  const int64_t g = call.groupSize();
  Communicator &group = call.group();
  BlockLayout sendLayout(x, split, g), recvLayout(y, concat, g);
  std::vector<uint8_t> packedIn, packedOut;
  const void *send = x.data;
  if (!sendLayout.contiguous() || x.data == y.data) {
    packedIn.resize(static_cast<size_t>(x.bytes()));
    sendLayout.pack(x.data, packedIn.data());
    send = packedIn.data();
  }
  void *recv = y.data;
  if (!recvLayout.contiguous()) {
    packedOut.resize(static_cast<size_t>(y.bytes()));
    recv = packedOut.data();
  }
  group.allToAll(send, recv, blockNumel, x.dtype);
  if (!recvLayout.contiguous())
    recvLayout.unpack(packedOut.data(), y.data);
}

extern "C" void weft_k_broadcast(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("broadcast", bufs, desc, 1);
  const cpu::TensorArg &y = call.y();
  const int64_t root = call.expectBroadcast(0);
  if (call.groupSize() == 1)
    return;
  call.group().broadcast(y.data, y.numel, y.dtype, root);
}

// This rank's block of x: no communication.
extern "C" void weft_k_all_slice(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("all_slice", bufs, desc, 1);
  const cpu::TensorArg &x = call.x(), &y = call.y();
  const int64_t dim = call.dim(0, x, "dim");
  call.expectJoined(y, "y", x, "x", dim);
  BlockLayout(x, dim, call.groupSize())
      .extract(x.data, call.groupIndex(), y.data);
}

// Where this rank's block of a dim split over the group starts.
extern "C" void weft_k_mesh_offset(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("mesh_offset", bufs, desc, 1, /*tensors=*/1);
  const cpu::TensorArg &y = call.args().tensor(0);
  if (y.dtype != WEFT_I64 || y.numel != 1)
    call.fail("y " + CollectiveCall::typeOf(y) + " is not one i64");
  const int64_t block = call.attr(0);
  if (block < 1)
    call.fail("block " + std::to_string(block) + " is not positive");
  *y.as<int64_t>() = call.groupIndex() * block;
}
