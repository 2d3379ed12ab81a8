//===- NcclPointToPoint.cpp - send / recv on device buffers ---------------===//
//
// The pipeline's transfers (KernelABI.h) for --target cuda bundles. NCCL has
// no tags: the sends from one rank to another are matched with that rank's
// receives in the order each side issues them, and an NCCL transfer on a
// stream holds the stream until its peer takes part. Both shape the design.
//
// Order. Every rank runs the same SPMD program, and the pipeline pass
// (passes/Pipeline.cpp) gives each value that crosses stages one send right
// after the value is made and one receive before its first reader, so the
// transfers between two ranks are issued in the same order on both sides.
// This is checked, not assumed: every message is preceded by a 16-byte
// header (its tag and size), which the receiver compares with what it
// expects before taking the payload. A mismatch is reported by the
// watchdog within a fraction of a second, naming both tags, and also marks
// the step failed through the device error word (the executor checks it
// after every step), instead of handing one tensor's bytes to another.
//
// Deadlock. In 1F1B, stage s sends activations to s+1 while s+1 sends
// gradients back to s, and every receive is posted a unit of the schedule
// early. On one stream per rank, stage s would queue [send a0, recv g0,
// send a1, ...] and stage s+1 [recv a0, recv a1, send g0, ...]: after a0,
// s waits in recv g0 and s+1 in recv a1, which s only sends after g0 --
// a deadlock the CPU backend never meets, because its receives are
// non-blocking requests. NCCL groups (ncclGroupStart/End) would let a send
// and a receive progress together only if the SPMD program issued them
// together, and it issues them at different points of the schedule (the
// receive early, the send when its value is ready); holding transfers back
// to group them would delay the sends and serialize the pipeline.
//
// Instead, every ordered pair of ranks of the pipeline axis (the mesh axis
// named "pp") has a two-rank communicator of its own, carrying only the
// messages from the first to the second, on a stream of its own (NcclComm.h
// creates them at start: one ncclCommSplit per direction per round of a
// round-robin over the axis, and connects them at once). A transfer then
// waits only for (1) the compute work before it on its own rank (for a
// send, the value; for a receive, the readers of the buffer it fills),
// (2) the earlier messages between the same two ranks in the same
// direction, which the peer issues in the same order, and (3) its peer's
// matching transfer. Those are the dependencies the CPU backend's
// non-blocking sends and receives have too (its sends complete eagerly, and
// an NCCL send holds nothing but later sends of the same direction), so any
// schedule that runs there -- GPipe, 1F1B, interleaved, ZB-H1 -- runs here:
// in 1F1B above, a1 travels on the s -> s+1 stream while recv g0 waits on
// the s+1 -> s stream. A transfer between ranks that differ in other axes
// too (never emitted by the compiler) goes over its group's communicator on
// that group's stream, in issue order, which is safe only for transfers
// that do not cross as above.
//
// send_start copies x first (in scratch the transfer owns), so x may be
// reused at once; recv_start receives into y, which the compute stream
// touches again only after the comm_wait of its slot. Blocking send and
// recv are the same followed at once by that wait.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/nccl/NcclComm.h"

#include "runtime/cuda/CudaRuntime.h"

using namespace weft;
using namespace weft::comm;
using namespace weft::nccl;
using cpu::TensorArg;

