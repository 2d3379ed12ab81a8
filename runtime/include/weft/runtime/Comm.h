//===- Comm.h - The ranks of a run and their communicators ----------------===//
//
// A bundle compiled for several devices is one SPMD program: every rank
// runs the same executable on its own blocks, and the collective kernels
// (weft_k_all_reduce, ... in KernelABI.h) exchange data over the groups of
// the device mesh. Three layers:
//
//   Communicator  one group of ranks: collectives and point-to-point
//                 transfers, each started asynchronously (a Request) and
//                 finished by wait(), with blocking forms built on them.
//                 Backends (runtime/comm/mpi, a single-rank one in
//                 runtime/comm/self) implement a few transport hooks; the
//                 base class does the rest (groups of one rank, bf16 reduced
//                 in f32, avg, the watchdog).
//   Mesh          the N-D device mesh over the world communicator; group()
//                 returns (and caches) the communicator of some mesh axes.
//   context()     the process-wide world and mesh the collective kernels
//                 use. The executor starts it (init()) from the model
//                 signature's "world_size" and "mesh" before the first
//                 weft_model_run call; until then it is one rank on mesh [],
//                 so kernels called without it act on groups of one rank.
//
// Mesh: an N-D shape; rank r has coordinates unravel(r, shape), the last
// axis fastest. The group over mesh axes A holds the ranks that differ only
// in A; a rank's index in it is its coordinates over A linearized in A's
// order (first listed axis major), as in the MLIR shard dialect's
// grid_axes. It is split from the world with color = the linear index over
// the other axes and key = that group index.
//
// Every wait is watched: one that has not finished after WEFT_COMM_TIMEOUT
// seconds (default 300; fractions allowed) prints one line naming the op,
// its group (mesh axes and world ranks), this rank and the elapsed time,
// and aborts the whole job (exit code 1), so a dead or diverged rank never
// hangs the others. A rank terminated by the launcher while it waits (the
// launcher does that when another rank dies) names the collective too.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_COMM_H
#define WEFT_RUNTIME_COMM_H

#include "weft/runtime/KernelABI.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace weft {
namespace comm {

/// Reductions; the codes are those of the collective kernels' attribute.
enum class Reduction : int64_t { Sum = 0, Max = 1, Min = 2, Avg = 3 };

/// "sum", "max", "min", "avg".
const char *reductionName(Reduction op);
/// Whether `code` is a Reduction code.
bool isReduction(int64_t code);

class Communicator;

/// A started operation. Communicator::wait() finishes it; a Request that
/// is destroyed while pending is waited for first.
class Request {
public:
  /// The backend's part: one transfer in flight.
  class Transfer {
  public:
    virtual ~Transfer();
    /// Whether the transfer has finished (non-blocking; drives progress).
    virtual bool test() = 0;
  };

  Request() = default;
  Request(Request &&other) noexcept;
  Request &operator=(Request &&other) noexcept;
  Request(const Request &) = delete;
  Request &operator=(const Request &) = delete;
  ~Request();

  /// Started and not yet waited for.
  bool pending() const { return comm_ != nullptr; }
  /// The operation, for messages ("all_reduce").
  const char *op() const { return op_; }
  /// Finishes it: Communicator::wait().
  void wait();
  /// Lets the backend move it along without waiting (MPI only progresses
  /// a non-blocking operation inside its calls); harmless once finished.
  void poll();
  /// Runs `step` when the transfer has finished, before wait() returns
  /// (after the steps added before it); at once when not pending.
  void then(std::function<void()> step);

private:
  friend class Communicator;
  Communicator *comm_ = nullptr;
  const char *op_ = "";
  std::unique_ptr<Transfer> transfer_; ///< null: nothing in flight
  std::vector<std::function<void()>> steps_;
};

/// One group of ranks. Counts are elements of `dtype` (a WeftDType code):
/// reductions take f32, f64, bf16 (reduced in f32), i64 and i32; the other
/// operations move any dtype. Every buffer of a started operation must stay
/// valid, and its outputs untouched, until wait() returns.
class Communicator {
public:
  virtual ~Communicator();
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  /// This rank's index in the group, and the group's size.
  int64_t rank() const { return rank_; }
  int64_t size() const { return size_; }
  /// The members' world ranks, in group-index order.
  const std::vector<int64_t> &worldRanks() const { return worldRanks_; }
  /// For messages: "mesh axes [0] (ranks 0,1)", "the world (ranks 0-3)".
  const std::string &name() const { return name_; }

