//===- MpiCommunicator.cpp - Communicators over MPI -----------------------===//
//
// Every operation is MPI's non-blocking form (MPI_Iallreduce, ...); the
// base class's wait polls MPI_Test under the watchdog. MPI is started with
// MPI_THREAD_FUNNELED: kernels call from the main thread only. Groups are
// MPI_Comm_split from the world after a watched barrier, so a rank that is
// gone stops the split's callers through the watchdog, not a hang.
//
//===----------------------------------------------------------------------===//
#include "../CommInternal.h"

#include "weft/runtime/Diagnostics.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mpi.h>
#include <utility>
#include <vector>

namespace weft {
namespace comm {

namespace {

class MpiTransfer final : public Request::Transfer {
public:
  bool test() override {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  }
  MPI_Request request = MPI_REQUEST_NULL;
};

/// An all-reduce by recursive doubling over non-blocking point-to-point
/// messages: in round k every rank swaps its partial result with rank ^ 2^k
/// and reduces the two (IEEE addition, max and min commute, so every rank
/// ends with the same bits). log2(size) rounds of latency instead of the
/// many progress steps of MPI's non-blocking collective, for small
/// messages on power-of-two groups.
class RecursiveDoubling final : public Request::Transfer {
public:
  RecursiveDoubling(MPI_Comm comm, int rank, int size, void *data, int count,
                    MPI_Datatype type, MPI_Op op, int tag, size_t bytes)
      : comm_(comm), rank_(rank), size_(size), data_(data), count_(count),
        type_(type), op_(op), tag_(tag), incoming_(bytes) {}

  bool test() override {
    for (;;) {
      if (inFlight_) {
        int done = 0;
        MPI_Testall(2, requests_, &done, MPI_STATUSES_IGNORE);
        if (!done)
          return false;
        MPI_Reduce_local(incoming_.data(), data_, count_, type_, op_);
        inFlight_ = false;
        mask_ <<= 1;
      }
      if (mask_ >= size_)
        return true;
      int peer = rank_ ^ mask_;
      MPI_Irecv(incoming_.data(), count_, type_, peer, tag_, comm_,
                &requests_[0]);
      MPI_Isend(data_, count_, type_, peer, tag_, comm_, &requests_[1]);
      inFlight_ = true;
    }
  }

private:
  MPI_Comm comm_;
  int rank_, size_;
  void *data_;
  int count_;
  MPI_Datatype type_;
  MPI_Op op_;
  int tag_;
  std::vector<uint8_t> incoming_;
  MPI_Request requests_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int mask_ = 1;
  bool inFlight_ = false;
};

/// Messages up to this size are all-reduced by recursive doubling.
constexpr int64_t kRecursiveDoublingBytes = 16 << 10;

/// Part of one step's transfer to or from a neighbour: `count` contiguous
/// elements at `data`. A block that lies in several pieces moves as one
/// message per piece, each contiguous: Open MPI copies a large contiguous
/// message in one go between processes on a host, while a derived datatype
/// goes through its shared-memory fragments, which stalled by 2.5x (23
/// against 9 ms for resnet18's 23 MB parameter gather) whenever the VM
/// descheduled a rank.
struct Segment {
  void *data;
  int count;
};
using Segments = std::vector<Segment>;

/// Where a bucket's blocks lie: piece i holds n blocks of counts[i]
/// elements, and block b of the bucket is block b of every piece, piece
/// after piece. A plain buffer of n blocks is one piece.
class PieceBlocks {
public:
  PieceBlocks() = default;
  PieceBlocks(std::vector<uint8_t *> pieces, std::vector<int64_t> counts,
              size_t elemSize)
      : pieces_(std::move(pieces)), counts_(std::move(counts)),
        elemSize_(elemSize) {
    for (int64_t c : counts_)
      total_ += c;
  }

  /// The elements of one block of the bucket.
  int64_t total() const { return total_; }

  /// Block b of piece i.
  uint8_t *at(size_t i, int b) const {
    return pieces_[i] + static_cast<size_t>(b) * counts_[i] * elemSize_;
  }

