//===- AsyncCollectives.cpp - Started collectives and comm_wait -----------===//
//
// all_reduce_start, all_gather_start, reduce_scatter_start,
// all_to_all_start and broadcast_start start their collective and return;
// weft_k_comm_wait with the same slot finishes it. The start keeps what it
// still needs of x (a copy into y or into scratch the request owns), so x may
// be overwritten as soon as the start returns; y must not be read or written
// until the comm_wait. comm_wait finishes y in place; given a second tensor y2
// (another buffer), it copies y there.
//
//===----------------------------------------------------------------------===//
#include "CollectiveCall.h"
#include "CommInternal.h"

#include <cstring>
#include <memory>
#include <vector>

using namespace weft;
using namespace weft::comm;

namespace {

using Bytes = std::shared_ptr<Scratch>;

Bytes scratch(int64_t bytes) {
  return std::make_shared<Scratch>(static_cast<size_t>(bytes));
}

} // namespace

extern "C" void weft_k_all_reduce_start(void *const *bufs,
                                        const int64_t *desc) {
  CollectiveCall call("all_reduce_start", bufs, desc, 2);
  const cpu::TensorArg &x = call.x(), &y = call.y();
  call.expectSameShape();
  const int64_t slot = call.attr(0);
  const Reduction op = call.reduction(1);
  Communicator &group = call.group();
  Request request;
  if (x.dtype == WEFT_BF16) {
    // Widened into the request's own f32 scratch right away.
    request = group.allReduceStart(x.data, y.data, x.numel, x.dtype, op);
  } else {
    if (x.data != y.data)
      std::memcpy(y.data, x.data, static_cast<size_t>(x.bytes()));
    request = group.allReduceStart(y.data, y.data, y.numel, y.dtype, op);
  }
  context().startSlot(slot, std::move(request), y.data, "all_reduce_start");
}

extern "C" void weft_k_all_gather_start(void *const *bufs,
                                        const int64_t *desc) {
  CollectiveCall call("all_gather_start", bufs, desc, 2);
  const cpu::TensorArg &x = call.x(), &y = call.y();
  const int64_t slot = call.attr(0);
  const int64_t dim = call.dim(1, x, "dim");
  call.expectJoined(x, "x", y, "y", dim);
  Communicator &group = call.group();
  BlockLayout layout(y, dim, call.groupSize());
  const int64_t own = call.groupIndex() * x.bytes();
  Request request;
  if (layout.contiguous()) {
    // x goes to its own block of y, gathered in place.
    uint8_t *mine = static_cast<uint8_t *>(y.data) + own;
    std::memmove(mine, x.data, static_cast<size_t>(x.bytes()));
    request = group.allGatherStart(mine, y.data, x.numel, x.dtype);
  } else {
    Bytes packed = scratch(y.bytes());
    std::memcpy(packed->data() + own, x.data, static_cast<size_t>(x.bytes()));
    request = group.allGatherStart(packed->data() + own, packed->data(),
                                   x.numel, x.dtype);
    void *out = y.data;
    request.then([packed, layout, out] { layout.unpack(packed->data(), out); });
  }
  context().startSlot(slot, std::move(request), y.data, "all_gather_start");
}

extern "C" void weft_k_reduce_scatter_start(void *const *bufs,
                                            const int64_t *desc) {
  CollectiveCall call("reduce_scatter_start", bufs, desc, 3);
  const cpu::TensorArg &x = call.x(), &y = call.y();
  const int64_t slot = call.attr(0);
  const Reduction op = call.reduction(1);
  const int64_t dim = call.dim(2, x, "dim");
  call.expectJoined(y, "y", x, "x", dim);
  Communicator &group = call.group();
  BlockLayout layout(x, dim, call.groupSize());
  // The operand, packed group-major, in scratch the request keeps.
  Bytes packed = scratch(x.bytes());
  if (layout.contiguous())
    std::memcpy(packed->data(), x.data, static_cast<size_t>(x.bytes()));
  else
    layout.pack(x.data, packed->data());
  Request request =
      group.reduceScatterStart(packed->data(), y.data, y.numel, x.dtype, op);
  request.then([packed] {}); // keeps the scratch until the wait
  context().startSlot(slot, std::move(request), y.data, "reduce_scatter_start");
}