  /// out = the reduction over the group of every rank's `in` (count
  /// elements). in == out reduces in place.
  Request allReduceStart(const void *in, void *out, int64_t count,
                         int64_t dtype, Reduction op);
  /// out = every rank's `in` (count elements each) in group-index order.
  /// `in` may be out's own block (in place).
  Request allGatherStart(const void *in, void *out, int64_t count,
                         int64_t dtype);
  /// out (count elements) = block rank() of the reduction of every rank's
  /// `in` (size() * count elements).
  Request reduceScatterStart(const void *in, void *out, int64_t count,
                             int64_t dtype, Reduction op);
  /// A bucket of tensors without packing them: pieces[i] holds size()
  /// blocks of counts[i] elements. out (the sum of the counts) gets, piece
  /// after piece, block rank() of the reduction of every rank's piece: what
  /// reduceScatterStart gives for the pieces packed block-major. The pieces
  /// are read until wait() returns.
  Request reduceScatterPiecesStart(const std::vector<const void *> &pieces,
                                   const std::vector<int64_t> &counts,
                                   void *out, int64_t dtype, Reduction op);
  /// Its inverse: block j of pieces[i] (counts[i] elements) becomes group
  /// index j's slice of `in` (the sum of the counts, piece after piece).
  /// `in` is read before the call returns.
  Request allGatherPiecesStart(const void *in,
                               const std::vector<void *> &pieces,
                               const std::vector<int64_t> &counts,
                               int64_t dtype);
  /// Block j (count elements) of `in` goes to group index j; out's block i
  /// comes from group index i.
  Request allToAllStart(const void *in, void *out, int64_t count,
                        int64_t dtype);
  /// `data` (count elements) of group index `root` on every rank.
  Request broadcastStart(void *data, int64_t count, int64_t dtype,
                         int64_t root);
  /// Point to point with group index `peer`; a send matches the recv of
  /// the same tag.
  Request sendStart(const void *data, int64_t count, int64_t dtype,
                    int64_t peer, int64_t tag = 0);
  Request recvStart(void *data, int64_t count, int64_t dtype, int64_t peer,
                    int64_t tag = 0);
  Request barrierStart();

  /// Finishes `request` (a no-op for one that is not pending), watched by
  /// the WEFT_COMM_TIMEOUT watchdog.
  void wait(Request &request);

  /// Blocking forms: start, then wait.
  void allReduce(const void *in, void *out, int64_t count, int64_t dtype,
                 Reduction op);
  void allGather(const void *in, void *out, int64_t count, int64_t dtype);
  void reduceScatter(const void *in, void *out, int64_t count, int64_t dtype,
                     Reduction op);
  void allToAll(const void *in, void *out, int64_t count, int64_t dtype);
  void broadcast(void *data, int64_t count, int64_t dtype, int64_t root);
  void send(const void *data, int64_t count, int64_t dtype, int64_t peer,
            int64_t tag = 0);
  void recv(void *data, int64_t count, int64_t dtype, int64_t peer,
            int64_t tag = 0);
  void barrier();

  /// The group of the ranks that pass the same `color`, ordered by `key`
  /// (collective over this group). `worldRanks` and `name` describe it.
  std::unique_ptr<Communicator> split(int64_t color, int64_t key,
                                      std::vector<int64_t> worldRanks,
                                      std::string name);

  /// Prints nothing, stops every rank of the job with exit code `code`.
  [[noreturn]] virtual void abortJob(int code);

protected:
  Communicator(int64_t rank, int64_t size, std::vector<int64_t> worldRanks,
               std::string name);