  /// Block b where it lies: one segment per (non-empty) piece.
  Segments block(int b) const {
    Segments s;
    for (size_t i = 0; i < pieces_.size(); ++i)
      if (counts_[i] > 0)
        s.push_back({at(i, b), static_cast<int>(counts_[i])});
    return s;
  }

  /// A packed block (total() elements at `packed`) cut as block() is, so
  /// that it matches one block's messages.
  Segments cut(void *packed) const {
    Segments s;
    uint8_t *p = static_cast<uint8_t *>(packed);
    for (int64_t c : counts_) {
      if (c > 0)
        s.push_back({p, static_cast<int>(c)});
      p += c * elemSize_;
    }
    return s;
  }

  /// Reduces block b into `sum` (total() elements, one after the other).
  void reduceInto(int b, void *sum, MPI_Datatype type, MPI_Op op) const {
    uint8_t *to = static_cast<uint8_t *>(sum);
    for (size_t i = 0; i < pieces_.size(); ++i) {
      if (counts_[i] > 0)
        MPI_Reduce_local(at(i, b), to, static_cast<int>(counts_[i]), type, op);
      to += counts_[i] * elemSize_;
    }
  }

private:
  std::vector<uint8_t *> pieces_;
  std::vector<int64_t> counts_;
  size_t elemSize_ = 0;
  int64_t total_ = 0;
};

/// The steps of a ring of non-blocking point-to-point messages: in each,
/// every rank receives one block from the previous rank and sends one to
/// the next (`post`), then handles what arrived (`arrived`). Polled again
/// after it finished, it stays finished.
class RingTransfer : public Request::Transfer {
public:
  bool test() final {
    while (!finished_) {
      if (inFlight_) {
        int done = 0;
        MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done,
                    MPI_STATUSES_IGNORE);
        if (!done)
          return false;
        inFlight_ = false;
        arrived(step_);
        if (++step_ == steps()) {
          finished_ = true;
          break;
        }
      }
      post(step_);
      inFlight_ = true;
    }
    return true;
  }

protected:
  RingTransfer(MPI_Comm comm, int rank, int size, MPI_Datatype type, MPI_Op op,
               int tag)
      : rank_(rank), size_(size), type_(type), op_(op), comm_(comm), tag_(tag) {
  }

  virtual int steps() const = 0;
  /// Starts step `step`'s messages through exchange().
  virtual void post(int step) = 0;
  /// Step `step`'s messages have arrived.
  virtual void arrived(int step) = 0;

  void exchange(const void *send, int sendCount, void *recv, int recvCount) {
    exchange({{const_cast<void *>(send), sendCount}}, {{recv, recvCount}});
  }
  /// One message per segment; both neighbours cut the block alike, and
  /// MPI keeps messages of one tag between two ranks in order.
  void exchange(const Segments &send, const Segments &recv) {
    requests_.assign(send.size() + recv.size(), MPI_REQUEST_NULL);
    MPI_Request *r = requests_.data();
    for (const Segment &m : recv)
      MPI_Irecv(m.data, m.count, type_, wrap(rank_ - 1), tag_, comm_, r++);
    for (const Segment &m : send)
      MPI_Isend(m.data, m.count, type_, wrap(rank_ + 1), tag_, comm_, r++);
  }
  int wrap(int b) const { return ((b % size_) + size_) % size_; }

  int rank_, size_;
  MPI_Datatype type_;
  MPI_Op op_;

private:
  MPI_Comm comm_;
  int tag_;
  std::vector<MPI_Request> requests_;
  int step_ = 0;
  bool inFlight_ = false, finished_ = false;
};

/// A reduce-scatter around the ring: in step k every rank sends its partial
/// sum of block (rank - k - 1) mod n to the next rank and adds its own
/// block (rank - k - 2) mod n to the partial sum the previous rank sent;
/// after n - 1 steps a rank holds the sum of its own block (the last step
/// receives straight into the result). Each element crosses one link once
/// and is added once per rank. Open MPI's non-blocking
/// MPI_Ireduce_scatter_block moved 64 MiB over 2 ranks 1.7x slower than
/// its all-reduce of the same 64 MiB (bench/README.md). The input's blocks
/// may lie in several pieces (a bucket of gradients): the first step sends
/// one from where its pieces lie, and every step adds them where they lie.
class RingReduceScatter final : public RingTransfer {
public:
  RingReduceScatter(MPI_Comm comm, int rank, int size, PieceBlocks in,
                    void *out, MPI_Datatype type, MPI_Op op, int tag,
                    size_t blockBytes)
      : RingTransfer(comm, rank, size, type, op, tag), in_(std::move(in)),
        out_(out), count_(static_cast<int>(in_.total())) {
    if (size_ > 2) {
      incoming_ = Scratch(blockBytes);
      outgoing_ = Scratch(blockBytes);
    }
  }

private:
  int steps() const override { return size_ - 1; }

