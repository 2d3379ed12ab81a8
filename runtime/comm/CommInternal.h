//===- CommInternal.h - Pieces the communicator files share ---------------===//
#ifndef WEFT_RUNTIME_COMM_COMMINTERNAL_H
#define WEFT_RUNTIME_COMM_COMMINTERNAL_H

#include "weft/runtime/Comm.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft {
namespace comm {

/// Starts MPI (once per process) and returns its world communicator, which
/// ends MPI when destroyed; null with `error` set when MPI cannot start or
/// this runtime was built without it (mpi/NoMpi.cpp). `worldSize` is what
/// the bundle needs, for the message.
std::unique_ptr<Communicator> openMpiWorld(int64_t worldSize,
                                           std::string &error);

/// Joins the world of a torchrun-style launch (RANK / WORLD_SIZE, meeting
/// at MASTER_ADDR:MASTER_PORT) over TCP (tcp/TcpCommunicator.cpp); null
/// with `error` set when the ranks cannot meet.
std::unique_ptr<Communicator> openTcpWorld(int64_t rank, int64_t size,
                                           std::string &error);

/// Polls `transfer` until it finishes; past WEFT_COMM_TIMEOUT seconds prints
/// what was waited for and aborts the job through `comm` (Watchdog.cpp).
void watchTransfer(Request::Transfer &transfer, const char *op,
                   Communicator &comm);

/// WEFT_COMM_TIMEOUT in seconds (default 300).
double commTimeoutSeconds();

/// At least `bytes` of scratch (contents undefined) for a transfer or a
/// started collective, taken from buffers earlier ones gave back: a fresh
/// buffer of a gradient bucket's size costs page faults and a zero fill as
/// large as the data it then holds, every step. Given back when destroyed.
/// Kernels and their transfers run on one thread (Scratch.cpp).
class Scratch {
public:
  Scratch() = default;
  explicit Scratch(size_t bytes);
  Scratch(Scratch &&other) noexcept;
  Scratch &operator=(Scratch &&other) noexcept;
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  ~Scratch();
  uint8_t *data() const { return buffer_ ? buffer_->data() : nullptr; }

private:
  std::vector<uint8_t> *buffer_ = nullptr;
};

/// "0,1", "0-7", "0,4,8,...": a rank list for messages.
std::string formatRanks(const std::vector<int64_t> &ranks);

} // namespace comm
} // namespace weft

#endif // WEFT_RUNTIME_COMM_COMMINTERNAL_H