// The bucket forms (Collectives.cpp). reduce_scatter_pieces_start reads
// its pieces until the comm_wait (the compiler keeps them alive that
// long); all_gather_pieces_start registers y_1 as the slot's result and
// fills every piece by the comm_wait.
extern "C" void weft_k_reduce_scatter_pieces_start(void *const *bufs,
                                                   const int64_t *desc) {
  CollectiveCall call("reduce_scatter_pieces_start", bufs, desc, 2,
                      CollectiveCall::kBucket);
  void *y = nullptr;
  Request request = call.reduceScatterPieces(1, y);
  context().startSlot(call.attr(0), std::move(request), y,
                      "reduce_scatter_pieces_start");
}

extern "C" void weft_k_all_gather_pieces_start(void *const *bufs,
                                               const int64_t *desc) {
  CollectiveCall call("all_gather_pieces_start", bufs, desc, 1,
                      CollectiveCall::kBucket);
  void *y1 = nullptr;
  Request request = call.allGatherPieces(y1);
  context().startSlot(call.attr(0), std::move(request), y1,
                      "all_gather_pieces_start");
}

extern "C" void weft_k_all_to_all_start(void *const *bufs,
                                        const int64_t *desc) {
  CollectiveCall call("all_to_all_start", bufs, desc, 3);
  const cpu::TensorArg &x = call.x(), &y = call.y();
  const int64_t slot = call.attr(0);
  const int64_t split = call.dim(1, x, "split_dim");
  const int64_t concat = call.dim(2, x, "concat_dim");
  const int64_t blockNumel = call.expectAllToAll(split, concat);
  const int64_t g = call.groupSize();
  BlockLayout sendLayout(x, split, g), recvLayout(y, concat, g);
  // The operand, packed block-major, in scratch the request keeps.
  Bytes packedIn = scratch(x.bytes());
  sendLayout.pack(x.data, packedIn->data());
  Request request;
  if (recvLayout.contiguous()) {
    request = call.group().allToAllStart(packedIn->data(), y.data, blockNumel,
                                         x.dtype);
    request.then([packedIn] {});
  } else {
    Bytes packedOut = scratch(y.bytes());
    request = call.group().allToAllStart(packedIn->data(), packedOut->data(),
                                         blockNumel, x.dtype);
    void *out = y.data;
    request.then([packedIn, packedOut, recvLayout, out] {
      recvLayout.unpack(packedOut->data(), out);
    });
  }
  context().startSlot(slot, std::move(request), y.data, "all_to_all_start");
}

extern "C" void weft_k_broadcast_start(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("broadcast_start", bufs, desc, 2);
  const cpu::TensorArg &y = call.y();
  const int64_t slot = call.attr(0);
  const int64_t root = call.expectBroadcast(1);
  Request request = call.group().broadcastStart(y.data, y.numel, y.dtype, root);
  context().startSlot(slot, std::move(request), y.data, "broadcast_start");
}

extern "C" void weft_k_comm_wait(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("comm_wait", bufs, desc);
  args.expectTensors(1, 2);
  args.expectAttrs(1);
  const cpu::TensorArg &y = args.tensor(0);
  context().waitSlot(args.attr(0), y.data, "comm_wait");
  if (args.numTensors() == 2 && args.tensor(1).data != y.data) {
    args.expectDType(1, y.dtype);
    args.expectSameNumel(0, 1);
    std::memcpy(args.tensor(1).data, y.data, static_cast<size_t>(y.bytes()));
  }
}

extern "C" void weft_k_comm_progress(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("comm_progress", bufs, desc);
  args.expectTensors(0, 0);
  context().progress();
}