  void post(int k) override {
    void *recv = k == size_ - 2 ? out_ : incoming_.data();
    if (k == 0)
      return exchange(in_.block(wrap(rank_ - 1)), in_.cut(recv));
    exchange(outgoing_.data(), count_, recv, count_);
  }

  void arrived(int k) override {
    // What came in is the previous rank's partial sum of block b: add this
    // rank's own block b to it.
    const bool last = k == size_ - 2;
    void *sum = last ? out_ : incoming_.data();
    in_.reduceInto(wrap(rank_ - k - 2), sum, type_, op_);
    if (!last)
      std::swap(incoming_, outgoing_);
  }

  PieceBlocks in_;
  void *out_;
  int count_;
  Scratch incoming_, outgoing_;
};

/// An all-gather of a bucket's blocks where they lie in its pieces: in step
/// k every rank passes block (rank - k) mod n on to the next rank and
/// receives block (rank - k - 1) mod n from the previous one, straight into
/// the pieces (this rank's own blocks are filled before it starts).
class RingAllGather final : public RingTransfer {
public:
  RingAllGather(MPI_Comm comm, int rank, int size, PieceBlocks pieces,
                MPI_Datatype type, int tag)
      : RingTransfer(comm, rank, size, type, MPI_OP_NULL, tag),
        pieces_(std::move(pieces)) {}

private:
  int steps() const override { return size_ - 1; }

  void post(int k) override {
    exchange(pieces_.block(wrap(rank_ - k)),
             pieces_.block(wrap(rank_ - k - 1)));
  }

  void arrived(int) override {}

  PieceBlocks pieces_;
};

/// Reduce-scatters of at least this size (all blocks) go around the ring.
constexpr int64_t kRingReduceScatterBytes = 64 << 10;

/// An all-reduce around the same ring, in place: a reduce-scatter of the
/// buffer's n blocks (block b of count elements starts at b * count / n),
/// after which rank r holds the sum of block r, then an all-gather that
/// passes each summed block on around the ring into every rank's buffer.
/// Every element crosses each link twice, once reduced and once copied,
/// and every rank ends with the same bits. Open MPI's non-blocking
/// all-reduce moved 16-64 MiB over 2 ranks at 1.9-2.1 GB/s bus bandwidth,
/// below its own reduce-scatter and all-gather.
class RingAllReduce final : public RingTransfer {
public:
  RingAllReduce(MPI_Comm comm, int rank, int size, void *data, int64_t count,
                int64_t elemSize, MPI_Datatype type, MPI_Op op, int tag)
      : RingTransfer(comm, rank, size, type, op, tag),
        data_(static_cast<uint8_t *>(data)), count_(count), elemSize_(elemSize),
        incoming_(static_cast<size_t>((count / size + 1) * elemSize)) {}

private:
  int steps() const override { return 2 * (size_ - 1); }

  // Reduce-scatter step k sends block r - k - 1 and receives block
  // r - k - 2 (to add); all-gather step j sends the summed block r - j and
  // receives block r - j - 1 in place.
  void post(int step) override {
    const bool gather = step >= size_ - 1;
    const int k = gather ? step - (size_ - 1) : step;
    const int sendBlock = wrap(rank_ - k - (gather ? 0 : 1));
    const int recvBlock = wrap(rank_ - k - (gather ? 1 : 2));
    void *into = gather ? static_cast<void *>(block(recvBlock))
                        : static_cast<void *>(incoming_.data());
    exchange(block(sendBlock), blockCount(sendBlock), into,
             blockCount(recvBlock));
  }

