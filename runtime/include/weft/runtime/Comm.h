//===- Comm.h - The ranks of a run and their communicators ----------------===//
//
// A bundle compiled for several devices is one SPMD program: every rank
// runs the same executable on its own blocks, and the collective kernels
// (weft_k_all_reduce, ... in KernelABI.h) exchange data over the groups of
// the device mesh. The executor starts this context before the first step
// (MPI, through mpirun or srun; a world of one rank needs neither) from the
// signature's "world_size" and "mesh".
//
// Mesh: an N-D shape; rank r has coordinates unravel(r, shape), the last
// axis fastest. The group over mesh axes A holds the ranks that differ only
// in A; a rank's index in it is its coordinates over A linearized in A's
// order (first listed axis major), as in the MLIR shard dialect's
// grid_axes. Each group's communicator is split from the world once.
//
// Every wait of a collective is watched: one that has not finished after
// WEFT_COMM_TIMEOUT seconds (default 300; fractions allowed) stops the job
// with a message naming the op, its mesh axes, the ranks of the group and
// this rank, so a dead or diverged rank never hangs the others.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_COMM_H
#define WEFT_RUNTIME_COMM_H

#include <cstdint>
#include <string>
#include <vector>

namespace weft {
namespace comm {

/// Starts the ranks' context for a world of `worldSize` on `meshShape`
/// (their product). With worldSize > 1 it initializes MPI and checks that
/// the launcher started exactly that many ranks; `error` says what is
/// wrong otherwise (exit code 2).
bool init(int64_t worldSize, const std::vector<int64_t> &meshShape,
          std::string &error);
/// Whether init() started a multi-rank world.
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
/// Ends MPI (at exit; idempotent).
void finalize();
/// Stops every rank (after a message on stderr): exit code `code`.
[[noreturn]] void abortAll(int code);

} // namespace comm
} // namespace weft

#endif // WEFT_RUNTIME_COMM_H