  // Backend hooks, called only for groups of more than one rank. Reductions
  // get f32, f64, i64 or i32 and Sum, Max or Min; the other operations move
  // `count` elements of `elemSize` bytes. `in` == `out` (or null `in` for
  // allGather) means in place.
  using TransferPtr = std::unique_ptr<Request::Transfer>;
  virtual TransferPtr startAllReduce(const void *in, void *out, int64_t count,
                                     int64_t dtype, Reduction op) = 0;
  virtual TransferPtr startAllGather(const void *in, void *out, int64_t count,
                                     int64_t elemSize) = 0;
  virtual TransferPtr startReduceScatter(const void *in, void *out,
                                         int64_t count, int64_t dtype,
                                         Reduction op) = 0;
  virtual TransferPtr startAllToAll(const void *in, void *out, int64_t count,
                                    int64_t elemSize) = 0;
  // The bucket forms (f32, f64, i64 or i32; Sum, Max or Min), for backends
  // that move a bucket's blocks where they lie. false (the default): the
  // base class packs them into scratch and uses the plain collective.
  // allGatherPieces gets the pieces with this rank's blocks already filled.
  virtual bool startReduceScatterPieces(const std::vector<const void *> &pieces,
                                        const std::vector<int64_t> &counts,
                                        void *out, int64_t dtype, Reduction op,
                                        TransferPtr &transfer);
  virtual bool startAllGatherPieces(const std::vector<void *> &pieces,
                                    const std::vector<int64_t> &counts,
                                    int64_t elemSize, TransferPtr &transfer);
  virtual TransferPtr startBroadcast(void *data, int64_t count,
                                     int64_t elemSize, int64_t root) = 0;
  virtual TransferPtr startSend(const void *data, int64_t count,
                                int64_t elemSize, int64_t peer,
                                int64_t tag) = 0;
  virtual TransferPtr startRecv(void *data, int64_t count, int64_t elemSize,
                                int64_t peer, int64_t tag) = 0;
  virtual TransferPtr startBarrier() = 0;
  virtual std::unique_ptr<Communicator> splitGroup(int64_t color, int64_t key,
                                                   std::vector<int64_t> ranks,
                                                   std::string name) = 0;

private:
  Request makeRequest(const char *op, TransferPtr transfer);
  /// The sum of a bucket's counts (one per piece, none negative).
  int64_t piecesTotal(const char *op, size_t pieces,
                      const std::vector<int64_t> &counts);
  [[noreturn]] void misuse(const char *op, const std::string &what);

  int64_t rank_, size_;
  std::vector<int64_t> worldRanks_;
  std::string name_;
};

/// A communicator of one rank (world rank `worldRank`): every collective is
/// a copy.
std::unique_ptr<Communicator> makeSelfCommunicator(int64_t worldRank,
                                                   std::string name);

/// The N-D device mesh over the world.
class Mesh {
public:
  Mesh(Communicator &world, std::vector<int64_t> shape,
       std::vector<std::string> axisNames);
  ~Mesh();

  Communicator &world() const { return *world_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  /// "axes" of the signature's mesh (may be empty).
  const std::vector<std::string> &axisNames() const { return axisNames_; }
  /// `rank`'s coordinates (last axis fastest).
  std::vector<int64_t> coordinates(int64_t rank) const;

  /// Whether `axes` are distinct axes of the mesh; `why` says what is not.
  bool validAxes(const int64_t *axes, int64_t count, std::string &why) const;
  /// The group over `axes` (valid axes): its size, this rank's index in it,
  /// its members' world ranks in group-index order and its name.
  int64_t groupSize(const int64_t *axes, int64_t count) const;
  int64_t groupIndex(const int64_t *axes, int64_t count) const;
  std::vector<int64_t> groupMembers(const int64_t *axes, int64_t count) const;
  std::string groupName(const int64_t *axes, int64_t count) const;
  /// Creates the group over every ordered choice of axes now. Splitting a
  /// group off the world is collective over the whole world, so ranks that
  /// run different programs (pipeline stages) cannot do it on first use.
  void createGroups();
  /// The communicator of that group, split from the world on first use
  /// (collective: every rank asks for the same groups in the same order).
  Communicator &group(const int64_t *axes, int64_t count);

private:
  /// This rank's world rank.
  int64_t myRank() const { return world_->worldRanks()[world_->rank()]; }

  Communicator *world_;
  std::vector<int64_t> shape_;
  std::vector<std::string> axisNames_;
  std::map<std::vector<int64_t>, std::unique_ptr<Communicator>> groups_;
};

/// How this process was started: mpirun (OMPI_COMM_WORLD_RANK/SIZE/
/// LOCAL_RANK, or PMI_RANK/PMI_SIZE), srun (SLURM_PROCID/NTASKS/LOCALID) or
/// a torchrun-style launcher (RANK/WORLD_SIZE/LOCAL_RANK with MASTER_ADDR/
/// MASTER_PORT), first match in that order.
struct LaunchInfo {
  enum class Kind { None, MpiRun, Srun, Torchrun };
  Kind kind = Kind::None;
  int64_t rank = 0, size = 1, localRank = 0;
  std::string variables; ///< the variables it was read from, for messages
  std::string error;     ///< a variable that is set but not a number
};
LaunchInfo detectLaunch();

/// The process-wide ranks of a run.
class Context {
public:
  Context();
  ~Context();