  void arrived(int step) override {
    // A reduce-scatter step brought the previous rank's partial sum of
    // block b: add it to this rank's.
    if (step >= size_ - 1)
      return;
    const int b = wrap(rank_ - step - 2);
    MPI_Reduce_local(incoming_.data(), block(b), blockCount(b), type_, op_);
  }

  int64_t start(int b) const { return b * count_ / size_; }
  int blockCount(int b) const {
    return static_cast<int>(start(b + 1) - start(b));
  }
  uint8_t *block(int b) const {
    return data_ + static_cast<size_t>(start(b) * elemSize_);
  }

  uint8_t *data_;
  int64_t count_, elemSize_;
  Scratch incoming_;
};

/// All-reduces of at least this size go around the ring.
constexpr int64_t kRingAllReduceBytes = 256 << 10;

/// The size from which an operation goes around the ring: `fallback`, or
/// WEFT_COMM_RING_BYTES for every ring (tests run small models' collectives
/// around the rings with 1; tuning).
int64_t ringBytes(int64_t fallback) {
  static const int64_t given = [] {
    const char *env = std::getenv("WEFT_COMM_RING_BYTES");
    char *end = nullptr;
    long long v = env ? std::strtoll(env, &end, 10) : -1;
    return env && end != env && *end == '\0' && v >= 0 ? static_cast<int64_t>(v)
                                                       : int64_t(-1);
  }();
  return given >= 0 ? given : fallback;
}

MPI_Datatype reductionType(int64_t dtype) {
  switch (dtype) {
  case WEFT_F64:
    return MPI_DOUBLE;
  case WEFT_I64:
    return MPI_INT64_T;
  case WEFT_I32:
    return MPI_INT32_T;
  default:
    return MPI_FLOAT;
  }
}

/// Data movement: an unsigned type of the element's size.
MPI_Datatype movementType(int64_t elemSize) {
  switch (elemSize) {
  case 2:
    return MPI_UINT16_T;
  case 4:
    return MPI_UINT32_T;
  case 8:
    return MPI_UINT64_T;
  default:
    return MPI_BYTE;
  }
}

MPI_Op mpiOp(Reduction op) {
  switch (op) {
  case Reduction::Max:
    return MPI_MAX;
  case Reduction::Min:
    return MPI_MIN;
  default:
    return MPI_SUM;
  }
}

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(MPI_Comm comm, bool world, int64_t rank, int64_t size,
                  std::vector<int64_t> worldRanks, std::string name)
      : Communicator(rank, size, std::move(worldRanks), std::move(name)),
        comm_(comm), world_(world) {
    // Collective, like the construction itself (every member is here).
    MPI_Comm_dup(comm_, &messages_);
  }

  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      return;
    if (messages_ != MPI_COMM_NULL)
      MPI_Comm_free(&messages_);
    if (world_)
      MPI_Finalize();
    else
      MPI_Comm_free(&comm_);
  }

  [[noreturn]] void abortJob(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

protected:
  TransferPtr startAllReduce(const void *in, void *out, int64_t count,
                             int64_t dtype, Reduction op) override {
    const int64_t bytes = count * weftDTypeSize(dtype);
    const int64_t ring = ringBytes(kRingAllReduceBytes);
    if ((size() & (size() - 1)) == 0 && bytes <= kRecursiveDoublingBytes &&
        bytes < ring) {
      if (in != out)
        std::memcpy(out, in, static_cast<size_t>(bytes));
      return TransferPtr(new RecursiveDoubling(
          messages(), static_cast<int>(rank()), static_cast<int>(size()), out,
          static_cast<int>(count), reductionType(dtype), mpiOp(op), nextTag(),
          static_cast<size_t>(bytes)));
    }
    if (size() > 1 && bytes > 0 && bytes >= ring) {
      if (in != out)
        std::memcpy(out, in, static_cast<size_t>(bytes));
      mpiCount("all_reduce", count);
      return TransferPtr(new RingAllReduce(
          messages(), static_cast<int>(rank()), static_cast<int>(size()), out,
          count, weftDTypeSize(dtype), reductionType(dtype), mpiOp(op),
          nextTag()));
    }
    auto t = transfer();
    MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out,
                   mpiCount("all_reduce", count), reductionType(dtype),
                   mpiOp(op), comm_, &t->request);
    return t;
  }