namespace {

DeviceComm &dc() { return DeviceComm::get(); }

/// The peer (attribute i) as a group index other than this rank's.
int64_t peerOf(const CollectiveCall &call, int64_t i) {
  const int64_t peer = call.attr(i);
  if (peer < 0 || peer >= call.groupSize())
    call.fail("peer " + std::to_string(peer) + " is not a group index (the " +
              "group has " + std::to_string(call.groupSize()) + " ranks)");
  if (peer == call.groupIndex())
    call.fail("peer " + std::to_string(peer) + " is this rank itself");
  return peer;
}

int64_t tagOf(const CollectiveCall &call, int64_t i) {
  const int64_t tag = call.attr(i);
  if (tag < 0 || tag > 32767)
    call.fail("tag " + std::to_string(tag) + " is outside 0..32767");
  return tag;
}

/// Where a transfer with group index `peer` goes: a lane and the peer's
/// rank in its communicator.
struct Route {
  Lane *lane;
  int peer;
};

Route routeOf(const CollectiveCall &call, int64_t leading, int64_t peer,
              bool sending) {
  const CallAxes axes = axesOf(call, leading);
  const std::vector<int64_t> members =
      context().mesh().groupMembers(axes.axes, axes.count);
  const int64_t me = dc().worldRank(), other = members[peer];
  // A pair's own communicator: the sender is its rank 0.
  if (Lane *lane =
          sending ? dc().transferLane(me, other) : dc().transferLane(other, me))
    return {lane, sending ? 1 : 0};
  return {&dc().groupLane(call, leading), static_cast<int>(peer)};
}

/// The widest unit that divides `bytes`, for the count NCCL gets.
ncclDataType_t unitOf(int64_t bytes, size_t &count) {
  if (bytes % 8 == 0) {
    count = static_cast<size_t>(bytes / 8);
    return ncclUint64;
  }
  if (bytes % 4 == 0) {
    count = static_cast<size_t>(bytes / 4);
    return ncclUint32;
  }
  count = static_cast<size_t>(bytes);
  return ncclUint8;
}

/// Header, then payload, as two NCCL groups (the receiver checks the header
/// in between).
void sendMessage(LaneWork &work, int peer, const void *data, int64_t bytes,
                 int64_t tag) {
  Lane &lane = work.lane();
  auto *header = static_cast<TransferHeader *>(
      work.scratch(static_cast<int64_t>(sizeof(TransferHeader))));
  writeHeader(header, tag, bytes, work.stream());
  work.group([&] {
    return ncclSend(header, sizeof(TransferHeader), ncclUint8, peer, lane.comm,
                    work.stream());
  });
  if (bytes == 0)
    return;
  size_t count = 0;
  const ncclDataType_t unit = unitOf(bytes, count);
  work.group([&] {
    return ncclSend(data, count, unit, peer, lane.comm, work.stream());
  });
}

void receiveMessage(LaneWork &work, int peer, void *data, int64_t bytes,
                    int64_t tag) {
  Lane &lane = work.lane();
  auto *header = static_cast<TransferHeader *>(
      work.scratch(static_cast<int64_t>(sizeof(TransferHeader))));
  work.group([&] {
    return ncclRecv(header, sizeof(TransferHeader), ncclUint8, peer, lane.comm,
                    work.stream());
  });
  checkHeader(header, tag, bytes, lane.index, dc().mismatchRecord(),
              cuda::errorWord(), lane.transferErrorCode, work.stream());
  if (bytes == 0)
    return;
  size_t count = 0;
  const ncclDataType_t unit = unitOf(bytes, count);
  work.group([&] {
    return ncclRecv(data, count, unit, peer, lane.comm, work.stream());
  });
}

} // namespace

extern "C" void weft_k_send(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("send", bufs, desc, 2, /*tensors=*/1);
  const TensorArg &x = call.args().tensor(0);
  const int64_t peer = peerOf(call, 0);
  const int64_t tag = tagOf(call, 1);
  const Route route = routeOf(call, 2, peer, /*sending=*/true);
  LaneWork work(dc(), *route.lane, "send");
  sendMessage(work, route.peer, x.data, x.bytes(), tag);
  dc().computeWaits(work.finish(), "send");
}

extern "C" void weft_k_recv(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("recv", bufs, desc, 2, /*tensors=*/1);
  const TensorArg &y = call.args().tensor(0);
  const int64_t peer = peerOf(call, 0);
  const int64_t tag = tagOf(call, 1);
  const Route route = routeOf(call, 2, peer, /*sending=*/false);
  LaneWork work(dc(), *route.lane, "recv");
  receiveMessage(work, route.peer, y.data, y.bytes(), tag);
  dc().computeWaits(work.finish(), "recv");
}

extern "C" void weft_k_send_start(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("send_start", bufs, desc, 3, /*tensors=*/1);
  const TensorArg &x = call.args().tensor(0);
  const int64_t slot = call.attr(0);
  const int64_t peer = peerOf(call, 1);
  const int64_t tag = tagOf(call, 2);
  const Route route = routeOf(call, 3, peer, /*sending=*/true);
  // x is copied on the compute stream, before anything after this call
  // may overwrite it.
  void *copy = nullptr;
  if (x.bytes() > 0) {
    copy = dc().allocate(static_cast<size_t>(x.bytes()), cuda::computeStream(),
                         "send_start");
    dc().copyOnCompute(copy, x.data, x.bytes(), "send_start");
  }
  LaneWork work(dc(), *route.lane, "send_start");
  work.adopt(copy);
  sendMessage(work, route.peer, copy, x.bytes(), tag);
  dc().startSlot(slot, x.data, "send_start", work.finish());
}

extern "C" void weft_k_recv_start(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("recv_start", bufs, desc, 3, /*tensors=*/1);
  const TensorArg &y = call.args().tensor(0);
  const int64_t slot = call.attr(0);
  const int64_t peer = peerOf(call, 1);
  const int64_t tag = tagOf(call, 2);
  const Route route = routeOf(call, 3, peer, /*sending=*/false);
  LaneWork work(dc(), *route.lane, "recv_start");
  receiveMessage(work, route.peer, y.data, y.bytes(), tag);
  dc().startSlot(slot, y.data, "recv_start", work.finish());
}