  /// Whether init() started a multi-rank world.
  bool active() const { return active_; }
  int64_t rank() const { return world_->rank(); }
  int64_t size() const { return world_->size(); }
  const LaunchInfo &launch() const { return launch_; }
  Communicator &world() { return *world_; }
  Mesh &mesh() { return *mesh_; }

  /// Starts the world for `worldSize` ranks on `meshShape` (its product;
  /// empty: [worldSize]). With worldSize > 1 it starts MPI (which decides
  /// rank and size) under mpirun or srun, or, under a torchrun-style
  /// launcher alone, has the ranks meet over TCP at MASTER_ADDR:
  /// MASTER_PORT (tcp/TcpCommunicator.cpp), and checks the launcher
  /// started exactly that many ranks; `error` says what is wrong otherwise
  /// (exit code 2).
  bool init(int64_t worldSize, const std::vector<int64_t> &meshShape,
            const std::vector<std::string> &axisNames, std::string &error);
  /// Ends the world (MPI_Finalize); idempotent.
  void finalize();

  /// The collectives started by the *_start kernels, by slot, until their
  /// comm_wait. `result` is the buffer the result lands in.
  void startSlot(int64_t slot, Request request, void *result,
                 const char *kernel);
  /// Finishes slot `slot`; `result` must be the buffer it was started with.
  void waitSlot(int64_t slot, const void *result, const char *kernel);
  /// Slots started and not waited for, in order ("3, 7").
  std::string pendingSlots() const;
  /// Polls every started slot (Request::poll): the comm_progress kernel,
  /// which the compiler puts after each compute kernel while a collective
  /// is in flight.
  void progress();

private:
  struct Slot {
    Request request;
    void *result = nullptr;
    const char *kernel = "";
  };
  bool active_ = false;
  LaunchInfo launch_;
  std::unique_ptr<Communicator> world_;
  std::unique_ptr<Mesh> mesh_;
  std::map<int64_t, Slot> slots_;
};

/// The process-wide context.
Context &context();

// Shorthands over context(), for the executor and the tests.

/// context().init(worldSize, meshShape, {}, error).
bool init(int64_t worldSize, const std::vector<int64_t> &meshShape,
          std::string &error);
bool active();
/// This rank and the world size (0 and 1 when not active).
int64_t rank();
int64_t size();
const std::vector<int64_t> &meshShape();
/// The group over mesh `axes`: its size and this rank's index in it.
int64_t groupSize(const int64_t *axes, int64_t count);
int64_t groupIndex(const int64_t *axes, int64_t count);
/// Every rank's `bytes` bytes, in rank order, on every rank.
std::vector<uint8_t> allGatherBytes(const void *data, int64_t bytes);
/// The largest of every rank's value, on every rank.
int64_t maxOverRanks(int64_t value);
void barrier();
/// Ends the world (at exit; idempotent).
void finalize();
/// Stops every rank (after the caller's message on stderr): exit `code`.
[[noreturn]] void abortAll(int code);

} // namespace comm
} // namespace weft

#endif // WEFT_RUNTIME_COMM_H