  TransferPtr startAllGather(const void *in, void *out, int64_t count,
                             int64_t elemSize) override {
    auto t = transfer();
    int n = mpiCount("all_gather", count);
    MPI_Datatype type = movementType(elemSize);
    MPI_Iallgather(in ? in : MPI_IN_PLACE, n, type, out, n, type, comm_,
                   &t->request);
    return t;
  }

  TransferPtr startReduceScatter(const void *in, void *out, int64_t count,
                                 int64_t dtype, Reduction op) override {
    const int64_t blockBytes = count * weftDTypeSize(dtype);
    if (size() > 1 && in != out && blockBytes > 0 &&
        blockBytes * size() >= ringBytes(kRingReduceScatterBytes))
      return TransferPtr(new RingReduceScatter(
          messages(), static_cast<int>(rank()), static_cast<int>(size()),
          PieceBlocks({static_cast<uint8_t *>(const_cast<void *>(in))},
                      {mpiCount("reduce_scatter", count)},
                      static_cast<size_t>(weftDTypeSize(dtype))),
          out, reductionType(dtype), mpiOp(op), nextTag(),
          static_cast<size_t>(blockBytes)));
    auto t = transfer();
    mpiCount("reduce_scatter", count * size());
    MPI_Ireduce_scatter_block(in, out, mpiCount("reduce_scatter", count),
                              reductionType(dtype), mpiOp(op), comm_,
                              &t->request);
    return t;
  }

  // A bucket large enough for the rings goes around them where its pieces
  // lie; a smaller one is packed (the base class).
  bool startReduceScatterPieces(const std::vector<const void *> &pieces,
                                const std::vector<int64_t> &counts, void *out,
                                int64_t dtype, Reduction op,
                                TransferPtr &transfer) override {
    const int64_t elem = weftDTypeSize(dtype);
    std::vector<uint8_t *> at;
    for (const void *p : pieces)
      at.push_back(static_cast<uint8_t *>(const_cast<void *>(p)));
    PieceBlocks blocks;
    if (!ringBucket("reduce_scatter", std::move(at), counts, elem, blocks))
      return false;
    const size_t blockBytes = static_cast<size_t>(blocks.total() * elem);
    transfer = TransferPtr(new RingReduceScatter(
        messages(), static_cast<int>(rank()), static_cast<int>(size()),
        std::move(blocks), out, reductionType(dtype), mpiOp(op), nextTag(),
        blockBytes));
    return true;
  }

  bool startAllGatherPieces(const std::vector<void *> &pieces,
                            const std::vector<int64_t> &counts,
                            int64_t elemSize, TransferPtr &transfer) override {
    std::vector<uint8_t *> at;
    for (void *p : pieces)
      at.push_back(static_cast<uint8_t *>(p));
    PieceBlocks blocks;
    if (!ringBucket("all_gather", std::move(at), counts, elemSize, blocks))
      return false;
    transfer = TransferPtr(new RingAllGather(
        messages(), static_cast<int>(rank()), static_cast<int>(size()),
        std::move(blocks), movementType(elemSize), nextTag()));
    return true;
  }

  TransferPtr startAllToAll(const void *in, void *out, int64_t count,
                            int64_t elemSize) override {
    auto t = transfer();
    int n = mpiCount("all_to_all", count);
    MPI_Datatype type = movementType(elemSize);
    MPI_Ialltoall(in, n, type, out, n, type, comm_, &t->request);
    return t;
  }

  TransferPtr startBroadcast(void *data, int64_t count, int64_t elemSize,
                             int64_t root) override {
    auto t = transfer();
    MPI_Ibcast(data, mpiCount("broadcast", count), movementType(elemSize),
               static_cast<int>(root), comm_, &t->request);
    return t;
  }

