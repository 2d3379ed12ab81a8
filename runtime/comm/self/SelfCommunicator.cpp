//===- SelfCommunicator.cpp - A group of one rank -------------------------===//
//
// The world of a single-rank run (and of any process before the executor
// starts a multi-rank one), and every mesh group of one rank. The base class
// turns each collective into a copy before a transport hook could be
// reached, so the hooks only guard against misuse.
//
//===----------------------------------------------------------------------===//
#include "../CommInternal.h"

#include "weft/runtime/Diagnostics.h"

namespace weft {
namespace comm {

namespace {

class SelfCommunicator final : public Communicator {
public:
  SelfCommunicator(int64_t worldRank, std::string name)
      : Communicator(0, 1, {worldRank}, std::move(name)) {}

protected:
  TransferPtr startAllReduce(const void *, void *, int64_t, int64_t,
                             Reduction) override {
    unreachable();
  }
  TransferPtr startAllGather(const void *, void *, int64_t, int64_t) override {
    unreachable();
  }
  TransferPtr startReduceScatter(const void *, void *, int64_t, int64_t,
                                 Reduction) override {
    unreachable();
  }
  TransferPtr startAllToAll(const void *, void *, int64_t, int64_t) override {
    unreachable();
  }
  TransferPtr startBroadcast(void *, int64_t, int64_t, int64_t) override {
    unreachable();
  }
  TransferPtr startSend(const void *, int64_t, int64_t, int64_t,
                        int64_t) override {
    unreachable();
  }
  TransferPtr startRecv(void *, int64_t, int64_t, int64_t, int64_t) override {
    unreachable();
  }
  TransferPtr startBarrier() override { unreachable(); }
  std::unique_ptr<Communicator>
  splitGroup(int64_t, int64_t, std::vector<int64_t>, std::string) override {
    unreachable();
  }

private:
  [[noreturn]] void unreachable() const {
    fatal(kExitFailure,
          "internal error: a transfer over %s, a group of one "
          "rank",
          name().c_str());
  }
};

} // namespace

std::unique_ptr<Communicator> makeSelfCommunicator(int64_t worldRank,
                                                   std::string name) {
  return std::unique_ptr<Communicator>(
      new SelfCommunicator(worldRank, std::move(name)));
}

} // namespace comm
} // namespace weft
