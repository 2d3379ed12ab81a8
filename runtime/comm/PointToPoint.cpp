//===- PointToPoint.cpp - send / recv between members of a mesh group -----===//
//
// The pipeline's transfers (KernelABI.h): `peer` is a group index over the
// kernel's mesh axes (the stage along "pp"), `tag` tells apart transfers
// between the same two ranks (microbatch and direction), so a send matches
// the recv of the same tag whatever the order the two ranks post them in.
// send_start copies x into scratch the request owns, so x may be reused at
// once; recv_start receives straight into y, which must not be touched
// until the comm_wait of its slot.
//
//===----------------------------------------------------------------------===//
#include "CollectiveCall.h"

#include <cstring>
#include <memory>
#include <vector>

using namespace weft;
using namespace weft::comm;

namespace {

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

} // namespace

extern "C" void weft_k_send(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("send", bufs, desc, 2, /*tensors=*/1);
  const cpu::TensorArg &x = call.args().tensor(0);
  const int64_t peer = peerOf(call, 0);
  call.group().send(x.data, x.numel, x.dtype, peer, call.attr(1));
}

extern "C" void weft_k_recv(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("recv", bufs, desc, 2, /*tensors=*/1);
  const cpu::TensorArg &y = call.args().tensor(0);
  const int64_t peer = peerOf(call, 0);
  call.group().recv(y.data, y.numel, y.dtype, peer, call.attr(1));
}

extern "C" void weft_k_send_start(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("send_start", bufs, desc, 3, /*tensors=*/1);
  const cpu::TensorArg &x = call.args().tensor(0);
  const int64_t slot = call.attr(0);
  const int64_t peer = peerOf(call, 1);
  auto copy = std::make_shared<std::vector<uint8_t>>(
      static_cast<const uint8_t *>(x.data),
      static_cast<const uint8_t *>(x.data) + x.bytes());
  Request request = call.group().sendStart(copy->data(), x.numel, x.dtype, peer,
                                           call.attr(2));
  request.then([copy] {}); // keeps the copy until the wait
  context().startSlot(slot, std::move(request), x.data, "send_start");
}

extern "C" void weft_k_recv_start(void *const *bufs, const int64_t *desc) {
  CollectiveCall call("recv_start", bufs, desc, 3, /*tensors=*/1);
  const cpu::TensorArg &y = call.args().tensor(0);
  const int64_t slot = call.attr(0);
  const int64_t peer = peerOf(call, 1);
  Request request =
      call.group().recvStart(y.data, y.numel, y.dtype, peer, call.attr(2));
  context().startSlot(slot, std::move(request), y.data, "recv_start");
}