  TransferPtr startSend(const void *data, int64_t count, int64_t elemSize,
                        int64_t peer, int64_t tag) override {
    auto t = transfer();
    MPI_Isend(data, mpiCount("send", count), movementType(elemSize),
              static_cast<int>(peer), static_cast<int>(tag), comm_,
              &t->request);
    return t;
  }

  TransferPtr startRecv(void *data, int64_t count, int64_t elemSize,
                        int64_t peer, int64_t tag) override {
    auto t = transfer();
    MPI_Irecv(data, mpiCount("recv", count), movementType(elemSize),
              static_cast<int>(peer), static_cast<int>(tag), comm_,
              &t->request);
    return t;
  }

  TransferPtr startBarrier() override {
    auto t = transfer();
    MPI_Ibarrier(comm_, &t->request);
    return t;
  }

  std::unique_ptr<Communicator> splitGroup(int64_t color, int64_t key,
                                           std::vector<int64_t> ranks,
                                           std::string name) override {
    // MPI_Comm_split blocks unwatched: first make sure every rank is here.
    barrier();
    MPI_Comm group = MPI_COMM_NULL;
    MPI_Comm_split(comm_, static_cast<int>(color), static_cast<int>(key),
                   &group);
    int rank = 0, size = 1;
    MPI_Comm_rank(group, &rank);
    MPI_Comm_size(group, &size);
    if (size != static_cast<int64_t>(ranks.size()) || rank != key)
      fatal(kExitFailure,
            "internal error: splitting %s gave %d ranks (index %d), "
            "expected %zu (index %lld)",
            name.c_str(), size, rank, ranks.size(),
            static_cast<long long>(key));
    return std::unique_ptr<Communicator>(new MpiCommunicator(
        group, false, rank, size, std::move(ranks), std::move(name)));
  }

private:
  /// A duplicate of the group for weft's own point-to-point algorithms, so
  /// their messages never meet the user's send/recv.
  MPI_Comm messages() const { return messages_; }
  /// A tag per operation: every rank starts the group's operations in the
  /// same order, so operations in flight together never match each other's
  /// messages.
  int nextTag() {
    tag_ = (tag_ + 1) % 32768;
    return tag_;
  }

  static std::unique_ptr<MpiTransfer> transfer() {
    return std::unique_ptr<MpiTransfer>(new MpiTransfer());
  }

  /// A bucket's blocks, when they are large enough for the rings (and
  /// their counts fit MPI's).
  bool ringBucket(const char *op, std::vector<uint8_t *> pieces,
                  const std::vector<int64_t> &counts, int64_t elemSize,
                  PieceBlocks &blocks) const {
    for (int64_t c : counts)
      mpiCount(op, c);
    blocks =
        PieceBlocks(std::move(pieces), counts, static_cast<size_t>(elemSize));
    mpiCount(op, blocks.total());
    return blocks.total() > 0 && blocks.total() * elemSize * size() >=
                                     ringBytes(kRingReduceScatterBytes);
  }

  int mpiCount(const char *op, int64_t count) const {
    if (count > INT_MAX)
      fatal(kExitFailure,
            "%s over %s: %lld elements are more than one MPI call moves", op,
            name().c_str(), static_cast<long long>(count));
    return static_cast<int>(count);
  }

  MPI_Comm comm_;
  bool world_;
  MPI_Comm messages_ = MPI_COMM_NULL;
  int tag_ = 0;
};

} // namespace

std::unique_ptr<Communicator> openMpiWorld(int64_t worldSize,
                                           std::string &error) {
  (void)worldSize;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) !=
        MPI_SUCCESS) {
      error = "MPI_Init_thread failed";
      return nullptr;
    }
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int64_t> ranks(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r)
    ranks[r] = r;
  std::string name = "the world (ranks " + formatRanks(ranks) + ")";
  return std::unique_ptr<Communicator>(new MpiCommunicator(
      MPI_COMM_WORLD, true, rank, size, std::move(ranks), std::move(name)));
}

} // namespace comm
} // namespace weft
